/*
 * events.h - the store's internal events partition, .tlogfs/events: one
 * JSON line per seal and per deletion (doc/design.md §7).
 *
 * It is an ordinary partition of a hidden topic named ".tlogfs" (so it
 * lives in STORE/.tlogfs/events and expires by the same rules), kept out
 * of the registry's tree so no listing shows it. Events about its own
 * segments are not recorded, so recording can never recurse.
 */
#ifndef TLOG_EVENTS_H
#define TLOG_EVENTS_H

#include "recover.h"
#include "registry.h"

struct tlog_events {
	struct tlog_topic *topic;	/* ".tlogfs", in no tree */
	struct tlog_partition *p;	/* NULL until opened */
};

/* Makes (unless read-only) and loads STORE/.tlogfs/events. */
int tlog_events_open(struct tlog_events *e, struct tlog_registry *reg,
    struct tlog_recovery *rc);
/* Releases the partition and its topic (store teardown). */
void tlog_events_close(struct tlog_events *e);
/* Appends ev (about p, names filled in) as one line; nothing if p is the
 * events partition itself. */
void tlog_events_record(struct tlog_events *e, struct tlog_partition *p,
    const struct tlog_event *ev);

#endif /* TLOG_EVENTS_H */
