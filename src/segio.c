/*
 * segio.c - a segment's files on disk: opening them (a new segment's
 * too) within the store's open-file budget, evicting idle segments'
 * descriptors when it is spent, and the sync that writes a sealed
 * segment's footer after its data (doc/engine.md, "Segment and index";
 * doc/reliability.md). It uses segment.c's state, never the reverse; the
 * budget and the syncs are together as an open that finds no descriptor
 * evicts, and an eviction syncs.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <unistd.h>

#include "segment.h"

int
tlog_segdir_flush(struct tlog_segdir *sd, int max, int *errp)
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
		tlog_seg_io_finish(&io, r, errp == NULL);
		if (r != 0 && errp != NULL && *errp == 0)
			*errp = r;
		n++;
	}
	return n;
}

/* ---- the open-file budget ---- */

static int
reading_cmp(struct tlog_reading *a, struct tlog_reading *b)
{
	return a->seg < b->seg ? -1 : a->seg > b->seg;
}

RB_GENERATE(tlog_reading_tree, tlog_reading, entry, reading_cmp)

/*
 * Readers get what the limit leaves, so that appends always find
 * descriptors: after the segments' share (two descriptors each, those a
 * sync took too), the front end's reserve, the store's own files
 * (TLOG_FD_MARGIN) and what each thread that may do disk work at once
 * holds for a moment (TLOG_FD_PER_THREAD); at least one. The work lock
 * held, or the budget not yet shared.
 */
static void
readers_share(struct tlog_fdbudget *b)
{
	size_t used = 2 * b->max + b->reserve + TLOG_FD_MARGIN +
	    TLOG_FD_PER_THREAD * b->threads;

	b->readers_max = b->limit == 0 ? SIZE_MAX :
	    b->limit > used ? b->limit - used : 1;
}

void
tlog_fdbudget_init(struct tlog_fdbudget *b, struct tlog_ctx *ctx,
    size_t max, size_t reserve, size_t workers)
{
	struct rlimit rl;
	bool limited;

	*b = (struct tlog_fdbudget){ .ctx = ctx, .max = max,
	    .reserve = reserve, .threads = workers > 0 ? workers : 1 };
	TAILQ_INIT(&b->segs);
	RB_INIT(&b->reading);
	/* Without its cache a compressed segment reads nothing (ENOMEM
	 * then, from its first read). */
	(void)tlog_zcache_init(&b->zc, ctx->opts.frame_cache);
	limited = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY;
	if (b->max == 0) {
		b->max = limited ? (size_t)rl.rlim_cur / 4 : 4096;
		if (b->max < 16)
			b->max = 16;
	}
	b->limit = limited ? (size_t)rl.rlim_cur : 0;
	readers_share(b);
}

void
tlog_fdbudget_thread(struct tlog_fdbudget *b, bool started)
{
	pthread_mutex_lock(&b->ctx->work_lock);
	if (started)
		b->threads++;
	else
		b->threads--;
	readers_share(b);
	pthread_mutex_unlock(&b->ctx->work_lock);
}

void
tlog_fdbudget_destroy(struct tlog_fdbudget *b)
{
	struct tlog_reading *rd;

	/* Readers still open at close (a test's): their count goes too. */
	while ((rd = RB_MIN(tlog_reading_tree, &b->reading)) != NULL) {
		RB_REMOVE(tlog_reading_tree, &b->reading, rd);
		free(rd);
	}
	tlog_zcache_destroy(&b->zc);
}

#define EVICT_MAX 16

/* The disk work of n evicted segments; the work lock not held. */
static void
evict_finish(struct tlog_seg_io *io, size_t n)
{
	struct tlog_segdir *sd;
	size_t i;
	int r;

	if (n > 0)
		TLOG_HOOK(io[0].seg->sd->ctx, TLOG_HOOK_EVICT, NULL);
	for (i = 0; i < n; i++) {
		sd = io[i].seg->sd;
		/* The last reference to the segment may go with io: its
		 * partition must outlive the unlock. */
		tlog_level_ref(sd->lv);
		r = tlog_seg_io_run(&io[i], true);
		tlog_seg_io_finish(&io[i], r, true);
		tlog_segdir_io_end(sd);
		tlog_level_put(sd->lv);
	}
}

