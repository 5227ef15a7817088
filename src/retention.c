/*
 * retention.c - what seals and takes segments away off the append path
 * (doc/design.md §3, §4): the time rule, the size rule for a ceiling
 * lowered since the last append, manual deletion and sealing, the idle
 * seal, and a partition's due time, which the reaper schedules by
 * (doc/reaper.md). Each call holds the partition lock once; detached
 * segments go to the unlink queue, and events are emitted after the lock
 * is dropped.
 */
#include "config.h"

#include <errno.h>

#include "retention.h"

#define IDLE_QUIET_MS 1000	/* no append this long before an idle seal */

int
tlog_partition_seal(struct tlog_partition *p, enum tlog_trigger why)
{
	struct tlog_evbuf eb = { 0 };

	if (p->ctx->ro)
		return -EROFS;
	pthread_mutex_lock(&p->sd.lock);
	tlog_part_seal_active(p, why, &eb, tlog_ctx_now(p->ctx));
	pthread_mutex_unlock(&p->sd.lock);
	tlog_part_emit(p, &eb);
	return 0;
}

/*
 * The idle trigger is for partitions that stopped receiving writes: the
 * span has passed and nothing was appended for min(segment.ms, 1 s). A
 * partition still being written rolls on record time instead, so the
 * wall clock never races the record that would roll it. (Deletion does
 * not wait for this seal: the time rule seals an expired active segment.)
 */
static int64_t
idle_due_locked(struct tlog_partition *p, struct tlog_segment *seg)
{
	int64_t ms = tlog_part_conf(p, TLOG_SEGMENT_MS);
	int64_t quiet = ms < IDLE_QUIET_MS ? ms : IDLE_QUIET_MS;
	int64_t a = seg->first_ts + tlog_seg_span(seg, ms);
	int64_t b = seg->max_ts + quiet;

	return a > b ? a : b;
}

static int64_t
idle_due_of(struct tlog_partition *p)
{
	struct tlog_segment *seg = tlog_part_active(p);

	return seg != NULL && seg->records > 0 ? idle_due_locked(p, seg) : -1;
}

int
tlog_part_seal_idle(struct tlog_partition *p)
{
	struct tlog_segment *seg;
	struct tlog_evbuf eb = { 0 };
	int64_t now = tlog_ctx_now(p->ctx);
	int sealed = 0;

	if (p->ctx->ro)
		return -EROFS;
	pthread_mutex_lock(&p->sd.lock);
	seg = tlog_part_active(p);
	if (seg != NULL && seg->records > 0 && now >= idle_due_locked(p, seg)) {
		tlog_part_seal_active(p, TLOG_TRIG_IDLE, &eb, now);
		sealed = 1;
	}
	pthread_mutex_unlock(&p->sd.lock);
	tlog_part_emit(p, &eb);
	return sealed;
}

int
tlog_partition_delete(struct tlog_partition *p, uint64_t base)
{
	struct tlog_segment *seg;
	struct tlog_evbuf eb = { 0 };
	int r = -ENOENT;

	if (p->ctx->ro)
		return -EROFS;
	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link)
		if (seg->base == base)
			break;
	if (seg != NULL && seg->records == 0) {
		/* An empty active segment holds nothing to delete; it stays,
		 * so its base is never queued for unlinking while a new
		 * segment could take the same name. */
		r = 0;
	} else if (seg != NULL) {
		if (!seg->sealed)
			tlog_part_seal_active(p, TLOG_TRIG_MANUAL, &eb,
			    tlog_ctx_now(p->ctx));
		tlog_part_detach(p, seg, TLOG_RULE_MANUAL);
		r = 0;
	}
	pthread_mutex_unlock(&p->sd.lock);
	tlog_part_emit(p, &eb);
	/* The partition may be empty now: partition.cleanup.ms. */
	if (r == 0 && tlog_part_conf(p, TLOG_PARTITION_CLEANUP_MS) >= 0)
		tlog_part_resched(p);
	return r;
}

