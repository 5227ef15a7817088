/*
 * unlink.c - draining the unlink queue (queue.h): the files of detached
 * segments are unlinked with no engine lock held, data then index, after
 * the partition's end offset is made to outlive them, and only then is
 * the deletion event emitted. The drainers: the front end's unlinker
 * (tlog_unlink_pending), the size ceiling on the appender's thread and
 * rmdir's wait (tlog_unlink_drain). A crash between detach and unlink
 * loses the event, never names data still present, and the segment
 * reappears at the next open.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "unlink.h"

/* Makes p's end offset, at least need, durable before the files that
 * held it go: a newer segment's name witnesses it (its directory entry
 * synced if still owed), else .next is written. */
static int
save_end(struct tlog_partition *p, uint64_t need)
{
	struct tlog_segment *last;
	char buf[32];
	uint64_t end;
	bool witness = false, dir = false;
	int n, dfd, r = 0;

	tlog_segdir_io_begin(&p->sd);
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
		if (dir && fsync(dfd) == -1 && errno != EINVAL)
			r = -errno;
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
	/* The directory's sync taken above and not done is still owed. */
	if (r != 0 && witness && dir) {
		pthread_mutex_lock(&p->sd.lock);
		p->sd.dir_dirty = true;
		pthread_mutex_unlock(&p->sd.lock);
	}
	tlog_segdir_io_end(&p->sd);
	return r;
}

static int
unlink_one(struct tlog_segment *seg)
{
	static const char *const ext[] = { ".log", ".log.zst", ".idx" };
	char name[32];
	int dfd, r = 0;
	size_t i;
	/* Dead, its zbytes is final: a compression that renamed its
	 * .log.zst without publishing it removes that file itself
	 * (compress.c). The only ENOENT left is a plain segment's. A
	 * plain one served beside a longer .log.zst (zboth, set at open)
	 * takes that copy with it: left, it would lie there without its
	 * index until the next open removed it. */
	bool z = __atomic_load_n(&seg->zbytes, __ATOMIC_ACQUIRE) != 0 ||
	    seg->zboth;

	if ((dfd = tlog_level_dir(seg->sd->lv)) < 0)
		/* A removed partition's directory went with its files (it
		 * is removed only once none is left). */
		return dfd == -ENOENT && __atomic_load_n(&seg->sd->lv->dead,
		    __ATOMIC_ACQUIRE) ? 0 : dfd;
	/* The data, plain or compressed (or both, while a compression
	 * ends), then the index: an index without data is what a crash
	 * in between leaves, and recovery removes it. */
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]) && r == 0; i++) {
		if (i == 1 && !z)
			continue;
		tlog_segname_format(seg->base, ext[i], name, sizeof(name));
		if (unlinkat(dfd, name, 0) == -1 && errno != ENOENT)
			r = -errno;
	}
	close(dfd);
	return r;
}

/* The deletion event, once the files are gone. */
static void
emit_deleted(struct tlog_partition *p, struct tlog_segment *seg)
{
	struct tlog_event ev = tlog_seg_event(seg, TLOG_EV_DELETE,
	    tlog_ctx_now(p->ctx));

	ev.trigger = seg->sealed_by;
	ev.rule = seg->rule;
	TLOG_METRIC_ADD(p->ctx, deletions[seg->rule], 1);
	__atomic_add_fetch(&p->ctx->ckpt_changes, 1, __ATOMIC_RELAXED);
	TLOG_METRIC_ADD(p->ctx, deleted_bytes, seg->bytes);
	p->env->emit(p->env->arg, p, &ev);
}

/*
 * Unlinks the files of one detached segment taken off the queue, then
 * records its deletion (only after the unlink succeeded) and drops the
 * queue's reference. On failure the segment goes back in the queue.
 * No engine lock is held.
 */
