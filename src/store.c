/*
 * store.c - an open store (store.h): open and close, in order (the
 * store's own files are storefiles.c's); the hook the partitions reach
 * the events through, and the scheduler's slot; and the
 * calls of tlog.h that the store answers by delegating to its registry,
 * its queues and its events partition.
 */
#include "config.h"

#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "checkpoint.h"
#include "compress.h"
#include "flush.h"
#include "free.h"
#include "reaper.h"
#include "store.h"
#include "storefiles.h"
#include "unlink.h"

/* ---- what the store answers itself ---- */

int64_t
tlog_now(struct tlog_store *s)
{
	return tlog_ctx_now(s != NULL ? &s->ctx : NULL);
}

void
tlog_log(struct tlog_store *s, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tlog_sink_vlog(s != NULL ? &s->ctx.log : NULL, prio, fmt, ap);
	va_end(ap);
}

const struct tlog_conf *
tlog_store_conf(struct tlog_store *s)
{
	return tlog_level_conf_of(&s->root);
}

const char *
tlog_store_id(const struct tlog_store *s)
{
	return s->id;
}

int
tlog_store_statvfs(struct tlog_store *s, struct statvfs *sv)
{
	return fstatvfs(s->tree.dirfd, sv) == -1 ? -errno : 0;
}

static void
store_free(struct tlog_store *s)
{
	if (s == NULL)
		return;
	tlog_reaper_detach(s);	/* it holds partitions */
	/* Detached segments not yet unlinked are simply released; their
	 * files are found again (and kept) at the next open. */
	tlog_queue_destroy(&s->q);
	tlog_reg_destroy(&s->reg);
	tlog_events_close(&s->ev);
	tlog_ckpt_free(s->rc.ckpt);
	if (s->lockfd != -1)
		close(s->lockfd);
	if (s->tree.dirfd != -1)
		close(s->tree.dirfd);
	tlog_level_destroy(&s->root);
	pthread_rwlock_destroy(&s->tree.lock);
	pthread_mutex_destroy(&s->admin_lock);
	tlog_ctx_destroy(&s->ctx);
	tlog_fdbudget_destroy(&s->fdb);
	free(s->path);
	free(s);
}

/* After the open's syncfs: each live segment of p is synced as far as
 * it was written. */
static void
mark_synced(struct tlog_partition *p)
{
	struct tlog_segment *seg;

	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link) {
		if (seg->live == NULL)
			continue;
		seg->live->sgen = seg->live->wgen;
		tlog_seg_idle(seg);
	}
	pthread_mutex_unlock(&p->sd.lock);
}

/* ---- the hook of the log layer ---- */

/* A seal or a deletion: the names filled in, recorded in .tlogfs/events
 * and passed to the opener's hook. No engine lock is held. */
static void
store_emit(void *arg, struct tlog_partition *p, struct tlog_event *ev)
{
	char topic[TLOG_NAME_MAX + 1], part[TLOG_NAME_MAX + 1];
	struct tlog_store *s = arg;

	if (s->ctx.opts.event == NULL && (s->ev.p == NULL || p == s->ev.p))
		return;
	pthread_rwlock_rdlock(&p->lv.tree->lock);
	strlcpy(topic, p->lv.parent->name, sizeof(topic));
	strlcpy(part, p->lv.name, sizeof(part));
	pthread_rwlock_unlock(&p->lv.tree->lock);
	ev->topic = topic;
	ev->partition = part;
	ev->partition_ino = p->lv.ino;
	ev->topic_ino = p->lv.parent->ino;
	tlog_events_record(&s->ev, p, ev);
	if (s->ctx.opts.event != NULL)
		s->ctx.opts.event(s->ctx.opts.event_arg, ev);
}

void
tlog_store_set_sched(struct tlog_store *s, const struct tlog_sched_ops *ops,
    void *arg)
{
	if (arg != NULL)
		s->penv.sched = ops;
	__atomic_store_n(&s->penv.sched_arg, arg, __ATOMIC_RELEASE);
}

void *
tlog_store_sched(struct tlog_store *s)
{
	return __atomic_load_n(&s->penv.sched_arg, __ATOMIC_ACQUIRE);
}

