/*
 * segment.c - one segment: a data file holding records exactly as written
 * and its sparse index (see index.c). Opening, index appends, sealing with
 * a footer, trimming preallocated space, and reads and look-ups.
 *
 * A segment's counters (records, bytes, timestamps) change only under its
 * partition's lock; bytes is also read atomically by readers, which never
 * see past the last whole record.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "segment.h"

/* ---- what a partition's segments share ---- */

void
tlog_segdir_init(struct tlog_segdir *sd, struct tlog_ctx *ctx,
    struct tlog_level *lv, struct tlog_fdbudget *fdb)
{
	memset(sd, 0, sizeof(*sd));
	sd->ctx = ctx;
	sd->lv = lv;
	sd->fdb = fdb;
	pthread_mutex_init(&sd->lock, NULL);
	pthread_mutex_init(&sd->sync_lock, NULL);
	TAILQ_INIT(&sd->unsynced);
}

void
tlog_segdir_destroy(struct tlog_segdir *sd)
{
	pthread_mutex_destroy(&sd->lock);
	pthread_mutex_destroy(&sd->sync_lock);
}

/*
 * Writes the footers of up to max (0: all) of sd's sealed segments, oldest
 * first, each after its data and entries are synced; sd->sync_lock held.
 * Returns how many; the first error goes to *errp, and to the partition
 * for its next fsync if keep_err.
 */
int
tlog_segdir_flush(struct tlog_segdir *sd, int max, bool keep_err, int *errp)
{
	struct tlog_segment *seg;
	struct tlog_seg_io io;
	int n = 0, r;

	while (max <= 0 || n < max) {
		pthread_mutex_lock(&sd->lock);
		if ((seg = TAILQ_FIRST(&sd->unsynced)) != NULL)
			tlog_seg_io_take(seg, &io, true, false);
		pthread_mutex_unlock(&sd->lock);
		if (seg == NULL)
			break;
		r = tlog_seg_io_run(&io, true);
		tlog_seg_io_finish(&io, r, keep_err);
		if (r != 0 && *errp == 0)
			*errp = r;
		n++;
	}
	return n;
}

void
tlog_segdir_drop_unsynced(struct tlog_segdir *sd)
{
	struct tlog_segment *seg;

	while ((seg = TAILQ_FIRST(&sd->unsynced)) != NULL) {
		TAILQ_REMOVE(&sd->unsynced, seg, live->synclink);
		__atomic_sub_fetch(&sd->nunsynced, 1, __ATOMIC_RELAXED);
		seg->live->foot_pending = 0;
		tlog_segment_put(seg);
	}
}

/* ---- the open-file budget ---- */

void
tlog_fdbudget_init(struct tlog_fdbudget *b, size_t max)
{
	struct rlimit rl;

	pthread_mutex_init(&b->lock, NULL);
	TAILQ_INIT(&b->segs);
	b->n = 0;
	b->max = max;
	if (b->max == 0) {
		b->max = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY ? (size_t)rl.rlim_cur / 4 :
		    4096;
		if (b->max < 16)
			b->max = 16;
	}
}

void
tlog_fdbudget_destroy(struct tlog_fdbudget *b)
{
	pthread_mutex_destroy(&b->lock);
}

/* ---- one segment ---- */

static void close_files(struct tlog_segment *, bool);

struct tlog_segment *
tlog_seg_new(struct tlog_segdir *sd, uint64_t base)
{
	struct tlog_segment *seg;

	seg = calloc(1, sizeof(*seg));
	if (seg == NULL)
		return NULL;
	seg->refs = 1;
	seg->ino = tlog_ctx_ino(sd->ctx);
	seg->base = base;
	seg->first_ts = -1;
	seg->max_ts = -1;
	seg->sd = sd;
	if (tlog_seg_live(seg) != 0) {
		free(seg);
		return NULL;
	}
	tlog_level_ref(sd->lv);
	return seg;
}

