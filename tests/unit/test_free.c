/*
 * test_free.c - retention.keep.free on an injected disk (doc/reaper.md,
 * "Disk pressure"): the store-wide oldest-first choice and the free
 * heap's order under seals, deletions, renames, new and removed
 * partitions, the events partition last, the hysteresis and the bytes
 * still being unlinked, an append that hits ENOSPC (a write sent to
 * /dev/full) reclaiming and retrying once, and the back-pressure that
 * keeps appends from taking free space below the floor while the
 * deleted segments wait to be unlinked.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "free.h"
#include "reaper.h"
#include "store.h"
#include "unlink.h"

#define FLOOR 16384			/* retention.keep.free in these tests */
#define TARGET (FLOOR + FLOOR / 16)	/* what a pass frees up to */

/* The fake disk: free bytes, as the reaper reads them; or, once
 * sim_begin ran, a disk that fills and empties (sim_free). */
static uint64_t fake_avail;
static unsigned free_events;		/* deletions with rule free */
static char free_topic[64];		/* the last one's topic */
static bool sim;
static int sim_free(void *arg, uint64_t *avail, uint64_t *size);

static int
fake_free(void *arg, uint64_t *avail, uint64_t *size)
{
	if (sim)
		return sim_free(arg, avail, size);
	*avail = fake_avail;
	*size = 1ULL << 30;
	return 0;
}

static void
count_event(void *arg, const struct tlog_event *ev)
{
	(void)arg;
	if (ev->kind == TLOG_EV_DELETE && ev->rule == TLOG_RULE_FREE) {
		free_events++;
		snprintf(free_topic, sizeof(free_topic), "%s", ev->topic);
	}
}

/* Options on the fake disk (1 GiB free), its deletions counted. */
static void
fake_disk(struct tlog_store_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->free_space = fake_free;
	o->event = count_event;
	fake_avail = 1ULL << 30;
	free_events = 0;
	sim = false;
}

static void
setup(void)
{
	struct tlog_store_opts o;

	fake_disk(&o);
	th_open_tp(&o);
}

/* One record of 1200 bytes (more than TARGET - FLOOR + 1: a disk one
 * byte under the floor frees exactly one segment). */
static void
rec(struct tlog_partition *p, char c)
{
	char buf[1200];
	int err;

	memset(buf, c, sizeof(buf));
	buf[sizeof(buf) - 1] = '\n';
	ck_assert_uint_eq(tlog_part_append(p, buf, sizeof(buf), true, &err),
	    sizeof(buf));
	ck_assert_int_eq(err, 0);
}

static void
seal(struct tlog_partition *p)
{
	ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), 0);
}

static void
keep_free(const char *v)
{
	char err[256];

	ck_assert_int_eq(tlog_conf_set(th_S, NULL, NULL,
	    "retention.keep.free", v, strlen(v), err, sizeof(err)), 0);
}

/* The next partition a reclaim takes from is want: one byte under the
 * floor, a pass takes exactly one segment, and its deletion event names
 * want's topic once the unlinker ran (free space comes back only then). */
static void
free_next(struct tlog_partition *want, const char *why)
{
	struct tlog_free_stats st;
	size_t before = th_nsegs(want);
	unsigned ev = free_events;
	char b[64];

	tlog_level_name(&tlog_partition_topic(want)->lv, b, sizeof(b));
	fake_avail = FLOOR - 1;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 1);
	ck_assert_uint_eq(st.segments, 1);
	ck_assert_uint_eq(st.partitions, 1);
	tlog_unlink_pending(&th_S->q, 0);
	ck_assert_uint_eq(free_events, ev + 1);
	ck_assert_msg(strcmp(free_topic, b) == 0, "%s: the pass took from %s, "
	    "not %s", why, free_topic, b);
	ck_assert_uint_eq(th_nsegs(want), before - 1);
	fake_avail = 1ULL << 30;
}

