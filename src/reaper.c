/*
 * reaper.c - retention on time: a min-heap of partitions keyed by the
 * earliest moment each can yield work, and one thread that sleeps until
 * the top of the heap is due.
 *
 * A partition's due time is the earlier of its idle seal (active segment's
 * first record + segment.ms less jitter) and its time rule (oldest
 * segment's newest record + retention.ms + 1 ms) and its consumed rule
 * (the same with retention.consumed.ms, once every cursor passed that
 * segment; a cursor commit reschedules). Due times move earlier
 * only when a segment is created or a setting changes, and both push the
 * partition forward here; appends into an existing segment only move them
 * later, so the append path never touches the heap. A partition popped
 * early (its due moved later) is put back at its true due time.
 *
 * Each wake-up pops only the due partitions: its cost is the work, not the
 * partition count. Each gets one bounded step under its own lock (at most
 * REAP_BATCH segments detached); one with more left is due again at once
 * and goes after the others. Unlinks happen elsewhere, with no lock held
 * (the unlink queue, unlink.c).
 *
 * The reaper is not part of the store's life cycle: whoever opens the
 * store attaches it (tlog_reaper_attach, or tlog_reaper_start for the
 * thread too), and from then on the partitions reach it through the
 * scheduler hooks the store keeps (struct tlog_sched_ops). A reaper
 * still attached when the store closes is detached by the store, through
 * the same hooks.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include <syslog.h>
#include <time.h>

#include "reaper.h"
#include "retention.h"
#include "store.h"
#include "unlink.h"

#define REAP_BATCH 64

/*
 * retention.keep.free (doc/reaper.md, "Disk pressure"). The free heap's
 * key puts sealed segments first, then active ones (sealed only when no
 * sealed one is left), the events partition after everyone.
 */
#define FREE_ACTIVE ((int64_t)1 << 60)
#define FREE_EVENTS ((int64_t)1 << 61)
#define FREE_TICK_MS 1000	/* free space is checked at least this often */
#define FREE_WAIT_MS 2000	/* the longest an append waits for space */
#define FREE_PASS_MAX 4096	/* segments one reclaiming pass may take */
#define FREE_SYNC_MAX 4		/* segments an append's ENOSPC may take */
#define FREE_CHECK_MIN (256 * 1024)	/* appended bytes between checks */

struct tlog_reaper {
	struct tlog_store *s;
	struct tlog_ctx *ctx;
	/* Lock order: a partition's sd.lock, then lock; never the
	 * reverse. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tlog_heap heap;		/* partitions by due time, each
					   referenced */
	pthread_t th;
	bool running;
	bool stop;
	/* retention.keep.free: partitions by their oldest segment's max_ts
	 * (each referenced; under lock, kept with sched), one reclaiming
	 * pass at a time (free_lock, taken before any partition lock). */
	struct tlog_heap fheap;
	pthread_mutex_t free_lock;
	bool pressure;			/* appends asked for a check */
	int64_t free_last;		/* last check, engine time */
};

static struct tlog_partition *
part_of(struct tlog_heap_node *x)
{
	return TLOG_CONTAINER_OF(x, struct tlog_partition, sched);
}

static struct tlog_reaper *
reaper_of(struct tlog_store *s)
{
	return tlog_store_sched(s);
}

/* ---- the heap (r->lock held) ---- */

/* Sets p's due time (-1: unscheduled); returns the reference to drop, if
 * p left the heap. */
static struct tlog_partition *
heap_update(struct tlog_reaper *r, struct tlog_partition *p, int64_t due)
{
	struct tlog_heap_node *top = tlog_heap_top(&r->heap);
	bool was_top = top == &p->sched;
	int64_t old_top = top != NULL ? top->key : -1;

	if (due < 0 || tlog_level_dead(&p->lv)) {
		if (!tlog_heap_holds(&p->sched))
			return NULL;
		tlog_heap_remove(&r->heap, &p->sched);
		p->sched.key = -1;
		return p;
	}
	p->sched.key = due;
	if (!tlog_heap_holds(&p->sched)) {
		if (tlog_heap_insert(&r->heap, &p->sched) != 0)
			tlog_ctx_log_err(r->ctx, "reaper: out of memory "
			    "scheduling a partition");
		else
			tlog_part_ref(p);
	} else
		tlog_heap_fix(&r->heap, &p->sched);
	/* Wake the thread if the earliest due time moved earlier. */
	if (tlog_heap_top(&r->heap) == &p->sched &&
	    (!was_top || due < old_top || old_top < 0))
		pthread_cond_broadcast(&r->cond);
	return NULL;
}