/*
 * Keeps the descriptors of segments within the budget: 100,000
 * partitions cannot all hold their files open. The least recently opened
 * segments whose partition is not busy (its lock free, no disk work
 * under way: never waits, so never deadlocks) are closed; the next
 * append reopens them. A segment written since its last sync, or sealed
 * without its footer yet, is synced (and its footer written) first, as
 * its partition's disk work and with no lock held, so that a close
 * never drops a writeback error: it is kept for the partition's next
 * fsync.
 *
 * track: seg's files were just opened; it is listed and the others are
 * brought within max. Else the table is full: every idle segment's files
 * we can are closed.
 */
static void
fd_evict(struct tlog_segment *seg, bool track)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	size_t budget = track ? b->max : 0, n = 0;
	struct tlog_seg_io io[EVICT_MAX];
	struct tlog_segment *v, *next;
	struct tlog_segdir *sd;
	int scanned = 0;

	pthread_mutex_lock(&b->ctx->work_lock);
	if (track && !seg->live->fd_listed) {
		TAILQ_INSERT_TAIL(&b->segs, seg, live->fdlink);
		seg->live->fd_listed = 1;
		b->n++;
	}
	/* Those a sync holds count (b->taken), but this eviction's own
	 * victims are on their way out: it stops once the rest fit. */
	for (v = TAILQ_FIRST(&b->segs); v != NULL &&
	    b->n + b->taken > budget + n &&
	    scanned < 128 && n < EVICT_MAX; v = next, scanned++) {
		next = TAILQ_NEXT(v, live->fdlink);
		sd = v->sd;
		/* Under the work lock, which guards io_busy: a partition
		 * whose disk work is not under way cannot start it until
		 * this is done. */
		if (v == seg || sd->io_busy ||
		    pthread_mutex_trylock(&sd->lock) != 0)
			continue;
		if (v->live->foot_pending || v->live->wgen != v->live->sgen) {
			tlog_seg_io_take(v, &io[n++], true, true);
			sd->io_busy = true;	/* ended by evict_finish */
			pthread_mutex_unlock(&sd->lock);
			continue;
		}
		tlog_seg_close_fds(v, true);
		tlog_seg_idle(v);
		pthread_mutex_unlock(&sd->lock);
	}
	pthread_mutex_unlock(&b->ctx->work_lock);
	evict_finish(io, n);
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
	char to[64], where[2 * TLOG_NAME_MAX + 2];
	struct stat st;
	bool done = false;
	int dfd;

	snprintf(to, sizeof(to), "%s.orphan-%llu", name,
	    (unsigned long long)tlog_ctx_now(ctx));
	if ((dfd = tlog_level_dir(seg->sd->lv)) < 0)
		return false;
	tlog_level_where(seg->sd->lv, where, sizeof(where));
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode))
		tlog_ctx_log_err(ctx, "%s/%s is in the way of a new segment "
		    "and is not a regular file: left alone, its offset "
		    "skipped", where, name);
	else if (renameat(dfd, name, dfd, to) == 0) {
		seg->sd->dir_dirty = true;
		tlog_ctx_log(ctx, LOG_ERR, "%s/%s was in the way of a new "
		    "segment: kept as %s", where, name, to);
		done = true;
	}
	close(dfd);
	return done;
}

/*
 * Opens name in the segment's directory. With the descriptor table full
 * (the daemon's limit is shared with readers), idle segments' files are
 * closed and the open tried once more: an append or an fsync must not
 * fail for want of a descriptor while others can be given back. The
 * guard keeps an eviction's own syncs from evicting in turn.
 */
static int
open_evicting(struct tlog_segment *seg, const char *name, int flags)
{
	static __thread bool evicting;
	int fd = tlog_level_openat(seg->sd->lv, name, flags, 0644);

	if ((fd == -EMFILE || fd == -ENFILE) && !evicting) {
		evicting = true;
		fd_evict(seg, false);
		evicting = false;
		fd = tlog_level_openat(seg->sd->lv, name, flags, 0644);
	}
	return fd;
}

