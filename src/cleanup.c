/*
 * cleanup.c - partition.cleanup.ms (cleanup.h), called by the reaper when
 * the partition is due (doc/reaper.md).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "cleanup.h"
#include "retention.h"

/*
 * The files of an empty active segment, through its partition's
 * directory (tree lock held): nothing is in them, so they go with the
 * directory.
 */
static int
unlink_empty_seg(struct tlog_partition *p, struct tlog_segment *seg)
{
	char name[32];
	int pfd, r = 0;

	if ((pfd = tlog_level_dir_locked(&p->lv)) < 0)
		return pfd;
	tlog_segname_format(seg->base, ".log", name, sizeof(name));
	if (unlinkat(pfd, name, 0) == -1 && errno != ENOENT)
		r = -errno;
	tlog_segname_format(seg->base, ".idx", name, sizeof(name));
	if (r == 0 && unlinkat(pfd, name, 0) == -1 && errno != ENOENT)
		r = -errno;
	close(pfd);
	if (r == 0) {
		TAILQ_REMOVE(&p->segs, seg, link);
		__atomic_sub_fetch(&p->nsegs, 1, __ATOMIC_RELEASE);
		seg->dead = 1;
		tlog_seg_close_files(seg);
	}
	return r;
}

/*
 * Eligibility (tlog_part_cleanup_due_locked, by deletion time: clock.h)
 * is checked again, and the partition marked dead, with both the tree
 * lock (held for writing, as rmdir holds it, so a mkdir of the same name
 * waits and then makes a fresh partition) and the partition lock held:
 * an append either took the partition lock first (it is kept) or finds
 * it dead (ENOENT), and a writer opened after the check writes nothing
 * but ENOENT. Taking a partition lock under the tree lock held for
 * writing breaks the lock order, so it is only tried (an append holding
 * it may be waiting for the tree lock): -EAGAIN, try again later.
 */
int
tlog_reg_part_cleanup(struct tlog_registry *reg, struct tlog_partition *p,
    int64_t now)
{
	char topic[TLOG_NAME_MAX + 1], name[TLOG_NAME_MAX + 1];
	char shown[2 * TLOG_NAME_MAX + 2];
	struct tlog_topic *t = tlog_partition_topic(p);
	struct tlog_event ev = { .kind = TLOG_EV_PART_DELETE, .ts = now };
	struct tlog_segment *seg = NULL;
	int64_t due, last, del = tlog_clock_del_now(&p->ctx->clock);
	int r = 0, tfd = -1;

	if (reg->penv->ctx->ro || p->quiet)
		return 0;
	pthread_mutex_lock(&p->sd.lock);
	due = tlog_part_cleanup_due_locked(p);
	pthread_mutex_unlock(&p->sd.lock);
	if (due < 0 || del < due)
		return 0;
	TLOG_HOOK(p->ctx, TLOG_HOOK_CLEANUP, p);
	pthread_rwlock_wrlock(&reg->root->tree->lock);
	if (tlog_level_dead(&p->lv))
		goto out;
	if (pthread_mutex_trylock(&p->sd.lock) != 0) {
		r = -EAGAIN;
		goto out;
	}
	due = tlog_part_cleanup_due_locked(p);
	last = p->last_ts > p->born ? p->last_ts : p->born;
	if (due < 0 || del < due)
		goto unlock;
	strlcpy(topic, t->lv.name, sizeof(topic));
	strlcpy(name, p->lv.name, sizeof(name));
	if ((tfd = tlog_level_dir_locked(&t->lv)) < 0) {
		r = tfd;
		goto unlock;
	}
	if ((seg = TAILQ_FIRST(&p->segs)) != NULL &&
	    (r = unlink_empty_seg(p, seg)) != 0) {
		seg = NULL;
		goto unlock;
	}
	/* A stray in the way is named once per partition, not at every
	 * attempt (one each partition.cleanup.ms). */
	snprintf(shown, sizeof(shown), "%s/%s", topic, name);
	if ((r = tlog_reg_remove_dir(reg, tfd, name, p->cleanup_warned ? NULL :
	    shown)) == 0) {
		__atomic_store_n(&p->lv.dead, true, __ATOMIC_RELEASE);
		RB_REMOVE(tlog_part_tree, &t->parts, p);
		r = 1;
	} else if (r == -ENOTEMPTY)
		p->cleanup_warned = true;
unlock:
	pthread_mutex_unlock(&p->sd.lock);
out:
	pthread_rwlock_unlock(&reg->root->tree->lock);
	tlog_segment_put(seg);
	if (r != 1) {
		if (tfd >= 0)
			close(tfd);
		return r;
	}
	tlog_part_unsched(p);
	tlog_reg_sync_parent(reg, tfd, name);
	tlog_ctx_log(p->ctx, LOG_INFO, "removed partition %s/%s: empty, "
	    "unwritten for %" PRId64 " ms (partition.cleanup.ms %" PRId64
	    ")", topic, name, now - last,
	    tlog_part_conf(p, TLOG_PARTITION_CLEANUP_MS));
	ev.max_ts = last;
	p->env->emit(p->env->arg, p, &ev);
	tlog_partition_put(p);		/* the tree's reference */
	return 1;
}
