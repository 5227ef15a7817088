/*
 * checkpoint.c - writing and reading the checkpoint (checkpoint.h).
 *
 * The layout is doc/format.md's table (little-endian). The offsets in an
 * entry, sealed (CKPT_ENT bytes) or active (CKPT_ACT): base 0, records 8,
 * bytes 16, first_ts 24, max_ts 32, the data file's inode number 40 and
 * ctime 48; then a sealed one's index entries 56 (u32), sealed_by 60 and
 * flags 61, or the active one's index's inode number 56 and ctime 64 and
 * its index entries 72 (u32).
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "checkpoint.h"
#include "index.h"
#include "util.h"

#define CKPT_MAGIC "TLOGCKP1"
#define CKPT_VERSION 2
#define CKPT_HDR 24
#define CKPT_PART 24		/* after the path: directory, count, flags */
#define CKPT_ENT 64
#define CKPT_ACT 80
#define CKPT_F_ACTIVE 1u
#define CKPT_S_ZST 1u		/* a sealed entry's byte 61: compressed */
#define CKPT_H_PERIODIC 1u	/* header flag: written while the store ran */
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

/* What a sealed segment can be: its counts (tlog_seal_sane), stamps in
 * order, a trigger that exists, offsets that fit. */
static bool
entry_sane(const unsigned char *e)
{
	uint64_t base = tlog_get64(e), records = tlog_get64(e + 8);

	return tlog_seal_sane(records, tlog_get64(e + 16)) &&
	    records <= UINT64_MAX - base &&
	    (int64_t)tlog_get64(e + 24) >= 0 &&
	    (int64_t)tlog_get64(e + 24) <= (int64_t)tlog_get64(e + 32) &&
	    e[60] > TLOG_TRIG_NONE && e[60] < TLOG_NTRIGGERS;
}

/* What an active segment can be at a clean close: its data ending at
 * its last index entry (records and entries, or neither), stamps in
 * order (none yet when empty), after the sealed ones. */
static bool
active_sane(const unsigned char *e, uint64_t after)
{
	uint64_t base = tlog_get64(e), records = tlog_get64(e + 8);
	uint64_t bytes = tlog_get64(e + 16);
	int64_t first = (int64_t)tlog_get64(e + 24);

	return base >= after && records <= bytes && bytes <= TLOG_CAP_BYTES &&
	    records <= UINT64_MAX - base && first >= -1 &&
	    first <= (int64_t)tlog_get64(e + 32) && tlog_get32(e + 76) == 0 &&
	    (records == 0 ? bytes == 0 && tlog_get32(e + 72) == 0 :
	    first >= 0 && tlog_get32(e + 72) > 0);
}

/* Walks the body: every part in bounds, every part's segments in order
 * without overlap and each one sane; false on the first thing that is
 * not so. A path named twice is dropped, both times. */
static bool
parse(struct tlog_ckpt *c, size_t size)
{
	const unsigned char *b = c->buf;
	size_t pos = CKPT_HDR, end = size - CKPT_TRAILER, i, j, k;
	uint64_t nparts = tlog_get64(b + end), prev;
	const unsigned char *e;
	uint32_t flags;

	if (nparts > (end - pos) / (3 + CKPT_PART))
		return false;
	if ((c->v = calloc(nparts ? nparts : 1, sizeof(*c->v))) == NULL)
		return false;
	for (k = 0; k < nparts; k++) {
		struct ckpt_index *x = &c->v[k];

		if (end - pos < 2)
			return false;
		x->len = (size_t)b[pos] | (size_t)b[pos + 1] << 8;
		pos += 2;
		if (x->len == 0 || end - pos < x->len + CKPT_PART)
			return false;
		x->path = (const char *)b + pos;
		pos += x->len;
		x->part.dir = b + pos;
		x->part.n = tlog_get32(b + pos + 16);
		flags = tlog_get32(b + pos + 20);
		pos += CKPT_PART;
		if ((flags & ~CKPT_F_ACTIVE) != 0 ||
		    (x->part.n == 0 && flags == 0) ||
		    x->part.n > (end - pos) / CKPT_ENT)
			return false;
		x->part.ent = b + pos;
		pos += x->part.n * CKPT_ENT;
		for (i = 0, prev = 0; i < x->part.n; i++) {
			e = x->part.ent + i * CKPT_ENT;
			if ((i > 0 && tlog_get64(e) < prev) || !entry_sane(e))
				return false;
			prev = tlog_get64(e) + tlog_get64(e + 8);
		}
		if (flags & CKPT_F_ACTIVE) {
			if (end - pos < CKPT_ACT || !active_sane(b + pos, prev))
				return false;
			x->part.act = b + pos;
			pos += CKPT_ACT;
		}
	}
	if (pos != end)
		return false;
	c->n = nparts;
	qsort(c->v, c->n, sizeof(*c->v), index_cmp);
	/* A path named twice (partitions swapped while a periodic
	 * checkpoint was built, one at a time): neither part is known to
	 * be the directory's now, so both go, and those partitions are
	 * read from their files. */
	for (k = 0, j = 0; k < c->n; k = i) {
		for (i = k + 1; i < c->n && index_cmp(&c->v[k], &c->v[i]) == 0;
		    i++)
			;
		if (i == k + 1)
			c->v[j++] = c->v[k];
	}
	c->n = j;
	return true;
}

