/*
 * test_reaper.c - the reaper's schedule on the injected clock: wake-ups
 * that touch only due partitions (counted, not timed), bounded steps,
 * rescheduling on config changes, idle partitions emptying, catch-up after
 * downtime, the events partition and the metrics text.
 */
#include "config.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testhelp.h"
#include "reaper.h"
#include "retention.h"
#include "store.h"


static void
put(struct tlog_partition *p, const char *s)
{
	struct tlog_writer *w = tlog_writer_open(p);

	ck_assert_int_eq(tlog_writer_write(w, s, strlen(s)),
	    (ssize_t)strlen(s));
	tlog_writer_close(w);
}

static void
suite_setup(void)
{
	th_S = th_open(th_dir);
}

START_TEST(wakeup_visits_only_due_partitions)
{
	struct tlog_partition *real[10], *idle;
	struct tlog_topic *t;
	struct tlog_reap_stats st;
	char name[32];
	int64_t t0 = th_clock;
	int i;

	t = tlog_topic_get(th_S, "t");
	if (t == NULL)
		ck_assert_int_eq(tlog_topic_create(th_S, "t", &t), 0);
	/* 99,990 partitions scheduled far in the future (in memory only:
	 * what is measured is the heap, not the file system). */
	for (i = 0; i < 99990; i++) {
		snprintf(name, sizeof(name), "idle%d", i);
		idle = tlog_part_alloc(&t->lv, name, t->reg->penv);
		ck_assert_ptr_nonnull(idle);
		tlog_part_sched_earlier(idle, t0 + 86400000LL + i);
		tlog_partition_put(idle);
	}
	/* 10 real ones whose data expires after one second. */
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		real[i] = th_part(th_S, "t", name);
		th_set(th_S, real[i], "retention.ms", "1s");
		put(real[i], "expiring\n");
	}
	ck_assert_uint_eq(tlog_reaper_scheduled(th_S), 100000);
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 1001);
	th_clock = t0 + 1000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 0);
	th_clock = t0 + 1001;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 10);
	ck_assert_uint_eq(st.expired, 10);
	ck_assert_uint_eq(st.bytes, 90);
	for (i = 0; i < 10; i++) {
		ck_assert_uint_eq(th_nsegs(real[i]), 0);
		tlog_partition_put(real[i]);
	}
	/* Emptied partitions leave the heap; the idle ones stay, with the
	 * events partition (it recorded the seals). */
	ck_assert_uint_eq(tlog_reaper_scheduled(th_S), 99991);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 0);
	tlog_topic_put(t);
}
END_TEST

START_TEST(idle_partition_empties_on_schedule)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	int64_t t0 = th_clock;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "segment.ms", "1s");
	th_set(th_S, p, "retention.ms", "3s");
	put(p, "last words\n");
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 1000);
	th_clock = t0 + 1000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.sealed, 1);
	ck_assert_uint_eq(st.expired, 0);
	/* Deletion is due retention.ms after the newest record. */
	ck_assert_int_eq(tlog_part_due(p, TLOG_DUE_ALL), t0 + 3001);
	th_clock = t0 + 3000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(th_nsegs(p), 1);
	th_clock = t0 + 3001;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 1);
	ck_assert_uint_eq(th_nsegs(p), 0);
	ck_assert_int_eq(tlog_part_due(p, TLOG_DUE_ALL), -1);
	ck_assert(!tlog_heap_holds(&p->sched));
	tlog_partition_put(p);
}
END_TEST

START_TEST(config_change_reschedules)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	char err[256];
	int64_t t0 = th_clock;

	p = th_part(th_S, "t", "0");
	put(p, "kept a week\n");
	/* Defaults: sealed after 7 days idle. */
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 7 * 86400000LL);
	/* A topic-level retention brings it forward at once. */
	ck_assert_int_eq(tlog_conf_set(th_S, tlog_partition_topic(p), NULL,
	    "retention.ms", "2s", 2, err, sizeof(err)), 0);
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 2001);
	/* The store level is overridden by the topic: no change. */
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, NULL, "retention.ms", "1h",
	    2, err, sizeof(err)), 0);
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 2001);
	/* Removing the topic's override falls back to the store's 1h. */
	ck_assert_int_eq(tlog_conf_unset(th_S, tlog_partition_topic(p), NULL,
	    "retention.ms"), 0);
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 3600001);
	/* Forever: only the idle seal is left. */
	th_set(th_S, p, "retention.ms", "-1");
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 7 * 86400000LL);
	th_clock = t0 + 7 * 86400000LL;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.sealed, 1);
	ck_assert_int_eq(tlog_part_due(p, TLOG_DUE_ALL), -1);
	ck_assert(!tlog_heap_holds(&p->sched));
	tlog_partition_put(p);
}
END_TEST

