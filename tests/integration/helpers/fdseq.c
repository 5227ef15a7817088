/*
 * fdseq - runs a sequence of steps on one O_APPEND descriptor and prints
 * each step's outcome ("OK" or the errno's name), space-separated, on one
 * line: what a writer that keeps its file open (nginx) sees after a write
 * fails.
 *
 *   fdseq PATH STEP...
 *
 *   hold:N       write N bytes 'h' without newline (held by the daemon)
 *   line:TEXT    write TEXT and a newline, in one write(2)
 *   nl           write a newline
 *   fsync        fsync(2)
 *   close        close(2); later steps that use the descriptor get EBADF
 *   run:CMD      system(CMD): OK if it exits 0, else FAIL
 *   poll:STEP    repeats STEP every 50 ms while it fails with ENOSPC, for
 *                at most 10 s (space that is coming back)
 *
 * A write that takes fewer bytes than asked prints SHORT. Exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;

static const char *
put(const char *buf, size_t len)
{
	ssize_t n;

	n = write(fd, buf, len);
	if (n == -1)
		return NULL;
	return (size_t)n == len ? "OK" : "SHORT";
}

/* One step; NULL on an error, with errno set. */
static const char *
step(const char *s)
{
	const char *r;
	char *buf;
	size_t n;

	if (strncmp(s, "hold:", 5) == 0) {
		n = strtoul(s + 5, NULL, 10);
		if ((buf = malloc(n ? n : 1)) == NULL)
			return NULL;
		memset(buf, 'h', n);
		r = put(buf, n);
		free(buf);
		return r;
	}
	if (strncmp(s, "line:", 5) == 0) {
		if (asprintf(&buf, "%s\n", s + 5) < 0)
			return NULL;
		r = put(buf, strlen(buf));
		free(buf);
		return r;
	}
	if (strcmp(s, "nl") == 0)
		return put("\n", 1);
	if (strcmp(s, "fsync") == 0)
		return fsync(fd) == 0 ? "OK" : NULL;
	if (strcmp(s, "close") == 0) {
		int c = close(fd);

		fd = -1;
		return c == 0 ? "OK" : NULL;
	}
	if (strncmp(s, "run:", 4) == 0)
		return system(s + 4) == 0 ? "OK" : "FAIL";
	fprintf(stderr, "fdseq: unknown step %s\n", s);
	exit(2);
}

static const char *
poll_step(const char *s)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	const char *r;
	int i;

	for (i = 0; i < 200; i++) {
		if ((r = step(s)) != NULL || errno != ENOSPC)
			return r;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int
main(int argc, char *argv[])
{
	const char *r, *name;
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: fdseq PATH STEP...\n");
		return 2;
	}
	if ((fd = open(argv[1], O_WRONLY | O_APPEND)) == -1) {
		name = strerrorname_np(errno);
		printf("open:%s\n", name ? name : "E?");
		return 0;
	}
	for (i = 2; i < argc; i++) {
		if (strncmp(argv[i], "poll:", 5) == 0)
			r = poll_step(argv[i] + 5);
		else
			r = step(argv[i]);
		if (r == NULL)
			r = (name = strerrorname_np(errno)) ? name : "E?";
		printf("%s%s", i > 2 ? " " : "", r);
		fflush(stdout);
	}
	printf("\n");
	if (fd != -1)
		close(fd);
	return 0;
}
