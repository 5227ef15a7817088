/*
 * zread.c - reading a compressed segment (BASE.log.zst, zseek.h) as
 * plain bytes: only the frames a read touches are decoded, through the
 * store's bounded cache of decoded frames and seek tables (struct
 * tlog_zcache, segment.h), kept under the store's work lock. Decoding
 * runs with no lock held; an entry being copied from is referenced, so
 * eviction never frees it under a reader. The cache's size bounds what
 * the daemon keeps decoded, plus what each read in flight holds (its
 * seek table and up to ZBATCH frames).
 */
#include "config.h"

#include <sys/resource.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment.h"
#include "zseek.h"

#define TABLE_FRAME UINT32_MAX	/* the entry of a segment's seek table */
#define ZBATCH 8	/* frames one read holds at a time */

struct tlog_zent {
	TAILQ_ENTRY(tlog_zent) lru;
	struct tlog_zent *next;		/* the hash chain */
	uint64_t ino;
	uint32_t frame;
	int refs;			/* the cache's, if cached, and readers' */
	bool cached;
	/* Being decoded by the reader that missed it first; the others
	 * wait on zc->cond rather than decode it again. err: what the
	 * decoding found (a failed entry leaves the cache). */
	bool loading;
	int err;
	size_t cost;
	struct tlog_zs *table;		/* frame TABLE_FRAME */
	unsigned char *data;
};

int
tlog_zcache_init(struct tlog_zcache *zc, uint64_t max)
{
	struct rlimit rl;
	size_t nzfd;

	memset(zc, 0, sizeof(*zc));
	TAILQ_INIT(&zc->lru);
	zc->max = max ? max : TLOG_ZCACHE_DEFAULT;
	zc->nhash = zc->max / (64 * 1024);
	if (zc->nhash < 64)
		zc->nhash = 64;
	if (zc->nhash > 65536)
		zc->nhash = 65536;
	nzfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1U << 24) ?
	    (size_t)rl.rlim_cur : 1U << 20;
	nzfd = (nzfd + 63) & ~(size_t)63;
	zc->hash = calloc(zc->nhash, sizeof(*zc->hash));
	zc->zfd = calloc(nzfd / 64, sizeof(uint64_t));
	if (zc->hash == NULL || zc->zfd == NULL) {
		free(zc->hash);
		free(zc->zfd);
		zc->hash = NULL;
		zc->zfd = NULL;
		return -ENOMEM;
	}
	zc->nzfd = nzfd;
	/* Initialised only with the hash: destroy tests that. */
	pthread_cond_init(&zc->cond, NULL);
	return 0;
}

uint64_t
tlog_zcache_bytes(struct tlog_fdbudget *b)
{
	uint64_t n;

	pthread_mutex_lock(&b->ctx->work_lock);
	n = b->zc.bytes;
	pthread_mutex_unlock(&b->ctx->work_lock);
	return n;
}

static void
zent_free(struct tlog_zent *e)
{
	tlog_zs_free(e->table);
	free(e->data);
	free(e);
}

void
tlog_zcache_destroy(struct tlog_zcache *zc)
{
	struct tlog_zent *e;

	while ((e = TAILQ_FIRST(&zc->lru)) != NULL) {
		TAILQ_REMOVE(&zc->lru, e, lru);
		zent_free(e);
	}
	if (zc->hash != NULL)
		pthread_cond_destroy(&zc->cond);
	free(zc->hash);
	free(zc->zfd);
	zc->hash = NULL;
	zc->zfd = NULL;
}

bool
tlog_zfd_is(struct tlog_zcache *zc, int fd)
{
	if (fd < 0 || (size_t)fd >= zc->nzfd)
		return false;
	return (__atomic_load_n(&zc->zfd[fd / 64], __ATOMIC_ACQUIRE) >>
	    (fd % 64)) & 1;
}

int
tlog_zfd_mark(struct tlog_zcache *zc, int fd, bool on)
{
	uint64_t bit;

	if (fd < 0 || (size_t)fd >= zc->nzfd)
		return -ENFILE;
	bit = 1ULL << (fd % 64);
	if (on)
		__atomic_or_fetch(&zc->zfd[fd / 64], bit, __ATOMIC_RELEASE);
	else
		__atomic_and_fetch(&zc->zfd[fd / 64], ~bit, __ATOMIC_RELEASE);
	return 0;
}

