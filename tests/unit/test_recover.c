/*
 * test_recover.c - opening a store after a crash or corruption: every
 * whole record is kept, the store opens, and appends go on (Kafka's
 * recovery cases, and the clean path that reads no record data).
 */
#include "config.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "index.h"
#include "store.h"

/* Log text the clean second open may print (a notice, not a repair). */
static const char *allowed_notice;

/* What the crashed writer wrote: 300 lines, segments of about 2 KiB. */
static char expect[65536];
static size_t nexpect;

static void
make_expect(void)
{
	size_t i;
	int n;

	nexpect = 0;
	for (i = 0; i < 300; i++) {
		n = snprintf(expect + nexpect, sizeof(expect) - nexpect,
		    "record %04zu %.*s\n", i, (int)(i % 40),
		    "........................................");
		nexpect += (size_t)n;
	}
}

/* What the crashing child leaves open: kept reachable, so valgrind sees a
 * crash, not a leak. */
static struct tlog_store *volatile crashed_store;
static struct tlog_writer *volatile crashed_writer;

/* Writes the expected lines in a child that then dies without closing. */
static void
crash_after_writes(void)
{
	pid_t pid;
	int st;

	make_expect();
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct tlog_store *s = th_open(th_dir);
		struct tlog_partition *p = th_part(s, "t", "0");
		struct tlog_writer *w;

		crashed_store = s;
		th_set(s, p, "segment.bytes", "2K");
		w = crashed_writer = tlog_writer_open(p);
		tlog_partition_put(p);
		if (tlog_writer_write(w, expect, nexpect) != (ssize_t)nexpect)
			_exit(1);
		_exit(0);	/* no close: a crash */
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static char *
seg_path(uint64_t base, const char *ext)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/t/0/%020llu%s", th_dir,
	    (unsigned long long)base, ext), 0);
	return p;
}

static void
append_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void
truncate_by(const char *path, off_t by)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(truncate(path, st.st_size - by), 0);
}

/*
 * Reopens and checks: the data starts with `prefix`, segment names chain,
 * every record is whole, and an append afterwards lands and reads back.
 */
static void
reopen_and_check(const char *prefix, size_t plen, bool exact)
{
	struct tlog_store *s = th_open(th_dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	struct tlog_part_stats st;
	size_t n, len, i;
	char *d;

	d = th_partition_data(p, &len);
	ck_assert_uint_ge(len, plen);
	ck_assert_msg(memcmp(d, prefix, plen) == 0, "records lost");
	if (exact)
		ck_assert_uint_eq(len, plen);
	free(d);
	si = th_segs(p, &n);
	ck_assert_uint_gt(n, 0);
	for (i = 0; i + 1 < n; i++)
		ck_assert(si[i].sealed);
	free(si);
	tlog_partition_stats(p, &st);
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "after recovery\n", 15), 15);
	tlog_writer_close(w);
	d = th_partition_data(p, &len);
	ck_assert_uint_ge(len, 15);
	ck_assert_str_eq(d + len - 15, "after recovery\n");
	free(d);
	{
		struct tlog_part_stats st2;
		tlog_partition_stats(p, &st2);
		ck_assert_uint_eq(st2.end_offset, st.end_offset + 1);
	}
	tlog_partition_put(p);
	tlog_store_close(s);
	/* And once more, cleanly: nothing left to repair. */
	th_logbuf[0] = '\0';
	s = th_open(th_dir);
	ck_assert_msg(th_logbuf[0] == '\0' || (allowed_notice != NULL &&
	    strstr(th_logbuf, allowed_notice) != NULL &&
	    strchr(th_logbuf, '\n') == th_logbuf + strlen(th_logbuf) - 1),
	    "second open repaired: %s", th_logbuf);
	tlog_store_close(s);
}

