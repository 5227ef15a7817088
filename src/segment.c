/*
 * segment.c - one segment in memory (segment.h): its references and live
 * part, closing its files, index appends, sealing (the footer is owed,
 * not written), trimming preallocated space, and the bookkeeping of a
 * sync: what it owes, taken under the lock, and what it did.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment.h"

/* ---- what a partition's segments share ---- */

void
tlog_segdir_init(struct tlog_segdir *sd, struct tlog_ctx *ctx,
    struct tlog_level *lv, struct tlog_fdbudget *fdb)
{
	*sd = (struct tlog_segdir){ .ctx = ctx, .lv = lv, .fdb = fdb };
	pthread_mutex_init(&sd->lock, NULL);
	TAILQ_INIT(&sd->unsynced);
}

void
tlog_segdir_destroy(struct tlog_segdir *sd)
{
	pthread_mutex_destroy(&sd->lock);
}

void
tlog_segdir_io_begin(struct tlog_segdir *sd)
{
	pthread_mutex_lock(&sd->ctx->work_lock);
	while (sd->io_busy)
		pthread_cond_wait(&sd->ctx->io_idle, &sd->ctx->work_lock);
	sd->io_busy = true;
	pthread_mutex_unlock(&sd->ctx->work_lock);
}

void
tlog_segdir_io_end(struct tlog_segdir *sd)
{
	pthread_mutex_lock(&sd->ctx->work_lock);
	sd->io_busy = false;
	/* One condition for the store: those waiting for another
	 * partition's look again and sleep on. */
	pthread_cond_broadcast(&sd->ctx->io_idle);
	pthread_mutex_unlock(&sd->ctx->work_lock);
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

/* ---- one segment ---- */

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
	tlog_seg_close_fds(seg, false);
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

bool
tlog_once_a_minute(struct tlog_ctx *ctx, int64_t *said)
{
	int64_t now = tlog_ctx_now(ctx);
	int64_t last = __atomic_load_n(said, __ATOMIC_RELAXED);

	return (last == 0 || now - last >= 60000) &&
	    __atomic_compare_exchange_n(said, &last, now, false,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

void
tlog_seg_where(const struct tlog_segment *seg, char *buf, size_t len)
{
	char where[2 * TLOG_NAME_MAX + 2];

	tlog_level_where(seg->sd->lv, where, sizeof(where));
	snprintf(buf, len, "%s/%020llu.log", where,
	    (unsigned long long)seg->base);
}

void
tlog_seg_ref(struct tlog_segment *seg)
{
	__atomic_add_fetch(&seg->refs, 1, __ATOMIC_RELAXED);
}

struct tlog_event
tlog_seg_event(const struct tlog_segment *seg, enum tlog_event_kind kind,
    int64_t ts)
{
	return (struct tlog_event){ .kind = kind, .ts = ts,
	    .segment_ino = seg->ino, .base = seg->base,
	    .records = seg->records, .bytes = seg->bytes,
	    .first_ts = seg->first_ts, .max_ts = seg->max_ts };
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

/* Takes a segment off the budget's list, the work lock held if
 * `locked`; take: an io holds its descriptors from now on, counted in
 * the budget's taken (in the same step, so they are never uncounted)
 * until tlog_seg_io_finish closes them. */
static void
fd_unlist(struct tlog_segment *seg, bool locked, bool take)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct tlog_seg_live *x = seg->live;

	if (!x->fd_listed && !take)
		return;
	if (!locked)
		pthread_mutex_lock(&b->ctx->work_lock);
	if (x->fd_listed) {
		TAILQ_REMOVE(&b->segs, seg, live->fdlink);
		x->fd_listed = 0;
		b->n--;
	}
	if (take)
		b->taken++;
	if (!locked)
		pthread_mutex_unlock(&b->ctx->work_lock);
}

void
tlog_seg_close_fds(struct tlog_segment *seg, bool locked)
{
	struct tlog_seg_live *x = seg->live;

	if (x == NULL)
		return;
	fd_unlist(seg, locked, false);
	if (x->fd != -1)
		close(x->fd);
	if (x->ifd != -1)
		close(x->ifd);
	x->fd = x->ifd = -1;
}

void
tlog_seg_close_files(struct tlog_segment *seg)
{
	tlog_seg_close_fds(seg, false);
	tlog_seg_idle(seg);
}

int
tlog_seg_write_entries(struct tlog_segment *seg,
    const struct tlog_idx_entry *e, size_t n)
{
	unsigned char buf[64 * TLOG_IDX_ENT];
	const struct tlog_idx_entry *last = &e[n - 1];
	struct tlog_seg_live *x = seg->live;
	uint64_t nidx0 = seg->nidx;
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
			seg->nidx = (uint32_t)nidx0;
			if (ftruncate(x->ifd, (off_t)(TLOG_IDX_HDR +
			    nidx0 * TLOG_IDX_ENT)) == -1)
				return -EIO;
			return r;
		}
		seg->nidx += (uint32_t)k;
		e += k;
		n -= k;
	}
	x->last_idx_rel = last->rel;
	x->last_idx_pos = last->pos;
	return 0;
}

int
tlog_seg_write_boundary(struct tlog_segment *seg)
{
	struct tlog_seg_live *x = seg->live;
	struct tlog_idx_entry e;
	int r;

	if (!tlog_seg_needs_boundary(seg) || x->ifd == -1)
		return 0;
	e = (struct tlog_idx_entry){ seg->records, seg->bytes, seg->max_ts,
	    x->run_crc };
	if ((r = tlog_seg_write_entries(seg, &e, 1)) == 0)
		x->run_crc = 0;
	return r;
}

int
tlog_seg_trim(struct tlog_segment *seg)
{
	int fd = seg->live != NULL ? seg->live->fd : -1, r = 0, own = fd;
	char name[32], where[TLOG_SEG_WHERE_MAX];

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
		tlog_seg_where(seg, where, sizeof(where));
		tlog_ctx_log_err(seg->sd->ctx, "%s: cannot trim preallocated "
		    "space: %s", where, strerror(-r));
	} else
		seg->trim_pending = 0;
	if (fd != own)
		close(fd);
	return r;
}

