/*
 * test_clock.c - engine time (tlog_now) on two injected clocks, the wall
 * clock (th_clock) and the boot-time clock (th_boot): a forward step
 * expires nothing early, a backward step keeps stamps increasing and
 * segments rolling and sealing, a restart over stamps in the future does
 * not stall, and a run without steps is the wall clock exactly.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "free.h"
#include "reaper.h"
#include "retention.h"
#include "store.h"

#define T0 1700000000000LL
#define HOUR 3600000LL


static void
open_store(void)
{
	struct tlog_store_opts o;

	memset(&o, 0, sizeof(o));
	o.boot_clock = th_boot_now;
	th_S = th_open_opts(th_dir, &o);
}

/* Real time passes: both clocks move. */
static void
elapse(int64_t ms)
{
	th_clock += ms;
	th_boot += ms;
}

static void
put(struct tlog_partition *p, const char *s)
{
	struct tlog_writer *w = tlog_writer_open(p);

	th_put(w, s);
	tlog_writer_close(w);
}

static int64_t
newest(struct tlog_partition *p)
{
	struct tlog_part_stats st;

	tlog_partition_stats(p, &st);
	return st.newest_ts;
}

static size_t
count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* The metric gauge, in ms. */
static int64_t
offset_gauge(void)
{
	const char *k = "\ntlogfs_clock_offset_seconds ";
	char *m, *at;
	size_t len;
	double v;

	ck_assert_int_eq(tlog_metrics_format(th_S, &m, &len), 0);
	ck_assert_ptr_nonnull(at = strstr(m, k));
	v = strtod(at + strlen(k), NULL);
	free(m);
	return (int64_t)(v * 1000 + (v < 0 ? -0.5 : 0.5));
}

/* The clock suite's store reads a boot clock of its own. */
static void
suite_setup(void)
{
	th_boot = 5000;		/* its origin is anything */
	open_store();
}

/*
 * With engine time ahead at half speed, the one segment due at deletion
 * time x goes once the wall clock reads x: the reaper's due time is the
 * engine time then, half the wall clock's distance to x ahead (and up to
 * 2 ms more: engine time counts whole ms at half speed). A ms before,
 * with engine time long past x, nothing goes.
 */
static void
expires_by_the_wall_clock(int64_t x)
{
	struct tlog_reap_stats st;
	int64_t due = tlog_reaper_next_due(th_S);

	ck_assert_int_ge(due, tlog_now(th_S) + (x - th_clock) / 2);
	ck_assert_int_le(due, tlog_now(th_S) + (x - th_clock) / 2 + 2);
	elapse(x - th_clock - 1);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	ck_assert_int_gt(tlog_now(th_S), x);
	while (tlog_now(th_S) < tlog_reaper_next_due(th_S))
		elapse(1);
	ck_assert_int_ge(th_clock, x);
	ck_assert_int_le(th_clock, x + 2);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 1);
}

/*
 * The store closed and opened again two seconds later, after a reboot
 * (the boot clock starts again): the reaper expires nothing, and
 * partition t/NAME still holds its records.
 */
static void
restart_keeps(const char *name)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;

	tlog_store_close(th_S);
	elapse(2000);
	th_boot = 300;
	open_store();
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	p = th_part(th_S, "t", name);
	ck_assert_int_gt(newest(p), 0);
	tlog_partition_put(p);
}