/* ---- the free heap (r->lock held) ---- */

static struct tlog_partition *
fpart_of(struct tlog_heap_node *x)
{
	return TLOG_CONTAINER_OF(x, struct tlog_partition, fheap);
}

/*
 * p's key in the free heap (p->sd.lock held), -1 if it has no segment.
 * An active segment's max_ts only grows and a detach only leaves newer
 * segments, so a key can only go stale low, which costs a retry when it
 * reaches the top (free_one); a seal (the only way down) updates it at
 * once. An empty active segment counts from the newest timestamp handed
 * out, below any record it will take.
 */
static int64_t
free_key_locked(struct tlog_partition *p)
{
	struct tlog_segment *seg = TAILQ_FIRST(&p->segs);
	int64_t k;

	if (seg == NULL)
		return -1;
	k = seg->records > 0 ? seg->max_ts : p->last_ts;
	if (k < 0)
		k = 0;
	if (!seg->sealed)
		k += FREE_ACTIVE;
	if (p->quiet)
		k += FREE_EVENTS;
	return k;
}

/* Sets p's free key (-1: out); returns the reference to drop, if any. */
static struct tlog_partition *
fheap_update(struct tlog_reaper *r, struct tlog_partition *p, int64_t key)
{
	if (key < 0 || tlog_level_dead(&p->lv)) {
		if (!tlog_heap_holds(&p->fheap))
			return NULL;
		tlog_heap_remove(&r->fheap, &p->fheap);
		return p;
	}
	p->fheap.key = key;
	if (tlog_heap_holds(&p->fheap))
		tlog_heap_fix(&r->fheap, &p->fheap);
	else if (tlog_heap_insert(&r->fheap, &p->fheap) != 0)
		tlog_ctx_log_err(r->ctx, "reaper: out of memory keeping a "
		    "partition for retention.keep.free");
	else
		tlog_part_ref(p);
	return NULL;
}

/* ---- the scheduler's hooks (struct tlog_sched_ops) ---- */

static void
reaper_sched_earlier(void *arg, struct tlog_partition *p, int64_t due)
{
	struct tlog_reaper *r = arg;

	pthread_mutex_lock(&r->lock);
	if (!tlog_level_dead(&p->lv) && (!tlog_heap_holds(&p->sched) ||
	    due < p->sched.key))
		heap_update(r, p, due);
	pthread_mutex_unlock(&r->lock);
}

/* A new segment (the earlier hook) or a seal: p's free key, p->sd.lock
 * held. A partition that had none enters the free heap here. */
static void
reaper_sealed(void *arg, struct tlog_partition *p)
{
	struct tlog_reaper *r = arg;
	int64_t key = free_key_locked(p);

	pthread_mutex_lock(&r->lock);
	if (key >= 0 && !tlog_level_dead(&p->lv))
		fheap_update(r, p, key);
	pthread_mutex_unlock(&r->lock);
}

static void
reaper_earlier(void *arg, struct tlog_partition *p, int64_t due)
{
	reaper_sched_earlier(arg, p, due);
	reaper_sealed(arg, p);
}

/*
 * The due time is computed and applied under the partition's lock: an
 * append that creates a segment (and schedules the partition) in between
 * would otherwise be undone by a stale "never", and the partition would
 * leave the schedule for good while it has data.
 */
static void
reaper_resched(void *arg, struct tlog_partition *p)
{
	struct tlog_reaper *r = arg;
	struct tlog_partition *drop, *fdrop;
	int64_t due, key;

	pthread_mutex_lock(&p->sd.lock);
	due = tlog_part_due_locked(p);
	key = free_key_locked(p);
	TLOG_HOOK(r->ctx, TLOG_HOOK_RESCHED, p);
	pthread_mutex_lock(&r->lock);
	drop = heap_update(r, p, due);
	fdrop = fheap_update(r, p, key);
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&p->sd.lock);
	tlog_partition_put(drop);
	tlog_partition_put(fdrop);
}