static uint64_t
active_base(void)
{
	struct tlog_store *s = th_open(th_dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_seginfo *si;
	uint64_t b;
	size_t n;

	si = th_segs(p, &n);
	b = si[n - 1].base;
	ck_assert_uint_ge(n, 4);
	free(si);
	tlog_partition_put(p);
	tlog_store_close(s);
	return b;
}

static void
suite_setup(void)
{
	/* Later than any real file mtime: recovery takes a data file's
	 * mtime for records past its index, and a stamp ahead of the wall
	 * clock at open would (rightly) slow engine time down. */
	th_clock = 4102444800000LL;	/* 2100-01-01 */
}

START_TEST(crash_keeps_every_record)
{
	crash_after_writes();
	ck_assert(!strstr(th_logbuf, "error"));
	reopen_and_check(expect, nexpect, true);
}
END_TEST

START_TEST(data_beyond_the_index)
{
	const char more[] = "written after the last index entry\nand more\n";
	char *lp;

	crash_after_writes();
	/* Whole lines past the index (their entries never written). */
	lp = seg_path(active_base(), ".log");
	append_file(lp, more, strlen(more));
	memcpy(expect + nexpect, more, strlen(more));
	nexpect += strlen(more);
	reopen_and_check(expect, nexpect, true);
	free(lp);
}
END_TEST

START_TEST(random_bytes_after_data_and_index)
{
	unsigned char junk[777];
	char *lp, *ip;
	uint64_t b;
	size_t i;

	crash_after_writes();
	b = active_base();
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	lp = seg_path(b, ".log");
	ip = seg_path(b, ".idx");
	/* No newline in the data junk: an unfinished line, cut. */
	for (i = 0; i < sizeof(junk); i++)
		if (junk[i] == '\n')
			junk[i] = 'x';
	append_file(lp, junk, sizeof(junk));
	append_file(ip, junk, sizeof(junk));
	reopen_and_check(expect, nexpect, true);
	free(lp);
	free(ip);
}
END_TEST

START_TEST(index_truncated_mid_entry)
{
	char *ip0, *ipa;

	crash_after_writes();
	ip0 = seg_path(0, ".idx");		/* sealed: footer torn */
	ipa = seg_path(active_base(), ".idx");	/* active: entry torn */
	truncate_by(ip0, 10);
	truncate_by(ipa, 10);
	reopen_and_check(expect, nexpect, true);
	free(ip0);
	free(ipa);
}
END_TEST

START_TEST(missing_index)
{
	char *ip0, *ipa;
	uint64_t b;

	crash_after_writes();
	b = active_base();
	ip0 = seg_path(0, ".idx");
	ipa = seg_path(b, ".idx");
	ck_assert_int_eq(unlink(ip0), 0);
	ck_assert_int_eq(unlink(ipa), 0);
	th_logbuf[0] = '\0';
	reopen_and_check(expect, nexpect, true);
	ck_assert_int_eq(access(ip0, F_OK), 0);		/* rebuilt */
	free(ip0);
	free(ipa);
}
END_TEST

START_TEST(truncated_segment_data)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	size_t n, len, cut;
	char *lp, *d;

	crash_after_writes();
	lp = seg_path(0, ".log");
	{
		/* Closed cleanly: the checkpoint says how long the data
		 * is, and the open sees it is not so. */
		struct tlog_store *s0 = th_open(th_dir);
		tlog_store_close(s0);
	}
	truncate_by(lp, 5);	/* cuts the last record of segment 0 */
	s = th_open(th_dir);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "shorter than its seal"));
	p = th_part(s, "t", "0");
	si = th_segs(p, &n);
	d = th_partition_data(p, &len);
	/* Segment 0 lost exactly its torn last record; the rest is there. */
	cut = (size_t)si[0].bytes;
	ck_assert(memcmp(d, expect, cut) == 0);
	ck_assert_int_eq(expect[cut - 1], '\n');
	ck_assert_uint_eq(si[1].base, si[0].base + si[0].records + 1);
	{
		const char *rest = expect + cut;
		rest = strchr(rest, '\n') + 1;	/* the torn record */
		ck_assert(memcmp(d + cut, rest, len - cut) == 0);
		ck_assert_uint_eq(len - cut, nexpect - (size_t)(rest - expect));
	}
	free(d);
	free(si);
	tlog_partition_put(p);
	tlog_store_close(s);
	free(lp);
}
END_TEST

/* After the crash, one clean open and close (seal: the newest segment
 * sealed first); *st: its stats; the path of the newest segment's
 * data file. */
static char *
cleanly_closed_newest(bool seal, struct tlog_part_stats *st)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	size_t n;
	char *lp;

	crash_after_writes();
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	if (seal)
		tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	tlog_partition_stats(p, st);
	si = th_segs(p, &n);
	ck_assert_uint_gt(si[n - 1].records, 2);
	lp = seg_path(si[n - 1].base, ".log");
	free(si);
	tlog_partition_put(p);
	tlog_store_close(s);
	return lp;
}

/* The end offset is end on two opens in a row (nothing appended in
 * between), and the next append takes end, in a new segment. */
static void
end_kept(uint64_t end)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_part_stats st;
	struct tlog_seginfo *si;
	size_t n;
	int round;

	for (round = 0; round < 2; round++) {
		s = th_open(th_dir);
		p = th_part(s, "t", "0");
		tlog_partition_stats(p, &st);
		ck_assert_uint_eq(st.end_offset, end);
		tlog_partition_put(p);
		tlog_store_close(s);
	}
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "z\n", 2), 2);
	tlog_writer_close(w);
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, end + 1);
	si = th_segs(p, &n);
	ck_assert_uint_eq(si[n - 1].base, end);
	free(si);
	tlog_partition_put(p);
	tlog_store_close(s);
}

/* The newest segment's data cut short behind its seal, behind its
 * index's last entry (the active one, after a clean close), or removed
 * with its sealed index left: the offsets they counted were handed out,
 * so the end offset stays there and no offset goes twice. */
START_TEST(truncated_last_seal_keeps_end)
{
	struct tlog_part_stats st;
	char *lp = cleanly_closed_newest(true, &st);

	ck_assert_int_eq(truncate(lp, 20), 0);	/* one whole record left */
	end_kept(st.end_offset);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "shorter than its seal"));
	free(lp);
}
END_TEST

START_TEST(truncated_active_keeps_end)
{
	struct tlog_part_stats st;
	char *lp = cleanly_closed_newest(false, &st);

	ck_assert_int_eq(truncate(lp, 20), 0);
	end_kept(st.end_offset);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "its index vouches for"));
	free(lp);
}
END_TEST

START_TEST(removed_active_keeps_end)
{
	struct tlog_part_stats st;
	char *lp = cleanly_closed_newest(false, &st);

	ck_assert_int_eq(unlink(lp), 0);
	end_kept(st.end_offset);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "index without data"));
	free(lp);
}
END_TEST

START_TEST(removed_last_seal_keeps_end)
{
	struct tlog_part_stats st;
	char *lp = cleanly_closed_newest(true, &st);

	ck_assert_int_eq(unlink(lp), 0);
	end_kept(st.end_offset);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "index without data"));
	free(lp);
}
END_TEST

/* The store cleanly closed once after the crash; the segments' info. */
static struct tlog_seginfo *
close_cleanly(size_t *n)
{
	struct tlog_store *s = th_open(th_dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_seginfo *si = th_segs(p, n);

	ck_assert_uint_ge(*n, 4);
	tlog_partition_put(p);
	tlog_store_close(s);
	return si;
}

static char *
ckpt_path(void)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/.tlogfs/checkpoint", th_dir), 0);
	return p;
}

