/*
 * poll.c - readers wake at once (doc/design.md, "Readers wake at once"):
 * poll(2), select(2) and epoll on an open partition file.
 *
 * A handle that reads a segment or `current` is readable when there is
 * data past the end of its last read, or when waiting can bring it
 * nothing more: its segment sealed (the reader moves on to the next
 * one), its segment deleted, its partition removed or renamed over
 * (readable and hung up: a read then says what is left), or, for the
 * empty `current` of a partition without records, a first segment
 * started (the reader opens `current` again). A poll answered ready
 * owes no wake-up and touches no wait list; one answered not ready
 * (armed) keeps the kernel's poll handle on its partition's wait list,
 * and an append through any handle of the partition, a seal or
 * deletion of one of its segments, and its removal wake every armed
 * waiter of the partition once, and disarm it. So an append costs one
 * notice per follower waiting, whatever the followers' polls in
 * between (each wake-up makes the kernel poll again, answered ready).
 *
 * No lost wake-up: an armed poll puts the handle on the list (and
 * counts it in fs->npolled) before it reads the segment's state again
 * under the partition lock, and an append looks at npolled only after
 * that lock is dropped, so either the poll sees the append or the
 * append sees the waiter.
 *
 * The notices are sent after the writer's reply (file.c) and outside
 * fs->plock: a follower woken by the first of them, polling again while
 * the rest are sent, never waits for the list. fs->nlive, held for
 * reading while notices are under way, lets tl_poll_halt wait for them.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mount.h"

#define TL_WAIT_BUCKETS 1024	/* wait lists, by partition inode */

int
tl_poll_init(struct tl_fs *fs)
{
	pthread_mutex_init(&fs->plock, NULL);
	pthread_rwlock_init(&fs->nlive, NULL);
	fs->waits = calloc(TL_WAIT_BUCKETS, sizeof(*fs->waits));
	return fs->waits == NULL ? -1 : 0;
}

void
tl_poll_free(struct tl_fs *fs)
{
	if (fs->waits == NULL)
		return;		/* never made */
	free(fs->waits);
	fs->waits = NULL;
	pthread_mutex_destroy(&fs->plock);
	pthread_rwlock_destroy(&fs->nlive);
}

static struct tl_handle **
bucket(struct tl_fs *fs, uint64_t part_ino)
{
	return &fs->waits[(part_ino * 0x9e3779b97f4a7c15ULL) >> 54];
}

/* Takes h off its wait list (fs->plock held); its poll handle, if any,
 * is returned for the caller to notify or destroy. */
static struct fuse_pollhandle *
unwait_locked(struct tl_fs *fs, struct tl_handle *h)
{
	struct fuse_pollhandle *ph = h->ph;
	struct tl_handle **pp;

	if (ph == NULL)
		return NULL;
	for (pp = bucket(fs, h->part_ino); *pp != h; pp = &(*pp)->wnext)
		;
	*pp = h->wnext;
	h->wnext = NULL;
	h->ph = NULL;
	__atomic_sub_fetch(&fs->npolled, 1, __ATOMIC_SEQ_CST);
	return ph;
}

void
tl_poll_forget(struct tl_fs *fs, struct tl_handle *h)
{
	struct fuse_pollhandle *ph;

	pthread_mutex_lock(&fs->plock);
	ph = unwait_locked(fs, h);
	pthread_mutex_unlock(&fs->plock);
	if (ph != NULL)
		fuse_pollhandle_destroy(ph);
}

void
tl_poll_wake(struct tl_fs *fs, uint64_t part_ino)
{
	struct fuse_pollhandle *some[64], **phs = some, **more;
	struct tl_handle **pp, *h;
	size_t i, n = 0, cap = 64;

	/* After the append dropped the partition lock (see the top). */
	if (__atomic_load_n(&fs->npolled, __ATOMIC_SEQ_CST) == 0)
		return;
	pthread_rwlock_rdlock(&fs->nlive);
	/* The armed waiters of the partition, disarmed: a poll arming
	 * one of them again meanwhile is owed the next append's. */
	pthread_mutex_lock(&fs->plock);
	pp = bucket(fs, part_ino);
	while ((h = *pp) != NULL) {
		if (h->part_ino != part_ino) {
			pp = &h->wnext;
			continue;
		}
		if (n == cap) {
			more = reallocarray(phs == some ? NULL : phs, cap * 2,
			    sizeof(*phs));
			if (more == NULL)
				break;	/* the rest wake at the next one */
			if (phs == some)
				memcpy(more, some, sizeof(some));
			phs = more;
			cap *= 2;
		}
		phs[n++] = unwait_locked(fs, h);
	}
	pthread_mutex_unlock(&fs->plock);
	/* A notice is one write to the device; one for a file closed
	 * since, or whose poller left, is harmless to the kernel. */
	for (i = 0; i < n; i++) {
		(void)fuse_lowlevel_notify_poll(phs[i]);
		fuse_pollhandle_destroy(phs[i]);
	}
	pthread_rwlock_unlock(&fs->nlive);
	__atomic_add_fetch(&fs->poll_wakeups, n, __ATOMIC_RELAXED);
	if (phs != some)
		free(phs);
}

