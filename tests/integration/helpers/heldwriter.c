/*
 * heldwriter - what happens to the held bytes of an unfinished line when
 * descriptors sharing one open file close, for the integration tests.
 * Each command prints "OK" or what went wrong, and exits 0 or 1.
 *
 *   heldwriter dup PATH       write "start" on fd, close(dup(fd)), a second
 *                             open file appends "OTHER\n", fd writes
 *                             "done\n", close(fd): want "OTHER" then
 *                             "startdone"
 *   heldwriter fork PATH      the same, with a forked child that exits
 *                             (closing its copy of fd) instead of the dup
 *   heldwriter fsync PATH     write "synced" on fd, fsync(fd): a reader
 *                             sees "synced" before fd is closed
 *   heldwriter latency PATH N N times: open, write "x" (no newline),
 *                             close, then poll the size until the record
 *                             shows; prints the delays' distribution in
 *                             microseconds ("min p50 p90 p99 max") and
 *                             how many showed at the first stat
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
fail(const char *what)
{
	const char *name = strerrorname_np(errno);

	printf("%s: %s\n", what, name != NULL ? name : "E?");
	exit(1);
}

static int
open_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	if (fd == -1)
		fail("open");
	return fd;
}

static void
put(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		fail("write");
}

/* Another open file appends a whole line, as a concurrent writer would. */
static void
other_writer(const char *path)
{
	int fd = open_append(path);

	put(fd, "OTHER\n");
	if (close(fd) == -1)
		fail("close other");
}

static int
shared_close(const char *path, int use_fork)
{
	int fd = open_append(path), st;
	pid_t pid;

	put(fd, "start");
	if (use_fork) {
		if ((pid = fork()) == -1)
			fail("fork");
		if (pid == 0)
			_exit(0);	/* its copy of fd closes: a FLUSH */
		if (waitpid(pid, &st, 0) == -1)
			fail("waitpid");
	} else if (close(dup(fd)) == -1)
		fail("close dup");
	other_writer(path);
	put(fd, "done\n");
	if (close(fd) == -1)
		fail("close");
	printf("OK\n");
	return 0;
}

static off_t
size_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) == -1)
		fail("stat");
	return st.st_size;
}

static int
synced(const char *path)
{
	int fd = open_append(path);
	off_t before = size_of(path);

	put(fd, "synced");
	if (size_of(path) != before) {
		printf("held bytes showed before fsync\n");
		return 1;
	}
	if (fsync(fd) == -1)
		fail("fsync");
	/* No waiting: fsync returned, the record is there. */
	if (size_of(path) != before + 6) {
		printf("size %lld after fsync, want %lld\n",
		    (long long)size_of(path), (long long)before + 6);
		return 1;
	}
	if (close(fd) == -1)
		fail("close");
	printf("OK\n");
	return 0;
}

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int
latency(const char *path, int n)
{
	int64_t *d, t0;
	off_t want;
	int i, fd, first = 0;

	if (n < 1 || (d = calloc((size_t)n, sizeof(*d))) == NULL)
		return 1;
	for (i = 0; i < n; i++) {
		want = size_of(path) + 1;
		fd = open_append(path);
		put(fd, "x");
		if (close(fd) == -1)
			fail("close");
		t0 = now_us();
		if (size_of(path) >= want)
			first++;
		while (size_of(path) < want) {
			if (now_us() - t0 > 10000000) {
				printf("record %d did not show in 10 s\n", i);
				return 1;
			}
			usleep(20);
		}
		d[i] = now_us() - t0;
	}
	qsort(d, (size_t)n, sizeof(*d), cmp64);
	printf("OK %lld %lld %lld %lld %lld first %d/%d\n", (long long)d[0],
	    (long long)d[n / 2], (long long)d[n * 9 / 10],
	    (long long)d[n * 99 / 100], (long long)d[n - 1], first, n);
	free(d);
	return 0;
}

int
main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: heldwriter dup|fork|fsync|latency "
		    "PATH [N]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IONBF, 0);	/* nothing doubled by fork */
	if (strcmp(argv[1], "dup") == 0)
		return shared_close(argv[2], 0);
	if (strcmp(argv[1], "fork") == 0)
		return shared_close(argv[2], 1);
	if (strcmp(argv[1], "fsync") == 0)
		return synced(argv[2]);
	if (strcmp(argv[1], "latency") == 0 && argc > 3)
		return latency(argv[2], atoi(argv[3]));
	fprintf(stderr, "heldwriter: unknown command %s\n", argv[1]);
	return 2;
}