static void
reaper_unsched(void *arg, struct tlog_partition *p)
{
	struct tlog_reaper *r = arg;
	struct tlog_partition *drop, *fdrop;

	pthread_mutex_lock(&r->lock);
	drop = heap_update(r, p, -1);
	fdrop = fheap_update(r, p, -1);
	pthread_mutex_unlock(&r->lock);
	tlog_partition_put(drop);
	tlog_partition_put(fdrop);
}

static void
reaper_pressure(void *arg)
{
	struct tlog_reaper *r = arg;

	pthread_mutex_lock(&r->lock);
	r->pressure = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void reaper_detach(void *arg);
static int reaper_reclaim(void *arg, struct tlog_partition *p);
static void reaper_wait_free(void *arg);

static const struct tlog_sched_ops reaper_ops = {
	reaper_earlier,
	reaper_resched,
	reaper_unsched,
	reaper_detach,
	reaper_sealed,
	reaper_reclaim,
	reaper_pressure,
	reaper_wait_free,
};

/* ---- disk pressure: retention.keep.free ---- */

static int
free_space(struct tlog_reaper *r, uint64_t *avail, uint64_t *size)
{
	struct statvfs sv;

	if (r->ctx->opts.free_space != NULL)
		return r->ctx->opts.free_space(r->ctx->opts.free_space_arg,
		    avail, size);
	if (statvfs(r->s->path, &sv) == -1)
		return -errno;
	/* f_bavail: what a writer without the root reserve may use. */
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	*size = (uint64_t)sv.f_blocks * sv.f_frsize;
	return 0;
}

/* The floor in bytes for a file system of size bytes; -1 if off. */
static int64_t
free_floor(struct tlog_reaper *r, uint64_t size)
{
	int64_t v = tlog_level_conf(&r->s->root, TLOG_RETENTION_KEEP_FREE);

	if (TLOG_PCT_IS(v))
		return (int64_t)(size / 100 * (uint64_t)TLOG_PCT_DECODE(v));
	return v < 0 ? -1 : v;
}

/* Arms the append path's trigger: a check after an eighth of the floor
 * has been written, so no writer eats the floor between checks. Off, it
 * stays disarmed: setting the key arms it (levels.c). */
static void
free_arm(struct tlog_reaper *r, int64_t floor)
{
	uint64_t step = (uint64_t)floor / 8;

	if (floor < 0) {
		__atomic_store_n(&r->ctx->free_check, 0, __ATOMIC_RELAXED);
		return;
	}
	if (step < FREE_CHECK_MIN)
		step = FREE_CHECK_MIN;
	__atomic_store_n(&r->ctx->free_check, __atomic_load_n(
	    &r->ctx->free_appended, __ATOMIC_RELAXED) + step,
	    __ATOMIC_RELAXED);
}

/*
 * Detaches the store's oldest segment (the free heap's top, its key
 * checked under the partition's lock: a stale one is fixed and the top
 * looked at again). Returns its bytes, 0 if nothing is left; *pp is its
 * partition (not referenced: compare only). Empty partitions (an empty
 * active segment) leave the heap; the next segment brings them back.
 * free_lock held, no partition lock.
 */
static uint64_t
free_one(struct tlog_reaper *r, struct tlog_partition **pp)
{
	struct tlog_heap_node *top;
	struct tlog_partition *p, *drop;
	struct tlog_segment *seg;
	struct tlog_evbuf eb = { 0 };
	uint64_t bytes;
	int64_t key;

	for (;;) {
		pthread_mutex_lock(&r->lock);
		if ((top = tlog_heap_top(&r->fheap)) == NULL) {
			pthread_mutex_unlock(&r->lock);
			return 0;
		}
		p = fpart_of(top);
		tlog_part_ref(p);
		pthread_mutex_unlock(&r->lock);

		pthread_mutex_lock(&p->sd.lock);
		seg = TAILQ_FIRST(&p->segs);
		key = free_key_locked(p);
		if (seg != NULL && seg->records == 0)
			key = -1;	/* nothing to free in p for now */
		pthread_mutex_lock(&r->lock);
		if (!tlog_heap_holds(&p->fheap) || key != p->fheap.key ||
		    key < 0) {
			drop = fheap_update(r, p, key);
			pthread_mutex_unlock(&r->lock);
			pthread_mutex_unlock(&p->sd.lock);
			tlog_partition_put(drop);
			tlog_partition_put(p);
			continue;
		}
		pthread_mutex_unlock(&r->lock);
		bytes = tlog_part_free_oldest(p, &eb);
		key = free_key_locked(p);
		pthread_mutex_lock(&r->lock);
		drop = fheap_update(r, p, key);
		pthread_mutex_unlock(&r->lock);
		pthread_mutex_unlock(&p->sd.lock);
		tlog_part_emit(p, &eb);
		tlog_partition_put(drop);
		/* The time rule's due time may have moved. */
		reaper_resched(r, p);
		*pp = p;
		tlog_partition_put(p);
		return bytes;
	}
}

struct tlog_partition *
tlog_reaper_free_top(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);
	struct tlog_heap_node *top;
	struct tlog_partition *p, *drop;
	struct tlog_segment *seg;
	int64_t key;

	if (r == NULL)
		return NULL;
	for (;;) {
		pthread_mutex_lock(&r->lock);
		if ((top = tlog_heap_top(&r->fheap)) == NULL) {
			pthread_mutex_unlock(&r->lock);
			return NULL;
		}
		p = fpart_of(top);
		tlog_part_ref(p);
		pthread_mutex_unlock(&r->lock);
		pthread_mutex_lock(&p->sd.lock);
		seg = TAILQ_FIRST(&p->segs);
		key = free_key_locked(p);
		if (seg != NULL && seg->records == 0)
			key = -1;
		pthread_mutex_lock(&r->lock);
		if (tlog_heap_holds(&p->fheap) && key == p->fheap.key) {
			pthread_mutex_unlock(&r->lock);
			pthread_mutex_unlock(&p->sd.lock);
			return p;
		}
		drop = tlog_heap_holds(&p->fheap) ? fheap_update(r, p, key) :
		    NULL;
		pthread_mutex_unlock(&r->lock);
		pthread_mutex_unlock(&p->sd.lock);
		tlog_partition_put(drop);
		tlog_partition_put(p);
	}
}