int
tlog_seg_live(struct tlog_segment *seg)
{
	struct tlog_seg_live *x;

	if (seg->live != NULL)
		return 0;
	if ((x = calloc(1, sizeof(*x))) == NULL)
		return -ENOMEM;
	x->fd = -1;
	x->ifd = -1;
	/* Made again for a segment that had one: only at its boundary
	 * entry did it let it go (tlog_seg_idle). */
	if (seg->nidx > 0) {
		x->last_idx_rel = seg->records;
		x->last_idx_pos = (uint32_t)seg->bytes;
	}
	seg->live = x;
	return 0;
}

void
tlog_seg_drop_live(struct tlog_segment *seg)
{
	if (seg->live == NULL)
		return;
	close_files(seg, false);
	free(seg->live->mem_idx);
	free(seg->live);
	seg->live = NULL;
}

/* The conditions of the rule in segment.h, "Its lifetime". */
void
tlog_seg_idle(struct tlog_segment *seg)
{
	struct tlog_seg_live *x = seg->live;

	if (x == NULL || x->fd != -1 || x->ifd != -1 ||
	    x->fd_listed || x->foot_pending || x->wgen != x->sgen ||
	    x->mem_idx != NULL)
		return;
	/* The active segment's append state must be what tlog_seg_live
	 * makes again: no jitter or reservation, no data after its last
	 * index entry, which ends it (or no entry and no record). */
	if (!seg->sealed && (x->jitter != 0 || x->prealloc != 0 ||
	    !tlog_seg_ends_indexed(seg)))
		return;
	seg->live = NULL;
	free(x);
}

bool
tlog_seg_ends_indexed(const struct tlog_segment *seg)
{
	const struct tlog_seg_live *x = seg->live;

	if (x == NULL)
		return true;	/* only ever let go at such an end */
	return x->run_crc == 0 && (seg->nidx > 0 ?
	    x->last_idx_rel == seg->records && x->last_idx_pos == seg->bytes :
	    seg->records == 0);
}

void
tlog_seg_ref(struct tlog_segment *seg)
{
	__atomic_add_fetch(&seg->refs, 1, __ATOMIC_RELAXED);
}

void
tlog_segment_put(struct tlog_segment *seg)
{
	if (seg == NULL || __atomic_sub_fetch(&seg->refs, 1,
	    __ATOMIC_ACQ_REL) != 0)
		return;
	tlog_seg_drop_live(seg);
	tlog_level_put(seg->sd->lv);
	free(seg);
}

/* Closes a segment's files; the caller holds its partition's lock (or
 * the only reference), and the budget's lock when `locked`. The live
 * part stays: the caller decides when it may go (tlog_seg_idle). */
static void
close_files(struct tlog_segment *seg, bool locked)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct tlog_seg_live *x = seg->live;

	if (x == NULL)
		return;
	if (x->fd_listed) {
		if (!locked)
			pthread_mutex_lock(&b->lock);
		TAILQ_REMOVE(&b->segs, seg, live->fdlink);
		x->fd_listed = 0;
		b->n--;
		if (!locked)
			pthread_mutex_unlock(&b->lock);
	}
	if (x->fd != -1)
		close(x->fd);
	if (x->ifd != -1)
		close(x->ifd);
	x->fd = x->ifd = -1;
}

void
tlog_seg_close_files(struct tlog_segment *seg)
{
	close_files(seg, false);
	tlog_seg_idle(seg);
}

/*
 * Keeps the descriptors of segments within the budget: 100,000
 * partitions cannot all hold their files open. The least recently opened
 * segments whose partition is not busy (trylock: never waits, so never
 * deadlocks) are closed; the next append reopens them. A segment written
 * since its last sync, or sealed without its footer yet, is synced (and
 * its footer written) first, with only its partition's sync_lock held,
 * so that a close never drops a writeback error: it is kept for the
 * partition's next fsync.
 */
#define EVICT_MAX 16

struct evict {
	struct tlog_seg_io io[EVICT_MAX];
	size_t n;
};

