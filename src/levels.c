/*
 * levels.c - what a user changes on a level (the store, a topic, a
 * partition): its settings, set, read and unset (doc/design.md §5), and
 * its backing directory's mode, owner and fsync.
 *
 * A setting is written to the level's key=value file (atomically and
 * durably, through the level's own directory) before the value applies:
 * if the file cannot be written nothing changes, in memory or on disk.
 * Then the partitions it governs are rescheduled (tlog_store_resched).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "store.h"

static struct tlog_level *
level_of(struct tlog_store *s, struct tlog_topic *t, struct tlog_partition *p)
{
	if (p != NULL)
		return &p->lv;
	if (t != NULL)
		return &t->lv;
	return &s->root;
}

/* Copies a message into the caller's buffer, if there is one. */
static void
set_err(char *err, size_t errlen, const char *msg)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", msg);
}

/*
 * Writes the level's config with key k set to v (TLOG_UNSET: dropped),
 * then, only if that worked, applies it. Caller holds admin_lock and
 * the tree lock (read, so the level's path cannot change under the
 * write).
 */
static int
level_commit(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, enum tlog_key k, int64_t v, char *err,
    size_t errlen)
{
	struct tlog_level *lv = level_of(s, t, p);
	struct tlog_conf copy;
	char path[PATH_MAX], msg[PATH_MAX + 128];
	int i, r, dfd;

	/* Room for the value first: nothing may fail once the file
	 * says it. */
	if (v != TLOG_UNSET && tlog_level_reserve(lv) != 0) {
		r = -ENOMEM;
		snprintf(msg, sizeof(msg), "%s: %s", tlog_key_name(k),
		    strerror(ENOMEM));
		goto fail;
	}
	for (i = 0; i < TLOG_NKEYS; i++)
		copy.v[i] = tlog_level_own(lv, i);
	copy.v[k] = v;
	if (tlog_level_conf_path(lv, path, sizeof(path)) != 0)
		strlcpy(path, ".config", sizeof(path));
	/* Written through the level's own directory, never a path that a
	 * rename could make name another level. */
	if (lv->parent == NULL)
		dfd = tlog_open_beneath(s->tree.dirfd, ".tlogfs",
		    O_RDONLY | O_DIRECTORY);
	else
		dfd = tlog_level_dir_locked(lv);
	if (dfd < 0) {
		r = dfd;
		snprintf(msg, sizeof(msg), "%s: cannot open the directory of "
		    "%s: %s", tlog_key_name(k), path, strerror(-r));
		goto fail;
	}
	r = tlog_conf_save(dfd, lv->parent == NULL ? "config" : ".config",
	    &copy);
	close(dfd);
	if (r != 0) {
		snprintf(msg, sizeof(msg), "%s: cannot save %s: %s",
		    tlog_key_name(k), path, strerror(-r));
		goto fail;
	}
	(void)tlog_level_assign(lv, k, v);	/* reserved above */
	/* A new floor is checked at once, and at the next append. */
	if (k == TLOG_RETENTION_KEEP_FREE)
		tlog_store_free_changed(s);
	return 0;
fail:
	set_err(err, errlen, msg);
	tlog_ctx_log(&s->ctx, LOG_ERR, "%s", msg);
	return r;
}

/* Sets k to v, or unsets it (TLOG_UNSET), then reschedules; value and
 * len are what was asked, for the message of a value past its bound. */
