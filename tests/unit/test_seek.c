/*
 * test_seek.c - where a reader starts: tlog_partition_seek (by offset)
 * and tlog_partition_seek_time (by timestamp) across segments, at the
 * end, past expired and deleted segments, and without reading a segment
 * from its start. On the injected clock.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "retention.h"
#include "testhelp.h"

#define LINE 7		/* "%06d\n" */


/* Lines first..first+n-1, one write and one ms each. */
static void
put_lines(int first, int n)
{
	struct tlog_writer *w = tlog_writer_open(th_P);
	char line[16];
	int i;

	for (i = first; i < first + n; i++) {
		snprintf(line, sizeof(line), "%06d\n", i);
		th_put(w, line);
		th_clock++;
	}
	ck_assert_int_eq(tlog_writer_close(w), 0);
}

/* The line at (base, pos), read from the segment's data file. */
static int
line_at(uint64_t base, uint64_t pos)
{
	char path[512], buf[LINE + 1];
	int fd;

	snprintf(path, sizeof(path), "%s/t/0/%020llu.log", th_dir,
	    (unsigned long long)base);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, LINE, (off_t)pos), LINE);
	close(fd);
	buf[LINE] = '\0';
	return atoi(buf);
}

static void
suite_setup(void)
{
	th_open_tp(NULL);
}

START_TEST(every_offset_across_segments)
{
	struct tlog_seginfo *si;
	struct tlog_pos at;
	size_t n, k;
	int i;

	/* 1 KiB segments of 146 lines: 1000 lines make 7 segments. */
	th_set(th_S, th_P, "segment.bytes", "1K");
	put_lines(0, 1000);
	si = th_segs(th_P, &n);
	ck_assert_uint_ge(n, 6);
	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(tlog_partition_seek(th_P, (uint64_t)i, &at), 0);
		ck_assert_uint_eq(at.offset, (uint64_t)i);
		for (k = 0; k + 1 < n && si[k + 1].base <= (uint64_t)i; k++)
			;
		ck_assert_uint_eq(at.base, si[k].base);
		ck_assert_uint_eq(at.pos, ((uint64_t)i - si[k].base) * LINE);
		ck_assert_int_eq(line_at(at.base, at.pos), i);
	}
	free(si);
}
END_TEST

START_TEST(the_end_and_beyond)
{
	struct tlog_pos at;

	/* Empty partition: the end is offset 0, no segment yet. */
	ck_assert_int_eq(tlog_partition_seek(th_P, 0, &at), 0);
	ck_assert_uint_eq(at.offset, 0);
	ck_assert_uint_eq(at.base, 0);
	ck_assert_uint_eq(at.pos, 0);
	ck_assert_int_eq(tlog_partition_seek(th_P, 1, &at), -ENODATA);
	put_lines(0, 10);
	/* The end of the active segment. */
	ck_assert_int_eq(tlog_partition_seek(th_P, 10, &at), 0);
	ck_assert_uint_eq(at.offset, 10);
	ck_assert_uint_eq(at.base, 0);
	ck_assert_uint_eq(at.pos, 10 * LINE);
	ck_assert_int_eq(tlog_partition_seek(th_P, 11, &at), -ENODATA);
	/* Sealed: the next segment will start at the end. */
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	ck_assert_int_eq(tlog_partition_seek(th_P, 10, &at), 0);
	ck_assert_uint_eq(at.offset, 10);
	ck_assert_uint_eq(at.base, 10);
	ck_assert_uint_eq(at.pos, 0);
	/* By time: nothing that new yet is the end as well. */
	ck_assert_int_eq(tlog_partition_seek_time(th_P, th_clock + 1000, &at), 0);
	ck_assert_uint_eq(at.offset, 10);
	ck_assert_uint_eq(at.base, 10);
}
END_TEST

