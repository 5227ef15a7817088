/*
 * powercut.c - simulated power loss for the unit tests (see testhelp.h).
 *
 * The test programs define fsync(2), fdatasync(2) and syncfs(2)
 * themselves, so the engine's calls land here: each records what it made
 * durable (a file's content, a directory's entries; for syncfs,
 * everything tracked). The model is what the tests judge durability by,
 * so no call waits for the disk: each only checks its descriptor, as the
 * system call would (EBADF). th_powercut() then turns a store into what a power cut at that
 * moment may leave on disk, taking the worst case everywhere: a directory
 * entry that no fsync of its directory covered is gone (a rename is
 * undone, an unlinked file comes back, empty if no sync covered it),
 * and a file keeps only the content of its last sync, the rest of it
 * lost or zero-filled.
 *
 * The same seam injects faults: a sync of a file whose path contains
 * th_sync_fail fails with EIO, and th_unlink_hook runs before each
 * unlinkat(2), so a test can force an interleaving.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"

const char *volatile th_sync_fail;
unsigned th_sync_failed;
void (*volatile th_unlink_hook)(const char *name);

struct dent {
	char name[256];
	ino_t ino;
	unsigned char type;
};

/* What the last sync of one file or directory made durable. */
struct durable {
	dev_t dev;
	ino_t ino;
	bool dir;
	char *data;		/* file content */
	size_t len;
	struct dent *ents;	/* directory entries */
	size_t nents;
};

static pthread_mutex_t dur_lock = PTHREAD_MUTEX_INITIALIZER;
static struct durable *dur;
static size_t ndur;
static bool tracking;
static char *dur_root;		/* what th_dur_start tracks */

static struct durable *
dur_find(dev_t dev, ino_t ino)
{
	size_t i;

	for (i = 0; i < ndur; i++)
		if (dur[i].dev == dev && dur[i].ino == ino)
			return &dur[i];
	return NULL;
}

static struct durable *
dur_get(dev_t dev, ino_t ino)
{
	struct durable *d = dur_find(dev, ino);

	if (d != NULL)
		return d;
	dur = realloc(dur, (ndur + 1) * sizeof(*dur));
	if (dur == NULL)
		abort();
	d = &dur[ndur++];
	memset(d, 0, sizeof(*d));
	d->dev = dev;
	d->ino = ino;
	return d;
}

static char *
read_all(int fd, size_t *len)
{
	char *buf = NULL;
	size_t n = 0, cap = 0;
	ssize_t k;

	for (;;) {
		if (n + 65536 > cap) {
			cap = (n + 65536) * 2;
			if ((buf = realloc(buf, cap)) == NULL)
				abort();
		}
		k = pread(fd, buf + n, 65536, (off_t)n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	*len = n;
	return buf;
}

static int
list_dir(int fd, struct dent **out, size_t *n)
{
	struct dent *v = NULL;
	struct dirent *de;
	DIR *d;
	int dfd;

	*n = 0;
	if ((dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY)) == -1)
		return -1;
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if ((v = realloc(v, (*n + 1) * sizeof(*v))) == NULL)
			abort();
		snprintf(v[*n].name, sizeof(v[*n].name), "%s", de->d_name);
		v[*n].ino = de->d_ino;
		v[*n].type = de->d_type;
		(*n)++;
	}
	closedir(d);
	*out = v;
	return 0;
}

/* Records what a sync of fd made durable. */
static void
dur_record(int fd)
{
	struct durable *d;
	struct stat st;
	char path[64];
	int rfd;

	if (fstat(fd, &st) == -1)
		return;
	pthread_mutex_lock(&dur_lock);
	if (!tracking)
		goto out;
	d = dur_get(st.st_dev, st.st_ino);
	if (S_ISDIR(st.st_mode)) {
		d->dir = true;
		free(d->ents);
		d->ents = NULL;
		list_dir(fd, &d->ents, &d->nents);
	} else if (S_ISREG(st.st_mode)) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if ((rfd = open(path, O_RDONLY)) == -1)
			goto out;
		free(d->data);
		d->data = read_all(rfd, &d->len);
		close(rfd);
	}
out:
	pthread_mutex_unlock(&dur_lock);
}

