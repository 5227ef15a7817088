/*
 * store.c - the store: its on-disk layout and lock, the registry of topics
 * and partitions (red-black trees by name), paths, and the unlink queue.
 *
 * STORE/.tlogfs/format   "tlogfs <version>"
 * STORE/.tlogfs/lock     pid of the holder, flock()ed while open
 * STORE/.tlogfs/config   store-wide config overrides (key=value)
 * STORE/.tlogfs/clean    present only between a clean close and the next open
 * STORE/.tlogfs/boot     the kernel's boot id at the last open
 * STORE/TOPIC/.config, STORE/TOPIC/PART/.config, STORE/TOPIC/PART/.next
 */
#include "config.h"

#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "tlog_int.h"

static int
topic_cmp(struct tlog_topic *a, struct tlog_topic *b)
{
	return strcmp(a->lv.name, b->lv.name);
}

static int
part_cmp(struct tlog_partition *a, struct tlog_partition *b)
{
	return strcmp(a->lv.name, b->lv.name);
}

RB_GENERATE(tlog_topic_tree, tlog_topic, entry, topic_cmp)
RB_GENERATE(tlog_part_tree, tlog_partition, entry, part_cmp)

int
tlog_store_statvfs(struct tlog_store *s, struct statvfs *sv)
{
	return fstatvfs(s->tree.dirfd, sv) == -1 ? -errno : 0;
}

/*
 * After an entry of a level directory changed (mkdir, rmdir, rename),
 * syncs that directory so the change survives a power cut, with no
 * engine lock held. fd is a descriptor of the directory (s->tree.dirfd for
 * the root); it is closed here, unless it is s->tree.dirfd. A failure is
 * logged; the change itself stands.
 */
static void
sync_parent(struct tlog_store *s, int fd, const char *what)
{
	if (fd < 0)
		return;
	if (fsync(fd) == -1 && errno != EINVAL)
		tlog_ctx_log_err(&s->ctx, "cannot sync the directory holding %s: %s",
		    what, strerror(errno));
	if (fd != s->tree.dirfd)
		close(fd);
}

/* ---- topics ---- */

void
tlog_topic_ref(struct tlog_topic *t)
{
	tlog_level_ref(&t->lv);
}

void
tlog_topic_put(struct tlog_topic *t)
{
	if (t != NULL)
		tlog_level_put(&t->lv);
}

static void
topic_free(struct tlog_level *lv)
{
	struct tlog_topic *t = TLOG_CONTAINER_OF(lv, struct tlog_topic, lv);

	tlog_level_destroy(&t->lv);
	free(t);
}

struct tlog_topic *
tlog_topic_alloc(struct tlog_store *s, const char *name)
{
	struct tlog_topic *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if (tlog_level_init(&t->lv, &s->tree, &s->root, name,
	    tlog_ctx_ino(&s->ctx), topic_free) != 0) {
		free(t);
		return NULL;
	}
	t->store = s;
	RB_INIT(&t->parts);
	return t;
}

static struct tlog_topic *
topic_find(struct tlog_store *s, const char *name)
{
	struct tlog_topic key;

	key.lv.name = (char *)name;
	return RB_FIND(tlog_topic_tree, &s->topics, &key);
}

static struct tlog_partition *
part_find(struct tlog_topic *t, const char *name)
{
	struct tlog_partition key;

	key.lv.name = (char *)name;
	return RB_FIND(tlog_part_tree, &t->parts, &key);
}

uint64_t
tlog_topic_ino(const struct tlog_topic *t)
{
	return t->lv.ino;
}

struct tlog_config *
tlog_topic_config(struct tlog_topic *t)
{
	return &t->lv.conf;
}

void
tlog_topic_name(struct tlog_topic *t, char *buf, size_t len)
{
	tlog_level_name(&t->lv, buf, len);
}

struct tlog_topic *
tlog_topic_get(struct tlog_store *s, const char *name)
{
	struct tlog_topic *t;

	pthread_rwlock_rdlock(&s->tree.lock);
	if ((t = topic_find(s, name)) != NULL)
		tlog_topic_ref(t);
	pthread_rwlock_unlock(&s->tree.lock);
	return t;
}

/*
 * Makes directory name in dirfd, or adopts one that is already there as
 * a real directory (never a symlink or a file in the way): returns an
 * open descriptor of it, or -errno (-EEXIST for anything in the way).
 */
static int
make_dir(int dirfd, const char *name)
{
	int fd;

	if (mkdirat(dirfd, name, 0755) == -1 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1)
		return errno == ELOOP || errno == ENOTDIR ? -EEXIST : -errno;
	return fd;
}

int
tlog_topic_create(struct tlog_store *s, const char *name,
    struct tlog_topic **out)
{
	struct tlog_topic *t;
	int r, fd;

	if (s->ctx.ro)
		return -EROFS;
	if ((r = tlog_name_check(name)) != 0)
		return r;
	if ((t = tlog_topic_alloc(s, name)) == NULL)
		return -ENOMEM;
	pthread_rwlock_wrlock(&s->tree.lock);
	if (topic_find(s, name) != NULL) {
		r = -EEXIST;
	} else if ((fd = make_dir(s->tree.dirfd, name)) < 0) {
		r = fd;
	} else {
		close(fd);
		RB_INSERT(tlog_topic_tree, &s->topics, t);
		if (out != NULL) {
			tlog_topic_ref(t);
			*out = t;
		}
		t = NULL;
		r = 0;
	}
	pthread_rwlock_unlock(&s->tree.lock);
	tlog_topic_put(t);
	if (r == 0)
		sync_parent(s, s->tree.dirfd, name);
	return r;
}

/*
 * The files the engine itself keeps in a level's directory: its config,
 * a partition's saved end offset, and their temporary copies (an atomic
 * write in flight, or one a crash left behind).
 */