static void
fd_evict_locked(struct tlog_fdbudget *b, struct tlog_segment *self,
    size_t budget, struct evict *ev)
{
	struct tlog_segment *v, *next;
	struct tlog_segdir *sd;
	int scanned = 0;

	for (v = TAILQ_FIRST(&b->segs); v != NULL && b->n > budget &&
	    scanned < 128 && ev->n < EVICT_MAX; v = next, scanned++) {
		next = TAILQ_NEXT(v, live->fdlink);
		sd = v->sd;
		if (v == self || pthread_mutex_trylock(&sd->sync_lock) != 0)
			continue;
		if (pthread_mutex_trylock(&sd->lock) != 0) {
			pthread_mutex_unlock(&sd->sync_lock);
			continue;
		}
		if (v->live->foot_pending || v->live->wgen != v->live->sgen) {
			tlog_seg_io_take(v, &ev->io[ev->n++], true, true);
			pthread_mutex_unlock(&sd->lock);
			continue;	/* sync_lock held until synced */
		}
		close_files(v, true);
		tlog_seg_idle(v);
		pthread_mutex_unlock(&sd->lock);
		pthread_mutex_unlock(&sd->sync_lock);
	}
}

/* The disk work of the evicted segments; the budget's lock not held. */
static void
evict_finish(struct evict *ev)
{
	struct tlog_segdir *sd;
	size_t i;
	int r;

	for (i = 0; i < ev->n; i++) {
		sd = ev->io[i].seg->sd;
		/* The last reference to the segment may go with io: its
		 * partition must outlive the unlock. */
		tlog_level_ref(sd->lv);
		r = tlog_seg_io_run(&ev->io[i], true);
		tlog_seg_io_finish(&ev->io[i], r, true);
		pthread_mutex_unlock(&sd->sync_lock);
		tlog_level_put(sd->lv);
	}
	ev->n = 0;
}

static void
fd_track(struct tlog_segment *seg)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct evict ev;

	ev.n = 0;
	pthread_mutex_lock(&b->lock);
	if (!seg->live->fd_listed) {
		TAILQ_INSERT_TAIL(&b->segs, seg, live->fdlink);
		seg->live->fd_listed = 1;
		b->n++;
	}
	if (b->n > b->max)
		fd_evict_locked(b, seg, b->max, &ev);
	pthread_mutex_unlock(&b->lock);
	evict_finish(&ev);
}

/* Out of descriptors: close every idle segment's files we can. */
static void
fd_evict_all(struct tlog_segment *self)
{
	struct tlog_fdbudget *b = self->sd->fdb;
	struct evict ev;

	ev.n = 0;
	pthread_mutex_lock(&b->lock);
	fd_evict_locked(b, self, 0, &ev);
	pthread_mutex_unlock(&b->lock);
	evict_finish(&ev);
}

/*
 * A file is in the way of a new segment: one recovery could not read.
 * A regular file is set aside for the operator, never written over;
 * anything else (a symlink, a FIFO) is never touched. True if the name
 * is free now.
 */
static bool
set_aside(struct tlog_segment *seg, const char *name)
{
	struct tlog_ctx *ctx = seg->sd->ctx;
	struct stat st;
	char to[64];
	bool done = false;
	int dfd;

	snprintf(to, sizeof(to), "%s.orphan-%llu", name,
	    (unsigned long long)tlog_ctx_now(ctx));
	if ((dfd = tlog_level_dir(seg->sd->lv)) < 0)
		return false;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode))
		tlog_ctx_log_err(ctx, "%s is in the way of a new segment and "
		    "is not a regular file: left alone, its offset skipped",
		    name);
	else if (renameat(dfd, name, dfd, to) == 0) {
		seg->sd->dir_dirty = true;
		tlog_ctx_log(ctx, LOG_ERR, "%s was in the way of a new "
		    "segment: kept as %s", name, to);
		done = true;
	}
	close(dfd);
	return done;
}