START_TEST(bounded_steps)
{
	struct tlog_partition *p, *q;
	struct tlog_reap_stats st;
	int64_t t0 = th_clock;
	int i, cycles = 0;
	uint64_t total = 0;

	p = th_part(th_S, "t", "big");
	q = th_part(th_S, "t", "small");
	th_set(th_S, p, "retention.ms", "1s");
	th_set(th_S, q, "retention.ms", "1s");
	for (i = 0; i < 200; i++) {
		put(p, "one segment each\n");
		tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	}
	put(q, "also due\n");
	th_clock = t0 + 5000;
	tlog_reaper_cycle(th_S, &st);
	/* One step holds one partition for at most 64 segments; the other
	 * due partition is served in the same wake-up. */
	ck_assert_uint_eq(st.visited, 2);
	ck_assert_uint_eq(st.expired, 65);
	ck_assert_uint_eq(th_nsegs(q), 0);
	total = st.expired - 1;
	while (th_nsegs(p) > 0) {
		ck_assert_int_le(tlog_reaper_next_due(th_S), th_clock);
		tlog_reaper_cycle(th_S, &st);
		ck_assert_uint_le(st.expired, 64);
		total += st.expired;
		ck_assert_int_lt(++cycles, 10);
	}
	ck_assert_uint_eq(total, 200);
	ck_assert_int_eq(cycles, 3);
	tlog_partition_put(p);
	tlog_partition_put(q);
}
END_TEST

START_TEST(catch_up_after_downtime)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	int64_t t0 = th_clock;
	int i;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "1h");
	for (i = 0; i < 5; i++) {
		put(p, "before the outage\n");
		tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	}
	tlog_partition_put(p);
	tlog_store_close(th_S);
	th_clock = t0 + 86400000LL;	/* down for a day */
	th_S = th_open(th_dir);
	ck_assert_int_le(tlog_reaper_next_due(th_S), th_clock);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 5);
	p = th_part(th_S, "t", "0");
	ck_assert_uint_eq(th_nsegs(p), 0);
	tlog_partition_put(p);
}
END_TEST

static size_t
count_substr(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

START_TEST(events_record_seals_and_deletions)
{
	struct tlog_partition *p, *ev;
	struct tlog_reap_stats st;
	int64_t t0 = th_clock;
	size_t len;
	char *d;

	p = th_part(th_S, "orders", "0");
	th_set(th_S, p, "retention.ms", "1s");
	put(p, "a\n");
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	put(p, "b\n");
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	put(p, "c\n");
	th_clock = t0 + 1001;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 3);
	ev = tlog_store_events(th_S);
	/* No deletion is recorded before its unlink. */
	d = th_partition_data(ev, &len);
	ck_assert_uint_eq(count_substr(d, "\"event\":\"delete\""), 0);
	free(d);
	ck_assert_int_eq(tlog_store_unlink_pending(th_S, 0), 3);
	d = th_partition_data(ev, &len);
	ck_assert_uint_eq(count_substr(d, "\"event\":\"seal\""), 3);
	ck_assert_uint_eq(count_substr(d, "\"event\":\"delete\""), 3);
	ck_assert_uint_eq(count_substr(d, "\"rule\":\"time\""), 3);
	ck_assert_uint_eq(count_substr(d, "\"trigger\":\"manual\""), 2);
	ck_assert_uint_eq(count_substr(d, "\"trigger\":\"retention\""), 1);
	ck_assert_ptr_nonnull(strstr(d, "\"topic\":\"orders\",\"partition\""
	    ":\"0\",\"segment\":\"00000000000000000001\""));
	ck_assert_uint_eq(count_substr(d, "}\n"), 6);
	free(d);
	/* The events partition is hidden from the topic listing. */
	{
		struct tlog_dirent *de;
		size_t n;
		ck_assert_int_eq(tlog_topic_list(th_S, &de, &n), 0);
		ck_assert_uint_eq(n, 1);
		ck_assert_str_eq(de[0].name, "orders");
		free(de);
	}
	tlog_partition_put(ev);
	tlog_partition_put(p);
}
END_TEST

/*
 * The reaper empties a partition (its due time becomes "never") while an
 * append creates a new segment and schedules it. The hook runs between
 * tlog_resched's computation and its heap update and lets an append in
 * if one could take the partition's lock at that moment, as a concurrent
 * one would: the stale "never" must not take the partition out of the
 * schedule while it has a segment.
 */
