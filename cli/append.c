/*
 * append.c - tlogctl append PART: standard input into PART/current in
 * large writes, a pipe logger like svlogd without a FUSE round trip per
 * line.
 *
 * One descriptor, opened O_APPEND once: the mount keeps appending
 * through it across rolls. Input collects in a buffer of the mount's
 * max_write (1 MiB) and goes out in one write(2) of whole lines, one
 * FUSE request, when the buffer is full, when the oldest whole line in
 * it has waited FLUSH_MS (so a slow producer's lines still show at
 * once), at end of input and at SIGTERM, SIGINT or SIGHUP. 1 MiB is
 * fixed, not asked: no client can see a FUSE mount's max_write (statvfs
 * and /sys/fs/fuse/connections do not show it); the daemon asks for it
 * (mount/ops.c), libfuse grants it as max_pages 256, and that is also
 * the kernel's limit (fs.fuse.max_pages_limit). Whole lines
 * only, so that tlogctl killed at any moment leaves no half line for
 * the mount to store as a record. A final line without newline is
 * written as is; the mount stores it, at close, as a record without
 * newline.
 *
 * A ring of NBUF buffers: a writer thread writes the batches in order
 * while the main thread reads the next ones from the pipe, so reading
 * and the mount's work overlap instead of taking turns, and the writer
 * finds the next batch waiting instead of sleeping until it is handed
 * over, when the producer runs ahead.
 *
 * --sync: the writer thread fsyncs the file every --sync-interval while
 * it has written something since (waiting for that in the hand-over),
 * and the main thread once more before the close, so that status 0
 * means every record is on disk, not only in the mount.
 *
 * A record the mount refuses (EFBIG, ENOSPC, EDQUOT, EIO) is dropped,
 * the rest of its batch still goes, reading goes on, and the error is
 * reported on stderr the first time it is seen; the exit status is then
 * 1. Any other write error ends tlogctl at once.
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tlogctl.h"

#define BATCH (1 << 20)		/* the mount's max_write: one request */
#define FLUSH_MS 100		/* longest a whole line waits */
#define HUGE_PAGE (2 << 20)	/* x86-64, arm64 with 4 KiB pages */
#define NBUF 4			/* batches: NBUF - 1 queued, one filling */

struct sink {
	const char *path;
	int fd;
	uint64_t lost;		/* records refused */
	int seen[8];		/* errnos reported so far */
	int nseen;
	/* the hand-over to the writer thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *bufs[NBUF];	/* used in turn */
	size_t lens[NBUF];	/* of the batches handed over */
	int pending;		/* handed over, not yet written */
	bool done;		/* no more batches */
	/* --sync: the interval (0: only at the end), the last sync and
	 * whether a write came after it (writer thread only) */
	int64_t sync_ms;
	int64_t synced_at;
	bool dirty;
};

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* A larger pipe lets the producer run ahead while a batch is written. */
static void
raise_pipe(int fd)
{
	struct stat st;
	long max = BATCH, v;
	FILE *f;

	if (fstat(fd, &st) == -1 || !S_ISFIFO(st.st_mode))
		return;
	if ((f = fopen("/proc/sys/fs/pipe-max-size", "r")) != NULL) {
		if (fscanf(f, "%ld", &v) == 1 && v > 0 && v < max)
			max = v;
		fclose(f);
	}
	/* Over the user's pipe quota this fails: the default size works. */
	(void)fcntl(fd, F_SETPIPE_SZ, (int)max);
}

static bool
droppable(int e)
{
	return e == EFBIG || e == ENOSPC || e == EDQUOT || e == EIO;
}

static void
report(struct sink *s, int e)
{
	int i;

	for (i = 0; i < s->nseen; i++)
		if (s->seen[i] == e)
			return;
	if (s->nseen < (int)(sizeof(s->seen) / sizeof(s->seen[0])))
		s->seen[s->nseen++] = e;
	warnc(e, "%s: dropping the records it refuses", s->path);
}

/*
 * Writes buf, whole lines unless it is the end of input. A refused
 * write took none of the bytes: its first record (through the first
 * newline) is the one refused, so that record is dropped and the rest
 * goes on.
 */
static void
put(struct sink *s, const char *buf, size_t len)
{
	const char *nl;
	ssize_t n;
	size_t drop;

	while (len > 0) {
		if ((n = write(s->fd, buf, len)) > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0)
			errno = EIO;
		if (!droppable(errno))
			err(1, "%s", s->path);
		report(s, errno);
		nl = memchr(buf, '\n', len);
		drop = nl != NULL ? (size_t)(nl - buf) + 1 : len;
		s->lost++;
		buf += drop;
		len -= drop;
	}
}

/* fsync: the mount appends what it holds for the file and makes every
 * record written so far durable. A failure ends tlogctl: what was
 * acknowledged may not be on disk. */
static void
sync_now(struct sink *s)
{
	if (fsync(s->fd) == -1)
		err(1, "%s: fsync", s->path);
	s->synced_at = mono_ms();
	s->dirty = false;
}

/* Waits for a batch or the end; with --sync-interval, at most until the
 * next sync is due, and syncs then. */
static void
wait_batch(struct sink *s)
{
	struct timespec ts;
	int64_t due;

	while (s->pending == 0 && !s->done) {
		if (!s->dirty || s->sync_ms <= 0) {
			pthread_cond_wait(&s->cond, &s->lock);
			continue;
		}
		if ((due = s->synced_at + s->sync_ms) > mono_ms()) {
			ts.tv_sec = due / 1000;
			ts.tv_nsec = (due % 1000) * 1000000;
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&s->lock);
		sync_now(s);
		pthread_mutex_lock(&s->lock);
	}
}

