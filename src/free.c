/*
 * free.c - retention.keep.free, the reaper's free-space policy
 * (doc/reaper.md, "Disk pressure"): a second heap of partitions by their
 * oldest segment's newest record, the reclaiming passes that detach the
 * store's oldest segments while free space is below the floor, and the
 * appends' side of it: their budget, the back-pressure that makes them
 * wait, and the reclaim of an append that hit ENOSPC. It shares the
 * reaper's state (free.h) and runs on its thread and in its hooks.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/statvfs.h>

#include <syslog.h>
#include <time.h>

#include "free.h"
#include "retention.h"
#include "unlink.h"

/* The free heap's key puts sealed segments first, then active ones
 * (sealed only when no sealed one is left), the events partition last. */
#define FREE_ACTIVE ((int64_t)1 << 60)
#define FREE_EVENTS ((int64_t)1 << 61)
#define FREE_WAIT_MS 2000	/* the longest an append waits for space */
#define FREE_SYNC_MAX 4		/* segments an append's ENOSPC may take */
#define FREE_CHECK_MIN (256 * 1024)	/* appended bytes between checks */

/* ---- the heaps (ctx->work_lock held) ---- */

/*
 * An active segment's max_ts only grows and a detach only leaves newer
 * segments, so a key can only go stale low, which costs a retry when it
 * reaches the top (free_one); a seal (the only way down) updates it at
 * once. An empty active segment counts from the newest timestamp handed
 * out, below any record it will take.
 */
int64_t
tlog_free_key_locked(struct tlog_partition *p)
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

struct tlog_partition *
tlog_reaper_set(struct tlog_reaper *r, struct tlog_heap *h,
    struct tlog_partition *p, int64_t key)
{
	struct tlog_heap_node *x = h == &r->heap ? &p->sched : &p->fheap;

	if (key < 0 || tlog_level_dead(&p->lv)) {
		if (!tlog_heap_holds(x))
			return NULL;
		tlog_heap_remove(h, x);
		x->key = -1;
		return p;
	}
	x->key = key;
	if (tlog_heap_holds(x))
		tlog_heap_fix(h, x);
	else if (tlog_heap_insert(h, x) != 0)
		tlog_ctx_log_err(r->ctx, "reaper: out of memory %s",
		    h == &r->heap ? "scheduling a partition" :
		    "keeping a partition for retention.keep.free");
	else
		tlog_part_ref(p);
	return NULL;
}

/* ---- the scheduler's hooks for retention.keep.free ---- */

/* A partition that had no key enters the free heap here. */
void
tlog_free_sealed(void *arg, struct tlog_partition *p)
{
	struct tlog_reaper *r = arg;
	int64_t key = tlog_free_key_locked(p);

	pthread_mutex_lock(&r->ctx->work_lock);
	if (key >= 0 && !tlog_level_dead(&p->lv))
		tlog_reaper_set(r, &r->fheap, p, key);
	pthread_mutex_unlock(&r->ctx->work_lock);
}

void
tlog_free_pressure(void *arg)
{
	struct tlog_reaper *r = arg;

	pthread_mutex_lock(&r->ctx->work_lock);
	r->pressure = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->ctx->work_lock);
}

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

int
tlog_free_gauges(struct tlog_store *s, uint64_t *avail, int64_t *floor)
{
	struct tlog_reaper *r = reaper_of(s);
	uint64_t size;
	int e;

	if (r == NULL)
		return -ENOENT;
	if ((e = free_space(r, avail, &size)) != 0)
		return e;
	*floor = free_floor(r, size);
	return 0;
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
 * looked at again). Returns its bytes, 0 if nothing is left; *first says
 * whether it is the first this pass (r->pass) took from its partition.
 * Empty partitions (an empty active segment) leave the heap; the next
 * segment brings them back. The store's admin_lock held, no partition
 * lock.
 */