static bool
is_bookkeeping(const char *name)
{
	static const char *const names[] = { ".config", ".next",
	    ".config.tmp", ".next.tmp", NULL };
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/*
 * Removes the empty level directory name in dirfd: refuses (ENOTEMPTY)
 * if it holds anything but the engine's bookkeeping files, so a refusal
 * loses no setting (the stray is named in one log line); then drops
 * those and the directory.
 */
static int
remove_dir(struct tlog_store *s, int dirfd, const char *name)
{
	struct dirent *de;
	uint64_t base;
	DIR *d;
	int fd, r = 0;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		r = -errno;
		if (fd != -1)
			close(fd);
		return r;
	}
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 || is_bookkeeping(de->d_name))
			continue;
		/* A segment's file here is an append that won the race
		 * (ENOTEMPTY is the answer); anything else is a stray the
		 * operator must see. */
		if (!tlog_segname_parse(de->d_name, ".log", &base) &&
		    !tlog_segname_parse(de->d_name, ".idx", &base))
			tlog_ctx_log(&s->ctx, LOG_NOTICE, "cannot remove %s: it holds %s, "
			    "which is not tlogfs's", name, de->d_name);
		r = -ENOTEMPTY;
	}
	if (r == 0) {
		rewinddir(d);
		while ((de = readdir(d)) != NULL)
			if (is_bookkeeping(de->d_name))
				unlinkat(fd, de->d_name, 0);
	}
	closedir(d);
	if (r != 0)
		return r;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == -1)
		return errno == EEXIST ? -ENOTEMPTY : -errno;
	return 0;
}

/* Makes an empty level directory ready to be renamed over: ENOTEMPTY if
 * it holds more than its bookkeeping files, which then go. */
static int
clear_dir(struct tlog_store *s, int dirfd, const char *name)
{
	int r = remove_dir(s, dirfd, name);

	if (r == 0 && mkdirat(dirfd, name, 0755) == -1)
		r = -errno;
	return r;
}

int
tlog_topic_remove(struct tlog_store *s, const char *name)
{
	struct tlog_topic *t;
	int r;

	if (s->ctx.ro)
		return -EROFS;
	pthread_rwlock_wrlock(&s->tree.lock);
	if ((t = topic_find(s, name)) == NULL)
		r = -ENOENT;
	else if (!RB_EMPTY(&t->parts))
		r = -ENOTEMPTY;
	else if ((r = remove_dir(s, s->tree.dirfd, name)) == 0) {
		RB_REMOVE(tlog_topic_tree, &s->topics, t);
		__atomic_store_n(&t->lv.dead, true, __ATOMIC_RELEASE);
	} else
		t = NULL;
	pthread_rwlock_unlock(&s->tree.lock);
	if (r == 0) {
		tlog_topic_put(t);
		sync_parent(s, s->tree.dirfd, name);
	}
	return r;
}

int
tlog_topic_rename(struct tlog_store *s, const char *from, const char *to)
{
	struct tlog_topic *t, *victim;
	bool renamed = false;
	char *nname;
	int r = 0;

	if (s->ctx.ro)
		return -EROFS;
	if ((r = tlog_name_check(to)) != 0)
		return r;
	if ((nname = strdup(to)) == NULL)
		return -ENOMEM;
	pthread_rwlock_wrlock(&s->tree.lock);
	if ((t = topic_find(s, from)) == NULL) {
		r = -ENOENT;
		goto out;
	}
	if (strcmp(from, to) == 0)
		goto out;
	victim = topic_find(s, to);
	if (victim != NULL && !RB_EMPTY(&victim->parts)) {
		r = -ENOTEMPTY;
		goto out;
	}
	if (victim != NULL && (r = clear_dir(s, s->tree.dirfd, to)) != 0)
		goto out;
	/* rename(2) replaces an empty directory atomically. */
	if (renameat(s->tree.dirfd, from, s->tree.dirfd, to) == -1) {
		r = -errno;
		goto out;
	}
	if (victim != NULL) {
		RB_REMOVE(tlog_topic_tree, &s->topics, victim);
		__atomic_store_n(&victim->lv.dead, true, __ATOMIC_RELEASE);
		tlog_topic_put(victim);
	}
	RB_REMOVE(tlog_topic_tree, &s->topics, t);
	free(t->lv.name);
	t->lv.name = nname;
	nname = NULL;
	RB_INSERT(tlog_topic_tree, &s->topics, t);
	renamed = true;
out:
	pthread_rwlock_unlock(&s->tree.lock);
	free(nname);
	if (renamed)
		sync_parent(s, s->tree.dirfd, to);
	return r;
}

/* ---- partitions ---- */

struct tlog_partition *
tlog_partition_get(struct tlog_topic *t, const char *name)
{
	struct tlog_partition *p;

	pthread_rwlock_rdlock(&t->lv.tree->lock);
	if ((p = part_find(t, name)) != NULL)
		tlog_part_ref(p);
	pthread_rwlock_unlock(&t->lv.tree->lock);
	return p;
}

int
tlog_partition_create(struct tlog_topic *t, const char *name,
    struct tlog_partition **out)
{
	struct tlog_store *s = t->store;
	struct tlog_partition *p;
	int r, tfd = -1, fd;

