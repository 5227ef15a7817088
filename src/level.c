/*
 * level.c - the levels of a store's tree (level.h): names, inheritance of
 * settings, and each level's directory reached by its current path.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "ctx.h"
#include "level.h"

int
tlog_level_init(struct tlog_level *lv, struct tlog_tree *tree,
    struct tlog_level *parent, const char *name, uint64_t ino,
    void (*free_fn)(struct tlog_level *))
{
	memset(lv, 0, sizeof(*lv));
	if (name != NULL && (lv->name = strdup(name)) == NULL)
		return -ENOMEM;
	lv->tree = tree;
	lv->parent = parent;
	lv->ino = ino;
	lv->refs = 1;
	lv->free = free_fn;
	lv->mode = 0755;
	lv->owner = tlog_owner(geteuid(), getegid());
	if (parent != NULL)
		tlog_level_ref(parent);
	return 0;
}

void
tlog_level_destroy(struct tlog_level *lv)
{
	free(lv->name);
	free(lv->conf);
	tlog_level_put(lv->parent);
}

void
tlog_level_ref(struct tlog_level *lv)
{
	if (lv->free != NULL)
		__atomic_add_fetch(&lv->refs, 1, __ATOMIC_RELAXED);
}

void
tlog_level_put(struct tlog_level *lv)
{
	if (lv == NULL || lv->free == NULL ||
	    __atomic_sub_fetch(&lv->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	lv->free(lv);
}

int64_t
tlog_level_conf(const struct tlog_level *lv, enum tlog_key k)
{
	int64_t v;

	for (; lv != NULL; lv = lv->parent)
		if ((v = tlog_level_own(lv, k)) != TLOG_UNSET)
			return v;
	return tlog_key_default(k);
}

/* One walk up the levels for every key: the append path needs six, and
 * a walk per key was most of its lookups. */
void
tlog_level_conf_all(const struct tlog_level *lv, int64_t v[TLOG_NKEYS])
{
	const struct tlog_conf *c;
	int k, left = TLOG_NKEYS;

	for (k = 0; k < TLOG_NKEYS; k++)
		v[k] = TLOG_UNSET;
	for (; lv != NULL && left > 0; lv = lv->parent) {
		if ((c = __atomic_load_n(&lv->conf, __ATOMIC_ACQUIRE)) == NULL)
			continue;
		for (k = 0; k < TLOG_NKEYS; k++)
			if (v[k] == TLOG_UNSET &&
			    (v[k] = tlog_conf_value(c, k)) != TLOG_UNSET)
				left--;
	}
	for (k = 0; k < TLOG_NKEYS; k++)
		if (v[k] == TLOG_UNSET)
			v[k] = tlog_key_default(k);
}

int64_t
tlog_level_own(const struct tlog_level *lv, enum tlog_key k)
{
	return tlog_conf_value(tlog_level_conf_of(lv), k);
}

const struct tlog_conf *
tlog_level_conf_of(const struct tlog_level *lv)
{
	static const struct tlog_conf none = {
		.v = { [0 ... TLOG_NKEYS - 1] = TLOG_UNSET }
	};
	const struct tlog_conf *c = __atomic_load_n(&lv->conf,
	    __ATOMIC_ACQUIRE);

	return c != NULL ? c : &none;
}

/* Makes lv's own settings (all unset) if it has none yet. */
int
tlog_level_reserve(struct tlog_level *lv)
{
	struct tlog_conf *c;

	if (lv->conf != NULL)
		return 0;
	if ((c = malloc(sizeof(*c))) == NULL)
		return -ENOMEM;
	tlog_conf_init(c);
	__atomic_store_n(&lv->conf, c, __ATOMIC_RELEASE);
	return 0;
}

int
tlog_level_assign(struct tlog_level *lv, enum tlog_key k, int64_t v)
{
	if (lv->conf == NULL && v == TLOG_UNSET)
		return 0;
	if (tlog_level_reserve(lv) != 0)
		return -ENOMEM;
	tlog_conf_assign(lv->conf, k, v);
	return 0;
}

int
tlog_level_load_conf(struct tlog_level *lv, struct tlog_ctx *ctx, int dirfd,
    const char *dir, const char *path)
{
	struct tlog_conf nc;
	int i, r;

	r = tlog_conf_load(ctx, dirfd, dir, path, &nc);
	for (i = 0; i < TLOG_NKEYS; i++)
		if (tlog_level_assign(lv, i, nc.v[i]) != 0)
			return -ENOMEM;
	return r;
}

int
tlog_level_save_attr(int fd, unsigned mode, uint64_t owner)
{
	char buf[64];
	int n;

	n = snprintf(buf, sizeof(buf), "%04o %u %u", mode & 07777,
	    (unsigned)tlog_owner_uid(owner), (unsigned)tlog_owner_gid(owner));
	if (fsetxattr(fd, TLOG_ATTR_XATTR, buf, (size_t)n, 0) == -1)
		return errno == EOPNOTSUPP ? -ENOTSUP : -errno;
	return 0;
}

