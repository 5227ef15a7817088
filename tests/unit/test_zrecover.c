/*
 * test_zrecover.c - recovery of compressed history (recover.c's
 * zrecover, compress.c's checks): .log only, .log.zst only, both, a cut
 * plain copy, a torn or garbage .log.zst, an unreadable only copy, .tmp
 * leftovers, the periodic checkpoint's compressed entries, and power cuts
 * during compression.
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

/* ---- recovery ---- */

/* One compressed segment and a copy of its plain file at SEG0.keep. */
static void
make_both(void)
{
	th_open_tp(NULL);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 0, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(th_S, 0);
	ck_assert_int_eq(link(th_path(SEG0 ".log"), th_path(SEG0 ".keep")), 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	th_put_lines(th_P, 20000, 10);
	th_close();
	ck_assert_int_eq(rename(th_path(SEG0 ".keep"), th_path(SEG0 ".log")),
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
	th_check_data(th_P, 0, 20010);
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
	th_check_data(th_P, 0, 20010);
}
END_TEST

/* The plain copy cut short behind the store (the whole .log.zst is of
 * the seal's size): the .log.zst is the complete copy, kept; the .log
 * goes, and every record reads back. */
START_TEST(recovery_cut_plain_file_keeps_the_zst)
{
	make_both();
	ck_assert_int_eq(truncate(th_path(SEG0 ".log"), 1000), 0);
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "shorter than its seal"));
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	th_check_data(th_P, 0, 20010);
}
END_TEST

/* The same with the index's footer torn: no seal says which copy is
 * whole, and the longer one, the .log.zst, is never removed. */
