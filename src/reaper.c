/*
 * reaper.c - retention on time: a min-heap of partitions keyed by the
 * earliest moment each can yield work, and one thread that sleeps until
 * the top of the heap is due.
 *
 * A partition's due time is the earlier of its idle seal (active segment's
 * first record + segment.ms less jitter) and its time rule (oldest
 * segment's newest record + retention.ms + 1 ms). Due times move earlier
 * only when a segment is created or a setting changes, and both push the
 * partition forward here; appends into an existing segment only move them
 * later, so the append path never touches the heap. A partition popped
 * early (its due moved later) is put back at its true due time.
 *
 * Each wake-up pops only the due partitions: its cost is the work, not the
 * partition count. Each gets one bounded step under its own lock (at most
 * REAP_BATCH segments detached); one with more left is due again at once
 * and goes after the others. Unlinks happen elsewhere, with no lock held
 * (the unlink queue in store.c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "tlog_int.h"

#define REAP_BATCH 64

/* ---- the heap (reap_lock held) ---- */

static bool
before(const struct tlog_partition *a, const struct tlog_partition *b)
{
	return a->due < b->due;
}

static void
heap_set(struct tlog_store *s, size_t i, struct tlog_partition *p)
{
	s->heap[i] = p;
	p->heap_idx = i;
}

static void
sift_up(struct tlog_store *s, size_t i)
{
	struct tlog_partition *p = s->heap[i];

	while (i > 0 && before(p, s->heap[(i - 1) / 2])) {
		heap_set(s, i, s->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(s, i, p);
}

static void
sift_down(struct tlog_store *s, size_t i)
{
	struct tlog_partition *p = s->heap[i];
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && before(s->heap[c + 1], s->heap[c]))
			c++;
		if (!before(s->heap[c], p))
			break;
		heap_set(s, i, s->heap[c]);
		i = c;
	}
	heap_set(s, i, p);
}

static int
heap_insert(struct tlog_store *s, struct tlog_partition *p)
{
	if (s->nheap == s->heapcap) {
		size_t cap = s->heapcap ? s->heapcap * 2 : 64;
		void *nh = reallocarray(s->heap, cap, sizeof(*s->heap));
		if (nh == NULL)
			return -ENOMEM;
		s->heap = nh;
		s->heapcap = cap;
	}
	tlog_part_ref(p);
	heap_set(s, s->nheap++, p);
	sift_up(s, p->heap_idx);
	return 0;
}

/* Takes p out of the heap; the caller drops the heap's reference. */
static void
heap_remove(struct tlog_store *s, struct tlog_partition *p)
{
	size_t i = p->heap_idx;
	struct tlog_partition *last;

	p->heap_idx = SIZE_MAX;
	last = s->heap[--s->nheap];
	if (i == s->nheap)
		return;
	heap_set(s, i, last);
	sift_up(s, i);
	sift_down(s, last->heap_idx);
}

/* Sets p's due time (-1: unscheduled); returns the reference to drop, if
 * p left the heap. */
static struct tlog_partition *
heap_update(struct tlog_store *s, struct tlog_partition *p, int64_t due)
{
	bool was_top = s->nheap > 0 && s->heap[0] == p;
	int64_t old_top = s->nheap ? s->heap[0]->due : -1;

	if (due < 0 || tlog_level_dead(&p->lv)) {
		if (p->heap_idx == SIZE_MAX)
			return NULL;
		heap_remove(s, p);
		p->due = -1;
		return p;
	}
	p->due = due;
	if (p->heap_idx == SIZE_MAX) {
		if (heap_insert(s, p) != 0)
			tlog_ctx_log_err(&s->ctx, "reaper: out of memory scheduling a "
			    "partition");
	} else {
		sift_up(s, p->heap_idx);
		sift_down(s, p->heap_idx);
	}
	/* Wake the thread if the earliest due time moved earlier. */
	if (s->heap[0] == p && (!was_top || due < old_top || old_top < 0))
		pthread_cond_broadcast(&s->reap_cond);
	return NULL;
}

/* ---- due times ---- */

