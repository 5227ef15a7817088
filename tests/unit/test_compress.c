/*
 * test_compress.c - compressed history (compress.c, zread.c): sealed
 * segments compressed off the append path only when compression.type
 * says so at their seal, reads of plain bytes (a reader of the plain file
 * keeping it), disk bytes, a corrupt frame losing only itself, and a
 * segment deleted while its compression runs. Recovery and power cuts:
 * test_zrecover.c.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "index.h"
#include "zseek.h"

#define SEG0 "t/0/00000000000000000000"

START_TEST(sealed_segments_are_compressed_and_read_plain)
{
	struct tlog_part_stats ps;
	struct tlog_seginfo *si;
	struct stat st;
	size_t n;

	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 0, 30000);
	ck_assert(th_exists(SEG0 ".log"));
	/* Nothing before the seal. */
	ck_assert_int_eq(tlog_store_compress_pending(th_S, 0), 0);
	ck_assert(!th_exists(SEG0 ".log.zst"));
	th_seal_and_compress(th_S, th_P);
	ck_assert(th_exists(SEG0 ".log.zst"));
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert(!th_exists(SEG0 ".log.zst.tmp"));
	th_check_data(th_P, 0, 30000);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_gt(si[0].zbytes, 0);
	ck_assert_uint_lt(si[0].zbytes * 3, si[0].bytes);
	tlog_partition_stats(th_P, &ps);
	ck_assert_uint_eq(ps.disk_bytes, si[0].zbytes);
	ck_assert_uint_eq(ps.bytes, si[0].bytes);
	free(si);
	/* After a restart too, and it stays compressed. */
	th_close();
	th_open_tp(NULL);
	th_check_data(th_P, 0, 30000);
	si = th_segs(th_P, &n);
	ck_assert_uint_gt(si[0].zbytes, 0);
	free(si);
	ck_assert_int_eq(stat(th_dir, &st), 0);
}
END_TEST

START_TEST(only_segments_sealed_while_it_is_on)
{
	struct tlog_seginfo *si;
	size_t n;

	th_open_tp(NULL);
	th_put_lines(th_P, 0, 1000);
	th_seal_and_compress(th_S, th_P);	/* none: the default */
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 1000, 1000);
	th_seal_and_compress(th_S, th_P);
	th_set(th_S, th_P, "compression.type", "none");
	th_put_lines(th_P, 2000, 1000);
	th_seal_and_compress(th_S, th_P);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(si[0].zbytes, 0);
	ck_assert_uint_gt(si[1].zbytes, 0);
	ck_assert_uint_eq(si[2].zbytes, 0);
	free(si);
	th_check_data(th_P, 0, 3000);
}
END_TEST

START_TEST(bad_settings_are_refused)
{
	char err[256];

	th_open_tp(NULL);
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, th_P, "compression.type",
	    "gzip", 4, err, sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "none or zstd") != NULL);
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, th_P,
	    "compression.zstd.level", "20", 2, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, th_P,
	    "compression.zstd.level", "0", 1, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, th_P,
	    "compression.zstd.level", "19", 2, err, sizeof(err)), 0);
}
END_TEST

START_TEST(a_reader_of_the_plain_file_keeps_it)
{
	struct tlog_segment *seg;
	size_t len;
	char *want = th_lines(0, 5000, &len), *got = malloc(len);
	int fd, fd2;

	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 0, 5000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	seg = tlog_segment_get(th_P, 0);
	fd = tlog_segment_open(seg);
	ck_assert_int_ge(fd, 0);
	th_seal_and_compress(th_S, th_P);
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert_int_eq(tlog_segment_read(seg, fd, got, len, 0),
	    (ssize_t)len);
	ck_assert(memcmp(got, want, len) == 0);
	fd2 = tlog_segment_open(seg);
	memset(got, 0, len);
	ck_assert_int_eq(tlog_segment_read(seg, fd2, got + 100, len - 100,
	    100), (ssize_t)(len - 100));
	ck_assert(memcmp(got + 100, want + 100, len - 100) == 0);
	tlog_segment_close(seg, fd);
	tlog_segment_close(seg, fd2);
	tlog_segment_put(seg);
	free(want);
	free(got);
}
END_TEST

/* How many times needle occurs in hay. */
static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

/* Flips a bit of the byte at off of fd. */
static void
flip(int fd, uint64_t off)
{
	char c;

	ck_assert_int_eq(pread(fd, &c, 1, (off_t)off), 1);
	c ^= 0x01;
	ck_assert_int_eq(pwrite(fd, &c, 1, (off_t)off), 1);
}

/* Segment 0 of th_lines(0, 40000) compressed, the store closed, then frame
 * 1 made to fail its checksum, and the last frame too if last: its seek
 * table. */