/* A sync of a descriptor that is not open fails as the system call does. */
static bool
fd_ok(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

static bool
sync_fails(int fd)
{
	const char *pat = th_sync_fail;
	char path[64], target[4096];
	ssize_t n;

	if (pat == NULL)
		return false;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((n = readlink(path, target, sizeof(target) - 1)) <= 0)
		return false;
	target[n] = '\0';
	if (strstr(target, pat) == NULL)
		return false;
	__atomic_add_fetch(&th_sync_failed, 1, __ATOMIC_RELAXED);
	return true;
}

int
fsync(int fd)
{
	if (sync_fails(fd)) {
		errno = EIO;
		return -1;
	}
	if (!fd_ok(fd))
		return -1;
	dur_record(fd);
	return 0;
}

int
fdatasync(int fd)
{
	if (sync_fails(fd)) {
		errno = EIO;
		return -1;
	}
	if (!fd_ok(fd))
		return -1;
	dur_record(fd);
	return 0;
}

static void baseline(int fd);

/* The whole file system is on disk: everything tracked is durable. */
int
syncfs(int fd)
{
	int rfd;

	if (!fd_ok(fd))
		return -1;
	pthread_mutex_lock(&dur_lock);
	rfd = tracking && dur_root != NULL ?
	    open(dur_root, O_RDONLY | O_DIRECTORY) : -1;
	pthread_mutex_unlock(&dur_lock);
	if (rfd != -1) {
		baseline(rfd);
		close(rfd);
	}
	return 0;
}

int
unlinkat(int dirfd, const char *name, int flags)
{
	void (*hook)(const char *) = th_unlink_hook;

	if (hook != NULL)
		hook(name);
	return (int)syscall(SYS_unlinkat, dirfd, name, flags);
}

/* Everything under dir counts as durable as it is now. */
static void
baseline(int fd)
{
	struct dent *v;
	size_t n, i;
	int cfd;

	dur_record(fd);
	if (list_dir(fd, &v, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		cfd = openat(fd, v[i].name, O_RDONLY | O_NOFOLLOW);
		if (cfd == -1)
			continue;
		if (v[i].type == DT_DIR)
			baseline(cfd);
		else
			dur_record(cfd);
		close(cfd);
	}
	free(v);
}

void
th_dur_start(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(fd, 0);
	th_dur_stop();
	pthread_mutex_lock(&dur_lock);
	tracking = true;
	dur_root = strdup(dir);
	pthread_mutex_unlock(&dur_lock);
	baseline(fd);
	close(fd);
}

void
th_dur_stop(void)
{
	size_t i;

	pthread_mutex_lock(&dur_lock);
	tracking = false;
	for (i = 0; i < ndur; i++) {
		free(dur[i].data);
		free(dur[i].ents);
	}
	free(dur);
	dur = NULL;
	ndur = 0;
	free(dur_root);
	dur_root = NULL;
	pthread_mutex_unlock(&dur_lock);
}

static void
rm_rf_at(int dfd, const char *name)
{
	struct dent *v;
	size_t n, i;
	int fd;

	if (syscall(SYS_unlinkat, dfd, name, 0) == 0)
		return;
	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)) ==
	    -1)
		return;
	if (list_dir(fd, &v, &n) == 0) {
		for (i = 0; i < n; i++)
			rm_rf_at(fd, v[i].name);
		free(v);
	}
	close(fd);
	syscall(SYS_unlinkat, dfd, name, AT_REMOVEDIR);
}

static void
write_at(int dfd, const char *name, const char *buf, size_t len)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	if (len > 0)
		ck_assert_int_eq(pwrite(fd, buf, len, 0), (ssize_t)len);
	close(fd);
}

