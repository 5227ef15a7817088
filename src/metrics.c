/*
 * metrics.c - the Prometheus text behind .tlogfs/metrics: the store's
 * counters, read with relaxed atomics, and a few gauges.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "free.h"
#include "reaper.h"
#include "store.h"

static uint64_t
get(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* A metric's HELP and TYPE lines. */
static void
meta(FILE *f, const char *name, const char *help, const char *type)
{
	fprintf(f, "# HELP tlogfs_%s %s\n# TYPE tlogfs_%s %s\n", name, help,
	    name, type);
}

static void
counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	meta(f, name, help, "counter");
	fprintf(f, "tlogfs_%s %" PRIu64 "\n", name, v);
}

/* A counter of seconds, from nanoseconds. */
static void
seconds(FILE *f, const char *name, const char *help, uint64_t ns)
{
	meta(f, name, help, "counter");
	fprintf(f, "tlogfs_%s %.9f\n", name, (double)ns / 1e9);
}

static void
gauge(FILE *f, const char *name, const char *help, double v)
{
	meta(f, name, help, "gauge");
	fprintf(f, "tlogfs_%s %.9g\n", name, v);
}

/*
 * tlogfs_cursor_lag_records, one series per cursor: end_offset -
 * max(cursor, start_offset). Partitions without a cursor cost one
 * racy read each. Names need no escaping (letters, digits, . _ -).
 */
static int
cursor_lags(struct tlog_store *s, FILE *f)
{
	struct tlog_partition **v;
	struct tlog_cursor *c;
	char topic[TLOG_NAME_MAX + 1], part[TLOG_NAME_MAX + 1];
	uint64_t lag;
	size_t n, i, nc, k;

	meta(f, "cursor_lag_records", "Records a cursor is behind its "
	    "partition's end.", "gauge");
	if (tlog_reg_partitions(&s->reg, &v, &n) != 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (__atomic_load_n(&v[i]->ncursors, __ATOMIC_RELAXED) > 0 &&
		    tlog_partition_cursor_list(v[i], &c, &nc) == 0) {
			tlog_level_name(&tlog_partition_topic(v[i])->lv, topic,
			    sizeof(topic));
			tlog_level_name(&v[i]->lv, part, sizeof(part));
			for (k = 0; k < nc; k++)
				if (tlog_partition_cursor_lag(v[i], c[k].name,
				    &lag) == 0)
					fprintf(f, "tlogfs_cursor_lag_records"
					    "{topic=\"%s\",partition=\"%s\","
					    "cursor=\"%s\"} %" PRIu64 "\n",
					    topic, part, c[k].name, lag);
			free(c);
		}
		tlog_partition_put(v[i]);
	}
	free(v);
	return 0;
}