	if (s->ctx.ro)
		return -EROFS;
	if ((r = tlog_name_check(name)) != 0)
		return r;
	if ((p = tlog_part_alloc(t, name)) == NULL)
		return -ENOMEM;
	pthread_rwlock_wrlock(&s->tree.lock);
	if (tlog_level_dead(&t->lv)) {
		r = -ENOENT;
	} else if (part_find(t, name) != NULL) {
		r = -EEXIST;
	} else if ((tfd = tlog_level_dir_locked(&t->lv)) < 0) {
		r = tfd;
	} else if ((fd = make_dir(tfd, name)) < 0) {
		r = fd;
	} else {
		r = tlog_level_set_dir(&p->lv, fd);
		close(fd);
	}
	if (r == 0) {
		RB_INSERT(tlog_part_tree, &t->parts, p);
		if (out != NULL) {
			tlog_part_ref(p);
			*out = p;
		}
		p = NULL;
	}
	pthread_rwlock_unlock(&s->tree.lock);
	if (r == 0)
		sync_parent(s, tfd, name);
	else if (tfd >= 0)
		close(tfd);
	tlog_partition_put(p);
	return r;
}

static int unlink_seg(struct tlog_store *s, struct tlog_segment *seg);

/*
 * Waits until no file of p's deleted segments is left, or, with limit >=
 * 0, until they hold at most limit bytes: unlinks those still queued
 * itself, and waits for those another thread is unlinking. So rm -r of a
 * partition works at once after its segments were deleted, and the size
 * ceiling holds on disk (tlog_store_unlink_part).
 */
static int
drain_unlinks(struct tlog_partition *p, int64_t limit)
{
	struct tlog_store *s = p->store;
	struct tlog_segment *seg;
	bool hooked = limit >= 0;
	int r;

	for (;;) {
		pthread_mutex_lock(&s->unlink_lock);
		if (p->pending_unlinks == 0 || (limit >= 0 &&
		    __atomic_load_n(&p->pending_bytes, __ATOMIC_RELAXED) <=
		    (uint64_t)limit)) {
			pthread_mutex_unlock(&s->unlink_lock);
			return 0;
		}
		TAILQ_FOREACH(seg, &s->unlinkq, link)
			if (seg->sd == &p->sd)
				break;
		if (seg != NULL) {
			TAILQ_REMOVE(&s->unlinkq, seg, link);
			s->nunlink--;
			pthread_mutex_unlock(&s->unlink_lock);
			if ((r = unlink_seg(s, seg)) != 0)
				return r;
			continue;
		}
		if (!hooked) {
			pthread_mutex_unlock(&s->unlink_lock);
			TLOG_HOOK(&s->ctx, TLOG_HOOK_RMDIR_WAIT, p);
			hooked = true;
			continue;
		}
		/* In flight in another thread, which broadcasts when it is
		 * done (or puts it back in the queue). */
		pthread_cond_wait(&s->unlink_cond, &s->unlink_lock);
		pthread_mutex_unlock(&s->unlink_lock);
	}
}

/*
 * The size ceiling's unlinks, on the appender's thread, through the same
 * unlink_seg as the unlinker's. A failed unlink is requeued and ends it:
 * an append never waits on a backing store that refuses unlinks.
 */
void
tlog_store_unlink_part(struct tlog_store *s, struct tlog_partition *p,
    uint64_t limit)
{
	drain_unlinks(p, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
	/* The unlinker thread sends the kernel its notices. */
	tlog_store_wakeup(s);
}

int
tlog_partition_remove(struct tlog_topic *t, const char *name)
{
	struct tlog_store *s = t->store;
	struct tlog_partition *p;
	int r, tfd = -1;

	if (s->ctx.ro)
		return -EROFS;
	if ((p = tlog_partition_get(t, name)) == NULL)
		return -ENOENT;
	r = drain_unlinks(p, -1);
	tlog_partition_put(p);
	if (r != 0)
		return r;
	pthread_rwlock_wrlock(&s->tree.lock);
	if ((p = part_find(t, name)) == NULL) {
		r = -ENOENT;
		goto out;
	}
	/*
	 * No partition lock here (the append path takes the tree lock under
	 * it). An append racing with this either created its segment files
	 * first (the directory is not empty: ENOTEMPTY) or finds the
	 * partition dead when it reaches for its directory (ENOENT).
	 */
	r = __atomic_load_n(&p->nsegs, __ATOMIC_ACQUIRE) > 0 ? -ENOTEMPTY : 0;
	if (r == 0 && (tfd = tlog_level_dir_locked(&t->lv)) < 0)
		r = tfd;
	else if (r == 0)
		r = remove_dir(s, tfd, name);
	if (r == 0) {
		__atomic_store_n(&p->lv.dead, true, __ATOMIC_RELEASE);
		RB_REMOVE(tlog_part_tree, &t->parts, p);
	}
out:
	pthread_rwlock_unlock(&s->tree.lock);
	if (r == 0) {
		tlog_unsched(p);
		tlog_partition_put(p);
		sync_parent(s, tfd, name);
	} else if (tfd >= 0)
		close(tfd);
	return r;
}

int
tlog_partition_rename(struct tlog_topic *t, const char *from, const char *to)
{
	struct tlog_store *s = t->store;
	struct tlog_partition *p, *victim;
	bool renamed = false;
	char *nname;
	int r = 0, tfd = -1;

	if (s->ctx.ro)
		return -EROFS;
	if ((r = tlog_name_check(to)) != 0)
		return r;
	if ((nname = strdup(to)) == NULL)
		return -ENOMEM;
	/* A partition whose segments were just deleted is empty once its
	 * files are gone. */
	if ((victim = tlog_partition_get(t, to)) != NULL) {
		r = drain_unlinks(victim, -1);
		tlog_partition_put(victim);
		if (r != 0)
			goto out_free;
	}
	pthread_rwlock_wrlock(&s->tree.lock);
	if ((p = part_find(t, from)) == NULL) {
		r = -ENOENT;
		goto out;
	}
	if (strcmp(from, to) == 0)
		goto out;
	if ((tfd = tlog_level_dir_locked(&t->lv)) < 0) {
		r = tfd;
		goto out;
	}
	victim = part_find(t, to);
	if (victim != NULL) {
		r = __atomic_load_n(&victim->nsegs, __ATOMIC_ACQUIRE) > 0 ?
		    -ENOTEMPTY : 0;
		if (r == 0)
			r = clear_dir(s, tfd, to);
		if (r != 0)
			goto out;
	}
	/* rename(2) replaces an empty directory atomically. */
	if (renameat(tfd, from, tfd, to) == -1) {
		r = -errno;
		goto out;
	}
	if (victim != NULL) {
		/* Its appends now find it dead, or its directory replaced. */
		__atomic_store_n(&victim->lv.dead, true, __ATOMIC_RELEASE);
		RB_REMOVE(tlog_part_tree, &t->parts, victim);
		tlog_unsched(victim);
		tlog_partition_put(victim);
	}
	RB_REMOVE(tlog_part_tree, &t->parts, p);
	free(p->lv.name);
	p->lv.name = nname;
	nname = NULL;
	RB_INSERT(tlog_part_tree, &t->parts, p);
	renamed = true;
out:
	pthread_rwlock_unlock(&s->tree.lock);
	if (renamed)
		sync_parent(s, tfd, to);
	else if (tfd >= 0)
		close(tfd);
out_free:
	free(nname);
	return r;
}

/* ---- listings ---- */

static int
dirent_push(struct tlog_dirent **a, size_t *n, size_t *cap, const char *name,
    uint64_t ino)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 16;
		void *na = reallocarray(*a, nc, sizeof(**a));
		if (na == NULL)
			return -ENOMEM;
		*a = na;
		*cap = nc;
	}
	strlcpy((*a)[*n].name, name, sizeof((*a)[*n].name));
	(*a)[*n].ino = ino;
	(*n)++;
	return 0;
}

