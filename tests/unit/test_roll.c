/*
 * test_roll.c - the roll decision (size, time, idle, manual, capacity),
 * preallocation, the monotone clock, jitter, the size ceiling and the
 * time rule, all on the injected clock.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "retention.h"
#include "store.h"


/* A line of exactly n bytes, newline included. */
static void
put_n(struct tlog_writer *w, size_t n)
{
	char *b = malloc(n);

	memset(b, 'r', n - 1);
	b[n - 1] = '\n';
	ck_assert_int_eq(tlog_writer_write(w, b, n), (ssize_t)n);
	free(b);
}

/* Segment names chain: each base is the previous base plus its records. */
static void
check_chain(const struct tlog_seginfo *si, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		ck_assert_uint_eq(si[i].base, si[i - 1].base +
		    si[i - 1].records);
}

START_TEST(sparse_arrivals_time_roll)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	int64_t t0;
	size_t n;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.ms", "1s");
	w = tlog_writer_open(th_P);
	t0 = th_clock;
	th_put(w, "a\n");
	th_clock = t0 + 400;
	th_put(w, "b\n");
	th_clock = t0 + 999;
	th_put(w, "c\n");
	th_clock = t0 + 1000;		/* exactly segment.ms after a */
	th_put(w, "d\n");
	th_clock = t0 + 60000;		/* a long silence */
	th_put(w, "e\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(si[0].records, 3);
	ck_assert(si[0].sealed);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_TIME);
	ck_assert_int_eq(si[0].first_ts, t0);
	ck_assert_int_eq(si[0].max_ts, t0 + 999);
	ck_assert_uint_eq(si[1].base, 3);
	ck_assert_uint_eq(si[1].records, 1);
	ck_assert_int_eq(si[1].sealed_by, TLOG_TRIG_TIME);
	ck_assert_uint_eq(si[2].base, 4);
	ck_assert(!si[2].sealed);
	check_chain(si, n);
	free(si);
	tlog_writer_close(w);
}
END_TEST

START_TEST(crossing_record_lands_in_new_segment)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	size_t n, len;
	char *data;
	int i;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.bytes", "1K");
	w = tlog_writer_open(th_P);
	for (i = 0; i < 10; i++)
		put_n(w, 100);
	put_n(w, 24);		/* 1024: exactly full, no roll */
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(si[0].bytes, 1024);
	free(si);
	put_n(w, 1);		/* one byte over: rolls first */
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(si[0].bytes, 1024);
	ck_assert_uint_eq(si[0].records, 11);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_SIZE);
	ck_assert_uint_eq(si[1].bytes, 1);
	ck_assert_uint_eq(si[1].base, 11);
	free(si);
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 1025);
	free(data);
	tlog_writer_close(w);
}
END_TEST

/* Deterministic lines of varied length. */
static char *
make_lines(size_t count, size_t *len)
{
	char *b = malloc(count * 300), *q = b;
	unsigned x = 12345;
	size_t i, k, l;

	for (i = 0; i < count; i++) {
		x = x * 1103515245 + 12345;
		l = 1 + (x >> 16) % 250;
		for (k = 0; k + 1 < l; k++)
			*q++ = (char)('a' + (i + k) % 26);
		*q++ = '\n';
	}
	*len = (size_t)(q - b);
	return b;
}

START_TEST(same_boundaries_one_write_or_many)
{
	struct tlog_seginfo *a, *b;
	struct tlog_writer *w;
	struct tlog_partition *q;
	size_t na, nb, len, off, k, i;
	char *lines = make_lines(600, &len), *da, *db;

	th_open_tp(NULL);
	q = th_part(th_S, "t", "1");
	th_set(th_S, th_P, "segment.bytes", "2K");
	th_set(th_S, q, "segment.bytes", "2K");
	w = tlog_writer_open(th_P);
	ck_assert_int_eq(tlog_writer_write(w, lines, len), (ssize_t)len);
	tlog_writer_close(w);
	w = tlog_writer_open(q);
	for (off = 0, k = 1; off < len; off += k, k = k % 13 + 1) {
		size_t m = off + k > len ? len - off : k;
		ck_assert_int_eq(tlog_writer_write(w, lines + off, m),
		    (ssize_t)m);
	}
	tlog_writer_close(w);
	a = th_segs(th_P, &na);
	b = th_segs(q, &nb);
	ck_assert_uint_gt(na, 20);
	ck_assert_uint_eq(na, nb);
	for (i = 0; i < na; i++) {
		ck_assert_uint_eq(a[i].base, b[i].base);
		ck_assert_uint_eq(a[i].records, b[i].records);
		ck_assert_uint_eq(a[i].bytes, b[i].bytes);
		ck_assert_uint_le(a[i].bytes, 2048);
	}
	check_chain(a, na);
	da = th_partition_data(th_P, &na);
	db = th_partition_data(q, &nb);
	ck_assert_uint_eq(na, len);
	ck_assert_uint_eq(nb, len);
	ck_assert(memcmp(da, lines, len) == 0);
	ck_assert(memcmp(db, lines, len) == 0);
	free(a);
	free(b);
	free(da);
	free(db);
	free(lines);
	tlog_partition_put(q);
}
END_TEST

