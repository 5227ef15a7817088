/*
 * zseek.c - the zstd seekable format (zseek.h): writing independent
 * frames and their seek table, loading a table and decoding one frame.
 * Written from the format's public description; it shares no code with
 * zstd's contrib implementation. Only libzstd's one-shot calls are used.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "index.h"
#include "util.h"
#include "zseek.h"

#define ENTRY_SIZE 12

/* len bytes at at; short: the file ended before them. 0 or -errno. */
static int
pread_all(int fd, void *buf, size_t len, uint64_t at, int short_err)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done,
		    (off_t)(at + done));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return short_err;
		done += (size_t)n;
	}
	return 0;
}

int
tlog_zw_init(struct tlog_zw *w, int fd, int level)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	if ((w->cctx = ZSTD_createCCtx()) == NULL)
		return -ENOMEM;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx,
	    ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag,
	    1))) {
		tlog_zw_free(w);
		return -EINVAL;
	}
	w->zcap = ZSTD_compressBound(TLOG_ZS_FRAME);
	if ((w->zbuf = malloc(w->zcap)) == NULL) {
		tlog_zw_free(w);
		return -ENOMEM;
	}
	return 0;
}

void
tlog_zw_free(struct tlog_zw *w)
{
	ZSTD_freeCCtx(w->cctx);
	free(w->zbuf);
	free(w->e);
	w->cctx = NULL;
	w->zbuf = NULL;
	w->e = NULL;
}

int
tlog_zw_from(struct tlog_zw *w, int infd, uint64_t *pos, uint64_t end,
    void *buf)
{
	uint64_t left = end - *pos;
	size_t len = left > TLOG_ZS_FRAME ? TLOG_ZS_FRAME : (size_t)left;
	unsigned char *e;
	const char *nl;
	size_t z;
	int r;

	if (*pos >= end)
		return -EINVAL;
	if ((r = pread_all(infd, buf, len, *pos, -EIO)) != 0)
		return r;
	/* All the rest if it fits, else through the last newline, else a
	 * whole frame (a record longer than one). */
	if (len < left && (nl = memrchr(buf, '\n', len)) != NULL)
		len = (size_t)(nl - (const char *)buf) + 1;
	if ((e = tlog_grow(w->e, &w->cap, w->n, ENTRY_SIZE, 64)) == NULL)
		return -ENOMEM;
	w->e = e;
	z = ZSTD_compress2(w->cctx, w->zbuf, w->zcap, buf, len);
	if (ZSTD_isError(z) || z < 4)
		return -EIO;
	if ((r = tlog_pwrite_all(w->fd, w->zbuf, z, (off_t)w->zpos)) != 0)
		return r;
	e = w->e + w->n++ * ENTRY_SIZE;
	tlog_put32(e, (uint32_t)z);
	tlog_put32(e + 4, (uint32_t)len);
	/* The frame's trailer is the checksum the table repeats. */
	memcpy(e + 8, (const unsigned char *)w->zbuf + z - 4, 4);
	w->zpos += z;
	*pos += len;
	return 0;
}

int
tlog_zw_finish(struct tlog_zw *w)
{
	size_t len = 8 + w->n * ENTRY_SIZE + TLOG_ZS_FOOT;
	unsigned char *b, *p;
	int r;

	if (w->n > UINT32_MAX / ENTRY_SIZE - 64)
		return -EFBIG;
	if ((b = malloc(len)) == NULL)
		return -ENOMEM;
	tlog_put32(b, TLOG_ZS_SKIP_MAGIC);
	tlog_put32(b + 4, (uint32_t)(len - 8));
	if (w->n > 0)
		memcpy(b + 8, w->e, w->n * ENTRY_SIZE);
	p = b + 8 + w->n * ENTRY_SIZE;
	tlog_put32(p, (uint32_t)w->n);
	p[4] = TLOG_ZS_F_SUM;
	tlog_put32(p + 5, TLOG_ZS_MAGIC);
	r = tlog_pwrite_all(w->fd, b, len, (off_t)w->zpos);
	free(b);
	if (r == 0)
		w->zpos += len;
	return r;
}

void
tlog_zs_free(struct tlog_zs *t)
{
	if (t == NULL)
		return;
	free(t->pos);
	free(t);
}