void
tlog_store_free_changed(struct tlog_store *s)
{
	void *arg = tlog_store_sched(s);

	__atomic_store_n(&s->ctx.free_check, 1, __ATOMIC_RELAXED);
	if (arg != NULL)
		tlog_free_pressure(arg);
}

void
tlog_store_resched(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p)
{
	struct tlog_partition **v;
	size_t n, i;

	if (p != NULL) {
		tlog_part_resched(p);
		return;
	}
	/* The store's settings govern the events partition too. */
	if (t == NULL && s->ev.p != NULL)
		tlog_part_resched(s->ev.p);
	if (tlog_reg_partitions(&s->reg, &v, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		if (t == NULL || tlog_partition_topic(v[i]) == t)
			tlog_part_resched(v[i]);
		tlog_partition_put(v[i]);
	}
	free(v);
}

/* Loads every topic and partition directory and recovers partitions,
 * which it leaves in *v, referenced (put each, free *v). */
static int
store_load(struct tlog_store *s, struct tlog_partition ***v, size_t *n)
{
	int r;

	if ((r = tlog_reg_load(&s->reg)) != 0)
		return r;
	/* Said for each: refused read-only (tlog_level_load_attr). */
	if (s->ctx.attr_unsafe)
		return -EPERM;
	if ((r = tlog_reg_partitions(&s->reg, v, n)) != 0)
		return r;
	if (__atomic_load_n(&s->ctx.attr_on_dir, __ATOMIC_RELAXED))
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: its file system "
		    "keeps no user extended attributes: the modes and owners "
		    "of topics and partitions stay on their own directories, "
		    "which are then not private (doc/format.md)", s->path);
	if (s->ctx.attr_moved > 0) {
		/* Durable before anything relies on it. */
		if (syncfs(s->tree.dirfd) == -1)
			tlog_ctx_log(&s->ctx, LOG_ERR, "store %s: syncfs: %s",
			    s->path, strerror(errno));
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s: %u topic and "
		    "partition directories are now 0700, the daemon's alone; "
		    "the mount shows their modes and owners as before ("
		    TLOG_ATTR_XATTR ")", s->path, s->ctx.attr_moved);
	}
	tlog_recover_all(*v, *n, &s->rc);
	return 0;
}

/* ---- open and close ---- */

/* A store not open yet: its locks, queues, hooks and levels. */
static struct tlog_store *
store_alloc(const struct tlog_store_opts *opts)
{
	struct tlog_store *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	tlog_ctx_init(&s->ctx, opts);
	s->tree.dirfd = s->lockfd = -1;
	pthread_rwlock_init(&s->tree.lock, NULL);
	pthread_mutex_init(&s->admin_lock, NULL);
	tlog_fdbudget_init(&s->fdb, &s->ctx, s->ctx.opts.max_open_segments,
	    s->ctx.opts.fd_reserve, s->ctx.opts.workers);
	tlog_queue_init(&s->q, &s->ctx);
	s->penv.ctx = &s->ctx;
	s->penv.fdb = &s->fdb;
	s->penv.q = &s->q;
	s->penv.emit = store_emit;
	s->penv.arg = s;
	tlog_level_init(&s->root, &s->tree, NULL, NULL, TLOG_ROOT_INO, NULL);
	tlog_reg_init(&s->reg, &s->root, &s->penv);
	return s;
}

/*
 * Room for the clean stop (doc/format.md, "reserve"): a close writes the
 * checkpoint and the clean mark, which a full disk would refuse, so that
 * the next open would recover as after a crash. The open sets aside
 * twice what the checkpoint takes now (a path, a count and up to 80
 * bytes a segment) plus 1 MiB, in .tlogfs/reserve; the close unlinks it
 * just before it writes them.
 */
#define RESERVE_BASE (1 << 20)
#define RESERVE_PART 280	/* a path of up to 255 bytes, and more */
#define RESERVE_SEG 80

