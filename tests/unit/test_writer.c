/*
 * test_writer.c - line framing: the partial-line buffer per writer, its
 * flush on close and fsync and at record.max.bytes, and two writers that
 * never interleave inside a line.
 */
#include "config.h"

#include <sys/resource.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partition.h"
#include "testhelp.h"

/* The bytes of unfinished lines th_S's writers hold, all together. A
 * writer's held bytes all go at once (appended or cut), so where two
 * hold, the sum says which of them still does. */
static uint64_t
held(void)
{
	return __atomic_load_n(&th_P->ctx->held, __ATOMIC_RELAXED);
}

static char *
contents(void)
{
	size_t len;

	return th_partition_data(th_P, &len);
}

static void
suite_setup(void)
{
	th_open_tp(NULL);
}

START_TEST(partial_lines_are_held)
{
	struct tlog_writer *a, *b;
	struct tlog_part_stats st;
	char *d;

	a = tlog_writer_open(th_P);
	b = tlog_writer_open(th_P);
	th_put(a, "hel");
	th_put(b, "other ");
	th_put(a, "lo ");
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 0);	/* nothing complete yet */
	ck_assert_uint_eq(held(), 6 + 6);	/* a's "hel" "lo ", b's */
	th_put(b, "line\nand a tail");
	th_put(a, "world\nrest");
	d = contents();
	ck_assert_str_eq(d, "other line\nhello world\n");
	free(d);
	/* fsync appends the tail as a record without newline. */
	ck_assert_int_eq(tlog_writer_fsync(a, true), 0);
	ck_assert_uint_eq(held(), 10);	/* b's "and a tail" alone */
	/* close does too. */
	ck_assert_int_eq(tlog_writer_close(b), 0);
	d = contents();
	ck_assert_str_eq(d, "other line\nhello world\nrestand a tail");
	free(d);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 4);
	/* The next record starts cleanly after the unterminated ones. */
	th_put(a, "x\n");
	tlog_writer_close(a);
	{
		struct tlog_segment *seg = tlog_segment_get_active(th_P);
		uint64_t pos;
		ck_assert_int_eq(tlog_seg_find_offset(seg, 3, &pos), 0);
		ck_assert_uint_eq(pos, strlen("other line\nhello world\nrest"));
		ck_assert_int_eq(tlog_seg_find_offset(seg, 4, &pos), 0);
		ck_assert_uint_eq(pos, strlen("other line\nhello world\n"
		    "restand a tail"));
		tlog_segment_put(seg);
	}
}
END_TEST

START_TEST(record_max_bytes_cuts_records)
{
	struct tlog_writer *w;
	struct tlog_part_stats st;
	char *d;

	th_set(th_S, th_P, "record.max.bytes", "4");
	w = tlog_writer_open(th_P);
	th_put(w, "ab");
	th_put(w, "cdef");		/* held reaches 4: "abcd" is a record */
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 1);
	ck_assert_uint_eq(held(), 2);
	th_put(w, "\n0123456789\n");	/* "ef\n" "0123" "4567" "89\n" */
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 5);
	d = contents();
	ck_assert_str_eq(d, "abcdef\n0123456789\n");
	free(d);
	tlog_writer_close(w);
}
END_TEST

/* Puts n bytes of c through w, no newline. */
static void
put_n(struct tlog_writer *w, char c, size_t n)
{
	char *buf = malloc(n);

	ck_assert_ptr_nonnull(buf);
	memset(buf, c, n);
	ck_assert_int_eq(tlog_writer_write(w, buf, n), (ssize_t)n);
	free(buf);
}

/*
 * Writers with permission on a partition cannot fill the daemon's memory
 * with unfinished lines: past the store's limit on held bytes (here
 * 8192), a writer holding more than TLOG_HELD_SMALL (4096) has its line
 * cut at its next write, one line in the log says so; a line of up to
 * TLOG_HELD_SMALL is never cut for another writer's sake.
 */
