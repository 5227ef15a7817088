/*
 * read.c - tlogctl read [--from OFFSET | --since TIME | --cursor NAME
 * [--commit]] [--follow] [--skip-lost] PART: records from a point on,
 * across segments, in order, each once, byte for byte as stored (as
 * `cat` of the segments would print them).
 *
 * Where to start, and the segments, come from segread.c (the
 * partition's seek attributes, doc/seek.md).
 *
 * At the end of what a segment holds: a sealed segment is done, and the
 * next record is its base plus its records; the seek attribute finds it,
 * or, if it expired or was deleted meanwhile, the first live one after
 * it (one warning on stderr). The active segment is the end, unless
 * --follow: then it waits in poll(2) on the segment until the mount says
 * there is more (an append, a roll, a removal). An open descriptor keeps
 * reading its own segment after a roll and after its deletion, so
 * nothing is lost or repeated across either.
 *
 * A cursor (user.cursor.NAME of the partition) gives the start; with
 * --commit it is set, after each batch is written out, to the offset of
 * the next record: at least once, since a crash between the write and
 * the commit prints the batch again. That offset is the records' count,
 * and records are counted by their newlines, which misses a record
 * without newline (the end of a writer's last line, a line cut at
 * record.max.bytes). So the count is checked against user.tlog.at: a
 * count too low only names an earlier record, never a later one, and
 * is raised (galloping, then halving: a few look-ups however many such
 * records there are) until it names the record at the batch's end.
 *
 * Records that cannot be read (a compressed frame that fails its
 * checksum: EIO, design.md "Compressed history") are never skipped
 * silently: the run stops with one line naming them and the record to
 * go on from (lost.c finds it), the cursor left after the last record
 * printed; with --skip-lost the line is a warning and the run goes on
 * from that record, committing past the lost ones.
 */
#include "config.h"

#include <sys/xattr.h>

#include <err.h>
#include <errno.h>
#include <stdarg.h>
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
#define FOLLOW_MS 100		/* a spinning wait's pause, see run() */
#define WAIT_MS 60000		/* the longest wait in poll(2) */
#define SEEK_WAITS 50		/* FOLLOW_MS each: a partition in flux */

struct reader {
	struct segread sr;
	bool follow;
	bool skip_lost;
	char *buf;
	/* --commit: the cursor and what is known of the offsets */
	char ckey[96];		/* user.cursor.NAME, "" without --commit */
	uint64_t off;		/* the record at byte `mark` of the segment */
	uint64_t mark;
	uint64_t nl;		/* newlines printed since `mark` */
	uint64_t committed;	/* the cursor's value, UINT64_MAX if unknown */
};

/*
 * A runtime error on the partition: one line, exit 1. ENOENT while the
 * partition's own directory answers ENOENT too means it was removed
 * (read by its descriptor, it never reads another of the same name).
 */
static bool
removed(struct reader *r)
{
	uint64_t v;

	return fd_stat(r->sr.dfd, "end_offset", &v) == -1 && errno == ENOENT;
}

__attribute__((noreturn, format(printf, 2, 3)))
static void
fail(struct reader *r, const char *fmt, ...)
{
	char what[PATH_MAX + 64];
	va_list ap;
	int e = errno, i;

	/* A removed partition explains any failure (a read, a seek, a
	 * segment that no longer opens): said so, whatever errno says.
	 * One being removed (rm -r: its segments, then its directory)
	 * fails with ENOENT first: a follower gives it a while. */
	for (i = 0; e == ENOENT && r->follow && i < SEEK_WAITS &&
	    !removed(r); i++)
		pause_ms(FOLLOW_MS);
	if (removed(r))
		errx(1, "%s: the partition was removed", r->sr.part);
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	errno = e;
	err(1, "%s", what);
}

static void lost_at_seek(struct reader *, uint64_t);

/*
 * Opens the segment holding offset `want` (or the first live record
 * after it) at that record. Records skipped because they are gone are
 * named in one warning when `warn` is set.
 */