START_TEST(forward_step_expires_nothing_early)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	int i;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "10s");
	put(p, "old\n");
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	elapse(500);
	th_clock += 2 * HOUR;		/* the wall clock jumps ahead */
	ck_assert_int_eq(tlog_now(th_S), T0 + 500);
	for (i = 0; i < 5; i++)
		tlog_now(th_S);
	ck_assert_uint_eq(count(th_logbuf, "clock: "), 1);
	ck_assert_ptr_nonnull(strstr(th_logbuf,
	    "stepped forward by 7200000 ms"));
	ck_assert_int_eq(offset_gauge(), 2 * HOUR);
	/* Nothing is due: the data is half a second old, not two hours. */
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	ck_assert_int_eq(tlog_reaper_next_due(th_S), T0 + 10001);
	/* New records carry engine time, not the stepped wall clock. */
	put(p, "new\n");
	ck_assert_int_eq(newest(p), T0 + 500);
	/* The old segment goes 10 s after its record, in real time. */
	elapse(9500);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	elapse(1);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 1);
	ck_assert_uint_eq(th_nsegs(p), 1);
	/* The wall clock corrected: engine time does not move. */
	th_clock -= 2 * HOUR;
	ck_assert_int_eq(tlog_now(th_S), T0 + 10001);
	ck_assert_int_eq(offset_gauge(), 0);
	ck_assert_uint_eq(count(th_logbuf, "clock: "), 2);
	tlog_partition_put(p);
}
END_TEST

START_TEST(backward_step_keeps_stamps_increasing)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	struct tlog_seginfo *si;
	int64_t last, e, x;
	size_t n;
	int i;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "segment.ms", "2s");
	th_set(th_S, p, "retention.ms", "5s");
	put(p, "before\n");
	elapse(500);
	th_clock -= HOUR;		/* the wall clock jumps back */
	e = tlog_now(th_S);
	ck_assert_int_eq(e, T0 + 500);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "stepped back by 3600000 ms"));
	ck_assert_ptr_nonnull(strstr(th_logbuf, "half speed"));
	ck_assert_int_eq(offset_gauge(), -HOUR);
	/* Every 100 ms of real time, 50 of engine time: stamps increase,
	 * and the segment rolls on time once 2 s of engine time passed. */
	last = newest(p);
	for (i = 0; i < 40; i++) {
		elapse(100);
		put(p, "after\n");
		ck_assert_int_gt(newest(p), last);
		last = newest(p);
	}
	ck_assert_int_eq(last, T0 + 500 + 40 * 50);
	ck_assert_int_eq(tlog_partition_segments(p, &si, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(si[0].sealed);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_TIME);
	ck_assert_int_eq(si[1].first_ts, T0 + 2000);
	free(si);
	/* Idle: the active segment seals 2 s (engine) after its first
	 * record, 4 s of real time at half speed; not before. */
	ck_assert_int_eq(tlog_part_due(p, TLOG_DUE_IDLE), T0 + 4000);
	elapse(2 * (T0 + 4000 - tlog_now(th_S)) - 2);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.sealed, 0);
	elapse(2);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.sealed, 1);
	/* Expiry comes late, never early: by deletion time, the earlier
	 * of engine time and the wall clock, 5 s after the first segment's
	 * newest record. The wall clock, an hour back, gets there last:
	 * due at the engine time it reads that, half its distance ahead. */
	ck_assert_uint_eq(st.expired, 0);
	x = T0 + 1950 + 5001;
	expires_by_the_wall_clock(x);
	ck_assert_uint_eq(count(th_logbuf, "clock: "), 1);
	tlog_partition_put(p);
}
END_TEST