/* Opens one of the segment's two files, creating it for a new segment. */
static int
open_one(struct tlog_segment *seg, const char *ext, bool create)
{
	int flags = O_RDWR | (create ? O_CREAT | O_EXCL : 0);
	char name[32];
	int fd;

	tlog_segname_format(seg->base, ext, name, sizeof(name));
	fd = tlog_level_openat(seg->sd->lv, name, flags, 0644);
	if (fd == -EMFILE || fd == -ENFILE) {
		fd_evict_all(seg);
		fd = tlog_level_openat(seg->sd->lv, name, flags, 0644);
	}
	if (create && fd == -EEXIST && set_aside(seg, name))
		fd = tlog_level_openat(seg->sd->lv, name, flags, 0644);
	return fd;
}

/*
 * Opens (or creates, for a new active segment) the data and index files.
 * A new index starts with its header. Creation goes through the
 * partition's own directory: a partition that was removed or replaced
 * meanwhile gets -ENOENT and creates nothing.
 */
int
tlog_seg_open_files(struct tlog_segment *seg, bool create)
{
	unsigned char hdr[TLOG_IDX_HDR];
	struct tlog_seg_live *x;
	char name[32];
	int r;

	if ((r = tlog_seg_live(seg)) != 0)
		return r;
	x = seg->live;
	if (x->fd != -1 && x->ifd != -1)
		return 0;
	close_files(seg, false);
	if ((x->fd = open_one(seg, ".log", create)) < 0) {
		r = x->fd;
		x->fd = -1;
		tlog_seg_idle(seg);
		return r;
	}
	if ((x->ifd = open_one(seg, ".idx", create)) < 0) {
		r = x->ifd;
		x->ifd = -1;
		goto fail;
	}
	if (create) {
		x->wgen++;
		seg->sd->dir_dirty = true;
		/* The new files' blocks, for retention.keep.free's budget. */
		__atomic_add_fetch(&seg->sd->ctx->free_appended,
		    TLOG_SEG_DISK_EXTRA, __ATOMIC_RELAXED);
		tlog_idx_encode_header(hdr, seg->base, TLOG_IDX_F_DATACRC);
		if (pwrite(x->ifd, hdr, sizeof(hdr), 0) != sizeof(hdr)) {
			r = errno ? -errno : -EIO;
			tlog_seg_close_files(seg);
			tlog_segname_format(seg->base, ".idx", name, sizeof(name));
			tlog_level_unlinkat(seg->sd->lv, name);
			goto unlink_log;
		}
		seg->nidx = 0;
	}
	fd_track(seg);
	return 0;
fail:
	tlog_seg_close_files(seg);
unlink_log:
	/* Only what this call created. */
	if (create) {
		tlog_segname_format(seg->base, ".log", name, sizeof(name));
		tlog_level_unlinkat(seg->sd->lv, name);
	}
	return r;
}

int
tlog_seg_write_entries(struct tlog_segment *seg,
    const struct tlog_idx_entry *e, size_t n)
{
	unsigned char buf[64 * TLOG_IDX_ENT];
	struct tlog_seg_live *x = seg->live;
	uint64_t nidx0 = seg->nidx;
	uint32_t rel0 = x->last_idx_rel;
	uint32_t pos0 = x->last_idx_pos;
	size_t i, k;
	ssize_t w;
	int r;

	x->wgen++;
	while (n > 0) {
		k = n < 64 ? n : 64;
		for (i = 0; i < k; i++)
			tlog_idx_encode_entry(buf + i * TLOG_IDX_ENT, &e[i]);
		w = pwrite(x->ifd, buf, k * TLOG_IDX_ENT,
		    (off_t)(TLOG_IDX_HDR + (uint64_t)seg->nidx * TLOG_IDX_ENT));
		if (w != (ssize_t)(k * TLOG_IDX_ENT)) {
			r = w == -1 ? -errno : -ENOSPC;
			/* All or nothing: cut what this call wrote, so the
			 * index never names data the caller takes back. */
			seg->nidx = (uint32_t)nidx0;
			x->last_idx_rel = rel0;
			x->last_idx_pos = pos0;
			if (ftruncate(x->ifd, (off_t)(TLOG_IDX_HDR +
			    nidx0 * TLOG_IDX_ENT)) == -1)
				return -EIO;
			return r;
		}
		seg->nidx += (uint32_t)k;
		x->last_idx_rel = e[k - 1].rel;
		x->last_idx_pos = e[k - 1].pos;
		e += k;
		n -= k;
	}
	return 0;
}

