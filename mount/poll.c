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
 * started (the reader opens `current` again). A handle that is not
 * ready keeps the kernel's poll handle on its partition's wait list;
 * an append through any handle of the partition, a seal or deletion
 * of one of its segments, and its removal wake every waiter of the
 * partition, each once.
 *
 * No lost wake-up: a poll puts the handle on the list (and counts it in
 * fs->npolled) before it reads the segment's state under the partition
 * lock, and an append looks at npolled only after that lock is dropped,
 * so either the poll sees the append or the append sees the waiter.
 */
#include "config.h"

#include <poll.h>
#include <stdlib.h>

#include "mount.h"

#define TL_WAIT_BUCKETS 1024	/* wait lists, by partition inode */

int
tl_poll_init(struct tl_fs *fs)
{
	pthread_mutex_init(&fs->plock, NULL);
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
	struct fuse_pollhandle *ph;
	struct tl_handle **pp, *h;

	/* After the append dropped the partition lock (see the top). */
	if (__atomic_load_n(&fs->npolled, __ATOMIC_SEQ_CST) == 0)
		return;
	/* Notified under the lock, so that tl_poll_halt knows no notice
	 * is under way once it has the lock. A notice is one write to
	 * the device; one for a file closed since, or whose poller left,
	 * is harmless to the kernel. */
	pthread_mutex_lock(&fs->plock);
	pp = bucket(fs, part_ino);
	while ((h = *pp) != NULL) {
		if (h->part_ino != part_ino) {
			pp = &h->wnext;
			continue;
		}
		ph = unwait_locked(fs, h);
		(void)fuse_lowlevel_notify_poll(ph);
		fuse_pollhandle_destroy(ph);
	}
	pthread_mutex_unlock(&fs->plock);
}

void
tl_poll_halt(struct tl_fs *fs)
{
	struct tl_handle *h;
	size_t i;

	pthread_mutex_lock(&fs->plock);
	fs->poll_halted = true;
	for (i = 0; i < TL_WAIT_BUCKETS; i++)
		while ((h = fs->waits[i]) != NULL)
			fuse_pollhandle_destroy(unwait_locked(fs, h));
	pthread_mutex_unlock(&fs->plock);
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
	unsigned want = fi->poll_events, ev;

	(void)ino;
	if (ph != NULL) {
		pthread_mutex_lock(&fs->plock);
		if (h->part == NULL || fs->poll_halted) {
			/* .tlogfs/metrics is always readable; a stopping
			 * daemon wakes nobody. */
			pthread_mutex_unlock(&fs->plock);
			fuse_pollhandle_destroy(ph);
			ph = NULL;
		} else {
			old = unwait_locked(fs, h);
			pp = bucket(fs, h->part_ino);
			h->wnext = *pp;
			*pp = h;
			h->ph = ph;
			__atomic_add_fetch(&fs->npolled, 1, __ATOMIC_SEQ_CST);
			pthread_mutex_unlock(&fs->plock);
			if (old != NULL)
				fuse_pollhandle_destroy(old);
		}
	}
	ev = ready(h);
	/* Ready now: no wake-up is needed for this poll (unless a later
	 * poll of the same handle put its own in place since). */
	if (ph != NULL && (ev & (want | POLLHUP)) != 0) {
		pthread_mutex_lock(&fs->plock);
		old = h->ph == ph ? unwait_locked(fs, h) : NULL;
		pthread_mutex_unlock(&fs->plock);
		if (old != NULL)
			fuse_pollhandle_destroy(old);
	}
	fuse_reply_poll(req, ev);
}