int
tlog_topic_list(struct tlog_store *s, struct tlog_dirent **out, size_t *n)
{
	struct tlog_topic *t;
	size_t cap = 0;
	int r = 0;

	*out = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&s->tree.lock);
	RB_FOREACH(t, tlog_topic_tree, &s->topics)
		if ((r = dirent_push(out, n, &cap, t->lv.name, t->lv.ino)) != 0)
			break;
	pthread_rwlock_unlock(&s->tree.lock);
	return r;
}

int
tlog_partition_list(struct tlog_topic *t, struct tlog_dirent **out,
    size_t *n)
{
	struct tlog_partition *p;
	size_t cap = 0;
	int r = 0;

	*out = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&t->lv.tree->lock);
	RB_FOREACH(p, tlog_part_tree, &t->parts)
		if ((r = dirent_push(out, n, &cap, p->lv.name, p->lv.ino)) != 0)
			break;
	pthread_rwlock_unlock(&t->lv.tree->lock);
	return r;
}

/* ---- the unlink queue ---- */

size_t
tlog_store_unlink_queued(struct tlog_store *s)
{
	size_t n;

	pthread_mutex_lock(&s->unlink_lock);
	n = s->nunlink;
	pthread_mutex_unlock(&s->unlink_lock);
	return n;
}

static int
unlink_one(struct tlog_segment *seg)
{
	char name[32];
	int dfd, r = 0;

	if ((dfd = tlog_level_dir(seg->sd->lv)) < 0)
		/* A removed partition's directory went with its files (it
		 * is removed only once none is left). */
		return dfd == -ENOENT && __atomic_load_n(&seg->sd->lv->dead,
		    __ATOMIC_ACQUIRE) ? 0 : dfd;
	tlog_segname_format(seg->base, ".log", name, sizeof(name));
	if (unlinkat(dfd, name, 0) == -1 && errno != ENOENT)
		r = -errno;
	tlog_segname_format(seg->base, ".idx", name, sizeof(name));
	if (r == 0 && unlinkat(dfd, name, 0) == -1 && errno != ENOENT)
		r = -errno;
	close(dfd);
	return r;
}

/*
 * Unlinks the files of one detached segment taken off the queue, then
 * records its deletion (only after the unlink succeeded) and drops the
 * queue's reference. On failure the segment goes back in the queue.
 * No engine lock is held.
 */
static int
unlink_seg(struct tlog_store *s, struct tlog_segment *seg)
{
	struct tlog_partition *p = tlog_seg_part(seg);
	struct tlog_event ev;
	int r;

	TLOG_HOOK(&s->ctx, TLOG_HOOK_UNLINK, p);
	/* The end offset outlives the files it was read from. */
	if ((r = tlog_part_save_end(p, seg->base + seg->records)) != 0 ||
	    (r = unlink_one(seg)) != 0) {
		tlog_ctx_log_err(&s->ctx, "cannot delete segment %020" PRIu64 ": %s; "
		    "will retry", seg->base, strerror(-r));
		pthread_mutex_lock(&s->unlink_lock);
		TAILQ_INSERT_TAIL(&s->unlinkq, seg, link);
		s->nunlink++;
		pthread_cond_broadcast(&s->unlink_cond);
		pthread_mutex_unlock(&s->unlink_lock);
		return r;
	}
	pthread_mutex_lock(&s->unlink_lock);
	p->pending_unlinks--;
	__atomic_sub_fetch(&p->pending_bytes, seg->bytes, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->unlink_cond);
	pthread_mutex_unlock(&s->unlink_lock);
	memset(&ev, 0, sizeof(ev));
	ev.kind = TLOG_EV_DELETE;
	ev.ts = tlog_ctx_now(&s->ctx);
	ev.segment_ino = seg->ino;
	ev.base = seg->base;
	ev.records = seg->records;
	ev.bytes = seg->bytes;
	ev.first_ts = seg->first_ts;
	ev.max_ts = seg->max_ts;
	ev.trigger = seg->sealed_by;
	ev.rule = seg->rule;
	TLOG_METRIC_ADD(&s->ctx, deletions[seg->rule], 1);
	TLOG_METRIC_ADD(&s->ctx, deleted_bytes, seg->bytes);
	tlog_emit_event(p, &ev);
	tlog_segment_put(seg);
	return 0;
}