static int
level_change(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, enum tlog_key k, int64_t v, const char *value,
    size_t len, char *err, size_t errlen)
{
	struct tlog_level *lv = level_of(s, t, p);
	char msg[TLOG_CONF_MSG_MAX], where[2 * TLOG_NAME_MAX + 2];
	int64_t lim;
	int up, r;

	pthread_mutex_lock(&s->admin_lock);
	pthread_rwlock_rdlock(&s->tree.lock);
	if (tlog_level_dead(lv)) {
		set_err(err, errlen, "no such topic or partition");
		r = -ENOENT;
	} else if (v == TLOG_UNSET && tlog_level_own(lv, k) == TLOG_UNSET)
		r = -ENODATA;
	/* the bound as effective at this very level (TLOG_UNSET is below) */
	else if ((up = tlog_key_upper(k)) >= 0 &&
	    v > (lim = tlog_level_conf(lv, up))) {
		tlog_key_bad_value(k, value, len, lim, msg, sizeof(msg));
		set_err(err, errlen, msg);
		if (tlog_level_path(lv, where, sizeof(where)) != 0)
			strlcpy(where, "?", sizeof(where));
		tlog_ctx_log(&s->ctx, LOG_WARNING, "%s: %s", where, msg);
		r = -EINVAL;
	} else
		r = level_commit(s, t, p, k, v, err, errlen);
	pthread_rwlock_unlock(&s->tree.lock);
	pthread_mutex_unlock(&s->admin_lock);
	if (r == 0)
		tlog_store_resched(s, t, p);
	return r;
}

/* A value refused before any lock is taken: the caller's message and
 * the one log line, "LEVEL: msg". */
static void
refuse(struct tlog_store *s, struct tlog_level *lv, const char *msg,
    char *err, size_t errlen)
{
	char where[2 * TLOG_NAME_MAX + 2];

	set_err(err, errlen, msg);
	tlog_level_where(lv, where, sizeof(where));
	tlog_ctx_log(&s->ctx, LOG_WARNING, "%s: %s", where, msg);
}

int
tlog_conf_set(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *key, const char *value, size_t len,
    char *err, size_t errlen)
{
	struct tlog_level *lv = level_of(s, t, p);
	char msg[TLOG_CONF_MSG_MAX];
	struct statvfs sv;
	int64_t v;
	int k, r;

	set_err(err, errlen, "");
	if (s->ctx.ro) {
		set_err(err, errlen, "the store is open read-only");
		return -EROFS;
	}
	k = tlog_key_lookup(key);
	if (k < 0) {
		tlog_key_unknown(key, err, errlen);
		return -ENOTSUP;
	}
	/* Free space is the file system's, which the whole store shares. */
	if (k == TLOG_RETENTION_KEEP_FREE && (t != NULL || p != NULL)) {
		snprintf(msg, sizeof(msg), "%s: set on the mount root only",
		    key);
		r = -EINVAL;
	} else
		r = tlog_key_parse(k, value, len, &v, msg, sizeof(msg));
	/* A floor of bytes the file system does not have would delete
	 * every record at once (16G typed for 16M): refused. */
	if (r == 0 && k == TLOG_RETENTION_KEEP_FREE && v >= 0 &&
	    statvfs(s->path, &sv) == 0 &&
	    (uint64_t)v >= (uint64_t)sv.f_blocks * sv.f_frsize) {
		snprintf(msg, sizeof(msg), "%s: bad value \"%.*s\": at most "
		    "the file system's size, %llu bytes, or N%% (1-99)", key,
		    (int)(len < 32 ? len : 32), value,
		    (unsigned long long)sv.f_blocks * sv.f_frsize);
		r = -EINVAL;
	}
	if (r != 0) {
		refuse(s, lv, msg, err, errlen);
		return r;
	}
	return level_change(s, t, p, k, v, value, len, err, errlen);
}

int
tlog_conf_refuse(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *name, const char *value,
    size_t len, const char *accepted)
{
	char msg[TLOG_CONF_MSG_MAX];

	tlog_bad_value(name, value, len, accepted, msg, sizeof(msg));
	refuse(s, level_of(s, t, p), msg, NULL, 0);
	return -EINVAL;
}

int
tlog_conf_get(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *key, int64_t *out)
{
	int k;

	k = tlog_key_lookup(key);
	if (k < 0)
		return -ENOTSUP;
	*out = tlog_level_conf(level_of(s, t, p), k);
	return 0;
}