int
tlog_zs_load(int fd, struct tlog_zs **out)
{
	unsigned char foot[TLOG_ZS_FOOT], *b = NULL;
	struct tlog_zs *t = NULL;
	uint64_t fsize, tlen, esz, n, i;
	struct stat st;
	unsigned char d;
	int r;

	*out = NULL;
	if (fstat(fd, &st) == -1)
		return -errno;
	fsize = (uint64_t)st.st_size;
	if (fsize < 8 + TLOG_ZS_FOOT)
		return -EBADMSG;
	if ((r = pread_all(fd, foot, sizeof(foot), fsize - sizeof(foot),
	    -EBADMSG)) != 0)
		return r;
	d = foot[4];
	if (tlog_get32(foot + 5) != TLOG_ZS_MAGIC || (d & 0x7c) != 0)
		return -EBADMSG;
	n = tlog_get32(foot);
	esz = (d & TLOG_ZS_F_SUM) ? ENTRY_SIZE : 8;
	tlen = 8 + n * esz + TLOG_ZS_FOOT;
	if (tlen > fsize)
		return -EBADMSG;
	if ((b = malloc(tlen)) == NULL)
		return -ENOMEM;
	if ((r = pread_all(fd, b, tlen, fsize - tlen, -EBADMSG)) != 0)
		goto out;
	r = -EBADMSG;
	if (tlog_get32(b) != TLOG_ZS_SKIP_MAGIC ||
	    tlog_get32(b + 4) != tlen - 8)
		goto out;
	r = -ENOMEM;
	if ((t = calloc(1, sizeof(*t))) == NULL ||
	    (t->pos = calloc(2 * (n + 1), sizeof(uint64_t))) == NULL)
		goto out;
	t->zpos = t->pos + n + 1;
	t->n = (uint32_t)n;
	r = -EBADMSG;
	for (i = 0; i < n; i++) {
		const unsigned char *e = b + 8 + i * esz;
		uint32_t zs = tlog_get32(e), ps = tlog_get32(e + 4);

		/* Every frame holds something and at most a frame's worth:
		 * a table saying otherwise was not written here. */
		if (zs == 0 || ps == 0 || ps > TLOG_ZS_FRAME_MAX)
			goto out;
		t->zpos[i + 1] = t->zpos[i] + zs;
		t->pos[i + 1] = t->pos[i] + ps;
	}
	if (t->zpos[n] != fsize - tlen)
		goto out;
	r = 0;
	*out = t;
	t = NULL;
out:
	free(b);
	tlog_zs_free(t);
	return r;
}

int
tlog_zs_walk(int fd, uint64_t *plain)
{
	size_t cap = ZSTD_compressBound(TLOG_ZS_FRAME_MAX), got, n;
	unsigned long long cs;
	uint64_t at = 0;
	struct stat st;
	void *b;
	int r = 0;

	*plain = 0;
	if (fstat(fd, &st) == -1)
		return -errno;
	if ((b = malloc(cap)) == NULL)
		return -ENOMEM;
	while (at < (uint64_t)st.st_size) {
		got = (uint64_t)st.st_size - at < cap ?
		    (size_t)((uint64_t)st.st_size - at) : cap;
		if ((r = pread_all(fd, b, got, at, -EIO)) != 0)
			break;
		n = ZSTD_findFrameCompressedSize(b, got);
		cs = ZSTD_getFrameContentSize(b, got);
		/* The table's skippable frame says 0; an unknown size is
		 * not one this writer wrote. */
		if (ZSTD_isError(n) || cs == ZSTD_CONTENTSIZE_ERROR ||
		    cs == ZSTD_CONTENTSIZE_UNKNOWN || cs == 0)
			break;
		*plain += cs;
		at += n;
	}
	free(b);
	return r;
}

uint32_t
tlog_zs_frame_at(const struct tlog_zs *t, uint64_t pos)
{
	uint32_t lo = 0, hi = t->n;

	/* The last frame whose start is at or before pos. */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->pos[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Each thread's decompression context, kept for its next frame (a new
 * one costs more than decoding a small frame); freed when the thread
 * ends. */
static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;
static bool dctx_keyed;

static void
dctx_free(void *d)
{
	ZSTD_freeDCtx(d);
}

static void
dctx_init(void)
{
	dctx_keyed = pthread_key_create(&dctx_key, dctx_free) == 0;
}

static ZSTD_DCtx *
dctx_get(bool *own)
{
	ZSTD_DCtx *d;

	pthread_once(&dctx_once, dctx_init);
	*own = !dctx_keyed;
	if (dctx_keyed && (d = pthread_getspecific(dctx_key)) != NULL)
		return d;
	if ((d = ZSTD_createDCtx()) != NULL && dctx_keyed &&
	    pthread_setspecific(dctx_key, d) != 0)
		*own = true;
	return d;
}

int
tlog_zs_read_frame(int fd, const struct tlog_zs *t, uint32_t i, void *dst)
{
	ZSTD_DCtx *d;
	bool own;
	size_t zs, ps, got;
	unsigned char *src;
	int r;

	if (i >= t->n)
		return -EINVAL;
	zs = (size_t)(t->zpos[i + 1] - t->zpos[i]);
	ps = (size_t)(t->pos[i + 1] - t->pos[i]);
	if ((src = malloc(zs)) == NULL)
		return -ENOMEM;
	if ((r = pread_all(fd, src, zs, t->zpos[i], -EBADMSG)) != 0)
		goto out;
	/* One whole frame of exactly its size, its checksum verified by
	 * libzstd (a frame without one is not ours). */
	r = -EBADMSG;
	if (zs < 6 || tlog_get32(src) != ZSTD_MAGICNUMBER ||
	    !(src[4] & 0x04) || ZSTD_findFrameCompressedSize(src, zs) != zs ||
	    ZSTD_getFrameContentSize(src, zs) != ps)
		goto out;
	r = -ENOMEM;
	if ((d = dctx_get(&own)) == NULL)
		goto out;
	got = ZSTD_decompressDCtx(d, dst, ps, src, zs);
	if (own)
		ZSTD_freeDCtx(d);
	if (ZSTD_isError(got))
		r = ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation ?
		    -ENOMEM : -EBADMSG;
	else
		r = got == ps ? 0 : -EBADMSG;
out:
	free(src);
	return r;
}