/* After the crash, a clean close (every footer written), then the
 * checkpoint and the clean mark gone and a new boot: the next open is a
 * power cut's, and checks every footer. Returns the first segment's
 * index path. */
static char *
footers_then_power_cut(void)
{
	size_t n;
	char *ck;

	crash_after_writes();
	free(close_cleanly(&n));
	ck = ckpt_path();
	ck_assert_int_eq(unlink(ck), 0);
	free(ck);
	ck_assert_int_ge(asprintf(&ck, "%s/.tlogfs/clean", th_dir), 0);
	ck_assert_int_eq(unlink(ck), 0);
	free(ck);
	th_new_boot();
	return seg_path(0, ".idx");
}

/* Reads the first segment's footer, lets change() alter its bytes (and
 * the decoded footer), writes them back and checks the reopen rebuilds
 * the segment from its data: no record lost, the stamps its data gives,
 * sealed by recovery. */
static void
footer_altered_rebuilt(void (*change)(unsigned char *, struct tlog_footer *))
{
	unsigned char b[TLOG_IDX_FOOT];
	struct tlog_footer f, was;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	struct stat st;
	char *ip0 = footers_then_power_cut();
	size_t n;
	int fd;

	ck_assert_int_eq(stat(ip0, &st), 0);
	fd = open(ip0, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, b, sizeof(b), st.st_size - TLOG_IDX_FOOT),
	    (ssize_t)sizeof(b));
	ck_assert_int_eq(tlog_idx_decode_footer(b, &f), 0);
	was = f;
	change(b, &f);
	ck_assert_int_eq(pwrite(fd, b, sizeof(b), st.st_size - TLOG_IDX_FOOT),
	    (ssize_t)sizeof(b));
	close(fd);
	reopen_and_check(expect, nexpect, true);
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	si = th_segs(p, &n);
	tlog_partition_put(p);
	ck_assert_uint_eq(si[0].records, was.records);
	ck_assert_int_eq(si[0].first_ts, was.first_ts);
	ck_assert_int_eq(si[0].max_ts, was.max_ts);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_RECOVERY);
	free(si);
	tlog_store_close(s);
	free(ip0);
}

/* A footer that fails its CRC is no seal: after a power cut the segment
 * is loaded from its data, and no record is lost. */
static void
flip_byte(unsigned char *b, struct tlog_footer *f)
{
	(void)f;
	b[TLOG_IDX_FOOT - 20] ^= 0xff;
}

START_TEST(flipped_footer_rebuilt)
{
	footer_altered_rebuilt(flip_byte);
}
END_TEST

/* A footer whose CRC holds but whose counts cannot be (more records than
 * bytes) is no seal either. */
static void
more_records_than_bytes(unsigned char *b, struct tlog_footer *f)
{
	f->records = f->bytes + 1;
	tlog_idx_encode_footer(b, f);
}

START_TEST(footer_with_more_records_than_bytes_rebuilt)
{
	footer_altered_rebuilt(more_records_than_bytes);
}
END_TEST

/* Opens and compares with si: the same segments, sealed alike, with the
 * same stamps but for segment `rebuilt` (SIZE_MAX: none), whose index
 * was rebuilt from its data. Returns the store, still open. */
static struct tlog_store *
open_compared(const struct tlog_seginfo *si, size_t n, bool ro,
    size_t rebuilt)
{
	struct tlog_store_opts o;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si2;
	size_t n2, i;

	memset(&o, 0, sizeof(o));
	o.readonly = ro;
	s = th_open_opts(th_dir, &o);
	p = th_part(s, "t", "0");
	si2 = th_segs(p, &n2);
	ck_assert_uint_eq(n, n2);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(si[i].base, si2[i].base);
		ck_assert_uint_eq(si[i].records, si2[i].records);
		ck_assert_uint_eq(si[i].bytes, si2[i].bytes);
		ck_assert_int_eq(si[i].sealed, si2[i].sealed);
		if (i == rebuilt)	/* stamps come from the index */
			continue;
		ck_assert_int_eq(si[i].first_ts, si2[i].first_ts);
		ck_assert_int_eq(si[i].max_ts, si2[i].max_ts);
		ck_assert_int_eq(si[i].sealed_by, si2[i].sealed_by);
	}
	free(si2);
	tlog_partition_put(p);
	return s;
}

/* open_compared, then the store closed. */
static void
open_and_compare(const struct tlog_seginfo *si, size_t n, bool ro,
    size_t rebuilt)
{
	tlog_store_close(open_compared(si, n, ro, rebuilt));
}

/* Segment k's index unlinked, then open_and_compare with k rebuilt:
 * the open says it rebuilds the missing index (th_logbuf holds what it
 * logged). */
static void
index_lost(const struct tlog_seginfo *si, size_t n, size_t k)
{
	char *ip = seg_path(si[k].base, ".idx");

	ck_assert_int_eq(unlink(ip), 0);
	free(ip);
	th_logbuf[0] = '\0';
	open_and_compare(si, n, false, k);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "missing; rebuilding"));
}

