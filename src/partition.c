/*
 * partition.c - a partition: its run of segments, the append path with
 * its roll decision and size ceiling, sealing, and detaching segments for
 * deletion (time rule, size rule, manual).
 *
 * The append path takes the partition lock once per call, reads the clock
 * once, decides the roll before each record, and writes runs of records
 * with one pwrite each. It never unlinks a file: detached segments go to
 * the store's unlink queue. Hooks (seal events) run after the lock is
 * dropped.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "tlog_int.h"

#define MAX_PENDING_IDX 128
#define MAX_UNSYNCED 8		/* sealed segments waiting for the flusher */
#define IDLE_QUIET_MS 1000	/* no append this long before an idle seal */

static void part_free(struct tlog_level *lv);

struct tlog_partition *
tlog_part_alloc(struct tlog_topic *t, const char *name)
{
	struct tlog_partition *p;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->store = t->store;
	p->ctx = &t->store->ctx;
	if (tlog_level_init(&p->lv, t->lv.tree, &t->lv, name,
	    tlog_ctx_ino(p->ctx), part_free) != 0) {
		free(p);
		return NULL;
	}
	tlog_segdir_init(&p->sd, p->ctx, &p->lv, &t->store->fdb);
	TAILQ_INIT(&p->segs);
	p->last_ts = -1;
	p->heap_idx = SIZE_MAX;
	p->due = -1;
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
		tlog_seg_close_files(seg);
		free(seg);
	}
	tlog_segdir_destroy(&p->sd);
	tlog_level_destroy(&p->lv);
	free(p);
}

uint64_t
tlog_partition_ino(const struct tlog_partition *p)
{
	return p->lv.ino;
}

struct tlog_config *
tlog_partition_config(struct tlog_partition *p)
{
	return &p->lv.conf;
}

struct tlog_topic *
tlog_partition_topic(struct tlog_partition *p)
{
	return TLOG_CONTAINER_OF(p->lv.parent, struct tlog_topic, lv);
}

void
tlog_partition_name(struct tlog_partition *p, char *buf, size_t len)
{
	tlog_level_name(&p->lv, buf, len);
}

int64_t
tlog_part_conf(struct tlog_partition *p, enum tlog_key k)
{
	return tlog_level_conf(&p->lv, k);
}

static struct tlog_segment *
active_of(struct tlog_partition *p)
{
	struct tlog_segment *seg = TAILQ_LAST(&p->segs, tlog_seglist);

	return (seg != NULL && !seg->sealed) ? seg : NULL;
}

/* ---- events: collected under the lock, emitted after ---- */

struct evbuf {
	struct tlog_event *ev;
	size_t n, cap;
};

static void
evbuf_add_seal(struct evbuf *b, struct tlog_segment *seg,
    enum tlog_trigger why, int64_t now)
{
	struct tlog_event *e;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4;
		void *nv = reallocarray(b->ev, cap, sizeof(*b->ev));
		if (nv == NULL)
			return;		/* the event is lost, not the data */
		b->ev = nv;
		b->cap = cap;
	}
	e = &b->ev[b->n++];
	memset(e, 0, sizeof(*e));
	e->kind = TLOG_EV_SEAL;
	e->ts = now;
	e->segment_ino = seg->ino;
	e->base = seg->base;
	e->records = seg->records;
	e->bytes = seg->bytes;
	e->first_ts = seg->first_ts;
	e->max_ts = seg->max_ts;
	e->trigger = why;
}

static void
evbuf_emit(struct tlog_partition *p, struct evbuf *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		tlog_emit_event(p, &b->ev[i]);
	free(b->ev);
	b->ev = NULL;
	b->n = b->cap = 0;
}

/* Fills in the names and calls the store's event hook; no lock held. */
void
tlog_emit_event(struct tlog_partition *p, struct tlog_event *ev)
{
	char topic[TLOG_NAME_MAX + 1], part[TLOG_NAME_MAX + 1];
	struct tlog_store *s = p->store;

	if (ev->kind == TLOG_EV_SEAL)
		TLOG_METRIC_ADD(&s->ctx, rolls[ev->trigger], 1);
	if (s->ctx.opts.event == NULL && (s->events == NULL || p == s->events))
		return;
	pthread_rwlock_rdlock(&p->lv.tree->lock);
	strlcpy(topic, p->lv.parent->name, sizeof(topic));
	strlcpy(part, p->lv.name, sizeof(part));
	pthread_rwlock_unlock(&p->lv.tree->lock);
	ev->topic = topic;
	ev->partition = part;
	ev->partition_ino = p->lv.ino;
	tlog_events_record(s, p, ev);
	if (s->ctx.opts.event != NULL)
		s->ctx.opts.event(s->ctx.opts.event_arg, ev);
}

