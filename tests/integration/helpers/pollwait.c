/*
 * pollwait - what a reader waiting in poll(2) at the end of a file gets:
 *
 *   pollwait PATH TIMEOUT_MS
 *
 * Opens PATH read-only, reads it to its end, then makes one poll(2) for
 * POLLIN of at most TIMEOUT_MS and prints on one line what it returned
 * ("in", "hup", "err" for POLLIN, POLLHUP, POLLERR, space-separated, or
 * "timeout") and "switches=N": the voluntary context switches during the
 * poll. Each wake-up of a poll on a FUSE file sends the daemon a request
 * and waits for its answer, so an idle wait that nothing wakes makes
 * almost none. Exits 0, or 1 if PATH cannot be opened or read.
 */
#define _GNU_SOURCE
#include <sys/resource.h>

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char *argv[])
{
	struct rusage r0, r1;
	struct pollfd pfd;
	char buf[65536];
	ssize_t n;
	int fd, k;

	if (argc != 3) {
		fprintf(stderr, "usage: pollwait PATH TIMEOUT_MS\n");
		return 2;
	}
	if ((fd = open(argv[1], O_RDONLY)) == -1) {
		perror(argv[1]);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n == -1) {
		perror(argv[1]);
		return 1;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	getrusage(RUSAGE_SELF, &r0);
	k = poll(&pfd, 1, atoi(argv[2]));
	getrusage(RUSAGE_SELF, &r1);
	if (k == 0)
		printf("timeout");
	else if (k == -1)
		printf("error");
	else
		printf("%s%s%s", pfd.revents & POLLIN ? "in" : "",
		    pfd.revents & POLLHUP ? " hup" : "",
		    pfd.revents & POLLERR ? " err" : "");
	printf(" switches=%ld\n", r1.ru_nvcsw - r0.ru_nvcsw);
	return 0;
}