START_TEST(oldest_first_across_partitions)
{
	struct tlog_partition *a = th_P, *b, *c, *d;

	keep_free("16K");
	b = th_part(th_S, "b", "0");
	c = th_part(th_S, "c", "0");
	rec(a, 'a'); seal(a);			/* a: sealed at T0 */
	th_clock += 1000;
	rec(b, 'b'); seal(b);			/* b: sealed at T0+1 */
	th_clock += 1000;
	rec(c, 'c'); seal(c);			/* c: sealed at T0+2 */
	th_clock += 1000;
	rec(a, 'a');				/* a: active at T0+3 */
	th_clock += 1000;
	rec(b, 'b'); seal(b);			/* b: sealed at T0+4 */
	th_clock += 1000;
	d = th_part(th_S, "d", "0");		/* new, active at T0+5 */
	rec(d, 'd');
	th_clock += 1000;
	rec(c, 'c');				/* c: active at T0+6 */
	/* A rename keeps c's place. */
	ck_assert_int_eq(tlog_topic_rename(th_S, "c", "c2"), 0);

	free_next(a, "the oldest sealed segment");
	free_next(b, "the next oldest, another partition");
	free_next(c, "the renamed topic's, in its place");
	/* a's active segment (T0+3) seals: it goes before b's T0+4. */
	seal(a);
	free_next(a, "a segment sealed since");
	free_next(b, "the last sealed segment");
	/* Nothing sealed is left: active segments, oldest first. */
	free_next(d, "the oldest active segment");
	free_next(c, "the next active segment");
	ck_assert_uint_eq(th_nsegs(a) + th_nsegs(b) + th_nsegs(c) +
	    th_nsegs(d), 0);
	/* The events partition goes last, after everyone's data. */
	free_next(th_S->ev.p, "the events partition");
	tlog_partition_put(b);
	tlog_partition_put(c);
	tlog_partition_put(d);
}
END_TEST

/* Segments deleted by the other rules leave the free heap's order true. */
START_TEST(order_after_other_deletions)
{
	struct tlog_partition *a = th_P, *b;
	struct tlog_seginfo *si;
	size_t n;

	keep_free("16K");
	b = th_part(th_S, "b", "0");
	rec(a, 'a'); seal(a);
	th_clock += 1000;
	rec(b, 'b'); seal(b);
	th_clock += 1000;
	rec(a, 'a'); seal(a);
	th_clock += 1000;
	rec(b, 'b'); seal(b);
	/* rm of a's oldest: b's T0+1 is now the store's oldest. */
	si = th_segs(a, &n);
	ck_assert_int_eq(tlog_partition_delete(a, si[0].base), 0);
	free(si);
	tlog_unlink_pending(&th_S->q, 0);
	free_next(b, "after a manual deletion");
	free_next(a, "a's remaining segment");
	tlog_partition_put(b);
}
END_TEST

/* A removed partition leaves the free heap (its reference too: the
 * fixture's close would find it otherwise, under valgrind). */
START_TEST(removed_partition_leaves)
{
	struct tlog_partition *b;
	struct tlog_topic *t;
	struct tlog_seginfo *si;
	size_t n, i;

	keep_free("16K");
	b = th_part(th_S, "b", "0");
	rec(b, 'b'); seal(b);			/* the store's oldest */
	th_clock += 1000;
	rec(th_P, 'a'); seal(th_P);
	si = th_segs(b, &n);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(tlog_partition_delete(b, si[i].base), 0);
	free(si);
	tlog_unlink_pending(&th_S->q, 0);
	t = tlog_partition_topic(b);
	ck_assert(tlog_heap_holds(&b->fheap));
	ck_assert_int_eq(tlog_partition_remove(t, "0"), 0);
	ck_assert(!tlog_heap_holds(&b->fheap));	/* at once, not lazily */
	tlog_partition_put(b);
	free_next(th_P, "after the oldest partition was removed");
}
END_TEST

/*
 * Below the floor a pass frees up to floor + floor / 16, counting what
 * waits to be unlinked as free: a second pass before the unlinks frees
 * nothing more. Between the floor and the target nothing starts.
 */
