/*
 * test_cleanup.c - partition.cleanup.ms on the injected clock: an empty
 * partition goes exactly cleanup.ms after its last write, with its
 * directory and a partition_deleted event; a record, detached files not
 * yet unlinked, an open writer and a cursor each keep it, without the
 * reaper visiting it again until the veto goes (counted, not timed); the
 * topic stays; an append racing the removal (forced with the test hook)
 * either keeps the partition or fails with ENOENT, never lost.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "reaper.h"
#include "store.h"

static void
suite_setup(void)
{
	th_S = th_open(th_dir);
}

static void
put(struct tlog_partition *p, const char *s)
{
	struct tlog_writer *w = tlog_writer_open(p);

	th_put(w, s);
	tlog_writer_close(w);
}

/* Writes one record, then deletes it (rm) and unlinks its files. */
static void
write_and_rm(struct tlog_partition *p)
{
	put(p, "gone soon\n");
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(th_S, 0), 1);
	ck_assert_uint_eq(th_nsegs(p), 0);
}

/* Topic t, with partition.cleanup.ms set to ms on it for its
 * partitions to inherit. */
static struct tlog_topic *
cleanup_topic(const char *ms)
{
	struct tlog_topic *t;
	char err[256];

	ck_assert_int_eq(tlog_topic_create(th_S, "t", &t), 0);
	ck_assert_int_eq(tlog_conf_set(th_S, t, NULL, "partition.cleanup.ms",
	    ms, strlen(ms), err, sizeof(err)), 0);
	return t;
}

static int
count_substr(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

static int
events_count(const char *needle)
{
	struct tlog_partition *ev = tlog_store_events(th_S);
	size_t len;
	char *d = th_partition_data(ev, &len);
	int n = count_substr(d, needle);

	free(d);
	tlog_partition_put(ev);
	return n;
}

static bool
gone(const char *topic, const char *name)
{
	struct tlog_topic *t = tlog_topic_get(th_S, topic);
	struct tlog_partition *p;

	ck_assert_ptr_nonnull(t);	/* the topic always stays */
	p = tlog_partition_get(t, name);
	tlog_partition_put(p);
	tlog_topic_put(t);
	return p == NULL;
}

START_TEST(removed_after_exactly_cleanup_ms)
{
	struct tlog_partition *p = th_part(th_S, "t", "0"), *q;
	struct tlog_topic *t;
	struct tlog_reap_stats st;
	struct tlog_writer *w;
	int64_t t0 = th_clock;

	th_set(th_S, p, "partition.cleanup.ms", "10s");
	th_clock = t0 + 500;
	write_and_rm(p);			/* last write at t0 + 500 */
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 500 + 10001);
	th_clock = t0 + 500 + 10000;	/* exactly cleanup.ms: kept */
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.cleaned, 0);
	ck_assert(!gone("t", "0"));
	th_clock++;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 1);
	ck_assert_uint_eq(st.cleaned, 1);
	ck_assert(gone("t", "0"));
	ck_assert(!th_exists("t/0"));
	ck_assert(th_exists("t"));
	ck_assert_uint_eq(tlog_reaper_scheduled(th_S), 1); /* events' own */
	ck_assert_int_eq(events_count("{\"ts\":1700000010501,"
	    "\"event\":\"partition_deleted\",\"topic\":\"t\","
	    "\"partition\":\"0\",\"last_write_ts\":1700000000500,"
	    "\"rule\":\"cleanup\"}\n"), 1);
	ck_assert_int_eq(count_substr(th_logbuf, "removed partition t/0"), 1);
	/* A writer still holding the removed partition fails loudly. */
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "late\n", 5), -ENOENT);
	tlog_writer_close(w);
	/* mkdir of the same name makes a fresh partition. */
	t = tlog_topic_get(th_S, "t");
	ck_assert_int_eq(tlog_partition_create(t, "0", &q), 0);
	ck_assert_ptr_ne(q, p);
	ck_assert_uint_ne(tlog_partition_ino(q), tlog_partition_ino(p));
	put(q, "fresh\n");
	ck_assert_uint_eq(th_nsegs(q), 1);
	ck_assert(th_exists("t/0"));
	tlog_partition_put(q);
	tlog_topic_put(t);
	tlog_partition_put(p);
}
END_TEST