int
tlog_store_unlink_pending(struct tlog_store *s, int max)
{
	struct tlog_segment *seg;
	size_t budget;
	int done = 0;

	pthread_mutex_lock(&s->unlink_lock);
	budget = max > 0 ? (size_t)max : s->nunlink;
	pthread_mutex_unlock(&s->unlink_lock);
	while (budget-- > 0) {
		pthread_mutex_lock(&s->unlink_lock);
		if ((seg = TAILQ_FIRST(&s->unlinkq)) != NULL) {
			TAILQ_REMOVE(&s->unlinkq, seg, link);
			s->nunlink--;
		}
		pthread_mutex_unlock(&s->unlink_lock);
		if (seg == NULL)
			break;
		if (unlink_seg(s, seg) == 0)
			done++;
	}
	return done;
}

size_t
tlog_store_unlink_wait(struct tlog_store *s, int timeout_ms)
{
	struct timespec ts;
	size_t n;

	pthread_mutex_lock(&s->unlink_lock);
	if (s->nunlink == 0 && s->nflush == 0 && !s->wakeup) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&s->unlink_cond, &s->unlink_lock);
		} else {
			tlog_deadline(timeout_ms, &ts);
			pthread_cond_timedwait(&s->unlink_cond,
			    &s->unlink_lock, &ts);
		}
	}
	s->wakeup = false;
	n = s->nunlink + s->nflush;
	pthread_mutex_unlock(&s->unlink_lock);
	return n;
}

void
tlog_store_wakeup(struct tlog_store *s)
{
	pthread_mutex_lock(&s->unlink_lock);
	s->wakeup = true;
	pthread_cond_broadcast(&s->unlink_cond);
	pthread_mutex_unlock(&s->unlink_lock);
}

/* ---- open and close ---- */

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
	tlog_ctx_vlog(s != NULL ? &s->ctx : NULL, prio, fmt, ap);
	va_end(ap);
}

struct tlog_config *
tlog_store_config(struct tlog_store *s)
{
	return &s->root.conf;
}

bool
tlog_store_was_clean(const struct tlog_store *s)
{
	return s->was_clean;
}

bool
tlog_store_readonly(const struct tlog_store *s)
{
	return s->ctx.ro;
}

void
tlog_store_update_pid(struct tlog_store *s)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	/* A reader leaves the last writer's pid: it writes nothing. */
	if (s->ctx.ro)
		return;
	if (ftruncate(s->lockfd, 0) == 0 &&
	    pwrite(s->lockfd, buf, (size_t)n, 0) != n)
		tlog_ctx_log(&s->ctx, LOG_WARNING, "cannot record pid in lock file");
}