int
tlog_metrics_format(struct tlog_store *s, char **out, size_t *len)
{
	struct tlog_metrics *m = &s->ctx.metrics;
	uint64_t avail;
	int64_t floor;
	size_t blen;
	char *b;
	FILE *f;
	int i, r;

	/* A stream fails only when its buffer cannot grow. */
	if ((f = open_memstream(&b, &blen)) == NULL)
		return -ENOMEM;
	counter(f, "appends_total", "Append calls that stored records.",
	    get(&m->appends));
	counter(f, "records_total", "Records appended.", get(&m->records));
	counter(f, "bytes_total", "Bytes appended.", get(&m->bytes));
	meta(f, "rolls_total", "Segments sealed, by trigger.", "counter");
	for (i = 1; i < TLOG_NTRIGGERS; i++)
		fprintf(f, "tlogfs_rolls_total{trigger=\"%s\"} %" PRIu64
		    "\n", tlog_trigger_name(i), get(&m->rolls[i]));
	meta(f, "deletions_total", "Segments deleted, by rule.", "counter");
	for (i = 0; i < TLOG_NRULES; i++)
		fprintf(f, "tlogfs_deletions_total{rule=\"%s\"} %" PRIu64
		    "\n", tlog_rule_name(i), get(&m->deletions[i]));
	counter(f, "deleted_bytes_total", "Bytes of deleted segments.",
	    get(&m->deleted_bytes));
	counter(f, "fsyncs_total", "fsync and fdatasync calls on "
	    "partitions' files.", get(&m->fsyncs));
	counter(f, "reaper_wakeups_total", "Reaper wake-ups.",
	    get(&m->reaper_wakeups));
	counter(f, "free_reclaims_total", "Reaper passes that deleted "
	    "segments for retention.keep.free.", get(&m->free_cycles));
	counter(f, "free_enospc_reclaims_total", "Appends that hit ENOSPC "
	    "and reclaimed for retention.keep.free.", get(&m->free_sync));
	counter(f, "free_waits_total", "Appends that waited for "
	    "retention.keep.free's deletions before writing.",
	    get(&m->free_waits));
	counter(f, "reaper_due_partitions_total",
	    "Due partitions visited by the reaper.", get(&m->reaper_due));
	gauge(f, "reaper_last_due_partitions",
	    "Due partitions visited by the last wake-up.",
	    (double)get(&m->reaper_last_due));
	seconds(f, "reaper_cycle_seconds_total", "Time spent in reaper "
	    "wake-ups.", get(&m->reaper_ns));
	gauge(f, "reaper_last_cycle_seconds",
	    "Duration of the last reaper wake-up.",
	    (double)get(&m->reaper_last_ns) / 1e9);
	gauge(f, "reaper_scheduled_partitions",
	    "Partitions waiting in the reaper's heap.",
	    (double)tlog_reaper_scheduled(s));
	gauge(f, "unlink_queue", "Deleted segments whose files wait to be "
	    "unlinked.", (double)tlog_queue_unlinks(&s->q));
	gauge(f, "partitions", "Partitions in the store.",
	    (double)tlog_reg_count(&s->reg));
	if (tlog_free_gauges(s, &avail, &floor) == 0) {
		gauge(f, "free_bytes", "Free space on the store's file "
		    "system (what an unprivileged writer may use).",
		    (double)avail);
		gauge(f, "keep_free_bytes", "The free space "
		    "retention.keep.free keeps (its floor, in bytes; 0: "
		    "not set).", (double)(floor > 0 ? floor : 0));
	}
	counter(f, "compressed_segments_total", "Sealed segments "
	    "compressed (compression.type).", get(&m->z_segments));
	counter(f, "compressed_in_bytes_total", "Plain bytes of the "
	    "segments compressed.", get(&m->z_in));
	counter(f, "compressed_out_bytes_total", "Their compressed size.",
	    get(&m->z_out));
	seconds(f, "compress_seconds_total", "Time spent compressing.",
	    get(&m->z_ns));
	gauge(f, "compress_backlog_segments", "Sealed segments waiting "
	    "to be compressed.", (double)tlog_queue_zqueued(&s->q));
	gauge(f, "compress_backlog_bytes", "Their plain bytes.",
	    (double)__atomic_load_n(&s->q.zbacklog, __ATOMIC_RELAXED));
	gauge(f, "frame_cache_bytes", "Decoded frames of compressed "
	    "segments kept for readers.",
	    (double)tlog_zcache_bytes(&s->fdb));
	counter(f, "frame_cache_hits_total", "Reads of a compressed "
	    "frame found decoded.", get(&s->fdb.zc.hits));
	counter(f, "frame_cache_misses_total", "Reads of a compressed "
	    "frame that decoded it.", get(&s->fdb.zc.misses));
	counter(f, "errors_total", "Errors logged (before rate limiting).",
	    get(&m->errors));
	gauge(f, "clock_offset_seconds", "Wall clock minus engine time "
	    "(non-zero after a wall clock step).",
	    (double)tlog_clock_offset(&s->ctx.clock) / 1e3);
	r = cursor_lags(s, f);
	if (ferror(f) && r == 0)
		r = -ENOMEM;
	if (fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	if (r != 0) {
		free(b);
		return r;
	}
	*out = b;
	*len = blen;
	return 0;
}