static uint64_t
free_one(struct tlog_reaper *r, bool *first)
{
	struct tlog_heap_node *top;
	struct tlog_partition *p, *drop;
	struct tlog_segment *seg;
	struct tlog_evbuf eb = { 0 };
	uint64_t bytes = 0;
	int64_t key;
	bool stale;

	for (;;) {
		pthread_mutex_lock(&r->ctx->work_lock);
		if ((top = tlog_heap_top(&r->fheap)) == NULL) {
			pthread_mutex_unlock(&r->ctx->work_lock);
			return 0;
		}
		p = fpart_of(top);
		tlog_part_ref(p);
		pthread_mutex_unlock(&r->ctx->work_lock);

		pthread_mutex_lock(&p->sd.lock);
		seg = TAILQ_FIRST(&p->segs);
		key = tlog_free_key_locked(p);
		if (seg != NULL && seg->records == 0)
			key = -1;	/* nothing to free in p for now */
		pthread_mutex_lock(&r->ctx->work_lock);
		stale = !tlog_heap_holds(&p->fheap) || key != p->fheap.key ||
		    key < 0;
		if (!stale) {
			pthread_mutex_unlock(&r->ctx->work_lock);
			/* seg holds a record (the key says so): it goes. */
			tlog_part_take_oldest(p, TLOG_RULE_FREE, &eb,
			    tlog_ctx_now(p->ctx), &bytes);
			key = tlog_free_key_locked(p);
			pthread_mutex_lock(&r->ctx->work_lock);
		}
		drop = tlog_reaper_set(r, &r->fheap, p, key);
		pthread_mutex_unlock(&r->ctx->work_lock);
		pthread_mutex_unlock(&p->sd.lock);
		tlog_part_emit(p, &eb);
		tlog_partition_put(drop);
		if (stale) {
			tlog_partition_put(p);
			continue;
		}
		/* The time rule's due time may have moved. */
		tlog_part_resched(p);
		*first = p->free_pass != r->pass;
		p->free_pass = r->pass;
		tlog_partition_put(p);
		return bytes;
	}
}

/*
 * Publishes the appends' budget (tlog_ctx_free_short) from a free space
 * avail read after the count of appends and before the count of unlinks
 * were: appends done between the two are counted twice (free_appended
 * counts them after their write), and so are unlinks (free_unlinked
 * counts them before theirs), so the budget errs low.
 */
void
tlog_free_budget(struct tlog_reaper *r, int64_t floor, uint64_t avail,
    uint64_t appended, uint64_t unlinked)
{
	int64_t limit = INT64_MAX;

	if (floor >= 0)
		limit = (int64_t)avail - floor + (int64_t)(appended - unlinked);
	__atomic_store_n(&r->ctx->free_limit, limit, __ATOMIC_RELAXED);
}

/*
 * One reclaiming pass (the store's admin_lock held): if free space,
 * counting the bytes of detached segments not yet unlinked as free
 * already (they will be) and those of appends under way as used, is
 * below the floor, detaches oldest segments until it is above floor +
 * floor / 16, at most max of them; at least one if force. Returns the
 * count detached.
 */
static int
free_pass(struct tlog_reaper *r, int max, bool force,
    struct tlog_free_stats *st)
{
	uint64_t avail, size, have, b, inflight, appended, unlinked;
	int64_t floor;
	bool first;
	int e, n = 0;

	if (tlog_level_conf(&r->s->root, TLOG_RETENTION_KEEP_FREE) == -1) {
		free_arm(r, -1);
		tlog_free_budget(r, -1, 0, 0, 0);
		st->floor = -1;
		return 0;		/* off: not even a statvfs */
	}
	inflight = __atomic_load_n(&r->ctx->free_inflight, __ATOMIC_ACQUIRE);
	appended = __atomic_load_n(&r->ctx->free_appended, __ATOMIC_RELAXED);
	e = free_space(r, &avail, &size);
	unlinked = __atomic_load_n(&r->ctx->free_unlinked, __ATOMIC_RELAXED);
	if (e != 0) {
		tlog_ctx_log_err(r->ctx, "reaper: cannot read free space: %s",
		    strerror(-e));
		tlog_free_budget(r, -1, 0, 0, 0);
		return 0;
	}
	floor = free_floor(r, size);
	tlog_free_budget(r, floor, avail, appended, unlinked);
	free_arm(r, floor);
	st->avail = avail;
	st->pending = __atomic_load_n(&r->s->q.pending_bytes,
	    __ATOMIC_RELAXED);
	st->floor = floor;
	if (floor < 0)
		return 0;
	have = avail + st->pending;
	have = have > inflight ? have - inflight : 0;
	/* Bytes readers hold come back when they close, not before:
	 * deleting more for them would empty the store and bring
	 * nothing (doc/reaper.md, "Free space"). */
	st->held = __atomic_load_n(&r->ctx->free_held, __ATOMIC_RELAXED);
	if (st->held == 0)
		r->held_said = false;
	else if (have < (uint64_t)floor && have + st->held >= (uint64_t)floor &&
	    !r->held_said) {
		r->held_said = true;
		tlog_ctx_log(r->ctx, LOG_WARNING, "reaper: %" PRIu64 " bytes of "
		    "deleted segments are still open by readers: the disk gets "
		    "them back when the readers close; nothing more is deleted "
		    "for them", st->held);
	}
	have += st->held;
	if (have >= (uint64_t)floor && !force)
		return 0;
	st->target = (uint64_t)floor + (uint64_t)floor / 16;
	r->pass++;
	while (n < max && (have < st->target || (force && n == 0))) {
		if ((b = free_one(r, &first)) == 0) {
			st->exhausted = true;
			break;
		}
		have += b;
		st->bytes += b;
		st->segments++;
		n++;
		if (first)
			st->partitions++;
	}
	return n;
}