/* Opens one of the segment's two files, creating it for a new segment. */
static int
open_one(struct tlog_segment *seg, const char *ext, bool create)
{
	int flags = O_RDWR | (create ? O_CREAT | O_EXCL : 0);
	char name[32];
	int fd;

	tlog_segname_format(seg->base, ext, name, sizeof(name));
	fd = open_evicting(seg, name, flags);
	if (create && fd == -EEXIST && set_aside(seg, name))
		fd = tlog_level_openat(seg->sd->lv, name, flags, 0644);
	return fd;
}

/* Readers hold every descriptor they may: ENFILE (the reader's own
 * table is not full, EMFILE would say it is), said once a minute. */
static int
readers_full(struct tlog_segment *seg)
{
	struct tlog_ctx *ctx = seg->sd->ctx;

	if (tlog_once_a_minute(ctx, &seg->sd->fdb->full_said))
		tlog_ctx_log(ctx, LOG_WARNING, "out of file descriptors: "
		    "opens for reading fail with ENFILE until readers close "
		    "some (raise the daemon's RLIMIT_NOFILE: LimitNOFILE= in "
		    "its unit, ulimit -n)");
	return -ENFILE;
}

/* One reader's descriptor more, within the readers' share: 0, -ENFILE or
 * -ENOMEM. */
static int
reader_add(struct tlog_segment *seg)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct tlog_reading key, *rd;
	int r = 0;

	key.seg = seg;
	pthread_mutex_lock(&b->ctx->work_lock);
	if (b->readers >= b->readers_max)
		r = -ENFILE;
	else if ((rd = RB_FIND(tlog_reading_tree, &b->reading, &key)) != NULL)
		rd->n++;
	else if ((rd = calloc(1, sizeof(*rd))) == NULL)
		r = -ENOMEM;
	else {
		rd->seg = seg;
		rd->n = 1;
		RB_INSERT(tlog_reading_tree, &b->reading, rd);
	}
	if (r == 0)
		b->readers++;
	pthread_mutex_unlock(&b->ctx->work_lock);
	return r == -ENFILE ? readers_full(seg) : r;
}

/* One reader's descriptor less; the last of a segment unlinked meanwhile
 * gives its bytes back to the disk's count. */
static void
reader_gone(struct tlog_segment *seg)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct tlog_reading key, *rd;

	key.seg = seg;
	pthread_mutex_lock(&b->ctx->work_lock);
	b->readers--;
	if ((rd = RB_FIND(tlog_reading_tree, &b->reading, &key)) != NULL &&
	    --rd->n == 0) {
		RB_REMOVE(tlog_reading_tree, &b->reading, rd);
		if (rd->held)
			__atomic_sub_fetch(&seg->sd->ctx->free_held,
			    tlog_seg_disk(seg), __ATOMIC_RELAXED);
		free(rd);
	}
	pthread_mutex_unlock(&b->ctx->work_lock);
}

void
tlog_seg_unlinked(struct tlog_segment *seg)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct tlog_reading key, *rd;

	key.seg = seg;
	pthread_mutex_lock(&b->ctx->work_lock);
	if ((rd = RB_FIND(tlog_reading_tree, &b->reading, &key)) != NULL &&
	    !rd->held) {
		rd->held = true;
		__atomic_add_fetch(&seg->sd->ctx->free_held,
		    tlog_seg_disk(seg), __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&b->ctx->work_lock);
}

/*
 * A compressed segment's reader gets its .log.zst, marked as such for
 * tlog_seg_read. The plain file goes only after the compressed one is
 * published (compress.c): a .log missing meanwhile means the .log.zst
 * is there, once the mark is seen.
 */