START_TEST(setting_changed_mid_stream)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	size_t n;
	int i;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.bytes", "4K");
	w = tlog_writer_open(th_P);
	for (i = 0; i < 20; i++)
		put_n(w, 100);
	/* Smaller than what the segment holds: the next record rolls. */
	th_set(th_S, th_P, "segment.bytes", "1K");
	put_n(w, 100);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(si[0].records, 20);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_SIZE);
	free(si);
	/* A time setting at the topic level applies at the next record. */
	{
		char err[256];
		ck_assert_int_eq(tlog_conf_set(th_S, tlog_partition_topic(th_P),
		    NULL, "segment.ms", "2s", 2, err, sizeof(err)), 0);
	}
	th_clock += 2000;
	put_n(w, 10);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(si[1].sealed_by, TLOG_TRIG_TIME);
	free(si);
	tlog_writer_close(w);
}
END_TEST

static struct stat
seg_stat(uint64_t base)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/t/0/%020llu.log", th_dir,
	    (unsigned long long)base);
	ck_assert_int_eq(stat(path, &st), 0);
	return st;
}

START_TEST(preallocation_trimmed_at_seal)
{
	struct tlog_writer *w;
	struct stat st;
	size_t len;
	char *data;
	int i;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.bytes", "1M");
	th_set(th_S, th_P, "segment.preallocate", "1");
	w = tlog_writer_open(th_P);
	for (i = 0; i < 10; i++)
		th_put(w, "preallocated line\n");
	st = seg_stat(0);
	ck_assert_int_eq(st.st_size, 180);
	ck_assert_int_ge((long long)st.st_blocks * 512, 1 << 20);
	tlog_partition_seal(th_P, TLOG_TRIG_MANUAL);
	st = seg_stat(0);
	ck_assert_int_eq(st.st_size, 180);
	ck_assert_int_le((long long)st.st_blocks * 512, 8192);
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 180);
	ck_assert(strncmp(data, "preallocated line\npreallocated", 30) == 0);
	free(data);
	/* A roll trims too, and the new segment is reserved again. */
	th_put(w, "next\n");
	th_set(th_S, th_P, "segment.bytes", "1K");
	for (i = 0; i < 300; i++)
		th_put(w, "fill\n");
	st = seg_stat(10);
	ck_assert_int_le((long long)st.st_blocks * 512, 8192);
	tlog_writer_close(w);
}
END_TEST

/*
 * With segment.preallocate=1 the ceiling counts the space reserved and
 * not yet written: the data files' blocks stay within retention.bytes
 * (plus a page of rounding per file), and the active segment reports its
 * reservation.
 */
START_TEST(ceiling_counts_preallocation)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	struct stat st;
	uint64_t disk, accounted;
	size_t n, i, j;

	th_open_tp(NULL);
	th_set(th_S, th_P, "retention.bytes", "4M");	/* rolls at 512K */
	th_set(th_S, th_P, "segment.preallocate", "1");
	w = tlog_writer_open(th_P);
	for (i = 0; i < 300; i++) {
		put_n(w, 20000);
		si = th_segs(th_P, &n);
		disk = accounted = 0;
		for (j = 0; j < n; j++) {
			st = seg_stat(si[j].base);
			disk += (uint64_t)st.st_blocks * 512;
			accounted += si[j].alloc;
			ck_assert_uint_ge(si[j].alloc, si[j].bytes);
		}
		ck_assert_msg(accounted <= 4 << 20, "write %zu: %llu bytes "
		    "taken over a 4 MiB ceiling", i,
		    (unsigned long long)accounted);
		ck_assert_msg(disk <= (4 << 20) + n * 4096, "write %zu: %llu "
		    "bytes on disk", i, (unsigned long long)disk);
		ck_assert(!si[n - 1].sealed);
		ck_assert_uint_eq(si[n - 1].alloc, 512 * 1024);
		free(si);
	}
	tlog_writer_close(w);
}
END_TEST

