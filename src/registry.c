/* registry.c - the registry of topics and partitions (registry.h). */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "registry.h"
#include "unlink.h"

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

void
tlog_reg_init(struct tlog_registry *reg, struct tlog_level *root,
    const struct tlog_part_env *penv)
{
	reg->root = root;
	reg->penv = penv;
	RB_INIT(&reg->topics);
}

/* Partitions first: each holds its topic. What is still queued or
 * referenced elsewhere goes when its last reference does. */
void
tlog_reg_destroy(struct tlog_registry *reg)
{
	struct tlog_topic *t, *tn;
	struct tlog_partition *p, *pn;

	RB_FOREACH_SAFE(t, tlog_topic_tree, &reg->topics, tn) {
		RB_FOREACH_SAFE(p, tlog_part_tree, &t->parts, pn) {
			RB_REMOVE(tlog_part_tree, &t->parts, p);
			tlog_part_release(p);
		}
		RB_REMOVE(tlog_topic_tree, &reg->topics, t);
		tlog_topic_put(t);
	}
}

size_t
tlog_reg_count(struct tlog_registry *reg)
{
	struct tlog_topic *t;
	struct tlog_partition *p;
	size_t n = 0;

	pthread_rwlock_rdlock(&reg->root->tree->lock);
	RB_FOREACH(t, tlog_topic_tree, &reg->topics)
		RB_FOREACH(p, tlog_part_tree, &t->parts)
			n++;
	pthread_rwlock_unlock(&reg->root->tree->lock);
	return n;
}

struct tlog_topic *
tlog_partition_topic(struct tlog_partition *p)
{
	return TLOG_CONTAINER_OF(p->lv.parent, struct tlog_topic, lv);
}

/* Called after an entry of directory fd changed (mkdir, rmdir, rename),
 * with no engine lock held, so that the change survives a power cut. A
 * failure is logged; the change itself stands. */