START_TEST(held_bytes_have_a_store_wide_limit)
{
	struct tlog_store_opts o = { .held_max = 8192 };
	struct tlog_part_stats st;
	struct tlog_writer *a, *b;
	size_t len;
	char *d;

	th_close();
	th_open_tp(&o);
	a = tlog_writer_open(th_P);
	b = tlog_writer_open(th_P);
	put_n(a, 'a', 6000);		/* 6000: under the limit */
	put_n(b, 'b', 3000);		/* 9000: over, but b's line is small */
	ck_assert_uint_eq(held(), 6000 + 3000);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 0);
	put_n(a, 'a', 1);		/* a's 6001 is cut */
	ck_assert_uint_eq(held(), 3000);	/* b's alone */
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 1);
	ck_assert_uint_eq(st.bytes, 6001);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "t/0: writers hold more than "
	    "8192 bytes of unfinished lines in all: a held line of 6001 "
	    "bytes is cut here"));
	th_put(b, "\n");			/* b's line whole */
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 2);
	ck_assert_uint_eq(st.bytes, 6001 + 3001);
	put_n(a, 'a', 5000);		/* alone, under the limit: held */
	ck_assert_uint_eq(held(), 5000);
	put_n(b, 'b', 5000);		/* 10000: b's 5000 is cut */
	ck_assert_uint_eq(held(), 5000);
	d = th_partition_data(th_P, &len);	/* b's, not a's, went in */
	ck_assert_uint_eq(len, 6001 + 3001 + 5000);
	ck_assert_int_eq(d[len - 1], 'b');
	free(d);
	/* Said once a minute, not for every cut. */
	ck_assert_ptr_null(strstr(strstr(th_logbuf, "writers hold") + 1,
	    "writers hold"));
	tlog_writer_close(a);
	tlog_writer_close(b);
}
END_TEST

START_TEST(error_after_records_is_a_short_write)
{
	struct tlog_writer *w;
	struct tlog_part_stats st;
	char buf[8 + 3000];
	char *d;

	th_set(th_S, th_P, "retention.bytes", "2K");
	w = tlog_writer_open(th_P);
	memcpy(buf, "ok1\nok2\n", 8);
	memset(buf + 8, 'z', sizeof(buf) - 8);
	buf[sizeof(buf) - 1] = '\n';
	/* Two whole records go in; the write reports just their bytes, so a
	 * retry of the rest cannot duplicate them. */
	ck_assert_int_eq(tlog_writer_write(w, buf, sizeof(buf)), 8);
	ck_assert_int_eq(tlog_writer_write(w, buf + 8, sizeof(buf) - 8),
	    -EFBIG);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 2);
	d = contents();
	ck_assert_str_eq(d, "ok1\nok2\n");
	free(d);
	/* A held prefix is part of the record that fails: refused too. */
	th_put(w, "part");
	ck_assert_int_eq(tlog_writer_write(w, buf + 8, sizeof(buf) - 8),
	    -EFBIG);
	ck_assert_uint_eq(held(), 0);
	th_put(w, "whole\n");
	d = contents();
	ck_assert_str_eq(d, "ok1\nok2\nwhole\n");
	free(d);
	tlog_writer_close(w);
}
END_TEST

/* A line of n bytes, without newline, held by w. */
static void
hold_n(struct tlog_writer *w, size_t n)
{
	char *b = malloc(n);

	memset(b, 'h', n);
	ck_assert_int_eq(tlog_writer_write(w, b, n), (ssize_t)n);
	free(b);
	ck_assert_uint_eq(held(), n);
}

static int
count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)) != NULL; hay++)
		n++;
	return n;
}

/*
 * The write that completes a held line too big for the ceiling fails
 * once with EFBIG; the held bytes go with it, one log line names the
 * partition and the size, and the same writer goes on working.
 */
START_TEST(refused_held_line_is_dropped)
{
	struct tlog_writer *w;
	char *d;

	th_set(th_S, th_P, "retention.bytes", "2K");
	w = tlog_writer_open(th_P);
	hold_n(w, 2500);
	th_logbuf[0] = '\0';
	ck_assert_int_eq(tlog_writer_write(w, "\n", 1), -EFBIG);
	ck_assert_uint_eq(held(), 0);
	ck_assert_int_eq(count(th_logbuf, "t/0: a record of 2501 bytes is "
	    "refused"), 1);
	ck_assert_msg(strstr(th_logbuf, "retention.bytes (2048)") != NULL,
	    "%s", th_logbuf);
	th_put(w, "next\n");
	ck_assert_int_eq(tlog_writer_fsync(w, false), 0);
	th_put(w, "tail");
	ck_assert_int_eq(tlog_writer_close(w), 0);
	d = contents();
	ck_assert_str_eq(d, "next\ntail");
	free(d);
}
END_TEST