START_TEST(record_longer_than_segment_gets_its_own)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	size_t n;

	th_open_tp(NULL);
	/* retention.bytes 4K rolls at 512 bytes. */
	th_set(th_S, th_P, "retention.bytes", "4K");
	w = tlog_writer_open(th_P);
	put_n(w, 10);
	put_n(w, 1000);
	put_n(w, 10);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(si[0].bytes, 10);
	ck_assert_uint_eq(si[1].bytes, 1000);
	ck_assert_uint_eq(si[1].records, 1);
	ck_assert_uint_eq(si[2].bytes, 10);
	free(si);
	tlog_writer_close(w);
}
END_TEST

/*
 * A line longer than segment.bytes (within record.max.bytes) is one
 * record in a segment of its own, whether it comes in one write or is
 * completed piece by piece: never cut at the segment's size.
 */
START_TEST(line_longer_than_segment_bytes_is_one_record)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	struct tlog_segment *seg;
	char line[3072], *data;
	size_t n, len, i;
	uint64_t pos;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.bytes", "1K");
	memset(line, 'L', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	w = tlog_writer_open(th_P);
	for (i = 0; i < 5; i++)
		put_n(w, 100);
	ck_assert_int_eq(tlog_writer_write(w, line, sizeof(line)),
	    (ssize_t)sizeof(line));
	for (i = 0; i < 5; i++)
		put_n(w, 100);
	/* The same line again, in pieces held by the writer. */
	for (i = 0; i < sizeof(line); i += 512)
		ck_assert_int_eq(tlog_writer_write(w, line + i, 512), 512);
	put_n(w, 100);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 5);
	check_chain(si, n);
	ck_assert_uint_eq(si[0].records, 5);
	ck_assert_uint_eq(si[0].bytes, 500);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_SIZE);
	ck_assert_uint_eq(si[1].records, 1);
	ck_assert_uint_eq(si[1].bytes, sizeof(line));
	ck_assert_int_eq(si[1].sealed_by, TLOG_TRIG_SIZE);
	ck_assert_uint_eq(si[2].records, 5);
	ck_assert_uint_eq(si[2].bytes, 500);
	ck_assert_uint_eq(si[3].records, 1);
	ck_assert_uint_eq(si[3].bytes, sizeof(line));
	ck_assert_uint_eq(si[4].records, 1);
	ck_assert_uint_eq(si[4].bytes, 100);
	ck_assert(!si[4].sealed);
	free(si);
	/* Offsets count it once: the record after it is at offset 6. */
	ck_assert_uint_eq(tlog_partition_segments(th_P, &si, &n), 0);
	ck_assert_uint_eq(si[2].base, 6);
	free(si);
	seg = tlog_segment_get(th_P, 5);
	ck_assert_ptr_nonnull(seg);
	ck_assert_int_eq(tlog_seg_find_offset(seg, 6, &pos), 0);
	ck_assert_uint_eq(pos, sizeof(line));
	tlog_segment_put(seg);
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 500 + sizeof(line) + 500 + sizeof(line) + 100);
	ck_assert(memcmp(data + 500, line, sizeof(line)) == 0);
	ck_assert(memcmp(data + 1000 + sizeof(line), line, sizeof(line)) == 0);
	free(data);
	tlog_writer_close(w);
}
END_TEST

/*
 * With retention.bytes set the roll size is min(segment.bytes,
 * retention.bytes / 8); a record between the roll size and the ceiling
 * gets a segment of its own, whole, even when it is longer than
 * segment.bytes; one longer than the ceiling is refused.
 */
