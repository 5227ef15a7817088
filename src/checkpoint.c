/*
 * checkpoint.c - the clean close's record of every sealed segment
 * (doc/format.md, "The checkpoint"). A clean open would otherwise read
 * two inodes and a block per segment (the data file's size, the index's
 * footer); with the checkpoint it reads one file and the directory
 * listings it reads anyway, much as `ls -R` does. Kafka keeps a
 * recovery-point checkpoint per log directory for the same reason.
 *
 * The file: a 24-byte header ("TLOGCKP1", version, flags, the close's
 * nonce, which the clean mark repeats), then for
 * each partition its path (u16 length, bytes), its directory's identity
 * (inode number and ctime in ns, u64 each), its count of entries (u32)
 * and the entries (64 bytes each: base, records, bytes, first_ts,
 * max_ts, the data file's inode number and ctime in ns, index entries
 * as u32, sealed_by, 3 zero bytes), then a
 * trailer: the count of partitions (u64) and the CRC-32C of everything
 * before it (u32). Little-endian, like every tlogfs file.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "checkpoint.h"
#include "util.h"

#define CKPT_MAGIC "TLOGCKP1"
#define CKPT_VERSION 1
#define CKPT_HDR 24
#define CKPT_ENT 64
#define CKPT_TRAILER 12
#define CKPT_MAX ((size_t)1 << 32)	/* larger is not ours */

struct ckpt_index {
	const char *path;
	size_t len;
	struct tlog_ckpt_part part;
};

struct tlog_ckpt {
	unsigned char *buf;
	struct ckpt_index *v;	/* sorted by path */
	size_t n;
};

static int
index_cmp(const void *a, const void *b)
{
	const struct ckpt_index *x = a, *y = b;
	size_t m = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->path, y->path, m);

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* What a sealed segment can be: at least one record, each of at least
 * one byte, stamps in order, a trigger that exists, offsets that fit. */
static bool
entry_sane(const struct tlog_ckpt_part *cp, size_t i)
{
	const unsigned char *e = cp->ent + i * CKPT_ENT;
	uint64_t base = tlog_get64(e), records = tlog_get64(e + 8);

	return records > 0 && records <= tlog_get64(e + 16) &&
	    tlog_get64(e + 16) <= TLOG_CAP_BYTES &&
	    records <= UINT64_MAX - base &&
	    (int64_t)tlog_get64(e + 24) >= 0 &&
	    (int64_t)tlog_get64(e + 24) <= (int64_t)tlog_get64(e + 32) &&
	    e[60] > TLOG_TRIG_NONE && e[60] < TLOG_NTRIGGERS;
}

/* Walks the body: every part in bounds, every part's segments in order
 * without overlap and each one sane, each path once; false on the first
 * thing that is not so. */
static bool
parse(struct tlog_ckpt *c, size_t size)
{
	const unsigned char *b = c->buf;
	size_t pos = CKPT_HDR, end = size - CKPT_TRAILER, i, k;
	uint64_t nparts = tlog_get64(b + end), base, prev;

	if (nparts > (end - pos) / 23)
		return false;
	if ((c->v = calloc(nparts ? nparts : 1, sizeof(*c->v))) == NULL)
		return false;
	for (k = 0; k < nparts; k++) {
		struct ckpt_index *x = &c->v[k];

		if (end - pos < 2)
			return false;
		x->len = (size_t)b[pos] | (size_t)b[pos + 1] << 8;
		pos += 2;
		if (x->len == 0 || end - pos < x->len + 20)
			return false;
		x->path = (const char *)b + pos;
		pos += x->len;
		x->part.dir.ino = tlog_get64(b + pos);
		x->part.dir.ctime = tlog_get64(b + pos + 8);
		x->part.n = tlog_get32(b + pos + 16);
		pos += 20;
		if (x->part.n == 0 || x->part.n > (end - pos) / CKPT_ENT)
			return false;
		x->part.ent = b + pos;
		pos += x->part.n * CKPT_ENT;
		for (i = 0, prev = 0; i < x->part.n; i++) {
			base = tlog_ckpt_base(&x->part, i);
			if ((i > 0 && base < prev) || !entry_sane(&x->part, i))
				return false;
			prev = base + tlog_get64(x->part.ent + i * CKPT_ENT + 8);
		}
	}
	if (pos != end)
		return false;
	c->n = nparts;
	qsort(c->v, c->n, sizeof(*c->v), index_cmp);
	for (k = 1; k < c->n; k++)
		if (index_cmp(&c->v[k - 1], &c->v[k]) == 0)
			return false;
	return true;
}

