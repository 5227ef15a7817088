/*
 * free.h - retention.keep.free (free.c): the reaper's state, which
 * reaper.c and free.c share, and what reaper.c calls of free.c: the
 * free heap's key, the scheduler's hooks for free space, and the pieces
 * of a reclaiming pass the reaper thread runs.
 */
#ifndef TLOG_FREE_H
#define TLOG_FREE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "heap.h"
#include "reaper.h"
#include "store.h"

#define FREE_PASS_MAX 4096	/* segments one reclaiming pass may take */

struct tlog_reaper {
	struct tlog_store *s;
	struct tlog_ctx *ctx;
	/* Both heaps are under the store's work lock (ctx->work_lock,
	 * ctx.h); cond is the thread's, waited on with that lock. */
	pthread_cond_t cond;
	struct tlog_heap heap;		/* partitions by due time, each
					   referenced */
	pthread_t th;
	bool running;
	bool stop;
	/* retention.keep.free: partitions by their oldest segment's max_ts
	 * (each referenced; kept with heap), one reclaiming
	 * pass at a time (the store's admin_lock). */
	struct tlog_heap fheap;
	bool held_said;			/* the readers' held bytes were
					   logged (admin_lock) */
	uint64_t pass;			/* the reclaiming passes, numbered
					   (admin_lock; p->free_pass) */
	bool pressure;			/* appends asked for a check */
	int64_t free_last;		/* last check, engine time */
	unsigned steps;			/* the clock's steps when every due
					   time was last computed; an atomic
					   exchange says who recomputes */
};

static inline struct tlog_reaper *
reaper_of(struct tlog_store *s)
{
	return tlog_store_sched(s);
}

static inline struct tlog_partition *
fpart_of(struct tlog_heap_node *x)
{
	return TLOG_CONTAINER_OF(x, struct tlog_partition, fheap);
}

/* p's key in the free heap, -1 if it has no segment (p->sd.lock held). */
int64_t tlog_free_key_locked(struct tlog_partition *p);
/* Sets p's key in h, r->heap (the due time) or r->fheap (the free key);
 * -1, or p dead, takes p out. Each partition in a heap holds a reference:
 * returns the one to drop if p left h. ctx->work_lock held. */
struct tlog_partition *tlog_reaper_set(struct tlog_reaper *r,
    struct tlog_heap *h, struct tlog_partition *p, int64_t key);
/* A new segment or a seal (TLOG_SCHED_EARLIER, TLOG_SCHED_SEALED): p's
 * free key, p->sd.lock held. */
void tlog_free_sealed(void *arg, struct tlog_partition *p);
/* The pressure hook: appends ask the reaper thread for a check. */
void tlog_free_pressure(void *arg);
/* The reclaim hook: an append hit ENOSPC; returns what it freed. */
int tlog_free_reclaim(void *arg);
/* TLOG_SPACE_WAIT: appends wait for free space above the floor. */
void tlog_free_wait(void *arg);
/* Sets the appends' budget from free space (floor -1: no budget). */
void tlog_free_budget(struct tlog_reaper *r, int64_t floor, uint64_t avail,
    uint64_t appended, uint64_t unlinked);
/* For the metrics: free space on the store's file system and the floor
 * retention.keep.free sets on it (-1: none); 0 or -errno. */
int tlog_free_gauges(struct tlog_store *s, uint64_t *avail, int64_t *floor);
/* After a pass that detached segments (who: why it ran, t0: when it
 * began): counts and logs it, wakes the unlinker; says so if nothing was
 * left. */
void tlog_free_settle(struct tlog_reaper *r, const struct tlog_free_stats *st,
    const char *who, uint64_t t0);

#endif /* TLOG_FREE_H */
