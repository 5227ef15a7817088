/*
 * test_compress.c - compressed history (compress.c, zread.c): sealed
 * segments compressed off the append path only when compression.type
 * says so at their seal, reads of plain bytes (a reader of the plain file
 * keeping it), disk bytes, a corrupt frame losing only itself, and
 * recovery with .log only, .log.zst only, both, a torn or garbage
 * .log.zst and .tmp leftovers, and power cuts during compression.
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

static char *
lines(int from, int n, size_t *len)
{
	char *b = malloc((size_t)n * 80 + 1);
	size_t at = 0;
	int i;

	for (i = from; i < from + n; i++)
		at += (size_t)sprintf(b + at, "%d 10.0.0.%d - - GET /item/%d "
		    "HTTP/1.1 200 %d\n", i, i % 250, i * 7 % 1000, i % 9000);
	*len = at;
	return b;
}

static void
put_lines(struct tlog_partition *p, int from, int n)
{
	struct tlog_writer *w;
	size_t len;
	char *b = lines(from, n, &len);

	w = tlog_writer_open(p);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(tlog_writer_write(w, b, len), (ssize_t)len);
	tlog_writer_close(w);
	free(b);
}

static void
seal_and_compress(struct tlog_store *s, struct tlog_partition *p)
{
	ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(s, 0);
	while (tlog_store_compress_pending(s, 0) > 0)
		;
}

static void
check_data(struct tlog_partition *p, int from, int n)
{
	size_t len, glen;
	char *want = lines(from, n, &len), *got = th_partition_data(p, &glen);

	ck_assert_uint_eq(glen, len);
	ck_assert(memcmp(got, want, len) == 0);
	free(want);
	free(got);
}

START_TEST(sealed_segments_are_compressed_and_read_plain)
{
	struct tlog_part_stats ps;
	struct tlog_seginfo *si;
	struct stat st;
	size_t n;

	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 0, 30000);
	ck_assert(th_exists(SEG0 ".log"));
	/* Nothing before the seal. */
	ck_assert_int_eq(tlog_store_compress_pending(th_S, 0), 0);
	ck_assert(!th_exists(SEG0 ".log.zst"));
	seal_and_compress(th_S, th_P);
	ck_assert(th_exists(SEG0 ".log.zst"));
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert(!th_exists(SEG0 ".log.zst.tmp"));
	check_data(th_P, 0, 30000);
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
	check_data(th_P, 0, 30000);
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
	put_lines(th_P, 0, 1000);
	seal_and_compress(th_S, th_P);	/* none: the default */
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 1000, 1000);
	seal_and_compress(th_S, th_P);
	th_set(th_S, th_P, "compression.type", "none");
	put_lines(th_P, 2000, 1000);
	seal_and_compress(th_S, th_P);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(si[0].zbytes, 0);
	ck_assert_uint_gt(si[1].zbytes, 0);
	ck_assert_uint_eq(si[2].zbytes, 0);
	free(si);
	check_data(th_P, 0, 3000);
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
	char *want = lines(0, 5000, &len), *got = malloc(len);
	int fd, fd2;

	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 0, 5000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	seg = tlog_segment_get(th_P, 0);
	fd = tlog_segment_open(seg);
	ck_assert_int_ge(fd, 0);
	seal_and_compress(th_S, th_P);
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

/* Segment 0 of lines(0, 40000) compressed, the store closed, then frame
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
	put_lines(th_P, 0, 40000);
	seal_and_compress(th_S, th_P);
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
	char *want = lines(0, 40000, &len), *got, *evs;
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
	char *want = lines(0, 40000, &len), *nlp;
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
		put_lines(th_P, i * 1000, 1000);
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

/* ---- recovery ---- */

static char *
path_of(const char *rel)
{
	static char p[2][4096];
	static int k;

	k ^= 1;
	snprintf(p[k], sizeof(p[k]), "%s/%s", th_dir, rel);
	return p[k];
}