/* Never written: from its creation, inherited from the topic. */
START_TEST(never_written_goes_from_creation)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_reap_stats st;
	int64_t t0 = th_clock;

	t = cleanup_topic("1s");
	p = th_part(th_S, "t", "idle");	/* born at t0, scheduled */
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 1001);
	th_clock = t0 + 1000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert(!gone("t", "idle"));
	th_clock = t0 + 1001;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.cleaned, 1);
	ck_assert(gone("t", "idle"));
	ck_assert(th_exists("t"));
	tlog_partition_put(p);
	tlog_topic_put(t);
}
END_TEST

/* A partition loaded at open counts as born when engine time is
 * anchored to the newest stamp, never at the (earlier) wall clock read
 * while loading: a wall clock behind the stamps removes nothing early. */
START_TEST(loaded_partition_born_at_anchored_time)
{
	struct tlog_partition *a, *b;
	struct tlog_topic *t;
	struct tlog_reap_stats st;
	int64_t t0 = th_clock;

	t = cleanup_topic("1h");
	tlog_topic_put(t);
	th_clock = t0 + 10 * 3600000LL;
	a = th_part(th_S, "t", "a");
	put(a, "stamped ten hours on\n");
	b = th_part(th_S, "t", "b");	/* empty */
	tlog_partition_put(a);
	tlog_partition_put(b);
	th_close();
	th_clock = t0;			/* the wall clock went back */
	th_S = th_open(th_dir);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.cleaned, 0);
	ck_assert(!gone("t", "b"));
	ck_assert_int_ge(tlog_reaper_next_due(th_S), t0 + 11 * 3600000LL);
}
END_TEST

/* A stray file keeps a partition from cleanup: named once, with its
 * topic, not at every attempt. */
START_TEST(stray_named_once)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_reap_stats st;
	char path[1024];
	int64_t t0 = th_clock;
	int i, fd;

	t = cleanup_topic("1s");
	tlog_topic_put(t);
	p = th_part(th_S, "t", "0");
	snprintf(path, sizeof(path), "%s/t/0/stray", th_dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	th_logbuf[0] = '\0';
	for (i = 1; i <= 4; i++) {
		th_clock = t0 + i * 1001;
		tlog_reaper_cycle(th_S, &st);
		ck_assert_uint_eq(st.cleaned, 0);
	}
	ck_assert(!gone("t", "0"));
	ck_assert_int_eq(count_substr(th_logbuf, "cannot remove t/0: it holds "
	    "stray"), 1);
	tlog_partition_put(p);
}
END_TEST

/* Off by default; the events partition is never removed. */
START_TEST(off_by_default)
{
	struct tlog_partition *p = th_part(th_S, "t", "0");
	struct tlog_reap_stats st;
	char err[256];

	write_and_rm(p);
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, NULL,
	    "partition.cleanup.ms", "1s", 2, err, sizeof(err)), 0);
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, p,
	    "partition.cleanup.ms", "-1", 2, err, sizeof(err)), 0);
	th_clock += 86400000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert(!gone("t", "0"));
	ck_assert(th_exists(".tlogfs/events"));
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, p,
	    "partition.cleanup.ms", "999", 3, err, sizeof(err)), -EINVAL);
	tlog_partition_put(p);
}
END_TEST

/*
 * Each veto keeps the partition, and a vetoed partition is not visited
 * again (no loop) until its veto goes, whatever the clock does.
 */