START_TEST(clean_open_reads_no_record_data)
{
	struct tlog_store *s;
	struct tlog_seginfo *si;
	size_t n;
	struct stat st;
	char *lp, *junk;
	int fd;

	crash_after_writes();
	si = close_cleanly(&n);
	/* Replace every byte of segment 0 with non-newlines: a mount that
	 * scanned data would count different records. */
	lp = seg_path(0, ".log");
	ck_assert_int_eq(stat(lp, &st), 0);
	junk = malloc((size_t)st.st_size);
	memset(junk, 'z', (size_t)st.st_size);
	fd = open(lp, O_WRONLY);
	ck_assert_int_eq(write(fd, junk, (size_t)st.st_size), st.st_size);
	close(fd);
	free(junk);
	th_logbuf[0] = '\0';
	s = open_compared(si, n, false, SIZE_MAX);
	ck_assert(s->rc.was_clean);
	ck_assert_msg(th_logbuf[0] == '\0', "log: %s", th_logbuf);
	free(si);
	free(lp);
	tlog_store_close(s);
}
END_TEST

/*
 * A clean open takes the sealed segments from the checkpoint the clean
 * close wrote: it reads no index footer (here every sealed segment's
 * index is emptied, and nothing is rebuilt or logged). A read-only open
 * leaves the checkpoint; a read-write open removes it with the clean
 * mark, so it is never trusted after a later crash.
 */
START_TEST(clean_open_reads_no_footer)
{
	struct tlog_seginfo *si;
	char *ck, *ip;
	size_t n, i;

	crash_after_writes();
	si = close_cleanly(&n);
	ck = ckpt_path();
	ck_assert_int_eq(access(ck, F_OK), 0);
	for (i = 0; i + 1 < n; i++) {
		ip = seg_path(si[i].base, ".idx");
		ck_assert_int_eq(truncate(ip, 0), 0);
		free(ip);
	}
	th_logbuf[0] = '\0';
	open_and_compare(si, n, true, SIZE_MAX);
	ck_assert_msg(th_logbuf[0] == '\0', "log: %s", th_logbuf);
	ck_assert_int_eq(access(ck, F_OK), 0);
	open_and_compare(si, n, false, SIZE_MAX);
	ck_assert_msg(th_logbuf[0] == '\0', "log: %s", th_logbuf);
	free(si);
	free(ck);
}
END_TEST

/* After a crash the checkpoint of the clean close before is not there to
 * be trusted: the open after the crash reads the files. */
START_TEST(checkpoint_gone_once_open)
{
	struct tlog_store *s;
	struct tlog_seginfo *si;
	char *ck;
	size_t n;

	crash_after_writes();
	si = close_cleanly(&n);
	ck = ckpt_path();
	ck_assert_int_eq(access(ck, F_OK), 0);
	s = th_open(th_dir);
	ck_assert(s->rc.was_clean);
	ck_assert_int_eq(access(ck, F_OK), -1);
	tlog_store_close(s);
	ck_assert_int_eq(access(ck, F_OK), 0);
	free(si);
	free(ck);
}
END_TEST

/* A listing that disagrees with the checkpoint (a sealed segment's index
 * gone, a whole segment gone): that partition is read from its files. */
START_TEST(checkpoint_disagreeing_listing_falls_back)
{
	struct tlog_seginfo *si;
	char *lp;
	size_t n;

	crash_after_writes();
	si = close_cleanly(&n);
	index_lost(si, n, 1);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "the checkpoint does not "
	    "match"));
	lp = seg_path(si[2].base, ".log");
	ck_assert_int_eq(unlink(lp), 0);
	free(lp);
	lp = seg_path(si[2].base, ".idx");
	ck_assert_int_eq(unlink(lp), 0);
	free(lp);
	th_logbuf[0] = '\0';
	{
		struct tlog_store *s = th_open(th_dir);
		struct tlog_partition *p = th_part(s, "t", "0");
		size_t n2;
		struct tlog_seginfo *si2 = th_segs(p, &n2);

		ck_assert_ptr_nonnull(strstr(th_logbuf, "the checkpoint does "
		    "not match"));
		ck_assert_uint_eq(n2, n - 1);
		ck_assert_uint_eq(si2[2].base, si[3].base);
		free(si2);
		tlog_partition_put(p);
		tlog_store_close(s);
	}
	free(si);
}
END_TEST

/* A damaged checkpoint is logged once and ignored. */
START_TEST(damaged_checkpoint_ignored)
{
	struct tlog_seginfo *si;
	unsigned char c;
	char *ck;
	size_t n;
	int fd;

	crash_after_writes();
	si = close_cleanly(&n);
	ck = ckpt_path();
	fd = open(ck, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, 40), 1);
	c ^= 0x01;
	ck_assert_int_eq(pwrite(fd, &c, 1, 40), 1);
	close(fd);
	th_logbuf[0] = '\0';
	open_and_compare(si, n, false, SIZE_MAX);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "checkpoint: damaged"));
	ck_assert_ptr_eq(strchr(th_logbuf, '\n'),
	    th_logbuf + strlen(th_logbuf) - 1);
	free(si);
	free(ck);
}
END_TEST

/* A clean mark without the checkpoint's nonce (a tlogfs that knows no
 * checkpoint closed the store since it was written): not trusted. */
START_TEST(checkpoint_of_another_close_ignored)
{
	struct tlog_seginfo *si;
	char *mark;
	size_t n;

	crash_after_writes();
	si = close_cleanly(&n);
	ck_assert_int_ge(asprintf(&mark, "%s/.tlogfs/clean", th_dir), 0);
	ck_assert_int_eq(truncate(mark, 0), 0);
	index_lost(si, n, 0);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "checkpoint: not written by "
	    "the last clean close"));
	free(mark);
	free(si);
}
END_TEST

/* Two partitions of the same layout swapped while the store was
 * unmounted: each is read from its files, with its own stamps, not
 * the checkpoint's record of the other. */