START_TEST(restart_over_future_stamps_does_not_stall)
{
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	int64_t last;
	size_t n;
	int i;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "segment.ms", "1s");
	tlog_partition_put(p);
	tlog_store_close(th_S);
	/* Written while the wall clock was an hour ahead. */
	th_clock = T0 + HOUR;
	th_boot += HOUR;
	open_store();
	p = th_part(th_S, "t", "0");
	put(p, "first\n");
	tlog_partition_put(p);
	tlog_store_close(th_S);
	/* Reopened once it was corrected, after a reboot (the boot clock
	 * starts again). */
	th_clock = T0 + 1000;
	th_boot = 700;
	th_logbuf[0] = '\0';
	open_store();
	ck_assert_ptr_nonnull(strstr(th_logbuf, "ahead of the wall clock"));
	p = th_part(th_S, "t", "0");
	last = newest(p);
	ck_assert_int_eq(last, T0 + HOUR);
	/* Engine time starts at the newest stamp and moves at half speed. */
	ck_assert_int_eq(tlog_now(th_S), last);
	for (i = 0; i < 30; i++) {
		elapse(100);
		put(p, "again\n");
		ck_assert_int_gt(newest(p), last);
		last = newest(p);
	}
	/* 1.5 s of engine time: it rolled on time. */
	ck_assert_int_eq(tlog_partition_segments(p, &si, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(si[0].sealed_by, TLOG_TRIG_TIME);
	free(si);
	tlog_partition_put(p);
}
END_TEST

START_TEST(restart_catches_up_with_the_wall_clock)
{
	struct tlog_partition *p;

	p = th_part(th_S, "t", "0");
	th_clock = T0 + 10000;		/* stamps 10 s ahead of the wall */
	th_boot += 10000;
	put(p, "ahead\n");
	tlog_partition_put(p);
	tlog_store_close(th_S);
	th_clock = T0;
	th_boot = 100;
	open_store();
	ck_assert_int_eq(tlog_now(th_S), T0 + 10000);
	ck_assert_int_eq(offset_gauge(), -10000);
	/* The wall clock gains 10 s on it in 20 s: then one clock. */
	elapse(19998);
	ck_assert_int_eq(tlog_now(th_S), T0 + 10000 + 9999);
	elapse(2);
	ck_assert_int_eq(tlog_now(th_S), th_clock);
	elapse(5000);
	ck_assert_int_eq(tlog_now(th_S), th_clock);
	ck_assert_int_eq(offset_gauge(), 0);
}
END_TEST

/*
 * A machine that boots with its clock two hours behind (a real-time
 * clock that lost time) and has it set right by NTP after the mount:
 * engine time starts at the newest stored stamp, not at the wrong wall
 * clock, so what is written after the correction is stamped on time
 * and is not taken for two hours old at the next restart. (Anchored at
 * the wall clock alone, every record written between the mount and
 * the next restart went at that restart under retention.ms 1h.)
 */
START_TEST(restart_with_the_wall_clock_behind_expires_nothing_early)
{
	struct tlog_partition *p;

	p = th_part(th_S, "t", "0");
	put(p, "before the reboot\n");
	tlog_partition_put(p);
	tlog_store_close(th_S);
	/* Rebooted a second later with the wall clock 2 h behind. */
	th_clock = T0 + 1000 - 2 * HOUR;
	th_boot = 500;
	open_store();
	elapse(1000);
	th_clock += 2 * HOUR;		/* NTP sets it right */
	(void)tlog_now(th_S);
	p = th_part(th_S, "t", "1");
	th_set(th_S, p, "retention.ms", "1h");
	put(p, "after the correction\n");
	ck_assert_int_ge(newest(p), th_clock - 2000);
	tlog_partition_put(p);
	restart_keeps("1");	/* the record is seconds old */
}
END_TEST

/*
 * One partition written while the wall clock ran a day ahead, the clock
 * set right while the store was unmounted: engine time starts at that
 * partition's newest stamp, a day ahead, but the other partition's
 * records are judged by the wall clock, the earlier one, and go 36 h
 * after their newest record by it. Engine time alone, anchored a day
 * ahead and at half speed until the wall clock catches up, got there
 * 12 h early.
 */
START_TEST(stamps_ahead_in_one_partition_expire_nothing_early_in_another)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	int64_t x;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "36h");
	put(p, "on time\n");
	x = newest(p) + 36 * HOUR + 1;
	tlog_partition_put(p);
	tlog_store_close(th_S);
	th_clock += 24 * HOUR;		/* a day ahead */
	open_store();
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	p = th_part(th_S, "t", "1");
	put(p, "a day ahead\n");
	tlog_partition_put(p);
	tlog_store_close(th_S);
	th_clock -= 24 * HOUR;		/* set right, unmounted */
	elapse(1000);
	open_store();
	ck_assert_int_ge(tlog_now(th_S), th_clock + 24 * HOUR - 1000);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	elapse(24 * HOUR + 10000);	/* engine time is past x */
	ck_assert_int_gt(tlog_now(th_S), x);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	expires_by_the_wall_clock(x);
	p = th_part(th_S, "t", "1");
	ck_assert_int_gt(newest(p), 0);		/* a day ahead: kept */
	tlog_partition_put(p);
}
END_TEST