int
tlog_store_open(const char *path, const struct tlog_store_opts *opts,
    struct tlog_store **out, char *err, size_t errlen)
{
	struct tlog_partition **v = NULL;
	struct tlog_store *s;
	char boot[64], prev[64], line[80];
	int64_t newest = -1, now;
	uint64_t want = RESERVE_BASE;
	size_t nv = 0, i;
	int r, n;

	*out = NULL;
	if ((s = store_alloc(opts)) == NULL)
		return -ENOMEM;
	if ((s->path = strdup(path)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	s->tree.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->tree.dirfd == -1) {
		r = -errno;
		snprintf(err, errlen, "store %s: %s", path, strerror(errno));
		goto fail;
	}
	if ((r = tlog_sf_open(s, boot, prev, sizeof(boot), err, errlen)) != 0)
		goto fail;
	tlog_level_load_conf(&s->root, &s->ctx, s->tree.dirfd, "",
	    ".tlogfs/config");
	if ((r = store_load(s, &v, &nv)) != 0 ||
	    (r = tlog_events_open(&s->ev, &s->reg, &s->rc)) != 0) {
		snprintf(err, errlen, "store %s: %s", path, strerror(-r));
		goto fail;
	}
	tlog_ckpt_free(s->rc.ckpt);
	s->rc.ckpt = NULL;
	/* Engine time starts no earlier than the newest stamp stored, so
	 * stamps keep increasing whatever the wall clock says. */
	if (s->ev.p != NULL && s->ev.p->last_ts > newest)
		newest = s->ev.p->last_ts;
	for (i = 0; i < nv; i++)
		if (v[i]->last_ts > newest)
			newest = v[i]->last_ts;
	tlog_clock_anchor(&s->ctx.clock, newest);
	/* The partitions loaded were born (for partition.cleanup.ms) at
	 * engine time read before the clock was anchored, which may since
	 * have moved on to the newest stamp: they count as born now, never
	 * earlier. */
	now = tlog_ctx_now(&s->ctx);
	for (i = 0; i < nv; i++) {
		pthread_mutex_lock(&v[i]->sd.lock);
		if (v[i]->born < now)
			v[i]->born = now;
		pthread_mutex_unlock(&v[i]->sd.lock);
		want += 2 * (RESERVE_PART + RESERVE_SEG *
		    __atomic_load_n(&v[i]->nsegs, __ATOMIC_RELAXED));
	}
	if (!s->ctx.ro)
		tlog_sf_reserve(s, want);
	/*
	 * Recovery's repairs (cuts, rewritten indexes, removed files) are
	 * on disk before the store takes an append; and after a crash,
	 * what the dead daemon wrote may still be only in the page cache.
	 * One syncfs does both, so that neither recovery nor the first
	 * fsync of each partition has to sync file by file.
	 */
	if (!s->ctx.ro && (!s->rc.was_clean || s->rc.repaired)) {
		if (syncfs(s->tree.dirfd) == 0) {
			if (s->ev.p != NULL)
				mark_synced(s->ev.p);
			for (i = 0; i < nv; i++)
				mark_synced(v[i]);
		} else
			tlog_ctx_log(&s->ctx, LOG_ERR, "store %s: syncfs: %s; "
			    "recovery's repairs may not be on disk", path,
			    strerror(errno));
	}
	/* Only now, with every repair on disk: a crash before this point
	 * checks again at the next open. */
	if (!s->ctx.ro && boot[0] != '\0' && strcmp(boot, prev) != 0) {
		n = snprintf(line, sizeof(line), "%s\n", boot);
		if ((r = tlog_write_atomic(s->tree.dirfd, ".tlogfs/boot", line,
		    (size_t)n)) != 0)
			tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot "
			    "record the boot id: %s", path, strerror(-r));
	}
	/* Nothing is scheduled yet: whoever opened the store attaches the
	 * reaper (tlog_reaper_start), which schedules everything then. */
	if (s->ctx.ro && s->rc.repaired)
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s is open read-only: "
		    "recovery's repairs are kept in memory, not written; the "
		    "next read-write open makes them", path);
	*out = s;
	r = 0;
	s = NULL;
