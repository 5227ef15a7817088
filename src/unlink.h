/*
 * unlink.h - draining the unlink queue (queue.h): detached segments'
 * files are unlinked with no engine lock held, then their deletion
 * events are emitted.
 */
#ifndef TLOG_UNLINK_H
#define TLOG_UNLINK_H

#include <stdint.h>

#include "partition.h"
#include "queue.h"

/* Unlinks up to max queued segments (max <= 0: all); returns how many. */
int tlog_unlink_pending(struct tlog_queue *q, int max);
/* Until none of p's detached segments is left (limit < 0), or they hold
 * at most limit bytes (the size ceiling's, which then wakes the unlinker
 * thread): unlinks p's queued ones on this thread and waits for those
 * another thread is unlinking. 0, or an unlink's error. */
int tlog_unlink_drain(struct tlog_queue *q, struct tlog_partition *p,
    int64_t limit);

#endif /* TLOG_UNLINK_H */
