/*
 * level.c - the levels of a store's tree (level.h): names, inheritance of
 * settings, and each level's directory reached by its current path.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	tlog_conf_init(&lv->conf);
	if (parent != NULL)
		tlog_level_ref(parent);
	return 0;
}

void
tlog_level_destroy(struct tlog_level *lv)
{
	free(lv->name);
	lv->name = NULL;
	tlog_level_put(lv->parent);
	lv->parent = NULL;
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
		if ((v = tlog_conf_value(&lv->conf, k)) != TLOG_UNSET)
			return v;
	return tlog_key_default(k);
}

void
tlog_level_name(struct tlog_level *lv, char *buf, size_t len)
{
	pthread_rwlock_rdlock(&lv->tree->lock);
	strlcpy(buf, lv->name != NULL ? lv->name : "", len);
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
tlog_level_dir_locked(struct tlog_level *lv)
{
	char path[2 * TLOG_NAME_MAX + 2];
	struct stat st;
	int fd, r;

	if (tlog_level_dead(lv))
		return -ENOENT;
	if (lv->parent == NULL) {
		fd = openat(lv->tree->dirfd, ".", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
		return fd == -1 ? -errno : fd;
	}
	if ((r = tlog_level_path(lv, path, sizeof(path))) != 0)
		return r;
	fd = tlog_open_beneath(lv->tree->dirfd, path, O_RDONLY | O_DIRECTORY,
	    0);
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
	int dfd, fd;

	if ((dfd = tlog_level_dir(lv)) < 0)
		return dfd;
	if (strcmp(file, ".") == 0)
		return dfd;
	fd = openat(dfd, file, flags | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd == -1)
		fd = -errno;
	close(dfd);
	return fd;
}

int
tlog_level_unlinkat(struct tlog_level *lv, const char *file)
{
	int dfd, r = 0;

	/* The unlink itself runs with no engine lock held. */
	if ((dfd = tlog_level_dir(lv)) < 0)
		return dfd;
	if (unlinkat(dfd, file, 0) == -1)
		r = -errno;
	close(dfd);
	return r;
}