START_TEST(record_between_roll_size_and_ceiling)
{
	struct tlog_part_stats st;
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	char big[9000];
	size_t n;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.bytes", "2K");
	th_set(th_S, th_P, "retention.bytes", "8K");	/* rolls at 1K */
	w = tlog_writer_open(th_P);
	put_n(w, 100);
	put_n(w, 3000);
	put_n(w, 100);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(si[0].bytes, 100);
	ck_assert_uint_eq(si[1].records, 1);
	ck_assert_uint_eq(si[1].bytes, 3000);
	ck_assert_uint_eq(si[2].bytes, 100);
	check_chain(si, n);
	free(si);
	memset(big, 'b', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	ck_assert_int_eq(tlog_writer_write(w, big, sizeof(big)), -EFBIG);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 3);
	ck_assert_uint_eq(st.bytes, 3200);
	/* A record of exactly the ceiling fits: everything else goes. */
	ck_assert_int_eq(tlog_writer_write(w, big, 8192 - 1), 8191);
	ck_assert_int_eq(tlog_writer_write(w, "\n", 1), 1);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 4);
	ck_assert_uint_eq(st.bytes, 8192);
	ck_assert_uint_eq(st.segments, 1);
	tlog_writer_close(w);
}
END_TEST

START_TEST(capacity_trigger)
{
	struct tlog_store_opts o;
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	size_t n;
	int i;

	memset(&o, 0, sizeof(o));
	o.cap_records = 5;
	th_open_tp(&o);
	w = tlog_writer_open(th_P);
	for (i = 0; i < 12; i++)
		th_put(w, "cap\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(si[0].records, 5);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_CAPACITY);
	ck_assert_uint_eq(si[1].records, 5);
	ck_assert_uint_eq(si[2].records, 2);
	check_chain(si, n);
	free(si);
	tlog_writer_close(w);
}
END_TEST

START_TEST(manual_seal)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	size_t n;

	th_open_tp(NULL);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 0);
	free(si);
	w = tlog_writer_open(th_P);
	th_put(w, "one\n");
	tlog_partition_seal(th_P, TLOG_TRIG_MANUAL);
	th_put(w, "two\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_MANUAL);
	ck_assert(!si[1].sealed);
	ck_assert_uint_eq(si[1].base, 1);
	free(si);
	tlog_writer_close(w);
	/* The trigger survives a reopen (it is in the footer). */
	tlog_partition_put(th_P);
	tlog_store_close(th_S);
	th_S = th_open(th_dir);
	th_P = th_part(th_S, "t", "0");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert(si[0].sealed);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_MANUAL);
	free(si);
}
END_TEST

START_TEST(clock_going_backwards)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	struct tlog_part_stats st;
	int64_t t0;
	size_t n;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.ms", "1s");
	w = tlog_writer_open(th_P);
	t0 = th_clock;
	th_put(w, "a\n");
	th_clock = t0 - 3600000;	/* an hour back */
	th_put(w, "b\n");
	tlog_partition_stats(th_P, &st);
	ck_assert_int_eq(st.newest_ts, t0);	/* clamped, not earlier */
	th_clock = t0 + 500;		/* forward, but within the span */
	th_put(w, "c\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(si[0].max_ts, t0 + 500);
	free(si);
	th_clock = t0 + 1000;		/* forward past the span: rolls */
	th_put(w, "d\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_TIME);
	ck_assert_uint_eq(si[0].records, 3);
	ck_assert_int_le(si[0].max_ts, si[1].first_ts);
	free(si);
	tlog_writer_close(w);
}
END_TEST

START_TEST(idle_seal)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	int64_t t0;
	size_t n;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.ms", "1s");
	ck_assert_int_eq(tlog_part_due(th_P, TLOG_DUE_IDLE), -1);
	w = tlog_writer_open(th_P);
	t0 = th_clock;
	th_put(w, "a\n");
	ck_assert_int_eq(tlog_part_due(th_P, TLOG_DUE_IDLE), t0 + 1000);
	th_clock = t0 + 999;
	ck_assert_int_eq(tlog_part_seal_idle(th_P), 0);
	th_clock = t0 + 1000;
	ck_assert_int_eq(tlog_part_seal_idle(th_P), 1);
	ck_assert_int_eq(tlog_part_due(th_P, TLOG_DUE_IDLE), -1);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_IDLE);
	free(si);
	/* A partition still being written is not idle at the span: the
	 * next record rolls it on record time. */
	th_clock = t0 + 5000;
	th_put(w, "b\n");
	th_clock = t0 + 5999;
	th_put(w, "c\n");
	th_clock = t0 + 6000;
	ck_assert_int_eq(tlog_part_seal_idle(th_P), 0);
	ck_assert_int_eq(tlog_part_due(th_P, TLOG_DUE_IDLE), t0 + 6999);
	th_put(w, "d\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(si[1].sealed_by, TLOG_TRIG_TIME);
	free(si);
	/* Once writes stop, it seals min(segment.ms, 1 s) after the last. */
	th_clock = t0 + 6999;
	ck_assert_int_eq(tlog_part_seal_idle(th_P), 0);
	th_clock = t0 + 7000;
	ck_assert_int_eq(tlog_part_seal_idle(th_P), 1);
	tlog_writer_close(w);
}
END_TEST