/* A file left with its durable content, the rest lost (mode). */
static void
cut_file(int dfd, const char *name, unsigned *seed, enum th_cut mode)
{
	struct durable *d;
	struct stat st;
	char *x, zero[4096];
	size_t xlen, dlen, b, e;
	int fd;

	if ((fd = openat(dfd, name, O_RDWR | O_NOFOLLOW)) == -1)
		return;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	d = dur_find(st.st_dev, st.st_ino);
	dlen = d != NULL ? d->len : 0;
	x = read_all(fd, &xlen);
	if (xlen < dlen || (d != NULL && memcmp(x, d->data, dlen) != 0)) {
		/* Changed below what was synced: the sync's state is back. */
		ck_assert_int_eq(ftruncate(fd, 0), 0);
		if (dlen > 0)
			ck_assert_int_eq(pwrite(fd, d->data, dlen, 0),
			    (ssize_t)dlen);
		free(x);
		close(fd);
		return;
	}
	memset(zero, 0, sizeof(zero));
	switch (mode) {
	case TH_CUT_TRUNCATE:
		ck_assert_int_eq(ftruncate(fd, (off_t)dlen), 0);
		break;
	case TH_CUT_ZERO:
	case TH_CUT_MIXED:
		/* Page by page: each unsynced one reached the disk or not;
		 * a page that did not reads back as zeros. */
		for (b = dlen; b < xlen; b = e) {
			e = (b / 4096 + 1) * 4096;
			if (e > xlen)
				e = xlen;
			if (mode == TH_CUT_MIXED && rand_r(seed) % 2 == 0)
				continue;
			ck_assert_int_eq(pwrite(fd, zero, e - b, (off_t)b),
			    (ssize_t)(e - b));
		}
		/* A file wholly synced is left as it is (its ctime too). */
		if (mode == TH_CUT_MIXED && xlen > dlen &&
		    rand_r(seed) % 3 == 0)
			ck_assert_int_eq(ftruncate(fd, (off_t)(dlen +
			    (xlen - dlen) / 2)), 0);
		break;
	}
	free(x);
	close(fd);
}

static bool
has_ent(const struct dent *v, size_t n, const char *name, ino_t ino,
    bool by_ino)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0 &&
		    (!by_ino || v[i].ino == ino))
			return true;
	return false;
}

static void
cut_dir(int fd, unsigned *seed, enum th_cut mode)
{
	struct durable *d;
	struct dent *cur;
	struct stat st;
	size_t n, i, j;
	int cfd;

	ck_assert_int_eq(fstat(fd, &st), 0);
	d = dur_find(st.st_dev, st.st_ino);
	if (list_dir(fd, &cur, &n) != 0)
		return;
	/* Entries no sync of this directory covered. */
	for (i = 0; i < n; i++) {
		if (d != NULL && has_ent(d->ents, d->nents, cur[i].name,
		    cur[i].ino, true))
			continue;
		for (j = 0; d != NULL && j < d->nents; j++)
			if (d->ents[j].ino == cur[i].ino &&
			    !has_ent(cur, n, d->ents[j].name, 0, false))
				break;
		if (d != NULL && j < d->nents) {
			/* A rename that never reached the disk. */
			ck_assert_int_eq(renameat(fd, cur[i].name, fd,
			    d->ents[j].name), 0);
			snprintf(cur[i].name, sizeof(cur[i].name), "%s",
			    d->ents[j].name);
			continue;
		}
		rm_rf_at(fd, cur[i].name);
		cur[i].name[0] = '\0';
	}
	/* Entries the last sync saw that are gone: back, if we can. */
	for (j = 0; d != NULL && j < d->nents; j++) {
		struct durable *f;

		if (has_ent(cur, n, d->ents[j].name, 0, false))
			continue;
		if (d->ents[j].type == DT_DIR) {
			mkdirat(fd, d->ents[j].name, 0755);
			continue;
		}
		/* A file no sync covered comes back, its data lost. */
		f = dur_find(st.st_dev, d->ents[j].ino);
		if (f != NULL && !f->dir)
			write_at(fd, d->ents[j].name, f->data, f->len);
		else if (f == NULL && d->ents[j].type == DT_REG)
			write_at(fd, d->ents[j].name, NULL, 0);
	}
	free(cur);
	if (list_dir(fd, &cur, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		cfd = openat(fd, cur[i].name, O_RDONLY | O_NOFOLLOW);
		if (cfd == -1)
			continue;
		if (cur[i].type == DT_DIR)
			cut_dir(cfd, seed, mode);
		else if (cur[i].type == DT_REG && (d == NULL ||
		    has_ent(d->ents, d->nents, cur[i].name, cur[i].ino,
		    true)))
			cut_file(fd, cur[i].name, seed, mode);
		close(cfd);
	}
	free(cur);
}

void
th_powercut(const char *dir, unsigned seed, enum th_cut mode)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(fd, 0);
	pthread_mutex_lock(&dur_lock);
	tracking = false;
	pthread_mutex_unlock(&dur_lock);
	cut_dir(fd, &seed, mode);
	close(fd);
	th_dur_stop();
}
