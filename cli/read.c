/*
 * read.c - tlogctl read [--from OFFSET | --since TIME] [--follow] PART:
 * records from a point on, across segments, in order, each once, byte
 * for byte as stored (as `cat` of the segments would print them).
 *
 * Where to start comes from the partition's seek attributes
 * (user.tlog.at.OFFSET, user.tlog.since.MS, doc/seek.md): a segment's
 * base and a byte position, found from the sparse index, never by
 * reading the segment from its start. Sealed segments are opened by
 * name; the active one only as `current`, checked by its base_offset.
 *
 * At the end of what a segment holds: a sealed segment is done, and the
 * next record is its base plus its records; the seek attribute finds it,
 * or, if it expired or was deleted meanwhile, the first live one after
 * it (one warning on stderr). The active segment is the end, unless
 * --follow: then it is polled every FOLLOW_MS. An open descriptor keeps
 * reading its own segment after a roll and after its deletion, so
 * nothing is lost or repeated across either.
 */
#include "config.h"

#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tlogctl.h"

#define READ_BUF (1 << 20)
#define FOLLOW_MS 100		/* polling of an active segment at its end */
#define OPEN_TRIES 100		/* seeks racing rolls and deletions */

struct reader {
	const char *part;
	bool follow;
	int fd;			/* the segment being read, -1 if none */
	uint64_t base;		/* its base offset */
	uint64_t pos;		/* next byte to read in it */
	ino_t ino;		/* its inode, to see `current` move on */
	char *buf;
	char cur[PATH_MAX];	/* PART/current */
};

static void
pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * Opens the segment with this base: by its name if sealed, else as
 * `current` if that is it (or, when the partition has no active
 * segment, the empty `current` whose base is the end offset). -1 with
 * ENOENT if neither holds any more: it was deleted, or it sealed
 * between the two opens; the caller seeks again.
 */
static int
seg_open(struct reader *r, uint64_t base)
{
	char path[PATH_MAX];
	struct stat st;
	uint64_t b;
	int fd;

	snprintf(path, sizeof(path), "%s/%020" PRIu64 ".log", r->part, base);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			err(1, "%s", path);
		if ((fd = open(r->cur, O_RDONLY | O_CLOEXEC)) == -1)
			err(1, "%s", r->cur);
		if (fd_stat(fd, "base_offset", &b) == -1)
			err(1, "%s", r->cur);
		if (b != base) {
			close(fd);
			errno = ENOENT;
			return -1;
		}
	}
	if (fstat(fd, &st) == -1)
		err(1, "%s", path);
	r->fd = fd;
	r->base = base;
	r->ino = st.st_ino;
	return 0;
}

/*
 * Opens the segment holding offset `want` (or the first live record
 * after it) at that record. Records skipped because they are gone are
 * named in one warning when `warn` is set.
 */
static void
seek_to(struct reader *r, uint64_t want, bool warn)
{
	uint64_t base, pos;
	int i;

	for (i = 0; i < OPEN_TRIES; i++) {
		if (part_at(r->part, want, &base, &pos) == -1) {
			if (errno == ENODATA)
				errx(1, "%s: offset %" PRIu64 " is beyond the "
				    "end of the partition", r->part, want);
			err(1, "%s", r->part);
		}
		if (seg_open(r, base) == 0) {
			r->pos = pos;
			if (warn && base > want)
				warnx("%s: records %" PRIu64 "-%" PRIu64
				    " expired or were deleted before they were"
				    " read; resuming at %" PRIu64, r->part,
				    want, base - 1, base);
			return;
		}
		if (i >= 3)
			pause_ms(10);
	}
	errx(1, "%s: cannot open the segment holding offset %" PRIu64
	    " (it keeps changing)", r->part, want);
}

static void
put_out(const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(STDOUT_FILENO, buf, len)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "standard output");
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* Reads the open segment up to what it holds now; false on nothing. */
static bool
drain(struct reader *r)
{
	bool got = false;
	ssize_t n;

	for (;;) {
		n = pread(r->fd, r->buf, READ_BUF, (off_t)r->pos);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			err(1, "%s: segment %" PRIu64, r->part, r->base);
		}
		if (n == 0)
			return got;
		put_out(r->buf, (size_t)n);
		r->pos += (uint64_t)n;
		got = true;
	}
}

static bool
is_sealed(struct reader *r)
{
	uint64_t v;

	if (fd_stat(r->fd, "sealed", &v) == -1)
		err(1, "%s: segment %" PRIu64, r->part, r->base);
	return v != 0;
}

/* Whether `current` still names the file being read. */
static bool
still_current(struct reader *r)
{
	struct stat st;

	if (stat(r->cur, &st) == -1)
		err(1, "%s", r->cur);
	return st.st_ino == r->ino;
}

static void
run(struct reader *r)
{
	uint64_t records;

	for (;;) {
		drain(r);
		if (is_sealed(r)) {
			/* What went in before the seal is readable now. */
			drain(r);
			if (fd_stat(r->fd, "records", &records) == -1)
				err(1, "%s: segment %" PRIu64, r->part,
				    r->base);
			close(r->fd);
			seek_to(r, r->base + records, true);
			continue;
		}
		if (!r->follow)
			return;
		if (!still_current(r) && !is_sealed(r)) {
			/* The empty `current` of a partition that had no
			 * active segment: one has started since. */
			close(r->fd);
			seek_to(r, r->base, true);
			continue;
		}
		pause_ms(FOLLOW_MS);
	}
}

int
cmd_read(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "since", required_argument, NULL, 's' },
		{ "follow", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct reader r;
	const char *from = NULL, *since = NULL, *errstr;
	uint64_t off, base, pos;
	int64_t ms = 0;
	int c;

	memset(&r, 0, sizeof(r));
	while ((c = next_opt(argc, argv, "+:h", longopts)) != -1) {
		switch (c) {
		case 'f':
			from = optarg;
			break;
		case 's':
			since = optarg;
			break;
		case 'F':
			r.follow = true;
			break;
		default:
			usage();
		}
	}
	if (from != NULL && since != NULL) {
		warnx("read: --from and --since exclude each other");
		usage();
	}
	if (argc - optind != 1)
		usage();
	off = 0;
	if (from != NULL) {
		off = (uint64_t)strtonum(from, 0, LLONG_MAX, &errstr);
		if (errstr != NULL) {
			warnx("read: --from %s: not an offset", from);
			usage();
		}
	}
	if (since != NULL && parse_time(since, real_ms(), &ms) == -1) {
		warnx("read: --since %s: not a time", since);
		usage();
	}
	r.part = argv[optind];
	part_check(r.part);
	if ((size_t)snprintf(r.cur, sizeof(r.cur), "%s/current", r.part) >=
	    sizeof(r.cur))
		errx(1, "%s: name too long", r.part);
	if ((r.buf = malloc(READ_BUF)) == NULL)
		err(1, NULL);
	r.fd = -1;

	if (since != NULL) {
		if (part_since(r.part, ms, &off, &base, &pos) == -1)
			err(1, "%s", r.part);
		if (seg_open(&r, base) == 0)
			r.pos = pos;
		else
			seek_to(&r, off, true);
	} else
		seek_to(&r, off, from != NULL);
	run(&r);
	free(r.buf);
	return 0;
}
