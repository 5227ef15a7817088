/*
 * clock.c - engine time (doc/engine.md, "The clock"): the wall clock
 * (CLOCK_REALTIME) and real elapsed time (CLOCK_BOOTTIME, which counts
 * suspend), or the clocks a test injects. Engine time follows elapsed
 * time from an anchor; a step of the wall clock re-anchors it, so it
 * never jumps, and while the wall clock is behind it runs at half speed
 * until the wall clock catches up. The only reads of system clocks for
 * time of day are here.
 */
#include "config.h"

#include <inttypes.h>
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

/* Engine time at boot time m: half speed until m1, then full. */
static int64_t
engine_at(const struct tlog_clock *c, int64_t m)
{
	if (m < c->m1)
		return c->e0 + (m - c->m0) / 2;
	return c->e0 + (c->m1 - c->m0) / 2 + (m - c->m1);
}

/*
 * A new piece of engine time from e (at wall w, boot m): full speed,
 * unless the wall clock is more than a step behind, then half speed
 * until it catches up (after 2 * (e - w) of real time). Returns that
 * slow stretch, 0 if none. c->lock held.
 */
static int64_t
anchor_locked(struct tlog_clock *c, int64_t e, int64_t w, int64_t m)
{
	c->e0 = e;
	c->m0 = m;
	c->off = w - m;
	c->m1 = e - w > CLOCK_STEP_MS ? m + 2 * (e - w) : m;
	return c->m1 - m;
}

void
tlog_clock_init(struct tlog_clock *c, int64_t (*wall)(void *),
    int64_t (*boot)(void *), void *arg, const struct tlog_sink *log)
{
	c->wall = wall;
	c->boot = boot;
	c->arg = arg;
	c->log = log;
	pthread_mutex_init(&c->lock, NULL);
	tlog_clock_anchor(c, -1);
}

void
tlog_clock_destroy(struct tlog_clock *c)
{
	pthread_mutex_destroy(&c->lock);
}

void
tlog_clock_anchor(struct tlog_clock *c, int64_t newest)
{
	int64_t w, m, e, slow;

	pthread_mutex_lock(&c->lock);
	w = wall_ms(c);
	m = boot_ms(c);
	e = newest > w ? newest : w;
	slow = anchor_locked(c, e, w, m);
	pthread_mutex_unlock(&c->lock);
	if (slow > 0)
		tlog_sink_log(c->log, LOG_WARNING, "clock: the newest stored timestamp "
		    "is %" PRId64 " ms ahead of the wall clock: engine time "
		    "runs at half speed for %" PRId64 " s, until the wall "
		    "clock catches up", e - w, slow / 1000);
}

/*
 * Engine time, and the wall clock read with it. A step of the wall clock
 * (its distance to boot time changed by more than CLOCK_STEP_MS) starts a
 * new piece from the current engine time, so engine time never jumps.
 */
static int64_t
clock_read(struct tlog_clock *c, int64_t *wallp)
{
	int64_t w, m, e, step, slow = 0;
	bool stepped = false;

	pthread_mutex_lock(&c->lock);
	w = wall_ms(c);
	m = boot_ms(c);
	e = engine_at(c, m);
	step = (w - m) - c->off;
	if (step > CLOCK_STEP_MS || step < -CLOCK_STEP_MS) {
		slow = anchor_locked(c, e, w, m);
		stepped = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (stepped && slow > 0)
		tlog_sink_log(c->log, LOG_WARNING, "clock: the wall clock stepped %s by "
		    "%" PRId64 " ms and is %" PRId64 " ms behind engine time: "
		    "engine time runs at half speed for %" PRId64 " s, until "
		    "it catches up", step > 0 ? "forward" : "back",
		    step > 0 ? step : -step, e - w, slow / 1000);
	else if (stepped)
		tlog_sink_log(c->log, LOG_WARNING, "clock: the wall clock stepped %s by "
		    "%" PRId64 " ms: engine time keeps to elapsed time, %"
		    PRId64 " ms behind the wall clock until a restart",
		    step > 0 ? "forward" : "back", step > 0 ? step : -step,
		    w - e);
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

int64_t
tlog_clock_offset(struct tlog_clock *c)
{
	int64_t w, e = clock_read(c, &w);

	return w - e;
}