struct tlog_ckpt *
tlog_ckpt_load(struct tlog_ctx *ctx, int storefd, bool was_clean,
    const uint64_t *nonce)
{
	struct tlog_ckpt *c = NULL;
	struct stat st;
	size_t size, got = 0;
	ssize_t r;
	const char *why = NULL;
	int fd = -1;

	/* Never through a link; a FIFO planted there never blocks; a
	 * device is never opened. */
	if (tlog_not_regular(storefd, TLOG_CKPT_PATH))
		why = "not a checkpoint";
	else if ((fd = tlog_open_beneath(storefd, TLOG_CKPT_PATH, O_RDONLY |
	    O_NONBLOCK | O_CLOEXEC)) == -ENOENT)
		return NULL;
	else if (fd < 0)
		why = strerror(-fd);
	else if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size < CKPT_HDR + CKPT_TRAILER ||
	    (uint64_t)st.st_size >= CKPT_MAX)
		why = "not a checkpoint";
	else if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->buf = malloc((size_t)st.st_size)) == NULL)
		why = strerror(ENOMEM);
	if (why != NULL)
		goto bad;
	size = (size_t)st.st_size;
	while (got < size && (r = pread(fd, c->buf + got, size - got,
	    (off_t)got)) > 0)
		got += (size_t)r;
	if (got != size)
		why = "short read";
	/* Version 1 (an older tlogfs's) did not record the active
	 * segments: read as without one, once. */
	else if (memcmp(c->buf, CKPT_MAGIC, 8) == 0 &&
	    tlog_get32(c->buf + 8) < CKPT_VERSION)
		why = "written by an older tlogfs";
	else if (memcmp(c->buf, CKPT_MAGIC, 8) != 0 ||
	    tlog_get32(c->buf + 8) != CKPT_VERSION ||
	    tlog_get32(c->buf + size - 4) !=
	    tlog_crc32c(0, c->buf, size - 4) || !parse(c, size))
		why = "damaged";
	if (why != NULL)
		goto bad;
	/* A clean close's is that close's record only with its mark (a
	 * tlogfs that knows no checkpoint may have closed the store
	 * since); a periodic one needs none (checkpoint.h). */
	if (!(tlog_get32(c->buf + 12) & CKPT_H_PERIODIC) &&
	    (nonce == NULL || tlog_get64(c->buf + 16) != *nonce)) {
		/* After a crash (no mark), what a clean close left behind
		 * is not news: every index is read, as ever. */
		if (nonce != NULL || was_clean)
			why = "not written by the last clean close";
		goto bad;
	}
	close(fd);
	return c;
bad:
	if (fd >= 0)
		close(fd);
	if (why != NULL)
		tlog_ctx_log(ctx, LOG_WARNING, "%s: %s; every segment's index "
		    "is read instead", TLOG_CKPT_PATH, why);
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
tlog_ckpt_periodic(const struct tlog_ckpt *c)
{
	return c != NULL && (tlog_get32(c->buf + 12) & CKPT_H_PERIODIC);
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

/* The identity of st at b: its inode number, its ctime in ns. */
static void
put_id(unsigned char *b, const struct stat *st)
{
	tlog_put64(b, (uint64_t)st->st_ino);
	tlog_put64(b + 8, (uint64_t)st->st_ctim.tv_sec * 1000000000u +
	    (uint64_t)st->st_ctim.tv_nsec);
}

bool
tlog_ckpt_same(const unsigned char *id, const struct stat *st)
{
	unsigned char b[16];

	put_id(b, st);
	return memcmp(b, id, sizeof(b)) == 0;
}

/* The identity of the segment file base + ext in dfd at b, its stat in
 * *st (one stat, never through a link, no file opened); false if it
 * cannot be looked at. */
static bool
put_file(unsigned char *b, int dfd, uint64_t base, const char *ext,
    struct stat *st)
{
	char name[32];

	tlog_segname_format(base, ext, name, sizeof(name));
	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) == -1)
		return false;
	put_id(b, st);
	return true;
}

uint64_t
tlog_ckpt_base(const struct tlog_ckpt_part *cp, size_t i)
{
	return tlog_get64(cp->ent + i * CKPT_ENT);
}

