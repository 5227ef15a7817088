/*
 * partition.c - a partition: its run of segments, its settings and the
 * scheduler's calls for it, sealing, and detaching segments for deletion
 * (time rule, size rule, manual); statistics and segment look-ups. The
 * append path, which calls all of that, is append.c. Its place among
 * the layers: partition.h.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "partition.h"
#include "compress.h"
#include "queue.h"

static void
part_free(struct tlog_level *lv)
{
	struct tlog_partition *p = TLOG_CONTAINER_OF(lv, struct tlog_partition,
	    lv);
	struct tlog_segment *seg;

	/* Segments hold a reference, so the list is empty here unless the
	 * store is being torn down, which releases them first. */
	while ((seg = TAILQ_FIRST(&p->segs)) != NULL) {
		TAILQ_REMOVE(&p->segs, seg, link);
		tlog_seg_drop_live(seg);
		free(seg);
	}
	free(p->cursors);
	free(p->id);
	free(p->zbad);
	tlog_segdir_destroy(&p->sd);
	tlog_level_destroy(&p->lv);
	free(p);
}

struct tlog_partition *
tlog_part_alloc(struct tlog_level *parent, const char *name,
    const struct tlog_part_env *env)
{
	struct tlog_partition *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->env = env;
	p->ctx = env->ctx;
	if (tlog_level_init(&p->lv, parent->tree, parent, name,
	    tlog_ctx_ino(p->ctx), part_free) != 0) {
		free(p);
		return NULL;
	}
	tlog_segdir_init(&p->sd, p->ctx, &p->lv, env->fdb);
	TAILQ_INIT(&p->segs);
	p->last_ts = -1;
	p->cursor_floor = UINT64_MAX;
	p->born = tlog_ctx_now(p->ctx);
	tlog_heap_node_init(&p->sched);
	tlog_heap_node_init(&p->fheap);
	return p;
}

void
tlog_part_ref(struct tlog_partition *p)
{
	tlog_level_ref(&p->lv);
}

void
tlog_partition_put(struct tlog_partition *p)
{
	if (p != NULL)
		tlog_level_put(&p->lv);
}

void
tlog_part_release(struct tlog_partition *p)
{
	struct tlog_segment *seg;

	tlog_segdir_drop_unsynced(&p->sd);
	while ((seg = TAILQ_FIRST(&p->segs)) != NULL) {
		TAILQ_REMOVE(&p->segs, seg, link);
		tlog_segment_put(seg);
	}
	tlog_partition_put(p);
}

uint64_t
tlog_partition_ino(const struct tlog_partition *p)
{
	return p->lv.ino;
}

bool
tlog_partition_removed(const struct tlog_partition *p)
{
	return __atomic_load_n(&p->lv.dead, __ATOMIC_ACQUIRE);
}

const struct tlog_conf *
tlog_partition_conf(struct tlog_partition *p)
{
	return tlog_level_conf_of(&p->lv);
}

int64_t
tlog_part_conf(struct tlog_partition *p, enum tlog_key k)
{
	return tlog_level_conf(&p->lv, k);
}

int64_t
tlog_part_expires_at(int64_t max_ts, int64_t rms)
{
	/* Saturated: a forged stamp near INT64_MAX expires never. */
	if (rms < 0)
		return -1;
	return max_ts > INT64_MAX - 1 - rms ? INT64_MAX : max_ts + rms + 1;
}

/* ---- the scheduler, if one is attached (the reaper) ---- */

void *
tlog_part_sched_arg(struct tlog_partition *p)
{
	return __atomic_load_n(&p->env->sched_arg, __ATOMIC_ACQUIRE);
}

static void
sched(struct tlog_partition *p, enum tlog_sched_why why, int64_t due)
{
	void *arg = tlog_part_sched_arg(p);

	if (arg != NULL)
		p->env->sched->sched(arg, p, why, due);
}

void
tlog_part_sched_earlier(struct tlog_partition *p, int64_t due)
{
	sched(p, TLOG_SCHED_EARLIER, due);
}

void
tlog_part_resched(struct tlog_partition *p)
{
	sched(p, TLOG_SCHED_AGAIN, -1);
}

void
tlog_part_unsched(struct tlog_partition *p)
{
	sched(p, TLOG_SCHED_GONE, -1);
}

struct tlog_segment *
tlog_part_active(struct tlog_partition *p)
{
	struct tlog_segment *seg = TAILQ_LAST(&p->segs, tlog_seglist);

	return (seg != NULL && !seg->sealed) ? seg : NULL;
}

/* ---- events: collected under the lock, emitted after ---- */

static void
evbuf_add_seal(struct tlog_evbuf *b, struct tlog_segment *seg,
    enum tlog_trigger why, int64_t now)
{
	void *nv;

	if ((nv = tlog_grow(b->ev, &b->cap, b->n, sizeof(*b->ev), 4)) == NULL)
		return;		/* the event is lost, not the data */
	b->ev = nv;
	b->ev[b->n] = tlog_seg_event(seg, TLOG_EV_SEAL, now);
	b->ev[b->n++].trigger = why;
}

void
tlog_part_emit(struct tlog_partition *p, struct tlog_evbuf *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		if (b->ev[i].kind == TLOG_EV_SEAL)
			TLOG_METRIC_ADD(p->ctx, rolls[b->ev[i].trigger], 1);
		p->env->emit(p->env->arg, p, &b->ev[i]);
	}
	free(b->ev);
	b->ev = NULL;
	b->n = b->cap = 0;
}

/* ---- sealing and detaching (partition lock held) ---- */