/* One compressed segment and a copy of its plain file at SEG0.keep. */
static void
make_both(void)
{
	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 0, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(th_S, 0);
	ck_assert_int_eq(link(path_of(SEG0 ".log"), path_of(SEG0 ".keep")), 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	put_lines(th_P, 20000, 10);
	th_close();
	ck_assert_int_eq(rename(path_of(SEG0 ".keep"), path_of(SEG0 ".log")),
	    0);
}

/* After make_both and damage to the .log.zst: the open keeps the plain
 * file, removes the compressed one, and every record reads back. */
static void
reopen_keeps_the_plain_file(void)
{
	th_open_tp(NULL);
	ck_assert(th_exists(SEG0 ".log"));
	ck_assert(!th_exists(SEG0 ".log.zst"));
	check_data(th_P, 0, 20010);
}

START_TEST(recovery_both_complete_keeps_one)
{
	struct tlog_seginfo *si;
	size_t n;

	make_both();
	th_open_tp(NULL);
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	si = th_segs(th_P, &n);
	ck_assert_uint_gt(si[0].zbytes, 0);
	free(si);
	check_data(th_P, 0, 20010);
}
END_TEST

/* The plain copy cut short behind the store (the whole .log.zst is of
 * the seal's size): the .log.zst is the complete copy, kept; the .log
 * goes, and every record reads back. */
START_TEST(recovery_cut_plain_file_keeps_the_zst)
{
	make_both();
	ck_assert_int_eq(truncate(path_of(SEG0 ".log"), 1000), 0);
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "shorter than its seal"));
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	check_data(th_P, 0, 20010);
}
END_TEST

/* The same with the index's footer torn: no seal says which copy is
 * whole, and the longer one, the .log.zst, is never removed. */
