/*
 * reaper.c - retention on time (doc/reaper.md): a min-heap of partitions
 * keyed by their due time (tlog_part_due_locked: the earliest moment
 * each can yield work), and one thread that sleeps until the top of the
 * heap is due.
 *
 * Due times move earlier only when a segment is created or a setting
 * changes, and both push the partition forward here; appends into an
 * existing segment only move them later, so the append path never
 * touches the heap. A wake-up pops only the due partitions and gives
 * each one bounded step (at most REAP_BATCH segments detached; one with
 * more left is due again at once). Unlinks happen elsewhere, with no
 * lock held (unlink.c).
 *
 * Whoever opens the store attaches the reaper; partitions reach it
 * through the scheduler's calls (struct tlog_sched_ops).
 * retention.keep.free is free.c, which shares struct tlog_reaper and
 * runs on this thread.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <syslog.h>
#include <time.h>

#include "free.h"
#include "reaper.h"
#include "retention.h"
#include "store.h"

#define REAP_BATCH 64
#define FREE_TICK_MS 1000	/* free space is checked at least this often */

static struct tlog_partition *
part_of(struct tlog_heap_node *x)
{
	return TLOG_CONTAINER_OF(x, struct tlog_partition, sched);
}

/* ---- the heap (ctx->work_lock held) ---- */

/* tlog_reaper_set on the due-time heap; wakes the thread if the earliest
 * due time moved earlier: p is the top now, and the heap was empty or
 * its old top later (an equal key never displaces the top). */
static struct tlog_partition *
heap_update(struct tlog_reaper *r, struct tlog_partition *p, int64_t due)
{
	struct tlog_heap_node *top = tlog_heap_top(&r->heap);
	int64_t old_top = top != NULL ? top->key : -1;
	struct tlog_partition *drop = tlog_reaper_set(r, &r->heap, p, due);

	if (tlog_heap_top(&r->heap) == &p->sched &&
	    (due < old_top || old_top < 0))
		pthread_cond_broadcast(&r->cond);
	return drop;
}

/* ---- the scheduler's hooks (struct tlog_sched_ops) ---- */

static void
reaper_sched_earlier(struct tlog_reaper *r, struct tlog_partition *p,
    int64_t due)
{
	pthread_mutex_lock(&r->ctx->work_lock);
	if (!tlog_level_dead(&p->lv) && (!tlog_heap_holds(&p->sched) ||
	    due < p->sched.key))
		heap_update(r, p, due);
	pthread_mutex_unlock(&r->ctx->work_lock);
}

/* Sets p's keys in both heaps (-1: out) under the work lock; the
 * references to drop, once no lock is held, go to drop. */
static void
heaps_set(struct tlog_reaper *r, struct tlog_partition *p, int64_t due,
    int64_t key, struct tlog_partition *drop[2])
{
	pthread_mutex_lock(&r->ctx->work_lock);
	drop[0] = heap_update(r, p, due);
	drop[1] = tlog_reaper_set(r, &r->fheap, p, key);
	pthread_mutex_unlock(&r->ctx->work_lock);
}

/*
 * p's due time and free key. They are computed and applied under the
 * partition's lock: an append that creates a segment (and schedules the
 * partition) in between would otherwise be undone by a stale "never",
 * and the partition would leave the schedule for good while it has data.
 */
static void
reaper_resched(struct tlog_reaper *r, struct tlog_partition *p)
{
	struct tlog_partition *drop[2];
	int64_t due, key;

	pthread_mutex_lock(&p->sd.lock);
	due = tlog_part_due_locked(p);
	key = tlog_free_key_locked(p);
	TLOG_HOOK(r->ctx, TLOG_HOOK_RESCHED, p);
	heaps_set(r, p, due, key, drop);
	pthread_mutex_unlock(&p->sd.lock);
	tlog_partition_put(drop[0]);
	tlog_partition_put(drop[1]);
}

/* A partition gone leaves both heaps, with no partition lock held. */
static void
reaper_unsched(struct tlog_reaper *r, struct tlog_partition *p)
{
	struct tlog_partition *drop[2];

	heaps_set(r, p, -1, -1, drop);
	tlog_partition_put(drop[0]);
	tlog_partition_put(drop[1]);
}