static struct tlog_zs *
bad_frames(bool last)
{
	struct tlog_zs *t;
	char path[4096];
	int fd;

	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 0, 40000);
	th_seal_and_compress(th_S, th_P);
	th_close();
	snprintf(path, sizeof(path), "%s/" SEG0 ".log.zst", th_dir);
	fd = open(path, O_RDWR);
	ck_assert_int_eq(tlog_zs_load(fd, &t), 0);
	ck_assert_uint_ge(t->n, 4);
	flip(fd, t->zpos[1] + 50);
	if (last)
		flip(fd, t->zpos[t->n - 1] + 20);
	close(fd);
	return t;
}

/* Frames 1 and the last fail their checksums: only their records are
 * lost, and each is said once (a line, an event), however often read. */
START_TEST(a_corrupt_frame_loses_only_its_records)
{
	struct tlog_partition *ev;
	struct tlog_segment *seg;
	struct tlog_zs *t = bad_frames(true);
	size_t len, elen;
	char *want = th_lines(0, 40000, &len), *got, *evs;
	uint32_t i;
	int fd;

	th_open_tp(NULL);
	seg = tlog_segment_get(th_P, 0);
	fd = tlog_segment_open(seg);
	got = malloc(len);
	/* A read that touches the bad frame fails, never with its bytes;
	 * one that ends before it is served. */
	ck_assert_int_eq(tlog_segment_read(seg, fd, got, len, 0), -EIO);
	ck_assert_int_eq(tlog_segment_read(seg, fd, got, t->pos[1], 0),
	    (ssize_t)t->pos[1]);
	ck_assert(memcmp(got, want, t->pos[1]) == 0);
	ck_assert_int_eq(tlog_segment_read(seg, fd, got, len,
	    (off_t)t->pos[1]), -EIO);
	ck_assert(strstr(th_logbuf, "fails its checksum") != NULL);
	for (i = 2; i < t->n - 1; i++) {
		size_t fl = t->pos[i + 1] - t->pos[i];

		ck_assert_int_eq(tlog_segment_read(seg, fd, got, fl,
		    (off_t)t->pos[i]), (ssize_t)fl);
		ck_assert(memcmp(got, want + t->pos[i], fl) == 0);
	}
	ck_assert_int_eq(tlog_segment_read(seg, fd, got, 10,
	    (off_t)t->pos[t->n - 1]), -EIO);
	ck_assert_int_eq(tlog_segment_read(seg, fd, got, 10,
	    (off_t)t->pos[1]), -EIO);
	ck_assert_int_eq(count_of(th_logbuf, "fails its checksum"), 2);
	tlog_segment_close(seg, fd);
	tlog_segment_put(seg);
	ev = tlog_store_events(th_S);
	evs = th_partition_data(ev, &elen);
	ck_assert_int_eq(count_of(evs, "\"event\":\"corrupt\""), 2);
	ck_assert(strstr(evs, "\"rule\":\"corrupt\"") != NULL);
	tlog_partition_put(ev);
	tlog_zs_free(t);
	free(evs);
	free(got);
	free(want);
}
END_TEST

/*
 * A look-up counts newlines from the index entry before the record, in
 * reads of up to 64 KiB: one that would touch a bad frame further on
 * must not fail the look-up of a record before that frame (design.md:
 * only the records of the bad frame, and of the pages it shares, are
 * lost). Those after its first fail with -EIO.
 */
START_TEST(a_seek_before_a_corrupt_frame_finds_its_record)
{
	struct tlog_pos at;
	struct tlog_zs *t = bad_frames(false);
	size_t len, i;
	char *want = th_lines(0, 40000, &len), *nlp;
	uint64_t nl = 0, last = 0, m;

	/* Frame 0 ends at a record's end: nl records, the last at `last`. */
	for (i = 0; i < t->pos[1]; i++)
		if (want[i] == '\n') {
			if (i + 1 < t->pos[1])
				last = i + 1;
			nl++;
		}
	th_open_tp(NULL);
	ck_assert_int_eq(tlog_partition_seek(th_P, nl - 1, &at), 0);
	ck_assert_uint_eq(at.base, 0);
	ck_assert_uint_eq(at.pos, last);
	/* The bad frame's first record starts where frame 0 ends; where
	 * the next one starts only the bad frame could tell. */
	ck_assert_int_eq(tlog_partition_seek(th_P, nl, &at), 0);
	ck_assert_uint_eq(at.pos, t->pos[1]);
	ck_assert_int_eq(tlog_partition_seek(th_P, nl + 1, &at), -EIO);
	/* The records after it are found, counted back from the index
	 * entry after them, which a count from the one before (inside the
	 * bad frame) cannot pass. The first, whose newline before it is
	 * in the bad frame, cannot be told from a record longer than a
	 * frame: lost with the frame (it shares a page with it anyway). */
	for (i = 0, m = 0; i < t->pos[2]; i++)
		m += want[i] == '\n';
	ck_assert_int_eq(tlog_partition_seek(th_P, m, &at), -EIO);
	nlp = memchr(want + t->pos[2], '\n', len - t->pos[2]);
	ck_assert_int_eq(tlog_partition_seek(th_P, m + 1, &at), 0);
	ck_assert_uint_eq(at.pos, (uint64_t)(nlp - want) + 1);
	tlog_zs_free(t);
	free(want);
}
END_TEST