static size_t
slot(const struct tlog_zcache *zc, uint64_t ino, uint32_t frame)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ULL + frame) % zc->nhash);
}

/* The entry and a reference to it, or NULL (work lock held). */
static struct tlog_zent *
find_locked(struct tlog_zcache *zc, uint64_t ino, uint32_t frame)
{
	struct tlog_zent *e;

	if (zc->hash == NULL)
		return NULL;
	for (e = zc->hash[slot(zc, ino, frame)]; e != NULL; e = e->next)
		if (e->ino == ino && e->frame == frame) {
			e->refs++;
			TAILQ_REMOVE(&zc->lru, e, lru);
			TAILQ_INSERT_HEAD(&zc->lru, e, lru);
			return e;
		}
	return NULL;
}

static void
unhash(struct tlog_zcache *zc, struct tlog_zent *e)
{
	struct tlog_zent **pp = &zc->hash[slot(zc, e->ino, e->frame)];

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	TAILQ_REMOVE(&zc->lru, e, lru);
	zc->bytes -= e->cost;
	e->cached = false;
}

static void
put(struct tlog_fdbudget *b, struct tlog_zent *e)
{
	bool last;

	pthread_mutex_lock(&b->ctx->work_lock);
	last = --e->refs == 0;
	pthread_mutex_unlock(&b->ctx->work_lock);
	if (last)
		zent_free(e);
}

/* e if err is 0; else NULL, *r = err and e's reference dropped. */
static struct tlog_zent *
ok_or_put(struct tlog_fdbudget *b, struct tlog_zent *e, int err, int *r)
{
	if (err == 0)
		return e;
	put(b, e);
	*r = err;
	return NULL;
}

/* Puts e in the cache with its reference and the caller's (work lock
 * held). */
static void
link_locked(struct tlog_zcache *zc, struct tlog_zent *e)
{
	size_t s = slot(zc, e->ino, e->frame);

	e->next = zc->hash[s];
	zc->hash[s] = e;
	TAILQ_INSERT_HEAD(&zc->lru, e, lru);
	e->cached = true;
	e->refs = 2;
	zc->bytes += e->cost;
}

/* Takes the least recently used entries but keep out while the cache
 * holds more than its size; returns those to free, linked by next
 * (work lock held). */
static struct tlog_zent *
evict_locked(struct tlog_zcache *zc, struct tlog_zent *keep)
{
	struct tlog_zent *v, *gone = NULL;

	while (zc->bytes > zc->max && (v = TAILQ_LAST(&zc->lru, tlog_zlru)) !=
	    NULL && v != keep) {
		unhash(zc, v);
		if (--v->refs == 0) {
			v->next = gone;
			gone = v;
		}
	}
	return gone;
}

/*
 * Frame i decoded, or with i TABLE_FRAME (t NULL) the seek table loaded,
 * referenced; NULL and *r on failure (-EBADMSG: it fails its checksum,
 * or the table is torn). The first reader to miss it decodes it, with no
 * lock held, from an entry put in the cache at once; readers that find
 * that entry wait for it (wait_frame), so nothing is decoded twice at
 * a time: the kernel's readahead sends several reads of one file
 * together. An entry another reader is decoding is returned as it is,
 * with *later set, for the caller to wait for once it has decoded the
 * other frames it needs: so the readahead's reads decode their frames
 * side by side rather than one after the other.
 */
