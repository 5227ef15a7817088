/*
 * syncwriter - appends numbered 100-byte lines to several files at once,
 * one thread per file, calling fsync(2) or fdatasync(2) every K lines,
 * and records each acknowledged sync outside the files it writes: what a
 * power cut must not lose (tests/integration/powercut.sh).
 *
 *   syncwriter [-k K] [-n COUNT] [-c] ACKDIR ID=PATH ...
 *
 * Line n of writer ID is "wID n PAD\n", 100 bytes, PAD being copies of
 * letter 'a' + n % 26, so a torn or interleaved line shows. Each file is
 * opened O_WRONLY | O_APPEND (-c: also O_CREAT, for plain files). After
 * every K-th line (default 7) the thread syncs the file, every third
 * sync with fdatasync, and once the call returned 0 appends
 * "MS SEQ\n" to ACKDIR/wID: the wall-clock time in ms after the sync
 * returned and the number of the last line it covers. K 0 never syncs:
 * each line is recorded once its write returned (what a clean unmount
 * must then keep). The ack file is
 * not synced: the power cut hits the files written, not ACKDIR, and a
 * kill -9 of this process loses nothing already written to it.
 *
 * COUNT 0 (the default) writes until a write or sync fails; otherwise a
 * thread stops after COUNT lines and a last sync. Exits 0 if every thread
 * finished without error, else 1, one line per failure on stderr naming
 * the writer, the call and the errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINE	100
#define MAXW	64

struct writer {
	pthread_t	 thr;
	unsigned long	 id;
	const char	*path;
	int		 ackfd;
	int		 failed;
};

static unsigned long every = 7, count;
static int creat_flag;

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void *
fail(struct writer *w, const char *what)
{
	const char *name = strerrorname_np(errno);

	fprintf(stderr, "syncwriter: w%lu: %s: %s\n", w->id, what,
	    name ? name : "E?");
	w->failed = 1;
	return NULL;
}

/* Syncs fd (K 0: does not) and records that line seq is acknowledged. */
static int
sync_ack(struct writer *w, int fd, unsigned long seq, unsigned long nsync)
{
	char ack[48];
	int k;

	if (every != 0 &&
	    (nsync % 3 == 2 ? fdatasync(fd) : fsync(fd)) == -1)
		return -1;
	k = snprintf(ack, sizeof(ack), "%lld %lu\n", (long long)now_ms(), seq);
	return write_all(w->ackfd, ack, (size_t)k);
}

static void *
run(void *arg)
{
	struct writer *w = arg;
	char line[LINE + 1];
	unsigned long n, nsync = 0;
	int fd, flags, len;

	flags = O_WRONLY | O_APPEND | O_CLOEXEC | (creat_flag ? O_CREAT : 0);
	if ((fd = open(w->path, flags, 0644)) == -1)
		return fail(w, "open");
	for (n = 0; count == 0 || n < count; n++) {
		len = snprintf(line, sizeof(line), "w%lu %lu ", w->id, n);
		memset(line + len, 'a' + (int)(n % 26), (size_t)(LINE - 1 - len));
		line[LINE - 1] = '\n';
		if (write_all(fd, line, LINE) != 0)
			return fail(w, "write");
		if (every == 0 || (n + 1) % every == 0) {
			if (sync_ack(w, fd, n, nsync++) != 0)
				return fail(w, "sync");
		}
	}
	if (every != 0 && n % every != 0 && sync_ack(w, fd, n - 1, nsync) != 0)
		return fail(w, "sync");
	if (close(fd) == -1)
		return fail(w, "close");
	return NULL;
}

int
main(int argc, char *argv[])
{
	struct writer ws[MAXW];
	char path[4096], *eq;
	int c, i, nw, st = 0;

	while ((c = getopt(argc, argv, "k:n:c")) != -1) {
		switch (c) {
		case 'k':
			every = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			count = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			creat_flag = 1;
			break;
		default:
			goto usage;
		}
	}
	nw = argc - optind - 1;
	if (nw < 1 || nw > MAXW)
		goto usage;
	for (i = 0; i < nw; i++) {
		ws[i].id = strtoul(argv[optind + 1 + i], &eq, 10);
		if (*eq != '=')
			goto usage;
		ws[i].path = eq + 1;
		ws[i].failed = 0;
		snprintf(path, sizeof(path), "%s/w%lu", argv[optind], ws[i].id);
		ws[i].ackfd = open(path, O_WRONLY | O_CREAT | O_TRUNC |
		    O_APPEND | O_CLOEXEC, 0644);
		if (ws[i].ackfd == -1) {
			perror(path);
			return 2;
		}
	}
	for (i = 0; i < nw; i++)
		if (pthread_create(&ws[i].thr, NULL, run, &ws[i]) != 0) {
			fprintf(stderr, "syncwriter: pthread_create failed\n");
			return 2;
		}
	for (i = 0; i < nw; i++) {
		pthread_join(ws[i].thr, NULL);
		st |= ws[i].failed;
	}
	return st;
usage:
	fprintf(stderr, "usage: syncwriter [-k K] [-n COUNT] [-c] ACKDIR "
	    "ID=PATH ...\n");
	return 2;
}
