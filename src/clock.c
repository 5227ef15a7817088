/*
 * clock.c - engine time (doc/engine.md, "The clock"): the wall clock
 * (CLOCK_REALTIME) and real elapsed time (CLOCK_BOOTTIME, which counts
 * suspend), or the clocks a test injects. Engine time follows elapsed
 * time from an anchor; a step of the wall clock re-anchors it, so it
 * never jumps, and while the wall clock is behind it runs at half speed
 * until the wall clock catches up.
 */
#include "config.h"

#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <syslog.h>
#include <time.h>

#include "clock.h"

#define CLOCK_STEP_MS 1000	/* a wall clock change larger is a step */

static int64_t
sys_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
wall_ms(struct tlog_clock *c)
{
	if (c->wall != NULL)
		return c->wall(c->arg);
	return sys_ms(CLOCK_REALTIME);
}

/* Real elapsed time, suspend included. A test that injects only the
 * wall clock gets it here too, so its clock moves engine time as it
 * always did. */
static int64_t
boot_ms(struct tlog_clock *c)
{
	if (c->boot != NULL)
		return c->boot(c->arg);
	if (c->wall != NULL)
		return c->wall(c->arg);
	return sys_ms(CLOCK_BOOTTIME);
}

/* The state a read needs, copied out of struct tlog_clock. */
struct piece {
	int64_t e0;
	int64_t m0;
	int64_t m1;
	int64_t off;
};

/*
 * The seqlock's read side (clock.h). No fences (ThreadSanitizer does not
 * know them): the piece is stored with release and loaded with acquire,
 * so a load that sees a new value makes the second load of seq see it
 * odd or past.
 */
static unsigned
piece_begin(struct tlog_clock *c, struct piece *pc)
{
	unsigned s = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);

	pc->e0 = __atomic_load_n(&c->e0, __ATOMIC_ACQUIRE);
	pc->m0 = __atomic_load_n(&c->m0, __ATOMIC_ACQUIRE);
	pc->m1 = __atomic_load_n(&c->m1, __ATOMIC_ACQUIRE);
	pc->off = __atomic_load_n(&c->off, __ATOMIC_ACQUIRE);
	return s;
}

static bool
piece_unchanged(struct tlog_clock *c, unsigned s)
{
	return (s & 1) == 0 && __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE) == s;
}

/* Engine time at boot time m: half speed until m1, then full. */
static int64_t
engine_at(const struct piece *pc, int64_t m)
{
	if (m < pc->m1)
		return pc->e0 + (m - pc->m0) / 2;
	return pc->e0 + (pc->m1 - pc->m0) / 2 + (m - pc->m1);
}

/*
 * Claims the right to anchor: moves seq from s (even, as a read saw it)
 * to s + 1. Fails if another anchor ran or runs since, so at most one
 * anchor writes the piece at a time; the count is the writers' only
 * lock.
 */