static int race_armed, race_ran;

static void
append_between(void *arg, int point, struct tlog_partition *p)
{
	(void)arg;
	if (point != TLOG_HOOK_RESCHED || !race_armed || race_ran ||
	    strcmp(p->lv.name, "0") != 0)
		return;
	if (pthread_mutex_trylock(&p->sd.lock) != 0)
		return;		/* held through the update: it would wait */
	pthread_mutex_unlock(&p->sd.lock);
	race_ran = 1;
	put(p, "appended in between\n");
}

START_TEST(resched_never_drops_a_partition_with_segments)
{
	struct tlog_store_opts o;
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	int64_t t0 = 1700000000000LL;

	th_clock = t0;
	th_close();		/* the suite's store: this one needs a hook */
	memset(&o, 0, sizeof(o));
	o.hook = append_between;
	race_armed = race_ran = 0;
	th_S = th_open_opts(th_dir, &o);
	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "1s");
	put(p, "expires\n");
	race_armed = 1;
	th_clock = t0 + 1001;
	tlog_reaper_cycle(th_S, &st);
	race_armed = 0;
	ck_assert_uint_eq(st.expired, 1);
	if (!race_ran)
		put(p, "appended after\n");
	/* The new segment is scheduled: its time rule at t0 + 2002. */
	ck_assert_uint_eq(th_nsegs(p), 1);
	ck_assert_msg(tlog_heap_holds(&p->sched), "a partition with a segment "
	    "left the reaper's schedule");
	ck_assert_int_eq(tlog_reaper_next_due(th_S), t0 + 2002);
	th_clock = t0 + 2002;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 1);
	ck_assert_uint_eq(th_nsegs(p), 0);
	tlog_partition_put(p);
}
END_TEST

static uint64_t
pbytes(struct tlog_partition *p)
{
	struct tlog_part_stats st;

	tlog_partition_stats(p, &st);
	return st.bytes;
}

/* 920 lines of 100 bytes (92,000 bytes) in 16K segments. */
static void
fill(struct tlog_partition *p)
{
	struct tlog_writer *w = tlog_writer_open(p);
	char line[100];
	int i;

	th_set(th_S, p, "segment.bytes", "16K");
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (i = 0; i < 920; i++)
		ck_assert_int_eq(tlog_writer_write(w, line, sizeof(line)),
		    (ssize_t)sizeof(line));
	tlog_writer_close(w);
}

/*
 * A setting lowered at any level takes effect at the next wake-up for
 * every partition it governs, with no append: the size ceiling (rule
 * size, the active segment sealed last), retention.ms and segment.ms.
 */