START_TEST(recovery_cut_plain_file_unsealed_keeps_both)
{
	struct stat st;

	make_both();
	ck_assert_int_eq(truncate(path_of(SEG0 ".log"), 1000), 0);
	ck_assert_int_eq(stat(path_of(SEG0 ".idx"), &st), 0);
	ck_assert_int_eq(truncate(path_of(SEG0 ".idx"), st.st_size - 5), 0);
	th_open_tp(NULL);
	ck_assert(th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
}
END_TEST

/*
 * Both copies kept (a .log cut short beside its .log.zst, the index's
 * footer torn), at each of two opens; base is the segment's. Every
 * compression queued meanwhile is run: none may touch it (its rename
 * would fail, EEXIST, at every queueing), and the one line about it is
 * the open's. The offsets up to handed were handed out: never again.
 */
static void
both_kept_twice(const char *base, bool reboot, uint64_t handed)
{
	char log[64], zst[64], idx[64];
	struct tlog_part_stats ps;
	struct stat st, zst0;
	int i;

	snprintf(log, sizeof(log), "%s.log", base);
	snprintf(zst, sizeof(zst), "%s.log.zst", base);
	snprintf(idx, sizeof(idx), "%s.idx", base);
	ck_assert_int_eq(truncate(path_of(log), 1000), 0);
	ck_assert_int_eq(stat(path_of(idx), &st), 0);
	ck_assert_int_eq(truncate(path_of(idx), st.st_size - 5), 0);
	ck_assert_int_eq(stat(path_of(zst), &zst0), 0);
	if (reboot) {
		/* Not closed cleanly, in another boot: the index's entries
		 * no longer say the data was longer, and the cut plain copy
		 * would be the newest segment, active. */
		ck_assert_int_eq(unlink(path_of(".tlogfs/clean")), 0);
		th_new_boot();
	}
	for (i = 0; i < 2; i++) {
		th_logbuf[0] = '\0';
		th_open_tp(NULL);
		ck_assert_ptr_nonnull(strstr(th_logbuf, "both are kept for "
		    "the operator"));
		tlog_partition_stats(th_P, &ps);
		ck_assert_uint_ge(ps.end_offset, handed);
		/* More than its plain copy held: appends go elsewhere. */
		put_lines(th_P, 50000, 20000);
		seal_and_compress(th_S, th_P);
		ck_assert_ptr_null(strstr(th_logbuf, "cannot compress"));
		ck_assert_int_eq(stat(path_of(log), &st), 0);
		ck_assert_int_le(st.st_size, 1000);
		ck_assert_int_eq(stat(path_of(zst), &st), 0);
		ck_assert_int_eq(st.st_size, zst0.st_size);
		ck_assert(!th_exists("t/0/00000000000000000000.log.zst.tmp"));
		th_close();
	}
}

/* The segment with both copies behind a compressed one: recovery queues
 * the sealed plain segments after the newest compressed one again. */
START_TEST(both_kept_behind_a_compressed_one_is_not_compressed)
{
	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 0, 3000);
	seal_and_compress(th_S, th_P);
	put_lines(th_P, 3000, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(th_S, 0);
	ck_assert_int_eq(link(path_of("t/0/00000000000000003000.log"),
	    path_of("t/0/keep")), 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	put_lines(th_P, 23000, 10);
	th_close();
	ck_assert_int_eq(rename(path_of("t/0/keep"),
	    path_of("t/0/00000000000000003000.log")), 0);
	both_kept_twice("t/0/00000000000000003000", false, 23010);
	/* Deleted (rm, retention), it goes with both copies. */
	th_open_tp(NULL);
	ck_assert_int_eq(tlog_partition_delete(th_P, 3000), 0);
	tlog_store_unlink_pending(th_S, 0);
	ck_assert(!th_exists("t/0/00000000000000003000.log"));
	ck_assert(!th_exists("t/0/00000000000000003000.log.zst"));
	ck_assert(!th_exists("t/0/00000000000000003000.idx"));
}
END_TEST

/* The segment with both copies the newest, after a power cut: its plain
 * copy would be the active segment, and appends to it would make the
 * .log.zst look stale (and be removed) at a later open. */
START_TEST(both_kept_newest_takes_no_appends)
{
	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	/* No roll on time at the appends after the reopens. */
	th_set(th_S, th_P, "segment.ms", "1000000000000000");
	put_lines(th_P, 0, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(th_S, 0);
	ck_assert_int_eq(link(path_of(SEG0 ".log"), path_of(SEG0 ".keep")), 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	th_close();
	ck_assert_int_eq(rename(path_of(SEG0 ".keep"), path_of(SEG0 ".log")),
	    0);
	both_kept_twice(SEG0, true, 20000);
	th_boot_id[0] = '\0';
}
END_TEST

START_TEST(recovery_torn_zst_keeps_the_plain_file)
{
	struct stat st;

	make_both();
	ck_assert_int_eq(stat(path_of(SEG0 ".log.zst"), &st), 0);
	ck_assert_int_eq(truncate(path_of(SEG0 ".log.zst"), st.st_size / 2),
	    0);
	reopen_keeps_the_plain_file();
}
END_TEST

START_TEST(recovery_garbage_seek_table_keeps_the_plain_file)
{
	struct stat st;
	int fd;

	make_both();
	ck_assert_int_eq(stat(path_of(SEG0 ".log.zst"), &st), 0);
	fd = open(path_of(SEG0 ".log.zst"), O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "garbage!!", 9, st.st_size - 9), 9);
	close(fd);
	reopen_keeps_the_plain_file();
}
END_TEST

/* Both copies, the compressed one with a bad frame (its table whole):
 * the plain copy is what stays. */
START_TEST(recovery_corrupt_frame_keeps_the_plain_file)
{
	struct stat st;
	unsigned char c;
	int fd;

	make_both();
	ck_assert_int_eq(stat(path_of(SEG0 ".log.zst"), &st), 0);
	fd = open(path_of(SEG0 ".log.zst"), O_RDWR);
	ck_assert_int_eq(pread(fd, &c, 1, 3000), 1);
	c ^= 1;
	ck_assert_int_eq(pwrite(fd, &c, 1, 3000), 1);
	close(fd);
	reopen_keeps_the_plain_file();
}
END_TEST

/* make_both, then segment 0 kept only as its .log.zst and made the
 * newest: nothing after it says where the offsets stand. */
static void
zst_only_and_newest(void)
{
	make_both();
	ck_assert_int_eq(unlink(path_of(SEG0 ".log")), 0);
	ck_assert_int_eq(unlink(path_of("t/0/00000000000000020000.log")), 0);
	ck_assert_int_eq(unlink(path_of("t/0/00000000000000020000.idx")), 0);
}

/* The last len bytes of rel overwritten with buf, then the open: it
 * skips segment 0; the end offset it gives. */
static uint64_t
tail_overwritten_end(const char *rel, const void *buf, size_t len)
{
	struct tlog_part_stats ps;
	struct stat st;
	int fd;

	ck_assert_int_eq(stat(path_of(rel), &st), 0);
	fd = open(path_of(rel), O_WRONLY);
	ck_assert_int_eq(pwrite(fd, buf, len, st.st_size - (off_t)len),
	    (ssize_t)len);
	close(fd);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "segment skipped"));
	tlog_partition_stats(th_P, &ps);
	return ps.end_offset;
}

/*
 * The only copy of a segment with an unreadable seek table is skipped
 * but never lost: its offsets are not given to other records, and a
 * later segment's compression never renames over it.
 */
START_TEST(unreadable_only_copy_keeps_its_offsets)
{
	struct stat st, st2;

	zst_only_and_newest();
	ck_assert_uint_eq(tail_overwritten_end(SEG0 ".log.zst", "garbage!!",
	    9), 20000);
	ck_assert_int_eq(stat(path_of(SEG0 ".log.zst"), &st), 0);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 30000, 10);
	seal_and_compress(th_S, th_P);
	ck_assert_int_eq(stat(path_of(SEG0 ".log.zst"), &st2), 0);
	ck_assert_uint_eq(st2.st_ino, st.st_ino);
	ck_assert_uint_eq(st2.st_size, st.st_size);
}
END_TEST

