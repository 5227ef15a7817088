/*
 * test_index.c - the index file's encoding, and look-ups by offset and by
 * time through the sparse index.
 */
#include "config.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <fcntl.h>
#include <stddef.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "segment.h"
#include "util.h"

START_TEST(entry_round_trip)
{
	unsigned char b[TLOG_IDX_ENT];
	struct tlog_idx_entry e = { 7, 4096, 1700000000123LL, 0xdeadbeef }, d;

	tlog_idx_encode_entry(b, &e);
	ck_assert_int_eq(tlog_idx_decode_entry(b, &d), 0);
	ck_assert_uint_eq(d.rel, 7);
	ck_assert_uint_eq(d.pos, 4096);
	ck_assert_int_eq(d.ts, 1700000000123LL);
	ck_assert_uint_eq(d.crc, 0xdeadbeef);
	b[17] ^= 0x01;		/* the data CRC is covered too */
	ck_assert_int_eq(tlog_idx_decode_entry(b, &d), -1);
	b[17] ^= 0x01;
	b[3] ^= 0x40;
	ck_assert_int_eq(tlog_idx_decode_entry(b, &d), -1);
}
END_TEST

START_TEST(footer_round_trip)
{
	unsigned char b[TLOG_IDX_FOOT];
	struct tlog_footer f = { 10, 999, 5, 6, TLOG_TRIG_TIME }, d;
	size_t i;

	tlog_idx_encode_footer(b, &f);
	ck_assert_int_eq(tlog_idx_decode_footer(b, &d), 0);
	ck_assert_uint_eq(d.records, 10);
	ck_assert_uint_eq(d.bytes, 999);
	ck_assert_int_eq(d.first_ts, 5);
	ck_assert_int_eq(d.max_ts, 6);
	ck_assert_uint_eq(d.sealed_by, TLOG_TRIG_TIME);
	/* Any flipped byte is caught. */
	for (i = 0; i < sizeof(b); i++) {
		b[i] ^= 1;
		ck_assert_int_eq(tlog_idx_decode_footer(b, &d), -1);
		b[i] ^= 1;
	}
}
END_TEST

/* A footer no seal writes is no footer, whatever its CRC says. */
START_TEST(footer_insane_counts_refused)
{
	static const struct tlog_footer bad[] = {
		{ 0, 0, 5, 6, TLOG_TRIG_TIME },		/* no record */
		{ 10, 9, 5, 6, TLOG_TRIG_TIME },	/* a record of 0 bytes */
		{ 1, TLOG_CAP_BYTES + 1, 5, 6, TLOG_TRIG_TIME },
	};
	unsigned char b[TLOG_IDX_FOOT];
	struct tlog_footer d;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tlog_idx_encode_footer(b, &bad[i]);
		ck_assert_int_eq(tlog_idx_decode_footer(b, &d), -1);
	}
}
END_TEST

START_TEST(header_round_trip)
{
	unsigned char b[TLOG_IDX_HDR];
	uint64_t base = 0;

	tlog_idx_encode_header(b, 412876, TLOG_IDX_F_DATACRC);
	ck_assert_int_eq(tlog_idx_decode_header(b, &base), 0);
	ck_assert_uint_eq(base, 412876);
	ck_assert_uint_eq(tlog_idx_header_flags(b), TLOG_IDX_F_DATACRC);
	memcpy(b, "XXXXXXXX", 8);
	ck_assert_int_eq(tlog_idx_decode_header(b, &base), -1);
}
END_TEST

/* Whatever the CPU offers, the same CRC-32C as the table, at any length,
 * alignment and split. */