int
tlog_conf_unset(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *key)
{
	int k;

	if (s->ctx.ro)
		return -EROFS;
	k = tlog_key_lookup(key);
	if (k < 0)
		return -ENOTSUP;
	return level_change(s, t, p, k, TLOG_UNSET, NULL, 0, NULL, 0);
}

/* ---- the backing directory ---- */

int
tlog_level_stat(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, struct stat *st)
{
	struct tlog_level *lv = level_of(s, t, p);
	uint64_t owner;
	unsigned mode;
	int fd, r = 0;

	if ((fd = tlog_level_dir(lv)) < 0)
		return fd;
	if (fstat(fd, st) == -1)
		r = -errno;
	close(fd);
	if (r != 0 || (lv->parent != NULL &&
	    __atomic_load_n(&s->ctx.attr_on_dir, __ATOMIC_RELAXED)))
		return r;
	/* The store's own are kept apart (tlog_store_root_attr). */
	mode = __atomic_load_n(lv->parent == NULL ? &s->root_mode : &lv->mode,
	    __ATOMIC_RELAXED);
	owner = __atomic_load_n(lv->parent == NULL ? &s->root_owner :
	    &lv->owner, __ATOMIC_RELAXED);
	st->st_mode = (st->st_mode & S_IFMT) | mode;
	st->st_uid = tlog_owner_uid(owner);
	st->st_gid = tlog_owner_gid(owner);
	return 0;
}

/*
 * A topic's or partition's new mode and owner (mode, uid or gid -1:
 * unchanged): saved in its directory's extended attribute and synced
 * before they apply; the directory itself stays 0700 and the daemon's.
 * The store's own (t and p NULL): tlog_store_root_attr.
 */
static int
level_attr(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, mode_t mode, uid_t uid, gid_t gid)
{
	struct tlog_level *lv = level_of(s, t, p);
	uint64_t owner;
	int fd, r = 0;

	if (s->ctx.ro)
		return -EROFS;
	if (t == NULL && p == NULL)
		return tlog_store_root_attr(s, mode, uid, gid);
	if ((fd = tlog_level_dir(lv)) < 0)
		return fd;
	if (__atomic_load_n(&s->ctx.attr_on_dir, __ATOMIC_RELAXED)) {
		/* The file system keeps no user xattrs (said at open). */
		if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
		    fchown(fd, uid, gid) == -1)
			r = -errno;
		else if (mode != (mode_t)-1 && fchmod(fd, mode & 07777) == -1)
			r = -errno;
		close(fd);
		return r;
	}
	pthread_mutex_lock(&s->admin_lock);
	owner = lv->owner;
	owner = tlog_owner(uid != (uid_t)-1 ? uid : tlog_owner_uid(owner),
	    gid != (gid_t)-1 ? gid : tlog_owner_gid(owner));
	if (mode == (mode_t)-1)
		mode = lv->mode;
	if ((r = tlog_level_save_attr(fd, mode & 07777, owner)) == 0 &&
	    fsync(fd) == -1)
		r = -errno;
	if (r == 0) {
		__atomic_store_n(&lv->mode, mode & 07777, __ATOMIC_RELAXED);
		__atomic_store_n(&lv->owner, owner, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&s->admin_lock);
	close(fd);
	return r;
}

int
tlog_level_chmod(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, mode_t mode)
{
	return level_attr(s, t, p, mode, (uid_t)-1, (gid_t)-1);
}

int
tlog_level_chown(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, uid_t uid, gid_t gid)
{
	return level_attr(s, t, p, (mode_t)-1, uid, gid);
}

int
tlog_level_fsync(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p)
{
	int fd, r;

	if ((fd = tlog_level_dir(level_of(s, t, p))) < 0)
		return fd;
	/* No lock held while the disk works. */
	r = tlog_fsync_dir(fd, ".");
	close(fd);
	return r;
}
