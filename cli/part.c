/*
 * part.c - a partition as tlogctl sees it: the read-only extended
 * attributes of its directory and of its open segment files (tlogfs(8),
 * doc/seek.md). Values are short decimal text.
 */
#include "config.h"

#include <sys/xattr.h>

#include <err.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlogctl.h"

#define VALMAX 96

/* Splits "N N N" into up to n numbers; -1 with EIO if malformed. */
static int
parse_nums(char *val, ssize_t len, uint64_t *v, int n)
{
	char *p, *end;
	int i;

	if (len < 0)
		return -1;	/* errno from getxattr */
	if (len >= VALMAX) {
		errno = EIO;
		return -1;
	}
	val[len] = '\0';
	for (i = 0, p = val; i < n; i++, p = end) {
		errno = 0;
		v[i] = strtoull(p, &end, 10);
		if (end == p || errno != 0 || (*end != ' ' && *end != '\0')) {
			errno = EIO;
			return -1;
		}
	}
	if (*end != '\0') {
		errno = EIO;
		return -1;
	}
	return 0;
}

bool
part_gone(int e)
{
	return e == ENOENT || e == ENODATA;
}

int
dir_open(const char *path)
{
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int
fd_stat(int fd, const char *name, uint64_t *v)
{
	char key[64], val[VALMAX];

	snprintf(key, sizeof(key), "user.tlog.%s", name);
	return parse_nums(val, fgetxattr(fd, key, val, sizeof(val) - 1), v,
	    1);
}

int
fd_time(int fd, const char *name, int64_t *v)
{
	char key[64], val[VALMAX], *end;
	ssize_t len;
	long long t;

	snprintf(key, sizeof(key), "user.tlog.%s", name);
	if ((len = fgetxattr(fd, key, val, sizeof(val) - 1)) == -1)
		return -1;
	val[len] = '\0';
	/* strtoll, not strtoull: "-1" is the mount's "none", which
	 * strtoull would take as 2^64 - 1. */
	errno = 0;
	t = strtoll(val, &end, 10);
	if (end == val || *end != '\0' || errno != 0 || t < -1) {
		errno = EIO;
		return -1;
	}
	*v = t;
	return 0;
}

int
part_at(int dfd, uint64_t offset, uint64_t *base, uint64_t *pos)
{
	char key[64], val[VALMAX];
	uint64_t v[2];

	snprintf(key, sizeof(key), "user.tlog.at.%" PRIu64, offset);
	if (parse_nums(val, fgetxattr(dfd, key, val, sizeof(val) - 1), v,
	    2) == -1)
		return -1;
	*base = v[0];
	*pos = v[1];
	return 0;
}

int
part_since(int dfd, int64_t ms, uint64_t *offset, uint64_t *base,
    uint64_t *pos)
{
	char key[64], val[VALMAX];
	uint64_t v[3];

	snprintf(key, sizeof(key), "user.tlog.since.%" PRId64,
	    ms < 0 ? 0 : ms);
	if (parse_nums(val, fgetxattr(dfd, key, val, sizeof(val) - 1), v,
	    3) == -1)
		return -1;
	*offset = v[0];
	*base = v[1];
	*pos = v[2];
	return 0;
}

bool
cursor_name_ok(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= CURSOR_NAME_MAX &&
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") == n;
}

int
part_cursor(int dfd, const char *name, uint64_t *v)
{
	char key[96], val[VALMAX];

	snprintf(key, sizeof(key), CURSOR_PREFIX "%s", name);
	return parse_nums(val, fgetxattr(dfd, key, val, sizeof(val) - 1), v,
	    1);
}

int
part_check(const char *part)
{
	uint64_t v;
	int dfd;

	if ((dfd = dir_open(part)) == -1) {
		if (errno == ENOTDIR)
			errx(1, "%s: not a tlogfs partition", part);
		err(1, "%s", part);
	}
	if (fd_stat(dfd, "start_offset", &v) == 0)
		return dfd;
	if (errno == ENODATA || errno == ENOTSUP || errno == EIO)
		errx(1, "%s: not a tlogfs partition", part);
	err(1, "%s", part);
}