int
tlog_part_seal_active(struct tlog_partition *p, enum tlog_trigger why,
    struct tlog_evbuf *eb, int64_t now)
{
	struct tlog_segment *seg = tlog_part_active(p);
	int r;

	if (seg == NULL || seg->records == 0)
		return 0;
	r = tlog_seg_seal(seg, why);
	tlog_queue_flush(p->env->q, p);
	tlog_part_zqueue(p, seg);
	sched(p, TLOG_SCHED_SEALED, -1);
	if (eb != NULL)
		evbuf_add_seal(eb, seg, why, now);
	return r;
}

void
tlog_part_detach(struct tlog_partition *p, struct tlog_segment *seg,
    enum tlog_rule rule)
{
	/* Its data is going: no footer to wait for. */
	if (seg->live != NULL && seg->live->foot_pending) {
		TAILQ_REMOVE(&p->sd.unsynced, seg, live->synclink);
		__atomic_sub_fetch(&p->sd.nunsynced, 1, __ATOMIC_RELAXED);
		seg->live->foot_pending = 0;
		tlog_segment_put(seg);
	}
	TAILQ_REMOVE(&p->segs, seg, link);
	__atomic_sub_fetch(&p->nsegs, 1, __ATOMIC_RELEASE);
	p->bytes -= seg->bytes;
	if (seg->zbytes != 0)
		p->zsaved -= (int64_t)seg->bytes - (int64_t)seg->zbytes;
	seg->dead = 1;
	seg->rule = rule;
	tlog_seg_close_files(seg);
	/* The partition's reference moves to the queue. */
	tlog_queue_unlink(p->env->q, seg);
}

/* ---- statistics and segments ---- */

void
tlog_partition_stats(struct tlog_partition *p, struct tlog_part_stats *st)
{
	struct tlog_segment *first, *last;
	int64_t rms = tlog_part_conf(p, TLOG_RETENTION_MS);

	pthread_mutex_lock(&p->sd.lock);
	first = TAILQ_FIRST(&p->segs);
	last = TAILQ_LAST(&p->segs, tlog_seglist);
	st->end_offset = p->next_offset;
	st->start_offset = first ? first->base : p->next_offset;
	st->bytes = p->bytes;
	st->disk_bytes = tlog_part_disk(p);
	st->segments = p->nsegs;
	st->oldest_ts = first && first->records ? first->first_ts : -1;
	/* An empty active segment (after a seal) holds no record: the
	 * newest is the segment's before it. */
	if (last != NULL && last->records == 0)
		last = TAILQ_PREV(last, tlog_seglist, link);
	st->newest_ts = last && last->records ? last->max_ts : -1;
	st->next_expiry = first && first->records ?
	    tlog_part_expires_at(first->max_ts, rms) : -1;
	pthread_mutex_unlock(&p->sd.lock);
}

/* seg's info as it stands, its expiry aside (p->sd.lock held). */
static void
seginfo_locked(struct tlog_segment *seg, struct tlog_seginfo *info)
{
	info->ino = seg->ino;
	info->base = seg->base;
	info->records = seg->records;
	info->bytes = seg->bytes;
	info->alloc = tlog_seg_prealloc(seg) > seg->bytes ?
	    tlog_seg_prealloc(seg) : seg->bytes;
	info->zbytes = seg->zbytes;
	info->first_ts = seg->first_ts;
	info->max_ts = seg->max_ts;
	info->sealed = seg->sealed;
	info->sealed_by = seg->sealed_by;
}

int
tlog_partition_segments(struct tlog_partition *p, struct tlog_seginfo **out,
    size_t *n)
{
	struct tlog_segment *seg;
	struct tlog_seginfo *a;
	int64_t rms = tlog_part_conf(p, TLOG_RETENTION_MS);
	size_t i = 0;

	pthread_mutex_lock(&p->sd.lock);
	a = reallocarray(NULL, p->nsegs ? p->nsegs : 1, sizeof(*a));
	if (a == NULL) {
		pthread_mutex_unlock(&p->sd.lock);
		return -ENOMEM;
	}
	TAILQ_FOREACH(seg, &p->segs, link) {
		seginfo_locked(seg, &a[i]);
		if (seg->records == 0)
			a[i].first_ts = a[i].max_ts = -1;
		a[i].expires_at = seg->records ?
		    tlog_part_expires_at(seg->max_ts, rms) : -1;
		i++;
	}
	pthread_mutex_unlock(&p->sd.lock);
	*out = a;
	*n = i;
	return 0;
}

void
tlog_segment_info(struct tlog_segment *seg, struct tlog_seginfo *info)
{
	struct tlog_partition *p = tlog_seg_part(seg);
	int64_t rms;

	pthread_mutex_lock(&p->sd.lock);
	seginfo_locked(seg, info);
	pthread_mutex_unlock(&p->sd.lock);
	rms = tlog_part_conf(p, TLOG_RETENTION_MS);
	info->expires_at = info->max_ts >= 0 ?
	    tlog_part_expires_at(info->max_ts, rms) : -1;
}

/* p's segment based at base, or its unsealed one if active: referenced,
 * or NULL. */
static struct tlog_segment *
seg_find(struct tlog_partition *p, bool active, uint64_t base)
{
	struct tlog_segment *seg;

	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link)
		if (active ? !seg->sealed : seg->base == base)
			break;
	if (seg != NULL)
		tlog_seg_ref(seg);
	pthread_mutex_unlock(&p->sd.lock);
	return seg;
}

struct tlog_segment *
tlog_segment_get(struct tlog_partition *p, uint64_t base)
{
	return seg_find(p, false, base);
}

struct tlog_segment *
tlog_segment_get_active(struct tlog_partition *p)
{
	return seg_find(p, true, 0);
}