/*
 * Records where the segment ends (rel = records, pos = bytes), so a mount
 * knows the end of the data without reading it.
 */
int
tlog_seg_write_boundary(struct tlog_segment *seg)
{
	struct tlog_seg_live *x = seg->live;
	struct tlog_idx_entry e;
	int r;

	if (x == NULL || seg->records == 0 || (seg->nidx > 0 &&
	    x->last_idx_rel == seg->records &&
	    x->last_idx_pos == seg->bytes))
		return 0;
	if (x->ifd == -1)
		return 0;
	e.rel = (uint32_t)seg->records;
	e.pos = (uint32_t)seg->bytes;
	e.ts = seg->max_ts;
	e.crc = x->run_crc;
	if ((r = tlog_seg_write_entries(seg, &e, 1)) == 0)
		x->run_crc = 0;
	return r;
}

/* Gives back space reserved beyond the data; retried later on failure. */
int
tlog_seg_trim(struct tlog_segment *seg)
{
	int fd = seg->live != NULL ? seg->live->fd : -1, r = 0, own = fd;
	char name[32];

	if (!seg->trim_pending)
		return 0;
	if (fd == -1) {
		tlog_segname_format(seg->base, ".log", name, sizeof(name));
		fd = tlog_level_openat(seg->sd->lv, name, O_WRONLY, 0);
		if (fd < 0)
			return fd;
	}
	if (ftruncate(fd, (off_t)seg->bytes) == -1) {
		r = -errno;
		tlog_ctx_log_err(seg->sd->ctx,
		    "segment %020llu: cannot trim preallocated space: %s",
		    (unsigned long long)seg->base, strerror(errno));
	} else
		seg->trim_pending = 0;
	if (fd != own)
		close(fd);
	return r;
}

/*
 * Seals, in memory: from now on the segment never changes. The footer
 * waits until the data is on disk (a footer is trusted without reading
 * the data): the segment stays on its partition's unsynced list, with
 * its descriptors, until the flusher, an fsync or an eviction writes it
 * (tlog_seg_io_run). Only the preallocated space is given back now.
 */
int
tlog_seg_seal(struct tlog_segment *seg, enum tlog_trigger why)
{
	struct tlog_segdir *sd = seg->sd;

	if (seg->sealed)
		return 0;
	seg->sealed = 1;
	seg->sealed_by = why;
	if (tlog_seg_live(seg) != 0) {
		/* Only an idle one has none: its data and entries are
		 * synced and end with its boundary entry. It lacks only the
		 * footer, which recovery writes (trigger `recovery`). */
		tlog_ctx_log_err(sd->ctx, "segment %020llu: out of memory; "
		    "its footer is left to recovery",
		    (unsigned long long)seg->base);
		return 0;
	}
	if (seg->live->prealloc) {
		seg->trim_pending = 1;
		seg->live->prealloc = 0;
	}
	tlog_seg_trim(seg);
	seg->live->foot_pending = 1;
	tlog_seg_ref(seg);
	TAILQ_INSERT_TAIL(&sd->unsynced, seg, live->synclink);
	__atomic_add_fetch(&sd->nunsynced, 1, __ATOMIC_RELAXED);
	return 0;
}