START_TEST(jitter_within_bounds)
{
	struct tlog_writer *w;
	int64_t span, lo = INT64_MAX, hi = 0;
	int i;

	th_open_tp(NULL);
	th_set(th_S, th_P, "segment.ms", "10s");
	th_set(th_S, th_P, "segment.jitter.ms", "4s");
	w = tlog_writer_open(th_P);
	for (i = 0; i < 300; i++) {
		th_put(w, "j\n");
		span = tlog_part_due(th_P, TLOG_DUE_IDLE) - th_clock;
		ck_assert_int_ge(span, 6000);
		ck_assert_int_le(span, 10000);
		lo = span < lo ? span : lo;
		hi = span > hi ? span : hi;
		tlog_partition_seal(th_P, TLOG_TRIG_MANUAL);
		th_clock += 1;
	}
	/* Drawn per segment: 300 draws spread over the range. */
	ck_assert_int_lt(lo, 7000);
	ck_assert_int_gt(hi, 9000);
	tlog_writer_close(w);
}
END_TEST

static int n_seal, n_delete, n_size_rule;

static void
count_events(void *arg, const struct tlog_event *ev)
{
	(void)arg;
	if (ev->kind == TLOG_EV_SEAL)
		n_seal++;
	else {
		n_delete++;
		if (ev->rule == TLOG_RULE_SIZE)
			n_size_rule++;
		ck_assert_str_eq(ev->topic, "t");
		ck_assert_str_eq(ev->partition, "0");
	}
}