fail:
	while (nv > 0)
		tlog_partition_put(v[--nv]);
	free(v);
	store_free(s);
	return r;
}

int
tlog_store_close(struct tlog_store *s)
{
	struct tlog_partition **v = NULL;
	size_t n = 0, i;
	uint64_t nonce;
	char line[24];
	bool bad = false;
	int fd, r;

	if (s == NULL)
		return 0;
	/* A reader wrote nothing: nothing to make durable, no mark. */
	if (s->ctx.ro) {
		store_free(s);
		return 0;
	}
	tlog_store_unlink_pending(s, 0);
	tlog_reaper_detach(s);	/* it holds partitions */
	/* The room set aside at open is for what follows (RESERVE_BASE). */
	(void)unlinkat(s->tree.dirfd, ".tlogfs/reserve", 0);
	tlog_store_flush_pending(s, 0);
	/* The partitions' syncs run with the tree unlocked: each partition
	 * is held by a reference. */
	if (tlog_reg_partitions(&s->reg, &v, &n) != 0)
		bad = true;
	for (i = 0; i < n; i++)
		if (tlog_part_close(v[i]) != 0)
			bad = true;
	if (s->ev.p != NULL && tlog_part_close(s->ev.p) != 0)
		bad = true;
	/* The partitions' syncs leave the seal footers unsynced (segio.c:
	 * recovery can rebuild them), but the next open trusts what a
	 * clean close leaves: one syncfs puts the footers, and anything
	 * else of the store still dirty, on the disk before the mark. */
	if (!bad && syncfs(s->tree.dirfd) == -1) {
		tlog_ctx_log(&s->ctx, LOG_ERR, "store %s: cannot sync the "
		    "file system at close: %s", s->path, strerror(errno));
		bad = true;
	}
	/* What the next open needs of every segment, so that it reads
	 * no index (checkpoint.h); without it, the next open reads them
	 * all, and no older checkpoint may stay to be trusted. */
	nonce = ((uint64_t)arc4random() << 32) | arc4random();
	if (!bad && (r = tlog_ckpt_write(s->tree.dirfd, nonce, false, v, n,
	    s->ev.p)) != 0) {
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot write %s: "
		    "%s; the next open reads every segment's index", s->path,
		    TLOG_CKPT_PATH, strerror(-r));
		if (unlinkat(s->tree.dirfd, TLOG_CKPT_PATH, 0) == -1 &&
		    errno != ENOENT && errno != EISDIR)
			bad = true;
	}
	for (i = 0; i < n; i++)
		tlog_partition_put(v[i]);
	free(v);
	/* The mark says everything before it is on disk: only then. Created
	 * afresh (O_EXCL never follows a link, never opens a FIFO or a
	 * device): whatever was planted at the name while the store ran is
	 * unlinked, never written through. */
	if (bad) {
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: not everything "
		    "reached the disk; no clean mark", s->path);
	} else if (unlinkat(s->tree.dirfd, ".tlogfs/clean", 0) == -1 &&
	    errno != ENOENT) {
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot replace "
		    ".tlogfs/clean: %s; no clean mark: the next open "
		    "recovers as after a crash", s->path, strerror(errno));
		bad = true;
	} else if ((fd = openat(s->tree.dirfd, ".tlogfs/clean", O_WRONLY |
	    O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) == -1) {
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot create "
		    ".tlogfs/clean: %s; no clean mark: the next open recovers "
		    "as after a crash", s->path, strerror(errno));
		bad = true;
	} else {
		n = (size_t)snprintf(line, sizeof(line), "%016" PRIx64 "\n",
		    nonce);
		errno = EIO;	/* a short write sets none */
		if (write(fd, line, n) != (ssize_t)n || fsync(fd) != 0)
			r = -errno;
		else
			r = tlog_fsync_dir(s->tree.dirfd, ".tlogfs");
		if (r != 0) {
			tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot "
			    "write .tlogfs/clean: %s; the next open may "
			    "recover as after a crash", s->path, strerror(-r));
			bad = true;
		}
		close(fd);
	}
	store_free(s);
	return bad ? -1 : 0;
}