static int
unlink_seg(struct tlog_queue *q, struct tlog_segment *seg)
{
	struct tlog_partition *p = tlog_seg_part(seg);
	uint64_t disk = tlog_seg_disk(seg) + TLOG_SEG_DISK_EXTRA;
	bool last;
	int r;

	TLOG_HOOK(p->ctx, TLOG_HOOK_UNLINK, p);
	/* The end offset outlives the files it was read from. */
	if ((r = save_end(p, seg->base + seg->records)) == 0) {
		/* Counted freed before the unlink (ctx.h, free_unlinked). */
		__atomic_add_fetch(&p->ctx->free_unlinked, disk,
		    __ATOMIC_RELAXED);
		if ((r = unlink_one(seg)) != 0)
			__atomic_sub_fetch(&p->ctx->free_unlinked, disk,
			    __ATOMIC_RELAXED);
	}
	if (r != 0) {
		char where[TLOG_SEG_WHERE_MAX];

		tlog_seg_where(seg, where, sizeof(where));
		tlog_ctx_log_err(p->ctx, "%s: cannot delete: %s; will retry",
		    where, strerror(-r));
		pthread_mutex_lock(&q->ctx->work_lock);
		TAILQ_INSERT_TAIL(&q->unlinkq, seg, link);
		q->nunlink++;
		pthread_cond_broadcast(&q->cond);
		pthread_mutex_unlock(&q->ctx->work_lock);
		return r;
	}
	tlog_seg_unlinked(seg);
	pthread_mutex_lock(&q->ctx->work_lock);
	last = __atomic_sub_fetch(&p->pending_unlinks, 1,
	    __ATOMIC_RELEASE) == 0;
	__atomic_sub_fetch(&p->pending_bytes, tlog_seg_disk(seg),
	    __ATOMIC_RELAXED);
	__atomic_sub_fetch(&q->pending_bytes, tlog_seg_disk(seg),
	    __ATOMIC_RELAXED);
	/* Appends waiting for free space wait on q->cond for this. */
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->ctx->work_lock);
	emit_deleted(p, seg);
	/* Nothing of p is left on disk: partition.cleanup.ms may take it
	 * (doc/reaper.md). */
	if (last && tlog_part_conf(p, TLOG_PARTITION_CLEANUP_MS) >= 0)
		tlog_part_resched(p);
	tlog_segment_put(seg);
	return 0;
}

int
tlog_unlink_pending(struct tlog_queue *q, int max)
{
	struct tlog_segment *seg;
	size_t budget;
	int done = 0;

	pthread_mutex_lock(&q->ctx->work_lock);
	budget = max > 0 ? (size_t)max : q->nunlink;
	pthread_mutex_unlock(&q->ctx->work_lock);
	while (budget-- > 0) {
		pthread_mutex_lock(&q->ctx->work_lock);
		if ((seg = TAILQ_FIRST(&q->unlinkq)) != NULL) {
			TAILQ_REMOVE(&q->unlinkq, seg, link);
			q->nunlink--;
		}
		pthread_mutex_unlock(&q->ctx->work_lock);
		if (seg == NULL)
			break;
		if (unlink_seg(q, seg) == 0)
			done++;
	}
	return done;
}

/*
 * So rm -r of a partition works at once after its segments were deleted
 * (limit -1), and the size ceiling holds on disk (limit >= 0: on the
 * appender's thread, through the same unlink_seg as the unlinker's). A
 * failed unlink is requeued and ends it: an append never waits on a
 * backing store that refuses unlinks.
 */
int
tlog_unlink_drain(struct tlog_queue *q, struct tlog_partition *p,
    int64_t limit)
{
	struct tlog_segment *seg;
	bool hooked = limit >= 0;
	int r = 0;

	for (;;) {
		pthread_mutex_lock(&q->ctx->work_lock);
		if (p->pending_unlinks == 0 || (limit >= 0 &&
		    __atomic_load_n(&p->pending_bytes, __ATOMIC_RELAXED) <=
		    (uint64_t)limit)) {
			pthread_mutex_unlock(&q->ctx->work_lock);
			break;
		}
		TAILQ_FOREACH(seg, &q->unlinkq, link)
			if (seg->sd == &p->sd)
				break;
		if (seg != NULL) {
			TAILQ_REMOVE(&q->unlinkq, seg, link);
			q->nunlink--;
			pthread_mutex_unlock(&q->ctx->work_lock);
			if ((r = unlink_seg(q, seg)) != 0)
				break;
			continue;
		}
		if (!hooked) {
			pthread_mutex_unlock(&q->ctx->work_lock);
			TLOG_HOOK(p->ctx, TLOG_HOOK_RMDIR_WAIT, p);
			hooked = true;
			continue;
		}
		/* In flight in another thread, which broadcasts when it is
		 * done (or puts it back in the queue). */
		pthread_cond_wait(&q->cond, &q->ctx->work_lock);
		pthread_mutex_unlock(&q->ctx->work_lock);
	}
	/* The ceiling's: the unlinker thread sends the kernel its notices. */
	if (limit >= 0)
		tlog_queue_wakeup(q);
	return r;
}