/*
 * Sets the appends' budget (tlog_ctx_free_short) from a free space
 * avail read after the counters were: appends done between the two are
 * counted twice, unlinks once too few, so the budget errs low.
 */
static void
free_budget(struct tlog_reaper *r, int64_t floor, uint64_t avail,
    uint64_t appended, uint64_t unlinked)
{
	struct tlog_ctx *c = r->ctx;

	if (floor < 0) {
		__atomic_store_n(&c->free_room, INT64_MAX, __ATOMIC_RELAXED);
		return;
	}
	/* room last: free_short reads it first, as the sign of a budget. */
	__atomic_store_n(&c->free_a0, appended, __ATOMIC_RELAXED);
	__atomic_store_n(&c->free_u0, unlinked, __ATOMIC_RELAXED);
	__atomic_store_n(&c->free_room, (int64_t)avail - floor,
	    __ATOMIC_RELAXED);
}

/*
 * One reclaiming pass (free_lock held): if free space, counting the
 * bytes of detached segments not yet unlinked as free already (they
 * will be) and those of appends under way as used, is below the floor,
 * detaches oldest segments until it is above floor + floor / 16, at
 * most max of them; at least one if force. Returns the count detached.
 */
static int
free_pass(struct tlog_reaper *r, int max, bool force,
    struct tlog_free_stats *st)
{
	struct tlog_partition *p, *last[64];
	uint64_t avail, size, have, b, inflight, appended, unlinked;
	int64_t floor;
	size_t nlast = 0, i;
	int e, n = 0;

