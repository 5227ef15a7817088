/*
 * level.h - the levels of a store's tree: the store itself, its topics and
 * their partitions. A level has a name (the store has none), a parent, its
 * own settings, an inode number, a directory and a dead flag. Settings are
 * inherited: a level's value is its own, else its parent's, up to the
 * store's, else the built-in default (doc/design.md §5).
 *
 * Names and dead flags change under the tree lock (written by the
 * registry: create, remove, rename). A level's directory is always
 * reached by its current path under that lock, and checked against the
 * identity recorded when it was made or loaded, so a path that now names
 * another directory (after a rename over it, or rmdir and mkdir) is never
 * used (doc/engine.md, "Threads and locks").
 */
#ifndef TLOG_LEVEL_H
#define TLOG_LEVEL_H

#include <sys/types.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"

/* What all the levels of one store share. */
struct tlog_tree {
	pthread_rwlock_t lock;		/* names, dead flags, the registry */
	int dirfd;			/* the store's directory */
};

struct tlog_level {
	struct tlog_tree *tree;
	struct tlog_level *parent;	/* NULL for the store; referenced if
					   counted */
	char *name;			/* under tree->lock; NULL: the store */
	/* This level's own settings; NULL until it sets one (most
	 * partitions never do). Made once under the store's admin_lock, or
	 * before the level is shared, published atomically and freed with
	 * the level: readers take no lock. */
	struct tlog_conf *conf;
	uint64_t ino;
	int refs;			/* atomic count; the last put frees */
	/* Removed or replaced: a flag set once (tree lock held) that
	 * publishes nothing; unlocked readers take it as a hint, and what
	 * acts on it decides again under the tree or partition lock. */
	bool dead;
	/* A topic's or partition's mode and owner as the mount shows
	 * them (tlog_owner: uid and gid in one word), kept in the
	 * directory's user.tlogfs.attr, never on the directory itself,
	 * which stays 0700 and the daemon's (doc/format.md, "A private
	 * store"); written under the store's admin_lock, read atomically. */
	unsigned mode;
	uint64_t owner;
	bool has_id;			/* the directory's identity is known */
	dev_t dev;
	ino_t dino;
	/* Frees the object holding the level when the last reference goes;
	 * NULL for the store's level, which is not counted. */
	void (*free)(struct tlog_level *);
};

/* One reference, held by the caller; the parent (if counted) gains one. */
int tlog_level_init(struct tlog_level *lv, struct tlog_tree *tree,
    struct tlog_level *parent, const char *name, uint64_t ino,
    void (*free_fn)(struct tlog_level *));
/* Just before lv's memory goes: drops its name, settings and parent. */
void tlog_level_destroy(struct tlog_level *lv);
void tlog_level_ref(struct tlog_level *lv);
void tlog_level_put(struct tlog_level *lv);

/* The effective value of key k at lv: inheritance, in one place. */
int64_t tlog_level_conf(const struct tlog_level *lv, enum tlog_key k);
/* The effective value of every key at lv, as tlog_level_conf gives it. */
void tlog_level_conf_all(const struct tlog_level *lv, int64_t v[TLOG_NKEYS]);
/* lv's own value of k, or TLOG_UNSET; no lock. */
int64_t tlog_level_own(const struct tlog_level *lv, enum tlog_key k);
/* lv's own settings, or one that sets nothing; no lock. */
const struct tlog_conf *tlog_level_conf_of(const struct tlog_level *lv);
/* Sets lv's own value of k (the store's admin_lock held, or lv not yet
 * shared); 0 or -ENOMEM, before anything changed. Never fails after
 * tlog_level_reserve. */
int tlog_level_assign(struct tlog_level *lv, enum tlog_key k, int64_t v);
int tlog_level_reserve(struct tlog_level *lv);
/* Loads lv's own settings from path in dirfd (lv not yet shared); dir
 * is lv's name in the store, for log lines. */
int tlog_level_load_conf(struct tlog_level *lv, struct tlog_ctx *ctx,
    int dirfd, const char *dir, const char *path);
/* The extended attribute of a topic's or partition's directory that
 * holds its mode and owner: "MODE UID GID", the mode in octal. */
#define TLOG_ATTR_XATTR "user.tlogfs.attr"
/* Writes lv's mode and owner to its open directory fd; 0 or -errno
 * (-ENOTSUP: the file system keeps no user xattrs). */
int tlog_level_save_attr(int fd, unsigned mode, uint64_t owner);
/*
 * Loads lv's mode and owner from its open directory fd (lv not yet
 * shared), where is its name in the store: one getxattr. A directory
 * without them (a store made before they were kept so) gives its own,
 * which are saved; then, if it is not 0700 and the daemon's, it is made
 * so, and, if others could write it, what they own in it is moved to
 * .tlogfs/foreign/: returns 1 then, else 0. A read-only store changes
 * nothing, and one with such a directory others may write is refused
 * (-EPERM, said). -ENOTSUP: the file system keeps no user xattrs; lv
 * has the directory's own.
 */
int tlog_level_load_attr(struct tlog_level *lv, struct tlog_ctx *ctx,
    int fd, const char *where);
/* Copies the current name (it may be renamed at any time). */
void tlog_level_name(struct tlog_level *lv, char *buf, size_t len);
/* Dead, or below a dead level (tree lock held, or a racy hint). */
bool tlog_level_dead(const struct tlog_level *lv);
/* Path relative to the store's directory ("." for the store itself);
 * the tree lock is held so names are stable. */
int tlog_level_path(const struct tlog_level *lv, char *buf, size_t len);
/* The same for lv's config file (.tlogfs/config for the store). */
int tlog_level_conf_path(const struct tlog_level *lv, char *buf, size_t len);
/* The same for a log line, taking the tree lock ("?" if it does not
 * fit). */
void tlog_level_where(struct tlog_level *lv, char *buf, size_t len);
/*
 * The level's own directory, opened by its current path and checked
 * against its identity: a new descriptor, or -ENOENT once the level is
 * dead or its path names another directory. What is created through the
 * descriptor lands in this level or fails. _locked: the caller holds the
 * tree lock.
 */
int tlog_level_dir(struct tlog_level *lv);
int tlog_level_dir_locked(struct tlog_level *lv);
/* Records the identity of lv's directory from an open descriptor of it. */
int tlog_level_set_dir(struct tlog_level *lv, int dfd);
/* Opens the regular file `file` in lv's directory (O_CLOEXEC |
 * O_NOFOLLOW | O_NONBLOCK added). Anything else at that name (a FIFO, a
 * device, a socket put there behind the store) is never opened, so no
 * FIFO blocks and no driver is reached, nor served: -EIO. With O_CREAT
 * | O_EXCL any entry there is -EEXIST, unopened. */
int tlog_level_openat(struct tlog_level *lv, const char *file, int flags,
    mode_t mode);
/* Unlinks file in lv's directory; no lock is held during the unlink. */
int tlog_level_unlinkat(struct tlog_level *lv, const char *file);

#endif /* TLOG_LEVEL_H */