/* The same when the held bytes fail at fsync or at close. */
START_TEST(refused_at_fsync_or_close_is_dropped)
{
	struct tlog_writer *w;
	char *d;

	th_set(th_S, th_P, "retention.bytes", "2K");
	w = tlog_writer_open(th_P);
	hold_n(w, 2100);
	th_logbuf[0] = '\0';
	ck_assert_int_eq(tlog_writer_fsync(w, true), -EFBIG);
	ck_assert_uint_eq(held(), 0);
	ck_assert_int_eq(count(th_logbuf, "a record of 2100 bytes is "
	    "refused"), 1);
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	ck_assert_int_eq(tlog_writer_flush(w), 0);
	th_put(w, "after fsync\n");
	hold_n(w, 2049);
	ck_assert_int_eq(tlog_writer_flush(w), -EFBIG);
	ck_assert_int_eq(tlog_writer_flush(w), 0);
	th_put(w, "after flush\n");
	hold_n(w, 3000);
	ck_assert_int_eq(tlog_writer_close(w), -EFBIG);
	d = contents();
	ck_assert_str_eq(d, "after fsync\nafter flush\n");
	free(d);
	/* Nothing of it is left for the partition either. */
	w = tlog_writer_open(th_P);
	th_put(w, "new writer\n");
	ck_assert_int_eq(tlog_writer_close(w), 0);
	d = contents();
	ck_assert_str_eq(d, "after fsync\nafter flush\nnew writer\n");
	free(d);
}
END_TEST

/* A held line cut at record.max.bytes that cannot be stored: the cut
 * record is refused, the next one starts clean. */
START_TEST(refused_cut_is_dropped)
{
	struct tlog_writer *w;
	char more[2000];
	char *d;

	th_set(th_S, th_P, "retention.bytes", "2K");
	th_set(th_S, th_P, "record.max.bytes", "4K");
	w = tlog_writer_open(th_P);
	hold_n(w, 3000);
	memset(more, 'm', sizeof(more));
	/* held reaches 4096: the cut record is too big for the ceiling */
	ck_assert_int_eq(tlog_writer_write(w, more, sizeof(more)), -EFBIG);
	ck_assert_uint_eq(held(), 0);
	ck_assert_msg(strstr(th_logbuf, "a record of 4096 bytes") != NULL,
	    "%s", th_logbuf);
	th_put(w, "clean\n");
	ck_assert_int_eq(tlog_writer_close(w), 0);
	d = contents();
	ck_assert_str_eq(d, "clean\n");
	free(d);
}
END_TEST

/*
 * A write the backing store refuses (here the file size limit, as a
 * full disk would): the held record is dropped and logged, no partial
 * record stays, and the writer works once the store takes data again.
 */
START_TEST(failed_store_write_is_dropped)
{
	struct tlog_writer *w;
	struct rlimit rl, old;
	char *d;

	signal(SIGXFSZ, SIG_IGN);
	w = tlog_writer_open(th_P);
	th_put(w, "first\n");
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	rl = old;
	rl.rlim_cur = 4096;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	hold_n(w, 5000);
	th_logbuf[0] = '\0';
	ck_assert_int_lt(tlog_writer_write(w, "\n", 1), 0);
	ck_assert_uint_eq(held(), 0);
	ck_assert_int_eq(count(th_logbuf, "t/0: a record of 5001 bytes is "
	    "refused"), 1);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	th_put(w, "second\n");
	ck_assert_int_eq(tlog_writer_close(w), 0);
	d = contents();
	ck_assert_str_eq(d, "first\nsecond\n");
	free(d);
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

	th_set(th_S, th_P, "segment.bytes", "64K");
	for (i = 0; i < 4; i++) {
		a[i].p = th_P;
		a[i].id = i;
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_thread,
		    &a[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
	d = th_partition_data(th_P, &len);
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
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("writer");

	th_hooks(suite_setup, NULL);
	TH_CASE(s, partial_lines_are_held);
	TH_CASE(s, record_max_bytes_cuts_records);
	TH_CASE(s, held_bytes_have_a_store_wide_limit);
	TH_CASE(s, error_after_records_is_a_short_write);
	TH_CASE(s, refused_held_line_is_dropped);
	TH_CASE(s, refused_at_fsync_or_close_is_dropped);
	TH_CASE(s, refused_cut_is_dropped);
	TH_CASE(s, failed_store_write_is_dropped);
	TH_CASE(s, concurrent_writers_never_interleave);
	return th_run(s);
}