/* Its index's footer, CRC intact, says more records than a segment can
 * hold: it is not believed (the end offset would pass the largest one,
 * or wrap), and the skipped segment keeps only its base. */
START_TEST(unreadable_only_copy_insane_footer_ignored)
{
	struct tlog_footer foot = { (uint64_t)1 << 63, (uint64_t)1 << 63,
	    0, 0, 0 };
	unsigned char buf[TLOG_IDX_FOOT];

	zst_only_and_newest();
	ck_assert_int_eq(truncate(path_of(SEG0 ".log.zst"), 9), 0);
	tlog_idx_encode_footer(buf, &foot);
	ck_assert_uint_eq(tail_overwritten_end(SEG0 ".idx", buf, sizeof(buf)),
	    1);
}
END_TEST

START_TEST(recovery_zst_only_and_tmp_leftovers)
{
	int fd;

	make_both();
	ck_assert_int_eq(unlink(path_of(SEG0 ".log")), 0);
	fd = open(path_of(SEG0 ".log.zst.tmp"), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, "half", 4), 4);
	close(fd);
	th_open_tp(NULL);
	ck_assert(!th_exists(SEG0 ".log.zst.tmp"));
	ck_assert(!th_exists(SEG0 ".log"));
	check_data(th_P, 0, 20010);
}
END_TEST

/* A .log.zst whose index is gone (damage: no unlink leaves it) is the
 * only copy of its records: skipped, never removed, its offsets never
 * handed out again. */
START_TEST(recovery_zst_without_index_is_kept)
{
	struct tlog_part_stats ps;

	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 0, 20000);
	seal_and_compress(th_S, th_P);
	th_close();
	ck_assert_int_eq(unlink(path_of(SEG0 ".idx")), 0);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "compressed data without its "
	    "index; segment skipped"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	tlog_partition_stats(th_P, &ps);
	ck_assert_uint_ge(ps.end_offset, 20000);
	th_close();
	th_open_tp(NULL);
	ck_assert(th_exists(SEG0 ".log.zst"));
}
END_TEST

START_TEST(recovery_log_only_is_queued_again)
{
	struct tlog_seginfo *si;
	size_t n;

	/* Two segments sealed with compression on; the daemon stopped
	 * after the first was compressed: the second is compressed at the
	 * next open. */
	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 0, 3000);
	seal_and_compress(th_S, th_P);
	put_lines(th_P, 3000, 3000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	th_close();
	th_open_tp(NULL);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(si[1].zbytes, 0);
	free(si);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	si = th_segs(th_P, &n);
	ck_assert_uint_gt(si[1].zbytes, 0);
	free(si);
	check_data(th_P, 0, 6000);
}
END_TEST

/* ---- the periodic checkpoint ---- */

struct ckres {
	unsigned n;
	uint64_t bases[64];
};

/* A partition of 16 KiB segments, all sealed ones compressed, then a
 * periodic checkpoint, then a crash. */
static void
ckpt_child(void *arg)
{
	struct ckres *r = arg;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	size_t n, i;

	s = th_keep(th_open(th_dir));
	p = th_part(s, "t", "0");
	th_set(s, p, "compression.type", "zstd");
	th_set(s, p, "segment.bytes", "16K");
	put_lines(p, 0, 3000);
	ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(s, 0);
	while (tlog_store_compress_pending(s, 0) > 0)
		;
	ck_assert_int_eq(tlog_store_checkpoint(s), 0);
	si = th_segs(p, &n);
	ck_assert_uint_le(n, 64);
	for (i = 0; i < n; i++) {
		ck_assert_uint_gt(si[i].zbytes, 0);
		r->bases[i] = si[i].base;
	}
	r->n = (unsigned)n;
	free(si);
}

/* After the crash the compressed segments come from the checkpoint: their
 * indexes, emptied here, are never read, and every record reads back. */