START_TEST(checkpoint_partitions_swapped)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_seginfo *a, *b, *got;
	size_t na, nb, ng, i;
	char *d0, *d1, *dt;

	crash_after_writes();
	s = th_open(th_dir);
	p = th_part(s, "t", "1");
	th_set(s, p, "segment.bytes", "2K");
	th_clock += 86400000;
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, expect, nexpect),
	    (ssize_t)nexpect);
	tlog_writer_close(w);
	tlog_partition_put(p);
	tlog_store_close(s);
	a = close_cleanly(&na);
	s = th_open(th_dir);
	p = th_part(s, "t", "1");
	b = th_segs(p, &nb);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_uint_eq(na, nb);
	ck_assert_uint_eq(a[0].bytes, b[0].bytes);
	ck_assert_int_ne(a[0].max_ts, b[0].max_ts);
	ck_assert_int_ge(asprintf(&d0, "%s/t/0", th_dir), 0);
	ck_assert_int_ge(asprintf(&d1, "%s/t/1", th_dir), 0);
	ck_assert_int_ge(asprintf(&dt, "%s/t/x", th_dir), 0);
	ck_assert_int_eq(rename(d0, dt), 0);
	ck_assert_int_eq(rename(d1, d0), 0);
	ck_assert_int_eq(rename(dt, d1), 0);
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	got = th_segs(p, &ng);
	ck_assert_uint_eq(ng, nb);
	for (i = 0; i + 1 < ng; i++)
		ck_assert_int_eq(got[i].max_ts, b[i].max_ts);
	free(got);
	tlog_partition_put(p);
	tlog_store_close(s);
	free(a);
	free(b);
	free(d0);
	free(d1);
	free(dt);
}
END_TEST

/* A data file rewritten in place at the same length while unmounted
 * (same inode, new ctime) is not the file checkpointed: that segment is
 * read from its files (here its emptied index is rebuilt). */
START_TEST(checkpoint_file_changed_in_place)
{
	struct tlog_seginfo *si;
	char *lp, *ip, *d;
	size_t n, len;
	int fd;

	crash_after_writes();
	si = close_cleanly(&n);
	lp = seg_path(si[1].base, ".log");
	d = th_slurp(lp, &len);
	fd = open(lp, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, d, len, 0), (ssize_t)len);
	close(fd);
	ip = seg_path(si[1].base, ".idx");
	ck_assert_int_eq(truncate(ip, 0), 0);
	th_logbuf[0] = '\0';
	open_and_compare(si, n, false, 1);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "rebuilding it from the "
	    "data"));
	free(d);
	free(lp);
	free(ip);
	free(si);
}
END_TEST

/* An inotify descriptor (non-blocking) told of every open in t/0. */
static int
watch_opens(void)
{
	char *dir;
	int in;

	ck_assert_int_ge(asprintf(&dir, "%s/t/0", th_dir), 0);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(inotify_add_watch(in, dir, IN_OPEN), 0);
	free(dir);
	return in;
}

/* The segment files the store opened in t/0 while `in` watched it; a
 * line naming them all ("" if none). */
static char *
segment_files_opened(int in)
{
	static char names[4096];
	char buf[4096] __attribute__((aligned(8)));
	const struct inotify_event *ev;
	ssize_t k, off;
	size_t len;

	names[0] = '\0';
	while ((k = read(in, buf, sizeof(buf))) > 0)
		for (off = 0; off < k; off += (ssize_t)sizeof(*ev) +
		    (ssize_t)ev->len) {
			ev = (const struct inotify_event *)(buf + off);
			len = ev->len ? strlen(ev->name) : 0;
			if (len > 4 && (strcmp(ev->name + len - 4, ".log") ==
			    0 || strcmp(ev->name + len - 4, ".idx") == 0) &&
			    strlen(names) + len + 2 < sizeof(names)) {
				strcat(names, " ");
				strcat(names, ev->name);
			}
		}
	return names;
}

/*
 * A clean open with the checkpoint opens no segment file at all: the
 * sealed segments and the active one (its counters, its append state)
 * come from the checkpoint and one stat per file (inotify sees every
 * open in the partition's directory). Appends then go on where it
 * ended, and an open without the checkpoint, reading every index, finds
 * nothing to repair and the same records.
 */
/* A sealed segment's file replaced behind the store by a FIFO (or a
 * device) is never opened nor served: the open fails with EIO, not a
 * read with ESPIPE or a device's bytes served as records. */
START_TEST(segment_replaced_by_fifo_not_served)
{
	struct tlog_seginfo *si;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_segment *seg;
	char *lp;
	size_t n;

	crash_after_writes();
	si = close_cleanly(&n);
	s = th_open(th_dir);
	lp = seg_path(si[0].base, ".log");
	ck_assert_int_eq(unlink(lp), 0);
	ck_assert_int_eq(mkfifo(lp, 0644), 0);
	p = th_part(s, "t", "0");
	seg = tlog_segment_get(p, si[0].base);
	ck_assert_ptr_nonnull(seg);
	ck_assert_int_eq(tlog_segment_open(seg), -EIO);
	tlog_segment_put(seg);
	tlog_partition_put(p);
	tlog_store_close(s);
	free(lp);
	free(si);
}
END_TEST