START_TEST(hysteresis_and_pending)
{
	struct tlog_free_stats st;
	char *data;
	size_t len;
	int i;

	keep_free("16K");
	for (i = 0; i < 12; i++) {
		rec(th_P, 'x');
		seal(th_P);
		th_clock += 1000;
	}
	fake_avail = FLOOR;			/* at the floor: fine */
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	ck_assert_int_eq(st.floor, FLOOR);
	fake_avail = 10000;		/* 7408 short of the target */
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 7);
	ck_assert_uint_eq(st.bytes, 7 * 1200);
	ck_assert_uint_eq(st.target, TARGET);
	/* The unlinks are not done yet: nothing more goes. */
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	ck_assert_uint_eq(st.pending, 7 * 1200);
	tlog_unlink_pending(&th_S->q, 0);
	fake_avail = 10000 + 7 * 1200;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	/* Dropping between floor and target starts nothing. */
	fake_avail = FLOOR + 100;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	ck_assert_uint_eq(th_nsegs(th_P), 5);
	ck_assert_uint_eq(free_events, 7);
	data = th_partition_data(th_S->ev.p, &len);
	ck_assert_ptr_nonnull(strstr(data, "\"rule\":\"free\""));
	free(data);
}
END_TEST

/* A pass counts each partition it took from once, however many it
 * visits: 70 partitions, two segments each, taken in two rounds. */
START_TEST(pass_counts_each_partition_once)
{
	struct tlog_partition *p[70];
	struct tlog_free_stats st;
	char name[16];
	int i, round;

	for (i = 0; i < 70; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		p[i] = th_part(th_S, name, "0");
	}
	for (round = 0; round < 2; round++)
		for (i = 0; i < 70; i++) {
			rec(p[i], 'x');
			seal(p[i]);
			th_clock += 1000;
		}
	keep_free("1M");
	/* Exactly the 140 segments short of the target. */
	fake_avail = 1048576 + 1048576 / 16 - 140 * 1200;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 140);
	ck_assert_uint_eq(st.segments, 140);
	ck_assert_uint_eq(st.partitions, 70);
	for (i = 0; i < 70; i++)
		tlog_partition_put(p[i]);
}
END_TEST

/*
 * A reader holding a deleted segment open keeps its bytes on the disk
 * (the fake disk's free space does not move): they count as coming
 * back, so the next passes delete nothing more for them, and one line
 * says why; once the reader closes they are gone from the count.
 */
START_TEST(bytes_held_by_readers_are_not_chased)
{
	struct tlog_free_stats st;
	struct tlog_seginfo *si;
	struct tlog_segment *seg;
	size_t n;
	int i, fd;

	keep_free("16K");
	for (i = 0; i < 8; i++) {
		rec(th_P, 'x');
		seal(th_P);
		th_clock += 1000;
	}
	si = th_segs(th_P, &n);
	seg = tlog_segment_get(th_P, si[0].base);
	free(si);
	ck_assert_ptr_nonnull(seg);
	fd = tlog_segment_open(seg);
	ck_assert_int_ge(fd, 0);
	fake_avail = FLOOR - 1;		/* one segment short */
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 1);
	tlog_unlink_pending(&th_S->q, 0);
	ck_assert_uint_eq(th_S->ctx.free_held, 1200);
	th_logbuf[0] = '\0';
	/* The disk did not get the bytes back: the reader holds them. */
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
		tlog_unlink_pending(&th_S->q, 0);
	}
	ck_assert_uint_eq(th_nsegs(th_P), 7);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "1200 bytes of deleted "
	    "segments are still open by readers"));
	ck_assert_ptr_null(strstr(strstr(th_logbuf, "still open") + 1,
	    "still open"));
	tlog_segment_close(seg, fd);
	tlog_segment_put(seg);
	ck_assert_uint_eq(th_S->ctx.free_held, 0);
	fake_avail = FLOOR - 1 + 1200;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	ck_assert_uint_eq(th_nsegs(th_P), 7);
}
END_TEST

/*
 * A compressed segment a reader holds keeps its .log.zst on the disk,
 * not its plain bytes: the held count is what the unlinker counted as
 * freed (tlog_seg_disk), so a pass short of the floor by more than that
 * goes on deleting.
 */
