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
/* Earliest engine time at which the idle trigger can fire; -1 if there
 * is no non-empty active segment. */
int64_t tlog_part_idle_due(struct tlog_partition *p);
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
/* Earliest time the time rule can delete something; -1 if never. */
int64_t tlog_part_expire_due(struct tlog_partition *p);
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
/* Disk pressure (retention.keep.free, chosen by the reaper): detaches
 * p's oldest segment, sealing it first if it is the active one, with
 * rule free; p->sd.lock held, its seal event to eb. Returns its bytes,
 * 0 if p holds no record. */
uint64_t tlog_part_free_oldest(struct tlog_partition *p,
    struct tlog_evbuf *eb);
/* Due time of p: the earliest of its idle seal, its time rule and its
 * consumed rule, 0 while it is over its ceiling, its cleanup when empty;
 * -1 if none. _locked: p->sd.lock held. */
int64_t tlog_part_due(struct tlog_partition *p);
int64_t tlog_part_due_locked(struct tlog_partition *p);

#endif /* TLOG_RETENTION_H */