/*
 * The consumed rule (doc/reaper.md): the oldest segment goes once every
 * cursor has passed it (base + records <= the slowest cursor) and its
 * newest record is older than retention.consumed.ms. Its due time is
 * -1 while that segment is not wholly consumed: nothing but a cursor
 * commit can change that, and a commit reschedules p.
 */
static bool
consumed_locked(struct tlog_partition *p, struct tlog_segment *seg)
{
	return seg->records > 0 && p->ncursors > 0 &&
	    seg->base + seg->records <= p->cursor_floor;
}

/* When p's oldest segment goes under the time rule (ms: retention.ms) or
 * the consumed rule (retention.consumed.ms); -1: never. */
static int64_t
oldest_due_of(struct tlog_partition *p, int64_t ms, bool consumed)
{
	struct tlog_segment *seg = TAILQ_FIRST(&p->segs);

	if (seg == NULL || seg->records == 0 ||
	    (consumed && !consumed_locked(p, seg)))
		return -1;
	return tlog_part_expires_at(seg->max_ts, ms);
}

/*
 * Whether p holds more than rb: its bytes plus what is left of the active
 * segment's preallocation, which the ceiling counts (doc/engine.md).
 */
static bool
over_ceiling(struct tlog_partition *p, int64_t rb)
{
	struct tlog_segment *seg = tlog_part_active(p);
	uint64_t held = tlog_part_disk(p);

	if (seg != NULL && tlog_seg_prealloc(seg) > seg->bytes)
		held += tlog_seg_prealloc(seg) - seg->bytes;
	return rb >= 0 && held > (uint64_t)rb;
}

/*
 * partition.cleanup.ms (doc/reaper.md): an empty partition (no segment
 * with a record: an empty active segment is no data, its files go with
 * the directory), with nothing detached still on disk, no open writer
 * and no cursor, goes cm + 1 ms after its last write, or after it was
 * made or loaded if never written. -1 while any of that vetoes it, so a
 * vetoed partition is not visited: each veto's end reschedules it (the
 * last writer's close, writer.c; the last unlink, unlink.c; a manual
 * deletion, below; a cursor dropped must call tlog_part_resched too).
 */
int64_t
tlog_part_cleanup_due_locked(struct tlog_partition *p)
{
	int64_t cm = tlog_part_conf(p, TLOG_PARTITION_CLEANUP_MS);
	struct tlog_segment *seg = TAILQ_FIRST(&p->segs);
	int64_t last = p->last_ts > p->born ? p->last_ts : p->born;

	if (cm < 0 || p->quiet ||
	    (seg != NULL && (seg->records > 0 || seg->sealed ||
	    TAILQ_NEXT(seg, link) != NULL)) ||
	    __atomic_load_n(&p->pending_unlinks, __ATOMIC_ACQUIRE) > 0 ||
	    __atomic_load_n(&p->nwriters, __ATOMIC_ACQUIRE) > 0 ||
	    p->ncursors != 0)
		return -1;
	return last + cm + 1;
}

/* The earlier of two due times, a negative one being never. */
static int64_t
earlier(int64_t a, int64_t b)
{
	return a < 0 || (b >= 0 && b < a) ? b : a;
}

int64_t
tlog_part_due_locked(struct tlog_partition *p)
{
	/* The deletion rules are judged by deletion time (doc/engine.md,
	 * "The clock"): their due times in engine time, the schedule's. */
	int64_t idle = idle_due_of(p);
	int64_t exp = tlog_clock_del_due(&p->ctx->clock, oldest_due_of(p,
	    tlog_part_conf(p, TLOG_RETENTION_MS), false));
	int64_t con = tlog_clock_del_due(&p->ctx->clock, oldest_due_of(p,
	    tlog_part_conf(p, TLOG_RETENTION_CONSUMED_MS), true));
	int64_t clean = tlog_clock_del_due(&p->ctx->clock,
	    tlog_part_cleanup_due_locked(p));

	/* Over its ceiling (lowered since the last append): due at once. */
	if (over_ceiling(p, tlog_part_conf(p, TLOG_RETENTION_BYTES)))
		return 0;
	/* An empty partition has no idle seal nor time rule. */
	if (clean >= 0)
		return clean;
	return earlier(idle, earlier(con, exp));
}