static void
seek_to(struct reader *r, uint64_t want, bool warn)
{
	uint64_t got;
	int e, tries = 0;

	while (sr_seek(&r->sr, want, &got) == -1) {
		e = errno;
		if (removed(r))
			errx(1, "%s: the partition was removed", r->sr.part);
		if (e == ENODATA)
			errx(1, "%s: offset %" PRIu64 " is beyond the "
			    "end of the partition", r->sr.part, want);
		/* A follower waits out a partition in flux (rm -r between
		 * its segments and its directory, say): the next look
		 * finds it settled, or removed. */
		if (e == EAGAIN && r->follow && ++tries < SEEK_WAITS) {
			pause_ms(FOLLOW_MS);
			continue;
		}
		if (e == EAGAIN)
			errx(1, "%s: cannot open the segment holding offset %"
			    PRIu64 " (it keeps changing)", r->sr.part, want);
		/* Its look-up counts through a bad frame: lost. */
		if (e == EIO) {
			lost_at_seek(r, want);
			return;
		}
		errno = e;
		fail(r, "%s", r->sr.part);
	}
	r->off = got;
	r->mark = r->sr.pos;
	r->nl = 0;
	if (warn && got > want)
		warnx("%s: records %" PRIu64 "-%" PRIu64
		    " expired or were deleted before they were"
		    " read; resuming at %" PRIu64, r->sr.part,
		    want, got - 1, got);
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

static uint64_t
count_nl(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	uint64_t n = 0;

	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		n++;
		p++;
	}
	return n;
}

/*
 * The offset of the record at byte `at` of the segment, a record
 * boundary printed with all newlines before it, which becomes the new
 * `mark`: the newlines since `mark` give a lower bound of its offset;
 * user.tlog.at tells whether records without newline lie between. A
 * segment deleted meanwhile cannot tell, nor can a look-up near a bad
 * frame (EIO): then the bound, which at worst prints records again.
 */
/* Whether record w starts at or past byte `at` of the open segment, or
 * in another (past this one's end, or this one was deleted). A look-up
 * that fails near a bad frame (EIO) counts as past: that can only make
 * record_at's answer earlier, which at worst prints records again. */
static bool
starts_past(struct reader *r, uint64_t w, uint64_t at)
{
	uint64_t base, pos;

	if (part_at(r->sr.dfd, w, &base, &pos) == -1) {
		if (errno != ENODATA && errno != EIO)
			fail(r, "%s", r->sr.part);
		return true;
	}
	return base != r->sr.base || pos >= at;
}

static uint64_t
record_at(struct reader *r, uint64_t at)
{
	uint64_t lo = r->off + r->nl, hi = lo, mid, want, step = 1;
	uint64_t cap = r->off + (at - r->mark);
	bool past = starts_past(r, lo, at);

	/* lo is a lower bound, and a record takes a byte at least, so cap
	 * is an upper one: galloping, then halving, to the first record at
	 * or past `at`. */
	while (!past && hi < cap) {
		lo = hi;
		hi = cap - lo > step ? lo + step : cap;
		step *= 2;
		past = starts_past(r, hi, at);
	}
	while (past && hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (starts_past(r, mid, at))
			hi = mid;
		else
			lo = mid;
	}
	want = past ? hi : lo;
	r->off = want;
	r->mark = at;
	r->nl = 0;
	return want;
}

/* Commits the cursor to the record at byte `at` (record_at). */
static void
commit(struct reader *r, uint64_t at)
{
	uint64_t want = record_at(r, at);
	char val[32];

	if (want == r->committed)
		return;
	snprintf(val, sizeof(val), "%" PRIu64, want);
	if (fsetxattr(r->sr.dfd, r->ckey, val, strlen(val), 0) == -1)
		fail(r, "%s: cannot commit cursor %s at %" PRIu64, r->sr.part,
		    r->ckey + strlen(CURSOR_PREFIX), want);
	r->committed = want;
}