START_TEST(vetoes_keep_it_without_visits)
{
	struct tlog_partition *rec, *held, *wr, *cur;
	struct tlog_reap_stats st;
	struct tlog_writer *w;
	int64_t t0 = th_clock;
	char err[256];
	int i;

	ck_assert_int_eq(tlog_conf_set(th_S, NULL, NULL,
	    "partition.cleanup.ms", "1s", 2, err, sizeof(err)), 0);
	rec = th_part(th_S, "t", "records");
	put(rec, "kept\n");
	th_set(th_S, rec, "retention.ms", "-1");
	held = th_part(th_S, "t", "held");
	put(held, "detached, not unlinked\n");
	ck_assert_int_eq(tlog_partition_delete(held, 0), 0);
	/* Scheduled first, vetoed after: visited once, then dropped. */
	wr = th_part(th_S, "t", "writer");
	tlog_part_resched(wr);
	w = tlog_writer_open(wr);
	cur = th_part(th_S, "t", "cursor");
	tlog_part_resched(cur);
	cur->ncursors = 1;
	for (i = 1; i <= 5; i++) {
		th_clock = t0 + (int64_t)i * 86400000;
		tlog_reaper_cycle(th_S, &st);
		ck_assert_uint_eq(st.cleaned, 0);
		ck_assert_uint_eq(st.visited, i == 1 ? 2 : 0);
	}
	ck_assert(!gone("t", "records"));
	ck_assert(!gone("t", "held"));
	ck_assert(!gone("t", "writer"));
	ck_assert(!gone("t", "cursor"));
	/* The vetoes go: each is due again and goes. */
	ck_assert_int_eq(tlog_store_unlink_pending(th_S, 0), 1);
	tlog_writer_close(w);
	cur->ncursors = 0;
	tlog_part_resched(cur);	/* what dropping a cursor must do */
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 3);
	ck_assert_uint_eq(st.cleaned, 3);
	ck_assert(gone("t", "held"));
	ck_assert(gone("t", "writer"));
	ck_assert(gone("t", "cursor"));
	ck_assert(!gone("t", "records"));
	ck_assert_int_eq(events_count("\"event\":\"partition_deleted\""), 3);
	tlog_partition_put(rec);
	tlog_partition_put(held);
	tlog_partition_put(wr);
	tlog_partition_put(cur);
}
END_TEST

/* 10,000 empty partitions held by a cursor or a writer cost no visit. */
START_TEST(vetoed_partitions_cost_nothing)
{
	struct tlog_partition *p;
	struct tlog_writer *w[5000];
	struct tlog_topic *t;
	struct tlog_reap_stats st;
	char name[32], err[256];
	int i;

	ck_assert_int_eq(tlog_topic_create(th_S, "t", &t), 0);
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, NULL,
	    "partition.cleanup.ms", "1s", 2, err, sizeof(err)), 0);
	/* In memory only: what is counted is the heap's visits. */
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		p = tlog_part_alloc(&t->lv, name, t->reg->penv);
		ck_assert_ptr_nonnull(p);
		tlog_part_resched(p);	/* due at born + 1001 */
		if (i % 2)
			p->ncursors = 1;
		else
			w[i / 2] = tlog_writer_open(p);
		tlog_partition_put(p);
	}
	ck_assert_uint_eq(tlog_reaper_scheduled(th_S), 10000);
	/* One visit each finds the veto; then none, whatever the clock. */
	th_clock += 1001;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 10000);
	ck_assert_uint_eq(st.cleaned, 0);
	ck_assert_uint_eq(tlog_reaper_scheduled(th_S), 0);
	for (i = 0; i < 10; i++) {
		th_clock += 3600000;
		tlog_reaper_cycle(th_S, &st);
		ck_assert_uint_eq(st.visited, 0);
	}
	for (i = 0; i < 5000; i++)
		tlog_writer_close(w[i]);
	tlog_topic_put(t);
}
END_TEST