static void
reaper_sched(void *arg, struct tlog_partition *p, enum tlog_sched_why why,
    int64_t due)
{
	switch (why) {
	case TLOG_SCHED_EARLIER:
		reaper_sched_earlier(arg, p, due);
		tlog_free_sealed(arg, p);
		break;
	case TLOG_SCHED_SEALED:
		tlog_free_sealed(arg, p);
		break;
	case TLOG_SCHED_AGAIN:
		reaper_resched(arg, p);
		break;
	case TLOG_SCHED_GONE:
		reaper_unsched(arg, p);
		break;
	}
}

static int
reaper_space(void *arg, enum tlog_space_ask ask)
{
	switch (ask) {
	case TLOG_SPACE_CHECK:
		tlog_free_pressure(arg);
		break;
	case TLOG_SPACE_WAIT:
		tlog_free_wait(arg);
		break;
	case TLOG_SPACE_RECLAIM:
		return tlog_free_reclaim(arg);
	}
	return 0;
}

static const struct tlog_sched_ops reaper_ops = {
	reaper_sched,
	reaper_space,
};

/* ---- wake-ups ---- */

/* Pops every due partition; the heap's references become the caller's. */
static size_t
pop_due(struct tlog_reaper *r, int64_t now, struct tlog_partition ***out)
{
	struct tlog_partition **due = NULL;
	struct tlog_heap_node *top;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&r->ctx->work_lock);
	while ((top = tlog_heap_top(&r->heap)) != NULL && top->key <= now) {
		void *nd = tlog_grow(due, &cap, n, sizeof(*due), 16);

		if (nd == NULL)
			break;
		due = nd;
		due[n++] = tlog_reaper_set(r, &r->heap, part_of(top), -1);
	}
	pthread_mutex_unlock(&r->ctx->work_lock);
	*out = due;
	return n;
}

/*
 * A due time of a deletion rule computed while the wall clock was behind
 * engine time is the engine time when the wall clock would get there;
 * a step since (the wall clock set right) can make it late, by up to
 * half the step (doc/reaper.md). So after a step every due time is
 * computed again: O(partitions), at a step of the wall clock only. The
 * clock was read just before, which is what notices a step. No lock
 * held.
 */
static void
resched_after_step(struct tlog_reaper *r)
{
	unsigned n = tlog_clock_steps(&r->ctx->clock);

	if (__atomic_exchange_n(&r->steps, n, __ATOMIC_ACQ_REL) != n)
		tlog_store_resched(r->s, NULL, NULL);
}

int64_t
tlog_reaper_cycle(struct tlog_store *s, struct tlog_reap_stats *st)
{
	struct tlog_reaper *r = reaper_of(s);
	struct tlog_partition **due, *p;
	int64_t now = tlog_ctx_now(&s->ctx);
	uint64_t t0 = tlog_mono_ns(), ns;
	size_t n, i;
	int k, c;

	memset(st, 0, sizeof(*st));
	/* A read-only store never schedules anything: nothing may seal or
	 * go (so the rules below never return -EROFS). */
	if (s->ctx.ro || r == NULL)
		return -1;
	resched_after_step(r);
	n = pop_due(r, now, &due);
	for (i = 0; i < n; i++) {
		p = due[i];
		st->visited++;
		if (tlog_part_seal_idle(p) > 0)
			st->sealed++;
		/* A partition over a lowered ceiling is due at once; one
		 * step each, the rest at the next wake-up. */
		st->sized += (uint64_t)tlog_part_enforce_size(p,
		    REAP_BATCH, &st->sized_bytes);
		k = tlog_part_expire(p, REAP_BATCH, &st->bytes);
		st->expired += (uint64_t)k;
		if (k < REAP_BATCH) {
			c = tlog_part_consume(p, REAP_BATCH - k,
			    &st->consumed_bytes);
			st->consumed += (uint64_t)c;
			k += c;
		}
		c = k == REAP_BATCH ? 0 :
		    tlog_reg_part_cleanup(&s->reg, p, now);
		if (c > 0)
			st->cleaned++;	/* removed: nothing to schedule */
		else if (k == REAP_BATCH)
			reaper_sched_earlier(r, p, now); /* more: next cycle */
		else if (c < 0)
			/* Busy (an append): soon; failed (logged): after
			 * another partition.cleanup.ms, not in a loop. */
			reaper_sched_earlier(r, p, now + (c == -EAGAIN ?
			    1000 : tlog_part_conf(p,
			    TLOG_PARTITION_CLEANUP_MS)));
		else
			reaper_resched(r, p);
		tlog_partition_put(p);
	}
	free(due);
	ns = tlog_mono_ns() - t0;
	TLOG_METRIC_ADD(&s->ctx, reaper_wakeups, 1);
	TLOG_METRIC_ADD(&s->ctx, reaper_due, st->visited);
	__atomic_store_n(&s->ctx.metrics.reaper_last_due, st->visited,
	    __ATOMIC_RELAXED);
	TLOG_METRIC_ADD(&s->ctx, reaper_ns, ns);
	__atomic_store_n(&s->ctx.metrics.reaper_last_ns, ns, __ATOMIC_RELAXED);
	return tlog_reaper_next_due(s);
}