/*
 * What of a short read of n bytes may be printed: a segment grows by
 * whole records, so a short read ends at a record's end (one without
 * newline, where more may have come since) unless it stopped at a part
 * the mount could not read (a compressed frame that fails its checksum,
 * read by whole pages). Reading on from where it stopped tells which:
 * that read fails only in the second case, and then only the records
 * before it are printed, and the record at their end is lost (errno
 * says why). Never part of a record.
 */
static ssize_t
whole(struct reader *r, ssize_t n)
{
	const char *last;
	struct stat st;
	char c;
	int e;

	if (n <= 0 || n == READ_BUF || r->buf[n - 1] == '\n')
		return n;
#ifdef TLOG_TEST_HOOKS
	/* A command run once between a short read and the check after it. */
	if (getenv("TLOGCTL_TEST_SHORT_READ_CMD") != NULL) {
		if (system(getenv("TLOGCTL_TEST_SHORT_READ_CMD")) != 0)
			warnx("TLOGCTL_TEST_SHORT_READ_CMD failed");
		unsetenv("TLOGCTL_TEST_SHORT_READ_CMD");
	}
#endif
	if (fstat(r->sr.fd, &st) == -1 ||
	    r->sr.pos + (uint64_t)n >= (uint64_t)st.st_size ||
	    pread(r->sr.fd, &c, 1, (off_t)(r->sr.pos + (uint64_t)n)) != -1)
		return n;
	e = errno;
	last = memrchr(r->buf, '\n', (size_t)n);
	errno = e;
	return last == NULL ? 0 : last - r->buf + 1;
}

/*
 * Record `first` of the open segment cannot be read (at byte floor), or
 * cannot be looked up (floor 0). One line says which records are lost
 * and where to go on: without --skip-lost that ends the run (status 1;
 * with --commit the cursor is where the caller left it, after the last
 * record printed); with it the run goes on from there, the cursor
 * committed to it.
 */
static void
lost(struct reader *r, uint64_t first, uint64_t floor)
{
	struct lost l;
	char what[128];

	if (lost_find(&r->sr, first, floor, r->buf, READ_BUF, &l) == -1)
		fail(r, "%s: segment %020" PRIu64, r->sr.part, r->sr.base);
	if (l.next == first && l.here) {
		/* It reads, only its look-up failed: from there. */
		r->sr.pos = r->mark = l.pos;
		r->off = first;
		r->nl = 0;
		return;
	}
	if (l.next <= first) {
		/* Not in this segment after all: what failed says why. */
		errno = EIO;
		fail(r, "%s: segment %020" PRIu64 ": offset %" PRIu64,
		    r->sr.part, r->sr.base, first);
	}
	lost_what(what, sizeof(what), first, l.next, r->sr.fd);
	if (!r->skip_lost)
		errx(1, "%s: segment %020" PRIu64 ": %s; go on with --from %"
		    PRIu64 " (or --skip-lost)", r->sr.part, r->sr.base, what,
		    l.next);
	warnx("%s: segment %020" PRIu64 ": %s; going on from %" PRIu64,
	    r->sr.part, r->sr.base, what, l.next);
	if (l.here) {
		r->sr.pos = r->mark = l.pos;
		r->off = l.next;
		r->nl = 0;
	} else {
		sr_close(&r->sr);
		seek_to(r, l.next, true);
	}
	if (r->ckey[0] != '\0')
		commit(r, r->sr.pos);
}

/* The record at r->sr.pos, after all those printed, cannot be read. */
static void
lost_here(struct reader *r)
{
	if (r->ckey[0] != '\0')
		commit(r, r->sr.pos);
	else
		record_at(r, r->sr.pos);
	lost(r, r->off, r->sr.pos);
}

/*
 * Offset `want` cannot be looked up: it lies after the start of a bad
 * frame (its look-up counts newlines through it), in it or just after.
 * Its segment is the last that starts at or before it.
 */