START_TEST(crc32c_any_path)
{
	static unsigned char buf[100000];
	unsigned seed = 42;
	size_t len, off, cut;
	uint32_t a, b;

	ck_assert_uint_eq(tlog_crc32c(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(tlog_crc32c_sw(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(tlog_crc32c(0, buf, 0), 0);
	for (len = 0; len < sizeof(buf); len++)
		buf[len] = (unsigned char)rand_r(&seed);
	for (off = 0; off < 8; off++) {
		for (len = 0; len + off <= 520; len++) {
			a = tlog_crc32c(0, buf + off, len);
			b = tlog_crc32c_sw(0, buf + off, len);
			ck_assert_uint_eq(a, b);
			cut = len / 3;
			ck_assert_uint_eq(tlog_crc32c(tlog_crc32c(0, buf + off,
			    cut), buf + off + cut, len - cut), a);
		}
	}
	/* Long enough for the three-stream paths, around their edges. */
	for (len = 700; len < sizeof(buf) - 8; len += 1 + rand_r(&seed) % 997) {
		off = (size_t)rand_r(&seed) % 8;
		ck_assert_uint_eq(tlog_crc32c(7, buf + off, len),
		    tlog_crc32c_sw(7, buf + off, len));
	}
	for (len = 3 * 8192 - 16; len < 3 * 8192 + 16; len++)
		ck_assert_uint_eq(tlog_crc32c(0, buf, len),
		    tlog_crc32c_sw(0, buf, len));
}
END_TEST

START_TEST(find_offset_and_time)
{
	char *dir = th_tmpdir(), line[128];
	struct tlog_store *s = th_open(dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_writer *w = tlog_writer_open(p);
	struct tlog_segment *seg;
	uint64_t pos, off, expect = 0;
	int64_t t0 = th_clock;
	int i, n;

	/* 2000 lines of varying length over 2000 ms: many index entries. */
	for (i = 0; i < 2000; i++) {
		n = snprintf(line, sizeof(line), "%d %.*s\n", i, i % 50,
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		ck_assert_int_eq(tlog_writer_write(w, line, (size_t)n), n);
		th_clock++;
	}
	seg = tlog_segment_get_active(p);
	ck_assert_ptr_nonnull(seg);
	th_clock = t0;
	for (i = 0; i < 2000; i++) {
		n = snprintf(line, sizeof(line), "%d %.*s\n", i, i % 50,
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		ck_assert_int_eq(tlog_seg_find_offset(seg, (uint64_t)i,
		    &pos), 0);
		ck_assert_uint_eq(pos, expect);
		expect += (uint64_t)n;
	}
	ck_assert_int_eq(tlog_seg_find_offset(seg, 2001, &pos), -ENOENT);
	/* By time: a conservative start at or before the first match. */
	ck_assert_int_eq(tlog_seg_find_time(seg, t0 + 1500, &off, &pos),
	    0);
	ck_assert_uint_le(off, 1500);
	ck_assert_uint_ge(off, 1300);
	ck_assert_int_eq(tlog_seg_find_time(seg, t0 + 99999, &off, &pos),
	    -ENOENT);
	tlog_segment_put(seg);
	tlog_writer_close(w);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(index_is_sparse)
{
	char *dir = th_tmpdir(), path[512];
	struct tlog_store *s = th_open(dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_writer *w = tlog_writer_open(p);
	struct stat st;
	size_t entries;
	int i;

	/* 10,000 lines of 41 bytes (410,000 bytes) in writes of 100 lines:
	 * an entry about every 4 KiB, not one per record. */
	for (i = 0; i < 100; i++) {
		char buf[100 * 41 + 1];	/* and snprintf's NUL */
		int k;
		for (k = 0; k < 100; k++)
			snprintf(buf + k * 41, 42, "%040d\n", i * 100 + k);
		ck_assert_int_eq(tlog_writer_write(w, buf, (sizeof(buf) - 1)),
		    (ssize_t)(sizeof(buf) - 1));
	}
	tlog_writer_close(w);
	snprintf(path, sizeof(path), "%s/t/0/%020d.idx", dir, 0);
	ck_assert_int_eq(stat(path, &st), 0);
	entries = ((size_t)st.st_size - TLOG_IDX_HDR) / TLOG_IDX_ENT;
	ck_assert_uint_ge(entries, 410000 / 4096 - 1);
	ck_assert_uint_le(entries, 410000 / 4096 + 3);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/* Exactly 20 digits and the extension: a trailing newline, which
 * tlog_parse_offset would take (as echo sends it), never passes. */
START_TEST(segment_names)
{
	char name[64];
	uint64_t base = 7;

	tlog_segname_format(42, ".log", name, sizeof(name));
	ck_assert_str_eq(name, "00000000000000000042.log");
	ck_assert(tlog_segname_parse(name, ".log", &base));
	ck_assert_uint_eq(base, 42);
	ck_assert(!tlog_segname_parse(name, ".idx", &base));
	tlog_segname_format(TLOG_OFFSET_MAX, ".log.zst", name, sizeof(name));
	ck_assert(tlog_segname_parse(name, ".log.zst", &base));
	ck_assert_uint_eq(base, TLOG_OFFSET_MAX);
	base = 7;
	tlog_segname_format(TLOG_OFFSET_MAX + 1, ".log", name, sizeof(name));
	ck_assert(!tlog_segname_parse(name, ".log", &base));
	ck_assert(!tlog_segname_parse("0000000000000000000\n.log", ".log",
	    &base));
	ck_assert(!tlog_segname_parse("0000000000000000000\n", "", &base));
	ck_assert(!tlog_segname_parse("0000000000000000042.log", ".log",
	    &base));
	ck_assert(!tlog_segname_parse("000000000000000000042.log", ".log",
	    &base));
	ck_assert(!tlog_segname_parse("0000000000000000004x.log", ".log",
	    &base));
	ck_assert(!tlog_segname_parse("+0000000000000000042.log", ".log",
	    &base));
	ck_assert(!tlog_segname_parse("99999999999999999999.log", ".log",
	    &base));
	ck_assert(!tlog_segname_parse("00000000000000000042.log\n", ".log",
	    &base));
	ck_assert_uint_eq(base, 7);	/* untouched by a refusal */
}
END_TEST

/* Where openat2 is refused with EPERM (a container's seccomp profile
 * that predates it), tlog_open_beneath walks the path by hand: it still
 * opens beneath its directory and still refuses a symbolic link. */
static char *beneath_dir;

static void
open_without_openat2(void *res)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	int *r = res, dfd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		_exit(2);
	dfd = open(beneath_dir, O_RDONLY | O_DIRECTORY);
	r[0] = tlog_open_beneath(dfd, "a/f", O_RDONLY);
	r[1] = tlog_open_beneath(dfd, "l/f", O_RDONLY);
}

START_TEST(open_beneath_without_openat2)
{
	char *p;
	int r[2];

	beneath_dir = th_tmpdir();
	ck_assert_int_ge(asprintf(&p, "%s/a", beneath_dir), 0);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	free(p);
	ck_assert_int_ge(asprintf(&p, "%s/a/f", beneath_dir), 0);
	ck_assert_int_ge(creat(p, 0600), 0);
	free(p);
	ck_assert_int_ge(asprintf(&p, "%s/l", beneath_dir), 0);
	ck_assert_int_eq(symlink("a", p), 0);
	free(p);
	th_in_child(open_without_openat2, r, sizeof(r));
	ck_assert_int_ge(r[0], 0);
	ck_assert_int_eq(r[1], -ENOTDIR);
	th_rmrf(beneath_dir);
	free(beneath_dir);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("index");

	TH_CASE(s, entry_round_trip);
	TH_CASE(s, footer_round_trip);
	TH_CASE(s, footer_insane_counts_refused);
	TH_CASE(s, header_round_trip);
	TH_CASE(s, crc32c_any_path);
	TH_CASE(s, find_offset_and_time);
	TH_CASE(s, index_is_sparse);
	TH_CASE(s, segment_names);
	TH_CASE(s, open_beneath_without_openat2);
	return th_run(s);
}