START_TEST(clean_open_opens_no_segment_file)
{
	static const char more[] = "appended after a clean open\n";
	struct tlog_seginfo *si;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_part_stats st;
	char *ck, *d;
	size_t n, len, i;
	int in;

	crash_after_writes();
	si = close_cleanly(&n);
	ck_assert(!si[n - 1].sealed);
	ck_assert_uint_gt(si[n - 1].records, 0);
	in = watch_opens();
	th_logbuf[0] = '\0';
	s = open_compared(si, n, false, SIZE_MAX);
	ck_assert_msg(th_logbuf[0] == '\0', "log: %s", th_logbuf);
	d = segment_files_opened(in);
	ck_assert_msg(d[0] == '\0', "the clean open opened%s", d);
	close(in);
	/* 40 appends: past an index interval and a 2 KiB seal. */
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	for (i = 0; i < 40; i++)
		ck_assert_int_eq(tlog_writer_write(w, more, sizeof(more) - 1),
		    (ssize_t)sizeof(more) - 1);
	tlog_writer_close(w);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck = ckpt_path();
	ck_assert_int_eq(unlink(ck), 0);
	th_logbuf[0] = '\0';
	s = th_open(th_dir);
	ck_assert_msg(th_logbuf[0] == '\0', "repaired: %s", th_logbuf);
	p = th_part(s, "t", "0");
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, 300 + 40);
	d = th_partition_data(p, &len);
	ck_assert_uint_eq(len, nexpect + 40 * (sizeof(more) - 1));
	ck_assert(memcmp(d, expect, nexpect) == 0);
	for (i = 0; i < 40; i++)
		ck_assert(memcmp(d + nexpect + i * (sizeof(more) - 1), more,
		    sizeof(more) - 1) == 0);
	free(d);
	tlog_partition_put(p);
	tlog_store_close(s);
	free(ck);
	free(si);
}
END_TEST

/* Whole lines appended to the active segment's data file while the
 * store was unmounted (its size and ctime no longer the checkpoint's)
 * are read from the files and kept, not hidden behind the checkpoint's
 * counters; an index changed in place is read again likewise. */
START_TEST(checkpoint_active_changed_is_read)
{
	static const char more[] = "appended by hand\nand another\n";
	struct tlog_seginfo *si;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_part_stats st;
	char *lp, *ip, *d;
	size_t n, len;
	int fd, in;

	crash_after_writes();
	si = close_cleanly(&n);
	lp = seg_path(si[n - 1].base, ".log");
	append_file(lp, more, sizeof(more) - 1);
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, 300 + 2);
	d = th_partition_data(p, &len);
	ck_assert_uint_eq(len, nexpect + sizeof(more) - 1);
	ck_assert(memcmp(d + nexpect, more, sizeof(more) - 1) == 0);
	free(d);
	tlog_partition_put(p);
	tlog_store_close(s);
	/* The index rewritten in place with what it held: same length,
	 * new ctime; loaded from the files, the same records. */
	free(si);
	si = close_cleanly(&n);
	ip = seg_path(si[n - 1].base, ".idx");
	d = th_slurp(ip, &len);
	fd = open(ip, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, d, len, 0), (ssize_t)len);
	close(fd);
	free(d);
	in = watch_opens();
	th_logbuf[0] = '\0';
	open_and_compare(si, n, false, SIZE_MAX);
	ck_assert_msg(th_logbuf[0] == '\0', "log: %s", th_logbuf);
	ck_assert_ptr_nonnull(strstr(segment_files_opened(in),
	    strrchr(ip, '/') + 1));
	close(in);
	free(lp);
	free(ip);
	free(si);
}
END_TEST

/* The checkpoint at ck rewritten by f (on its part for t/0: its sealed
 * count, flags and first byte after its header), with its CRC made
 * right again. */
static void
forge_t0(const char *ck, void (*f)(unsigned char *, uint32_t, uint32_t))
{
	unsigned char *b;
	size_t len, pos = 24, plen;
	uint32_t cnt, flags, crc;
	int fd;

	b = (unsigned char *)th_slurp(ck, &len);
	for (;;) {
		ck_assert_uint_lt(pos + 2, len - 12);
		plen = (size_t)b[pos] | (size_t)b[pos + 1] << 8;
		cnt = tlog_get32(b + pos + 2 + plen + 16);
		flags = tlog_get32(b + pos + 2 + plen + 20);
		if (plen == 3 && memcmp(b + pos + 2, "t/0", 3) == 0)
			break;
		pos += 2 + plen + 24 + (size_t)cnt * 64 + (flags & 1 ? 80 : 0);
	}
	f(b + pos + 2 + plen + 24, cnt, flags);
	crc = tlog_crc32c(0, b, len - 4);
	tlog_put32(b + len - 4, crc);
	fd = open(ck, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
	free(b);
}

static void
huge_active_nidx(unsigned char *ent, uint32_t cnt, uint32_t flags)
{
	ck_assert_uint_eq(flags, 1);
	tlog_put32(ent + (size_t)cnt * 64 + 72, UINT32_MAX);
}

/* The active segment's index is checked against the checkpoint's count
 * of its entries (the index's size): a count it does not hold (a
 * forged or damaged checkpoint whose CRC holds) loads the segment from
 * its files, and seeks into it answer as before. */
START_TEST(checkpoint_active_index_length_checked)
{
	struct tlog_seginfo *si;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_pos want, got;
	char *ck;
	size_t n;

	crash_after_writes();
	si = close_cleanly(&n);
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	ck_assert_int_eq(tlog_partition_seek(p, 299, &want), 0);
	ck_assert_uint_eq(want.base, si[n - 1].base);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck = ckpt_path();
	forge_t0(ck, huge_active_nidx);
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	ck_assert_int_eq(tlog_partition_seek(p, 299, &got), 0);
	ck_assert_uint_eq(got.base, want.base);
	ck_assert_uint_eq(got.pos, want.pos);
	tlog_partition_put(p);
	tlog_store_close(s);
	free(ck);
	free(si);
}
END_TEST

/* A directory at the checkpoint's name never blocks a read-write open,
 * and the close still leaves its clean mark (a directory is never taken
 * for a checkpoint). */
START_TEST(checkpoint_directory_never_blocks)
{
	struct tlog_seginfo *si;
	struct tlog_store *s;
	struct stat st;
	char *ck, *mark;
	size_t n;

	crash_after_writes();
	si = close_cleanly(&n);
	ck = ckpt_path();
	ck_assert_int_eq(unlink(ck), 0);
	ck_assert_int_eq(mkdir(ck, 0755), 0);
	th_logbuf[0] = '\0';
	open_and_compare(si, n, false, SIZE_MAX);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "checkpoint: not a "
	    "checkpoint"));
	ck_assert_int_ge(asprintf(&mark, "%s/.tlogfs/clean", th_dir), 0);
	ck_assert_int_eq(lstat(mark, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	s = th_open(th_dir);
	ck_assert(s->rc.was_clean);
	tlog_store_close(s);
	ck_assert_int_eq(rmdir(ck), 0);
	free(mark);
	free(ck);
	free(si);
}
END_TEST

/* An empty newest segment (its file made while unmounted, or a seal
 * just before the close) holds no record: the partition's newest stamp
 * is still its newest record's, not "none". */
START_TEST(empty_newest_segment_keeps_newest_stamp)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_part_stats st;
	int64_t want;
	char *lp;
	int fd;

	crash_after_writes();
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	tlog_partition_stats(p, &st);
	want = st.newest_ts;
	ck_assert_int_gt(want, 0);
	ck_assert_uint_eq(st.end_offset, 300);
	tlog_partition_put(p);
	tlog_store_close(s);
	lp = seg_path(300, ".log");
	fd = open(lp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, 300);
	ck_assert_int_eq(st.newest_ts, want);
	tlog_partition_put(p);
	tlog_store_close(s);
	free(lp);
}
END_TEST

