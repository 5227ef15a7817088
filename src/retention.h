/*
 * retention.h - sealing and deletion off the append path: the time rule,
 * the size rule for a lowered ceiling, the idle seal, and a partition's
 * due time (the public tlog_partition_seal and tlog_partition_delete are
 * here too).
 */
#ifndef TLOG_RETENTION_H
#define TLOG_RETENTION_H

#include <stdint.h>

#include "partition.h"

/* Idle trigger: seals the active segment if now - first_ts >= segment.ms
 * (less its jitter) and nothing was appended for min(segment.ms, 1 s).
 * Returns 1 if it sealed, 0 if not due. */
int tlog_part_seal_idle(struct tlog_partition *p);
/* Time rule: detaches, oldest first, at most max segments whose
 * now - max_ts > retention.ms, stopping at the first young one; an
 * expired active segment is sealed first. Returns the count detached,
 * their bytes added to *bytes (may be NULL). */
int tlog_part_expire(struct tlog_partition *p, int max, uint64_t *bytes);
/* Consumed rule: detaches, oldest first, at most max segments that every
 * cursor has passed (base + records <= the slowest cursor) and whose
 * now - max_ts > retention.consumed.ms, stopping at the first that is
 * not; a wholly consumed active segment is sealed first. Nothing without
 * a cursor. Returns the count detached (rule consumed). */
int tlog_part_consume(struct tlog_partition *p, int max, uint64_t *bytes);
/* Size rule for a partition over retention.bytes without an append (the
 * ceiling was lowered): detaches, oldest first, at most max segments
 * until its bytes are within the ceiling; the active segment, last, is
 * sealed first. Returns the count detached (rule size). */
int tlog_part_enforce_size(struct tlog_partition *p, int max,
    uint64_t *bytes);
/* When partition.cleanup.ms may remove p (p->sd.lock held): its last
 * write (or birth) + partition.cleanup.ms + 1; -1 if off or vetoed (a
 * record, detached files, an open writer, a cursor). */
int64_t tlog_part_cleanup_due_locked(struct tlog_partition *p);
/* Due time of p (p->sd.lock held): the earliest of its idle seal, its
 * time rule and its consumed rule, 0 while it is over its ceiling, its
 * cleanup when empty; -1 if none. */
int64_t tlog_part_due_locked(struct tlog_partition *p);
/* For tests, under p's lock: TLOG_DUE_ALL, tlog_part_due_locked; or
 * TLOG_DUE_IDLE, the earliest engine time at which the idle seal can
 * fire (-1 if there is no non-empty active segment). */
enum tlog_due { TLOG_DUE_ALL, TLOG_DUE_IDLE };
int64_t tlog_part_due(struct tlog_partition *p, enum tlog_due which);

#endif /* TLOG_RETENTION_H */