/* What both kinds of entry start with (base, records, bytes, first_ts,
 * max_ts): a new segment of p with those, not yet linked; NULL when out
 * of memory. */
static struct tlog_segment *
entry_segment(struct tlog_partition *p, const unsigned char *e)
{
	struct tlog_segment *seg;

	if ((seg = tlog_seg_new(&p->sd, tlog_get64(e))) == NULL)
		return NULL;
	seg->records = (uint32_t)tlog_get64(e + 8);
	seg->bytes = tlog_get64(e + 16);
	seg->first_ts = (int64_t)tlog_get64(e + 24);
	seg->max_ts = (int64_t)tlog_get64(e + 32);
	return seg;
}

/* entry_segment's inverse: seg's counters and stamps. */
static void
entry_put(unsigned char *b, const struct tlog_segment *seg)
{
	tlog_put64(b, seg->base);
	tlog_put64(b + 8, seg->records);
	tlog_put64(b + 16, seg->bytes);
	tlog_put64(b + 24, (uint64_t)seg->first_ts);
	tlog_put64(b + 32, (uint64_t)seg->max_ts);
}

/* Whether the segment file base + ext in dfd is a regular file and still
 * the one whose identity the checkpoint holds at id; its stat in *st. */
static bool
same_file(int dfd, uint64_t base, const char *ext, const unsigned char *id,
    struct stat *st)
{
	unsigned char b[16];

	return put_file(b, dfd, base, ext, st) && S_ISREG(st->st_mode) &&
	    memcmp(b, id, sizeof(b)) == 0;
}

struct tlog_segment *
tlog_ckpt_segment(struct tlog_partition *p, const struct tlog_ckpt_part *cp,
    size_t i, int dfd)
{
	const unsigned char *e = cp->ent + i * CKPT_ENT;
	bool z = (e[61] & CKPT_S_ZST) != 0;
	struct tlog_segment *seg;
	struct stat st;

	if (!same_file(dfd, tlog_get64(e), z ? ".log.zst" : ".log", e + 40,
	    &st))
		return NULL;
	/* A compressed file's size is its own; a plain one's, the entry's. */
	if (z ? st.st_size <= 0 || (uint64_t)st.st_size > TLOG_CAP_BYTES :
	    (uint64_t)st.st_size != tlog_get64(e + 16))
		return NULL;
	if ((seg = entry_segment(p, e)) == NULL)
		return NULL;
	seg->nidx = tlog_get32(e + 56);
	seg->sealed_by = e[60];
	seg->sealed = 1;
	seg->flushed = 1;
	if (z)
		seg->zbytes = (uint32_t)st.st_size;
	tlog_seg_idle(seg);	/* not listed yet: ours alone */
	return seg;
}

struct tlog_segment *
tlog_ckpt_active(struct tlog_partition *p, const struct tlog_ckpt_part *cp,
    uint64_t base, int dfd)
{
	const unsigned char *e = cp->act;
	uint64_t nidx, alloc;
	struct tlog_segment *seg;
	struct stat st;

	if (e == NULL || tlog_get64(e) != base)
		return NULL;
	nidx = tlog_get32(e + 72);
	/* The index: its header and entries, no footer. */
	if (base + tlog_get64(e + 8) < p->saved_end ||
	    !same_file(dfd, base, ".idx", e + 56, &st) ||
	    (uint64_t)st.st_size != TLOG_IDX_HDR + nidx * TLOG_IDX_ENT ||
	    !same_file(dfd, base, ".log", e + 40, &st) ||
	    (uint64_t)st.st_size != tlog_get64(e + 16) ||
	    (seg = entry_segment(p, e)) == NULL)
		return NULL;
	seg->nidx = (uint32_t)nidx;
	/* Its last entry ends it (active_sane, and the close wrote it
	 * only so): the append state tlog_seg_live makes again. What it
	 * holds reserved stays reserved until its seal, as when loaded
	 * from its files (repair.c). */
	if (nidx > 0) {
		seg->live->last_idx_rel = seg->records;
		seg->live->last_idx_pos = (uint32_t)seg->bytes;
	}
	alloc = (uint64_t)st.st_blocks * 512;
	if (alloc > ((seg->bytes + 4095) & ~4095ULL))
		seg->live->prealloc = alloc;
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
	void *nb;

	while (!o->failed && o->cap - o->len < n) {
		if ((nb = tlog_grow(o->b, &o->cap, o->cap, 1, 65536)) == NULL)
			o->failed = true;
		else
			o->b = nb;
	}
	if (o->failed)
		return NULL;
	o->len += n;
	return o->b + o->len - n;
}

/* Entry b for the active segment seg of the partition in dfd; false if
 * its files cannot be looked at (recovery then reads them). */