/*
 * A store idle for an hour, a reboot with the wall clock a day behind,
 * NTP setting it right while mounted: engine time, anchored at the
 * newest stamp (an hour behind the truth), follows that forward step,
 * as it ends a catch-up. Kept an hour behind until the next restart
 * (as a forward step is otherwise), what was written meanwhile was
 * stamped an hour too old and went at that restart under retention.ms
 * 30m.
 */
START_TEST(the_clock_set_right_after_a_boot_behind_is_followed)
{
	struct tlog_partition *p;

	p = th_part(th_S, "t", "0");
	put(p, "an hour before the reboot\n");
	tlog_partition_put(p);
	tlog_store_close(th_S);
	th_clock += HOUR - 24 * HOUR;	/* an hour later, a day behind */
	th_boot = 500;
	open_store();
	elapse(1000);
	th_clock += 24 * HOUR;		/* NTP sets it right */
	ck_assert_int_eq(tlog_now(th_S), th_clock);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "engine time follows it"));
	ck_assert_int_eq(offset_gauge(), 0);
	p = th_part(th_S, "t", "1");
	th_set(th_S, p, "retention.ms", "30m");
	put(p, "after the correction\n");
	ck_assert_int_eq(newest(p), th_clock);
	tlog_partition_put(p);
	restart_keeps("1");	/* the record is seconds old */
}
END_TEST

/*
 * The wall clock glitches a day back for 2 s and is set right. A due
 * time computed during the glitch is the engine time when the wall
 * clock would get there, half a day away; the reaper computes every due
 * time again after the step that sets it right, and the record goes 1 s
 * late (what the glitch's 2 s at half speed cost engine time: deletion
 * time does not follow the forward step engine time followed), not half
 * a day late.
 */
START_TEST(a_corrected_backward_glitch_leaves_no_late_due_time)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	int64_t x;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "10s");
	put(p, "x\n");
	x = newest(p) + 10001;
	elapse(1000);
	th_clock -= 24 * HOUR;
	(void)tlog_now(th_S);
	elapse(2000);
	tlog_part_resched(p);
	ck_assert_int_gt(tlog_reaper_next_due(th_S), x + HOUR);
	th_clock += 24 * HOUR;		/* set right */
	tlog_reaper_cycle(th_S, &st);
	ck_assert_int_eq(tlog_reaper_next_due(th_S), x + 1000);
	elapse(x + 1000 - th_clock - 1);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	elapse(1);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 1);
	tlog_partition_put(p);
}
END_TEST

/*
 * During a catch-up (the wall clock glitched a day back), the wall clock
 * jumps a year ahead instead of back: engine time takes the step for a
 * correction and follows it, so records are stamped a year ahead, but
 * deletion time does not follow it: what was written seconds before,
 * under retention.ms 7d, stays, and goes 7 days of real time after its
 * record.
 */
START_TEST(a_wrong_forward_step_followed_deletes_nothing_early)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;

	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "7d");
	put(p, "x\n");
	elapse(1000);
	th_clock -= 24 * HOUR;
	(void)tlog_now(th_S);
	elapse(2000);
	th_clock += 24 * HOUR + 365 * 24 * HOUR;	/* a year ahead */
	ck_assert_int_eq(tlog_now(th_S), th_clock);	/* followed */
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	/* 7 days less 2 s of real time later: still there. */
	elapse(7 * 24 * HOUR - 2000 - 1000);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 0);
	elapse(1000 + 1000);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 1);
	tlog_partition_put(p);
}
END_TEST

/* Both clocks moved while the reaper's thread reads them. */
static void
set_clocks(int64_t wall, int64_t boot)
{
	__atomic_store_n(&th_clock, wall, __ATOMIC_RELEASE);
	__atomic_store_n(&th_boot, boot, __ATOMIC_RELEASE);
}