void
tlog_sched_earlier(struct tlog_partition *p, int64_t due)
{
	struct tlog_store *s = p->store;

	pthread_mutex_lock(&s->reap_lock);
	if (!tlog_level_dead(&p->lv) && (p->heap_idx == SIZE_MAX || due < p->due))
		heap_update(s, p, due);
	pthread_mutex_unlock(&s->reap_lock);
}

/*
 * The due time is computed and applied under the partition's lock: an
 * append that creates a segment (and schedules the partition) in between
 * would otherwise be undone by a stale "never", and the partition would
 * leave the schedule for good while it has data.
 */
void
tlog_resched(struct tlog_partition *p)
{
	struct tlog_store *s = p->store;
	struct tlog_partition *drop;
	int64_t due;

	pthread_mutex_lock(&p->sd.lock);
	due = tlog_part_due_locked(p);
	TLOG_HOOK(&s->ctx, TLOG_HOOK_RESCHED, p);
	pthread_mutex_lock(&s->reap_lock);
	drop = heap_update(s, p, due);
	pthread_mutex_unlock(&s->reap_lock);
	pthread_mutex_unlock(&p->sd.lock);
	tlog_partition_put(drop);
}

void
tlog_unsched(struct tlog_partition *p)
{
	struct tlog_store *s = p->store;
	struct tlog_partition *drop;

	pthread_mutex_lock(&s->reap_lock);
	drop = heap_update(s, p, -1);
	pthread_mutex_unlock(&s->reap_lock);
	tlog_partition_put(drop);
}

/*
 * A setting changed at a level: every partition it governs gets its due
 * time recomputed. The partitions are collected under the tree lock and
 * visited after it is dropped.
 */
void
tlog_conf_changed(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p)
{
	struct tlog_partition **v = NULL, *q;
	struct tlog_dirent *d = NULL;
	size_t n = 0, i;

	if (p != NULL) {
		tlog_resched(p);
		return;
	}
	if (t == NULL && s->events != NULL)
		tlog_resched(s->events);
	if (t != NULL) {
		if (tlog_partition_list(t, &d, &n) != 0)
			return;
		for (i = 0; i < n; i++)
			if ((q = tlog_partition_get(t, d[i].name)) != NULL) {
				tlog_resched(q);
				tlog_partition_put(q);
			}
		free(d);
		return;
	}
	/* The store level: every partition of every topic. */
	if (tlog_all_partitions(s, &v, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		tlog_resched(v[i]);
		tlog_partition_put(v[i]);
	}
	free(v);
}

/* ---- wake-ups ---- */

int64_t
tlog_reaper_cycle(struct tlog_store *s, struct tlog_reap_stats *st)
{
	struct tlog_partition **due = NULL, *p;
	size_t n = 0, i, cap = 0;
	int64_t now = tlog_ctx_now(&s->ctx), next;
	uint64_t t0 = tlog_mono_ns(), ns;
	int k;

	memset(st, 0, sizeof(*st));
	/* A read-only store never schedules anything: nothing may seal or
	 * go. */
	if (s->ctx.ro)
		return -1;
	/* Pop every due partition; the heap keeps their references. */
	pthread_mutex_lock(&s->reap_lock);
	while (s->nheap > 0 && s->heap[0]->due <= now) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			void *nd = reallocarray(due, nc, sizeof(*due));
			if (nd == NULL)
				break;
			due = nd;
			cap = nc;
		}
		p = s->heap[0];
		heap_remove(s, p);
		p->due = -1;
		due[n++] = p;
	}
	pthread_mutex_unlock(&s->reap_lock);

	for (i = 0; i < n; i++) {
		p = due[i];
		st->visited++;
		if (tlog_partition_seal_idle(p) > 0)
			st->sealed++;
		/* A partition over a lowered ceiling is due at once; one
		 * step each, the rest at the next wake-up. */
		st->sized += (uint64_t)tlog_partition_enforce_size(p,
		    REAP_BATCH, &st->sized_bytes);
		k = tlog_partition_expire(p, REAP_BATCH, &st->bytes);
		if (k > 0)
			st->expired += (uint64_t)k;
		if (k == REAP_BATCH)
			tlog_sched_earlier(p, now);	/* more: next cycle */
		else
			tlog_resched(p);
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
	next = tlog_reaper_next_due(s);
	return next;
}