void
tlog_seg_io_take(struct tlog_segment *seg, struct tlog_seg_io *io,
    bool steal, bool fd_locked)
{
	struct tlog_segdir *sd = seg->sd;
	struct tlog_seg_live *x = seg->live;

	memset(io, 0, sizeof(*io));
	io->seg = seg;
	io->fd = io->ifd = -1;
	io->nidx = seg->nidx;
	/* Idle: nothing to sync, no footer owed (the live part's rule). */
	if (x == NULL) {
		tlog_seg_ref(seg);
		return;
	}
	io->gen = x->wgen;
	io->sync = x->wgen != x->sgen;
	if (x->foot_pending) {
		/* Claimed: off the list, whose reference moves to io. */
		TAILQ_REMOVE(&sd->unsynced, seg, live->synclink);
		__atomic_sub_fetch(&sd->nunsynced, 1, __ATOMIC_RELAXED);
		x->foot_pending = 0;
		io->footer = true;
	} else
		tlog_seg_ref(seg);
	if (steal) {
		io->fd = x->fd;
		io->ifd = x->ifd;
		x->fd = x->ifd = -1;
		close_files(seg, fd_locked);
	} else {
		io->fd = x->fd == -1 ? -1 : fcntl(x->fd, F_DUPFD_CLOEXEC, 0);
		io->ifd = x->ifd == -1 ? -1 :
		    fcntl(x->ifd, F_DUPFD_CLOEXEC, 0);
	}
	if (!io->footer)
		return;
	io->bound = seg->records > 0 && !(seg->nidx > 0 &&
	    x->last_idx_rel == seg->records &&
	    x->last_idx_pos == seg->bytes);
	io->be.rel = (uint32_t)seg->records;
	io->be.pos = (uint32_t)seg->bytes;
	io->be.ts = seg->max_ts;
	io->be.crc = x->run_crc;
	io->f.records = seg->records;
	io->f.bytes = seg->bytes;
	io->f.first_ts = seg->first_ts;
	io->f.max_ts = seg->max_ts;
	io->f.sealed_by = seg->sealed_by;
}

/*
 * Opens one of the files a sync needs. Out of descriptors (the daemon's
 * limit is shared with readers), idle segments' files are closed and
 * the open tried once more, as for an append: an fsync must not fail
 * for want of a descriptor while others can be given back. The guard
 * keeps an eviction's own syncs from evicting in turn.
 */
static int
io_open_one(struct tlog_seg_io *io, const char *ext)
{
	static __thread bool evicting;
	char name[32];
	int fd;

	tlog_segname_format(io->seg->base, ext, name, sizeof(name));
	fd = tlog_level_openat(io->seg->sd->lv, name, O_RDWR, 0);
	if ((fd == -EMFILE || fd == -ENFILE) && !evicting) {
		evicting = true;
		fd_evict_all(io->seg);
		evicting = false;
		fd = tlog_level_openat(io->seg->sd->lv, name, O_RDWR, 0);
	}
	return fd;
}

static int
io_open(struct tlog_seg_io *io)
{
	int fd;

	if (io->fd == -1) {
		if ((fd = io_open_one(io, ".log")) < 0)
			return fd;
		io->fd = fd;
	}
	if (io->ifd == -1) {
		if ((fd = io_open_one(io, ".idx")) < 0)
			return fd;
		io->ifd = fd;
	}
	return 0;
}

/*
 * The order is what makes a power cut safe: the data, then the index
 * entries that describe it (a boundary entry at the end of a sealed
 * segment), then the footer. A footer on disk therefore always sits on
 * durable data and entries, and recovery can trust it without reading
 * the data. The footer itself is not synced: if it is lost, recovery
 * checks the segment against the entries' data CRCs instead. Returns 0
 * or the sync's error (then no footer is written).
 */
int
tlog_seg_io_run(struct tlog_seg_io *io, bool datasync)
{
	unsigned char buf[TLOG_IDX_FOOT];
	bool idx_dirty = io->sync;
	int r;

	if (!io->sync && !io->footer)
		return 0;
	if ((r = io_open(io)) != 0)
		return r;
	if (io->sync && (datasync ? fdatasync(io->fd) : fsync(io->fd)) == -1)
		return -errno;
	if (io->bound) {
		tlog_idx_encode_entry(buf, &io->be);
		if (pwrite(io->ifd, buf, TLOG_IDX_ENT, (off_t)(TLOG_IDX_HDR +
		    io->nidx * TLOG_IDX_ENT)) != TLOG_IDX_ENT)
			return errno ? -errno : -ENOSPC;
		io->nidx++;
		idx_dirty = true;
	}
	if (idx_dirty && fdatasync(io->ifd) == -1)
		return -errno;
	if (!io->footer)
		return 0;
	tlog_idx_encode_footer(buf, &io->f);
	if (pwrite(io->ifd, buf, sizeof(buf), (off_t)(TLOG_IDX_HDR +
	    io->nidx * TLOG_IDX_ENT)) != sizeof(buf))
		tlog_ctx_log_err(io->seg->sd->ctx, "segment %020llu: cannot "
		    "write its seal footer; recovery will rebuild it",
		    (unsigned long long)io->seg->base);
	return 0;
}