START_TEST(a_periodic_checkpoint_takes_compressed_segments)
{
	struct ckres r;

	memset(&r, 0, sizeof(r));
	th_in_child(ckpt_child, &r, sizeof(r));
	ck_assert_uint_ge(r.n, 4);
	free(th_open_indexes_emptied(r.bases, r.n));
	check_data(th_P, 0, 3000);
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
	put_lines(th_P, 0, 20000);
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
		ck_assert_int_eq(unlink(path_of(SEG0 ".log")), 0);
}

static void
compress_with_hook(void (*hook)(void *, int, struct tlog_partition *))
{
	struct tlog_store_opts o;

	memset(&o, 0, sizeof(o));
	o.hook = hook;
	th_open_tp(&o);
	th_set(th_S, th_P, "compression.type", "zstd");
	put_lines(th_P, 0, 2000);
	th_logbuf[0] = '\0';
	seal_and_compress(th_S, th_P);
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

/* ---- power cuts during compression ---- */

static int cut_at;

static void
cut_hook(void *arg, int point, struct tlog_partition *p)
{
	(void)arg;
	(void)p;
	if (point == cut_at) {
		th_powercut(th_dir, 3, TH_CUT_ZERO);
		_exit(0);
	}
}

/* A child compresses a sealed segment and loses power at cut_at (0:
 * after a few frames, -1: after all of it); the parent, booted again,
 * finds every record exactly once. */
static void
cut_during_compression(int at)
{
	struct tlog_store_opts o;
	char id[64];
	pid_t pid;
	int st, i;

	snprintf(id, sizeof(id), "boot-a-%d", (int)getpid());
	strlcpy(th_boot_id, id, sizeof(th_boot_id));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		memset(&o, 0, sizeof(o));
		o.hook = cut_hook;
		cut_at = at;
		th_dur_start(th_dir);
		th_open_tp(&o);
		th_set(th_S, th_P, "compression.type", "zstd");
		put_lines(th_P, 0, 30000);
		ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL),
		    0);
		ck_assert_int_eq(tlog_partition_fsync(th_P, true), 0);
		for (i = 0; tlog_store_compress_pending(th_S, 1) > 0; i++)
			if (at == 0 && i == 1)
				break;
		th_powercut(th_dir, 3, TH_CUT_ZERO);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(id, sizeof(id), "boot-b-%d", (int)getpid());
	strlcpy(th_boot_id, id, sizeof(th_boot_id));
	th_open_tp(NULL);
	ck_assert(th_exists(SEG0 ".log") != th_exists(SEG0 ".log.zst"));
	ck_assert(!th_exists(SEG0 ".log.zst.tmp"));
	check_data(th_P, 0, 30000);
	th_boot_id[0] = '\0';
}

START_TEST(powercut_mid_frames)
{
	cut_during_compression(0);
}
END_TEST

START_TEST(powercut_before_rename)
{
	cut_during_compression(TLOG_HOOK_COMPRESS);
}
END_TEST

START_TEST(powercut_before_the_plain_unlink)
{
	cut_during_compression(TLOG_HOOK_COMPRESS_DONE);
}
END_TEST

START_TEST(powercut_after_it)
{
	cut_during_compression(-1);
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
	TH_CASE(s, recovery_both_complete_keeps_one);
	TH_CASE(s, recovery_cut_plain_file_keeps_the_zst);
	TH_CASE(s, recovery_cut_plain_file_unsealed_keeps_both);
	TH_CASE(s, both_kept_behind_a_compressed_one_is_not_compressed);
	TH_CASE(s, both_kept_newest_takes_no_appends);
	TH_CASE(s, recovery_torn_zst_keeps_the_plain_file);
	TH_CASE(s, recovery_garbage_seek_table_keeps_the_plain_file);
	TH_CASE(s, recovery_corrupt_frame_keeps_the_plain_file);
	TH_CASE(s, unreadable_only_copy_keeps_its_offsets);
	TH_CASE(s, unreadable_only_copy_insane_footer_ignored);
	TH_CASE(s, deleted_while_compressing_leaves_no_file);
	TH_CASE(s, deleted_as_it_starts_is_not_a_failure);
	TH_CASE(s, data_gone_behind_the_store_is_said);
	TH_CASE(s, recovery_zst_only_and_tmp_leftovers);
	TH_CASE(s, recovery_zst_without_index_is_kept);
	TH_CASE(s, recovery_log_only_is_queued_again);
	TH_CASE(s, a_periodic_checkpoint_takes_compressed_segments);
	TH_CASE(s, powercut_mid_frames);
	TH_CASE(s, powercut_before_rename);
	TH_CASE(s, powercut_before_the_plain_unlink);
	TH_CASE(s, powercut_after_it);
	return th_run(s);
}