void
tl_poll_halt(struct tl_fs *fs)
{
	struct tl_handle *h;
	size_t i;

	/* Once no notice is under way, none comes: the lists are empty
	 * and stay so. */
	pthread_rwlock_wrlock(&fs->nlive);
	pthread_mutex_lock(&fs->plock);
	fs->poll_halted = true;
	for (i = 0; i < TL_WAIT_BUCKETS; i++)
		while ((h = fs->waits[i]) != NULL)
			fuse_pollhandle_destroy(unwait_locked(fs, h));
	pthread_mutex_unlock(&fs->plock);
	pthread_rwlock_unlock(&fs->nlive);
}

/* What h could do now, of POLLIN and POLLOUT (see the top). */
static unsigned
ready(struct tl_handle *h)
{
	struct tlog_seginfo info;
	struct tlog_segment *seg;
	unsigned ev = h->w != NULL ? POLLOUT | POLLWRNORM : 0;

	if (h->text != NULL)
		return POLLIN | POLLRDNORM;
	if (h->part != NULL && tlog_partition_removed(h->part))
		return ev | POLLIN | POLLRDNORM | POLLHUP;
	if (h->seg == NULL) {
		if (h->part == NULL || h->w != NULL)
			return ev;
		if ((seg = tlog_segment_get_active(h->part)) == NULL)
			return ev;
		tlog_segment_put(seg);
		return ev | POLLIN | POLLRDNORM;
	}
	tlog_segment_info(h->seg, &info);
	if (info.sealed || tlog_segment_dead(h->seg) ||
	    info.bytes > __atomic_load_n(&h->pos, __ATOMIC_RELAXED))
		ev |= POLLIN | POLLRDNORM;
	return ev;
}

void
tl_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
    struct fuse_pollhandle *ph)
{
	struct tl_handle *h = (struct tl_handle *)(uintptr_t)fi->fh;
	struct tl_fs *fs = tl_fs_of(req);
	struct fuse_pollhandle *old = NULL;
	struct tl_handle **pp;
	unsigned want = fi->poll_events | POLLHUP, ev;

	(void)ino;
	ev = ready(h);
	/* Ready, or no wake-up asked for: nothing is owed. */
	if (ph == NULL || (ev & want) != 0) {
		if (ph != NULL)
			fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, ev);
		return;
	}
	pthread_mutex_lock(&fs->plock);
	if (h->part == NULL || fs->poll_halted) {
		/* .tlogfs/metrics is always readable; a stopping daemon
		 * wakes nobody. */
		pthread_mutex_unlock(&fs->plock);
		fuse_pollhandle_destroy(ph);
		fuse_reply_poll(req, ev);
		return;
	}
	old = unwait_locked(fs, h);
	pp = bucket(fs, h->part_ino);
	h->wnext = *pp;
	*pp = h;
	h->ph = ph;
	__atomic_add_fetch(&fs->npolled, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&fs->plock);
	__atomic_add_fetch(&fs->poll_waits, 1, __ATOMIC_RELAXED);
	if (old != NULL)
		fuse_pollhandle_destroy(old);
	/* Armed: look again, so that what came between the two looks
	 * is not missed (see the top). */
	ev = ready(h);
	if ((ev & want) != 0) {
		pthread_mutex_lock(&fs->plock);
		old = h->ph == ph ? unwait_locked(fs, h) : NULL;
		pthread_mutex_unlock(&fs->plock);
		if (old != NULL)
			fuse_pollhandle_destroy(old);
	}
	fuse_reply_poll(req, ev);
}

/* .tlogfs/metrics: the store's counters, then the wake-ups'. */
int
tl_metrics_format(struct tl_fs *fs, char **text, size_t *len)
{
	uint64_t waits = __atomic_load_n(&fs->poll_waits, __ATOMIC_RELAXED);
	uint64_t wakeups = __atomic_load_n(&fs->poll_wakeups,
	    __ATOMIC_RELAXED);
	char *t;
	int r, n;

	if ((r = tlog_metrics_format(fs->store, text, len)) != 0)
		return r;
	n = asprintf(&t, "%.*s"
	    "# HELP tlogfs_poll_waits_total Polls of partition files "
	    "found not ready and put on a wait list (armed).\n"
	    "# TYPE tlogfs_poll_waits_total counter\n"
	    "tlogfs_poll_waits_total %" PRIu64 "\n"
	    "# HELP tlogfs_poll_wakeups_total Wake-ups sent to polls of "
	    "partition files.\n"
	    "# TYPE tlogfs_poll_wakeups_total counter\n"
	    "tlogfs_poll_wakeups_total %" PRIu64 "\n",
	    (int)*len, *text, waits, wakeups);
	free(*text);
	*text = NULL;
	if (n == -1)
		return -ENOMEM;
	*text = t;
	*len = (size_t)n;
	return 0;
}