void
tlog_seg_io_finish(struct tlog_seg_io *io, int r, bool keep_err)
{
	struct tlog_segment *seg = io->seg;
	struct tlog_segdir *sd = seg->sd;

	struct tlog_seg_live *x;

	pthread_mutex_lock(&sd->lock);
	/* An io with writes to sync kept the live part (only this records
	 * them synced, and sync_lock serializes a partition's ios, so sgen
	 * and gen count in the same part). A footer-only io did not: its
	 * take cleared foot_pending, and a detach may have freed the part
	 * since; the segment is dead then and its index position moot. */
	x = seg->live;
	if (x != NULL && r == 0 && io->sync && x->sgen < io->gen)
		x->sgen = io->gen;
	if (x != NULL && io->footer && r == 0 && io->bound) {
		seg->nidx = (uint32_t)io->nidx;
		x->last_idx_rel = io->be.rel;
		x->last_idx_pos = io->be.pos;
		x->run_crc = 0;
	}
	if (r != 0 && keep_err && sd->sync_err == 0)
		sd->sync_err = r;
	tlog_seg_idle(seg);
	pthread_mutex_unlock(&sd->lock);
	if (r != 0)
		tlog_ctx_log_err(sd->ctx, "segment %020llu: cannot sync: %s",
		    (unsigned long long)seg->base, strerror(-r));
	if (io->fd != -1)
		close(io->fd);
	if (io->ifd != -1)
		close(io->ifd);
	tlog_segment_put(seg);
}

bool
tlog_segment_dead(struct tlog_segment *seg)
{
	bool dead;

	pthread_mutex_lock(&seg->sd->lock);
	dead = seg->dead;
	pthread_mutex_unlock(&seg->sd->lock);
	return dead;
}

int
tlog_segment_open(struct tlog_segment *seg)
{
	char name[32];

	tlog_segname_format(seg->base, ".log", name, sizeof(name));
	return tlog_level_openat(seg->sd->lv, name, O_RDONLY, 0);
}

ssize_t
tlog_segment_read(struct tlog_segment *seg, int fd, void *buf, size_t len,
    off_t pos)
{
	uint64_t end = __atomic_load_n(&seg->bytes, __ATOMIC_ACQUIRE);
	size_t done = 0;
	ssize_t n;

	if (pos < 0)
		return -EINVAL;
	if ((uint64_t)pos >= end)
		return 0;
	if (len > end - (uint64_t)pos)
		len = (size_t)(end - (uint64_t)pos);
	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done,
		    pos + (off_t)done);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Reads the index entries of seg into a malloc'd array. */