START_TEST(held_compressed_segment_counts_its_disk)
{
	struct tlog_free_stats st;
	struct tlog_seginfo *si;
	struct tlog_segment *seg;
	uint64_t z;
	size_t n;
	int fd;

	keep_free("16K");
	th_set(th_S, th_P, "compression.type", "zstd");
	rec(th_P, 'x');
	seal(th_P);
	tlog_store_flush_pending(th_S, 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	si = th_segs(th_P, &n);
	seg = tlog_segment_get(th_P, si[0].base);
	free(si);
	ck_assert_ptr_nonnull(seg);
	z = seg->zbytes;
	ck_assert_uint_gt(z, 0);
	ck_assert_uint_lt(z, 600);
	fd = tlog_segment_open(seg);
	ck_assert_int_ge(fd, 0);
	fake_avail = FLOOR - 1;
	/* It, then on to other partitions (the events' own): it frees
	 * less than a pass's target. */
	ck_assert_int_ge(tlog_reaper_free(th_S, &st), 1);
	ck_assert_uint_eq(th_nsegs(th_P), 0);
	tlog_unlink_pending(&th_S->q, 0);
	ck_assert_uint_eq(th_S->ctx.free_held, z);
	/* A disk with room again (no append waits), then 600 bytes short,
	 * and the reader holds only z of them. */
	fake_avail = 1ULL << 30;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	th_set(th_S, th_P, "compression.type", "none");
	rec(th_P, 'y');
	seal(th_P);
	rec(th_P, 'z');
	seal(th_P);
	fake_avail = FLOOR - 600;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 2);
	ck_assert_uint_eq(st.held, z);
	tlog_segment_close(seg, fd);
	tlog_segment_put(seg);
	ck_assert_uint_eq(th_S->ctx.free_held, 0);
}
END_TEST

/* The pass counts what the disk gets back: 12 compressed segments of
 * 1,200 plain bytes each hold less than 600 bytes each on the disk, so
 * all of them go to make up 7,408 bytes (7 would, counted plain). */
START_TEST(pass_counts_compressed_segments_on_disk)
{
	struct tlog_free_stats st;
	int i;

	keep_free("16K");
	th_set(th_S, th_P, "compression.type", "zstd");
	for (i = 0; i < 12; i++) {
		rec(th_P, 'x');
		seal(th_P);
		th_clock += 1000;
	}
	tlog_store_flush_pending(th_S, 0);
	while (tlog_store_compress_pending(th_S, 0) > 0)
		;
	ck_assert_uint_eq(th_nsegs(th_P), 12);
	fake_avail = 10000;		/* 7408 short of the target */
	/* All of them, then on to other partitions (the events' own). */
	ck_assert_int_ge(tlog_reaper_free(th_S, &st), 12);
	ck_assert_uint_eq(th_nsegs(th_P), 0);
}
END_TEST

/* A percentage is of the file system's size; off frees nothing. */
START_TEST(percent_and_off)
{
	struct tlog_free_stats st;

	rec(th_P, 'x');
	seal(th_P);
	fake_avail = 0;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	ck_assert_int_eq(st.floor, -1);
	keep_free("10%");
	fake_avail = (1ULL << 30) / 100 * 10;
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
	ck_assert_int_eq(st.floor, (int64_t)((1ULL << 30) / 100 * 10));
	fake_avail--;
	/* 6.7 MB short: all there is goes, th_P's segment first. */
	ck_assert_int_gt(tlog_reaper_free(th_S, &st), 0);
	ck_assert_uint_eq(th_nsegs(th_P), 0);
}
END_TEST

/* ---- ENOSPC on the append path: the write goes to /dev/full ---- */

static struct tlog_partition *full_p;	/* whose next write fails */
static int full_saved = -1, full_fd = -1;
static unsigned full_writes;
static bool pass_at_check;	/* a free-space pass inside the next check */