struct tlog_ckpt *
tlog_ckpt_load(struct tlog_ctx *ctx, int storefd, const uint64_t *nonce)
{
	struct tlog_ckpt *c = NULL;
	struct stat st;
	size_t size = 0, got = 0;
	ssize_t r;
	const char *why = NULL;
	int fd;

	/* Never through a link; a FIFO planted there never blocks. */
	fd = tlog_open_beneath(storefd, TLOG_CKPT_PATH, O_RDONLY | O_NONBLOCK |
	    O_CLOEXEC, 0);
	if (fd == -ENOENT)
		return NULL;
	if (fd < 0) {
		why = strerror(-fd);
		goto bad;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size < CKPT_HDR + CKPT_TRAILER ||
	    (uint64_t)st.st_size >= CKPT_MAX) {
		why = "not a checkpoint";
		goto bad;
	}
	size = (size_t)st.st_size;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->buf = malloc(size)) == NULL) {
		why = strerror(ENOMEM);
		goto bad;
	}
	while (got < size && (r = pread(fd, c->buf + got, size - got,
	    (off_t)got)) > 0)
		got += (size_t)r;
	if (got != size) {
		why = "short read";
		goto bad;
	}
	if (memcmp(c->buf, CKPT_MAGIC, 8) != 0 ||
	    tlog_get32(c->buf + 8) != CKPT_VERSION ||
	    tlog_get32(c->buf + size - 4) !=
	    tlog_crc32c(0, c->buf, size - 4) || !parse(c, size)) {
		why = "damaged";
		goto bad;
	}
	/* Written by another close than the one whose mark is there (a
	 * version of tlogfs that knows no checkpoint closed the store
	 * since): not this close's record. */
	if (nonce == NULL || tlog_get64(c->buf + 16) != *nonce) {
		why = "not written by the last clean close";
		goto bad;
	}
	close(fd);
	return c;
bad:
	if (fd >= 0)
		close(fd);
	tlog_ctx_log(ctx, LOG_WARNING, "%s: %s; every segment's index is read "
	    "instead", TLOG_CKPT_PATH, why);
	tlog_ckpt_free(c);
	return NULL;
}

void
tlog_ckpt_free(struct tlog_ckpt *c)
{
	if (c == NULL)
		return;
	free(c->v);
	free(c->buf);
	free(c);
}

bool
tlog_ckpt_find(const struct tlog_ckpt *c, const char *where,
    struct tlog_ckpt_part *out)
{
	struct ckpt_index key, *x;

	if (c == NULL)
		return false;
	key.path = where;
	key.len = strlen(where);
	x = bsearch(&key, c->v, c->n, sizeof(*c->v), index_cmp);
	if (x == NULL)
		return false;
	*out = x->part;
	return true;
}

uint64_t
tlog_ckpt_ctime(const struct stat *st)
{
	return (uint64_t)st->st_ctim.tv_sec * 1000000000u +
	    (uint64_t)st->st_ctim.tv_nsec;
}

bool
tlog_ckpt_same(const struct tlog_ckpt_file *f, const struct stat *st)
{
	return f->ino == (uint64_t)st->st_ino &&
	    f->ctime == tlog_ckpt_ctime(st);
}

uint64_t
tlog_ckpt_base(const struct tlog_ckpt_part *cp, size_t i)
{
	return tlog_get64(cp->ent + i * CKPT_ENT);
}

struct tlog_segment *
tlog_ckpt_segment(struct tlog_partition *p, const struct tlog_ckpt_part *cp,
    size_t i, struct tlog_ckpt_file *file)
{
	const unsigned char *e = cp->ent + i * CKPT_ENT;
	struct tlog_segment *seg;

	/* A record takes a byte at least: anything else is not this
	 * store's checkpoint, and the files say what the segment is. */
	if (tlog_get64(e + 8) > tlog_get64(e + 16))
		return NULL;
	if ((seg = tlog_seg_new(&p->sd, tlog_get64(e))) == NULL)
		return NULL;
	seg->records = (uint32_t)tlog_get64(e + 8);
	seg->bytes = tlog_get64(e + 16);
	seg->first_ts = (int64_t)tlog_get64(e + 24);
	seg->max_ts = (int64_t)tlog_get64(e + 32);
	file->ino = tlog_get64(e + 40);
	file->ctime = tlog_get64(e + 48);
	seg->nidx = tlog_get32(e + 56);
	seg->sealed_by = e[60];
	seg->sealed = 1;
	tlog_seg_idle(seg);	/* not listed yet: ours alone */
	return seg;
}