	if (tlog_level_conf(&r->s->root, TLOG_RETENTION_KEEP_FREE) == -1) {
		free_arm(r, -1);
		free_budget(r, -1, 0, 0, 0);
		st->floor = -1;
		return 0;		/* off: not even a statvfs */
	}
	appended = __atomic_load_n(&r->ctx->free_appended, __ATOMIC_RELAXED);
	unlinked = __atomic_load_n(&r->ctx->free_unlinked, __ATOMIC_RELAXED);
	if ((e = free_space(r, &avail, &size)) != 0) {
		tlog_ctx_log_err(r->ctx, "reaper: cannot read free space: %s",
		    strerror(-e));
		free_budget(r, -1, 0, 0, 0);
		return 0;
	}
	floor = free_floor(r, size);
	free_budget(r, floor, avail, appended, unlinked);
	free_arm(r, floor);
	st->avail = avail;
	st->pending = __atomic_load_n(&r->s->q.pending_bytes,
	    __ATOMIC_RELAXED);
	st->floor = floor;
	if (floor < 0)
		return 0;
	inflight = __atomic_load_n(&r->ctx->free_inflight, __ATOMIC_RELAXED);
	have = avail + st->pending;
	have = have > inflight ? have - inflight : 0;
	if (have >= (uint64_t)floor && !force)
		return 0;
	st->target = (uint64_t)floor + (uint64_t)floor / 16;
	while (n < max && (have < st->target || (force && n == 0))) {
		if ((b = free_one(r, &p)) == 0) {
			st->exhausted = true;
			break;
		}
		have += b;
		st->bytes += b;
		st->segments++;
		n++;
		for (i = 0; i < nlast && last[i] != p; i++)
			;
		if (i == nlast) {
			st->partitions++;
			if (nlast < sizeof(last) / sizeof(last[0]))
				last[nlast++] = p;
		}
	}
	return n;
}

static void
log_free(struct tlog_reaper *r, const struct tlog_free_stats *st,
    const char *who, uint64_t t0)
{
	if (st->segments == 0)
		return;
	tlog_ctx_log(r->ctx, LOG_INFO, "reaper: %s %" PRIu64 " bytes free "
	    "(+%" PRIu64 " being unlinked), retention.keep.free %" PRId64
	    ": %" PRIu64 " segments (%" PRIu64 " bytes) freed from %" PRIu64
	    " partitions in %.3f ms", who, st->avail, st->pending, st->floor,
	    st->segments, st->bytes, st->partitions,
	    (double)(tlog_mono_ns() - t0) / 1e6);
}

int
tlog_reaper_free(struct tlog_store *s, struct tlog_free_stats *st)
{
	struct tlog_reaper *r = reaper_of(s);
	int n;

	memset(st, 0, sizeof(*st));
	st->floor = -1;
	if (s->ctx.ro || r == NULL)
		return 0;
	pthread_mutex_lock(&r->free_lock);
	n = free_pass(r, FREE_PASS_MAX, false, st);
	pthread_mutex_unlock(&r->free_lock);
	return n;
}

/*
 * An append hit ENOSPC (no lock held): with keep.free set, what waits to
 * be unlinked goes first, then at most FREE_SYNC_MAX oldest segments
 * (at least one, whatever the count says: the disk is full), unlinked
 * here and now. Returns what was unlinked or detached.
 */
static int
reaper_reclaim(void *arg, struct tlog_partition *p)
{
	struct tlog_reaper *r = arg;
	struct tlog_free_stats st;
	uint64_t avail, size, t0 = tlog_mono_ns();
	int n;

	(void)p;
	if (r->ctx->ro || free_space(r, &avail, &size) != 0 ||
	    free_floor(r, size) < 0)
		return 0;
	memset(&st, 0, sizeof(st));
	pthread_mutex_lock(&r->free_lock);
	n = tlog_unlink_pending(&r->s->q, 0);
	n += free_pass(r, FREE_SYNC_MAX, true, &st);
	pthread_mutex_unlock(&r->free_lock);
	if (st.segments > 0) {
		n += tlog_unlink_pending(&r->s->q, 0);
		TLOG_METRIC_ADD(r->ctx, free_sync, 1);
	}
	log_free(r, &st, "an append hit ENOSPC:", t0);
	return n;
}

/* ---- wake-ups ---- */