static void
full_hook(void *arg, int point, struct tlog_partition *p)
{
	struct tlog_segment *seg;
	int fd;

	(void)arg;
	if (point == TLOG_HOOK_FREE_SHORT && pass_at_check) {
		/* What a pass publishes, from the disk as it is now. */
		struct tlog_ctx *c = &th_S->ctx;
		uint64_t a = __atomic_load_n(&c->free_appended,
		    __ATOMIC_RELAXED), avail, size;

		pass_at_check = false;
		sim_free(NULL, &avail, &size);
		tlog_free_budget(tlog_part_sched_arg(th_P), FLOOR, avail, a,
		    __atomic_load_n(&c->free_unlinked, __ATOMIC_RELAXED));
		return;
	}
	if (point != TLOG_HOOK_WRITE || p != full_p)
		return;
	seg = tlog_part_active(p);
	full_writes++;
	if (full_saved == -1) {
		full_saved = dup(seg->live->fd);
		fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(dup2(fd, seg->live->fd), seg->live->fd);
		close(fd);
		full_fd = seg->live->fd;
	} else if (full_fd != -1) {
		/* the retry: the disk has room again */
		ck_assert_int_eq(dup2(full_saved, full_fd), full_fd);
		close(full_saved);
		full_fd = -1;
	}
}

static void
full_setup(void)
{
	struct tlog_store_opts o;

	fake_disk(&o);
	o.hook = full_hook;
	full_p = NULL;
	full_saved = full_fd = -1;
	full_writes = 0;
	pass_at_check = false;
	th_open_tp(&o);
}

static void
full_teardown(void)
{
	if (full_fd != -1) {
		dup2(full_saved, full_fd);
		close(full_saved);
	}
	full_p = NULL;
}

START_TEST(enospc_reclaims_and_retries)
{
	struct tlog_partition *b = th_part(th_S, "b", "0");
	char rec2[] = "one\ntwo\n", *data;
	size_t len;
	int err;

	keep_free("16K");
	rec(b, 'b'); seal(b);			/* the store's oldest */
	th_clock += 1000;
	rec(th_P, 'a');
	fake_avail = FLOOR - 1;	/* the tick has not run yet: the append
				   finds out first */
	full_p = th_P;
	ck_assert_uint_eq(tlog_part_append(th_P, rec2, strlen(rec2), true,
	    &err), strlen(rec2));
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(full_writes, 2);	/* refused, then retried */
	ck_assert_uint_eq(th_nsegs(b), 0);	/* b's segment went */
	ck_assert_uint_eq(free_events, 1);	/* unlinked on the spot */
	ck_assert_uint_eq(th_S->q.pending_bytes, 0);
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 1200 + strlen(rec2));
	ck_assert(memcmp(data + 1200, rec2, strlen(rec2)) == 0);
	free(data);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "hit ENOSPC"));
	tlog_partition_put(b);
}
END_TEST

START_TEST(enospc_without_keep_free)
{
	struct tlog_partition *b = th_part(th_S, "b", "0");
	char rec2[] = "one\n", *data;
	size_t len;
	int err;

	rec(b, 'b'); seal(b);
	rec(th_P, 'a');
	full_p = th_P;
	ck_assert_uint_eq(tlog_part_append(th_P, rec2, strlen(rec2), true,
	    &err), 0);
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_eq(full_writes, 1);
	ck_assert_uint_eq(th_nsegs(b), 1);	/* nothing deleted */
	ck_assert_uint_eq(free_events, 0);
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 1200);		/* no half record */
	free(data);
	tlog_partition_put(b);
}
END_TEST

/* ---- back-pressure, on a disk that fills and empties ---- */

/* Free space on the simulated disk: what it had when the store opened,
 * less what was appended, plus what was unlinked since. */
static uint64_t sim_start;
static bool unlinker_stop;

static int
sim_free(void *arg, uint64_t *avail, uint64_t *size)
{
	struct tlog_ctx *c = &th_S->ctx;

	(void)arg;
	*avail = sim_start - __atomic_load_n(&c->free_appended,
	    __ATOMIC_RELAXED) + __atomic_load_n(&c->free_unlinked,
	    __ATOMIC_RELAXED);
	*size = 1ULL << 30;
	return 0;
}