int
tlog_segment_open(struct tlog_segment *seg)
{
	struct tlog_zcache *zc = &seg->sd->fdb->zc;
	char name[32];
	bool z = false;
	int fd, tries;

	if ((fd = reader_add(seg)) != 0)
		return fd;
	for (tries = 0; tries < 2; tries++) {
		z = __atomic_load_n(&seg->zbytes, __ATOMIC_ACQUIRE) != 0;
		tlog_segname_format(seg->base, z ? ".log.zst" : ".log", name,
		    sizeof(name));
		/* The table can be full all the same (other descriptors of
		 * the process). */
		fd = open_evicting(seg, name, O_RDONLY);
		if (fd != -ENOENT || z)
			break;
	}
	if (fd >= 0 && z && tlog_zfd_mark(zc, fd, true) != 0) {
		close(fd);
		fd = -ENFILE;
	}
	if (fd == -EMFILE || fd == -ENFILE)
		fd = readers_full(seg);
	if (fd < 0)
		reader_gone(seg);
	return fd;
}

void
tlog_segment_close(struct tlog_segment *seg, int fd)
{
	(void)tlog_zfd_mark(&seg->sd->fdb->zc, fd, false);
	close(fd);
	reader_gone(seg);
}

int
tlog_seg_open_files(struct tlog_segment *seg, bool create)
{
	unsigned char hdr[TLOG_IDX_HDR];
	struct tlog_seg_live *x;
	char name[32];
	ssize_t w;
	int r;

	if ((r = tlog_seg_live(seg)) != 0)
		return r;
	x = seg->live;
	if (x->fd != -1 && x->ifd != -1)
		return 0;
	tlog_seg_close_fds(seg, false);
	if ((r = open_one(seg, ".log", create)) < 0) {
		tlog_seg_idle(seg);
		return r;
	}
	x->fd = r;
	if ((r = open_one(seg, ".idx", create)) < 0)
		goto fail;
	x->ifd = r;
	if (create) {
		x->wgen++;
		seg->sd->dir_dirty = true;
		/* The new files' blocks, for retention.keep.free's budget. */
		__atomic_add_fetch(&seg->sd->ctx->free_appended,
		    TLOG_SEG_DISK_EXTRA, __ATOMIC_RELAXED);
		tlog_idx_encode_header(hdr, seg->base, TLOG_IDX_F_DATACRC);
		if ((w = pwrite(x->ifd, hdr, sizeof(hdr), 0)) != sizeof(hdr)) {
			/* A short write sets no errno: a full disk. */
			r = w == -1 ? -errno : -ENOSPC;
			tlog_seg_close_files(seg);
			tlog_segname_format(seg->base, ".idx", name, sizeof(name));
			tlog_level_unlinkat(seg->sd->lv, name);
			goto unlink_log;
		}
	}
	fd_evict(seg, true);
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
	char where[TLOG_SEG_WHERE_MAX];
	bool idx_dirty = io->sync;
	ssize_t w;
	int r;

	if (!io->sync && !io->footer)
		return 0;
	/* The files it holds no descriptor of. */
	if (io->fd == -1) {
		if ((r = open_one(io->seg, ".log", false)) < 0)
			return r;
		io->fd = r;
	}
	if (io->ifd == -1) {
		if ((r = open_one(io->seg, ".idx", false)) < 0)
			return r;
		io->ifd = r;
	}
	if (io->sync && (datasync ? fdatasync(io->fd) : fsync(io->fd)) == -1)
		return -errno;
	if (io->bound) {
		tlog_idx_encode_entry(buf, &io->be);
		w = pwrite(io->ifd, buf, TLOG_IDX_ENT, (off_t)(TLOG_IDX_HDR +
		    io->nidx * TLOG_IDX_ENT));
		if (w != TLOG_IDX_ENT)	/* a short write sets no errno */
			return w == -1 ? -errno : -ENOSPC;
		io->nidx++;
		idx_dirty = true;
	}
	if (idx_dirty && fdatasync(io->ifd) == -1)
		return -errno;
	if (!io->footer)
		return 0;
	tlog_idx_encode_footer(buf, &io->f);
	if (pwrite(io->ifd, buf, sizeof(buf), (off_t)(TLOG_IDX_HDR +
	    io->nidx * TLOG_IDX_ENT)) != sizeof(buf)) {
		tlog_seg_where(io->seg, where, sizeof(where));
		tlog_ctx_log_err(io->seg->sd->ctx, "%s: cannot write its "
		    "seal footer; recovery will rebuild it", where);
	}
	return 0;
}