/* An empty active segment is no data: its files go with the directory. */
static struct tlog_partition *
with_empty_active(void)
{
	/* Dated before the test's clock, which it would move on. */
	struct timespec ts[2] = { { TH_T0 / 1000 - 10, 0 },
	    { TH_T0 / 1000 - 10, 0 } };
	char path[1024];
	struct tlog_partition *p;
	int fd;

	th_P = th_part(th_S, "t", "0");
	th_close();
	snprintf(path, sizeof(path), "%s/t/0/00000000000000000000.log",
	    th_dir);
	ck_assert_int_ge(fd = open(path, O_CREAT | O_WRONLY, 0644), 0);
	ck_assert_int_eq(futimens(fd, ts), 0);
	close(fd);
	th_S = th_open(th_dir);
	p = th_part(th_S, "t", "0");
	ck_assert_uint_eq(th_nsegs(p), 1);
	th_set(th_S, p, "partition.cleanup.ms", "1s");
	return p;
}

START_TEST(empty_active_segment_goes_with_the_directory)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;

	p = with_empty_active();
	th_clock += 1001;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.cleaned, 1);
	ck_assert(!th_exists("t/0"));
	tlog_partition_put(p);
}
END_TEST

/*
 * The race: the hook runs after the eligibility check, before the
 * removal, and appends there as a concurrent writer would (into the
 * empty active segment: no new segment, no directory lookup). The
 * append wins: the partition and its record stay.
 */
static int race_what;

static void
race_hook(void *arg, int point, struct tlog_partition *p)
{
	struct tlog_writer **wp = arg;

	if (point != TLOG_HOOK_CLEANUP || race_what == 0)
		return;
	if (race_what == 1)
		put(p, "won the race\n");
	else
		*wp = tlog_writer_open(p);
	race_what = 0;
}

static struct tlog_partition *
race_open(struct tlog_writer **wp, int what)
{
	struct tlog_store_opts o;
	struct tlog_partition *p;

	memset(&o, 0, sizeof(o));
	o.hook = race_hook;
	o.hook_arg = wp;
	p = with_empty_active();
	tlog_partition_put(p);
	th_close();
	th_S = th_open_opts(th_dir, &o);
	p = th_part(th_S, "t", "0");
	race_what = what;
	th_clock += 1001;
	return p;
}

START_TEST(append_racing_cleanup_wins)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	struct tlog_writer *w = NULL;
	size_t len;
	char *d;

	p = race_open(&w, 1);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_int_eq(race_what, 0);		/* the hook ran */
	ck_assert_uint_eq(st.cleaned, 0);
	ck_assert(!gone("t", "0"));
	d = th_partition_data(p, &len);
	ck_assert_str_eq(d, "won the race\n");
	free(d);
	tlog_partition_put(p);
}
END_TEST

START_TEST(writer_opened_racing_cleanup_keeps_it)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	struct tlog_writer *w = NULL;
	size_t len;
	char *d;

	p = race_open(&w, 2);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(st.cleaned, 0);
	th_put(w, "written after all\n");
	tlog_writer_close(w);
	d = th_partition_data(p, &len);
	ck_assert_str_eq(d, "written after all\n");
	free(d);
	tlog_partition_put(p);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cleanup");

	th_hooks(suite_setup, NULL);
	TH_CASE(s, removed_after_exactly_cleanup_ms);
	TH_CASE(s, never_written_goes_from_creation);
	TH_CASE(s, loaded_partition_born_at_anchored_time);
	TH_CASE(s, stray_named_once);
	TH_CASE(s, off_by_default);
	TH_CASE(s, vetoes_keep_it_without_visits);
	TH_CASE(s, vetoed_partitions_cost_nothing);
	TH_CASE(s, empty_active_segment_goes_with_the_directory);
	TH_CASE(s, append_racing_cleanup_wins);
	TH_CASE(s, writer_opened_racing_cleanup_keeps_it);
	return th_run(s);
}