static int
seg_load_index(struct tlog_segment *seg, struct tlog_idx_entry **out,
    size_t *n)
{
	struct tlog_idx_entry *e;
	unsigned char *buf;
	char name[32];
	size_t cnt, i, got = 0;
	ssize_t r;
	int fd;

	*out = NULL;
	*n = 0;
	/* A read-only open's repaired index, copied under the lock (the
	 * live part that holds it is the lock's). */
	pthread_mutex_lock(&seg->sd->lock);
	cnt = seg->nidx;
	e = NULL;
	if (cnt > 0 && seg->live != NULL && seg->live->mem_idx != NULL &&
	    (e = reallocarray(NULL, cnt, sizeof(*e))) != NULL)
		memcpy(e, seg->live->mem_idx, cnt * sizeof(*e));
	else if (cnt > 0 && seg->live != NULL && seg->live->mem_idx != NULL)
		cnt = SIZE_MAX;
	pthread_mutex_unlock(&seg->sd->lock);
	if (cnt == SIZE_MAX)
		return -ENOMEM;
	if (cnt == 0)
		return 0;
	if (e != NULL) {
		*out = e;
		*n = cnt;
		return 0;
	}
	tlog_segname_format(seg->base, ".idx", name, sizeof(name));
	fd = tlog_level_openat(seg->sd->lv, name, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	buf = reallocarray(NULL, cnt, TLOG_IDX_ENT);
	e = reallocarray(NULL, cnt, sizeof(*e));
	if (buf == NULL || e == NULL) {
		free(buf);
		free(e);
		close(fd);
		return -ENOMEM;
	}
	r = pread(fd, buf, cnt * TLOG_IDX_ENT, TLOG_IDX_HDR);
	close(fd);
	if (r > 0) {
		for (i = 0; i < (size_t)r / TLOG_IDX_ENT; i++) {
			if (tlog_idx_decode_entry(buf + i * TLOG_IDX_ENT,
			    &e[got]) != 0)
				break;
			got++;
		}
	}
	free(buf);
	*out = e;
	*n = got;
	return 0;
}

/* The span after which a segment seals on time: segment.ms less its
 * jitter, never below 1 ms. */
int64_t
tlog_seg_span(const struct tlog_segment *seg, int64_t seg_ms)
{
	int64_t jit = seg->live != NULL ? seg->live->jitter : 0;
	int64_t j = jit < seg_ms ? jit : seg_ms;

	return seg_ms - j > 0 ? seg_ms - j : 1;
}

/*
 * Between two index entries every record ends with a newline, except that
 * the record just before an entry may end without one (records without a
 * newline are always followed by an entry). So counting newlines from the
 * nearest entry finds any offset.
 */
int
tlog_seg_find_offset(struct tlog_segment *seg, uint64_t offset,
    uint64_t *pos)
{
	struct tlog_idx_entry *e;
	uint64_t rel, at, cur, end, records;
	char buf[65536];
	size_t n, lo, hi, i;
	ssize_t r;
	int fd, ret = 0;

	pthread_mutex_lock(&seg->sd->lock);
	records = seg->records;
	end = seg->bytes;
	pthread_mutex_unlock(&seg->sd->lock);
	if (offset < seg->base || offset >= seg->base + records)
		return offset == seg->base + records ? (*pos = end, 0) :
		    -ENOENT;
	rel = offset - seg->base;
	if ((ret = seg_load_index(seg, &e, &n)) != 0)
		return ret;
	/* Last entry with e.rel <= rel. */
	lo = 0;
	hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (e[mid].rel <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	cur = lo ? e[lo - 1].rel : 0;
	at = lo ? e[lo - 1].pos : 0;
	free(e);
	if (cur == rel) {
		*pos = at;
		return 0;
	}
	if ((fd = tlog_segment_open(seg)) < 0)
		return fd;
	while (cur < rel && at < end) {
		r = tlog_segment_read(seg, fd, buf, sizeof(buf), (off_t)at);
		if (r <= 0) {
			ret = r < 0 ? (int)r : -EIO;
			break;
		}
		for (i = 0; i < (size_t)r && cur < rel; i++)
			if (buf[i] == '\n')
				cur++;
		at += i;
	}
	close(fd);
	if (ret == 0 && cur != rel)
		ret = -EIO;
	if (ret == 0)
		*pos = at;
	return ret;
}

int
tlog_seg_find_time(struct tlog_segment *seg, int64_t t,
    uint64_t *offset, uint64_t *pos)
{
	struct tlog_idx_entry *e;
	size_t n, j;
	int64_t max_ts;
	int ret;

	pthread_mutex_lock(&seg->sd->lock);
	max_ts = seg->max_ts;
	pthread_mutex_unlock(&seg->sd->lock);
	if (max_ts < t)
		return -ENOENT;
	if ((ret = seg_load_index(seg, &e, &n)) != 0)
		return ret;
	/* First entry with ts >= t; the answer lies after the one before. */
	for (j = 0; j < n && e[j].ts < t; j++)
		;
	if (j > 0)
		j--;
	*offset = seg->base + (n ? e[j].rel : 0);
	*pos = n ? e[j].pos : 0;
	free(e);
	return 0;
}
