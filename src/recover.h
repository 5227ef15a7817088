/*
 * recover.h - loading a partition's segments at open and repairing what a
 * crash or corruption left (doc/format.md, "Recovery").
 */
#ifndef TLOG_RECOVER_H
#define TLOG_RECOVER_H

#include <stddef.h>

#include "partition.h"
#include "repair.h"

/* Loads p's segments from its directory; a bad segment is logged and
 * skipped, never fatal. */
int tlog_part_recover(struct tlog_partition *p, struct tlog_recovery *rc);
/* Recovers v[0..n), on up to 4 threads, all joined before it returns. */
void tlog_recover_all(struct tlog_partition **v, size_t n,
    struct tlog_recovery *rc);

#endif /* TLOG_RECOVER_H */