START_TEST(config_change_applies_to_idle_partitions)
{
	struct tlog_partition *a0, *a1, *b0;
	struct tlog_reap_stats st;
	struct tlog_seginfo *si;
	char err[256];
	size_t n, i;
	size_t len;
	char *d;
	struct tlog_partition *ev;
	int64_t t0 = th_clock;

	a0 = th_part(th_S, "a", "0");
	a1 = th_part(th_S, "a", "1");
	b0 = th_part(th_S, "b", "0");
	fill(a0);
	fill(a1);
	fill(b0);
	ck_assert_uint_eq(pbytes(a0), 92000);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.sized, 0);
	/* Topic level: both of its partitions, not the other topic's. */
	ck_assert_int_eq(tlog_conf_set(th_S, tlog_partition_topic(a0), NULL,
	    "retention.bytes", "8K", 2, err, sizeof(err)), 0);
	ck_assert_int_le(tlog_reaper_next_due(th_S), th_clock);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_le(pbytes(a0), 8192);
	ck_assert_uint_le(pbytes(a1), 8192);
	ck_assert_uint_eq(pbytes(b0), 92000);
	ck_assert_uint_gt(st.sized, 0);
	ck_assert_uint_eq(st.expired, 0);
	/* Store level: b0 (a's partitions keep their topic's 8K). */
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, NULL, "retention.bytes",
	    "40K", 3, err, sizeof(err)), 0);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_le(pbytes(b0), 40960);
	ck_assert_uint_gt(pbytes(b0), 40960 - 16384);
	/* Oldest first: what is left is the newest data, and the active
	 * segment is still there. */
	ck_assert_int_eq(tlog_partition_segments(b0, &si, &n), 0);
	ck_assert_uint_gt(n, 0);
	ck_assert(!si[n - 1].sealed);
	ck_assert_uint_eq(si[n - 1].base + si[n - 1].records, 920);
	free(si);
	/* Partition level, below the active segment's size: it seals last
	 * (trigger retention) and goes. */
	th_set(th_S, b0, "retention.bytes", "1K");
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_le(pbytes(b0), 1024);
	ck_assert_uint_eq(th_nsegs(b0), 0);
	/* Every deletion of this path is audited with rule size. */
	ck_assert_int_gt(tlog_store_unlink_pending(th_S, 0), 0);
	ev = tlog_store_events(th_S);
	d = th_partition_data(ev, &len);
	ck_assert_ptr_null(strstr(d, "\"rule\":\"time\""));
	ck_assert_ptr_nonnull(strstr(d, "\"rule\":\"size\""));
	ck_assert_ptr_nonnull(strstr(d, "\"trigger\":\"retention\""));
	free(d);
	tlog_partition_put(ev);

	/* retention.ms lowered at the store level: a1's data is 10 s old. */
	th_clock = t0 + 10000;
	ck_assert_int_eq(tlog_conf_set(th_S, NULL, NULL, "retention.ms", "5s",
	    2, err, sizeof(err)), 0);
	ck_assert_int_le(tlog_reaper_next_due(th_S), th_clock);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(th_nsegs(a1), 0);
	/* segment.ms lowered at a topic level: a0's refilled active
	 * segment seals on idle at the next wake-up. */
	fill(a0);
	th_clock += 3000;
	ck_assert_int_eq(tlog_conf_set(th_S, tlog_partition_topic(a0), NULL,
	    "segment.ms", "2s", 2, err, sizeof(err)), 0);
	ck_assert_int_le(tlog_reaper_next_due(th_S), th_clock);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.sealed, 1);
	ck_assert_int_eq(tlog_partition_segments(a0, &si, &n), 0);
	for (i = 0; i < n; i++)
		ck_assert(si[i].sealed);
	free(si);
	tlog_partition_put(a0);
	tlog_partition_put(a1);
	tlog_partition_put(b0);
}
END_TEST

/* A small parser for the Prometheus text format: every line is a comment
 * (# HELP / # TYPE) or `name{labels} value`. Returns the sample count. */
static int
parse_prometheus(const char *text)
{
	const char *l = text, *e, *c;
	int samples = 0;

	while (*l) {
		e = strchr(l, '\n');
		ck_assert_ptr_nonnull(e);
		if (*l == '#') {
			ck_assert(strncmp(l, "# HELP tlogfs_", 14) == 0 ||
			    strncmp(l, "# TYPE tlogfs_", 14) == 0);
		} else {
			for (c = l; c < e && (isalnum((unsigned char)*c) ||
			    *c == '_'); c++)
				;
			ck_assert(c > l);
			if (*c == '{') {
				c = memchr(c, '}', (size_t)(e - c));
				ck_assert_ptr_nonnull(c);
				c++;
			}
			ck_assert_int_eq(*c, ' ');
			{
				char *end;
				strtod(c + 1, &end);
				ck_assert(end == e);
			}
			samples++;
		}
		l = e + 1;
	}
	return samples;
}

START_TEST(metrics_text)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	char *m;
	size_t len;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "1s");
	put(p, "x\ny\n");
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	th_clock += 1001;
	tlog_reaper_cycle(th_S, &st);
	tlog_store_unlink_pending(th_S, 0);
	ck_assert_int_eq(tlog_metrics_format(th_S, &m, &len), 0);
	ck_assert_uint_eq(strlen(m), len);
	ck_assert_int_gt(parse_prometheus(m), 15);
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_records_total 2\n"));
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_bytes_total 4\n"));
	ck_assert_ptr_nonnull(strstr(m,
	    "tlogfs_rolls_total{trigger=\"manual\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(m,
	    "tlogfs_deletions_total{rule=\"time\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_deleted_bytes_total 4\n"));
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_reaper_wakeups_total 1\n"));
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_partitions 1\n"));
	free(m);
	tlog_partition_put(p);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("reaper");

	th_hooks(suite_setup, NULL);
	TH_CASE(s, wakeup_visits_only_due_partitions);
	TH_CASE(s, idle_partition_empties_on_schedule);
	TH_CASE(s, config_change_reschedules);
	TH_CASE(s, bounded_steps);
	TH_CASE(s, catch_up_after_downtime);
	TH_CASE(s, events_record_seals_and_deletions);
	TH_CASE(s, metrics_text);
	TH_CASE(s, resched_never_drops_a_partition_with_segments);
	TH_CASE(s, config_change_applies_to_idle_partitions);
	return th_run(s);
}