int64_t
tlog_reaper_next_due(struct tlog_store *s)
{
	int64_t due;

	pthread_mutex_lock(&s->reap_lock);
	due = s->nheap ? s->heap[0]->due : -1;
	pthread_mutex_unlock(&s->reap_lock);
	return due;
}

size_t
tlog_reaper_scheduled(struct tlog_store *s)
{
	size_t n;

	pthread_mutex_lock(&s->reap_lock);
	n = s->nheap;
	pthread_mutex_unlock(&s->reap_lock);
	return n;
}

static void *
reaper_main(void *arg)
{
	struct tlog_store *s = arg;
	struct tlog_reap_stats st;
	struct timespec ts;
	int64_t due, now;
	uint64_t t0;

	pthread_mutex_lock(&s->reap_lock);
	while (!s->reaper_stop) {
		due = s->nheap ? s->heap[0]->due : -1;
		now = tlog_ctx_now(&s->ctx);
		if (due < 0) {
			pthread_cond_wait(&s->reap_cond, &s->reap_lock);
			continue;
		}
		if (due > now) {
			/* Engine time never runs faster than real time, so
			 * this never oversleeps; at half speed it wakes early
			 * and sleeps again. A wall clock step changes nothing. */
			tlog_deadline(due - now, &ts);
			pthread_cond_timedwait(&s->reap_cond, &s->reap_lock,
			    &ts);
			continue;
		}
		pthread_mutex_unlock(&s->reap_lock);
		t0 = tlog_mono_ns();
		tlog_reaper_cycle(s, &st);
		if (st.expired > 0)
			tlog_ctx_log(&s->ctx, LOG_INFO, "reaper: %" PRIu64 " segments "
			    "(%" PRIu64 " bytes) expired from %" PRIu64
			    " due partitions in %.3f ms", st.expired, st.bytes,
			    st.visited, (double)(tlog_mono_ns() - t0) / 1e6);
		if (st.sized > 0)
			tlog_ctx_log(&s->ctx, LOG_INFO, "reaper: %" PRIu64 " segments "
			    "(%" PRIu64 " bytes) over retention.bytes removed "
			    "from %" PRIu64 " due partitions in %.3f ms",
			    st.sized, st.sized_bytes, st.visited,
			    (double)(tlog_mono_ns() - t0) / 1e6);
		tlog_store_wakeup(s);	/* the unlinker has work */
		pthread_mutex_lock(&s->reap_lock);
	}
	pthread_mutex_unlock(&s->reap_lock);
	return NULL;
}

int
tlog_reaper_start(struct tlog_store *s)
{
	int r;

	if (s->reaper_running || s->ctx.ro)
		return 0;
	s->reaper_stop = false;
	if ((r = pthread_create(&s->reaper, NULL, reaper_main, s)) != 0)
		return -r;
	s->reaper_running = true;
	return 0;
}

void
tlog_reaper_stop(struct tlog_store *s)
{
	if (!s->reaper_running)
		return;
	pthread_mutex_lock(&s->reap_lock);
	s->reaper_stop = true;
	pthread_cond_broadcast(&s->reap_cond);
	pthread_mutex_unlock(&s->reap_lock);
	pthread_join(s->reaper, NULL);
	s->reaper_running = false;
}

void
tlog_reaper_init(struct tlog_store *s)
{
	pthread_mutex_init(&s->reap_lock, NULL);
	tlog_cond_init_mono(&s->reap_cond);
}

void
tlog_reaper_fini(struct tlog_store *s)
{
	size_t i;

	tlog_reaper_stop(s);
	for (i = 0; i < s->nheap; i++) {
		s->heap[i]->heap_idx = SIZE_MAX;
		tlog_partition_put(s->heap[i]);
	}
	free(s->heap);
	s->heap = NULL;
	s->nheap = s->heapcap = 0;
	pthread_mutex_destroy(&s->reap_lock);
	pthread_cond_destroy(&s->reap_cond);
}
