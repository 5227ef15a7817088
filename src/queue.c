/*
 * queue.c - a store's background work queues (queue.h).
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "queue.h"

void
tlog_queue_init(struct tlog_queue *q, struct tlog_ctx *ctx)
{
	q->ctx = ctx;
	tlog_cond_init_mono(&q->cond);
	TAILQ_INIT(&q->unlinkq);
	TAILQ_INIT(&q->flushq);
	TAILQ_INIT(&q->zq);
}

void
tlog_queue_destroy(struct tlog_queue *q)
{
	struct tlog_segment *seg;
	struct tlog_partition *p;
	struct tlog_zjob *j;

	while ((j = TAILQ_FIRST(&q->zq)) != NULL) {
		TAILQ_REMOVE(&q->zq, j, link);
		tlog_zjob_free(q, j);
	}
	while ((seg = TAILQ_FIRST(&q->unlinkq)) != NULL) {
		TAILQ_REMOVE(&q->unlinkq, seg, link);
		tlog_segment_put(seg);
	}
	while ((p = TAILQ_FIRST(&q->flushq)) != NULL) {
		TAILQ_REMOVE(&q->flushq, p, flushlink);
		p->flush_queued = false;
		tlog_partition_put(p);
	}
	pthread_cond_destroy(&q->cond);
}

void
tlog_queue_unlink(struct tlog_queue *q, struct tlog_segment *seg)
{
	struct tlog_partition *p = tlog_seg_part(seg);

	pthread_mutex_lock(&q->ctx->work_lock);
	__atomic_add_fetch(&p->pending_unlinks, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&p->pending_bytes, tlog_seg_disk(seg),
	    __ATOMIC_RELAXED);
	__atomic_add_fetch(&q->pending_bytes, tlog_seg_disk(seg),
	    __ATOMIC_RELAXED);
	TAILQ_INSERT_TAIL(&q->unlinkq, seg, link);
	q->nunlink++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->ctx->work_lock);
}

void
tlog_queue_flush(struct tlog_queue *q, struct tlog_partition *p)
{
	pthread_mutex_lock(&q->ctx->work_lock);
	if (!p->flush_queued) {
		tlog_part_ref(p);
		p->flush_queued = true;
		TAILQ_INSERT_TAIL(&q->flushq, p, flushlink);
		q->nflush++;
		pthread_cond_broadcast(&q->cond);
	}
	pthread_mutex_unlock(&q->ctx->work_lock);
}

struct tlog_partition *
tlog_queue_flush_pop(struct tlog_queue *q)
{
	struct tlog_partition *p;

	pthread_mutex_lock(&q->ctx->work_lock);
	if ((p = TAILQ_FIRST(&q->flushq)) != NULL) {
		TAILQ_REMOVE(&q->flushq, p, flushlink);
		p->flush_queued = false;
		q->nflush--;
	}
	pthread_mutex_unlock(&q->ctx->work_lock);
	return p;
}

void
tlog_queue_compress(struct tlog_queue *q, struct tlog_segment *seg)
{
	struct tlog_zjob *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return;		/* it stays plain */
	j->seg = seg;
	j->in = j->out = -1;
	tlog_seg_ref(seg);
	pthread_mutex_lock(&q->ctx->work_lock);
	TAILQ_INSERT_TAIL(&q->zq, j, link);
	q->nz++;
	__atomic_add_fetch(&q->zbacklog, seg->bytes, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->ctx->work_lock);
}

struct tlog_zjob *
tlog_queue_zpop(struct tlog_queue *q)
{
	struct tlog_zjob *j;

	/* A job being worked on still counts (q->nz): the backlog, and
	 * the unlinker's reason not to sleep, until it is freed. */
	pthread_mutex_lock(&q->ctx->work_lock);
	if ((j = TAILQ_FIRST(&q->zq)) != NULL)
		TAILQ_REMOVE(&q->zq, j, link);
	pthread_mutex_unlock(&q->ctx->work_lock);
	return j;
}

void
tlog_queue_zpush(struct tlog_queue *q, struct tlog_zjob *j)
{
	pthread_mutex_lock(&q->ctx->work_lock);
	TAILQ_INSERT_HEAD(&q->zq, j, link);
	pthread_mutex_unlock(&q->ctx->work_lock);
}

void
tlog_zjob_free(struct tlog_queue *q, struct tlog_zjob *j)
{
	pthread_mutex_lock(&q->ctx->work_lock);
	q->nz--;
	pthread_mutex_unlock(&q->ctx->work_lock);
	__atomic_sub_fetch(&q->zbacklog, j->seg->bytes, __ATOMIC_RELAXED);
	if (j->in != -1)
		close(j->in);
	if (j->out != -1)
		close(j->out);
	if (j->started)
		tlog_zw_free(&j->w);
	free(j->buf);
	tlog_segment_put(j->seg);
	free(j);
}

size_t
tlog_queue_wait(struct tlog_queue *q, int timeout_ms)
{
	struct timespec ts;
	size_t n;

	pthread_mutex_lock(&q->ctx->work_lock);
	if (q->nunlink == 0 && q->nflush == 0 && q->nz == 0 && !q->wakeup) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&q->cond, &q->ctx->work_lock);
		} else {
			tlog_deadline(timeout_ms, &ts);
			pthread_cond_timedwait(&q->cond, &q->ctx->work_lock, &ts);
		}
	}
	q->wakeup = false;
	n = q->nunlink + q->nflush + q->nz;
	pthread_mutex_unlock(&q->ctx->work_lock);
	return n;
}

void
tlog_queue_wakeup(struct tlog_queue *q)
{
	pthread_mutex_lock(&q->ctx->work_lock);
	q->wakeup = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->ctx->work_lock);
}

size_t
tlog_queue_unlinks(struct tlog_queue *q)
{
	size_t n;

	pthread_mutex_lock(&q->ctx->work_lock);
	n = q->nunlink;
	pthread_mutex_unlock(&q->ctx->work_lock);
	return n;
}

size_t
tlog_queue_zqueued(struct tlog_queue *q)
{
	size_t n;

	pthread_mutex_lock(&q->ctx->work_lock);
	n = q->nz;
	pthread_mutex_unlock(&q->ctx->work_lock);
	return n;
}
