/*
 * queue.h - a store's background work: the unlink queue (detached
 * segments whose files wait to be unlinked), the flush queue (partitions
 * whose sealed segments wait for their footers) and the compress queue.
 * Drained by unlink.c, flush.c and compress.c, under the store's work
 * lock (ctx->work_lock, ctx.h). One condition serves all three, so the
 * front end's unlinker thread waits for any (tlog_store_unlink_wait).
 * (The order of the locks: doc/engine.md, "Threads and locks".)
 */
#ifndef TLOG_QUEUE_H
#define TLOG_QUEUE_H

#include <sys/queue.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "partition.h"
#include "zseek.h"

TAILQ_HEAD(tlog_partq, tlog_partition);

/* A sealed segment to compress (compress.c), and the work in flight on
 * it; only the thread that popped it touches the latter. */
struct tlog_zjob {
	TAILQ_ENTRY(tlog_zjob) link;
	struct tlog_segment *seg;	/* referenced */
	bool started;
	int in, out;			/* BASE.log; BASE.log.zst.tmp */
	uint64_t pos, end;		/* plain bytes compressed, in all */
	struct tlog_zw w;
	void *buf;
};
TAILQ_HEAD(tlog_zjobq, tlog_zjob);

struct tlog_queue {
	struct tlog_ctx *ctx;		/* its work_lock guards the queues */
	pthread_cond_t cond;		/* work queued, a drain's progress */
	struct tlog_seglist unlinkq;	/* each referenced */
	size_t nunlink;
	uint64_t pending_bytes;		/* atomic: their bytes, store-wide */
	struct tlog_partq flushq;	/* each referenced */
	size_t nflush;
	struct tlog_zjobq zq;		/* segments to compress, oldest first */
	size_t nz;			/* their count, the job popped included */
	uint64_t zbacklog;		/* atomic: their plain bytes */
	bool wakeup;
};

/* q is zeroed (calloc'd with its store): the counts start at 0. */
void tlog_queue_init(struct tlog_queue *q, struct tlog_ctx *ctx);
/* Releases what is left: queued segments are simply dropped; their files
 * are found again (and kept) at the next open. */
void tlog_queue_destroy(struct tlog_queue *q);
/* A detached segment and its reference; counted against its partition's
 * pending_unlinks and pending_bytes. */
void tlog_queue_unlink(struct tlog_queue *q, struct tlog_segment *seg);
/* p has sealed segments for the flusher (queued once, referenced). */
void tlog_queue_flush(struct tlog_queue *q, struct tlog_partition *p);
/* The next partition to flush and its reference, or NULL. */
struct tlog_partition *tlog_queue_flush_pop(struct tlog_queue *q);
/* seg is to be compressed (its zlevel set): queued once, referenced
 * (p->sd.lock may be held). */
void tlog_queue_compress(struct tlog_queue *q, struct tlog_segment *seg);
/* The next job, or NULL; a job not finished goes back at the head. */
struct tlog_zjob *tlog_queue_zpop(struct tlog_queue *q);
void tlog_queue_zpush(struct tlog_queue *q, struct tlog_zjob *j);
/* Drops a job (its segment's reference). */
void tlog_zjob_free(struct tlog_queue *q, struct tlog_zjob *j);
/* Blocks until any queue is non-empty, timeout_ms passes (-1: never)
 * or tlog_queue_wakeup; returns the length of all three queues. */
size_t tlog_queue_wait(struct tlog_queue *q, int timeout_ms);
void tlog_queue_wakeup(struct tlog_queue *q);
/* The length of the compress queue. */
size_t tlog_queue_zqueued(struct tlog_queue *q);
/* The length of the unlink queue. */
size_t tlog_queue_unlinks(struct tlog_queue *q);

#endif /* TLOG_QUEUE_H */