static void *
writer(void *arg)
{
	struct sink *s = arg;
	const char *buf;
	size_t len;
	int i = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		wait_batch(s);
		if (s->pending == 0)
			break;
		buf = s->bufs[i];
		len = s->lens[i];
		pthread_mutex_unlock(&s->lock);
		put(s, buf, len);
		s->dirty = true;
		if (s->sync_ms > 0 && mono_ms() - s->synced_at >= s->sync_ms)
			sync_now(s);
		pthread_mutex_lock(&s->lock);
		s->pending--;
		i = (i + 1) % NBUF;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/*
 * Hands the whole lines at the front of the current buffer (all of it,
 * if `all` or if it holds no newline) to the writer, once the next
 * buffer is free; the rest moves to the next buffer, which becomes
 * current. Returns the length left in it.
 */
static size_t
ship(struct sink *s, int *cur, size_t len, bool all)
{
	char *b = s->bufs[*cur], *nl;
	size_t n = len;

	if (!all && (nl = memrchr(b, '\n', len)) != NULL)
		n = (size_t)(nl - b) + 1;
	if (n == 0)
		return len;
	pthread_mutex_lock(&s->lock);
	/* The batches handed over are the buffers before *cur. */
	while (s->pending >= NBUF - 1)
		pthread_cond_wait(&s->cond, &s->lock);
	s->lens[*cur] = n;
	s->pending++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	*cur = (*cur + 1) % NBUF;
	memcpy(s->bufs[*cur], b + n, len - n);
	return len - n;
}

int
cmd_append(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "sync", no_argument, NULL, 's' },
		{ "sync-interval", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 }
	};
	pthread_condattr_t ca;
	bool sync = false;
	struct sink s = { 0 };
	struct pollfd pfd;
	struct timespec ts, *tsp;
	sigset_t block, orig;
	pthread_t tid;
	int64_t since = -1, left;
	size_t len = 0;
	ssize_t n;
	char *buf, path[PATH_MAX];
	int c, cur = 0, i;

	while ((c = next_opt(argc, argv, "+h", longopts)) != -1) {
		switch (c) {
		case 's':
			sync = true;
			break;
		case 'i':
			/* At most a year: the deadline stays far from
			 * overflowing. */
			if (parse_duration(optarg, &s.sync_ms) != 0 ||
			    s.sync_ms <= 0 || s.sync_ms > 366LL * 86400000)
				usage(argv[0], "--sync-interval %s: not a "
				    "duration of 1ms to 366d (500ms, 2s, 1m)",
				    optarg);
			sync = true;
			break;
		default:
			usage(argv[0], "option -%c is unknown", c);
		}
	}
	one_operand(argc, argv, "PART");
	part_check(argv[optind]);
	if ((size_t)snprintf(path, sizeof(path), "%s/current",
	    argv[optind]) >= sizeof(path))
		errx(1, "%s: name too long", argv[optind]);
	s.path = path;
	if ((s.fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) == -1)
		err(1, "%s", path);
	/* Page-aligned: the kernel passes a write of max_write bytes as
	 * one request only if it spans no more pages than that. Both in
	 * one huge page where the kernel gives one (madvise mode of
	 * transparent huge pages): the kernel pins the pages of each write
	 * for the mount to copy from, and one huge page pins at once. */
	if ((errno = posix_memalign((void **)&s.bufs[0], HUGE_PAGE,
	    NBUF * BATCH)) != 0)
		err(1, NULL);
	(void)madvise(s.bufs[0], NBUF * BATCH, MADV_HUGEPAGE);
	for (i = 1; i < NBUF; i++)
		s.bufs[i] = s.bufs[0] + i * BATCH;
	raise_pipe(STDIN_FILENO);

	/* Signals arrive only inside ppoll, so none is lost between the
	 * check of `stop` and the wait; the writer thread inherits the
	 * blocked mask. */
	catch_stop(on_signal);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &orig);
	pthread_mutex_init(&s.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s.cond, &ca);
	pthread_condattr_destroy(&ca);
	s.synced_at = mono_ms();
	if ((errno = pthread_create(&tid, NULL, writer, &s)) != 0)
		err(1, "pthread_create");

	pfd.fd = STDIN_FILENO;
	pfd.events = POLLIN;
	while (!stop) {
		if (len == BATCH)
			len = ship(&s, &cur, len, false);
		buf = s.bufs[cur];
		tsp = NULL;
		if (since >= 0) {
			left = since + FLUSH_MS - mono_ms();
			if (left <= 0) {
				len = ship(&s, &cur, len, false);
				since = -1;
				continue;
			}
			ts.tv_sec = left / 1000;
			ts.tv_nsec = (left % 1000) * 1000000;
			tsp = &ts;
		}
		if (ppoll(&pfd, 1, tsp, &orig) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		if (pfd.revents == 0)
			continue;	/* the flush deadline */
		n = read(STDIN_FILENO, buf + len, BATCH - len);
		if (n == 0)
			break;
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err(1, "standard input");
		}
		if (since < 0 && memchr(buf + len, '\n', (size_t)n) != NULL)
			since = mono_ms();
		len += (size_t)n;
		if (len == BATCH)
			since = -1;
	}
	ship(&s, &cur, len, true);
	pthread_mutex_lock(&s.lock);
	s.done = true;
	pthread_cond_broadcast(&s.cond);
	pthread_mutex_unlock(&s.lock);
	pthread_join(tid, NULL);
	if (sync)
		sync_now(&s);
	/* The close appends bytes the mount still holds: it can fail. */
	if (close(s.fd) == -1) {
		if (!droppable(errno))
			err(1, "%s", path);
		report(&s, errno);
		s.lost++;
	}
	free(s.bufs[0]);
	return s.lost > 0 ? 1 : 0;
}