START_TEST(expired_and_deleted_are_skipped)
{
	struct tlog_seginfo *si;
	struct tlog_pos at;
	size_t n;

	th_set(th_S, th_P, "segment.bytes", "1K");
	put_lines(0, 600);
	si = th_segs(th_P, &n);
	ck_assert_uint_ge(n, 4);
	/* The oldest expires (the time rule, as the reaper runs it): an
	 * offset in it resumes at the new start, which says how much was
	 * skipped. */
	th_set(th_S, th_P, "retention.ms", "1s");
	th_clock = si[0].max_ts + 1001;
	ck_assert_int_eq(tlog_part_expire(th_P, 64, NULL), 1);
	ck_assert_int_eq(tlog_partition_seek(th_P, 5, &at), 0);
	ck_assert_uint_eq(at.offset, si[1].base);
	ck_assert_uint_eq(at.base, si[1].base);
	ck_assert_uint_eq(at.pos, 0);
	/* Still so once its files are unlinked. */
	tlog_store_unlink_pending(th_S, 0);
	ck_assert_int_eq(tlog_partition_seek(th_P, 0, &at), 0);
	ck_assert_uint_eq(at.offset, si[1].base);
	/* A gap in the middle (rm of one segment): the next segment. */
	ck_assert_int_eq(tlog_partition_delete(th_P, si[2].base), 0);
	tlog_store_unlink_pending(th_S, 0);
	ck_assert_int_eq(tlog_partition_seek(th_P, si[2].base + 3, &at), 0);
	ck_assert_uint_eq(at.offset, si[3].base);
	ck_assert_uint_eq(at.base, si[3].base);
	/* Records on either side of the gap are found exactly. */
	ck_assert_int_eq(tlog_partition_seek(th_P, si[2].base - 1, &at), 0);
	ck_assert_uint_eq(at.base, si[1].base);
	ck_assert_int_eq(line_at(at.base, at.pos), (int)si[2].base - 1);
	ck_assert_int_eq(tlog_partition_seek(th_P, si[3].base + 1, &at), 0);
	ck_assert_int_eq(line_at(at.base, at.pos), (int)si[3].base + 1);
	/* By time, an expired span is skipped the same way. */
	ck_assert_int_eq(tlog_partition_seek_time(th_P, 0, &at), 0);
	ck_assert_uint_eq(at.offset, si[1].base);
	ck_assert_uint_eq(at.pos, 0);
	free(si);
}
END_TEST

START_TEST(by_time_across_segments)
{
	struct tlog_pos at;
	int64_t t0 = th_clock;
	int i;

	/* Line i is stamped t0 + i; 64 KiB segments, 4 KiB index. */
	th_set(th_S, th_P, "segment.bytes", "64K");
	put_lines(0, 30000);
	for (i = 0; i < 30000; i += 997) {
		ck_assert_int_eq(tlog_partition_seek_time(th_P, t0 + i, &at), 0);
		/* Never late, early by one index interval at most. */
		ck_assert_uint_le(at.offset, (uint64_t)i);
		ck_assert_uint_ge(at.offset + 4096 / LINE + 1, (uint64_t)i);
		ck_assert_int_eq(line_at(at.base, at.pos), (int)at.offset);
	}
	/* Before everything: the start. */
	ck_assert_int_eq(tlog_partition_seek_time(th_P, t0 - 5000, &at), 0);
	ck_assert_uint_eq(at.offset, 0);
	ck_assert_uint_eq(at.pos, 0);
}
END_TEST

/*
 * The look-up starts at the nearest index entry, never at the segment's
 * start: with the newlines of the first 4000 bytes overwritten, a record
 * far behind them is still found exactly.
 */
START_TEST(no_scan_from_the_start)
{
	struct tlog_pos at;
	char path[512], junk[4000];
	int fd;

	put_lines(0, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	snprintf(path, sizeof(path), "%s/t/0/%020d.log", th_dir, 0);
	memset(junk, 'x', sizeof(junk));
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 0), sizeof(junk));
	close(fd);
	ck_assert_int_eq(tlog_partition_seek(th_P, 15000, &at), 0);
	ck_assert_uint_eq(at.base, 0);
	ck_assert_uint_eq(at.pos, 15000 * LINE);
	ck_assert_int_eq(line_at(at.base, at.pos), 15000);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("seek");

	th_hooks(suite_setup, NULL);
	TH_CASE(s, every_offset_across_segments);
	TH_CASE(s, the_end_and_beyond);
	TH_CASE(s, expired_and_deleted_are_skipped);
	TH_CASE(s, by_time_across_segments);
	TH_CASE(s, no_scan_from_the_start);
	return th_run(s);
}