int64_t
tlog_reaper_next_due(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);
	struct tlog_heap_node *top;
	int64_t due;

	if (r == NULL)
		return -1;
	pthread_mutex_lock(&r->ctx->work_lock);
	due = (top = tlog_heap_top(&r->heap)) != NULL ? top->key : -1;
	pthread_mutex_unlock(&r->ctx->work_lock);
	return due;
}

size_t
tlog_reaper_scheduled(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);
	size_t n;

	if (r == NULL)
		return 0;
	pthread_mutex_lock(&r->ctx->work_lock);
	n = r->heap.n;
	pthread_mutex_unlock(&r->ctx->work_lock);
	return n;
}

/* The n segments (and their bytes) one rule removed in a wake-up that
 * started at t0, if any: "reaper: n <pre>segments (bytes) <how> from..." */
static void
log_cycle(struct tlog_reaper *r, uint64_t n, uint64_t bytes,
    const char *pre, const char *how, uint64_t visited, uint64_t t0)
{
	if (n > 0)
		tlog_ctx_log(r->ctx, LOG_INFO, "reaper: %" PRIu64 " %ssegments "
		    "(%" PRIu64 " bytes) %s from %" PRIu64 " due partitions in "
		    "%.3f ms", n, pre, bytes, how, visited,
		    (double)(tlog_mono_ns() - t0) / 1e6);
}

