/*
 * writer.c - one writer per open file: line framing with a partial-line
 * buffer. Complete records go to the partition in one call per write, so
 * two writers never interleave inside a line; the bytes after the last
 * newline wait here until this writer completes them, flushes (close,
 * fsync) or they reach record.max.bytes, or, while all writers together
 * hold more than the store's limit (tlog_store_opts.held_max), until a
 * write leaves this writer holding more than TLOG_HELD_SMALL: then its
 * line is cut there. So whoever may write a partition cannot fill the
 * daemon's memory (past the limit, each open file holds at most
 * TLOG_HELD_SMALL more), and no line of up to TLOG_HELD_SMALL is ever
 * cut for another writer's sake. A held record that cannot be stored is
 * dropped, never retried (flush_held).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "flush.h"

struct tlog_writer {
	struct tlog_partition *part;
	pthread_mutex_t lock;	/* one write at a time, in arrival order */
	char *held;
	size_t nheld;
	size_t cap;
};

struct tlog_writer *
tlog_writer_open(struct tlog_partition *p)
{
	struct tlog_writer *w;

	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	tlog_part_ref(p);
	w->part = p;
	__atomic_add_fetch(&p->nwriters, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_init(&w->lock, NULL);
	return w;
}

static int
hold(struct tlog_writer *w, const char *buf, size_t len)
{
	size_t cap;
	char *nb;

	if (len == 0)
		return 0;
	if (w->nheld + len > w->cap) {
		cap = w->nheld + len;
		cap = cap < 256 ? 256 : cap + cap / 2;
		if ((nb = realloc(w->held, cap)) == NULL)
			return -ENOMEM;
		w->held = nb;
		w->cap = cap;
	}
	memcpy(w->held + w->nheld, buf, len);
	w->nheld += len;
	__atomic_add_fetch(&w->part->ctx->held, len, __ATOMIC_RELAXED);
	return 0;
}

/* All writers hold more than the store's limit and this one more than
 * TLOG_HELD_SMALL: its line is cut, said once a minute. */
static bool
over_limit(struct tlog_writer *w)
{
	struct tlog_ctx *ctx = w->part->ctx;
	char where[2 * TLOG_NAME_MAX + 2];

	if (w->nheld <= TLOG_HELD_SMALL ||
	    __atomic_load_n(&ctx->held, __ATOMIC_RELAXED) <= ctx->held_max)
		return false;
	if (tlog_once_a_minute(ctx, &ctx->held_said)) {
		tlog_level_where(&w->part->lv, where, sizeof(where));
		tlog_ctx_log(ctx, LOG_WARNING, "%s: writers hold more than "
		    "%" PRIu64 " bytes of unfinished lines in all: a held "
		    "line of %zu bytes is cut here (a record without "
		    "newline), and so is each held line over %d bytes while "
		    "it lasts (said once a minute)", where, ctx->held_max,
		    w->nheld, TLOG_HELD_SMALL);
	}
	return true;
}

/*
 * Appends everything held as one or more records; 0 or -errno. On an
 * error the record that failed is refused and dropped (the partition
 * logs it): kept, it would fail again at every later write, fsync and
 * close of this file, and the writer would never work again. The error
 * is reported once; the writer goes on with the next record.
 */
static int
flush_held(struct tlog_writer *w)
{
	int err;

	if (w->nheld == 0)
		return 0;
	(void)tlog_part_append(w->part, w->held, w->nheld, true, &err);
	__atomic_sub_fetch(&w->part->ctx->held, w->nheld, __ATOMIC_RELAXED);
	w->nheld = 0;
	if (w->cap > 65536) {
		free(w->held);
		w->held = NULL;
		w->cap = 0;
	}
	return err;
}

ssize_t
tlog_writer_write(struct tlog_writer *w, const void *data, size_t len)
{
	const char *buf = data, *nl;
	int64_t max;
	size_t room, take = 0, done;
	ssize_t r;
	int e;

	/* Not even held: the bytes could never be appended. */
	if (w->part->ctx->ro)
		return -EROFS;
	pthread_mutex_lock(&w->lock);
	if (w->nheld > 0) {
		/* Complete the held line from the front of this write.
		 * The limit is looked up only here: a write that holds
		 * nothing (most) leaves it to the partition. */
		max = tlog_part_conf(w->part, TLOG_RECORD_MAX_BYTES);
		room = w->nheld < (size_t)max ? (size_t)max - w->nheld : 0;
		take = len < room ? len : room;
		nl = memchr(buf, '\n', take);
		if (nl != NULL)
			take = (size_t)(nl - buf) + 1;
		if ((r = hold(w, buf, take)) != 0)
			goto out;
		if (nl == NULL && w->nheld < (size_t)max && !over_limit(w)) {
			r = (ssize_t)len;	/* all of it held */
			goto out;
		}
		/* A record this write completed that is refused goes
		 * with the bytes it took; the rest is not taken. */
		if ((r = flush_held(w)) != 0)
			goto out;
	}
	done = tlog_part_append(w->part, buf + take, len - take, false, &e);
	/* Nothing after a failed record is held or taken. */
	if (e == 0)
		e = hold(w, buf + take + done, len - take - done);
	if (e != 0) {
		r = take + done > 0 ? (ssize_t)(take + done) : e;
		goto out;
	}
	/* Cut at the limit: the write is taken all the same. */
	if (w->nheld > 0 && over_limit(w))
		(void)flush_held(w);
	r = (ssize_t)len;
out:
	pthread_mutex_unlock(&w->lock);
	return r;
}

int
tlog_writer_flush(struct tlog_writer *w)
{
	int r;

	pthread_mutex_lock(&w->lock);
	r = flush_held(w);
	pthread_mutex_unlock(&w->lock);
	return r;
}

int
tlog_writer_fsync(struct tlog_writer *w, bool datasync)
{
	int r = tlog_writer_flush(w);

	return r != 0 ? r : tlog_partition_fsync(w->part, datasync);
}

int
tlog_writer_close(struct tlog_writer *w)
{
	char where[2 * TLOG_NAME_MAX + 2];
	size_t held;
	int r;

	if (w == NULL)
		return 0;
	held = w->nheld;
	/* A record refused for any other reason was logged by the
	 * partition; one whose partition is gone (removed, or renamed
	 * over) is said here, with its partition and size. */
	if ((r = tlog_writer_flush(w)) == -ENOENT) {
		tlog_level_where(&w->part->lv, where, sizeof(where));
		/* Each loss is named, never folded into a count: one
		 * close loses at most one held line. */
		TLOG_METRIC_ADD(w->part->ctx, errors, 1);
		tlog_ctx_log(w->part->ctx, LOG_ERR, "%s: a held partial record of "
		    "%zu bytes is lost at close: the partition was removed or "
		    "renamed over", where, held);
	}
	pthread_mutex_destroy(&w->lock);
	/* The last writer gone lifts its veto on partition.cleanup.ms:
	 * the partition is due again (doc/reaper.md). */
	if (__atomic_sub_fetch(&w->part->nwriters, 1, __ATOMIC_ACQ_REL) == 0 &&
	    tlog_part_conf(w->part, TLOG_PARTITION_CLEANUP_MS) >= 0)
		tlog_part_resched(w->part);
	tlog_partition_put(w->part);
	free(w->held);
	free(w);
	return r;
}