static void
lost_at_seek(struct reader *r, uint64_t want)
{
	uint64_t base;

	if (lost_segment(r->sr.dfd, want, &base) == -1 ||
	    sr_open(&r->sr, base) == -1) {
		errno = EIO;
		fail(r, "%s: offset %" PRIu64, r->sr.part, want);
	}
	lost(r, want, 0);
}

/*
 * Reads the open segment up to what it holds now; false on nothing.
 * With --commit, commits after each full buffer at its last newline,
 * and at the end of what the segment holds (a record boundary).
 */
static bool
drain(struct reader *r)
{
	const char *last;
	bool got = false;
	ssize_t n, w;
	int e;

	for (;;) {
		if ((n = sr_pread(&r->sr, r->buf, READ_BUF)) == -1) {
			if (errno != EIO)
				fail(r, "%s: segment %" PRIu64, r->sr.part,
				    r->sr.base);
			lost_here(r);
			continue;
		}
		w = whole(r, n);
		if (w < n) {
			/* Cut inside a record: print those before it; the
			 * one at their end cannot be read whole. */
			e = errno;
			put_out(r->buf, (size_t)w);
			r->nl += count_nl(r->buf, (size_t)w);
			r->sr.pos += (uint64_t)w;
			got = got || w > 0;
			if (e != EIO) {
				errno = e;
				fail(r, "%s: segment %" PRIu64 ": a read "
				    "stopped inside a record", r->sr.part,
				    r->sr.base);
			}
			lost_here(r);
			continue;
		}
		if (n > 0) {
			put_out(r->buf, (size_t)n);
			got = true;
			r->nl += count_nl(r->buf, (size_t)n);
			if (r->ckey[0] != '\0' && n == READ_BUF &&
			    (last = memrchr(r->buf, '\n', (size_t)n)) != NULL)
				commit(r, r->sr.pos + (uint64_t)(last -
				    r->buf) + 1);
			r->sr.pos += (uint64_t)n;
		}
		/* A short read got all there was: a file grows only by
		 * whole records, and what comes later a poll reports. */
		if (n < READ_BUF) {
			if (got && r->ckey[0] != '\0')
				commit(r, r->sr.pos);
			return got;
		}
	}
}

static bool
is_sealed(struct reader *r)
{
	bool sealed;

	if (sr_sealed(&r->sr, &sealed) == -1)
		fail(r, "%s: segment %" PRIu64, r->sr.part, r->sr.base);
	return sealed;
}

/* Whether `current` still names the file being read. */
static bool
still_current(struct reader *r)
{
	bool moved;

	if (sr_moved(&r->sr, &moved) == -1)
		fail(r, "%s/current", r->sr.part);
	return !moved;
}

static void
run(struct reader *r)
{
	uint64_t records;
	unsigned spurious = 0;
	bool got, woke = false;
	int w;

	for (;;) {
		got = drain(r);
		/* Following, what came with data needs no look at the seal
		 * or at `current`: a poll reports a seal as readable, and
		 * the read that then gets nothing looks. */
		if (r->follow && got && spurious == 0)
			goto wait;
		if (is_sealed(r)) {
			/* What went in before the seal is readable now. */
			drain(r);
			if (fd_stat(r->sr.fd, "records", &records) == -1)
				fail(r, "%s: segment %" PRIu64, r->sr.part,
				    r->sr.base);
			sr_close(&r->sr);
			seek_to(r, r->sr.base + records, true);
			continue;
		}
		if (!r->follow)
			return;
		if (!still_current(r) && !is_sealed(r)) {
			/* The empty `current` of a partition that had no
			 * active segment: one has started since. */
			sr_close(&r->sr);
			seek_to(r, r->sr.base, true);
			continue;
		}
		/* At the end of the active segment: poll(2) says when an
		 * append, a roll or a removal comes. A mount whose poll
		 * says readable with nothing new, again and again (one
		 * without poll support: the kernel's default answer), is
		 * looked at every FOLLOW_MS instead of spinning. */
wait:
		spurious = got ? 0 : woke ? spurious + 1 : spurious;
		if (spurious > 2) {
			pause_ms(FOLLOW_MS);
			woke = false;
			continue;
		}
		if ((w = sr_wait(&r->sr, WAIT_MS)) == -1)
			fail(r, "%s: segment %" PRIu64, r->sr.part, r->sr.base);
		woke = w == 1;
	}
}

