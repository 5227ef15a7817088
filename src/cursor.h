/*
 * cursor.h - a partition's cursors (doc/tlogfs.8, EXTENDED ATTRIBUTES;
 * the file in doc/format.md): consumers' durable positions, kept in the
 * partition's .cursors file and summed up for the rules in p->ncursors
 * and p->cursor_floor (the public calls are in tlog.h).
 */
#ifndef TLOG_CURSOR_H
#define TLOG_CURSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "partition.h"

#define TLOG_CURSORS_FILE ".cursors"
#define TLOG_PART_ID_FILE ".id"	/* the partition's identity */

/*
 * Loads p's cursors from its directory dfd at open (before any other
 * thread sees p). A damaged file is logged once and kept aside as
 * .cursors.bad (left in place read-only): the partition then has no
 * cursors, since an offset is never guessed. *max is the largest
 * cursor, 0 if none. where names the partition in log lines.
 */
void tlog_cursor_load(struct tlog_partition *p, int dfd, const char *where,
    uint64_t *max);

#endif /* TLOG_CURSOR_H */
