/*
 * test_fdbudget.c - the open-file budget (segio.c): the descriptors of
 * segments stay within it while an eviction's sync holds its victims'
 * descriptors, and readers get only what the limit leaves after the
 * segments, the front end, the store's own files and the threads that
 * do disk work at once.
 */
#include "config.h"

#include <sys/resource.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testhelp.h"
#include "store.h"

/*
 * A store that keeps three segments' files open, and partitions a to e,
 * one writer each. At the first eviction whose sync is in flight (the
 * hook), the test writes to e as another thread would; what it sees is
 * recorded for the test to check afterwards.
 */
#define EV_MAX 3
enum { PA, PB, PC, PD, PE, NP };

struct ev_test {
	struct tlog_partition *p[NP];
	struct tlog_writer *w[NP];
	int base;		/* descriptors before any segment's */
	bool paused;		/* the hook acted (once) */
	int in_flight;		/* descriptors open during the sync */
	size_t taken;		/* the budget's taken then */
};

static void
ev_hook(void *arg, int point, struct tlog_partition *p)
{
	struct ev_test *t = arg;

	(void)p;
	if (point != TLOG_HOOK_EVICT || t->paused)
		return;
	t->paused = true;
	t->taken = th_S->fdb.taken;
	/* Another open while the victim's descriptors are still open. */
	th_put(t->w[PE], "e line\n");
	t->in_flight = th_count_fds() - t->base;
}

/*
 * An eviction syncs a dirty victim with its descriptors taken off the
 * budget's list; they stay counted until the sync closes them. So an
 * open meanwhile, which finds the budget spent, evicts others: the
 * segments' descriptors stay within 2 * max. When they were not
 * counted, that open evicted one segment too few: 2 * (max + 1).
 */
START_TEST(eviction_in_flight_keeps_its_descriptors_counted)
{
	static const char *names[NP] = { "a", "b", "c", "d", "e" };
	struct tlog_store_opts o;
	struct tlog_part_stats st;
	struct ev_test t;
	int i;

	memset(&t, 0, sizeof(t));
	memset(&o, 0, sizeof(o));
	o.max_open_segments = EV_MAX;
	o.hook = ev_hook;
	o.hook_arg = &t;
	th_open_tp(&o);
	for (i = 0; i < NP; i++) {
		t.p[i] = th_part(th_S, "t", names[i]);
		t.w[i] = tlog_writer_open(t.p[i]);
	}
	t.base = th_count_fds();
	/* a written and not synced: the eviction's victim, synced first;
	 * b and c synced: closed at once when evicted. */
	th_put(t.w[PA], "a line\n");
	th_put(t.w[PB], "b line\n");
	ck_assert_int_eq(tlog_writer_fsync(t.w[PB], false), 0);
	th_put(t.w[PC], "c line\n");
	ck_assert_int_eq(tlog_writer_fsync(t.w[PC], false), 0);
	ck_assert_int_eq(th_count_fds() - t.base, 2 * EV_MAX);
	ck_assert(!t.paused);
	th_put(t.w[PD], "d line\n");		/* over: a is evicted */
	ck_assert(t.paused);
	ck_assert_int_le(t.in_flight, 2 * EV_MAX);
	ck_assert_uint_eq(t.taken, 1);
	/* The sync is over: its descriptors are closed and uncounted. */
	ck_assert_uint_eq(th_S->fdb.taken, 0);
	ck_assert_int_le(th_count_fds() - t.base, 2 * EV_MAX);
	for (i = 0; i < NP; i++) {
		ck_assert_int_eq(tlog_writer_fsync(t.w[i], false), 0);
		tlog_writer_close(t.w[i]);
		tlog_partition_stats(t.p[i], &st);
		ck_assert_uint_eq(st.end_offset, 1);
		tlog_partition_put(t.p[i]);
	}
	ck_assert_uint_eq(th_S->fdb.taken, 0);
}
END_TEST

/* Opens readers of seg until refused (ENFILE), closes them; how many. */
static int
readers_fit(struct tlog_segment *seg)
{
	int fds[256], n = 0, fd, i;

	while (n < 256 && (fd = tlog_segment_open(seg)) >= 0)
		fds[n++] = fd;
	ck_assert_int_eq(fd, -ENFILE);
	for (i = 0; i < n; i++)
		tlog_segment_close(seg, fds[i]);
	return n;
}

/* A store opened under a limit of 200 descriptors with these options;
 * how many readers fit (of t/0's active segment). */
static int
readers_under_200(size_t reserve, size_t workers, bool reaper)
{
	struct tlog_store_opts o;
	struct tlog_writer *w;
	struct tlog_segment *seg;
	int n;

	memset(&o, 0, sizeof(o));
	o.fd_reserve = reserve;
	o.workers = workers;
	th_open_tp(&o);
	w = tlog_writer_open(th_P);
	th_put(w, "a record\n");
	tlog_writer_close(w);
	seg = tlog_segment_get_active(th_P);
	ck_assert_ptr_nonnull(seg);
	if (reaper)
		ck_assert_int_eq(tlog_reaper_start(th_S), 0);
	n = readers_fit(seg);
	if (reaper) {
		tlog_reaper_stop(th_S);
		/* Its share is the readers' again. */
		ck_assert_int_eq(readers_fit(seg), n + TLOG_FD_PER_THREAD);
	}
	tlog_segment_put(seg);
	th_close();
	return n;
}

/*
 * Readers may hold what the limit leaves after the segments' share (a
 * quarter of the limit, two descriptors each: 100 of 200), the front
 * end's reserve, the store's own 32 and four for each thread that may
 * do disk work at once: the front end's workers (at least the caller)
 * and the store's reaper while it runs.
 */
START_TEST(readers_share_leaves_each_thread_its_descriptors)
{
	struct rlimit rl, low;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = 200;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	ck_assert_int_eq(readers_under_200(0, 0, false),
	    200 - 100 - 32 - 4);
	ck_assert_int_eq(readers_under_200(3, 11, false),
	    200 - 100 - 3 - 32 - 4 * 11);
	ck_assert_int_eq(readers_under_200(3, 11, true),
	    200 - 100 - 3 - 32 - 4 * 12);
	/* More than the limit leaves: one reader still. */
	ck_assert_int_eq(readers_under_200(0, 40, false), 1);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("fdbudget");

	TH_CASE(s, eviction_in_flight_keeps_its_descriptors_counted);
	TH_CASE(s, readers_share_leaves_each_thread_its_descriptors);
	return th_run(s);
}