int
tlog_part_take_oldest(struct tlog_partition *p, enum tlog_rule rule,
    struct tlog_evbuf *eb, int64_t now, uint64_t *bytes)
{
	struct tlog_segment *seg = TAILQ_FIRST(&p->segs);

	if (seg == NULL)
		return -1;
	if (!seg->sealed && seg->records == 0) {
		/* Nothing to delete: give the space back. */
		if (tlog_seg_prealloc(seg) == 0)
			return -1;
		seg->live->prealloc = 0;
		seg->trim_pending = 1;
		tlog_seg_trim(seg);
		return 0;
	}
	if (!seg->sealed)
		tlog_part_seal_active(p, TLOG_TRIG_RETENTION, eb, now);
	/* What the disk gets back: a compressed segment's .log.zst. */
	if (bytes != NULL)
		*bytes += tlog_seg_disk(seg);
	tlog_part_detach(p, seg, rule);
	return 1;
}

/*
 * The rules that take oldest segments under one hold of p's lock: the
 * size rule for a ceiling lowered since the last append or found exceeded
 * at open (key retention.bytes, rule size), the time rule (retention.ms,
 * rule time) and the consumed rule (retention.consumed.ms, rule consumed,
 * only what every cursor passed). At most max, stopping at the first
 * segment the rule keeps.
 */
static int
take_old(struct tlog_partition *p, int max, uint64_t *bytes,
    enum tlog_key key, enum tlog_rule rule)
{
	struct tlog_evbuf eb = { 0 };
	int64_t v = tlog_part_conf(p, key), now = tlog_ctx_now(p->ctx);
	int64_t del = rule == TLOG_RULE_SIZE ? 0 :
	    tlog_clock_del_now(&p->ctx->clock);
	int64_t due;
	int n = 0, k;

	if (p->ctx->ro)
		return -EROFS;
	if (v < 0)
		return 0;
	pthread_mutex_lock(&p->sd.lock);
	while (n < max) {
		if (rule == TLOG_RULE_SIZE ? !over_ceiling(p, v) :
		    (due = oldest_due_of(p, v, rule == TLOG_RULE_CONSUMED)) < 0 ||
		    del < due)
			break;
		if ((k = tlog_part_take_oldest(p, rule, &eb, now, bytes)) < 0)
			break;
		n += k;
	}
	pthread_mutex_unlock(&p->sd.lock);
	tlog_part_emit(p, &eb);
	return n;
}

int
tlog_part_enforce_size(struct tlog_partition *p, int max, uint64_t *bytes)
{
	return take_old(p, max, bytes, TLOG_RETENTION_BYTES, TLOG_RULE_SIZE);
}

int
tlog_part_expire(struct tlog_partition *p, int max, uint64_t *bytes)
{
	return take_old(p, max, bytes, TLOG_RETENTION_MS, TLOG_RULE_TIME);
}

int
tlog_part_consume(struct tlog_partition *p, int max, uint64_t *bytes)
{
	return take_old(p, max, bytes, TLOG_RETENTION_CONSUMED_MS,
	    TLOG_RULE_CONSUMED);
}

int64_t
tlog_part_due(struct tlog_partition *p, enum tlog_due which)
{
	int64_t due;

	pthread_mutex_lock(&p->sd.lock);
	due = which == TLOG_DUE_IDLE ? idle_due_of(p) : tlog_part_due_locked(p);
	pthread_mutex_unlock(&p->sd.lock);
	return due;
}
