/*
 * events.c - the internal events partition, .tlogfs/events (events.h):
 * one JSON line per seal and per deletion.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events.h"

int
tlog_events_open(struct tlog_events *e, struct tlog_registry *reg,
    struct tlog_recovery *rc)
{
	struct tlog_ctx *ctx = reg->penv->ctx;
	int dirfd = reg->root->tree->dirfd;
	struct tlog_partition *p;
	int fd;

	if (ctx->ro)
		;	/* made at the first read-write open; none: empty */
	else if (mkdirat(dirfd, ".tlogfs/events", 0755) == 0)
		tlog_fsync_dir(dirfd, ".tlogfs");
	else if (errno != EEXIST)
		return -errno;
	if ((e->topic = tlog_topic_alloc(reg, ".tlogfs")) == NULL)
		return -ENOMEM;
	if ((p = e->p = tlog_part_alloc(&e->topic->lv, "events",
	    reg->penv)) == NULL) {
		tlog_events_close(e);
		return -ENOMEM;
	}
	p->quiet = true;
	fd = tlog_open_beneath(dirfd, ".tlogfs/events", O_RDONLY | O_DIRECTORY);
	if (fd == -ENOENT && ctx->ro)
		return 0;
	if (fd < 0) {
		tlog_events_close(e);
		return fd;
	}
	tlog_level_set_dir(&p->lv, fd);
	tlog_level_load_conf(&p->lv, ctx, fd, ".tlogfs/events", ".config");
	close(fd);
	tlog_part_recover(p, rc);
	return 0;
}

void
tlog_events_close(struct tlog_events *e)
{
	if (e->p != NULL) {
		tlog_part_release(e->p);
		e->p = NULL;
	}
	tlog_topic_put(e->topic);
	e->topic = NULL;
}

void
tlog_events_record(struct tlog_events *e, struct tlog_partition *p,
    const struct tlog_event *ev)
{
	char line[1024];
	int n, r;

	if (e->p == NULL || p == e->p)
		return;
	if (ev->kind == TLOG_EV_PART_DELETE)
		n = snprintf(line, sizeof(line), "{\"ts\":%" PRId64
		    ",\"event\":\"partition_deleted\",\"topic\":\"%s\","
		    "\"partition\":\"%s\",\"last_write_ts\":%" PRId64
		    ",\"rule\":\"cleanup\"}\n", ev->ts, ev->topic,
		    ev->partition, ev->max_ts);
	else
		n = snprintf(line, sizeof(line),
		    "{\"ts\":%" PRId64 ",\"event\":\"%s\",\"topic\":\"%s\","
		    "\"partition\":\"%s\",\"segment\":\"%020" PRIu64 "\","
		    "\"base\":%" PRIu64 ",\"records\":%" PRIu64
		    ",\"bytes\":%" PRIu64 ",\"first_ts\":%" PRId64
		    ",\"max_ts\":%" PRId64 ",\"%s\":\"%s\"}\n",
		    ev->ts, ev->kind == TLOG_EV_SEAL ? "seal" :
		    ev->kind == TLOG_EV_CORRUPT ? "corrupt" : "delete",
		    ev->topic, ev->partition, ev->base, ev->base, ev->records,
		    ev->bytes, ev->first_ts, ev->max_ts,
		    ev->kind == TLOG_EV_SEAL ? "trigger" : "rule",
		    ev->kind == TLOG_EV_SEAL ?
		    tlog_trigger_name(ev->trigger) : tlog_rule_name(ev->rule));
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	tlog_part_append(e->p, line, (size_t)n, true, &r);
	if (r != 0)
		tlog_ctx_log_err(e->p->ctx, "cannot record an event in "
		    ".tlogfs/events: %s", strerror(-r));
}