/* ---- sealing and detaching (partition lock held) ---- */

static int
seal_active(struct tlog_partition *p, enum tlog_trigger why,
    struct evbuf *eb, int64_t now)
{
	struct tlog_segment *seg = active_of(p);
	int r;

	if (seg == NULL || seg->records == 0)
		return 0;
	r = tlog_seg_seal(seg, why);
	tlog_part_queue_flush(p);
	if (eb != NULL)
		evbuf_add_seal(eb, seg, why, now);
	return r;
}

void
tlog_part_detach(struct tlog_partition *p, struct tlog_segment *seg,
    enum tlog_rule rule)
{
	struct tlog_store *s = p->store;

	/* Its data is going: no footer to wait for. */
	if (seg->foot_pending) {
		TAILQ_REMOVE(&p->sd.unsynced, seg, synclink);
		__atomic_sub_fetch(&p->sd.nunsynced, 1, __ATOMIC_RELAXED);
		seg->foot_pending = 0;
		tlog_segment_put(seg);
	}
	TAILQ_REMOVE(&p->segs, seg, link);
	__atomic_sub_fetch(&p->nsegs, 1, __ATOMIC_RELEASE);
	p->bytes -= seg->bytes;
	seg->dead = 1;
	seg->rule = rule;
	tlog_seg_close_files(seg);
	/* The partition's reference moves to the queue. */
	pthread_mutex_lock(&s->unlink_lock);
	p->pending_unlinks++;
	__atomic_add_fetch(&p->pending_bytes, seg->bytes, __ATOMIC_RELAXED);
	TAILQ_INSERT_TAIL(&s->unlinkq, seg, link);
	s->nunlink++;
	pthread_cond_broadcast(&s->unlink_cond);
	pthread_mutex_unlock(&s->unlink_lock);
}

/* ---- the append path ---- */

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
	int64_t sb = tlog_part_conf(p, TLOG_SEGMENT_BYTES);

	l->seg_bytes = sb;
	l->seg_ms = tlog_part_conf(p, TLOG_SEGMENT_MS);
	l->jitter = tlog_part_conf(p, TLOG_SEGMENT_JITTER_MS);
	if (l->jitter > l->seg_ms)
		l->jitter = l->seg_ms;
	l->ret_bytes = tlog_part_conf(p, TLOG_RETENTION_BYTES);
	if (l->ret_bytes >= 0 && l->ret_bytes / 8 < l->seg_bytes)
		l->seg_bytes = l->ret_bytes / 8 > 0 ? l->ret_bytes / 8 : 1;
	/* Independent of segment.bytes: a longer record gets a segment of
	 * its own (roll_check), it is never cut at a segment's size. */
	l->rec_max = tlog_part_conf(p, TLOG_RECORD_MAX_BYTES);
	l->prealloc = tlog_part_conf(p, TLOG_SEGMENT_PREALLOCATE) == 1;
}

/* The span after which a segment seals on time: segment.ms less its
 * jitter, never below 1 ms. */
static int64_t
seg_span(const struct tlog_segment *seg, int64_t seg_ms)
{
	int64_t j = seg->jitter < seg_ms ? seg->jitter : seg_ms;

	return seg_ms - j > 0 ? seg_ms - j : 1;
}

