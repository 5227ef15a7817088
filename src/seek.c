/*
 * seek.c - where a reader starts (doc/seek.md): the first live record at
 * or after an offset, or that can have a timestamp at or after a time.
 */
#include "config.h"

#include <errno.h>

#include "partition.h"

#define SEEK_TRIES 8	/* segments that may vanish under one look-up */

/*
 * Picks, under the lock, the first segment holding a record the reader
 * wants (offset below its end, or newest timestamp >= t) and returns it
 * referenced; with none, fills the end position and returns NULL. The
 * look-up inside the segment runs after the lock is dropped: it reads
 * the index file, and segment.c takes the lock for the counters itself.
 */
static struct tlog_segment *
seek_pick(struct tlog_partition *p, bool by_time, uint64_t offset, int64_t t,
    struct tlog_pos *end, int *err)
{
	struct tlog_segment *seg, *act;

	*err = 0;
	pthread_mutex_lock(&p->sd.lock);
	if (!by_time && offset > p->next_offset) {
		pthread_mutex_unlock(&p->sd.lock);
		*err = -ENODATA;
		return NULL;
	}
	TAILQ_FOREACH(seg, &p->segs, link) {
		if (seg->records == 0)
			continue;
		if (by_time ? seg->max_ts >= t :
		    seg->base + seg->records > offset)
			break;
	}
	if (seg != NULL)
		tlog_seg_ref(seg);
	else {
		act = tlog_part_active(p);
		end->offset = p->next_offset;
		end->base = act != NULL ? act->base : p->next_offset;
		end->pos = act != NULL ? act->bytes : 0;
	}
	pthread_mutex_unlock(&p->sd.lock);
	return seg;
}

int
tlog_partition_seek(struct tlog_partition *p, uint64_t offset,
    struct tlog_pos *out)
{
	struct tlog_segment *seg;
	uint64_t pos = 0;
	int r = 0, tries;

	for (tries = 0; tries < SEEK_TRIES; tries++) {
		if ((seg = seek_pick(p, false, offset, 0, out, &r)) == NULL)
			return r;
		if (seg->base >= offset) {
			/* The record itself, or the first one after a gap. */
			out->offset = out->base = seg->base;
			out->pos = 0;
			tlog_segment_put(seg);
			return 0;
		}
		r = tlog_seg_find_offset(seg, offset, &pos);
		out->offset = offset;
		out->base = seg->base;
		out->pos = pos;
		tlog_segment_put(seg);
		/* -ENOENT: its files were unlinked meanwhile; the next pick
		 * no longer sees it. */
		if (r != -ENOENT)
			return r;
	}
	return r;
}

int
tlog_partition_seek_time(struct tlog_partition *p, int64_t t,
    struct tlog_pos *out)
{
	struct tlog_segment *seg;
	uint64_t off = 0, pos = 0;
	int r = 0, tries;

	for (tries = 0; tries < SEEK_TRIES; tries++) {
		if ((seg = seek_pick(p, true, 0, t, out, &r)) == NULL)
			return r;
		r = tlog_seg_find_time(seg, t, &off, &pos);
		out->offset = off;
		out->base = seg->base;
		out->pos = pos;
		tlog_segment_put(seg);
		if (r != -ENOENT)
			return r;
	}
	return r;
}