/* Others could write the directory st describes. */
static bool
unsafe_dir(const struct stat *st)
{
	return st->st_uid != geteuid() || (st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * Moves out of lv's directory fd, which others could write until now,
 * every file that is not the daemon's (the daemon makes none that are
 * not), into the store's .tlogfs/foreign/ under its inode number, each
 * said in one line with where it was: it is not the store's, and nothing
 * of it is read. One that cannot be moved is removed; -1 if one can be
 * neither (the store must not be opened). A topic's partitions stay
 * (made private in turn).
 */
static int
foreign_out(struct tlog_level *lv, struct tlog_ctx *ctx, int fd,
    const char *where)
{
	char to[32], who[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int dfd, qfd, r = 0;
	DIR *d;

	(void)mkdirat(lv->tree->dirfd, ".tlogfs/foreign", 0700);
	qfd = openat(lv->tree->dirfd, ".tlogfs/foreign", O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* Its own open: a dup would move the caller's directory offset. */
	if ((dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1 || (d = fdopendir(dfd)) == NULL) {
		if (dfd != -1)
			close(dfd);
		if (qfd != -1)
			close(qfd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    st.st_uid == geteuid() ||
		    (S_ISDIR(st.st_mode) && lv->parent->parent == NULL))
			continue;
		snprintf(to, sizeof(to), "%ju", (uintmax_t)st.st_ino);
		snprintf(who, sizeof(who), "%s/%s: owned by uid %u, not the "
		    "daemon's, in a directory others could write", where,
		    de->d_name, (unsigned)st.st_uid);
		if (qfd != -1 && renameat(fd, de->d_name, qfd, to) == 0)
			tlog_ctx_log(ctx, LOG_WARNING, "%s: not the store's, "
			    "moved to .tlogfs/foreign/%s", who, to);
		else if (unlinkat(fd, de->d_name, S_ISDIR(st.st_mode) ?
		    AT_REMOVEDIR : 0) == 0)
			tlog_ctx_log(ctx, LOG_WARNING, "%s: not the store's, "
			    "and it could not be moved to .tlogfs/foreign/: "
			    "removed", who);
		else {
			tlog_ctx_log(ctx, LOG_ERR, "%s: it can be neither "
			    "moved nor removed (%s); the store is not opened "
			    "until it is gone", who, strerror(errno));
			r = -1;
		}
	}
	closedir(d);
	if (qfd != -1)
		close(qfd);
	return r;
}

int
tlog_level_load_attr(struct tlog_level *lv, struct tlog_ctx *ctx, int fd,
    const char *where)
{
	unsigned mode, uid, gid;
	struct stat st;
	char buf[64], end;
	bool nosup;
	ssize_t n;
	int r;

	n = fgetxattr(fd, TLOG_ATTR_XATTR, buf, sizeof(buf) - 1);
	nosup = n == -1 && errno == EOPNOTSUPP;
	if (n >= 0) {
		buf[n] = '\0';
		/* (uid_t)-1 means "unchanged" to chown: never an owner. */
		if (sscanf(buf, "%o %u %u%c", &mode, &uid, &gid, &end) == 3 &&
		    mode <= 07777 && uid != (unsigned)-1 &&
		    gid != (unsigned)-1) {
			/* Made private when it got the attribute; behind
			 * the store's 0700, nobody else has reached it
			 * since. One syscall a level at every open. */
			lv->mode = mode;
			lv->owner = tlog_owner(uid, gid);
			return 0;
		}
		tlog_ctx_log(ctx, LOG_WARNING, "%s: " TLOG_ATTR_XATTR " is "
		    "not \"MODE UID GID\"; it takes its directory's", where);
	}
	if (fstat(fd, &st) == -1)
		return -errno;
	lv->mode = st.st_mode & 07777;
	lv->owner = tlog_owner(st.st_uid, st.st_gid);
	if (nosup)
		return -ENOTSUP;
	if (ctx->ro) {
		if (!unsafe_dir(&st))
			return 0;
		tlog_ctx_log(ctx, LOG_ERR, "%s: others may write its "
		    "directory (uid %u, mode %04o): what they put there "
		    "cannot be told from the store's; refused read-only "
		    "(a read-write mount makes it private)", where,
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if ((r = tlog_level_save_attr(fd, lv->mode, lv->owner)) != 0) {
		if (r != -ENOTSUP)
			tlog_ctx_log(ctx, LOG_ERR, "%s: cannot save its mode "
			    "and owner: %s; its directory keeps them", where,
			    strerror(-r));
		return r;
	}
	if (st.st_uid == geteuid() && st.st_gid == getegid() &&
	    (st.st_mode & 07777) == 0700)
		return 0;
	/* Owner first: a chown may clear the mode's set-id bits. */
	if (fchown(fd, geteuid(), getegid()) == -1 ||
	    fchmod(fd, 0700) == -1) {
		tlog_ctx_log(ctx, LOG_ERR, "%s: cannot make its directory "
		    "the daemon's alone (0700): %s", where, strerror(errno));
		return 0;
	}
	if (!unsafe_dir(&st))
		return 1;
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
		tlog_ctx_log(ctx, LOG_WARNING, "%s: others could write it "
		    "(mode %04o, not sticky), so they could also have renamed "
		    "or moved the store's own files in it, which tlogfs cannot "
		    "tell: check what it holds", where,
		    (unsigned)(st.st_mode & 07777));
	return foreign_out(lv, ctx, fd, where) == 0 ? 1 : -EPERM;
}

void
tlog_level_name(struct tlog_level *lv, char *buf, size_t len)
{
	pthread_rwlock_rdlock(&lv->tree->lock);
	strlcpy(buf, lv->name != NULL ? lv->name : "", len);
	pthread_rwlock_unlock(&lv->tree->lock);
}

void
tlog_level_where(struct tlog_level *lv, char *buf, size_t len)
{
	pthread_rwlock_rdlock(&lv->tree->lock);
	if (tlog_level_path(lv, buf, len) != 0)
		strlcpy(buf, "?", len);
	pthread_rwlock_unlock(&lv->tree->lock);
}

bool
tlog_level_dead(const struct tlog_level *lv)
{
	for (; lv != NULL; lv = lv->parent)
		if (__atomic_load_n(&lv->dead, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

int
tlog_level_path(const struct tlog_level *lv, char *buf, size_t len)
{
	int n;

	if (lv->parent == NULL)
		n = snprintf(buf, len, ".");
	else if (lv->parent->parent == NULL)
		n = snprintf(buf, len, "%s", lv->name);
	else
		n = snprintf(buf, len, "%s/%s", lv->parent->name, lv->name);
	return (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
tlog_level_conf_path(const struct tlog_level *lv, char *buf, size_t len)
{
	char dir[2 * TLOG_NAME_MAX + 2];
	int n;

	if (lv->parent == NULL)
		n = snprintf(buf, len, ".tlogfs/config");
	else if (tlog_level_path(lv, dir, sizeof(dir)) != 0)
		return -ENAMETOOLONG;
	else
		n = snprintf(buf, len, "%s/.config", dir);
	return (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int
tlog_level_dir_locked(struct tlog_level *lv)
{
	char path[2 * TLOG_NAME_MAX + 2];
	struct stat st;
	int fd, r;

	if (tlog_level_dead(lv))
		return -ENOENT;
	if ((r = tlog_level_path(lv, path, sizeof(path))) != 0)
		return r;
	fd = tlog_open_beneath(lv->tree->dirfd, path, O_RDONLY | O_DIRECTORY);
	if (fd >= 0 && lv->has_id && (fstat(fd, &st) == -1 ||
	    st.st_dev != lv->dev || st.st_ino != lv->dino)) {
		close(fd);
		fd = -ENOENT;
	}
	return fd;
}

int
tlog_level_dir(struct tlog_level *lv)
{
	int fd;

	pthread_rwlock_rdlock(&lv->tree->lock);
	fd = tlog_level_dir_locked(lv);
	pthread_rwlock_unlock(&lv->tree->lock);
	return fd;
}

int
tlog_level_set_dir(struct tlog_level *lv, int dfd)
{
	struct stat st;

	if (fstat(dfd, &st) == -1)
		return -errno;
	lv->dev = st.st_dev;
	lv->dino = st.st_ino;
	lv->has_id = true;
	return 0;
}

int
tlog_level_openat(struct tlog_level *lv, const char *file, int flags,
    mode_t mode)
{
	struct stat st;
	int dfd, fd;

	if ((dfd = tlog_level_dir(lv)) < 0)
		return dfd;
	/* Looked at before the open, so that it opens no device, and after
	 * it, for an entry swapped in between. */
	if (!(flags & O_EXCL) && tlog_not_regular(dfd, file))
		fd = -EIO;
	else if ((fd = openat(dfd, file, flags | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK, mode)) == -1)
		fd = -errno;
	else if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		fd = -EIO;
	}
	close(dfd);
	return fd;
}

int
tlog_level_unlinkat(struct tlog_level *lv, const char *file)
{
	int dfd, r = 0;

	if ((dfd = tlog_level_dir(lv)) < 0)
		return dfd;
	if (unlinkat(dfd, file, 0) == -1)
		r = -errno;
	close(dfd);
	return r;
}