/* Something else than a file at the checkpoint's name (a FIFO would
 * block a reader forever) is ignored with one line; so is a FIFO at
 * .tlogfs/boot. */
START_TEST(checkpoint_fifo_never_blocks)
{
	struct tlog_seginfo *si;
	char *ck, *boot;
	size_t n;

	crash_after_writes();
	si = close_cleanly(&n);
	ck = ckpt_path();
	ck_assert_int_eq(unlink(ck), 0);
	ck_assert_int_eq(mkfifo(ck, 0644), 0);
	ck_assert_int_ge(asprintf(&boot, "%s/.tlogfs/boot", th_dir), 0);
	unlink(boot);
	ck_assert_int_eq(mkfifo(boot, 0644), 0);
	th_logbuf[0] = '\0';
	open_and_compare(si, n, true, SIZE_MAX);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "checkpoint: not a "
	    "checkpoint"));
	free(boot);
	free(ck);
	free(si);
}
END_TEST

/* A checkpoint whose CRC holds but whose values cannot be a sealed
 * segment's (no record) is damaged: ignored, with one line. */
START_TEST(checkpoint_insane_values_ignored)
{
	struct tlog_seginfo *si;
	unsigned char *b;
	char *ck;
	size_t n, len, path;
	uint32_t crc;
	int fd;

	crash_after_writes();
	si = close_cleanly(&n);
	ck = ckpt_path();
	b = (unsigned char *)th_slurp(ck, &len);
	/* The first part: its path after the 24-byte header, then 24
	 * bytes of directory, count and flags; its first entry's
	 * records. */
	path = (size_t)b[24] | (size_t)b[25] << 8;
	memset(b + 26 + path + 24 + 8, 0, 8);
	crc = tlog_crc32c(0, b, len - 4);
	b[len - 4] = (unsigned char)crc;
	b[len - 3] = (unsigned char)(crc >> 8);
	b[len - 2] = (unsigned char)(crc >> 16);
	b[len - 1] = (unsigned char)(crc >> 24);
	fd = open(ck, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
	th_logbuf[0] = '\0';
	open_and_compare(si, n, false, SIZE_MAX);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "checkpoint: damaged"));
	free(b);
	free(ck);
	free(si);
}
END_TEST

START_TEST(stray_and_orphan_files)
{
	char *p1, *p2, *p3;
	FILE *f;

	crash_after_writes();
	ck_assert_int_ge(asprintf(&p1, "%s/t/0/00000000000000000000.idx.tmp",
	    th_dir), 0);
	p2 = seg_path(99999, ".idx");		/* index without data */
	ck_assert_int_ge(asprintf(&p3, "%s/t/0/README", th_dir), 0);
	f = fopen(p1, "w");
	fputs("partial", f);
	fclose(f);
	f = fopen(p2, "w");
	fputs("orphan", f);
	fclose(f);
	f = fopen(p3, "w");
	fputs("someone's notes", f);
	fclose(f);
	th_logbuf[0] = '\0';
	allowed_notice = "README: stray file ignored";
	reopen_and_check(expect, nexpect, true);
	allowed_notice = NULL;
	ck_assert_int_ne(access(p1, F_OK), 0);
	ck_assert_int_ne(access(p2, F_OK), 0);
	ck_assert_int_eq(access(p3, F_OK), 0);	/* not ours: left alone */
	free(p1);
	free(p2);
	free(p3);
}
END_TEST

START_TEST(timestamps_stay_monotone_after_crash)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_part_stats st, st2;

	crash_after_writes();
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	tlog_partition_stats(p, &st);
	th_clock = st.newest_ts - 100000;	/* the clock went back */
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "z\n", 2), 2);
	tlog_writer_close(w);
	tlog_partition_stats(p, &st2);
	ck_assert_int_ge(st2.newest_ts, st.newest_ts);
	ck_assert_uint_eq(st2.end_offset, st.end_offset + 1);
	tlog_partition_put(p);
	tlog_store_close(s);
}
END_TEST

