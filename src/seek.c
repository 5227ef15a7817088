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
 * wants (offset below its end, or newest timestamp >= t); with none, the
 * answer is the end. The look-up inside the segment runs after the lock
 * is dropped: it reads the index file, and segread.c takes the lock for
 * the counters itself.
 */
static int
seek(struct tlog_partition *p, bool by_time, uint64_t offset, int64_t t,
    struct tlog_pos *out)
{
	struct tlog_segment *seg, *act;
	uint64_t off = 0, pos = 0;
	int r = 0, tries;

	for (tries = 0; tries < SEEK_TRIES; tries++) {
		pthread_mutex_lock(&p->sd.lock);
		if (!by_time && offset > p->next_offset) {
			pthread_mutex_unlock(&p->sd.lock);
			return -ENODATA;
		}
		TAILQ_FOREACH(seg, &p->segs, link)
			if (seg->records > 0 && (by_time ? seg->max_ts >= t :
			    seg->base + seg->records > offset))
				break;
		if (seg == NULL) {
			act = tlog_part_active(p);
			out->offset = p->next_offset;
			out->base = act != NULL ? act->base : p->next_offset;
			out->pos = act != NULL ? act->bytes : 0;
			pthread_mutex_unlock(&p->sd.lock);
			return 0;
		}
		tlog_seg_ref(seg);
		pthread_mutex_unlock(&p->sd.lock);
		if (by_time)
			r = tlog_seg_find_time(seg, t, &off, &pos);
		else if (seg->base >= offset) {
			/* The record itself, or the first one after a gap. */
			out->offset = out->base = seg->base;
			out->pos = 0;
			tlog_segment_put(seg);
			return 0;
		} else {
			off = offset;
			r = tlog_seg_find_offset(seg, offset, &pos);
		}
		out->offset = off;
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
tlog_partition_seek(struct tlog_partition *p, uint64_t offset,
    struct tlog_pos *out)
{
	return seek(p, false, offset, 0, out);
}

int
tlog_partition_seek_time(struct tlog_partition *p, int64_t t,
    struct tlog_pos *out)
{
	return seek(p, true, 0, t, out);
}