static bool
claim(struct tlog_clock *c, unsigned s)
{
	return (s & 1) == 0 && __atomic_compare_exchange_n(&c->seq, &s, s + 1,
	    false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/*
 * A new piece of engine time from e (at wall w, boot m): full speed,
 * unless the wall clock is more than a step behind, then half speed
 * until it catches up (after 2 * (e - w) of real time). Returns that
 * slow stretch, 0 if none. The caller claimed seq (odd); the new piece
 * is published by making it even again.
 */
static int64_t
anchor_claimed(struct tlog_clock *c, int64_t e, int64_t w, int64_t m)
{
	unsigned s = __atomic_load_n(&c->seq, __ATOMIC_RELAXED);
	int64_t m1 = e - w > CLOCK_STEP_MS ? m + 2 * (e - w) : m;

	__atomic_store_n(&c->e0, e, __ATOMIC_RELEASE);
	__atomic_store_n(&c->m0, m, __ATOMIC_RELEASE);
	__atomic_store_n(&c->off, w - m, __ATOMIC_RELEASE);
	__atomic_store_n(&c->m1, m1, __ATOMIC_RELEASE);
	__atomic_store_n(&c->seq, s + 1, __ATOMIC_RELEASE);
	return m1 - m;
}

void
tlog_clock_init(struct tlog_clock *c, int64_t (*wall)(void *),
    int64_t (*boot)(void *), void *arg, const struct tlog_sink *log)
{
	*c = (struct tlog_clock){ .wall = wall, .boot = boot, .arg = arg,
	    .log = log };
	tlog_clock_anchor(c, -1);
}

void
tlog_clock_anchor(struct tlog_clock *c, int64_t newest)
{
	int64_t w, m, e, slow;

	/* Only an open anchors so, before any read: the claim waits
	 * for nobody but a read that saw a step, a few stores long. */
	while (!claim(c, __atomic_load_n(&c->seq, __ATOMIC_RELAXED)))
		sched_yield();
	w = wall_ms(c);
	m = boot_ms(c);
	e = newest > w ? newest : w;
	__atomic_store_n(&c->lag, 0, __ATOMIC_RELEASE);
	slow = anchor_claimed(c, e, w, m);
	if (slow > 0)
		tlog_sink_log(c->log, LOG_WARNING, "clock: the newest stored timestamp "
		    "is %" PRId64 " ms ahead of the wall clock: engine time "
		    "runs at half speed for %" PRId64 " s, until the wall "
		    "clock catches up", e - w, slow / 1000);
}

/* Engine time e at wall w and boot m from the piece pc; the wall clock's
 * distance to boot time against the piece's (a step if large). */
static int64_t
read_piece(struct tlog_clock *c, struct piece *pc, int64_t *w,
    int64_t *m, int64_t *e)
{
	*w = wall_ms(c);
	*m = boot_ms(c);
	*e = engine_at(pc, *m);
	return (*w - *m) - pc->off;
}

/*
 * With seq claimed (no anchor can run): reads again and, at a step of
 * the wall clock, starts a new piece from the current engine time, so
 * engine time never jumps, and tells the step once the piece is
 * published; else gives the claim back. A forward step that takes the
 * wall clock from behind engine time to past it ends a catch-up: the
 * wall clock was the one wrong (booted behind and set right by NTP, or a
 * backward glitch corrected), and engine time follows it, or what is
 * stamped until the next restart would be stamped that much too old, and
 * go that much early after it; deletion time does not follow (c->lag).
 * *e and *w are the read.
 */
static void
take_step(struct tlog_clock *c, int64_t *e, int64_t *w)
{
	struct piece pc;
	int64_t m, step, slow;
	const char *dir;
	bool follow;

	(void)piece_begin(c, &pc);
	step = read_piece(c, &pc, w, &m, e);
	if (imaxabs(step) <= CLOCK_STEP_MS) {
		__atomic_add_fetch(&c->seq, 1, __ATOMIC_RELEASE);
		return;
	}
	follow = step > 0 && m + pc.off < *e && *w > *e;
	if (follow) {
		__atomic_add_fetch(&c->lag, *w - *e, __ATOMIC_RELEASE);
		*e = *w;
	}
	slow = anchor_claimed(c, *e, *w, m);
	__atomic_add_fetch(&c->steps, 1, __ATOMIC_RELEASE);
	dir = step > 0 ? "forward" : "back";
	if (follow)
		tlog_sink_log(c->log, LOG_WARNING, "clock: the wall clock "
		    "stepped forward by %" PRId64 " ms, past engine time, "
		    "which was ahead of it: engine time follows it", step);
	else if (slow > 0)
		tlog_sink_log(c->log, LOG_WARNING, "clock: the wall clock "
		    "stepped %s by %" PRId64 " ms and is %" PRId64 " ms "
		    "behind engine time: engine time runs at half speed for "
		    "%" PRId64 " s, until it catches up", dir, imaxabs(step),
		    *e - *w, slow / 1000);
	else
		tlog_sink_log(c->log, LOG_WARNING, "clock: the wall clock "
		    "stepped %s by %" PRId64 " ms: engine time keeps to "
		    "elapsed time, %" PRId64 " ms behind the wall clock until "
		    "a restart", dir, imaxabs(step), *w - *e);
}

/*
 * Engine time, and the wall clock read with it. Every append reads the
 * clock, without a lock. A read that sees a step claims seq and takes the
 * step; one that overlapped an anchor, or lost the claim to another
 * read's, reads again from the new piece.
 */
static int64_t
clock_read(struct tlog_clock *c, int64_t *wallp)
{
	struct piece pc;
	int64_t w, m, e, step;
	unsigned s;

	for (;;) {
		s = piece_begin(c, &pc);
		step = read_piece(c, &pc, &w, &m, &e);
		if (!piece_unchanged(c, s)) {
			sched_yield();
			continue;
		}
		if (imaxabs(step) <= CLOCK_STEP_MS)
			break;
		if (claim(c, s)) {
			take_step(c, &e, &w);
			break;
		}
	}
	if (wallp != NULL)
		*wallp = w;
	return e;
}

int64_t
tlog_clock_now(struct tlog_clock *c)
{
	if (c == NULL)
		return sys_ms(CLOCK_REALTIME);
	return clock_read(c, NULL);
}

/*
 * Deletion time: the earlier of the wall clock and engine time less the
 * forward steps it followed (lag). A time rule deletes by it, so that no
 * clock's fault deletes early: stamps ahead of the wall clock (the
 * anchor at open took them) are judged by the wall clock, a wall clock
 * that stepped forward by engine time, and a forward step engine time
 * followed (taken for a correction, which it may not be) moves deletion
 * time no more than real time.
 */
int64_t
tlog_clock_del_now(struct tlog_clock *c)
{
	int64_t w, e;

	e = clock_read(c, &w) - __atomic_load_n(&c->lag, __ATOMIC_ACQUIRE);
	return w < e ? w : e;
}

/*
 * The engine time at which deletion time reaches x (-1 for -1), were no
 * clock to step from now on: x itself unless the wall clock is still
 * short of x; then engine time when the wall clock reads x, which during
 * a catch-up at half speed is earlier than x + today's gap. A step
 * afterwards only makes it early, and the reaper then finds nothing due
 * and asks again.
 */
int64_t
tlog_clock_del_due(struct tlog_clock *c, int64_t x)
{
	struct piece pc;
	int64_t w, at, lag;
	unsigned s;

	/* Past INT64_MAX / 4 (a forged stamp): never, as it stands. */
	if (x < 0 || x > INT64_MAX / 4)
		return x;
	do {
		s = piece_begin(c, &pc);
		(void)clock_read(c, &w);
		lag = __atomic_load_n(&c->lag, __ATOMIC_ACQUIRE);
	} while (!piece_unchanged(c, s));
	if (w >= x)
		return x + lag;
	/* The wall clock reads x at boot time x - off. At half speed,
	 * engine time shows that value a ms before too (it counts whole
	 * ms): one more, so that the reaper never wakes to find the wall
	 * clock a ms short and goes round again at once. */
	at = engine_at(&pc, x - pc.off);
	return at > x + lag ? at + 1 : x + lag;
}

unsigned
tlog_clock_steps(struct tlog_clock *c)
{
	return __atomic_load_n(&c->steps, __ATOMIC_ACQUIRE);
}

int64_t
tlog_clock_offset(struct tlog_clock *c)
{
	int64_t w, e = clock_read(c, &w);

	return w - e;
}