/* ---- calls of tlog.h answered by the registry, queues and events ---- */

int
tlog_topic_create(struct tlog_store *s, const char *name,
    struct tlog_topic **out)
{
	return tlog_reg_topic_create(&s->reg, name, out);
}

struct tlog_topic *
tlog_topic_get(struct tlog_store *s, const char *name)
{
	return tlog_reg_topic_get(&s->reg, name);
}

int
tlog_topic_remove(struct tlog_store *s, const char *name)
{
	return tlog_reg_topic_remove(&s->reg, name);
}

int
tlog_topic_rename(struct tlog_store *s, const char *from, const char *to)
{
	return tlog_reg_topic_rename(&s->reg, from, to);
}

int
tlog_topic_list(struct tlog_store *s, struct tlog_dirent **out, size_t *n)
{
	return tlog_reg_topic_list(&s->reg, out, n);
}

int
tlog_store_checkpoint(struct tlog_store *s)
{
	struct tlog_partition **v;
	size_t n, i;
	int r;

	if (s->ctx.ro)
		return 0;
	if ((r = tlog_reg_partitions(&s->reg, &v, &n)) != 0)
		return r;
	r = tlog_ckpt_write(s->tree.dirfd, 0, true, v, n, s->ev.p);
	for (i = 0; i < n; i++)
		tlog_partition_put(v[i]);
	free(v);
	return r;
}

int
tlog_store_checkpoint_tick(struct tlog_store *s)
{
	uint64_t changes = __atomic_load_n(&s->ctx.ckpt_changes,
	    __ATOMIC_RELAXED);
	int64_t now = (int64_t)(tlog_mono_ns() / 1000000);
	int64_t since = now - s->ckpt_ms;
	int r;

	if (s->ctx.ro)
		return -1;
	if (s->ckpt_ms == 0 || (changes != s->ckpt_seen &&
	    (since >= TLOG_CKPT_EVERY_MS || (since >= TLOG_CKPT_MIN_MS &&
	    changes - s->ckpt_seen >= TLOG_CKPT_EVERY_CHANGES)))) {
		/* A failure is retried no sooner than a success would be,
		 * and said once until one is written again. */
		r = tlog_store_checkpoint(s);
		if (r != 0 && !s->ckpt_failing)
			tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot "
			    "write %s: %s; the last one written stays, and "
			    "it is tried again every %d s", s->path,
			    TLOG_CKPT_PATH, strerror(-r),
			    TLOG_CKPT_EVERY_MS / 1000);
		else if (r == 0 && s->ckpt_failing)
			tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s: %s "
			    "written again", s->path, TLOG_CKPT_PATH);
		s->ckpt_failing = r != 0;
		s->ckpt_ms = now > 0 ? now : 1;
		s->ckpt_seen = changes;
		since = 0;
	}
	/* Changes made on other threads (an fsync's flush, the size
	 * ceiling's unlink) wake nobody: looked at once a period. */
	return (int)(since < TLOG_CKPT_EVERY_MS ? TLOG_CKPT_EVERY_MS - since :
	    TLOG_CKPT_EVERY_MS);
}

int
tlog_store_unlink_pending(struct tlog_store *s, int max)
{
	return tlog_unlink_pending(&s->q, max);
}

int
tlog_store_flush_pending(struct tlog_store *s, int max)
{
	return tlog_flush_pending(&s->q, max);
}

int
tlog_store_compress_pending(struct tlog_store *s, int max)
{
	if (tlog_queue_zqueued(&s->q) > 0 && tlog_sf_format_zstd(s) != 0)
		return 0;
	return tlog_compress_pending(&s->q, max);
}

size_t
tlog_store_unlink_wait(struct tlog_store *s, int timeout_ms)
{
	return tlog_queue_wait(&s->q, timeout_ms);
}

void
tlog_store_wakeup(struct tlog_store *s)
{
	tlog_queue_wakeup(&s->q);
}

struct tlog_partition *
tlog_store_events(struct tlog_store *s)
{
	if (s->ev.p != NULL)
		tlog_part_ref(s->ev.p);
	return s->ev.p;
}
