/*
 * writer.c - one writer per open file: line framing with a partial-line
 * buffer. Complete records go to the partition in one call per write, so
 * two writers never interleave inside a line; the bytes after the last
 * newline wait here until this writer completes them, flushes (close,
 * fsync) or they reach record.max.bytes.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tlog_int.h"

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
	return 0;
}

/* Appends everything held as one or more records; 0 or -errno. */
static int
flush_held(struct tlog_writer *w)
{
	ssize_t r;

	if (w->nheld == 0)
		return 0;
	r = tlog_part_append(w->part, w->held, w->nheld, true);
	if (r < 0)
		return (int)r;
	w->nheld = 0;
	if (w->cap > 65536) {
		free(w->held);
		w->held = NULL;
		w->cap = 0;
	}
	return 0;
}

ssize_t
tlog_writer_write(struct tlog_writer *w, const void *data, size_t len)
{
	const char *buf = data, *nl;
	int64_t max = tlog_partition_conf(w->part, TLOG_RECORD_MAX_BYTES);
	int64_t sb = tlog_partition_conf(w->part, TLOG_SEGMENT_BYTES);
	size_t room, take, keep;
	ssize_t r;
	int e;

	if (max > sb)
		max = sb;
	pthread_mutex_lock(&w->lock);
	keep = w->nheld;
	if (w->nheld > 0) {
		/* Complete the held line from the front of this write. */
		room = w->nheld < (size_t)max ? (size_t)max - w->nheld : 0;
		take = len < room ? len : room;
		nl = memchr(buf, '\n', take);
		if (nl != NULL)
			take = (size_t)(nl - buf) + 1;
		if ((e = hold(w, buf, take)) != 0) {
			r = e;
			goto out;
		}
		if (nl == NULL && w->nheld < (size_t)max) {
			r = (ssize_t)len;	/* all of it held */
			goto out;
		}
		if ((e = flush_held(w)) != 0) {
			w->nheld = keep;	/* this write left no trace */
			r = e;
			goto out;
		}
		buf += take;
		len -= take;
	}
	r = tlog_part_append(w->part, buf, len, false);
	if (r < 0)
		goto out;
	if ((e = hold(w, buf + r, len - (size_t)r)) != 0) {
		r = e;
		goto out;
	}
	r = (ssize_t)(len + (size_t)(buf - (const char *)data));
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

	return r != 0 ? r : tlog_part_fsync(w->part, datasync);
}

size_t
tlog_writer_held(struct tlog_writer *w)
{
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->nheld;
	pthread_mutex_unlock(&w->lock);
	return n;
}

int
tlog_writer_close(struct tlog_writer *w)
{
	int r;

	if (w == NULL)
		return 0;
	r = tlog_writer_flush(w);
	pthread_mutex_destroy(&w->lock);
	tlog_partition_put(w->part);
	free(w->held);
	free(w);
	return r;
}
