/*
 * append.c - a partition's append path: cutting a write into records,
 * the roll decision before each record, the size ceiling, new segments,
 * and the runs of records written with one pwrite each (doc/engine.md,
 * "Partition"; doc/reaper.md for the ceiling and retention.keep.free).
 *
 * The partition lock is held across a call (append_once) and dropped only
 * to unlink detached segments' files (unlink_detached): no unlink runs
 * under it. Events (seals) are emitted after it is dropped. The layers it
 * may call: partition.h.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "partition.h"
#include "unlink.h"

#define MAX_PENDING_IDX 128
#define MAX_UNSYNCED 8		/* sealed segments waiting for the flusher */

struct limits {
	int64_t seg_bytes;	/* size trigger, with the ceiling's eighth */
	int64_t seg_ms;
	int64_t jitter;
	int64_t ret_bytes;
	int64_t rec_max;
	bool prealloc;
};

static void
get_limits(struct tlog_partition *p, struct limits *l)
{
	int64_t v[TLOG_NKEYS];

	tlog_level_conf_all(&p->lv, v);
	l->seg_bytes = v[TLOG_SEGMENT_BYTES];
	l->seg_ms = v[TLOG_SEGMENT_MS];
	l->jitter = v[TLOG_SEGMENT_JITTER_MS];
	if (l->jitter > l->seg_ms)
		l->jitter = l->seg_ms;
	l->ret_bytes = v[TLOG_RETENTION_BYTES];
	if (l->ret_bytes >= 0 && l->ret_bytes / 8 < l->seg_bytes)
		l->seg_bytes = l->ret_bytes / 8 > 0 ? l->ret_bytes / 8 : 1;
	/* Independent of segment.bytes: a longer record gets a segment of
	 * its own (roll_check), it is never cut at a segment's size. */
	l->rec_max = v[TLOG_RECORD_MAX_BYTES];
	l->prealloc = v[TLOG_SEGMENT_PREALLOCATE] == 1;
}

/* Records appended in memory but not yet written with one pwrite. */
struct run {
	size_t start;		/* offset in the caller's buffer */
	size_t len;
	uint64_t nrec;
	struct tlog_idx_entry *idx;	/* MAX_PENDING_IDX, nidx of them set */
	size_t nidx;
	uint32_t crc;		/* data since the last entry, queued or not, */
	size_t crc_at;		/* up to here in the caller's buffer */
};

/* The run's data CRC brought up to buffer offset `to`: computed per
 * chunk between entries, not per record, so a bulk write of short lines
 * costs one call per 4 KiB. */
static uint32_t
run_crc(struct run *run, const char *buf, size_t to)
{
	run->crc = tlog_crc32c(run->crc, buf + run->crc_at, to - run->crc_at);
	run->crc_at = to;
	return run->crc;
}

static enum tlog_trigger
roll_check(struct tlog_partition *p, const struct tlog_segment *seg,
    const struct run *run, size_t rlen, int64_t ts, const struct limits *l)
{
	uint64_t recs = seg->records + run->nrec;
	uint64_t bytes = seg->bytes + run->len;
	int64_t first = seg->records ? seg->first_ts : ts;

	if (recs == 0)
		return TLOG_TRIG_NONE;
	if (bytes + rlen > (uint64_t)l->seg_bytes)
		return TLOG_TRIG_SIZE;
	if (ts - first >= tlog_seg_span(seg, l->seg_ms))
		return TLOG_TRIG_TIME;
	if (recs + 1 > p->ctx->cap_records || bytes + rlen > TLOG_CAP_BYTES)
		return TLOG_TRIG_CAPACITY;
	return TLOG_TRIG_NONE;
}