int
cmd_read(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "since", required_argument, NULL, 's' },
		{ "cursor", required_argument, NULL, 'c' },
		{ "commit", no_argument, NULL, 'C' },
		{ "follow", no_argument, NULL, 'F' },
		{ "skip-lost", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct reader r;
	const char *from = NULL, *since = NULL, *cursor = NULL, *errstr;
	const char *startopt = NULL, *opt;
	uint64_t off, base, pos;
	int64_t ms = 0;
	bool docommit = false, warn;
	int c;

	memset(&r, 0, sizeof(r));
	while ((c = next_opt(argc, argv, "+:h", longopts)) != -1) {
		switch (c) {
		case 'f':
		case 's':
		case 'c':
			/* One start only: a second would be ignored, or
			 * contradict the first. The option as given is
			 * the word before its argument, or "--from=N". */
			opt = argv[optind - (optarg == argv[optind - 1] ? 2 :
			    1)];
			if (startopt != NULL)
				usage(argv[0], "%s after %s: one of --from, "
				    "--since and --cursor, once", opt,
				    startopt);
			startopt = opt;
			if (c == 'f')
				from = optarg;
			else if (c == 's')
				since = optarg;
			else
				cursor = optarg;
			break;
		case 'C':
			docommit = true;
			break;
		case 'F':
			r.follow = true;
			break;
		case 'L':
			r.skip_lost = true;
			break;
		default:
			usage(argv[0], "option -%c is unknown", c);
		}
	}
	if (docommit && cursor == NULL)
		usage(argv[0], "--commit needs --cursor");
	if (cursor != NULL && !cursor_name_ok(cursor))
		usage(argv[0], "--cursor %s: not a cursor name (1-64 of "
		    "A-Z a-z 0-9 . _ -)", cursor);
	one_operand(argc, argv, "PART");
	off = 0;
	if (from != NULL) {
		off = (uint64_t)strtonum(from, 0, LLONG_MAX, &errstr);
		if (errstr != NULL)
			usage(argv[0], "--from %s: not an offset", from);
	}
	if (since != NULL && parse_time(since, real_ms(), &ms) == -1)
		usage(argv[0], "--since %s: not a time", since);
	sr_init(&r.sr, argv[optind], part_check(argv[optind]));
	if ((r.buf = malloc(READ_BUF)) == NULL)
		err(1, NULL);
	r.committed = UINT64_MAX;
	warn = from != NULL;
	if (cursor != NULL) {
		/* A partition without this cursor is read from its
		 * oldest record (Kafka's auto.offset.reset=earliest). */
		if (part_cursor(r.sr.dfd, cursor, &off) == 0) {
			r.committed = off;
			warn = true;
		} else if (errno == ENODATA)
			off = 0;
		else
			err(1, "%s: cursor %s", r.sr.part, cursor);
		if (docommit)
			snprintf(r.ckey, sizeof(r.ckey), CURSOR_PREFIX "%s",
			    cursor);
	}

	if (since != NULL) {
		if (part_since(r.sr.dfd, ms, &off, &base, &pos) == -1)
			err(1, "%s", r.sr.part);
		if (sr_open(&r.sr, base) == 0) {
			r.sr.pos = r.mark = pos;
			r.off = off;
		} else if (errno == ENOENT)
			seek_to(&r, off, true);
		else
			err(1, "%s", r.sr.part);
	} else
		seek_to(&r, off, warn);
	run(&r);
	free(r.buf);
	return 0;
}
