/*
 * notify.c - what the kernel is told, and the unlinker thread that
 * tells it.
 *
 * A deleted segment (by the reaper, the size ceiling or rm) must leave
 * the kernel's cache at once, so that ls and stat never show it
 * (doc/design.md §4). The store's event hook queues the entry's
 * deletion and the unlinker thread sends it, never a request handler:
 * libfuse forbids entry notifications in the path of a related
 * request, which could deadlock on the kernel's inode locks.
 * Attribute-only invalidations take no such lock and are sent at once.
 * The same thread unlinks the files of detached segments, writes the
 * footers of sealed ones and compresses them (compression.type), so
 * that no request waits for that I/O
 * (doc/architecture.md, "The data's path"), and writes the periodic
 * checkpoint (tlog_store_checkpoint_tick).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "mount.h"

void
tl_notify_init(struct tl_fs *fs)
{
	pthread_mutex_init(&fs->nlock, NULL);
	STAILQ_INIT(&fs->notes);
}

static void
queue_note(struct tl_fs *fs, uint64_t parent, uint64_t child,
    const char *name)
{
	struct tl_note *note;

	if ((note = calloc(1, sizeof(*note))) == NULL)
		return;		/* the kernel's cache times out by itself */
	note->parent = parent;
	note->child = child;
	strlcpy(note->name, name, sizeof(note->name));
	pthread_mutex_lock(&fs->nlock);
	STAILQ_INSERT_TAIL(&fs->notes, note, link);
	pthread_mutex_unlock(&fs->nlock);
	/* The unlinker thread sends it: never from a request handler. */
	tlog_store_wakeup(fs->store);
}

/*
 * Drops the kernel's cached attributes of a partition's files, at once,
 * so that the next stat sees the new mode or owner. Safe inside a
 * request: attribute-only invalidation (offset -1) takes no inode or
 * page lock, unlike entry notifications, which are queued instead.
 */
void
tl_inval_children(struct tl_fs *fs, struct tl_node *pn)
{
	uint64_t inos[256];
	size_t i, k;

	k = tl_node_children(fs, pn, inos, sizeof(inos) / sizeof(inos[0]));
	for (i = 0; i < k; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, inos[i], -1, 0);
}

/* .tlogfs/ and all below it take the root's owner and group: drop the
 * attributes the kernel cached (a sealed event segment's for a minute). */
void
tl_inval_meta(struct tl_fs *fs)
{
	struct tl_node *en;
	uint64_t ino;

	fuse_lowlevel_notify_inval_inode(fs->se, TL_META_INO, -1, 0);
	fuse_lowlevel_notify_inval_inode(fs->se, TL_METRICS_INO, -1, 0);
	if (fs->events == NULL)
		return;
	ino = tlog_partition_ino(fs->events);
	fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	if ((en = tl_node_find(fs, ino)) != NULL)
		tl_inval_children(fs, en);
}

void
tl_event(void *arg, const struct tlog_event *ev)
{
	struct tl_fs *fs = arg;
	char name[32];

	/* A seal, a deletion or a removal: its waiters look again, and
	 * so do those of .tlogfs/events, which recorded it. */
	tl_poll_wake(fs, ev->partition_ino);
	if (fs->events != NULL)
		tl_poll_wake(fs, tlog_partition_ino(fs->events));
	/* A partition removed by partition.cleanup.ms leaves its topic's
	 * entries too. */
	if (ev->kind == TLOG_EV_PART_DELETE) {
		queue_note(fs, ev->topic_ino, ev->partition_ino, ev->partition);
		return;
	}
	/* Seals need no notice: `current` is never cached, and a sealed
	 * segment's name was never looked up successfully before. */
	if (ev->kind != TLOG_EV_DELETE)
		return;
	snprintf(name, sizeof(name), "%020" PRIu64 ".log", ev->base);
	queue_note(fs, ev->partition_ino, ev->segment_ino | TL_SEALED_BIT,
	    name);
}

