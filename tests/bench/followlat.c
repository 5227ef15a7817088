/*
 * followlat - how soon a follower prints what is appended, and what
 * appends cost while it follows (doc/performance.md, workload 10).
 *
 *   followlat [-n LINES] [-r RATE] [-i IDLE_S] [-q QUIET_FOLLOWERS]
 *             FILE -- CMD [ARG...]
 *
 * Starts CMD (a follower of FILE, e.g. `tail -F FILE` or `tlogctl read
 * --follow PART`) with its standard output on a pipe, and QUIET_FOLLOWERS
 * more copies whose output is thrown away. Waits until CMD prints a
 * first line that this program appends, then appends LINES lines of the
 * form "T <ns>\n" (CLOCK_MONOTONIC at the write) to FILE at RATE per
 * second, one write(2) each, O_APPEND, and reads CMD's output: each
 * line's latency is the time it is read less the time in it. Then, a
 * second after the last line, counts CMD's voluntary context switches
 * over IDLE_S seconds with nothing written. Prints
 *
 *   follow lines=N p50_ms=... p99_ms=... max_ms=... missing=N
 *   append p50_us=... p99_us=...
 *   idle seconds=S switches=N
 */
#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_QUIET 1000

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

static pid_t
spawn(char **argv, int out)
{
	pid_t pid = fork();

	if (pid == -1)
		die("fork");
	if (pid == 0) {
		if (dup2(out, STDOUT_FILENO) == -1)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static double
pct(int64_t *v, size_t n, double p)
{
	if (n == 0)
		return -1;
	return (double)v[(size_t)((double)(n - 1) * p)];
}

static long
switches(pid_t pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Reads what the follower printed into buf; the latency of each whole
 * "T <ns>" line goes to lat. Returns false at EOF. */
static bool
take(int fd, char *buf, size_t *have, size_t cap, int64_t *lat,
    size_t *nlat, size_t max)
{
	ssize_t n = read(fd, buf + *have, cap - *have);
	int64_t t = now_ns();
	char *p, *nl;

	if (n <= 0)
		return n == -1 && errno == EINTR;
	*have += (size_t)n;
	p = buf;
	while ((nl = memchr(p, '\n', *have - (size_t)(p - buf))) != NULL) {
		*nl = '\0';
		if (p[0] == 'T' && p[1] == ' ' && *nlat < max)
			lat[(*nlat)++] = t - strtoll(p + 2, NULL, 10);
		p = nl + 1;
	}
	*have -= (size_t)(p - buf);
	memmove(buf, p, *have);
	return true;
}

int
main(int argc, char *argv[])
{
	long lines = 1000, rate = 100, idle = 10, quiet = 0, i, s0, s1;
	int64_t *lat, *app, next, t0, left;
	pid_t fpid, qpid[MAX_QUIET];
	int c, fd, pfd[2], devnull;
	size_t nlat = 0, have = 0;
	struct pollfd pf;
	char buf[1 << 16], line[64];

	while ((c = getopt(argc, argv, "+n:r:i:q:")) != -1) {
		switch (c) {
		case 'n': lines = atol(optarg); break;
		case 'r': rate = atol(optarg); break;
		case 'i': idle = atol(optarg); break;
		case 'q': quiet = atol(optarg); break;
		default: goto usage;
		}
	}
	if (optind + 2 > argc || strcmp(argv[optind + 1], "--") != 0 ||
	    optind + 2 >= argc || lines < 1 || rate < 1 || quiet < 0 ||
	    quiet > MAX_QUIET)
		goto usage;
	signal(SIGPIPE, SIG_IGN);
	if ((fd = open(argv[optind], O_WRONLY | O_APPEND)) == -1)
		die(argv[optind]);
	if ((devnull = open("/dev/null", O_WRONLY)) == -1)
		die("/dev/null");
	for (i = 0; i < quiet; i++)
		qpid[i] = spawn(argv + optind + 2, devnull);
	if (pipe(pfd) == -1)
		die("pipe");
	fpid = spawn(argv + optind + 2, pfd[1]);
	close(pfd[1]);
	if ((lat = calloc((size_t)lines + 1, sizeof(*lat))) == NULL ||
	    (app = calloc((size_t)lines, sizeof(*app))) == NULL)
		die("calloc");
	/* The follower is following once it prints a line written now. */
	pf.fd = pfd[0];
	pf.events = POLLIN;
	for (;;) {
		snprintf(line, sizeof(line), "T %lld\n", (long long)now_ns());
		if (write(fd, line, strlen(line)) == -1)
			die("write");
		if (poll(&pf, 1, 200) == 1) {
			if (!take(pfd[0], buf, &have, sizeof(buf), lat, &nlat,
			    1))
				die("the follower ended");
			if (nlat > 0)
				break;
		}
	}
	nlat = 0;
	t0 = now_ns();
	for (i = 0; i < lines; i++) {
		next = t0 + i * (1000000000 / rate);
		while ((left = next - now_ns()) > 0) {
			/* Never negative: poll(2) would wait for ever. */
			if (poll(&pf, 1, (int)(left / 1000000)) == 1)
				(void)take(pfd[0], buf, &have, sizeof(buf), lat,
				    &nlat, (size_t)lines);
		}
		snprintf(line, sizeof(line), "T %lld\n", (long long)now_ns());
		app[i] = now_ns();
		if (write(fd, line, strlen(line)) == -1)
			die("write");
		app[i] = now_ns() - app[i];
	}
	/* The last lines: a second at most. */
	next = now_ns() + 1000000000;
	while (nlat < (size_t)lines && now_ns() < next)
		if (poll(&pf, 1, 100) == 1)
			(void)take(pfd[0], buf, &have, sizeof(buf), lat, &nlat,
			    (size_t)lines);
	/* Idle from a second on: the follower has settled. */
	sleep(1);
	s0 = switches(fpid);
	sleep((unsigned)idle);
	s1 = switches(fpid);
	qsort(lat, nlat, sizeof(*lat), cmp_i64);
	qsort(app, (size_t)lines, sizeof(*app), cmp_i64);
	printf("follow lines=%zu p50_ms=%.3f p99_ms=%.3f max_ms=%.3f "
	    "missing=%zu\n", nlat, pct(lat, nlat, 0.5) / 1e6,
	    pct(lat, nlat, 0.99) / 1e6, nlat ? (double)lat[nlat - 1] / 1e6 :
	    -1, (size_t)lines - nlat);
	printf("append p50_us=%.1f p99_us=%.1f\n",
	    pct(app, (size_t)lines, 0.5) / 1e3,
	    pct(app, (size_t)lines, 0.99) / 1e3);
	printf("idle seconds=%ld switches=%ld\n", idle,
	    s0 >= 0 && s1 >= 0 ? s1 - s0 : -1);
	kill(fpid, SIGTERM);
	for (i = 0; i < quiet; i++)
		kill(qpid[i], SIGTERM);
	while (wait(NULL) > 0)
		;
	return 0;
usage:
	fprintf(stderr, "usage: followlat [-n LINES] [-r RATE] [-i IDLE_S] "
	    "[-q QUIET_FOLLOWERS] FILE -- CMD [ARG...]\n");
	return 2;
}