START_TEST(recovery_cut_plain_file_unsealed_keeps_both)
{
	struct stat st;

	make_both();
	ck_assert_int_eq(truncate(th_path(SEG0 ".log"), 1000), 0);
	ck_assert_int_eq(stat(th_path(SEG0 ".idx"), &st), 0);
	ck_assert_int_eq(truncate(th_path(SEG0 ".idx"), st.st_size - 5), 0);
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
	ck_assert_int_eq(truncate(th_path(log), 1000), 0);
	ck_assert_int_eq(stat(th_path(idx), &st), 0);
	ck_assert_int_eq(truncate(th_path(idx), st.st_size - 5), 0);
	ck_assert_int_eq(stat(th_path(zst), &zst0), 0);
	if (reboot) {
		/* Not closed cleanly, in another boot: the index's entries
		 * no longer say the data was longer, and the cut plain copy
		 * would be the newest segment, active. */
		ck_assert_int_eq(unlink(th_path(".tlogfs/clean")), 0);
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
		th_put_lines(th_P, 50000, 20000);
		th_seal_and_compress(th_S, th_P);
		ck_assert_ptr_null(strstr(th_logbuf, "cannot compress"));
		ck_assert_int_eq(stat(th_path(log), &st), 0);
		ck_assert_int_le(st.st_size, 1000);
		ck_assert_int_eq(stat(th_path(zst), &st), 0);
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
	th_put_lines(th_P, 0, 3000);
	th_seal_and_compress(th_S, th_P);
	th_put_lines(th_P, 3000, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(th_S, 0);
	ck_assert_int_eq(link(th_path("t/0/00000000000000003000.log"),
	    th_path("t/0/keep")), 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	th_put_lines(th_P, 23000, 10);
	th_close();
	ck_assert_int_eq(rename(th_path("t/0/keep"),
	    th_path("t/0/00000000000000003000.log")), 0);
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
	th_put_lines(th_P, 0, 20000);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(th_S, 0);
	ck_assert_int_eq(link(th_path(SEG0 ".log"), th_path(SEG0 ".keep")), 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	th_close();
	ck_assert_int_eq(rename(th_path(SEG0 ".keep"), th_path(SEG0 ".log")),
	    0);
	both_kept_twice(SEG0, true, 20000);
	th_boot_id[0] = '\0';
}
END_TEST

START_TEST(recovery_torn_zst_keeps_the_plain_file)
{
	struct stat st;

	make_both();
	ck_assert_int_eq(stat(th_path(SEG0 ".log.zst"), &st), 0);
	ck_assert_int_eq(truncate(th_path(SEG0 ".log.zst"), st.st_size / 2),
	    0);
	reopen_keeps_the_plain_file();
}
END_TEST

START_TEST(recovery_garbage_seek_table_keeps_the_plain_file)
{
	struct stat st;
	int fd;

	make_both();
	ck_assert_int_eq(stat(th_path(SEG0 ".log.zst"), &st), 0);
	fd = open(th_path(SEG0 ".log.zst"), O_WRONLY);
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
	ck_assert_int_eq(stat(th_path(SEG0 ".log.zst"), &st), 0);
	fd = open(th_path(SEG0 ".log.zst"), O_RDWR);
	ck_assert_int_eq(pread(fd, &c, 1, 3000), 1);
	c ^= 1;
	ck_assert_int_eq(pwrite(fd, &c, 1, 3000), 1);
	close(fd);
	/* A bad frame: the .log is whole only by its seal, which a change
	 * behind the store would not show: both stay, the .log served. */
	th_open_tp(NULL);
	ck_assert(th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	th_check_data(th_P, 0, 20010);
}
END_TEST

/* make_both, then segment 0 kept only as its .log.zst and made the
 * newest: nothing after it says where the offsets stand. */
static void
zst_only_and_newest(void)
{
	make_both();
	ck_assert_int_eq(unlink(th_path(SEG0 ".log")), 0);
	ck_assert_int_eq(unlink(th_path("t/0/00000000000000020000.log")), 0);
	ck_assert_int_eq(unlink(th_path("t/0/00000000000000020000.idx")), 0);
}

/* The last len bytes of rel overwritten with buf, then the open: it
 * skips segment 0; the end offset it gives. */
static uint64_t
tail_overwritten_end(const char *rel, const void *buf, size_t len)
{
	struct tlog_part_stats ps;
	struct stat st;
	int fd;

	ck_assert_int_eq(stat(th_path(rel), &st), 0);
	fd = open(th_path(rel), O_WRONLY);
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
	ck_assert_int_eq(stat(th_path(SEG0 ".log.zst"), &st), 0);
	th_set(th_S, th_P, "compression.type", "zstd");
	th_put_lines(th_P, 30000, 10);
	th_seal_and_compress(th_S, th_P);
	ck_assert_int_eq(stat(th_path(SEG0 ".log.zst"), &st2), 0);
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
	ck_assert_int_eq(truncate(th_path(SEG0 ".log.zst"), 9), 0);
	tlog_idx_encode_footer(buf, &foot);
	ck_assert_uint_eq(tail_overwritten_end(SEG0 ".idx", buf, sizeof(buf)),
	    1);
}
END_TEST

/* Its index's footer torn (the table whole): skipped, and its offsets
 * kept past every record it holds, not only its base. */
START_TEST(only_copy_torn_footer_keeps_its_offsets)
{
	zst_only_and_newest();
	ck_assert_uint_ge(tail_overwritten_end(SEG0 ".idx", "torn!", 5),
	    20000);
}
END_TEST

/* make_both, the .log then cut to 1000 bytes and the .log.zst damaged
 * (how): neither copy is known whole, so both stay, the plain one
 * served, and nothing past it is handed out again (how 1: its frames
 * decode, its plain size is known). */
static void
cut_log_and_damaged_zst(int how)
{
	struct tlog_zs *t;
	char c;
	int fd;

	make_both();
	ck_assert_int_eq(truncate(th_path(SEG0 ".log"), 1000), 0);
	fd = open(th_path(SEG0 ".log.zst"), O_RDWR);
	ck_assert_int_eq(tlog_zs_load(fd, &t), 0);
	if (how == 0) {
		ck_assert_int_eq(ftruncate(fd, (off_t)t->zpos[t->n] - 5), 0);
	} else {
		ck_assert_int_eq(pread(fd, &c, 1, (off_t)t->zpos[1] + 50), 1);
		c ^= 0x01;
		ck_assert_int_eq(pwrite(fd, &c, 1, (off_t)t->zpos[1] + 50), 1);
	}
	close(fd);
	tlog_zs_free(t);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "both are kept for the "
	    "operator"));
	ck_assert(th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	th_close();
	th_open_tp(NULL);
	ck_assert(th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
}

/* Both copies kept (a cut .log, a bad frame), then the operator puts the
 * whole .log back: the kept files were left as they were (no seal of
 * the cut copy written), so every record is served from it. */
START_TEST(both_kept_then_the_plain_copy_restored)
{
	char *b;
	size_t len;
	int fd;

	cut_log_and_damaged_zst(1);
	th_close();
	b = th_lines(0, 20000, &len);
	fd = open(th_path(SEG0 ".log"), O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
	free(b);
	th_open_tp(NULL);
	th_check_data(th_P, 0, 20010);
}
END_TEST

/* The index gone too, the .log cut: no seal to trust, and the .log.zst
 * holds more: both stay, never the shorter copy alone. */
START_TEST(cut_log_no_index_keeps_both)
{
	struct tlog_part_stats ps;

	make_both();
	ck_assert_int_eq(truncate(th_path(SEG0 ".log"), 1000), 0);
	ck_assert_int_eq(unlink(th_path(SEG0 ".idx")), 0);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "both are kept for the "
	    "operator"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	tlog_partition_stats(th_P, &ps);
	ck_assert_uint_ge(ps.end_offset, 20010);
}
END_TEST

/* No index, the .log of the .log.zst's size with a byte changed: nothing
 * says which copy is whole (the .log's seal is gone): both stay. */
START_TEST(no_index_damaged_log_keeps_both)
{
	char c;
	int fd;

	make_both();
	ck_assert_int_eq(unlink(th_path(SEG0 ".idx")), 0);
	fd = open(th_path(SEG0 ".log"), O_RDWR);
	ck_assert_int_eq(pread(fd, &c, 1, 5000), 1);
	c ^= 0x01;
	ck_assert_int_eq(pwrite(fd, &c, 1, 5000), 1);
	close(fd);
	th_open_tp(NULL);
	ck_assert(th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
}
END_TEST

/* Both kept with no index and the .log cut inside a line: the piece of
 * line after its last newline is not served as a record (the .log.zst
 * holds that record whole). */
START_TEST(both_kept_cut_line_not_served)
{
	char *want, *got, *tail, *nl;
	size_t wlen, glen, tlen, keep;

	make_both();
	ck_assert_int_eq(truncate(th_path(SEG0 ".log"), 1000), 0);
	ck_assert_int_eq(unlink(th_path(SEG0 ".idx")), 0);
	th_open_tp(NULL);
	want = th_lines(0, 20000, &wlen);
	for (nl = want + 999; *nl != '\n'; nl--)
		;
	keep = (size_t)(nl - want) + 1;
	tail = th_lines(20000, 10, &tlen);
	got = th_partition_data(th_P, &glen);
	ck_assert_uint_eq(glen, keep + tlen);
	ck_assert(memcmp(got, want, keep) == 0);
	ck_assert(memcmp(got + keep, tail, tlen) == 0);
	free(want);
	free(tail);
	free(got);
}
END_TEST

/* A .log of its seal's size with a byte changed behind the store: the
 * whole .log.zst (its frames check themselves) of that size wins. */
START_TEST(damaged_log_loses_to_a_whole_zst)
{
	char c;
	int fd;

	make_both();
	fd = open(th_path(SEG0 ".log"), O_RDWR);
	ck_assert_int_eq(pread(fd, &c, 1, 5000), 1);
	c ^= 0x01;
	ck_assert_int_eq(pwrite(fd, &c, 1, 5000), 1);
	close(fd);
	th_open_tp(NULL);
	ck_assert(!th_exists(SEG0 ".log"));
	ck_assert(th_exists(SEG0 ".log.zst"));
	th_check_data(th_P, 0, 20010);
}
END_TEST

/* Its seek table torn: it may hold more than the cut plain copy. */
START_TEST(cut_log_beside_torn_zst_keeps_both)
{
	cut_log_and_damaged_zst(0);
}
END_TEST

/* A frame fails its checksum: the cut plain copy holds records the
 * .log.zst lost. */
START_TEST(cut_log_beside_bad_frame_keeps_both)
{
	cut_log_and_damaged_zst(1);
}
END_TEST

START_TEST(recovery_zst_only_and_tmp_leftovers)
{
	int fd;

	make_both();
	ck_assert_int_eq(unlink(th_path(SEG0 ".log")), 0);
	fd = open(th_path(SEG0 ".log.zst.tmp"), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, "half", 4), 4);
	close(fd);
	th_open_tp(NULL);
	ck_assert(!th_exists(SEG0 ".log.zst.tmp"));
	ck_assert(!th_exists(SEG0 ".log"));
	th_check_data(th_P, 0, 20010);
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
	th_put_lines(th_P, 0, 20000);
	th_seal_and_compress(th_S, th_P);
	th_close();
	ck_assert_int_eq(unlink(th_path(SEG0 ".idx")), 0);
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
	th_put_lines(th_P, 0, 3000);
	th_seal_and_compress(th_S, th_P);
	th_put_lines(th_P, 3000, 3000);
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
	th_check_data(th_P, 0, 6000);
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
	th_put_lines(p, 0, 3000);
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
	th_check_data(th_P, 0, 3000);
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
		th_put_lines(th_P, 0, 30000);
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
	th_check_data(th_P, 0, 30000);
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
	Suite *s = suite_create("zrecover");

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
	TH_CASE(s, only_copy_torn_footer_keeps_its_offsets);
	TH_CASE(s, cut_log_beside_torn_zst_keeps_both);
	TH_CASE(s, cut_log_beside_bad_frame_keeps_both);
	TH_CASE(s, both_kept_then_the_plain_copy_restored);
	TH_CASE(s, cut_log_no_index_keeps_both);
	TH_CASE(s, damaged_log_loses_to_a_whole_zst);
	TH_CASE(s, no_index_damaged_log_keeps_both);
	TH_CASE(s, both_kept_cut_line_not_served);
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