/* p's due time in the reaper's heap becomes want, within 5 s. */
static bool
key_becomes(struct tlog_partition *p, int64_t want)
{
	struct tlog_reaper *r = reaper_of(th_S);
	int64_t k;
	int i;

	for (i = 0; i < 100; i++) {
		pthread_mutex_lock(&r->ctx->work_lock);
		k = p->sched.key;
		pthread_mutex_unlock(&r->ctx->work_lock);
		if (k == want)
			return true;
		usleep(50000);
	}
	return false;
}

/*
 * The reaper's thread asleep toward a due time 20 min away; the wall
 * clock glitches a day back, another partition's due time is computed
 * meanwhile (half a day late, which changes nothing of the heap's top,
 * so the reaper is not woken), and the glitch is corrected, all seen by
 * this thread, not the reaper's. The reaper wakes once a second
 * whatever it waits for, notices the steps and computes every due time
 * again: within seconds of real time, not after its 20 min.
 */
START_TEST(a_step_another_thread_saw_reaches_the_sleeping_reaper)
{
	struct tlog_partition *p, *q;
	int64_t x, w, b;

	q = th_part(th_S, "t", "first");
	th_set(th_S, q, "retention.ms", "20m");
	put(q, "far\n");
	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "retention.ms", "30m");
	put(p, "x\n");
	x = newest(p) + HOUR / 2 + 1;
	ck_assert_int_eq(tlog_reaper_start(th_S), 0);
	ck_assert(key_becomes(p, x));
	w = th_clock;
	b = th_boot;
	set_clocks(w - 24 * HOUR, b);		/* the glitch */
	(void)tlog_now(th_S);
	set_clocks(w - 24 * HOUR + 2000, b + 2000);
	tlog_part_resched(p);			/* half a day late */
	ck_assert_int_gt(tlog_part_due(p, TLOG_DUE_ALL), x + HOUR);
	set_clocks(w + 2000, b + 2000);		/* set right */
	(void)tlog_now(th_S);
	ck_assert(key_becomes(p, tlog_part_due(p, TLOG_DUE_ALL)));
	/* With the 1 s the glitch's 2 s at half speed cost engine time. */
	ck_assert_int_eq(tlog_part_due(p, TLOG_DUE_ALL), x + 1000);
	tlog_reaper_stop(th_S);
	tlog_partition_put(q);
	tlog_partition_put(p);
}
END_TEST

/* A forged stamp near INT64_MAX expires never: no wrap to the past. */
START_TEST(expiry_of_a_stamp_near_the_end_of_time_saturates)
{
	ck_assert_int_eq(tlog_part_expires_at(INT64_MAX - 5, 1000), INT64_MAX);
	ck_assert_int_eq(tlog_part_expires_at(T0, 1000), T0 + 1001);
	ck_assert_int_eq(tlog_part_expires_at(T0, -1), -1);
	ck_assert_int_eq(tlog_clock_del_due(&th_S->ctx.clock, INT64_MAX),
	    INT64_MAX);
	ck_assert_int_eq(tlog_clock_del_due(&th_S->ctx.clock, -1), -1);
}
END_TEST

START_TEST(no_step_is_the_wall_clock)
{
	struct tlog_partition *p;
	struct tlog_reap_stats st;
	int i;

	tlog_store_close(th_S);
	th_boot = th_clock - 123456789;		/* another origin */
	open_store();
	p = th_part(th_S, "t", "0");
	th_set(th_S, p, "segment.ms", "1s");
	th_set(th_S, p, "retention.ms", "3s");
	for (i = 0; i < 50; i++) {
		ck_assert_int_eq(tlog_now(th_S), th_clock);
		put(p, "tick\n");
		ck_assert_int_eq(newest(p), th_clock);
		elapse(1 + i * 37 % 700);
		tlog_reaper_cycle(th_S, &st);
	}
	ck_assert_ptr_null(strstr(th_logbuf, "clock: "));
	ck_assert_int_eq(offset_gauge(), 0);
	/* A wall clock that wanders by less than a second is no step. */
	th_clock += 900;
	tlog_now(th_S);
	th_clock -= 1700;
	tlog_now(th_S);
	ck_assert_ptr_null(strstr(th_logbuf, "clock: "));
	tlog_partition_put(p);
}
END_TEST

