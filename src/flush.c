/*
 * flush.c - durability (flush.h; doc/engine.md, "fsync and the flusher"):
 * a sealed segment's footer is written only once its data is on disk.
 */
#include "config.h"

#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "flush.h"

/*
 * The flusher's step (flush.h): each queued partition's footers as its
 * disk work (no lock held), errors kept for its next fsync; one with more
 * left is queued again, behind the others.
 */
int
tlog_flush_pending(struct tlog_queue *q, int max)
{
	struct tlog_partition *p;
	int done = 0;
	bool more;

	while (max <= 0 || done < max) {
		if ((p = tlog_queue_flush_pop(q)) == NULL)
			break;
		tlog_segdir_io_begin(&p->sd);
		done += tlog_segdir_flush(&p->sd, max > 0 ? max - done : 0,
		    NULL);
		tlog_segdir_io_end(&p->sd);
		pthread_mutex_lock(&p->sd.lock);
		more = !TAILQ_EMPTY(&p->sd.unsynced);
		pthread_mutex_unlock(&p->sd.lock);
		if (more)
			tlog_queue_flush(q, p);
		tlog_partition_put(p);
	}
	return done;
}

/*
 * In order: the sealed segments not yet flushed (each as the flusher does
 * it), the active segment (a boundary entry for all of its data, then
 * data and index synced), the directory if a segment file was created
 * since it was last synced. An error kept from the flusher or an
 * eviction is returned here, once.
 */
int
tlog_partition_fsync(struct tlog_partition *p, bool datasync)
{
	struct tlog_segment *seg;
	struct tlog_seg_io io;
	bool have_io, dir;
	int r = 0, r2, dfd;

	TLOG_METRIC_ADD(p->ctx, fsyncs, 1);
	/* Read-only: nothing was written, and the boundary entry an fsync
	 * writes would change the store. */
	if (p->ctx->ro)
		return 0;
	tlog_segdir_io_begin(&p->sd);
	tlog_segdir_flush(&p->sd, 0, &r);
	pthread_mutex_lock(&p->sd.lock);
	/* Without its live part the active segment is synced and ends with
	 * its boundary entry (segment.h). */
	seg = tlog_part_active(p);
	have_io = seg != NULL && seg->records > 0 && seg->live != NULL &&
	    (tlog_seg_needs_boundary(seg) ||
	    seg->live->wgen != seg->live->sgen);
	if (have_io && (r2 = tlog_seg_open_files(seg, false)) != 0) {
		have_io = false;
		if (r == 0)
			r = r2;
	} else if (have_io) {
		if ((r2 = tlog_seg_write_boundary(seg)) != 0 && r == 0)
			r = r2;
		tlog_seg_io_take(seg, &io, false, false);
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
	r2 = 0;
	if (dir && (r2 = dfd = tlog_level_dir(&p->lv)) >= 0) {
		r2 = tlog_fsync_dir(dfd, ".");
		close(dfd);
	}
	pthread_mutex_lock(&p->sd.lock);
	if (r2 != 0)
		p->sd.dir_dirty = true;		/* for the next fsync */
	if (r == 0)
		r = r2 != 0 ? r2 : p->sd.sync_err;
	p->sd.sync_err = 0;
	pthread_mutex_unlock(&p->sd.lock);
	tlog_segdir_io_end(&p->sd);
	return r;
}

/* fsync's result; the files are closed whatever it is. */
int
tlog_part_close(struct tlog_partition *p)
{
	struct tlog_segment *seg;
	int r;

	if ((r = tlog_partition_fsync(p, true)) != 0)
		tlog_ctx_log(p->ctx, LOG_ERR, "cannot make a partition durable "
		    "at close: %s", strerror(-r));
	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link) {
		tlog_seg_trim(seg);
		tlog_seg_close_files(seg);
	}
	pthread_mutex_unlock(&p->sd.lock);
	return r;
}
