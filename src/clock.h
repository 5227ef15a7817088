/*
 * clock.h - engine time (doc/engine.md, "The clock"): a store's one clock,
 * made of the wall clock and real elapsed time. clock.c holds the only
 * reads of the system clocks.
 */
#ifndef TLOG_CLOCK_H
#define TLOG_CLOCK_H

#include <stdint.h>

#include "util.h"

struct tlog_clock {
	int64_t (*wall)(void *arg);	/* NULL: CLOCK_REALTIME */
	int64_t (*boot)(void *arg);	/* NULL: CLOCK_BOOTTIME, or wall if
					   that one is injected */
	void *arg;
	const struct tlog_sink *log;	/* where a step is told */
	/*
	 * A seqlock, no lock (clock.c): seq is odd while an anchor, which
	 * claims it by a CAS from even to odd, writes e0..off and lag;
	 * it is made even by a release store after them. Readers copy
	 * e0..off with acquire loads between two acquire loads of seq and
	 * retry unless both saw the same even value.
	 */
	unsigned seq;
	int64_t e0;			/* engine time at boot time m0 */
	int64_t m0;
	int64_t m1;			/* half speed until this boot time */
	int64_t off;			/* wall - boot at the last anchor */
	/* Wall clock steps seen so far: a counter, incremented (release)
	 * after the new e0..off are published, so a reader that sees a new
	 * count (acquire) reads the new ones. */
	unsigned steps;
	/* What the forward steps engine time followed since the open
	 * added: deletion time does not follow them. Changed under the
	 * claim (release); read alone by del_now, where an older e0..off
	 * with a newer lag only makes deletion time earlier (later
	 * deletion). */
	int64_t lag;
};

/* Takes the clocks (either may be NULL) and anchors at the wall clock. */
void tlog_clock_init(struct tlog_clock *c, int64_t (*wall)(void *),
    int64_t (*boot)(void *), void *arg, const struct tlog_sink *log);
/* Anchors engine time at max(wall clock, newest), newest being the
 * newest timestamp the store holds (-1: none). */
void tlog_clock_anchor(struct tlog_clock *c, int64_t newest);
/* Engine time in ms since the epoch; the wall clock if c is NULL. */
int64_t tlog_clock_now(struct tlog_clock *c);
/* Deletion time (clock.c): min(engine time, wall clock), by which the
 * time rules delete. */
int64_t tlog_clock_del_now(struct tlog_clock *c);
/* The engine time at which deletion time reaches x: a time rule's due
 * time for the reaper, whose schedule runs on engine time. */
int64_t tlog_clock_del_due(struct tlog_clock *c, int64_t x);
/* How many steps of the wall clock engine time has seen: a change tells
 * the reaper that due times computed before may be late (clock.c). */
unsigned tlog_clock_steps(struct tlog_clock *c);
/* The wall clock minus engine time, in ms. */
int64_t tlog_clock_offset(struct tlog_clock *c);

#endif /* TLOG_CLOCK_H */
