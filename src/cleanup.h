/*
 * cleanup.h - partition.cleanup.ms: removing an empty partition that has
 * gone unwritten that long (cleanup.c), in the store layer, through the
 * registry's directory calls.
 */
#ifndef TLOG_CLEANUP_H
#define TLOG_CLEANUP_H

#include <stdint.h>

#include "registry.h"

/* partition.cleanup.ms: removes p (a reference held by the caller), its
 * directory and all, if it is still empty, unvetoed and unwritten that
 * long by deletion time, with a partition_deleted event stamped now. 1
 * if removed, 0 if kept, -EAGAIN if busy (try again later), or -errno. */
int tlog_reg_part_cleanup(struct tlog_registry *reg,
    struct tlog_partition *p, int64_t now);

#endif /* TLOG_CLEANUP_H */