void
tlog_reg_sync_parent(struct tlog_registry *reg, int fd, const char *what)
{
	if (fd < 0)
		return;
	if (fsync(fd) == -1 && errno != EINVAL)
		tlog_ctx_log_err(reg->penv->ctx, "cannot sync the directory "
		    "holding %s: %s", what, strerror(errno));
	if (fd != reg->root->tree->dirfd)
		close(fd);
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
tlog_topic_alloc(struct tlog_registry *reg, const char *name)
{
	struct tlog_topic *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if (tlog_level_init(&t->lv, reg->root->tree, reg->root, name,
	    tlog_ctx_ino(reg->penv->ctx), topic_free) != 0) {
		free(t);
		return NULL;
	}
	t->reg = reg;
	RB_INIT(&t->parts);
	return t;
}

static struct tlog_topic *
topic_find(struct tlog_registry *reg, const char *name)
{
	struct tlog_topic key;

	key.lv.name = (char *)name;
	return RB_FIND(tlog_topic_tree, &reg->topics, &key);
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

const struct tlog_conf *
tlog_topic_conf(struct tlog_topic *t)
{
	return tlog_level_conf_of(&t->lv);
}

struct tlog_topic *
tlog_reg_topic_get(struct tlog_registry *reg, const char *name)
{
	struct tlog_topic *t;

	pthread_rwlock_rdlock(&reg->root->tree->lock);
	if ((t = topic_find(reg, name)) != NULL)
		tlog_level_ref(&t->lv);
	pthread_rwlock_unlock(&reg->root->tree->lock);
	return t;
}

/* A loaded level's mode and owner, before its settings are read: what
 * others put in its directory goes first. Counts the directories made
 * private. */
static void
load_attr(struct tlog_registry *reg, struct tlog_level *lv, int fd,
    const char *where)
{
	struct tlog_ctx *ctx = reg->penv->ctx;
	int r;

	if (__atomic_load_n(&ctx->attr_on_dir, __ATOMIC_RELAXED))
		return;
	if ((r = tlog_level_load_attr(lv, ctx, fd, where)) == 1)
		ctx->attr_moved++;
	else if (r == -ENOTSUP)
		__atomic_store_n(&ctx->attr_on_dir, true, __ATOMIC_RELAXED);
	else if (r == -EPERM)
		ctx->attr_unsafe = true;
}

/*
 * Makes directory name in dirfd for lv, or adopts one that is already
 * there as a real directory (never a symlink or a file in the way):
 * returns an open descriptor of it, or -errno (-EEXIST for anything in
 * the way). A new one keeps lv's mode and owner (0755, the daemon's) in
 * its extended attribute, itself 0700 (without user xattrs, the
 * directory has them); an adopted one's are loaded as at open.
 */
static int
make_dir(struct tlog_registry *reg, int dirfd, const char *name,
    struct tlog_level *lv)
{
	struct tlog_ctx *ctx = reg->penv->ctx;
	bool made = true;
	int fd;

	if (mkdirat(dirfd, name, 0700) == -1) {
		if (errno != EEXIST)
			return -errno;
		made = false;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1)
		return errno == ELOOP || errno == ENOTDIR ? -EEXIST : -errno;
	if (!made)
		load_attr(reg, lv, fd, name);
	else if (__atomic_load_n(&ctx->attr_on_dir, __ATOMIC_RELAXED) ||
	    tlog_level_save_attr(fd, lv->mode, lv->owner) == -ENOTSUP) {
		__atomic_store_n(&ctx->attr_on_dir, true, __ATOMIC_RELAXED);
		(void)fchmod(fd, lv->mode);
	}
	return fd;
}

int
tlog_reg_topic_create(struct tlog_registry *reg, const char *name,
    struct tlog_topic **out)
{
	struct tlog_topic *t;
	int r, fd;

	if (reg->penv->ctx->ro)
		return -EROFS;
	if ((r = tlog_name_check(name)) != 0)
		return r;
	if ((t = tlog_topic_alloc(reg, name)) == NULL)
		return -ENOMEM;
	pthread_rwlock_wrlock(&reg->root->tree->lock);
	if (topic_find(reg, name) != NULL) {
		r = -EEXIST;
	} else if ((fd = make_dir(reg, reg->root->tree->dirfd, name,
	    &t->lv)) < 0) {
		r = fd;
	} else {
		close(fd);
		RB_INSERT(tlog_topic_tree, &reg->topics, t);
		if (out != NULL) {
			tlog_level_ref(&t->lv);
			*out = t;
		}
		t = NULL;
		r = 0;
	}
	pthread_rwlock_unlock(&reg->root->tree->lock);
	tlog_topic_put(t);
	if (r == 0)
		tlog_reg_sync_parent(reg, reg->root->tree->dirfd, name);
	return r;
}

/*
 * The files the engine itself keeps in a level's directory: its config,
 * a partition's saved end offset, cursors and identity, their temporary
 * copies (an atomic write in flight, or one a crash left behind), and a
 * compressed segment being written.
 */
static bool
is_bookkeeping(const char *name)
{
	static const char *const names[] = { ".config", ".next",
	    ".config.tmp", ".next.tmp", ".cursors", ".cursors.tmp",
	    ".cursors.bad", ".id", ".id.tmp", NULL };
	uint64_t base;
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	/* A segment's compression in flight (compress.c): it stops when
	 * it finds its segment gone. */
	return tlog_segname_parse(name, ".log.zst.tmp", &base);
}

/* Nothing is unlinked before every entry is known to be bookkeeping, so
 * a refusal loses no setting. */
int
tlog_reg_remove_dir(struct tlog_registry *reg, int dirfd, const char *name,
    const char *shown)
{
	struct dirent *de;
	uint64_t base;
	bool plain;
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
		plain = de->d_type == DT_REG || de->d_type == DT_UNKNOWN;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    (plain && is_bookkeeping(de->d_name)))
			continue;
		/* A segment's file here is an append that won the race
		 * (ENOTEMPTY is the answer); anything else, a non-file under
		 * one of tlogfs's names included, is a stray the operator
		 * must see (named as `shown`, if not NULL). */
		if ((!plain ||
		    (!tlog_segname_parse(de->d_name, ".log", &base) &&
		    !tlog_segname_parse(de->d_name, ".idx", &base))) &&
		    shown != NULL)
			tlog_ctx_log(reg->penv->ctx, LOG_NOTICE, "cannot "
			    "remove %s: it holds %s, which is not tlogfs's",
			    shown, de->d_name);
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

/*
 * Renames directory from in dirfd to to; over: to is a level's empty
 * directory, which is replaced (ENOTEMPTY if it holds more than its
 * bookkeeping files, which then go).
 */
static int
rename_dir(struct tlog_registry *reg, int dirfd, const char *from,
    const char *to, bool over)
{
	int r;

	if (over) {
		if ((r = tlog_reg_remove_dir(reg, dirfd, to, to)) != 0)
			return r;
		if (mkdirat(dirfd, to, 0700) == -1)
			return -errno;
	}
	/* rename(2) replaces an empty directory atomically. */
	return renameat(dirfd, from, dirfd, to) == -1 ? -errno : 0;
}

int
tlog_reg_topic_remove(struct tlog_registry *reg, const char *name)
{
	struct tlog_topic *t;
	int r;

	if (reg->penv->ctx->ro)
		return -EROFS;
	pthread_rwlock_wrlock(&reg->root->tree->lock);
	if ((t = topic_find(reg, name)) == NULL)
		r = -ENOENT;
	else if (!RB_EMPTY(&t->parts))
		r = -ENOTEMPTY;
	else if ((r = tlog_reg_remove_dir(reg, reg->root->tree->dirfd, name,
	    name)) == 0) {
		RB_REMOVE(tlog_topic_tree, &reg->topics, t);
		__atomic_store_n(&t->lv.dead, true, __ATOMIC_RELEASE);
	} else
		t = NULL;
	pthread_rwlock_unlock(&reg->root->tree->lock);
	if (r == 0) {
		tlog_topic_put(t);
		tlog_reg_sync_parent(reg, reg->root->tree->dirfd, name);
	}
	return r;
}

int
tlog_reg_topic_rename(struct tlog_registry *reg, const char *from,
    const char *to)
{
	struct tlog_topic *t, *victim;
	bool renamed = false;
	char *nname;
	int r = 0;

	if (reg->penv->ctx->ro)
		return -EROFS;
	if ((r = tlog_name_check(to)) != 0)
		return r;
	if ((nname = strdup(to)) == NULL)
		return -ENOMEM;
	pthread_rwlock_wrlock(&reg->root->tree->lock);
	if ((t = topic_find(reg, from)) == NULL) {
		r = -ENOENT;
		goto out;
	}
	if (strcmp(from, to) == 0)
		goto out;
	victim = topic_find(reg, to);
	if (victim != NULL && !RB_EMPTY(&victim->parts))
		r = -ENOTEMPTY;
	else
		r = rename_dir(reg, reg->root->tree->dirfd, from, to,
		    victim != NULL);
	if (r != 0)
		goto out;
	if (victim != NULL) {
		RB_REMOVE(tlog_topic_tree, &reg->topics, victim);
		__atomic_store_n(&victim->lv.dead, true, __ATOMIC_RELEASE);
		tlog_topic_put(victim);
	}
	RB_REMOVE(tlog_topic_tree, &reg->topics, t);
	free(t->lv.name);
	t->lv.name = nname;
	nname = NULL;
	RB_INSERT(tlog_topic_tree, &reg->topics, t);
	renamed = true;
out:
	pthread_rwlock_unlock(&reg->root->tree->lock);
	free(nname);
	if (renamed)
		tlog_reg_sync_parent(reg, reg->root->tree->dirfd, to);
	return r;
}

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
	struct tlog_registry *reg = t->reg;
	struct tlog_partition *p;
	int r, tfd = -1, fd;

	if (reg->penv->ctx->ro)
		return -EROFS;
	if ((r = tlog_name_check(name)) != 0)
		return r;
	if ((p = tlog_part_alloc(&t->lv, name, reg->penv)) == NULL)
		return -ENOMEM;
	pthread_rwlock_wrlock(&reg->root->tree->lock);
	if (tlog_level_dead(&t->lv)) {
		r = -ENOENT;
	} else if (part_find(t, name) != NULL) {
		r = -EEXIST;
	} else if ((tfd = tlog_level_dir_locked(&t->lv)) < 0) {
		r = tfd;
	} else if ((fd = make_dir(reg, tfd, name, &p->lv)) < 0) {
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
		/* Kept for its schedule, below (partition.cleanup.ms). */
		tlog_part_ref(p);
	}
	pthread_rwlock_unlock(&reg->root->tree->lock);
	if (r == 0) {
		tlog_reg_sync_parent(reg, tfd, name);
		/* Never written, it is due from now under
		 * partition.cleanup.ms. */
		if (tlog_part_conf(p, TLOG_PARTITION_CLEANUP_MS) >= 0)
			tlog_part_resched(p);
	} else if (tfd >= 0)
		close(tfd);
	tlog_partition_put(p);
	return r;
}

int
tlog_partition_remove(struct tlog_topic *t, const char *name)
{
	struct tlog_registry *reg = t->reg;
	struct tlog_partition *p;
	char shown[2 * TLOG_NAME_MAX + 2];
	int r, tfd = -1;

	if (reg->penv->ctx->ro)
		return -EROFS;
	if ((p = tlog_partition_get(t, name)) == NULL)
		return -ENOENT;
	r = tlog_unlink_drain(reg->penv->q, p, -1);
	tlog_partition_put(p);
	if (r != 0)
		return r;
	pthread_rwlock_wrlock(&reg->root->tree->lock);
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
	if (__atomic_load_n(&p->nsegs, __ATOMIC_ACQUIRE) > 0)
		r = -ENOTEMPTY;
	else if ((tfd = tlog_level_dir_locked(&t->lv)) < 0)
		r = tfd;
	else {
		snprintf(shown, sizeof(shown), "%s/%s", t->lv.name, name);
		r = tlog_reg_remove_dir(reg, tfd, name, shown);
	}
	if (r == 0) {
		__atomic_store_n(&p->lv.dead, true, __ATOMIC_RELEASE);
		RB_REMOVE(tlog_part_tree, &t->parts, p);
	}
out:
	pthread_rwlock_unlock(&reg->root->tree->lock);
	if (r == 0) {
		tlog_part_unsched(p);
		tlog_partition_put(p);
		tlog_reg_sync_parent(reg, tfd, name);
	} else if (tfd >= 0)
		close(tfd);
	return r;
}

int
tlog_partition_rename(struct tlog_topic *t, const char *from, const char *to)
{
	struct tlog_registry *reg = t->reg;
	struct tlog_partition *p, *victim;
	bool renamed = false;
	char *nname;
	int r = 0, tfd = -1;

	if (reg->penv->ctx->ro)
		return -EROFS;
	if ((r = tlog_name_check(to)) != 0)
		return r;
	if ((nname = strdup(to)) == NULL)
		return -ENOMEM;
	/* A partition whose segments were just deleted is empty once its
	 * files are gone. */
	if ((victim = tlog_partition_get(t, to)) != NULL) {
		r = tlog_unlink_drain(reg->penv->q, victim, -1);
		tlog_partition_put(victim);
		if (r != 0)
			goto out_free;
	}
	pthread_rwlock_wrlock(&reg->root->tree->lock);
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
	if (victim != NULL &&
	    __atomic_load_n(&victim->nsegs, __ATOMIC_ACQUIRE) > 0)
		r = -ENOTEMPTY;
	else
		r = rename_dir(reg, tfd, from, to, victim != NULL);
	if (r != 0)
		goto out;
	if (victim != NULL) {
		/* Its appends now find it dead, or its directory replaced. */
		__atomic_store_n(&victim->lv.dead, true, __ATOMIC_RELEASE);
		RB_REMOVE(tlog_part_tree, &t->parts, victim);
		tlog_part_unsched(victim);
		tlog_partition_put(victim);
	}
	RB_REMOVE(tlog_part_tree, &t->parts, p);
	free(p->lv.name);
	p->lv.name = nname;
	nname = NULL;
	RB_INSERT(tlog_part_tree, &t->parts, p);
	renamed = true;
out:
	pthread_rwlock_unlock(&reg->root->tree->lock);
	if (renamed)
		tlog_reg_sync_parent(reg, tfd, to);
	else if (tfd >= 0)
		close(tfd);
out_free:
	free(nname);
	return r;
}

static int
dirent_push(struct tlog_dirent **a, size_t *n, size_t *cap, const char *name,
    uint64_t ino)
{
	void *na;

	if ((na = tlog_grow(*a, cap, *n, sizeof(**a), 16)) == NULL)
		return -ENOMEM;
	*a = na;
	strlcpy((*a)[*n].name, name, sizeof((*a)[*n].name));
	(*a)[*n].ino = ino;
	(*n)++;
	return 0;
}

int
tlog_reg_topic_list(struct tlog_registry *reg, struct tlog_dirent **out,
    size_t *n)
{
	struct tlog_topic *t;
	size_t cap = 0;
	int r = 0;

	*out = NULL;
	*n = 0;
	pthread_rwlock_rdlock(&reg->root->tree->lock);
	RB_FOREACH(t, tlog_topic_tree, &reg->topics)
		if ((r = dirent_push(out, n, &cap, t->lv.name, t->lv.ino)) != 0)
			break;
	pthread_rwlock_unlock(&reg->root->tree->lock);
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

int
tlog_reg_partitions(struct tlog_registry *reg, struct tlog_partition ***out,
    size_t *n)
{
	struct tlog_partition **v = NULL, *p;
	struct tlog_topic *t;
	size_t cap = 0;
	int r = 0;

	*n = 0;
	pthread_rwlock_rdlock(&reg->root->tree->lock);
	RB_FOREACH(t, tlog_topic_tree, &reg->topics) {
		RB_FOREACH(p, tlog_part_tree, &t->parts) {
			void *nv = tlog_grow(v, &cap, *n, sizeof(*v), 256);

			if (nv == NULL) {
				r = -ENOMEM;
				goto out;
			}
			v = nv;
			tlog_part_ref(p);
			v[(*n)++] = p;
		}
	}
out:
	pthread_rwlock_unlock(&reg->root->tree->lock);
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
 * Opens the directory entry name in dirfd as a level directory. Anything
 * else (a symlink, a file, a device, a FIFO) is a stray: never followed,
 * never shown, left alone, logged once (here, at open). Returns the
 * descriptor or -1.
 */
static int
open_level(struct tlog_registry *reg, int dirfd, const char *where,
    const char *name)
{
	struct tlog_ctx *ctx = reg->penv->ctx;
	struct stat st;
	int fd;

	if (tlog_name_check(name) != 0) {
		tlog_ctx_log(ctx, LOG_WARNING, "ignoring %s%s: not a valid "
		    "topic or partition name", where, name);
		return -1;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		tlog_ctx_log(ctx, LOG_WARNING, "ignoring %s%s: a symbolic "
		    "link, never followed", where, name);
	else
		tlog_ctx_log(ctx, LOG_WARNING, "ignoring stray %s%s: not a "
		    "directory", where, name);
	return -1;
}

/*
 * Loads the levels in directory dirfd: the store's topics (t NULL), each
 * with its partitions, or topic t's partitions. The listing is read
 * through a descriptor of its own.
 */
static int
load_levels(struct tlog_registry *reg, struct tlog_topic *t, int dirfd)
{
	char where[TLOG_NAME_MAX + 2], path[TLOG_NAME_MAX + 2 + NAME_MAX + 1];
	struct tlog_topic *nt;
	struct tlog_partition *p;
	struct tlog_level *lv;
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	fd = t == NULL ? openat(dirfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC) : dup(dirfd);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -errno;
	}
	snprintf(where, sizeof(where), "%s%s", t != NULL ? t->lv.name : "",
	    t != NULL ? "/" : "");
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' ||
		    (fd = open_level(reg, dirfd, where, de->d_name)) < 0)
			continue;
		snprintf(path, sizeof(path), "%s%s", where, de->d_name);
		lv = NULL;
		if (t == NULL && (nt = tlog_topic_alloc(reg, de->d_name)) != NULL)
			lv = &nt->lv;
		else if (t != NULL && (p = tlog_part_alloc(&t->lv, de->d_name,
		    reg->penv)) != NULL) {
			lv = &p->lv;
			tlog_level_set_dir(lv, fd);
		}
		if (lv == NULL) {
			r = -ENOMEM;
		} else {
			load_attr(reg, lv, fd, path);
			tlog_level_load_conf(lv, reg->penv->ctx, fd, path,
			    ".config");
			if (t != NULL)
				RB_INSERT(tlog_part_tree, &t->parts, p);
			else {
				RB_INSERT(tlog_topic_tree, &reg->topics, nt);
				r = load_levels(reg, nt, fd);
			}
		}
		close(fd);
	}
	closedir(d);
	return r;
}

int
tlog_reg_load(struct tlog_registry *reg)
{
	return load_levels(reg, NULL, reg->root->tree->dirfd);
}
