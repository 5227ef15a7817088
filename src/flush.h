/*
 * flush.h - durability: the flusher (draining the flush queue), fsync of
 * a partition, and its clean close.
 */
#ifndef TLOG_FLUSH_H
#define TLOG_FLUSH_H

#include <stdbool.h>

#include "partition.h"
#include "queue.h"

/* Footers of up to max (max <= 0: all) sealed segments of the queued
 * partitions, oldest first; returns how many. */
int tlog_flush_pending(struct tlog_queue *q, int max);
/* A clean close's part: durable as fsync, then the files closed. */
int tlog_part_close(struct tlog_partition *p);

#endif /* TLOG_FLUSH_H */