START_TEST(size_ceiling_never_exceeded)
{
	struct tlog_store_opts o;
	struct tlog_part_stats st;
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	char big[5000];
	size_t n, i;
	uint64_t most = 0;

	memset(&o, 0, sizeof(o));
	o.event = count_events;
	n_seal = n_delete = n_size_rule = 0;
	th_open_tp(&o);
	th_set(th_S, th_P, "retention.bytes", "4K");
	w = tlog_writer_open(th_P);
	for (i = 0; i < 2000; i++) {
		put_n(w, 1 + i % 97);
		tlog_partition_stats(th_P, &st);
		ck_assert_uint_le(st.bytes, 4096);
		if (st.bytes > most)
			most = st.bytes;
		if (i > 500)	/* once full: between 7/8 of the cap and it */
			ck_assert_uint_ge(st.bytes, 4096 - 512 - 512);
	}
	ck_assert_uint_gt(most, 4096 - 97);
	si = th_segs(th_P, &n);
	for (i = 0; i < n; i++)
		ck_assert_uint_le(si[i].bytes, 512);
	free(si);
	/* Detached in the append path; with no unlinker running, the
	 * appender unlinked them itself, all but at most a roll segment's
	 * worth (doc/reaper.md). */
	ck_assert_uint_le(th_P->pending_bytes, 512);
	ck_assert_int_gt(n_delete, 0);
	tlog_store_unlink_pending(th_S, 0);
	ck_assert_uint_eq(tlog_queue_unlinks(&th_S->q), 0);
	ck_assert_int_gt(n_delete, 0);
	ck_assert_int_eq(n_delete, n_size_rule);
	ck_assert_int_gt(n_seal, n_delete);
	{
		char path[512];
		snprintf(path, sizeof(path), "%s/t/0/%020d.log", th_dir, 0);
		ck_assert_int_ne(access(path, F_OK), 0);
	}
	/* A record larger than the ceiling is refused, and nothing moves. */
	tlog_partition_stats(th_P, &st);
	memset(big, 'b', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	ck_assert_int_eq(tlog_writer_write(w, big, sizeof(big)), -EFBIG);
	{
		struct tlog_part_stats st2;
		tlog_partition_stats(th_P, &st2);
		ck_assert_uint_eq(st2.bytes, st.bytes);
		ck_assert_uint_eq(st2.end_offset, st.end_offset);
	}
	tlog_writer_close(w);
}
END_TEST

/* Bytes of every file in the partition's backing directory. */
static uint64_t
bytes_on_disk(void)
{
	char path[512];
	struct dirent *de;
	struct stat sb;
	uint64_t total = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/t/0", th_dir);
	ck_assert_ptr_nonnull(d = opendir(path));
	while ((de = readdir(d)) != NULL)
		if (fstatat(dirfd(d), de->d_name, &sb, 0) == 0 &&
		    S_ISREG(sb.st_mode))
			total += (uint64_t)sb.st_size;
	closedir(d);
	return total;
}

/* A deletion is announced only once its files are gone, and with no
 * engine lock held. */
static void
check_delete(void *arg, const struct tlog_event *ev)
{
	char path[512];

	(void)arg;
	if (ev->kind != TLOG_EV_DELETE)
		return;
	__atomic_add_fetch(&n_delete, 1, __ATOMIC_RELAXED);
	if (ev->rule == TLOG_RULE_SIZE)
		__atomic_add_fetch(&n_size_rule, 1, __ATOMIC_RELAXED);
	snprintf(path, sizeof(path), "%s/t/0/%020" PRIu64 ".log", th_dir,
	    ev->base);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* Alone (no unlinker thread), the appender announces them: not
	 * under the partition's lock. (The store's close, after the
	 * fixture put th_P, drains what is left.) */
	if (arg == NULL && th_P != NULL) {
		ck_assert_int_eq(pthread_mutex_trylock(&th_P->sd.lock), 0);
		pthread_mutex_unlock(&th_P->sd.lock);
	}
}

static int unlinker_stop;	/* atomic: the test tells its unlinker to stop */

/* A slow unlinker: one segment at a time, with a pause before each. */
static void *
slow_unlinker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&unlinker_stop, __ATOMIC_ACQUIRE)) {
		tlog_store_unlink_wait(th_S, 10);
		usleep(20000);
		tlog_store_unlink_pending(th_S, 1);
	}
	return NULL;
}

/*
 * retention.bytes=64K, segment.bytes=8K: the partition's files (sealed,
 * active, and detached ones not yet unlinked) never exceed 64K plus two
 * segments, whether the unlinker is absent or slow.
 */
static void
ceiling_on_disk(bool with_unlinker)
{
	struct tlog_store_opts o;
	struct tlog_writer *w;
	pthread_t th;
	uint64_t most = 0, b;
	size_t i;

	memset(&o, 0, sizeof(o));
	o.event = check_delete;
	o.event_arg = with_unlinker ? &o : NULL;
	n_delete = n_size_rule = 0;
	th_open_tp(&o);
	th_set(th_S, th_P, "retention.bytes", "64K");
	th_set(th_S, th_P, "segment.bytes", "8K");
	__atomic_store_n(&unlinker_stop, 0, __ATOMIC_RELEASE);
	if (with_unlinker)
		ck_assert_int_eq(pthread_create(&th, NULL, slow_unlinker,
		    NULL), 0);
	w = tlog_writer_open(th_P);
	for (i = 0; i < 4000; i++) {
		put_n(w, 1 + i * 7 % 200);
		b = bytes_on_disk();
		if (b > most)
			most = b;
		ck_assert_msg(b <= 65536 + 2 * 8192, "append %zu: %" PRIu64
		    " bytes on disk, over 64K + 2 segments", i, b);
	}
	tlog_writer_close(w);
	if (with_unlinker) {
		__atomic_store_n(&unlinker_stop, 1, __ATOMIC_RELEASE);
		tlog_store_wakeup(th_S);
		pthread_join(th, NULL);
	}
	/* It was full, and it deleted (rule size) to stay under. */
	ck_assert_uint_gt(most, 65536 - 8192);
	ck_assert_int_gt(n_size_rule, 0);
	ck_assert_int_eq(n_size_rule, n_delete);
}