/* Pops every due partition; the heap's references become the caller's. */
static size_t
pop_due(struct tlog_reaper *r, int64_t now, struct tlog_partition ***out)
{
	struct tlog_partition **due = NULL, *p;
	struct tlog_heap_node *top;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&r->lock);
	while ((top = tlog_heap_top(&r->heap)) != NULL && top->key <= now) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			void *nd = reallocarray(due, nc, sizeof(*due));
			if (nd == NULL)
				break;
			due = nd;
			cap = nc;
		}
		p = part_of(top);
		tlog_heap_remove(&r->heap, top);
		p->sched.key = -1;
		due[n++] = p;
	}
	pthread_mutex_unlock(&r->lock);
	*out = due;
	return n;
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
	 * go. */
	if (s->ctx.ro || r == NULL)
		return -1;
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
		if (k > 0)
			st->expired += (uint64_t)k;
		if (k < REAP_BATCH && k >= 0) {
			c = tlog_part_consume(p, REAP_BATCH - k,
			    &st->consumed_bytes);
			if (c > 0) {
				st->consumed += (uint64_t)c;
				k += c;
			}
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
	pthread_mutex_lock(&r->lock);
	due = (top = tlog_heap_top(&r->heap)) != NULL ? top->key : -1;
	pthread_mutex_unlock(&r->lock);
	return due;
}

size_t
tlog_reaper_scheduled(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);
	size_t n;

	if (r == NULL)
		return 0;
	pthread_mutex_lock(&r->lock);
	n = r->heap.n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void
log_cycle(struct tlog_reaper *r, const struct tlog_reap_stats *st,
    uint64_t t0)
{
	if (st->expired > 0)
		tlog_ctx_log(r->ctx, LOG_INFO, "reaper: %" PRIu64 " segments "
		    "(%" PRIu64 " bytes) expired from %" PRIu64
		    " due partitions in %.3f ms", st->expired, st->bytes,
		    st->visited, (double)(tlog_mono_ns() - t0) / 1e6);
	if (st->sized > 0)
		tlog_ctx_log(r->ctx, LOG_INFO, "reaper: %" PRIu64 " segments "
		    "(%" PRIu64 " bytes) over retention.bytes removed "
		    "from %" PRIu64 " due partitions in %.3f ms",
		    st->sized, st->sized_bytes, st->visited,
		    (double)(tlog_mono_ns() - t0) / 1e6);
	if (st->consumed > 0)
		tlog_ctx_log(r->ctx, LOG_INFO, "reaper: %" PRIu64 " consumed "
		    "segments (%" PRIu64 " bytes) removed from %" PRIu64
		    " due partitions in %.3f ms", st->consumed,
		    st->consumed_bytes, st->visited,
		    (double)(tlog_mono_ns() - t0) / 1e6);
}

/*
 * After a pass for keep.free: the unlinker is woken for its segments (it
 * unlinks them in the order they were detached, so the events keep the
 * oldest-first order). A pass that found nothing more to delete says so
 * (other files fill the disk).
 */
static void
free_settle(struct tlog_reaper *r, const struct tlog_free_stats *st)
{
	tlog_store_wakeup(r->s);
	if (st->exhausted)
		tlog_ctx_log_err(r->ctx, "reaper: retention.keep.free %" PRId64
		    " bytes cannot be reached: the store has nothing left to "
		    "delete (other files fill the disk)", st->floor);
}

/*
 * Back-pressure: appends would take free space below the floor (no lock
 * held). A pass frees what it must (and sets the budget again from free
 * space as it is), then this waits for the unlinker to give the space
 * back. It returns when the appends fit, when there is nothing to wait
 * for (the store has nothing left to delete: the disk fills as without
 * the key), or after FREE_WAIT_MS whatever happens (an unlinker that
 * cannot unlink never stops the writers for longer).
 */