static bool
put_active(unsigned char *b, const struct tlog_segment *seg, int dfd)
{
	struct stat st;

	entry_put(b, seg);
	tlog_put32(b + 72, (uint32_t)seg->nidx);
	tlog_put32(b + 76, 0);
	return put_file(b + 40, dfd, seg->base, ".log", &st) &&
	    put_file(b + 56, dfd, seg->base, ".idx", &st);
}

/* Sealed entry b for seg: all but its data file's identity, which
 * add_part puts once the partition's lock is dropped. */
static void
put_sealed(unsigned char *b, const struct tlog_segment *seg)
{
	entry_put(b, seg);
	tlog_put32(b + 56, (uint32_t)seg->nidx);
	memset(b + 60, 0, 4);
	b[60] = seg->sealed_by;
	if (seg->zbytes != 0)
		b[61] = CKPT_S_ZST;
}

/* p's part, as tlog_ckpt_write says (a periodic one stops at the first
 * sealed segment not flushed); false, with nothing added, if it has no
 * segment to name or a sealed one's file cannot be looked at: recovery
 * reads such a partition as without a checkpoint. */
static bool
add_part(struct out *o, struct tlog_partition *p, bool periodic)
{
	char where[2 * TLOG_NAME_MAX + 2];
	struct tlog_segment *seg;
	struct stat st;
	unsigned char *b;
	size_t start = o->len, len, ents;
	uint32_t n = 0, flags = 0, i;
	bool ok = true;
	int dfd;

	tlog_level_where(&p->lv, where, sizeof(where));
	len = strlen(where);
	if ((dfd = tlog_level_dir(&p->lv)) < 0)
		return false;
	if (fstat(dfd, &st) == -1 ||
	    (b = out_take(o, 2 + len + CKPT_PART)) == NULL) {
		close(dfd);
		return false;
	}
	b[0] = (unsigned char)len;
	b[1] = (unsigned char)(len >> 8);
	memcpy(b + 2, where, len);
	put_id(b + 2 + len, &st);
	ents = o->len;
	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link) {
		if (!seg->sealed || n == UINT32_MAX || (periodic &&
		    (!seg->flushed || seg->trim_pending)) ||
		    (b = out_take(o, CKPT_ENT)) == NULL)
			break;
		put_sealed(b, seg);
		n++;
	}
	if (!periodic && seg != NULL && !seg->sealed &&
	    seg == TAILQ_LAST(&p->segs, tlog_seglist) &&
	    tlog_seg_ends_indexed(seg) &&
	    (b = out_take(o, CKPT_ACT)) != NULL) {
		if (put_active(b, seg, dfd))
			flags |= CKPT_F_ACTIVE;
		else
			o->len -= CKPT_ACT;
	}
	pthread_mutex_unlock(&p->sd.lock);
	/* A sealed segment's file never changes: one stat with no lock held
	 * will do, and a partition of many segments is never held up by
	 * them. One gone since leaves the partition out. */
	for (i = 0; ok && !o->failed && i < n; i++) {
		b = o->b + ents + i * CKPT_ENT;
		ok = put_file(b + 40, dfd, tlog_get64(b), b[61] & CKPT_S_ZST ?
		    ".log.zst" : ".log", &st);
	}
	close(dfd);
	if (!ok || o->failed || (n == 0 && flags == 0)) {
		o->len = start;
		return false;
	}
	tlog_put32(o->b + start + 2 + len + 16, n);
	tlog_put32(o->b + start + 2 + len + 20, flags);
	return true;
}

int
tlog_ckpt_write(int storefd, uint64_t nonce, bool periodic,
    struct tlog_partition **v, size_t n, struct tlog_partition *ev)
{
	struct out o = { 0 };
	unsigned char *b;
	uint64_t nparts = 0;
	size_t i;
	int r;

	if ((b = out_take(&o, CKPT_HDR)) != NULL) {
		memcpy(b, CKPT_MAGIC, 8);
		tlog_put32(b + 8, CKPT_VERSION);
		tlog_put32(b + 12, periodic ? CKPT_H_PERIODIC : 0);
		tlog_put64(b + 16, nonce);
	}
	for (i = 0; i < n; i++)
		nparts += add_part(&o, v[i], periodic);
	if (ev != NULL)
		nparts += add_part(&o, ev, periodic);
	if ((b = out_take(&o, CKPT_TRAILER)) != NULL) {
		tlog_put64(b, nparts);
		tlog_put32(b + 8, tlog_crc32c(0, o.b, o.len - 4));
	}
	/* The footers of the segments it names were written before it was
	 * built; the syncfs puts them on disk before the file that vouches
	 * for them (a clean close has synced everything already). */
	if (o.failed)
		r = -ENOMEM;
	else if (periodic && syncfs(storefd) == -1)
		r = -errno;
	else
		r = tlog_write_atomic(storefd, TLOG_CKPT_PATH, o.b, o.len);
	free(o.b);
	return r;
}