/* Writes the run: data first, then its index entries, then commits. */
static int
run_flush(struct tlog_partition *p, struct run *run, const char *buf,
    int64_t ts)
{
	struct tlog_segment *seg = tlog_part_active(p);
	int r;

	if (run->len == 0 && run->nrec == 0)
		return 0;
	if ((r = tlog_seg_open_files(seg, false)) != 0)
		goto out;
	seg->live->wgen++;
	TLOG_HOOK(p->ctx, TLOG_HOOK_WRITE, p);
	r = tlog_pwrite_all(seg->live->fd, buf + run->start, run->len,
	    (off_t)seg->bytes);
	/* No record without its index entries: a record without newline is
	 * found again only through the entry after it. */
	if (r == 0 && run->nidx)
		r = tlog_seg_write_entries(seg, run->idx, run->nidx);
	if (r != 0) {
		/* No partial record may stay. */
		if (ftruncate(seg->live->fd, (off_t)seg->bytes) == -1)
			tlog_ctx_log_err(p->ctx, "cannot cut a failed append: %s",
			    strerror(errno));
		goto out;
	}
	if (seg->records == 0)
		seg->first_ts = ts;
	seg->live->run_crc = run_crc(run, buf, run->start + run->len);
	seg->records += (uint32_t)run->nrec;
	__atomic_store_n(&seg->bytes, seg->bytes + run->len, __ATOMIC_RELEASE);
	seg->max_ts = ts;
	p->bytes += run->len;
	p->next_offset += run->nrec;
	p->last_ts = ts;
	if (!p->quiet) {	/* users' data only */
		TLOG_METRIC_ADD(p->ctx, records, run->nrec);
		TLOG_METRIC_ADD(p->ctx, bytes, run->len);
	}
	run->start += run->len;
out:
	/* On failure start stays put: it counts committed bytes only. */
	run->len = 0;
	run->nrec = 0;
	run->nidx = 0;
	return r;
}

/*
 * A new segment at the partition's end, with its jitter and reservation.
 * It can bring the partition's due time forward: its idle seal, and, for
 * a partition that had nothing, its time rule.
 */
static int
new_segment(struct tlog_partition *p, const struct limits *l, int64_t ts)
{
	bool was_empty = TAILQ_EMPTY(&p->segs);
	struct tlog_segment *seg;
	int64_t due, exp;
	uint64_t j;
	int r, tries = 0;

	for (;;) {
		seg = tlog_seg_new(&p->sd, p->next_offset);
		if (seg == NULL)
			return -ENOMEM;
		TLOG_HOOK(p->ctx, TLOG_HOOK_NEW_SEGMENT, p);
		if ((r = tlog_seg_open_files(seg, true)) == 0)
			break;
		tlog_segment_put(seg);
		/* A stray that is not a regular file holds this offset's
		 * name and is left alone: skip the offset (a gap is legal). */
		if (r != -EEXIST || ++tries > 16)
			return r;
		p->next_offset++;
	}
	if (l->jitter > 0) {
		j = ((uint64_t)arc4random() << 32) | arc4random();
		seg->live->jitter = (int64_t)(j % ((uint64_t)l->jitter + 1));
	}
	if (l->prealloc) {
		if (fallocate(seg->live->fd, FALLOC_FL_KEEP_SIZE, 0,
		    (off_t)l->seg_bytes) == 0)
			seg->live->prealloc = (uint64_t)l->seg_bytes;
		else
			tlog_ctx_log_err(p->ctx, "cannot preallocate %" PRId64
			    " bytes: %s", l->seg_bytes, strerror(errno));
	}
	TAILQ_INSERT_TAIL(&p->segs, seg, link);
	__atomic_add_fetch(&p->nsegs, 1, __ATOMIC_RELEASE);
	due = ts + tlog_seg_span(seg, l->seg_ms);
	exp = tlog_clock_del_due(&p->ctx->clock, tlog_part_expires_at(ts,
	    tlog_part_conf(p, TLOG_RETENTION_MS)));
	if (was_empty && exp >= 0 && exp < due)
		due = exp;
	tlog_part_sched_earlier(p, due);
	return 0;
}

/*
 * Length of the record starting at buf: through the next newline, or
 * rec_max bytes, or (tail_is_record) the rest. 0 if the rest must be held.
 */
static size_t
record_len(const char *buf, size_t len, int64_t rec_max, bool tail_is_record)
{
	size_t lim = len < (uint64_t)rec_max ? len : (size_t)rec_max;
	const char *nl = memchr(buf, '\n', lim);

	if (nl != NULL)
		return (size_t)(nl - buf) + 1;
	if (lim == (size_t)rec_max || tail_is_record)
		return lim;
	return 0;
}

static int64_t
stamp(struct tlog_partition *p)
{
	int64_t ts = tlog_ctx_now(p->ctx);

	return ts < p->last_ts ? p->last_ts : ts;
}