/* ---- reads racing steps: engine time never goes back for a reader ---- */

static int64_t race_wall, race_boot;	/* atomic */
static int race_done;			/* atomic */
static unsigned race_steps;		/* atomic */

static int64_t
race_wall_now(void *arg)
{
	(void)arg;
	return __atomic_load_n(&race_wall, __ATOMIC_ACQUIRE);
}

static int64_t
race_boot_now(void *arg)
{
	(void)arg;
	return __atomic_load_n(&race_boot, __ATOMIC_ACQUIRE);
}

static void
race_log(void *arg, int prio, const char *msg)
{
	(void)arg; (void)prio; (void)msg;
	__atomic_add_fetch(&race_steps, 1, __ATOMIC_RELAXED);
}

static void *
race_reader(void *arg)
{
	struct tlog_clock *c = arg;
	int64_t e, prev = INT64_MIN;
	long bad = 0;

	while (!__atomic_load_n(&race_done, __ATOMIC_ACQUIRE)) {
		e = tlog_clock_now(c);
		if (e < prev)
			bad++;
		prev = e;
	}
	return (void *)bad;
}

/* Reads take no lock (a seqlock, clock.c): while one thread moves both
 * clocks and steps the wall clock back and forth, every reader's engine
 * time still never decreases, and every step is seen (told once). */
START_TEST(reads_racing_steps_never_go_back)
{
	struct tlog_sink sink = { race_log, NULL };
	struct tlog_clock c;
	pthread_t t[2];
	void *bad;
	int i, k;

	race_wall = T0;
	race_boot = 5000;
	tlog_clock_init(&c, race_wall_now, race_boot_now, NULL, &sink);
	for (k = 0; k < 2; k++)
		ck_assert_int_eq(pthread_create(&t[k], NULL, race_reader, &c),
		    0);
	for (i = 1; i <= 2000; i++) {
		__atomic_add_fetch(&race_boot, 3, __ATOMIC_RELEASE);
		__atomic_add_fetch(&race_wall, i % 100 == 0 ? 5003 :
		    i % 100 == 50 ? -4997 : 3, __ATOMIC_RELEASE);
		(void)tlog_clock_now(&c);
	}
	__atomic_store_n(&race_done, 1, __ATOMIC_RELEASE);
	for (k = 0; k < 2; k++) {
		ck_assert_int_eq(pthread_join(t[k], &bad), 0);
		ck_assert_int_eq((long)bad, 0);
	}
	/* 20 forward and 20 backward steps, each anchored once. */
	ck_assert_uint_eq(__atomic_load_n(&race_steps, __ATOMIC_RELAXED), 40);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("clock");

	th_hooks(suite_setup, NULL);
	TH_CASE(s, forward_step_expires_nothing_early);
	TH_CASE(s, backward_step_keeps_stamps_increasing);
	TH_CASE(s, restart_over_future_stamps_does_not_stall);
	TH_CASE(s, restart_catches_up_with_the_wall_clock);
	TH_CASE(s, restart_with_the_wall_clock_behind_expires_nothing_early);
	TH_CASE(s, stamps_ahead_in_one_partition_expire_nothing_early_in_another);
	TH_CASE(s, expiry_of_a_stamp_near_the_end_of_time_saturates);
	TH_CASE(s, the_clock_set_right_after_a_boot_behind_is_followed);
	TH_CASE(s, a_corrected_backward_glitch_leaves_no_late_due_time);
	TH_CASE(s, a_wrong_forward_step_followed_deletes_nothing_early);
	TH_CASE(s, a_step_another_thread_saw_reaches_the_sleeping_reaper);
	TH_CASE(s, no_step_is_the_wall_clock);
	TH_CASE(s, reads_racing_steps_never_go_back);
	return th_run(s);
}