/* A growing buffer; on allocation failure `failed` and nothing more. */
struct out {
	unsigned char *b;
	size_t len, cap;
	bool failed;
};

static unsigned char *
out_take(struct out *o, size_t n)
{
	unsigned char *nb;
	size_t nc;

	if (o->failed)
		return NULL;
	if (o->cap - o->len < n) {
		for (nc = o->cap ? o->cap : 65536; nc - o->len < n; nc *= 2)
			;
		if ((nb = realloc(o->b, nc)) == NULL) {
			o->failed = true;
			return NULL;
		}
		o->b = nb;
		o->cap = nc;
	}
	o->len += n;
	return o->b + o->len - n;
}

/* p's path, directory and sealed segments; false if it has none, or
 * if a file of theirs cannot be looked at (then nothing is added:
 * recovery reads such a partition as it would without). */
static bool
add_part(struct out *o, struct tlog_partition *p)
{
	char where[2 * TLOG_NAME_MAX + 2], name[32];
	struct tlog_segment *seg;
	struct stat st;
	unsigned char *b;
	size_t start = o->len, len;
	uint32_t n = 0;
	bool ok = true;
	int dfd;

	tlog_level_path(&p->lv, where, sizeof(where));
	len = strlen(where);
	if ((dfd = tlog_level_dir(&p->lv)) < 0)
		return false;
	if (fstat(dfd, &st) == -1 || (b = out_take(o, 2 + len + 20)) == NULL) {
		close(dfd);
		return false;
	}
	b[0] = (unsigned char)len;
	b[1] = (unsigned char)(len >> 8);
	memcpy(b + 2, where, len);
	tlog_put64(b + 2 + len, (uint64_t)st.st_ino);
	tlog_put64(b + 2 + len + 8, tlog_ckpt_ctime(&st));
	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link) {
		if (!seg->sealed || n == UINT32_MAX)
			break;
		tlog_segname_format(seg->base, ".log", name, sizeof(name));
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    (b = out_take(o, CKPT_ENT)) == NULL) {
			ok = false;
			break;
		}
		tlog_put64(b, seg->base);
		tlog_put64(b + 8, seg->records);
		tlog_put64(b + 16, seg->bytes);
		tlog_put64(b + 24, (uint64_t)seg->first_ts);
		tlog_put64(b + 32, (uint64_t)seg->max_ts);
		tlog_put64(b + 40, (uint64_t)st.st_ino);
		tlog_put64(b + 48, tlog_ckpt_ctime(&st));
		tlog_put32(b + 56, (uint32_t)seg->nidx);
		memset(b + 60, 0, 4);
		b[60] = seg->sealed_by;
		n++;
	}
	pthread_mutex_unlock(&p->sd.lock);
	close(dfd);
	if (!ok || o->failed || n == 0) {
		o->len = start;
		return false;
	}
	tlog_put32(o->b + start + 2 + len + 16, n);
	return true;
}

int
tlog_ckpt_write(int storefd, uint64_t nonce, struct tlog_partition **v,
    size_t n, struct tlog_partition *ev)
{
	struct out o = { 0 };
	unsigned char *b;
	uint64_t nparts = 0;
	size_t i;
	int r;

	if ((b = out_take(&o, CKPT_HDR)) != NULL) {
		memcpy(b, CKPT_MAGIC, 8);
		tlog_put32(b + 8, CKPT_VERSION);
		tlog_put32(b + 12, 0);
		tlog_put64(b + 16, nonce);
	}
	for (i = 0; i < n; i++)
		nparts += add_part(&o, v[i]);
	if (ev != NULL)
		nparts += add_part(&o, ev);
	if ((b = out_take(&o, CKPT_TRAILER)) != NULL) {
		tlog_put64(b, nparts);
		tlog_put32(b + 8, tlog_crc32c(0, o.b, o.len - 4));
	}
	r = o.failed ? -ENOMEM : tlog_write_atomic(storefd, TLOG_CKPT_PATH,
	    o.b, o.len);
	free(o.b);
	return r;
}
