/*
 * compress.h - compressed history (compress.c): queueing a sealed
 * segment for compression, the background work that compresses it, the
 * public reads that say a corrupt frame, and recovery's check of a
 * compressed file.
 */
#ifndef TLOG_COMPRESS_H
#define TLOG_COMPRESS_H

#include <stdint.h>

#include "partition.h"
#include "queue.h"

/* seg just sealed: queued for compression if p's compression.type says
 * so, at p's compression.zstd.level (p->sd.lock held). */
void tlog_part_zqueue(struct tlog_partition *p, struct tlog_segment *seg);
/* Up to max (<= 0: all) slices of compression work, each a few frames
 * of one segment; returns how many were done. No lock held. */
int tlog_compress_pending(struct tlog_queue *q, int max);
/* BASE.log.zst in dfd: 0 with its plain size and its own if its seek
 * table is whole and describes the file; -EBADMSG (torn, garbage: *plain
 * is then what its whole frames hold, tlog_zs_walk), -ENOENT or
 * -errno. */
int tlog_seg_zcheck(int dfd, uint64_t base, uint64_t *plain,
    uint64_t *zsize);
/* Whether every frame of BASE.log.zst in dfd decodes (its checksum
 * holds) and, with cmp, to exactly what BASE.log holds; 0, -EBADMSG or
 * -errno. Only when both are there after a crash: it reads them all. */
int tlog_seg_zsame(int dfd, uint64_t base, bool cmp);

#endif /* TLOG_COMPRESS_H */