/* Records appended in memory but not yet written with one pwrite. */
struct run {
	size_t start;		/* offset in the caller's buffer */
	size_t len;
	uint64_t nrec;
	struct tlog_idx_entry idx[MAX_PENDING_IDX];
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

static uint64_t
run_records(const struct tlog_segment *seg, const struct run *r)
{
	return seg->records + r->nrec;
}

static enum tlog_trigger
roll_check(struct tlog_partition *p, const struct tlog_segment *seg,
    const struct run *run, size_t rlen, int64_t ts, const struct limits *l)
{
	uint64_t recs = run_records(seg, run);
	uint64_t bytes = seg->bytes + run->len;
	int64_t first = seg->records ? seg->first_ts : ts;
	struct tlog_store *s = p->store;

	if (recs == 0)
		return TLOG_TRIG_NONE;
	if (bytes + rlen > (uint64_t)l->seg_bytes)
		return TLOG_TRIG_SIZE;
	if (ts - first >= seg_span(seg, l->seg_ms))
		return TLOG_TRIG_TIME;
	if (recs + 1 > s->ctx.cap_records || bytes + rlen > s->ctx.cap_bytes)
		return TLOG_TRIG_CAPACITY;
	return TLOG_TRIG_NONE;
}

static int
pwrite_all(int fd, const char *buf, size_t len, off_t off)
{
	ssize_t n;

	while (len > 0) {
		n = pwrite(fd, buf, len, off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOSPC;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Writes the run: data first, then its index entries, then commits. */
static int
run_flush(struct tlog_partition *p, struct run *run, const char *buf,
    int64_t ts)
{
	struct tlog_segment *seg = active_of(p);
	int r;

	if (run->len == 0 && run->nrec == 0)
		return 0;
	if ((r = tlog_seg_open_files(seg, false)) != 0)
		goto fail;
	seg->wgen++;
	r = pwrite_all(seg->fd, buf + run->start, run->len,
	    (off_t)seg->bytes);
	if (r != 0) {
		/* No partial record may stay. */
		if (ftruncate(seg->fd, (off_t)seg->bytes) == -1)
			tlog_ctx_log_err(p->ctx, "cannot cut a failed append: %s",
			    strerror(errno));
		goto fail;
	}
	/* No record without its index entries: a record without newline is
	 * found again only through the entry after it. */
	if (run->nidx &&
	    (r = tlog_seg_write_entries(seg, run->idx, run->nidx)) != 0) {
		if (ftruncate(seg->fd, (off_t)seg->bytes) == -1)
			tlog_ctx_log_err(p->ctx, "cannot cut a failed append: %s",
			    strerror(errno));
		goto fail;
	}
	if (seg->records == 0)
		seg->first_ts = ts;
	seg->run_crc = run_crc(run, buf, run->start + run->len);
	seg->records += run->nrec;
	__atomic_store_n(&seg->bytes, seg->bytes + run->len, __ATOMIC_RELEASE);
	seg->max_ts = ts;
	p->bytes += run->len;
	p->next_offset += run->nrec;
	p->last_ts = ts;
	if (p != p->store->events) {	/* users' data only */
		TLOG_METRIC_ADD(p->ctx, records, run->nrec);
		TLOG_METRIC_ADD(p->ctx, bytes, run->len);
	}
	run->start += run->len;
	r = 0;
fail:
	/* On failure start stays put: it counts committed bytes only. */
	run->len = 0;
	run->nrec = 0;
	run->nidx = 0;
	return r;
}

static void
draw_jitter(struct tlog_segment *seg, const struct limits *l)
{
	uint64_t j;

	if (l->jitter <= 0)
		return;
	j = ((uint64_t)arc4random() << 32) | arc4random();
	seg->jitter = (int64_t)(j % ((uint64_t)l->jitter + 1));
}

/*
 * A new segment can bring the partition's due time forward: its idle seal,
 * and, for a partition that had nothing, its time rule.
 */
static void
sched_new_segment(struct tlog_partition *p, struct tlog_segment *seg,
    const struct limits *l, int64_t ts, bool was_empty)
{
	int64_t due = ts + seg_span(seg, l->seg_ms);
	int64_t rms = tlog_part_conf(p, TLOG_RETENTION_MS);

	if (was_empty && rms >= 0 && ts + rms + 1 < due)
		due = ts + rms + 1;
	tlog_sched_earlier(p, due);
}

static int
new_segment(struct tlog_partition *p, const struct limits *l, int64_t ts)
{
	bool was_empty = TAILQ_EMPTY(&p->segs);
	struct tlog_segment *seg;
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
	draw_jitter(seg, l);
	if (l->prealloc) {
		if (fallocate(seg->fd, FALLOC_FL_KEEP_SIZE, 0,
		    (off_t)l->seg_bytes) == 0)
			seg->prealloc = (uint64_t)l->seg_bytes;
		else
			tlog_ctx_log_err(p->ctx, "cannot preallocate %" PRId64
			    " bytes: %s", l->seg_bytes, strerror(errno));
	}
	TAILQ_INSERT_TAIL(&p->segs, seg, link);
	__atomic_add_fetch(&p->nsegs, 1, __ATOMIC_RELEASE);
	sched_new_segment(p, seg, l, ts, was_empty);
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
	struct tlog_segment *seg = active_of(p);
	uint64_t end;

	if (seg != NULL) {
		end = seg->bytes + run->len + rlen;
		return seg->prealloc > end ? seg->prealloc - end : 0;
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
    size_t rlen, const struct limits *l, int64_t ts, struct evbuf *eb)
{
	struct tlog_segment *old;
	int r;

	while (p->bytes + run->len + rlen + reserve_after(p, run, rlen, l) >
	    (uint64_t)l->ret_bytes) {
		if ((r = run_flush(p, run, buf, ts)) != 0)
			return r;
		old = TAILQ_FIRST(&p->segs);
		if (old == NULL)
			break;
		if (!old->sealed) {
			if (old->records == 0 && old->prealloc == 0)
				break;
			if (old->records == 0) {
				/* Nothing to delete: give the space back. */
				old->prealloc = 0;
				old->trim_pending = 1;
				tlog_seg_trim(old);
				continue;
			}
			seal_active(p, TLOG_TRIG_RETENTION, eb, ts);
		}
		tlog_part_detach(p, old, TLOG_RULE_SIZE);
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
	pthread_rwlock_rdlock(&p->lv.tree->lock);
	if (tlog_level_path(&p->lv, where, sizeof(where)) != 0)
		strlcpy(where, "?", sizeof(where));
	pthread_rwlock_unlock(&p->lv.tree->lock);
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
	tlog_store_unlink_part(p->store, p, (uint64_t)l->seg_bytes);
	pthread_mutex_lock(&p->sd.lock);
	return __atomic_load_n(&p->lv.dead, __ATOMIC_ACQUIRE) ? -ENOENT : 0;
}

size_t
tlog_part_append(struct tlog_partition *p, const char *buf, size_t len,
    bool tail_is_record, int *errp)
{
	struct tlog_segment *seg;
	struct evbuf eb = { 0 };
	struct limits l;
	struct run run;
	enum tlog_trigger trig;
	uint64_t rel, at;
	size_t pos = 0, rlen;
	int64_t ts;
	bool unlinked = false;
	int r = 0;

	if (p->ctx->ro) {
		*errp = -EROFS;
		return 0;
	}
	memset(&run, 0, sizeof(run));
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
		    rlen > p->ctx->cap_bytes) {
			r = -EFBIG;
			break;
		}
		if ((seg = active_of(p)) != NULL &&
		    (trig = roll_check(p, seg, &run, rlen, ts, &l))) {
			if ((r = run_flush(p, &run, buf, ts)) != 0)
				break;
			seal_active(p, trig, &eb, ts);
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
		if ((seg = active_of(p)) == NULL) {
			if ((r = run_flush(p, &run, buf, ts)) != 0 ||
			    (r = new_segment(p, &l, ts)) != 0)
				break;
			seg = active_of(p);
		}
		if (run.nidx + 2 > MAX_PENDING_IDX &&
		    (r = run_flush(p, &run, buf, ts)) != 0)
			break;
		rel = run_records(seg, &run);
		at = seg->bytes + run.len;
		/* Each entry carries the CRC of the data since the one
		 * before (doc/format.md), computed as the records go by. */
		if (run.len == 0 && run.nrec == 0) {
			run.crc = seg->run_crc;
			run.crc_at = pos;
		}
		if (rel == 0 ||
		    at - (run.nidx ? run.idx[run.nidx - 1].pos :
		    seg->last_idx_pos) >= TLOG_IDX_INTERVAL) {
			run.idx[run.nidx++] = (struct tlog_idx_entry){
				(uint32_t)rel, (uint32_t)at, ts,
				run_crc(&run, buf, pos) };
			run.crc = 0;
		}
		run.len += rlen;
		run.nrec++;
		/* A record without newline is always followed by an entry,
		 * so counting newlines from an entry stays exact. */
		if (buf[pos + rlen - 1] != '\n') {
			run.idx[run.nidx++] = (struct tlog_idx_entry){
				(uint32_t)(rel + 1), (uint32_t)(at + rlen), ts,
				run_crc(&run, buf, pos + rlen) };
			run.crc = 0;
		}
		pos += rlen;
	}
	if (r == 0)
		r = run_flush(p, &run, buf, ts);
	else
		run_flush(p, &run, buf, ts);
	pos = run.start;
out:
	pthread_mutex_unlock(&p->sd.lock);
	if (pos > 0 && p != p->store->events)
		TLOG_METRIC_ADD(p->ctx, appends, 1);
	evbuf_emit(p, &eb);
	if (r != 0)
		log_refused(p, record_len(buf + pos, len - pos, l.rec_max,
		    true), r, &l);
	/* Sealing faster than the flusher syncs: the writer waits for the
	 * disk instead of holding ever more descriptors. */
	if (__atomic_load_n(&p->sd.nunsynced, __ATOMIC_RELAXED) > MAX_UNSYNCED)
		tlog_part_flush(p, true);
	*errp = r;
	return pos;
}

/* ---- durability: the flusher and fsync ---- */

void
tlog_part_queue_flush(struct tlog_partition *p)
{
	struct tlog_store *s = p->store;

	pthread_mutex_lock(&s->unlink_lock);
	if (!p->flush_queued) {
		tlog_part_ref(p);
		p->flush_queued = true;
		TAILQ_INSERT_TAIL(&s->flushq, p, flushlink);
		s->nflush++;
		pthread_cond_broadcast(&s->unlink_cond);
	}
	pthread_mutex_unlock(&s->unlink_lock);
}

/* The append path's back-pressure: flushes all of p's sealed segments. */
void
tlog_part_flush(struct tlog_partition *p, bool keep_err)
{
	int err = 0;

	pthread_mutex_lock(&p->sd.sync_lock);
	tlog_segdir_flush(&p->sd, 0, keep_err, &err);
	pthread_mutex_unlock(&p->sd.sync_lock);
}

int
tlog_store_flush_pending(struct tlog_store *s, int max)
{
	struct tlog_partition *p;
	int done = 0, err;
	bool more;

	while (max <= 0 || done < max) {
		pthread_mutex_lock(&s->unlink_lock);
		if ((p = TAILQ_FIRST(&s->flushq)) != NULL) {
			TAILQ_REMOVE(&s->flushq, p, flushlink);
			p->flush_queued = false;
			s->nflush--;
		}
		pthread_mutex_unlock(&s->unlink_lock);
		if (p == NULL)
			break;
		err = 0;
		pthread_mutex_lock(&p->sd.sync_lock);
		done += tlog_segdir_flush(&p->sd, max > 0 ? max - done : 0, true, &err);
		pthread_mutex_unlock(&p->sd.sync_lock);
		pthread_mutex_lock(&p->sd.lock);
		more = !TAILQ_EMPTY(&p->sd.unsynced);
		pthread_mutex_unlock(&p->sd.lock);
		if (more)
			tlog_part_queue_flush(p);
		tlog_partition_put(p);
	}
	return done;
}

/*
 * Returns once every record appended before the call is durable: the
 * sealed segments not yet flushed (each as the flusher does it), then the
 * active segment (a boundary entry for all of its data, then data and
 * index synced), then the directory if a segment file was created since
 * it was last synced. An error kept from the flusher or an eviction is
 * returned here, once.
 */
int
tlog_part_fsync(struct tlog_partition *p, bool datasync)
{
	struct tlog_segment *seg;
	struct tlog_seg_io io;
	bool have_io = false, dir;
	int r = 0, r2, dfd;

	/* Nothing was written: everything is as durable as it gets (and
	 * the boundary entry an fsync writes would change the store). */
	if (p->ctx->ro)
		return 0;
	pthread_mutex_lock(&p->sd.sync_lock);
	tlog_segdir_flush(&p->sd, 0, false, &r);
	pthread_mutex_lock(&p->sd.lock);
	seg = active_of(p);
	if (seg != NULL && seg->records > 0) {
		bool bound = !(seg->nidx > 0 &&
		    seg->last_idx_rel == seg->records &&
		    seg->last_idx_pos == seg->bytes);

		if ((bound || seg->wgen != seg->sgen) &&
		    (r2 = tlog_seg_open_files(seg, false)) != 0) {
			if (r == 0)
				r = r2;
		} else if (bound || seg->wgen != seg->sgen) {
			if (bound && (r2 = tlog_seg_write_boundary(seg)) != 0 &&
			    r == 0)
				r = r2;
			tlog_seg_io_take(seg, &io, false, false);
			have_io = true;
		}
	}
	dir = p->sd.dir_dirty;
	p->sd.dir_dirty = false;
	pthread_mutex_unlock(&p->sd.lock);
	if (have_io) {
		r2 = tlog_seg_io_run(&io, datasync);
		tlog_seg_io_finish(&io, r2, false);
		if (r == 0)
			r = r2;
	}
	/* New segment files need their directory entries durable too. */
	if (dir) {
		if ((dfd = tlog_level_dir(&p->lv)) < 0)
			r2 = dfd;
		else {
			r2 = fsync(dfd) == -1 && errno != EINVAL ? -errno : 0;
			close(dfd);
		}
		if (r2 != 0) {
			pthread_mutex_lock(&p->sd.lock);
			p->sd.dir_dirty = true;
			pthread_mutex_unlock(&p->sd.lock);
			if (r == 0)
				r = r2;
		}
	}
	pthread_mutex_lock(&p->sd.lock);
	if (r == 0)
		r = p->sd.sync_err;
	p->sd.sync_err = 0;
	pthread_mutex_unlock(&p->sd.lock);
	pthread_mutex_unlock(&p->sd.sync_lock);
	return r;
}

int
tlog_partition_fsync(struct tlog_partition *p, bool datasync)
{
	return tlog_part_fsync(p, datasync);
}

/* ---- sealing and deletion entry points ---- */

int
tlog_partition_seal(struct tlog_partition *p, enum tlog_trigger why)
{
	struct evbuf eb = { 0 };

	if (p->ctx->ro)
		return -EROFS;
	pthread_mutex_lock(&p->sd.lock);
	seal_active(p, why, &eb, tlog_ctx_now(p->ctx));
	pthread_mutex_unlock(&p->sd.lock);
	evbuf_emit(p, &eb);
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
	int64_t a = seg->first_ts + seg_span(seg, ms);
	int64_t b = seg->max_ts + quiet;

	return a > b ? a : b;
}

static int64_t
idle_due_of(struct tlog_partition *p)
{
	struct tlog_segment *seg = active_of(p);

	return seg != NULL && seg->records > 0 ? idle_due_locked(p, seg) : -1;
}

int64_t
tlog_partition_idle_due(struct tlog_partition *p)
{
	int64_t due;

	pthread_mutex_lock(&p->sd.lock);
	due = idle_due_of(p);
	pthread_mutex_unlock(&p->sd.lock);
	return due;
}

int
tlog_partition_seal_idle(struct tlog_partition *p)
{
	struct tlog_segment *seg;
	struct evbuf eb = { 0 };
	int64_t now = tlog_ctx_now(p->ctx);
	int sealed = 0;

	if (p->ctx->ro)
		return -EROFS;
	pthread_mutex_lock(&p->sd.lock);
	seg = active_of(p);
	if (seg != NULL && seg->records > 0 && now >= idle_due_locked(p, seg)) {
		seal_active(p, TLOG_TRIG_IDLE, &eb, now);
		sealed = 1;
	}
	pthread_mutex_unlock(&p->sd.lock);
	evbuf_emit(p, &eb);
	return sealed;
}

/*
 * Offsets are never handed out twice, however the daemon stops: at open
 * the end offset is the largest of the segments' ends and .next. So
 * before the files of a segment ending at `need` are unlinked, the disk
 * must keep a witness of an offset at least that: a segment based at or
 * above it whose directory entry is durable (the directory is synced if
 * a file was made since it last was), or else .next, written with the
 * partition's end offset. Retention, which deletes the oldest segments,
 * thus costs at most a directory sync, and .next is written only when
 * the newest segments go (rm current, an emptied partition); never on
 * a full disk for the oldest. Runs with no lock but p->sd.sync_lock held,
 * which also serializes concurrent unlinkers.
 */
int
tlog_part_save_end(struct tlog_partition *p, uint64_t need)
{
	struct tlog_segment *last;
	char buf[32];
	uint64_t end;
	bool witness, dir;
	int n, dfd, r = 0;

	pthread_mutex_lock(&p->sd.sync_lock);
	if (p->saved_end >= need)
		goto out;
	pthread_mutex_lock(&p->sd.lock);
	end = p->next_offset;
	last = TAILQ_LAST(&p->segs, tlog_seglist);
	witness = last != NULL && last->base >= need;
	dir = p->sd.dir_dirty;
	if (witness)
		p->sd.dir_dirty = false;
	pthread_mutex_unlock(&p->sd.lock);
	if (end < need)
		end = need;
	if ((dfd = tlog_level_dir(&p->lv)) < 0) {
		/* A partition removed with its directory: nothing to keep. */
		r = dfd == -ENOENT ? 0 : dfd;
		goto out;
	}
	if (witness) {
		if (dir && fsync(dfd) == -1 && errno != EINVAL) {
			r = -errno;
			pthread_mutex_lock(&p->sd.lock);
			p->sd.dir_dirty = true;
			pthread_mutex_unlock(&p->sd.lock);
		}
	} else {
		n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", end);
		if ((r = tlog_write_atomic(dfd, ".next", buf, (size_t)n)) == 0)
			p->saved_end = end;
	}
	if (r != 0)
		tlog_ctx_log_err(p->ctx, "cannot save the end offset of a "
		    "partition before deleting a segment: %s", strerror(-r));
	close(dfd);
out:
	pthread_mutex_unlock(&p->sd.sync_lock);
	return r;
}

int
tlog_partition_delete(struct tlog_partition *p, uint64_t base)
{
	struct tlog_segment *seg;
	struct evbuf eb = { 0 };
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
			seal_active(p, TLOG_TRIG_MANUAL, &eb,
			    tlog_ctx_now(p->ctx));
		tlog_part_detach(p, seg, TLOG_RULE_MANUAL);
		r = 0;
	}
	pthread_mutex_unlock(&p->sd.lock);
	evbuf_emit(p, &eb);
	return r;
}

static int64_t
expire_due_of(struct tlog_partition *p)
{
	struct tlog_segment *seg = TAILQ_FIRST(&p->segs);
	int64_t rms = tlog_part_conf(p, TLOG_RETENTION_MS);

	return rms >= 0 && seg != NULL && seg->records > 0 ?
	    seg->max_ts + rms + 1 : -1;
}

int64_t
tlog_partition_expire_due(struct tlog_partition *p)
{
	int64_t due;

	pthread_mutex_lock(&p->sd.lock);
	due = expire_due_of(p);
	pthread_mutex_unlock(&p->sd.lock);
	return due;
}

/*
 * Whether p holds more than rb: its bytes plus what is left of the active
 * segment's preallocation, which the ceiling counts (doc/engine.md).
 */
static bool
over_ceiling(struct tlog_partition *p, int64_t rb)
{
	struct tlog_segment *seg = active_of(p);
	uint64_t held = p->bytes;

	if (seg != NULL && seg->prealloc > seg->bytes)
		held += seg->prealloc - seg->bytes;
	return rb >= 0 && held > (uint64_t)rb;
}

int64_t
tlog_part_due_locked(struct tlog_partition *p)
{
	int64_t idle = idle_due_of(p), exp = expire_due_of(p);

	/* Over its ceiling (lowered since the last append): due at once. */
	if (over_ceiling(p, tlog_part_conf(p, TLOG_RETENTION_BYTES)))
		return 0;
	if (idle < 0)
		return exp;
	if (exp < 0)
		return idle;
	return idle < exp ? idle : exp;
}

/*
 * The size rule off the append path, for a partition over a ceiling that
 * was lowered (or found over it at open): the reaper's bounded step. As
 * in make_room, oldest first, the active segment last (sealed first), an
 * empty one's reservation given back.
 */
int
tlog_partition_enforce_size(struct tlog_partition *p, int max,
    uint64_t *bytes)
{
	struct tlog_segment *old;
	struct evbuf eb = { 0 };
	int64_t rb = tlog_part_conf(p, TLOG_RETENTION_BYTES);
	int64_t now = tlog_ctx_now(p->ctx);
	int n = 0;

	if (p->ctx->ro)
		return -EROFS;
	if (rb < 0)
		return 0;
	pthread_mutex_lock(&p->sd.lock);
	while (n < max && over_ceiling(p, rb) &&
	    (old = TAILQ_FIRST(&p->segs)) != NULL) {
		if (!old->sealed) {
			if (old->records == 0 && old->prealloc == 0)
				break;
			if (old->records == 0) {
				old->prealloc = 0;
				old->trim_pending = 1;
				tlog_seg_trim(old);
				continue;
			}
			seal_active(p, TLOG_TRIG_RETENTION, &eb, now);
		}
		if (bytes != NULL)
			*bytes += old->bytes;
		tlog_part_detach(p, old, TLOG_RULE_SIZE);
		n++;
	}
	pthread_mutex_unlock(&p->sd.lock);
	evbuf_emit(p, &eb);
	return n;
}

int
tlog_partition_expire(struct tlog_partition *p, int max, uint64_t *bytes)
{
	struct tlog_segment *seg;
	struct evbuf eb = { 0 };
	int64_t rms = tlog_part_conf(p, TLOG_RETENTION_MS);
	int64_t now = tlog_ctx_now(p->ctx);
	int n = 0;

	if (p->ctx->ro)
		return -EROFS;
	if (rms < 0)
		return 0;
	pthread_mutex_lock(&p->sd.lock);
	while (n < max && (seg = TAILQ_FIRST(&p->segs)) != NULL) {
		if (seg->records == 0 || now - seg->max_ts <= rms)
			break;
		if (!seg->sealed)
			seal_active(p, TLOG_TRIG_RETENTION, &eb, now);
		if (bytes != NULL)
			*bytes += seg->bytes;
		tlog_part_detach(p, seg, TLOG_RULE_TIME);
		n++;
	}
	pthread_mutex_unlock(&p->sd.lock);
	evbuf_emit(p, &eb);
	return n;
}

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
	st->segments = p->nsegs;
	st->oldest_ts = first && first->records ? first->first_ts : -1;
	st->newest_ts = last && last->records ? last->max_ts : -1;
	st->next_expiry = (rms < 0 || !first || !first->records) ? -1 :
	    first->max_ts + rms + 1;
	pthread_mutex_unlock(&p->sd.lock);
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
		a[i].ino = seg->ino;
		a[i].base = seg->base;
		a[i].records = seg->records;
		a[i].bytes = seg->bytes;
		a[i].alloc = seg->prealloc > seg->bytes ? seg->prealloc :
		    seg->bytes;
		a[i].first_ts = seg->records ? seg->first_ts : -1;
		a[i].max_ts = seg->records ? seg->max_ts : -1;
		a[i].sealed = seg->sealed;
		a[i].sealed_by = seg->sealed_by;
		a[i].expires_at = (rms < 0 || !seg->records) ? -1 :
		    seg->max_ts + rms + 1;
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
	info->ino = seg->ino;
	info->base = seg->base;
	info->records = seg->records;
	info->bytes = seg->bytes;
	info->alloc = seg->prealloc > seg->bytes ? seg->prealloc : seg->bytes;
	info->first_ts = seg->first_ts;
	info->max_ts = seg->max_ts;
	info->sealed = seg->sealed;
	info->sealed_by = seg->sealed_by;
	pthread_mutex_unlock(&p->sd.lock);
	rms = tlog_part_conf(p, TLOG_RETENTION_MS);
	info->expires_at = (rms < 0 || info->max_ts < 0) ? -1 :
	    info->max_ts + rms + 1;
}

static struct tlog_segment *
seg_find(struct tlog_partition *p, bool (*match)(struct tlog_segment *,
    uint64_t), uint64_t key)
{
	struct tlog_segment *seg;

	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link)
		if (match(seg, key))
			break;
	if (seg != NULL)
		tlog_seg_ref(seg);
	pthread_mutex_unlock(&p->sd.lock);
	return seg;
}

static bool
match_base(struct tlog_segment *seg, uint64_t key)
{
	return seg->base == key;
}

static bool
match_active(struct tlog_segment *seg, uint64_t key)
{
	(void)key;
	return !seg->sealed;
}

struct tlog_segment *
tlog_segment_get(struct tlog_partition *p, uint64_t base)
{
	return seg_find(p, match_base, base);
}

struct tlog_segment *
tlog_segment_get_active(struct tlog_partition *p)
{
	return seg_find(p, match_active, 0);
}

/* ---- where a reader starts ---- */

#define SEEK_TRIES 8	/* segments that may vanish under one look-up */

/*
 * Picks, under the lock, the first segment holding a record the reader
 * wants (offset below its end, or newest timestamp >= t) and returns it
 * referenced; with none, fills the end position and returns NULL. The
 * look-up inside the segment runs after the lock is dropped: it reads
 * the index file, and segment.c takes the lock for the counters itself.
 */
static struct tlog_segment *
seek_pick(struct tlog_partition *p, bool by_time, uint64_t offset, int64_t t,
    struct tlog_pos *end, int *err)
{
	struct tlog_segment *seg, *act;

	*err = 0;
	pthread_mutex_lock(&p->sd.lock);
	if (!by_time && offset > p->next_offset) {
		pthread_mutex_unlock(&p->sd.lock);
		*err = -ENODATA;
		return NULL;
	}
	TAILQ_FOREACH(seg, &p->segs, link) {
		if (seg->records == 0)
			continue;
		if (by_time ? seg->max_ts >= t :
		    seg->base + seg->records > offset)
			break;
	}
	if (seg != NULL)
		tlog_seg_ref(seg);
	else {
		act = active_of(p);
		end->offset = p->next_offset;
		end->base = act != NULL ? act->base : p->next_offset;
		end->pos = act != NULL ? act->bytes : 0;
	}
	pthread_mutex_unlock(&p->sd.lock);
	return seg;
}

int
tlog_partition_seek(struct tlog_partition *p, uint64_t offset,
    struct tlog_pos *out)
{
	struct tlog_segment *seg;
	uint64_t pos = 0;
	int r = 0, tries;

	for (tries = 0; tries < SEEK_TRIES; tries++) {
		if ((seg = seek_pick(p, false, offset, 0, out, &r)) == NULL)
			return r;
		if (seg->base >= offset) {
			/* The record itself, or the first one after a gap. */
			out->offset = out->base = seg->base;
			out->pos = 0;
			tlog_segment_put(seg);
			return 0;
		}
		r = tlog_segment_find_offset(seg, offset, &pos);
		out->offset = offset;
		out->base = seg->base;
		out->pos = pos;
		tlog_segment_put(seg);
		/* -ENOENT: its files were unlinked meanwhile; the next pick
		 * no longer sees it. */
		if (r != -ENOENT)
			return r;
	}
	return r;
}

int
tlog_partition_seek_time(struct tlog_partition *p, int64_t t,
    struct tlog_pos *out)
{
	struct tlog_segment *seg;
	uint64_t off = 0, pos = 0;
	int r = 0, tries;

	for (tries = 0; tries < SEEK_TRIES; tries++) {
		if ((seg = seek_pick(p, true, 0, t, out, &r)) == NULL)
			return r;
		r = tlog_segment_find_time(seg, t, &off, &pos);
		out->offset = off;
		out->base = seg->base;
		out->pos = pos;
		tlog_segment_put(seg);
		if (r != -ENOENT)
			return r;
	}
	return r;
}