static void *
reaper_main(void *arg)
{
	struct tlog_reaper *r = arg;
	struct tlog_heap_node *top;
	struct tlog_reap_stats st;
	struct tlog_free_stats fst;
	struct timespec ts;
	int64_t due, now;
	uint64_t t0;
	bool on;
	int k;

	pthread_mutex_lock(&r->ctx->work_lock);
	while (!r->stop) {
		due = (top = tlog_heap_top(&r->heap)) != NULL ? top->key : -1;
		now = tlog_ctx_now(r->ctx);
		if (tlog_clock_steps(&r->ctx->clock) !=
		    __atomic_load_n(&r->steps, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&r->ctx->work_lock);
			resched_after_step(r);
			pthread_mutex_lock(&r->ctx->work_lock);
			continue;
		}
		/* Disk pressure: when appends passed their share of the
		 * floor, and once a tick while the key is set (setting it
		 * calls tlog_free_pressure). */
		on = tlog_level_conf(&r->s->root, TLOG_RETENTION_KEEP_FREE) !=
		    -1;
		if (r->pressure || (on && (now - r->free_last >= FREE_TICK_MS ||
		    now < r->free_last))) {
			r->pressure = false;
			r->free_last = now;
			pthread_mutex_unlock(&r->ctx->work_lock);
			t0 = tlog_mono_ns();
			k = tlog_reaper_free(r->s, &fst);
			if (k > 0)
				tlog_free_settle(r, &fst, "free space", t0);
			pthread_mutex_lock(&r->ctx->work_lock);
			/* A full pass left more to do: the next one at once
			 * (it takes the oldest data, what the time rule
			 * would take first anyway). */
			if (k == FREE_PASS_MAX)
				r->pressure = true;
			continue;
		}
		if (on && (due < 0 || due > r->free_last + FREE_TICK_MS))
			due = r->free_last + FREE_TICK_MS;
		if (due < 0) {		/* nothing to do until told */
			pthread_cond_wait(&r->cond, &r->ctx->work_lock);
			continue;
		}
		if (due > now) {
			/* Engine time never runs faster than real time, so
			 * this never oversleeps; at half speed it wakes early
			 * and sleeps again. A second at most: a step of the
			 * wall clock, noticed by whichever thread read the
			 * clock first, can make due times computed before it
			 * late (resched_after_step), and nothing else would
			 * wake this thread for it. */
			if (due - now > 1000)
				due = now + 1000;
			tlog_deadline(due - now, &ts);
			pthread_cond_timedwait(&r->cond, &r->ctx->work_lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&r->ctx->work_lock);
		t0 = tlog_mono_ns();
		tlog_reaper_cycle(r->s, &st);
		log_cycle(r, st.expired, st.bytes, "", "expired", st.visited,
		    t0);
		log_cycle(r, st.sized, st.sized_bytes, "",
		    "over retention.bytes removed", st.visited, t0);
		log_cycle(r, st.consumed, st.consumed_bytes, "consumed ",
		    "removed", st.visited, t0);
		tlog_store_wakeup(r->s);	/* the unlinker has work */
		pthread_mutex_lock(&r->ctx->work_lock);
	}
	pthread_mutex_unlock(&r->ctx->work_lock);
	return NULL;
}

/* ---- attaching to a store ---- */

int
tlog_reaper_attach(struct tlog_store *s)
{
	struct tlog_reaper *r;

	/* A reader's reaper has nothing it may do: none is attached. */
	if (s->ctx.ro || reaper_of(s) != NULL)
		return 0;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -ENOMEM;
	r->s = s;
	r->ctx = &s->ctx;
	r->steps = tlog_clock_steps(&s->ctx.clock);
	tlog_cond_init_mono(&r->cond);
	tlog_heap_init(&r->heap);
	tlog_heap_init(&r->fheap);
	/* The first append checks free space. */
	__atomic_store_n(&s->ctx.free_check, 1, __ATOMIC_RELAXED);
	tlog_store_set_sched(s, &reaper_ops, r);
	/* Everything that can expire or seal is scheduled; whatever came
	 * due while the store was closed is due now. */
	tlog_store_resched(s, NULL, NULL);
	return 0;
}

int
tlog_reaper_start(struct tlog_store *s)
{
	struct tlog_reaper *r;
	int e;

	if (s->ctx.ro)
		return 0;
	if ((e = tlog_reaper_attach(s)) != 0)
		return e;
	r = reaper_of(s);
	if (r->running)
		return 0;
	r->stop = false;
	/* Counted before it runs: its disk work's descriptors are never
	 * the readers'. */
	tlog_fdbudget_thread(&s->fdb, true);
	if ((e = pthread_create(&r->th, NULL, reaper_main, r)) != 0) {
		tlog_fdbudget_thread(&s->fdb, false);
		return -e;
	}
	r->running = true;
	return 0;
}

void
tlog_reaper_stop(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);

	if (r == NULL || !r->running)
		return;
	pthread_mutex_lock(&r->ctx->work_lock);
	r->stop = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->ctx->work_lock);
	pthread_join(r->th, NULL);
	tlog_fdbudget_thread(&r->s->fdb, false);
	r->running = false;
}

void
tlog_reaper_detach(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);
	struct tlog_heap_node *top;

	if (r == NULL)
		return;
	tlog_reaper_stop(s);
	tlog_store_set_sched(r->s, NULL, NULL);
	while ((top = tlog_heap_top(&r->heap)) != NULL)
		tlog_partition_put(tlog_reaper_set(r, &r->heap, part_of(top),
		    -1));
	while ((top = tlog_heap_top(&r->fheap)) != NULL)
		tlog_partition_put(tlog_reaper_set(r, &r->fheap, fpart_of(top),
		    -1));
	__atomic_store_n(&r->ctx->free_check, 0, __ATOMIC_RELAXED);
	tlog_free_budget(r, -1, 0, 0, 0);
	tlog_heap_destroy(&r->heap);
	tlog_heap_destroy(&r->fheap);
	pthread_cond_destroy(&r->cond);
	free(r);
}
