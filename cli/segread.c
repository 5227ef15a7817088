/*
 * segread.c - a partition's segments read through the mount, in offset
 * order: what `tlogctl read` and `tlogctl ship` share. Everything is
 * opened below the partition's directory descriptor, so a reader stays
 * on its partition through a rename (part.c).
 *
 * Where to start comes from the partition's seek attribute
 * (user.tlog.at.OFFSET, doc/seek.md): a segment's base and a byte
 * position, found from the sparse index, never by reading the segment
 * from its start. Sealed segments are opened by name; the active one
 * only as `current`, checked by its base_offset. An open descriptor
 * keeps reading its own segment after a roll and after its deletion,
 * so nothing is lost or repeated across either.
 *
 * Errors are returned (-1 and errno), never fatal here: read exits on
 * them, ship drops the partition and goes on with the others.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tlogctl.h"

#define OPEN_TRIES 100		/* seeks racing rolls and deletions */

void
sr_init(struct segread *r, const char *part, int dfd)
{
	memset(r, 0, sizeof(*r));
	r->part = part;
	r->dfd = dfd;
	r->fd = -1;
}

void
sr_close(struct segread *r)
{
	if (r->fd != -1)
		close(r->fd);
	r->fd = -1;
}

int
sr_open(struct segread *r, uint64_t base)
{
	char name[32];
	struct stat st;
	uint64_t b;
	int fd, e;

	snprintf(name, sizeof(name), "%020" PRIu64 ".log", base);
	if ((fd = openat(r->dfd, name, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			return -1;
		if ((fd = openat(r->dfd, "current", O_RDONLY | O_CLOEXEC)) ==
		    -1)
			return -1;
		if (fd_stat(fd, "base_offset", &b) == -1)
			goto fail;
		if (b != base) {
			close(fd);
			errno = ENOENT;
			return -1;
		}
	}
	if (fstat(fd, &st) == -1)
		goto fail;
	sr_close(r);
	r->fd = fd;
	r->base = base;
	r->ino = st.st_ino;
	return 0;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

int
sr_seek(struct segread *r, uint64_t want, uint64_t *got)
{
	uint64_t base, pos;
	int i;

	for (i = 0; i < OPEN_TRIES; i++) {
		if (part_at(r->dfd, want, &base, &pos) == -1)
			return -1;
		if (sr_open(r, base) == 0) {
			r->pos = pos;
			*got = base > want ? base : want;
			return 0;
		}
		if (errno != ENOENT)
			return -1;
		if (i >= 3)
			pause_ms(10);
	}
	errno = EAGAIN;
	return -1;
}

ssize_t
sr_pread(struct segread *r, void *buf, size_t len)
{
	ssize_t n;

	while ((n = pread(r->fd, buf, len, (off_t)r->pos)) == -1 &&
	    errno == EINTR)
		;
	return n;
}

int
sr_sealed(struct segread *r, bool *sealed)
{
	uint64_t v;

	if (fd_stat(r->fd, "sealed", &v) == -1)
		return -1;
	*sealed = v != 0;
	return 0;
}

int
sr_moved(struct segread *r, bool *moved)
{
	struct stat st;

	if (fstatat(r->dfd, "current", &st, 0) == -1)
		return -1;
	*moved = st.st_ino != r->ino;
	return 0;
}

int
sr_wait(struct segread *r, int ms)
{
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
	int n = poll(&pfd, 1, ms);

	if (n == -1)
		return errno == EINTR ? 0 : -1;
	return n;
}