static void
reaper_wait_free(void *arg)
{
	struct tlog_reaper *r = arg;
	struct tlog_queue *q = &r->s->q;
	struct tlog_free_stats st;
	struct timespec ts;
	uint64_t t0 = tlog_mono_ns(), pending;
	int n;

	TLOG_METRIC_ADD(r->ctx, free_waits, 1);
	tlog_deadline(FREE_WAIT_MS, &ts);
	for (;;) {
		memset(&st, 0, sizeof(st));
		pthread_mutex_lock(&r->free_lock);
		/* Another waiter's pass may have done it already. */
		n = tlog_ctx_free_short(r->ctx) ?
		    free_pass(r, FREE_PASS_MAX, false, &st) : 0;
		pthread_mutex_unlock(&r->free_lock);
		if (n > 0) {
			TLOG_METRIC_ADD(r->ctx, free_cycles, 1);
			log_free(r, &st, "appends wait for free space:", t0);
			free_settle(r, &st);
		}
		pthread_mutex_lock(&q->lock);
		while (tlog_ctx_free_short(r->ctx) &&
		    __atomic_load_n(&q->pending_bytes, __ATOMIC_RELAXED) > 0 &&
		    pthread_cond_timedwait(&q->cond, &q->lock, &ts) == 0)
			;
		pending = __atomic_load_n(&q->pending_bytes, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&q->lock);
		if (!tlog_ctx_free_short(r->ctx) || (n == 0 && pending == 0) ||
		    st.exhausted || tlog_mono_ns() - t0 >=
		    (uint64_t)FREE_WAIT_MS * 1000000)
			return;
	}
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

	pthread_mutex_lock(&r->lock);
	while (!r->stop) {
		due = (top = tlog_heap_top(&r->heap)) != NULL ? top->key : -1;
		now = tlog_ctx_now(r->ctx);
		/* Disk pressure: when appends passed their share of the
		 * floor, and once a tick while the key is set (off, the
		 * thread sleeps until something is due, as ever; setting
		 * it calls reaper_pressure). */
		on = tlog_level_conf(&r->s->root, TLOG_RETENTION_KEEP_FREE) !=
		    -1;
		if (r->pressure || (on && (now - r->free_last >= FREE_TICK_MS ||
		    now < r->free_last))) {
			r->pressure = false;
			r->free_last = now;
			pthread_mutex_unlock(&r->lock);
			t0 = tlog_mono_ns();
			k = tlog_reaper_free(r->s, &fst);
			if (k > 0) {
				TLOG_METRIC_ADD(r->ctx, free_cycles, 1);
				log_free(r, &fst, "free space", t0);
				free_settle(r, &fst);
			}
			pthread_mutex_lock(&r->lock);
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
			pthread_cond_wait(&r->cond, &r->lock);
			continue;
		}
		if (due > now) {
			/* Engine time never runs faster than real time, so
			 * this never oversleeps; at half speed it wakes early
			 * and sleeps again. A wall clock step changes nothing. */
			tlog_deadline(due - now, &ts);
			pthread_cond_timedwait(&r->cond, &r->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&r->lock);
		t0 = tlog_mono_ns();
		tlog_reaper_cycle(r->s, &st);
		log_cycle(r, &st, t0);
		tlog_store_wakeup(r->s);	/* the unlinker has work */
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
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
	pthread_mutex_init(&r->lock, NULL);
	tlog_cond_init_mono(&r->cond);
	tlog_heap_init(&r->heap);
	tlog_heap_init(&r->fheap);
	pthread_mutex_init(&r->free_lock, NULL);
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
	if ((e = pthread_create(&r->th, NULL, reaper_main, r)) != 0)
		return -e;
	r->running = true;
	return 0;
}

static void
reaper_join(struct tlog_reaper *r)
{
	if (!r->running)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->th, NULL);
	r->running = false;
}

void
tlog_reaper_stop(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);

	if (r != NULL)
		reaper_join(r);
}

/* The thread is stopped, the store forgets the reaper, and the heap's
 * references go. */
static void
reaper_detach(void *arg)
{
	struct tlog_reaper *r = arg;
	struct tlog_heap_node *top;

	reaper_join(r);
	tlog_store_set_sched(r->s, NULL, NULL);
	while ((top = tlog_heap_top(&r->heap)) != NULL) {
		tlog_heap_remove(&r->heap, top);
		tlog_partition_put(part_of(top));
	}
	while ((top = tlog_heap_top(&r->fheap)) != NULL) {
		tlog_heap_remove(&r->fheap, top);
		tlog_partition_put(fpart_of(top));
	}
	__atomic_store_n(&r->ctx->free_check, 0, __ATOMIC_RELAXED);
	free_budget(r, -1, 0, 0, 0);
	tlog_heap_destroy(&r->heap);
	tlog_heap_destroy(&r->fheap);
	pthread_mutex_destroy(&r->free_lock);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}

void
tlog_reaper_detach(struct tlog_store *s)
{
	struct tlog_reaper *r = reaper_of(s);

	if (r != NULL)
		reaper_detach(r);
}
