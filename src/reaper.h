/*
 * reaper.h - what the unit tests call of the reaper besides tlog.h's
 * start and stop: one wake-up on the test's clock, and the heap's state.
 */
#ifndef TLOG_REAPER_H
#define TLOG_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tlog.h"

struct tlog_reap_stats {
	uint64_t visited;	/* due partitions this wake-up touched */
	uint64_t sealed;	/* idle seals */
	uint64_t expired;	/* segments detached by the time rule */
	uint64_t bytes;		/* their bytes */
	uint64_t sized;		/* segments detached by the size rule */
	uint64_t sized_bytes;	/* their bytes */
	uint64_t consumed;	/* segments detached by the consumed rule */
	uint64_t consumed_bytes;	/* their bytes */
	uint64_t cleaned;	/* partitions removed (partition.cleanup.ms) */
};

/*
 * One wake-up at the store clock's now: pops only the partitions whose due
 * time has come, gives each one bounded step (an idle seal, at most 64
 * segments over retention.bytes, then at most 64 expired or consumed
 * segments, each rule under one hold of its lock, then, if it is empty,
 * its removal under partition.cleanup.ms), and reschedules them.
 * Returns the next due time, -1 if nothing is scheduled (or no reaper is
 * attached).
 */
int64_t tlog_reaper_cycle(struct tlog_store *s, struct tlog_reap_stats *st);
/* The earliest due time (-1 if none) and how many partitions wait. */
int64_t tlog_reaper_next_due(struct tlog_store *s);
size_t tlog_reaper_scheduled(struct tlog_store *s);
/* What one reclaiming pass for retention.keep.free (free.c) saw and did. */
struct tlog_free_stats {
	uint64_t avail;		/* free space at the start */
	uint64_t pending;	/* bytes detached, not yet unlinked */
	uint64_t held;		/* unlinked, still open by readers */
	int64_t floor;		/* the floor in bytes, -1: off */
	uint64_t target;	/* floor + hysteresis, if it reclaimed */
	uint64_t segments;	/* detached (rule free) */
	uint64_t bytes;		/* their bytes */
	uint64_t partitions;	/* how many partitions they came from */
	bool exhausted;		/* nothing was left to delete */
};

/*
 * One check of free space (on the injected free_space, if any): below
 * retention.keep.free, counting detached segments not yet unlinked as
 * free, detaches the store's oldest segments (oldest newest record
 * first, active ones after every sealed one, the events partition
 * last) until free space reaches floor + floor / 16. Returns the count.
 */
int tlog_reaper_free(struct tlog_store *s, struct tlog_free_stats *st);
/* Detaches the reaper from s (stopping its thread), as the store's close
 * does if it is still attached. It frees the reaper with no grace
 * period: no other engine call on s may run meanwhile. */
void tlog_reaper_detach(struct tlog_store *s);

#endif /* TLOG_REAPER_H */