static int
store_lock(struct tlog_store *s, char *err, size_t errlen)
{
	char buf[32] = "";
	ssize_t n;

	/*
	 * A reader takes the lock shared: read-only opens, which change
	 * nothing, coexist; a writer is kept out while any of them runs,
	 * and keeps them out, so what a reader shows never moves.
	 */
	s->lockfd = s->ctx.ro ? openat(s->tree.dirfd, ".tlogfs/lock", O_RDONLY |
	    O_CLOEXEC) : openat(s->tree.dirfd, ".tlogfs/lock", O_RDWR | O_CREAT |
	    O_CLOEXEC, 0644);
	if (s->lockfd == -1) {
		snprintf(err, errlen, "%s/.tlogfs/lock: %s", s->path,
		    strerror(errno));
		return -errno;
	}
	if (flock(s->lockfd, (s->ctx.ro ? LOCK_SH : LOCK_EX) | LOCK_NB) == -1) {
		int e = errno;
		n = pread(s->lockfd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		/* Held by readers only: the pid in the file is the last
		 * writer's, not theirs. */
		if (e == EWOULDBLOCK && !s->ctx.ro &&
		    flock(s->lockfd, LOCK_SH | LOCK_NB) == 0) {
			flock(s->lockfd, LOCK_UN);
			snprintf(err, errlen, "store %s is in use by a "
			    "read-only mount", s->path);
		} else if (e == EWOULDBLOCK)
			snprintf(err, errlen, "store %s is in use by pid %s",
			    s->path, *buf ? buf : "(unknown)");
		else
			snprintf(err, errlen, "cannot lock store %s: %s",
			    s->path, strerror(e));
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	tlog_store_update_pid(s);
	return 0;
}

static int
store_layout(struct tlog_store *s, char *err, size_t errlen)
{
	char buf[64];
	ssize_t n;
	int fd, v;

	if (s->ctx.ro) {
		/* A reader creates nothing: the store must be one. */
		fd = openat(s->tree.dirfd, ".tlogfs/format", O_RDONLY | O_CLOEXEC);
		if (fd == -1 && errno == ENOENT) {
			snprintf(err, errlen, "%s is not a tlogfs store (no "
			    ".tlogfs/format), and a read-only open creates "
			    "nothing", s->path);
			return -ENOENT;
		}
		goto check;
	}
	if (mkdirat(s->tree.dirfd, ".tlogfs", 0755) == 0)
		tlog_fsync_dir(s->tree.dirfd, ".");
	else if (errno != EEXIST) {
		snprintf(err, errlen, "%s/.tlogfs: %s", s->path,
		    strerror(errno));
		return -errno;
	}
	fd = openat(s->tree.dirfd, ".tlogfs/format", O_RDONLY | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT) {
		n = snprintf(buf, sizeof(buf), "tlogfs %d\n",
		    TLOG_FORMAT_VERSION);
		if ((v = tlog_write_atomic(s->tree.dirfd, ".tlogfs/format", buf,
		    (size_t)n)) != 0) {
			snprintf(err, errlen, "%s: cannot write format: %s",
			    s->path, strerror(-v));
			return v;
		}
		return 0;
	}
check:
	if (fd == -1) {
		snprintf(err, errlen, "%s/.tlogfs/format: %s", s->path,
		    strerror(errno));
		return -errno;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "tlogfs %d", &v) != 1 || v != TLOG_FORMAT_VERSION) {
		snprintf(err, errlen, "%s: unsupported store format \"%.20s\"",
		    s->path, buf);
		return -EPROTO;
	}
	return 0;
}

/*
 * The kernel's boot id, which changes at every boot: a crash within one
 * boot leaves everything written in the page cache, a power cut (or any
 * reboot without a clean close) does not. TLOGFS_BOOT_ID replaces it, so
 * tests can simulate a reboot. "" if unknown.
 */
static void
boot_id(char *buf, size_t len)
{
	const char *env = getenv("TLOGFS_BOOT_ID");
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if (env != NULL && *env != '\0') {
		strlcpy(buf, env, len);
	} else if ((fd = open("/proc/sys/kernel/random/boot_id",
	    O_RDONLY | O_CLOEXEC)) != -1) {
		n = read(fd, buf, len - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* Reads the boot id of the last open, "" if none was recorded. */
static void
last_boot(struct tlog_store *s, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if ((fd = openat(s->tree.dirfd, ".tlogfs/boot", O_RDONLY | O_CLOEXEC)) ==
	    -1)
		return;
	n = read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	buf[strcspn(buf, "\n")] = '\0';
}

/* Every active segment is on disk as it is (after a syncfs). */
static void
mark_synced_part(struct tlog_partition *p)
{
	struct tlog_segment *seg;

	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link)
		seg->sgen = seg->wgen;
	pthread_mutex_unlock(&p->sd.lock);
}

static void
mark_synced(struct tlog_store *s)
{
	struct tlog_partition **v;
	size_t n, i;

	if (tlog_all_partitions(s, &v, &n) == 0) {
		for (i = 0; i < n; i++) {
			mark_synced_part(v[i]);
			tlog_partition_put(v[i]);
		}
		free(v);
	}
	if (s->events != NULL)
		mark_synced_part(s->events);
}

struct recovery {
	struct tlog_partition **v;
	size_t n;
	size_t next;		/* atomic: the next partition to take */
};

static void *
recover_worker(void *arg)
{
	struct recovery *rc = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&rc->next, 1, __ATOMIC_RELAXED)) <
	    rc->n)
		tlog_part_recover(rc->v[i]);
	return NULL;
}

int
tlog_all_partitions(struct tlog_store *s, struct tlog_partition ***out,
    size_t *n)
{
	struct tlog_partition **v = NULL, *p;
	struct tlog_topic *t;
	size_t cap = 0;
	int r = 0;

	*n = 0;
	pthread_rwlock_rdlock(&s->tree.lock);
	RB_FOREACH(t, tlog_topic_tree, &s->topics) {
		RB_FOREACH(p, tlog_part_tree, &t->parts) {
			if (*n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				void *nv = reallocarray(v, nc, sizeof(*v));
				if (nv == NULL) {
					r = -ENOMEM;
					goto out;
				}
				v = nv;
				cap = nc;
			}
			tlog_part_ref(p);
			v[(*n)++] = p;
		}
	}
out:
	pthread_rwlock_unlock(&s->tree.lock);
	if (r != 0) {
		while (*n > 0)
			tlog_partition_put(v[--*n]);
		free(v);
		v = NULL;
	}
	*out = v;
	return r;
}

/*
 * Recovers every partition, on up to 4 threads (one per core): opening a
 * store is mostly system calls, one partition independent of the next.
 * The threads are joined before this returns, so none exists when the
 * daemon forks.
 */
static int
recover_all(struct tlog_store *s)
{
	struct recovery rc = { NULL, 0, 0 };
	pthread_t th[3];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nth, i, started = 0;
	int r;

	if ((r = tlog_all_partitions(s, &rc.v, &rc.n)) != 0)
		return r;
	nth = ncpu > 1 ? (size_t)ncpu : 1;
	if (nth > 4)
		nth = 4;
	if (nth > rc.n / 64 + 1)
		nth = rc.n / 64 + 1;
	for (i = 0; i + 1 < nth; i++)
		if (pthread_create(&th[i], NULL, recover_worker, &rc) == 0)
			started++;
	recover_worker(&rc);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < rc.n; i++)
		tlog_partition_put(rc.v[i]);
	free(rc.v);
	return 0;
}

/*
 * Opens the directory entry name in dirfd as a level directory. Anything
 * else (a symlink, a file, a device, a FIFO) is a stray: never followed,
 * never shown, left alone, logged once (here, at open). Returns the
 * descriptor or -1.
 */