/* Bytes in the events partition, which never waits: its records (the
 * deletions' own events) may go below the floor. */
static uint64_t
events_bytes(void)
{
	struct tlog_partition *ev = tlog_store_events(th_S);
	struct tlog_part_stats st;

	ck_assert_ptr_nonnull(ev);
	tlog_partition_stats(ev, &st);
	tlog_partition_put(ev);
	return st.bytes;
}

static uint64_t sim_events;	/* events_bytes() at sim_begin */

/* Free space on the simulated disk, the events written since sim_begin
 * not counted. */
static uint64_t
sim_avail(void)
{
	uint64_t a, s;

	sim_free(NULL, &a, &s);
	return a + (events_bytes() - sim_events);
}

/* From now on the disk has room bytes above the floor; retention.keep.free
 * is set and a check of free space sets the appends' budget. */
static void
sim_begin(uint64_t room)
{
	struct tlog_free_stats st;

	sim_start = (uint64_t)FLOOR + room + __atomic_load_n(
	    &th_S->ctx.free_appended, __ATOMIC_RELAXED);
	sim = true;
	sim_events = events_bytes();
	unlinker_stop = false;
	keep_free("16K");
	ck_assert_int_eq(tlog_reaper_free(th_S, &st), 0);
}

/* The front end's unlinker thread, as the daemon runs it. */
static void *
unlinker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&unlinker_stop, __ATOMIC_ACQUIRE)) {
		tlog_store_unlink_wait(th_S, 20);
		tlog_unlink_pending(&th_S->q, 0);
	}
	return NULL;
}

/* Three sealed segments of b, the store's oldest, and th_P's segment
 * made; then the disk has room bytes above the floor and the unlinker
 * runs in *t. */
static void
oldest_then_room(struct tlog_partition *b, uint64_t room, pthread_t *t)
{
	int i;

	for (i = 0; i < 3; i++) {
		rec(b, 'b'); seal(b);
	}
	th_clock += 1000;
	rec(th_P, 'a');		/* its segment's files made before */
	sim_begin(room);
	ck_assert_int_eq(pthread_create(t, NULL, unlinker, NULL), 0);
}

/*
 * Room for two records above the floor: the third waits while the
 * oldest segments go and their space comes back, and lands with free
 * space still above the floor. Without the wait it would take the disk
 * below the floor with nothing deleted.
 */
START_TEST(appends_wait_for_unlinks)
{
	struct tlog_partition *b = th_part(th_S, "b", "0");
	pthread_t t;

	oldest_then_room(b, 2500, &t);
	rec(th_P, 'a');
	rec(th_P, 'a');
	ck_assert_uint_eq(th_S->ctx.metrics.free_waits, 0);
	ck_assert_uint_eq(free_events, 0);
	rec(th_P, 'a');			/* 1200 bytes, 100 of room */
	__atomic_store_n(&unlinker_stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ck_assert_msg(sim_avail() >= FLOOR, "free space %" PRIu64 " below "
	    "the floor %d", sim_avail(), FLOOR);
	ck_assert_uint_eq(th_S->ctx.metrics.free_waits, 1);
	ck_assert_uint_ge(free_events, 1);
	ck_assert_uint_lt(th_nsegs(b), 3);
	ck_assert_uint_eq(th_S->ctx.free_inflight, 0);
	tlog_partition_put(b);
}
END_TEST

/* Nothing left to delete: the append does not wait for space that will
 * never come (the disk fills as it would without the key). */
START_TEST(appends_do_not_wait_for_nothing)
{
	char *data;
	size_t len;

	sim_begin(100);
	rec(th_P, 'a');			/* no unlinker runs: none needed */
	ck_assert_uint_eq(th_S->ctx.metrics.free_waits, 1);
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 1200);
	free(data);
}
END_TEST

/* An unlinker that never unlinks holds an append up for FREE_WAIT_MS at
 * most, then it is written. */