int
tlog_seg_seal(struct tlog_segment *seg, enum tlog_trigger why)
{
	struct tlog_segdir *sd = seg->sd;
	char where[TLOG_SEG_WHERE_MAX];

	if (seg->sealed)
		return 0;
	seg->sealed = 1;
	seg->sealed_by = why;
	if (tlog_seg_live(seg) != 0) {
		/* Only an idle one has none: its data and entries are
		 * synced and end with its boundary entry. It lacks only the
		 * footer, which recovery writes (trigger `recovery`). */
		tlog_seg_where(seg, where, sizeof(where));
		tlog_ctx_log_err(sd->ctx, "%s: out of memory; its footer is "
		    "left to recovery", where);
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

	*io = (struct tlog_seg_io){ .seg = seg, .fd = -1, .ifd = -1,
	    .nidx = seg->nidx };
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
		fd_unlist(seg, fd_locked, true);
		io->taken = true;
	} else {
		io->fd = x->fd == -1 ? -1 : fcntl(x->fd, F_DUPFD_CLOEXEC, 0);
		io->ifd = x->ifd == -1 ? -1 :
		    fcntl(x->ifd, F_DUPFD_CLOEXEC, 0);
	}
	if (!io->footer)
		return;
	io->bound = tlog_seg_needs_boundary(seg);
	io->be = (struct tlog_idx_entry){ seg->records, seg->bytes,
	    seg->max_ts, x->run_crc };
	io->f = (struct tlog_footer){ seg->records, seg->bytes,
	    seg->first_ts, seg->max_ts, seg->sealed_by };
}

void
tlog_seg_io_finish(struct tlog_seg_io *io, int r, bool keep_err)
{
	struct tlog_segment *seg = io->seg;
	struct tlog_segdir *sd = seg->sd;
	struct tlog_fdbudget *b = sd->fdb;
	char where[TLOG_SEG_WHERE_MAX];
	struct tlog_seg_live *x;

	/* The descriptors go back first, before the partition's lock is
	 * taken: the budget counts them until they are closed. */
	if (io->fd != -1)
		close(io->fd);
	if (io->ifd != -1)
		close(io->ifd);
	if (io->taken) {
		pthread_mutex_lock(&b->ctx->work_lock);
		b->taken--;
		pthread_mutex_unlock(&b->ctx->work_lock);
	}
	pthread_mutex_lock(&sd->lock);
	/* An io with writes to sync kept the live part (only this records
	 * them synced, and a partition's ios run one at a time, so sgen
	 * and gen count in the same part). A footer-only io did not: its
	 * take cleared foot_pending, and a detach may have freed the part
	 * since; the segment is dead then and its index position moot. */
	x = seg->live;
	if (x != NULL && r == 0 && io->sync && x->sgen < io->gen)
		x->sgen = io->gen;
	if (io->footer && r == 0) {
		seg->flushed = 1;
		__atomic_add_fetch(&sd->ctx->ckpt_changes, 1,
		    __ATOMIC_RELAXED);
		if (x != NULL && io->bound) {
			seg->nidx = (uint32_t)io->nidx;
			x->last_idx_rel = io->be.rel;
			x->last_idx_pos = io->be.pos;
			x->run_crc = 0;
		}
	}
	if (r != 0 && keep_err && sd->sync_err == 0)
		sd->sync_err = r;
	tlog_seg_idle(seg);
	pthread_mutex_unlock(&sd->lock);
	if (r != 0) {
		tlog_seg_where(seg, where, sizeof(where));
		tlog_ctx_log_err(sd->ctx, "%s: cannot sync: %s", where,
		    strerror(-r));
	}
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

int64_t
tlog_seg_span(const struct tlog_segment *seg, int64_t seg_ms)
{
	int64_t jit = seg->live != NULL ? seg->live->jitter : 0;
	int64_t j = jit < seg_ms ? jit : seg_ms;

	return seg_ms - j > 0 ? seg_ms - j : 1;
}