static int
open_level(struct tlog_store *s, int dirfd, const char *where,
    const char *name)
{
	struct stat st;
	int fd;

	if (tlog_name_check(name) != 0) {
		tlog_ctx_log(&s->ctx, LOG_WARNING, "ignoring %s%s: not a valid topic or "
		    "partition name", where, name);
		return -1;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		tlog_ctx_log(&s->ctx, LOG_WARNING, "ignoring %s%s: a symbolic link, "
		    "never followed", where, name);
	else
		tlog_ctx_log(&s->ctx, LOG_WARNING, "ignoring stray %s%s: not a "
		    "directory", where, name);
	return -1;
}

/* Loads one topic's partitions from its open directory tfd. */
static int
load_topic(struct tlog_store *s, struct tlog_topic *t, int tfd)
{
	struct tlog_partition *p;
	struct dirent *pe;
	char where[TLOG_NAME_MAX + 2];
	DIR *pd;
	int fd, dup_fd;

	snprintf(where, sizeof(where), "%s/", t->lv.name);
	if ((dup_fd = dup(tfd)) == -1 || (pd = fdopendir(dup_fd)) == NULL) {
		if (dup_fd != -1)
			close(dup_fd);
		return -errno;
	}
	while ((pe = readdir(pd)) != NULL) {
		if (pe->d_name[0] == '.')
			continue;
		if ((fd = open_level(s, tfd, where, pe->d_name)) < 0)
			continue;
		if ((p = tlog_part_alloc(t, pe->d_name)) == NULL) {
			close(fd);
			closedir(pd);
			return -ENOMEM;
		}
		tlog_level_set_dir(&p->lv, fd);
		tlog_conf_load(&s->ctx, fd, ".config", &p->lv.conf);
		close(fd);
		RB_INSERT(tlog_part_tree, &t->parts, p);
	}
	closedir(pd);
	return 0;
}

/* Loads every topic and partition directory and recovers partitions. */
static int
store_load(struct tlog_store *s)
{
	struct tlog_topic *t;
	struct dirent *de;
	DIR *d;
	int fd, r;

	fd = openat(s->tree.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((fd = open_level(s, s->tree.dirfd, "", de->d_name)) < 0)
			continue;
		if ((t = tlog_topic_alloc(s, de->d_name)) == NULL) {
			close(fd);
			closedir(d);
			return -ENOMEM;
		}
		tlog_conf_load(&s->ctx, fd, ".config", &t->lv.conf);
		RB_INSERT(tlog_topic_tree, &s->topics, t);
		r = load_topic(s, t, fd);
		close(fd);
		if (r != 0) {
			closedir(d);
			return r;
		}
	}
	closedir(d);
	return recover_all(s);
}

static void
store_free(struct tlog_store *s)
{
	struct tlog_topic *t, *tn;
	struct tlog_partition *p, *pn;
	struct tlog_segment *seg;

	if (s == NULL)
		return;
	tlog_reaper_fini(s);
	/* Detached segments not yet unlinked are simply released; their
	 * files are found again (and kept) at the next open. */
	while ((seg = TAILQ_FIRST(&s->unlinkq)) != NULL) {
		TAILQ_REMOVE(&s->unlinkq, seg, link);
		tlog_segment_put(seg);
	}
	while ((p = TAILQ_FIRST(&s->flushq)) != NULL) {
		TAILQ_REMOVE(&s->flushq, p, flushlink);
		p->flush_queued = false;
		tlog_partition_put(p);
	}
	RB_FOREACH_SAFE(t, tlog_topic_tree, &s->topics, tn) {
		RB_FOREACH_SAFE(p, tlog_part_tree, &t->parts, pn) {
			RB_REMOVE(tlog_part_tree, &t->parts, p);
			tlog_segdir_drop_unsynced(&p->sd);
			while ((seg = TAILQ_FIRST(&p->segs)) != NULL) {
				TAILQ_REMOVE(&p->segs, seg, link);
				tlog_segment_put(seg);
			}
			tlog_partition_put(p);
		}
		RB_REMOVE(tlog_topic_tree, &s->topics, t);
		tlog_topic_put(t);
	}
	if ((p = s->events) != NULL) {
		tlog_segdir_drop_unsynced(&p->sd);
		while ((seg = TAILQ_FIRST(&p->segs)) != NULL) {
			TAILQ_REMOVE(&p->segs, seg, link);
			tlog_segment_put(seg);
		}
		tlog_partition_put(p);
		s->events = NULL;
	}
	tlog_topic_put(s->itopic);
	s->itopic = NULL;
	if (s->lockfd != -1)
		close(s->lockfd);
	if (s->tree.dirfd != -1)
		close(s->tree.dirfd);
	tlog_level_destroy(&s->root);
	pthread_rwlock_destroy(&s->tree.lock);
	pthread_mutex_destroy(&s->conf_lock);
	pthread_mutex_destroy(&s->unlink_lock);
	pthread_cond_destroy(&s->unlink_cond);
	tlog_ctx_destroy(&s->ctx);
	tlog_fdbudget_destroy(&s->fdb);
	free(s->path);
	free(s);
}

/* The newest timestamp in any partition, -1 if none. */
static int64_t
newest_stamp(struct tlog_store *s)
{
	struct tlog_partition **v;
	int64_t newest = s->events != NULL ? s->events->last_ts : -1;
	size_t n, i;

	if (tlog_all_partitions(s, &v, &n) != 0)
		return newest;
	for (i = 0; i < n; i++) {
		if (v[i]->last_ts > newest)
			newest = v[i]->last_ts;
		tlog_partition_put(v[i]);
	}
	free(v);
	return newest;
}

int
tlog_store_open(const char *path, const struct tlog_store_opts *opts,
    struct tlog_store **out, char *err, size_t errlen)
{
	struct tlog_store *s;
	char boot[64], prev[64], line[80];
	int r, n;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	tlog_ctx_init(&s->ctx, opts);
	s->tree.dirfd = s->lockfd = -1;
	s->ctx.cap_records = s->ctx.opts.cap_records ? s->ctx.opts.cap_records :
	    TLOG_CAP_RECORDS;
	s->ctx.cap_bytes = s->ctx.opts.cap_bytes ? s->ctx.opts.cap_bytes :
	    TLOG_CAP_BYTES;
	pthread_rwlock_init(&s->tree.lock, NULL);
	pthread_mutex_init(&s->conf_lock, NULL);
	pthread_mutex_init(&s->unlink_lock, NULL);
	tlog_cond_init_mono(&s->unlink_cond);
	tlog_fdbudget_init(&s->fdb, s->ctx.opts.max_open_segments);
	tlog_reaper_init(s);
	TAILQ_INIT(&s->unlinkq);
	TAILQ_INIT(&s->flushq);
	RB_INIT(&s->topics);
	tlog_level_init(&s->root, &s->tree, NULL, NULL, TLOG_ROOT_INO, NULL);
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
	if ((r = store_layout(s, err, errlen)) != 0 ||
	    (r = store_lock(s, err, errlen)) != 0)
		goto fail;
	s->was_clean = faccessat(s->tree.dirfd, ".tlogfs/clean", F_OK, 0) == 0;
	/* A reader leaves the mark as it found it: it changes nothing the
	 * mark vouches for, and an unclean store stays unclean for the
	 * next writer's recovery. */
	if (!s->ctx.ro && s->was_clean &&
	    unlinkat(s->tree.dirfd, ".tlogfs/clean", 0) == -1) {
		r = -errno;
		snprintf(err, errlen, "store %s is not writable: %s", path,
		    strerror(errno));
		goto fail;
	}
	/* The mark must not outlive a power cut while the store runs. */
	if (!s->ctx.ro && s->was_clean &&
	    (r = tlog_fsync_dir(s->tree.dirfd, ".tlogfs")) != 0) {
		snprintf(err, errlen, "store %s: cannot sync .tlogfs: %s", path,
		    strerror(-r));
		goto fail;
	}
	if (!s->ctx.ro && !s->was_clean && faccessat(s->tree.dirfd, ".", W_OK, 0) ==
	    -1) {
		r = -errno;
		snprintf(err, errlen, "store %s is not writable: %s", path,
		    strerror(errno));
		goto fail;
	}
	boot_id(boot, sizeof(boot));
	last_boot(s, prev, sizeof(prev));
	s->verify = !s->was_clean && (boot[0] == '\0' ||
	    strcmp(boot, prev) != 0);
	if (s->verify && prev[0] != '\0')
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s was not closed cleanly before "
		    "a reboot: checking unsealed segments against their data",
		    path);
	tlog_conf_load(&s->ctx, s->tree.dirfd, ".tlogfs/config", &s->root.conf);
	if ((r = store_load(s)) != 0 || (r = tlog_events_open(s)) != 0) {
		snprintf(err, errlen, "store %s: %s", path, strerror(-r));
		goto fail;
	}
	/* Engine time starts no earlier than the newest stamp stored, so
	 * stamps keep increasing whatever the wall clock says. */
	tlog_clock_anchor(&s->ctx.clock, newest_stamp(s));
	/*
	 * Recovery's repairs (cuts, rewritten indexes, removed files) are
	 * on disk before the store takes an append; and after a crash,
	 * what the dead daemon wrote may still be only in the page cache.
	 * One syncfs does both, so that neither recovery nor the first
	 * fsync of each partition has to sync file by file.
	 */
	if (!s->ctx.ro && (!s->was_clean || s->repaired)) {
		if (syncfs(s->tree.dirfd) == 0)
			mark_synced(s);
		else
			tlog_ctx_log(&s->ctx, LOG_ERR, "store %s: syncfs: %s; recovery's "
			    "repairs may not be on disk", path,
			    strerror(errno));
	}
	/* Only now, with every repair on disk: a crash before this point
	 * checks again at the next open. */
	if (!s->ctx.ro && boot[0] != '\0' && strcmp(boot, prev) != 0) {
		n = snprintf(line, sizeof(line), "%s\n", boot);
		if ((r = tlog_write_atomic(s->tree.dirfd, ".tlogfs/boot", line,
		    (size_t)n)) != 0)
			tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot record the "
			    "boot id: %s", path, strerror(-r));
	}
	/* Everything that can expire or seal is scheduled; whatever came
	 * due while the store was closed is due now. A reader's reaper
	 * has nothing it may do. */
	if (!s->ctx.ro)
		tlog_conf_changed(s, NULL, NULL);
	else if (s->repaired)
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s is open read-only: "
		    "recovery's repairs are kept in memory, not written; the "
		    "next read-write open makes them", path);
	*out = s;
	return 0;