/* Files of t/0 whose names end in ext. */
static size_t
count_files(const char *ext)
{
	char path[4096];
	struct dirent *de;
	size_t n = 0, el = strlen(ext), l;
	DIR *d;

	snprintf(path, sizeof(path), "%s/t/0", th_dir);
	ck_assert_ptr_nonnull(d = opendir(path));
	while ((de = readdir(d)) != NULL) {
		l = strlen(de->d_name);
		if (l > el && strcmp(de->d_name + l - el, ext) == 0)
			n++;
	}
	closedir(d);
	return n;
}

START_TEST(retention_bytes_counts_the_disk)
{
	struct tlog_part_stats ps;
	int i;

	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_set(th_S, th_P, "retention.bytes", "1M");
	/* About 4.5 MB of plain lines: the ceiling keeps far more than
	 * 1 MiB of them once they are compressed. */
	for (i = 0; i < 60; i++) {
		th_put_lines(th_P, i * 1000, 1000);
		tlog_store_flush_pending(th_S, 0);
		while (tlog_store_compress_pending(th_S, 0) > 0)
			;
		tlog_store_unlink_pending(th_S, 0);
	}
	tlog_partition_stats(th_P, &ps);
	ck_assert_uint_le(ps.disk_bytes, 1 << 20);
	ck_assert_uint_gt(ps.bytes, 2 << 20);
	/* The deleted ones left no file: one data file and one index per
	 * live segment. */
	ck_assert_uint_eq(count_files(".log") + count_files(".log.zst"),
	    ps.segments);
	ck_assert_uint_eq(count_files(".idx"), ps.segments);
}
END_TEST

/* Segment 0 deleted (rm), its files unlinked, at hook point delete_at. */
static int delete_at;

static void
delete_hook(void *arg, int point, struct tlog_partition *p)
{
	(void)arg;
	if (point != delete_at)
		return;
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	tlog_store_unlink_pending(th_S, 0);
	ck_assert(!th_exists(SEG0 ".log"));
}

/* A segment deleted while its compression runs, just before the rename:
 * the unlinker finds no compressed copy to remove, so the compression,
 * finding its segment dead, removes the .log.zst it renamed. No file of
 * the segment is left. */
START_TEST(deleted_while_compressing_leaves_no_file)
{
	struct tlog_store_opts o;

	delete_at = TLOG_HOOK_COMPRESS;
	memset(&o, 0, sizeof(o));
	o.hook = delete_hook;
	th_open_tp(&o);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 0, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(th_S, 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert(!th_exists(SEG0 ".idx"));
	ck_assert(!th_exists(SEG0 ".log.zst"));
	ck_assert(!th_exists(SEG0 ".log.zst.tmp"));
}
END_TEST

/* The same files gone behind the store's back (the segment alive):
 * that is a failure, and it is said. */
static void
gone_at_start_hook(void *arg, int point, struct tlog_partition *p)
{
	(void)arg;
	(void)p;
	if (point == TLOG_HOOK_COMPRESS_START)
		ck_assert_int_eq(unlink(th_path(SEG0 ".log")), 0);
}

static void
compress_with_hook(void (*hook)(void *, int, struct tlog_partition *))
{
	struct tlog_store_opts o;

	memset(&o, 0, sizeof(o));
	o.hook = hook;
	th_open_tp(&o);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 0, 2000);
	th_logbuf[0] = '\0';
	th_seal_and_compress(th_S, th_P);
	ck_assert(!th_exists(SEG0 ".log.zst"));
	ck_assert(!th_exists(SEG0 ".log.zst.tmp"));
}

/* A segment deleted (rm) as its compression starts, its files unlinked
 * before the job opens them: the job stops without a word, as it does
 * when it finds the segment dead at any later step. */
START_TEST(deleted_as_it_starts_is_not_a_failure)
{
	delete_at = TLOG_HOOK_COMPRESS_START;
	compress_with_hook(delete_hook);
	ck_assert_ptr_null(strstr(th_logbuf, "cannot compress"));
	ck_assert(!th_exists(SEG0 ".idx"));
}
END_TEST

START_TEST(data_gone_behind_the_store_is_said)
{
	compress_with_hook(gone_at_start_hook);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "cannot compress it (its "
	    "data: No such file or directory)"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("compress");

	TH_CASE(s, sealed_segments_are_compressed_and_read_plain);
	TH_CASE(s, only_segments_sealed_while_it_is_on);
	TH_CASE(s, bad_settings_are_refused);
	TH_CASE(s, a_reader_of_the_plain_file_keeps_it);
	TH_CASE(s, a_corrupt_frame_loses_only_its_records);
	TH_CASE(s, a_seek_before_a_corrupt_frame_finds_its_record);
	TH_CASE(s, retention_bytes_counts_the_disk);
	TH_CASE(s, deleted_while_compressing_leaves_no_file);
	TH_CASE(s, deleted_as_it_starts_is_not_a_failure);
	TH_CASE(s, data_gone_behind_the_store_is_said);
	return th_run(s);
}