/* After a crash with the expected lines written, one clean open that
 * seals: the path of the data file the next segment will have. */
static char *
crash_then_next_path(struct tlog_part_stats *st)
{
	struct tlog_store *s;
	struct tlog_partition *p;

	crash_after_writes();
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	/* The next append starts a new segment. */
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	tlog_partition_stats(p, st);
	tlog_partition_put(p);
	tlog_store_close(s);
	return seg_path(st->end_offset, ".log");
}

/* A data file larger than any segment (4 GiB; records and offsets are
 * 32-bit within one) is not the store's: logged, skipped, never cut. */
START_TEST(oversized_file_is_skipped)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_part_stats st;
	struct stat sb;
	char *lp, *d;
	size_t n;
	int fd;

	lp = crash_then_next_path(&st);
	fd = open(lp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x\n", 2), 2);
	ck_assert_int_eq(ftruncate(fd, (off_t)TLOG_CAP_BYTES + 2), 0);
	close(fd);
	th_logbuf[0] = '\0';
	s = th_open(th_dir);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "more than a segment holds"));
	p = th_part(s, "t", "0");
	d = th_partition_data(p, &n);
	ck_assert_uint_eq(n, nexpect);
	free(d);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_int_eq(stat(lp, &sb), 0);
	ck_assert_int_eq(sb.st_size, (off_t)TLOG_CAP_BYTES + 2);
	unlink(lp);
	free(lp);
}
END_TEST

START_TEST(unreadable_file_is_never_overwritten)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_part_stats st;
	struct tlog_seginfo info;
	char *lp, *keep, *d;
	size_t n;

	/* Something recovery cannot load sits where the next segment goes
	 * (here a directory named like its data file, holding a file). It
	 * is not a regular file: logged, never touched, and the new segment
	 * skips its offset (a gap is legal). */
	lp = crash_then_next_path(&st);
	ck_assert_int_eq(mkdir(lp, 0755), 0);
	ck_assert_int_ge(asprintf(&keep, "%s/precious", lp), 0);
	fclose(fopen(keep, "w"));
	th_logbuf[0] = '\0';
	s = th_open(th_dir);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "not a regular file"));
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "new\n", 4), 4);
	tlog_writer_close(w);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "offset skipped"));
	ck_assert_int_eq(access(keep, F_OK), 0);
	d = th_partition_data(p, &n);
	ck_assert_uint_eq(n, nexpect + 4);
	ck_assert_str_eq(d + nexpect, "new\n");
	free(d);
	{
		struct tlog_segment *seg = tlog_segment_get_active(p);

		ck_assert_ptr_nonnull(seg);
		tlog_segment_info(seg, &info);
		ck_assert_uint_eq(info.base, st.end_offset + 1);
		tlog_segment_put(seg);
	}
	/* A regular file in the way (put there behind the engine's back)
	 * is set aside for the operator, never written over. */
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	tlog_partition_stats(p, &st);
	free(lp);
	lp = seg_path(st.end_offset, ".log");
	{
		FILE *f = fopen(lp, "w");

		fputs("intruder\n", f);
		fclose(f);
	}
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "newer\n", 6), 6);
	tlog_writer_close(w);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "kept as"));
	d = th_partition_data(p, &n);
	ck_assert_str_eq(d + nexpect, "new\nnewer\n");
	free(d);
	tlog_partition_put(p);
	tlog_store_close(s);
	free(lp);
	free(keep);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("recover");

	th_hooks(suite_setup, NULL);
	TH_CASE(s, crash_keeps_every_record);
	TH_CASE(s, data_beyond_the_index);
	TH_CASE(s, random_bytes_after_data_and_index);
	TH_CASE(s, index_truncated_mid_entry);
	TH_CASE(s, missing_index);
	TH_CASE(s, truncated_segment_data);
	TH_CASE(s, truncated_last_seal_keeps_end);
	TH_CASE(s, truncated_active_keeps_end);
	TH_CASE(s, removed_last_seal_keeps_end);
	TH_CASE(s, removed_active_keeps_end);
	TH_CASE(s, flipped_footer_rebuilt);
	TH_CASE(s, footer_with_more_records_than_bytes_rebuilt);
	TH_CASE(s, clean_open_reads_no_record_data);
	TH_CASE(s, clean_open_reads_no_footer);
	TH_CASE(s, checkpoint_gone_once_open);
	TH_CASE(s, checkpoint_disagreeing_listing_falls_back);
	TH_CASE(s, damaged_checkpoint_ignored);
	TH_CASE(s, checkpoint_of_another_close_ignored);
	TH_CASE(s, checkpoint_partitions_swapped);
	TH_CASE(s, checkpoint_file_changed_in_place);
	TH_CASE(s, clean_open_opens_no_segment_file);
	TH_CASE(s, segment_replaced_by_fifo_not_served);
	TH_CASE(s, checkpoint_active_changed_is_read);
	TH_CASE(s, checkpoint_active_index_length_checked);
	TH_CASE(s, checkpoint_directory_never_blocks);
	TH_CASE(s, empty_newest_segment_keeps_newest_stamp);
	TH_CASE(s, checkpoint_fifo_never_blocks);
	TH_CASE(s, checkpoint_insane_values_ignored);
	TH_CASE(s, stray_and_orphan_files);
	TH_CASE(s, timestamps_stay_monotone_after_crash);
	TH_CASE(s, unreadable_file_is_never_overwritten);
	TH_CASE(s, oversized_file_is_skipped);
	return th_run(s);
}