fail:
	store_free(s);
	return r;
}

void
tlog_store_close(struct tlog_store *s)
{
	struct tlog_partition **v = NULL;
	size_t n = 0, i;
	bool bad = false;
	int fd;

	if (s == NULL)
		return;
	/* A reader wrote nothing: nothing to make durable, no mark. */
	if (s->ctx.ro) {
		store_free(s);
		return;
	}
	tlog_store_unlink_pending(s, 0);
	tlog_reaper_stop(s);
	tlog_store_flush_pending(s, 0);
	/* The partitions' syncs run with the tree unlocked: each partition
	 * is held by a reference. */
	if (tlog_all_partitions(s, &v, &n) != 0)
		bad = true;
	for (i = 0; i < n; i++) {
		if (tlog_part_close(v[i]) != 0)
			bad = true;
		tlog_partition_put(v[i]);
	}
	free(v);
	if (s->events != NULL && tlog_part_close(s->events) != 0)
		bad = true;
	/* The mark says everything before it is on disk: only then. */
	fd = bad ? -1 : openat(s->tree.dirfd, ".tlogfs/clean", O_WRONLY | O_CREAT |
	    O_TRUNC | O_CLOEXEC, 0644);
	if (fd != -1) {
		if (fsync(fd) == 0)
			tlog_fsync_dir(s->tree.dirfd, ".tlogfs");
		close(fd);
	} else
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: not everything reached the "
		    "disk; no clean mark", s->path);
	store_free(s);
}
