/*
 * events.c - observability: the internal partition .tlogfs/events, one
 * JSON line per seal and per deletion, and the Prometheus text behind
 * .tlogfs/metrics.
 *
 * The events partition is an ordinary partition of a hidden topic named
 * ".tlogfs" (so it lives in STORE/.tlogfs/events and expires by the same
 * rules), kept out of the topic tree so no listing shows it. Events about
 * its own segments are not recorded, so recording can never recurse.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "tlog_int.h"

int
tlog_events_open(struct tlog_store *s)
{
	struct tlog_topic *t;
	struct tlog_partition *p;
	int fd;

	if (s->ctx.ro)
		;	/* made at the first read-write open; none: empty */
	else if (mkdirat(s->tree.dirfd, ".tlogfs/events", 0755) == 0)
		tlog_fsync_dir(s->tree.dirfd, ".tlogfs");
	else if (errno != EEXIST)
		return -errno;
	if ((t = tlog_topic_alloc(s, ".tlogfs")) == NULL)
		return -ENOMEM;
	if ((p = tlog_part_alloc(t, "events")) == NULL) {
		tlog_topic_put(t);
		return -ENOMEM;
	}
	fd = tlog_open_beneath(s->tree.dirfd, ".tlogfs/events",
	    O_RDONLY | O_DIRECTORY, 0);
	if (fd == -ENOENT && s->ctx.ro)
		goto out;
	if (fd < 0) {
		tlog_partition_put(p);
		tlog_topic_put(t);
		return fd;
	}
	tlog_level_set_dir(&p->lv, fd);
	tlog_conf_load(&s->ctx, fd, ".config", &p->lv.conf);
	close(fd);
	tlog_part_recover(p);
out:
	s->itopic = t;
	s->events = p;
	return 0;
}

struct tlog_partition *
tlog_store_events(struct tlog_store *s)
{
	if (s->events != NULL)
		tlog_part_ref(s->events);
	return s->events;
}

void
tlog_events_record(struct tlog_store *s, struct tlog_partition *p,
    const struct tlog_event *ev)
{
	char line[1024];
	int n, r;

	if (s->events == NULL || p == s->events)
		return;
	n = snprintf(line, sizeof(line),
	    "{\"ts\":%" PRId64 ",\"event\":\"%s\",\"topic\":\"%s\","
	    "\"partition\":\"%s\",\"segment\":\"%020" PRIu64 "\","
	    "\"base\":%" PRIu64 ",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
	    ",\"first_ts\":%" PRId64 ",\"max_ts\":%" PRId64 ",\"%s\":\"%s\"}\n",
	    ev->ts, ev->kind == TLOG_EV_SEAL ? "seal" : "delete", ev->topic,
	    ev->partition, ev->base, ev->base, ev->records, ev->bytes,
	    ev->first_ts, ev->max_ts,
	    ev->kind == TLOG_EV_SEAL ? "trigger" : "rule",
	    ev->kind == TLOG_EV_SEAL ? tlog_trigger_name(ev->trigger) :
	    tlog_rule_name(ev->rule));
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	tlog_part_append(s->events, line, (size_t)n, true, &r);
	if (r != 0)
		tlog_ctx_log_err(&s->ctx, "cannot record an event in .tlogfs/events: "
		    "%s", strerror(-r));
}