/*
 * Space reserved and not yet written once a record of rlen bytes is in:
 * what is left of the active segment's preallocation, or, when the
 * record starts a new segment, what that one will reserve. The size
 * ceiling counts it, so that it holds on disk: otherwise a preallocated
 * segment would take space that neither retention.bytes nor st_size shows.
 */
static uint64_t
reserve_after(struct tlog_partition *p, const struct run *run, size_t rlen,
    const struct limits *l)
{
	struct tlog_segment *seg = tlog_part_active(p);
	uint64_t end;

	if (seg != NULL) {
		end = seg->bytes + run->len + rlen;
		return tlog_seg_prealloc(seg) > end ?
		    tlog_seg_prealloc(seg) - end : 0;
	}
	if (l->prealloc && (uint64_t)l->seg_bytes > rlen)
		return (uint64_t)l->seg_bytes - rlen;
	return 0;
}

/*
 * Before the record: the size ceiling. Detaches oldest segments until the
 * record (and the space reserved after it) fits; when only the active
 * segment is left it seals and goes.
 */
static int
make_room(struct tlog_partition *p, struct run *run, const char *buf,
    size_t rlen, const struct limits *l, int64_t ts, struct tlog_evbuf *eb)
{
	int r;

	while (tlog_part_disk(p) + run->len + rlen +
	    reserve_after(p, run, rlen, l) >
	    (uint64_t)l->ret_bytes) {
		if ((r = run_flush(p, run, buf, ts)) != 0)
			return r;
		if (tlog_part_take_oldest(p, TLOG_RULE_SIZE, eb, ts, NULL) < 0)
			break;
	}
	return 0;
}

/*
 * One line for a record that could not be stored: the caller drops it
 * (writer.c), so the log is where the loss shows. Rate-limited, as a
 * writer that keeps failing (a full disk) would repeat it. A partition
 * being removed (-ENOENT) refuses nothing.
 */
static void
log_refused(struct tlog_partition *p, size_t rlen, int err,
    const struct limits *l)
{
	char where[2 * TLOG_NAME_MAX + 2], why[64];

	if (err == -ENOENT)
		return;
	tlog_level_where(&p->lv, where, sizeof(where));
	if (err == -EFBIG && l->ret_bytes >= 0 &&
	    rlen > (uint64_t)l->ret_bytes)
		snprintf(why, sizeof(why), "larger than retention.bytes "
		    "(%" PRId64 ")", l->ret_bytes);
	else
		strlcpy(why, strerror(-err), sizeof(why));
	tlog_ctx_log_err(p->ctx, "%s: a record of %zu bytes is refused and "
	    "dropped: %s", where, rlen, why);
}

/*
 * The ceiling bounds the partition's files, not only its live bytes: the
 * files of detached segments take space until they are unlinked. Once
 * they hold more than a roll segment, the appender unlinks them itself
 * before it writes more, with the partition lock dropped (no unlink runs
 * under an engine lock); the records so far are written first. Returns
 * -ENOENT if the partition was removed meanwhile.
 */
static int
unlink_detached(struct tlog_partition *p, struct run *run, const char *buf,
    int64_t ts, const struct limits *l)
{
	int r;

	if ((r = run_flush(p, run, buf, ts)) != 0)
		return r;
	pthread_mutex_unlock(&p->sd.lock);
	tlog_unlink_drain(p->env->q, p, l->seg_bytes);
	pthread_mutex_lock(&p->sd.lock);
	return __atomic_load_n(&p->lv.dead, __ATOMIC_ACQUIRE) ? -ENOENT : 0;
}

/*
 * Adds the record at buf[pos, pos + rlen) to the run, with the index
 * entries it needs (p->sd.lock held, seg the active segment); the run is
 * written first if its entries are full.
 */