/* Sends the queued notifications; holds no lock while sending. */
static void
send_notes(struct tl_fs *fs)
{
	struct tl_note *note;
	int r;

	for (;;) {
		/* Stopping: the loop answers nothing any more, and a notice
		 * could wait for ever for a lock a queued request holds
		 * (tl_notify_halt); the notes are freed with the rest. */
		pthread_mutex_lock(&fs->nlock);
		if (!fs->stop && (note = STAILQ_FIRST(&fs->notes)) != NULL)
			STAILQ_REMOVE_HEAD(&fs->notes, link);
		else
			note = NULL;
		pthread_mutex_unlock(&fs->nlock);
		if (note == NULL)
			return;
#ifdef TLOG_TEST_HOOKS
		if (getenv("TLOGFS_TEST_STOP_GATE") != NULL)
			fprintf(stderr, "tlogfs: test: a notice for %s\n",
			    note->name);
#endif
		r = fuse_lowlevel_notify_delete(fs->se, note->parent,
		    note->child, note->name, strlen(note->name));
		/* ENOTEMPTY: a removed partition's directory still has
		 * children in the kernel's cache; its entry is dropped. */
		if (r == -ENOSYS || r == -ENOTEMPTY)
			r = fuse_lowlevel_notify_inval_entry(fs->se,
			    note->parent, note->name, strlen(note->name));
		/* ENOENT: the kernel had no such entry cached. */
		if (r != 0 && r != -ENOENT && fs->debug)
			tlog_log(fs->store, LOG_DEBUG, "notify %s: %s",
			    note->name, strerror(-r));
		free(note);
	}
}

static void *
tl_unlinker(void *arg)
{
	struct tl_fs *fs = arg;
#ifdef TLOG_TEST_HOOKS
	const char *e = getenv("TLOGFS_TEST_UNLINK_DELAY_MS");
	/* Test builds only: an unlinker that lags, to show that the size
	 * ceiling holds on disk without its help (ceiling.sh). */
	long delay = e != NULL ? strtol(e, NULL, 10) : 0;
#else
	const long delay = 0;
#endif
	size_t queued;
	bool stop;
	int done, i;

	for (;;) {
		pthread_mutex_lock(&fs->nlock);
		stop = fs->stop;
		pthread_mutex_unlock(&fs->nlock);
		if (stop)
			break;
		queued = tlog_store_unlink_wait(fs->store,
		    tlog_store_checkpoint_tick(fs->store));
		if (delay > 0 && delay < 10000)
			usleep((useconds_t)delay * 1000);
		done = tlog_store_unlink_pending(fs->store, 64);
		/* Footers of sealed segments, after their data is synced. */
		done += tlog_store_flush_pending(fs->store, 64);
		/* Then one slice of compression (a few frames), so unlinks
		 * and footers never wait for a whole segment's. */
		done += tlog_store_compress_pending(fs->store, 1);
		send_notes(fs);
		/* Work that cannot be done now (an unlink waits until the end
		 * offset can be saved; the engine logs why, once) is tried
		 * again a second later, not in a busy loop. */
		for (i = 0; queued > 0 && done <= 0 && i < 10; i++) {
			pthread_mutex_lock(&fs->nlock);
			stop = fs->stop;
			pthread_mutex_unlock(&fs->nlock);
			if (stop)
				break;
			usleep(100000);
		}
	}
	pthread_mutex_lock(&fs->nlock);
	fs->unlinker_done = true;
	pthread_mutex_unlock(&fs->nlock);
	return NULL;
}

/* Starts the unlinker thread: 0, or an errno. */
int
tl_notify_start(struct tl_fs *fs)
{
	int r;

	if ((r = pthread_create(&fs->unlinker, NULL, tl_unlinker, fs)) != 0)
		return r;
	fs->unlinker_started = true;
	return 0;
}

void
tl_notify_halt(struct tl_fs *fs)
{
	pthread_mutex_lock(&fs->nlock);
	fs->stop = true;
	pthread_mutex_unlock(&fs->nlock);
	tlog_store_wakeup(fs->store);
}

bool
tl_notify_done(struct tl_fs *fs)
{
	bool done;

	if (!fs->unlinker_started)
		return true;
	pthread_mutex_lock(&fs->nlock);
	done = fs->unlinker_done;
	pthread_mutex_unlock(&fs->nlock);
	return done;
}

void
tl_notify_stop(struct tl_fs *fs)
{
	if (!fs->unlinker_started)
		return;
	tl_notify_halt(fs);
	pthread_join(fs->unlinker, NULL);
	fs->unlinker_started = false;
}

void
tl_notify_free(struct tl_fs *fs)
{
	struct tl_note *note;

	while ((note = STAILQ_FIRST(&fs->notes)) != NULL) {
		STAILQ_REMOVE_HEAD(&fs->notes, link);
		free(note);
	}
}