START_TEST(ceiling_on_disk_without_unlinker)
{
	ceiling_on_disk(false);
}
END_TEST

START_TEST(ceiling_on_disk_with_slow_unlinker)
{
	ceiling_on_disk(true);
}
END_TEST

START_TEST(time_rule_boundaries)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	struct tlog_part_stats st;
	int64_t t0;
	size_t n;

	th_open_tp(NULL);
	th_set(th_S, th_P, "retention.ms", "10s");
	th_set(th_S, th_P, "segment.ms", "1s");
	w = tlog_writer_open(th_P);
	t0 = th_clock;
	th_put(w, "old\n");		/* segment 0: max_ts t0 */
	th_clock = t0 + 5000;
	th_put(w, "young\n");		/* segment 1: max_ts t0+5000 */
	th_clock = t0 + 9000;
	th_put(w, "newer\n");		/* segment 2, active */
	tlog_partition_stats(th_P, &st);
	ck_assert_int_eq(st.next_expiry, t0 + 10001);
	th_clock = t0 + 10000;		/* exactly retention.ms: kept */
	ck_assert_int_eq(tlog_part_expire(th_P, 64, NULL), 0);
	th_clock = t0 + 10001;		/* one ms past: goes */
	ck_assert_int_eq(tlog_part_expire(th_P, 64, NULL), 1);
	/* The walk stops at the first young segment. */
	th_clock = t0 + 15000;
	ck_assert_int_eq(tlog_part_expire(th_P, 64, NULL), 0);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(si[0].base, 1);
	free(si);
	/* An active segment past the window is sealed, then deleted. */
	th_clock = t0 + 19001;
	ck_assert_int_eq(tlog_part_expire(th_P, 64, NULL), 2);
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 0);
	free(si);
	tlog_store_unlink_pending(th_S, 0);
	/* The end offset survives the partition emptying and a reopen. */
	tlog_writer_close(w);
	tlog_partition_put(th_P);
	tlog_store_close(th_S);
	th_S = th_open(th_dir);
	th_P = th_part(th_S, "t", "0");
	w = tlog_writer_open(th_P);
	th_put(w, "after\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(si[0].base, 3);
	free(si);
	tlog_writer_close(w);
}
END_TEST

START_TEST(manual_delete)
{
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	size_t n;

	th_open_tp(NULL);
	w = tlog_writer_open(th_P);
	th_put(w, "a\n");
	tlog_partition_seal(th_P, TLOG_TRIG_MANUAL);
	th_put(w, "b\n");
	ck_assert_int_eq(tlog_partition_delete(th_P, 0), 0);
	ck_assert_int_eq(tlog_partition_delete(th_P, 0), -ENOENT);
	/* rm of current: the active segment seals and goes. */
	ck_assert_int_eq(tlog_partition_delete(th_P, 1), 0);
	th_put(w, "c\n");
	si = th_segs(th_P, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(si[0].base, 2);	/* a gap is legal */
	free(si);
	tlog_writer_close(w);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("roll");

	TH_CASE(s, sparse_arrivals_time_roll);
	TH_CASE(s, crossing_record_lands_in_new_segment);
	TH_CASE(s, same_boundaries_one_write_or_many);
	TH_CASE(s, setting_changed_mid_stream);
	TH_CASE(s, preallocation_trimmed_at_seal);
	TH_CASE(s, ceiling_counts_preallocation);
	TH_CASE(s, record_longer_than_segment_gets_its_own);
	TH_CASE(s, line_longer_than_segment_bytes_is_one_record);
	TH_CASE(s, record_between_roll_size_and_ceiling);
	TH_CASE(s, capacity_trigger);
	TH_CASE(s, manual_seal);
	TH_CASE(s, clock_going_backwards);
	TH_CASE(s, idle_seal);
	TH_CASE(s, jitter_within_bounds);
	TH_CASE(s, size_ceiling_never_exceeded);
	TH_CASE(s, ceiling_on_disk_without_unlinker);
	TH_CASE(s, ceiling_on_disk_with_slow_unlinker);
	TH_CASE(s, time_rule_boundaries);
	TH_CASE(s, manual_delete);
	return th_run(s);
}
