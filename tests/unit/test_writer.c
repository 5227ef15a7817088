/*
 * test_writer.c - line framing: the partial-line buffer per writer, its
 * flush on close and fsync and at record.max.bytes, and two writers that
 * never interleave inside a line.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testhelp.h"

static char *dir;
static struct tlog_store *S;
static struct tlog_partition *P;

static void
setup(void)
{
	dir = th_tmpdir();
	S = th_open(dir);
	P = th_part(S, "t", "0");
}

static void
teardown(void)
{
	tlog_partition_put(P);
	tlog_store_close(S);
	th_rmrf(dir);
	free(dir);
}

static char *
contents(void)
{
	size_t len;

	return th_partition_data(P, &len);
}

START_TEST(partial_lines_are_held)
{
	struct tlog_writer *a, *b;
	struct tlog_part_stats st;
	char *d;

	setup();
	a = tlog_writer_open(P);
	b = tlog_writer_open(P);
	th_put(a, "hel");
	th_put(b, "other ");
	th_put(a, "lo ");
	tlog_partition_stats(P, &st);
	ck_assert_uint_eq(st.end_offset, 0);	/* nothing complete yet */
	ck_assert_uint_eq(tlog_writer_held(a), 6);
	th_put(b, "line\nand a tail");
	th_put(a, "world\nrest");
	d = contents();
	ck_assert_str_eq(d, "other line\nhello world\n");
	free(d);
	/* fsync appends the tail as a record without newline. */
	ck_assert_int_eq(tlog_writer_fsync(a, true), 0);
	ck_assert_uint_eq(tlog_writer_held(a), 0);
	/* close does too. */
	ck_assert_int_eq(tlog_writer_close(b), 0);
	d = contents();
	ck_assert_str_eq(d, "other line\nhello world\nrestand a tail");
	free(d);
	tlog_partition_stats(P, &st);
	ck_assert_uint_eq(st.end_offset, 4);
	/* The next record starts cleanly after the unterminated ones. */
	th_put(a, "x\n");
	tlog_writer_close(a);
	{
		struct tlog_segment *seg = tlog_segment_get_active(P);
		uint64_t pos;
		ck_assert_int_eq(tlog_segment_find_offset(seg, 3, &pos), 0);
		ck_assert_uint_eq(pos, strlen("other line\nhello world\nrest"));
		ck_assert_int_eq(tlog_segment_find_offset(seg, 4, &pos), 0);
		ck_assert_uint_eq(pos, strlen("other line\nhello world\n"
		    "restand a tail"));
		tlog_segment_put(seg);
	}
	teardown();
}
END_TEST

START_TEST(record_max_bytes_cuts_records)
{
	struct tlog_writer *w;
	struct tlog_part_stats st;
	char *d;

	setup();
	th_set(S, P, "record.max.bytes", "4");
	w = tlog_writer_open(P);
	th_put(w, "ab");
	th_put(w, "cdef");		/* held reaches 4: "abcd" is a record */
	tlog_partition_stats(P, &st);
	ck_assert_uint_eq(st.end_offset, 1);
	ck_assert_uint_eq(tlog_writer_held(w), 2);
	th_put(w, "\n0123456789\n");	/* "ef\n" "0123" "4567" "89\n" */
	tlog_partition_stats(P, &st);
	ck_assert_uint_eq(st.end_offset, 5);
	d = contents();
	ck_assert_str_eq(d, "abcdef\n0123456789\n");
	free(d);
	tlog_writer_close(w);
	teardown();
}
END_TEST

START_TEST(error_after_records_is_a_short_write)
{
	struct tlog_writer *w;
	struct tlog_part_stats st;
	char buf[8 + 3000];
	char *d;

	setup();
	th_set(S, P, "retention.bytes", "2K");
	w = tlog_writer_open(P);
	memcpy(buf, "ok1\nok2\n", 8);
	memset(buf + 8, 'z', sizeof(buf) - 8);
	buf[sizeof(buf) - 1] = '\n';
	/* Two whole records go in; the write reports just their bytes, so a
	 * retry of the rest cannot duplicate them. */
	ck_assert_int_eq(tlog_writer_write(w, buf, sizeof(buf)), 8);
	ck_assert_int_eq(tlog_writer_write(w, buf + 8, sizeof(buf) - 8),
	    -EFBIG);
	tlog_partition_stats(P, &st);
	ck_assert_uint_eq(st.end_offset, 2);
	d = contents();
	ck_assert_str_eq(d, "ok1\nok2\n");
	free(d);
	/* A held prefix that cannot complete leaves no trace. */
	th_put(w, "part");
	ck_assert_int_eq(tlog_writer_write(w, buf + 8, sizeof(buf) - 8),
	    -EFBIG);
	ck_assert_uint_eq(tlog_writer_held(w), 4);
	th_put(w, "ial\n");
	d = contents();
	ck_assert_str_eq(d, "ok1\nok2\npartial\n");
	free(d);
	tlog_writer_close(w);
	teardown();
}
END_TEST

struct wargs {
	struct tlog_partition *p;
	int id;
};

#define NLINES 20000

static void *
writer_thread(void *arg)
{
	struct wargs *a = arg;
	struct tlog_writer *w = tlog_writer_open(a->p);
	char line[64];
	int i, n, cut;

	for (i = 0; i < NLINES; i++) {
		n = snprintf(line, sizeof(line), "writer %d line %06d end\n",
		    a->id, i);
		cut = 1 + i % (n - 1);
		/* Each line in two writes: a partial, then the rest. */
		if (tlog_writer_write(w, line, (size_t)cut) != cut ||
		    tlog_writer_write(w, line + cut, (size_t)(n - cut)) !=
		    n - cut)
			return (void *)1;
	}
	tlog_writer_close(w);
	return NULL;
}

START_TEST(concurrent_writers_never_interleave)
{
	pthread_t th[4];
	struct wargs a[4];
	int next[4] = { 0 }, id, seq, i;
	size_t len;
	char *d, *line, *save;
	void *ret;

	setup();
	th_set(S, P, "segment.bytes", "64K");
	for (i = 0; i < 4; i++) {
		a[i].p = P;
		a[i].id = i;
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_thread,
		    &a[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
	d = th_partition_data(P, &len);
	for (line = strtok_r(d, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char tail[8];
		ck_assert_msg(sscanf(line, "writer %d line %d %3s", &id, &seq,
		    tail) == 3 && strcmp(tail, "end") == 0,
		    "torn line: %s", line);
		ck_assert_int_eq(seq, next[id]);
		next[id]++;
	}
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(next[i], NLINES);
	free(d);
	teardown();
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("writer");

	TH_CASE(s, partial_lines_are_held);
	TH_CASE(s, record_max_bytes_cuts_records);
	TH_CASE(s, error_after_records_is_a_short_write);
	TH_CASE(s, concurrent_writers_never_interleave);
	return th_run(s);
}