START_TEST(appends_wait_bounded)
{
	struct tlog_partition *b = th_part(th_S, "b", "0");
	char *data;
	size_t len;

	rec(b, 'b'); seal(b);
	rec(b, 'b'); seal(b);
	th_clock += 1000;
	sim_begin(100);
	rec(th_P, 'a');
	ck_assert_uint_eq(th_S->ctx.metrics.free_waits, 1);
	ck_assert_uint_gt(th_S->q.pending_bytes, 0);	/* never unlinked */
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 1200);
	free(data);
	tlog_partition_put(b);
}
END_TEST

/*
 * A pass that lands while an append checks the budget: the append
 * judges by one pass's budget, whichever, never by a mix. Room for
 * 2000 bytes; 1200 appended; a pass (which finds 800 left) publishes
 * its budget between the check's reads; the next 1200 must wait for
 * the oldest segments to go. Judged by the
 * first pass's room and the second pass's counts, it would see 1200
 * used of 2000 and go ahead.
 */
START_TEST(budget_read_whole_across_a_pass)
{
	struct tlog_partition *b = th_part(th_S, "b", "0");
	pthread_t t;
	char *data;
	size_t len;

	oldest_then_room(b, 2000, &t);
	rec(th_P, 'a');
	ck_assert_uint_eq(th_S->ctx.metrics.free_waits, 0);
	pass_at_check = true;
	rec(th_P, 'a');
	__atomic_store_n(&unlinker_stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ck_assert(!pass_at_check);
	ck_assert_msg(sim_avail() >= FLOOR, "free space %" PRIu64 " below "
	    "the floor %d", sim_avail(), FLOOR);
	ck_assert_uint_eq(th_S->ctx.metrics.free_waits, 1);
	data = th_partition_data(th_P, &len);
	ck_assert_uint_eq(len, 3 * 1200);
	free(data);
	tlog_partition_put(b);
}
END_TEST

/* The metrics say how much is free and where the floor is, so that an
 * alert can fire before the floor is reached (contrib/monitoring). */
START_TEST(metrics_show_free_space_and_the_floor)
{
	char *m;
	size_t len;

	fake_avail = 123456789;
	ck_assert_int_eq(tlog_metrics_format(th_S, &m, &len), 0);
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_free_bytes 123456789\n"));
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_keep_free_bytes 0\n"));
	free(m);
	keep_free("10%");
	ck_assert_int_eq(tlog_metrics_format(th_S, &m, &len), 0);
	ck_assert_ptr_nonnull(strstr(m, "tlogfs_keep_free_bytes 107374180\n"));
	free(m);
}
END_TEST

int
main(void)
{
	Suite *su = suite_create("free");

	th_hooks(setup, NULL);
	th_case(su, "metrics_show_free_space_and_the_floor",
	    metrics_show_free_space_and_the_floor);
	th_case(su, "oldest_first_across_partitions",
	    oldest_first_across_partitions);
	th_case(su, "order_after_other_deletions", order_after_other_deletions);
	th_case(su, "removed_partition_leaves", removed_partition_leaves);
	th_case(su, "hysteresis_and_pending", hysteresis_and_pending);
	th_case(su, "pass_counts_each_partition_once",
	    pass_counts_each_partition_once);
	th_case(su, "percent_and_off", percent_and_off);
	th_case(su, "bytes_held_by_readers_are_not_chased",
	    bytes_held_by_readers_are_not_chased);
	th_case(su, "held_compressed_segment_counts_its_disk",
	    held_compressed_segment_counts_its_disk);
	th_case(su, "pass_counts_compressed_segments_on_disk",
	    pass_counts_compressed_segments_on_disk);
	th_hooks(full_setup, full_teardown);
	th_case(su, "enospc_reclaims_and_retries", enospc_reclaims_and_retries);
	th_case(su, "enospc_without_keep_free", enospc_without_keep_free);
	th_case(su, "appends_wait_for_unlinks", appends_wait_for_unlinks);
	th_case(su, "appends_do_not_wait_for_nothing",
	    appends_do_not_wait_for_nothing);
	th_case(su, "appends_wait_bounded", appends_wait_bounded);
	th_case(su, "budget_read_whole_across_a_pass",
	    budget_read_whole_across_a_pass);
	return th_run(su);
}