static struct tlog_zent *
get_frame(struct tlog_segment *seg, int fd, const struct tlog_zs *t,
    uint32_t i, int *r, bool *later)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct tlog_zcache *zc = &b->zc;
	struct tlog_zent *e, *n, *v, *gone;
	size_t size;
	int err;

	if ((n = calloc(1, sizeof(*n))) == NULL) {
		*r = -ENOMEM;
		return NULL;
	}
	n->ino = seg->ino;
	n->frame = i;
	n->cost = sizeof(*n);
	n->loading = true;
	*later = false;
	pthread_mutex_lock(&b->ctx->work_lock);
	/* Found: decoded or being decoded (a failed entry left the cache
	 * when its decoding ended). */
	if ((e = find_locked(zc, seg->ino, i)) != NULL) {
		*later = e->loading;
		pthread_mutex_unlock(&b->ctx->work_lock);
		free(n);
		__atomic_add_fetch(&zc->hits, 1, __ATOMIC_RELAXED);
		return e;
	}
	if (zc->hash != NULL)
		link_locked(zc, n);
	else
		n->refs = 1;	/* no cache: the caller's alone */
	pthread_mutex_unlock(&b->ctx->work_lock);
	__atomic_add_fetch(&zc->misses, 1, __ATOMIC_RELAXED);
	if (i == TABLE_FRAME) {
		err = tlog_zs_load(fd, &n->table);
		size = err ? 0 : 2 * (n->table->n + 1) * sizeof(uint64_t);
	} else {
		size = (size_t)(t->pos[i + 1] - t->pos[i]);
		n->data = malloc(size);
		err = n->data == NULL ? -ENOMEM :
		    tlog_zs_read_frame(fd, t, i, n->data);
	}
	pthread_mutex_lock(&b->ctx->work_lock);
	n->loading = false;
	n->err = err;
	gone = NULL;
	if (n->cached && err != 0) {
		unhash(zc, n);
		n->refs--;	/* the cache's: never freed with ours */
	} else if (n->cached) {
		n->cost += size;
		zc->bytes += size;
		gone = evict_locked(zc, n);
	}
	pthread_cond_broadcast(&zc->cond);
	pthread_mutex_unlock(&b->ctx->work_lock);
	for (; gone != NULL; gone = v) {
		v = gone->next;
		zent_free(gone);
	}
	return ok_or_put(b, n, err, r);
}

/* Waits for e, which another reader is decoding: e, or NULL and *r if
 * that failed (the reference dropped). */
static struct tlog_zent *
wait_frame(struct tlog_fdbudget *b, struct tlog_zent *e, int *r)
{
	int err;

	pthread_mutex_lock(&b->ctx->work_lock);
	while (e->loading)
		pthread_cond_wait(&b->zc.cond, &b->ctx->work_lock);
	err = e->err;
	pthread_mutex_unlock(&b->ctx->work_lock);
	return ok_or_put(b, e, err, r);
}

ssize_t
tlog_seg_zread(struct tlog_segment *seg, int fd, void *buf, size_t len,
    uint64_t pos, uint64_t end, uint64_t *bad, uint64_t *badlen)
{
	struct tlog_fdbudget *b = seg->sd->fdb;
	struct tlog_zent *te, *fe[ZBATCH];
	const struct tlog_zs *t;
	bool later[ZBATCH], tlater;
	size_t done = 0, n;
	uint64_t at, off, stop;
	uint32_t first, j, k, nb, fail;
	int r = 0;

	*bad = UINT64_MAX;
	*badlen = 0;
	if ((te = get_frame(seg, fd, NULL, TABLE_FRAME, &r, &tlater)) !=
	    NULL && tlater)
		te = wait_frame(b, te, &r);
	if (te == NULL)
		return r == -EBADMSG ? -EIO : r;
	t = te->table;
	if (end > t->pos[t->n])
		end = t->pos[t->n];
	stop = end < pos + len ? end : pos + len;
	while ((at = pos + done) < stop) {
		/* The frames the rest of the read needs, a batch at a time:
		 * first those no other reader decodes, then the others. */
		first = tlog_zs_frame_at(t, at);
		for (nb = 0; nb < ZBATCH && first + nb < t->n &&
		    t->pos[first + nb] < stop; nb++)
			if ((fe[nb] = get_frame(seg, fd, t, first + nb, &r,
			    &later[nb])) == NULL)
				break;
		fail = nb;	/* the one that failed, if any */
		for (j = 0; r == 0 && j < nb; j++)
			if (later[j] && (fe[j] = wait_frame(b, fe[j], &r)) ==
			    NULL)
				fail = j;
		if (r != 0) {
			if (r == -EBADMSG) {
				*bad = t->pos[first + fail];
				*badlen = t->pos[first + fail + 1] - *bad;
				r = -EIO;
			}
			for (j = 0; j < nb; j++)
				if (j != fail)
					put(b, fe[j]);
			/* The whole read fails: a short one would look
			 * like the end of the file (to the kernel too), and
			 * the reader would never learn of the frames after
			 * it. */
			break;
		}
		for (j = 0; j < nb; j++) {
			k = first + j;
			off = at - t->pos[k];
			n = (size_t)(t->pos[k + 1] - at);
			if (n > stop - at)
				n = (size_t)(stop - at);
			memcpy((char *)buf + done, fe[j]->data + off, n);
			put(b, fe[j]);
			done += n;
			at += n;
		}
	}
	put(b, te);
	return r != 0 ? r : (ssize_t)done;
}