static int
run_add(struct tlog_partition *p, struct tlog_segment *seg, struct run *run,
    const char *buf, size_t pos, size_t rlen, int64_t ts)
{
	uint64_t rel, at;
	int r;

	/* An idle active segment may have let its live part go. */
	if ((r = tlog_seg_live(seg)) != 0)
		return r;
	if (run->nidx + 2 > MAX_PENDING_IDX &&
	    (r = run_flush(p, run, buf, ts)) != 0)
		return r;
	rel = seg->records + run->nrec;
	at = seg->bytes + run->len;
	/* Each entry carries the CRC of the data since the one before
	 * (doc/format.md), computed as the records go by. */
	if (run->len == 0 && run->nrec == 0) {
		run->crc = seg->live->run_crc;
		run->crc_at = pos;
	}
	if (rel == 0 ||
	    at - (run->nidx ? run->idx[run->nidx - 1].pos :
	    seg->live->last_idx_pos) >= TLOG_IDX_INTERVAL) {
		run->idx[run->nidx++] = (struct tlog_idx_entry){
			(uint32_t)rel, (uint32_t)at, ts,
			run_crc(run, buf, pos) };
		run->crc = 0;
	}
	run->len += rlen;
	run->nrec++;
	/* A record without newline is always followed by an entry, so
	 * counting newlines from an entry stays exact. */
	if (buf[pos + rlen - 1] != '\n') {
		run->idx[run->nidx++] = (struct tlog_idx_entry){
			(uint32_t)(rel + 1), (uint32_t)(at + rlen), ts,
			run_crc(run, buf, pos + rlen) };
		run->crc = 0;
	}
	return 0;
}

/*
 * One hold of the partition lock: record by record, the roll (roll_check),
 * the ceiling (make_room, unlink_detached) and a new segment, then the
 * record (run_add). Returns the bytes taken; *flushp: it stopped past
 * MAX_UNSYNCED sealed segments, the rest to go in another call.
 */
static size_t
append_once(struct tlog_partition *p, const char *buf, size_t len,
    bool tail_is_record, int *errp, bool *flushp)
{
	/* Not zeroed: that (3 KiB) would be most of the work of a one-line
	 * append, and only the first run.nidx are ever read. */
	struct tlog_idx_entry idx[MAX_PENDING_IDX];
	struct run run = { .idx = idx };
	struct tlog_segment *seg;
	struct tlog_evbuf eb = { 0 };
	struct limits l;
	enum tlog_trigger trig;
	size_t pos = 0, rlen;
	int64_t ts;
	bool unlinked = false;
	int r = 0;

	if (p->ctx->ro) {
		*errp = -EROFS;
		return 0;
	}
	get_limits(p, &l);
	pthread_mutex_lock(&p->sd.lock);
	if (__atomic_load_n(&p->lv.dead, __ATOMIC_ACQUIRE)) {
		r = -ENOENT;
		goto out;
	}
	ts = stamp(p);
	while (pos < len) {
		rlen = record_len(buf + pos, len - pos, l.rec_max,
		    tail_is_record);
		if (rlen == 0)
			break;
		/* The cap keeps index positions in their 32 bits; the
		 * ceiling is the partition's. */
		if ((l.ret_bytes >= 0 && rlen > (uint64_t)l.ret_bytes) ||
		    rlen > TLOG_CAP_BYTES) {
			r = -EFBIG;
			break;
		}
		if ((seg = tlog_part_active(p)) != NULL &&
		    (trig = roll_check(p, seg, &run, rlen, ts, &l))) {
			if ((r = run_flush(p, &run, buf, ts)) != 0)
				break;
			tlog_part_seal_active(p, trig, &eb, ts);
			/* Each sealed segment holds its descriptors until
			 * it is synced: past MAX_UNSYNCED the caller syncs
			 * them, without this lock, before the rest. */
			if (pos > 0 && __atomic_load_n(&p->sd.nunsynced,
			    __ATOMIC_RELAXED) > MAX_UNSYNCED) {
				*flushp = true;
				break;
			}
		}
		if (l.ret_bytes >= 0 &&
		    (r = make_room(p, &run, buf, rlen, &l, ts, &eb)) != 0)
			break;
		if (l.ret_bytes >= 0 && !unlinked &&
		    __atomic_load_n(&p->pending_bytes, __ATOMIC_RELAXED) >
		    (uint64_t)l.seg_bytes) {
			if ((r = unlink_detached(p, &run, buf, ts, &l)) != 0)
				break;
			/* The lock was dropped: restamp, decide again. */
			unlinked = true;
			ts = stamp(p);
			continue;
		}
		unlinked = false;
		if ((seg = tlog_part_active(p)) == NULL) {
			if ((r = run_flush(p, &run, buf, ts)) != 0 ||
			    (r = new_segment(p, &l, ts)) != 0)
				break;
			seg = tlog_part_active(p);
		}
		if ((r = run_add(p, seg, &run, buf, pos, rlen, ts)) != 0)
			break;
		pos += rlen;
	}
	if (r == 0)
		r = run_flush(p, &run, buf, ts);
	else
		run_flush(p, &run, buf, ts);
	pos = run.start;
out:
	pthread_mutex_unlock(&p->sd.lock);
	if (pos > 0 && !p->quiet)
		TLOG_METRIC_ADD(p->ctx, appends, 1);
	tlog_part_emit(p, &eb);
	/* Sealing faster than the flusher syncs: the writer flushes them
	 * (errors kept for the next fsync) instead of holding ever more
	 * descriptors. */
	if (__atomic_load_n(&p->sd.nunsynced, __ATOMIC_RELAXED) >
	    MAX_UNSYNCED) {
		tlog_segdir_io_begin(&p->sd);
		tlog_segdir_flush(&p->sd, 0, NULL);
		tlog_segdir_io_end(&p->sd);
	}
	*errp = r;
	return pos;
}

