/*
 * fdhold - a reader that holds every descriptor the daemon gives it:
 *
 *   fdhold PATH
 *
 * Opens PATH read-only again and again until an open fails (at most
 * 100,000, its own RLIMIT_NOFILE raised to the hard limit), prints on one
 * line how many it holds and the errno's name of the failure ("23
 * ENFILE"), then keeps them open until its standard input reaches end of
 * file. Exits 0.
 */
#define _GNU_SOURCE
#include <sys/resource.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char *argv[])
{
	const char *name;
	struct rlimit rl;
	char buf[512];
	int n = 0, e;

	if (argc != 2) {
		fprintf(stderr, "usage: fdhold PATH\n");
		return 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	while (n < 100000 && open(argv[1], O_RDONLY | O_CLOEXEC) != -1)
		n++;
	e = errno;
	name = strerrorname_np(e);
	printf("%d %s\n", n, name != NULL ? name : "E?");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}