/* Logs what a pass detached, if anything; who says why it ran. */
static void
free_log(struct tlog_reaper *r, const struct tlog_free_stats *st,
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
	pthread_mutex_lock(&r->s->admin_lock);
	n = free_pass(r, FREE_PASS_MAX, false, st);
	pthread_mutex_unlock(&r->s->admin_lock);
	return n;
}

/*
 * An append hit ENOSPC (no lock held): with keep.free set, what waits to
 * be unlinked goes first, then at most FREE_SYNC_MAX oldest segments
 * (at least one, whatever the count says: the disk is full), unlinked
 * here and now. Returns what was unlinked or detached.
 */
int
tlog_free_reclaim(void *arg)
{
	struct tlog_reaper *r = arg;
	struct tlog_free_stats st;
	uint64_t avail, size, t0 = tlog_mono_ns();
	int n;

	if (r->ctx->ro || free_space(r, &avail, &size) != 0 ||
	    free_floor(r, size) < 0)
		return 0;
	memset(&st, 0, sizeof(st));
	n = tlog_unlink_pending(&r->s->q, 0);
	pthread_mutex_lock(&r->s->admin_lock);
	n += free_pass(r, FREE_SYNC_MAX, true, &st);
	pthread_mutex_unlock(&r->s->admin_lock);
	if (st.segments > 0) {
		n += tlog_unlink_pending(&r->s->q, 0);
		TLOG_METRIC_ADD(r->ctx, free_sync, 1);
	}
	free_log(r, &st, "an append hit ENOSPC:", t0);
	return n;
}

/* The unlinker unlinks them in the order they were detached, so the
 * events keep the oldest-first order. */
void
tlog_free_settle(struct tlog_reaper *r, const struct tlog_free_stats *st,
    const char *who, uint64_t t0)
{
	TLOG_METRIC_ADD(r->ctx, free_cycles, 1);
	free_log(r, st, who, t0);
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
void
tlog_free_wait(void *arg)
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
		pthread_mutex_lock(&r->s->admin_lock);
		/* Another waiter's pass may have done it already. */
		n = tlog_ctx_free_short(r->ctx) ?
		    free_pass(r, FREE_PASS_MAX, false, &st) : 0;
		pthread_mutex_unlock(&r->s->admin_lock);
		if (n > 0)
			tlog_free_settle(r, &st, "appends wait for free space:",
			    t0);
		pthread_mutex_lock(&q->ctx->work_lock);
		while (tlog_ctx_free_short(r->ctx) &&
		    __atomic_load_n(&q->pending_bytes, __ATOMIC_RELAXED) > 0 &&
		    pthread_cond_timedwait(&q->cond, &q->ctx->work_lock, &ts) == 0)
			;
		pending = __atomic_load_n(&q->pending_bytes, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&q->ctx->work_lock);
		if (!tlog_ctx_free_short(r->ctx) || (n == 0 && pending == 0) ||
		    st.exhausted || tlog_mono_ns() - t0 >=
		    (uint64_t)FREE_WAIT_MS * 1000000)
			return;
	}
}