/*
 * append_once until every record is in or one is refused: a write that
 * seals more than MAX_UNSYNCED segments (a 1 MiB write of small lines
 * into 4 KiB segments seals 256) goes in as several, each followed by
 * the sync of what it sealed, so that one write never holds more than
 * MAX_UNSYNCED sealed segments' descriptors. Another writer's records
 * may come between two of them, never inside a record.
 */
static size_t
append_all(struct tlog_partition *p, const char *buf, size_t len,
    bool tail_is_record, int *errp)
{
	size_t pos = 0;
	bool more;

	do {
		more = false;
		pos += append_once(p, buf + pos, len - pos, tail_is_record,
		    errp, &more);
	} while (more && *errp == 0 && pos < len);
	return pos;
}

/*
 * With retention.keep.free set, the bytes are first counted as under
 * way, and an append that would take free space below the floor waits
 * for the scheduler to free it (back-pressure); on a full disk the
 * scheduler frees space (oldest data store-wide) with no lock held, and
 * the records not written are tried once more; the one in flight was cut
 * whole. The events partition never reclaims: the reclaim's own events
 * go there. Last the pressure check: past ctx->free_check appended
 * bytes, the reaper is told to look at free space.
 */
size_t
tlog_part_append(struct tlog_partition *p, const char *buf, size_t len,
    bool tail_is_record, int *errp)
{
	struct limits l;
	uint64_t at, chk;
	size_t pos;
	bool counted = false;
	void *arg;

	if (!p->quiet && __atomic_load_n(&p->ctx->free_limit,
	    __ATOMIC_RELAXED) != INT64_MAX &&
	    (arg = tlog_part_sched_arg(p)) != NULL) {
		__atomic_add_fetch(&p->ctx->free_inflight, len,
		    __ATOMIC_RELAXED);
		counted = true;
		if (tlog_ctx_free_short(p->ctx))
			(void)p->env->sched->space(arg, TLOG_SPACE_WAIT);
	}
	pos = append_all(p, buf, len, tail_is_record, errp);
	if (*errp == -ENOSPC && !p->quiet &&
	    (arg = tlog_part_sched_arg(p)) != NULL &&
	    p->env->sched->space(arg, TLOG_SPACE_RECLAIM) > 0)
		pos += append_all(p, buf + pos, len - pos, tail_is_record,
		    errp);
	if (*errp != 0) {
		get_limits(p, &l);
		log_refused(p, record_len(buf + pos, len - pos, l.rec_max,
		    true), *errp, &l);
	}
	if (pos > 0) {
		at = __atomic_add_fetch(&p->ctx->free_appended, pos,
		    __ATOMIC_RELAXED);
		chk = __atomic_load_n(&p->ctx->free_check, __ATOMIC_RELAXED);
		if (chk != 0 && at >= chk &&
		    (arg = tlog_part_sched_arg(p)) != NULL &&
		    __atomic_compare_exchange_n(&p->ctx->free_check, &chk, 0,
		    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			(void)p->env->sched->space(arg, TLOG_SPACE_CHECK);
	}
	/* Taken off only after the add to free_appended above (release:
	 * a budget that sees them gone sees them there). */
	if (counted)
		__atomic_sub_fetch(&p->ctx->free_inflight, len,
		    __ATOMIC_RELEASE);
	return pos;
}
