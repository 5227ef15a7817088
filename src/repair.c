/*
 * repair.c - loading one segment at open, and repairing what a crash or
 * corruption left behind (recover.c loads a partition's segments with
 * it; doc/format.md, "Recovery", says what each case gets).
 *
 * A sealed segment whose intact footer agrees with the data file's size
 * is taken as it is, from the index's header and footer alone. Otherwise
 * the data is the truth: the index is cut, rebuilt or rewritten to agree
 * with it, never the other way round, and the data is only ever cut (an
 * unfinished line; after a power cut, what nothing vouches for). One bad
 * segment is logged and never stops the store opening.
 *
 * A read-only open (tlog_store_opts.readonly) makes the same repairs in
 * memory only, changing no file: what a cut would drop is not served, a
 * repaired index is kept in memory for look-ups.
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

#include "repair.h"

struct entries {
	struct tlog_idx_entry *e;
	size_t n, cap;
	size_t crc_from;	/* the first entry without its data CRC */
};

/* Adds an entry whose data CRC is computed later (data_crcs). */
static int
entries_push(struct entries *v, uint64_t rel, uint64_t pos, int64_t ts)
{
	void *ne;

	if ((ne = tlog_grow(v->e, &v->cap, v->n, sizeof(*v->e), 64)) == NULL)
		return -ENOMEM;
	v->e = ne;
	if (v->crc_from > v->n)
		v->crc_from = v->n;
	v->e[v->n++] = (struct tlog_idx_entry){ (uint32_t)rel, (uint32_t)pos,
		ts, 0 };
	return 0;
}

/*
 * The data CRC of entries k..n-1 of e: each over the bytes from the entry
 * before (or the start) to its own position. With check, returns the
 * index of the first entry whose stored CRC differs (n if none);
 * otherwise stores them and returns n. A read error gives -errno; data
 * ending early, the index of the first entry it cannot cover.
 */
static ssize_t
data_crcs(int fd, struct tlog_idx_entry *e, size_t k, size_t n, bool check)
{
	unsigned char buf[65536];
	uint64_t cur = k ? e[k - 1].pos : 0;
	size_t j, have = 0, off = 0, take;
	uint32_t crc;
	ssize_t r;

	for (j = k; j < n; j++) {
		crc = 0;
		while (cur < e[j].pos) {
			if (off == have) {
				r = pread(fd, buf, sizeof(buf), (off_t)cur);
				if (r <= 0)
					return r == 0 ? (ssize_t)j : -errno;
				have = (size_t)r;
				off = 0;
			}
			take = have - off;
			if (take > e[j].pos - cur)
				take = (size_t)(e[j].pos - cur);
			crc = tlog_crc32c(crc, buf + off, take);
			off += take;
			cur += take;
		}
		/* 0 is what an older engine wrote: not recorded. */
		if (!check)
			e[j].crc = crc;
		else if (e[j].crc != 0 && e[j].crc != crc)
			return (ssize_t)j;
	}
	return (ssize_t)n;
}

/* The segment's index holds v's entries; appends index on from its last. */
static void
took_entries(struct tlog_segment *seg, const struct entries *v)
{
	seg->nidx = (uint32_t)v->n;
	if (v->n) {
		seg->live->last_idx_rel = v->e[v->n - 1].rel;
		seg->live->last_idx_pos = v->e[v->n - 1].pos;
	}
}

/* Writes a complete new index atomically (temporary file and rename);
 * every entry has its data CRC. Synced later, with the file system. */
static int
write_index(int dfd, struct tlog_segment *seg, const struct entries *v,
    bool sealed)
{
	unsigned char *buf;
	struct tlog_footer f;
	char name[32];
	size_t len, i;
	int r;

	len = TLOG_IDX_HDR + v->n * TLOG_IDX_ENT + (sealed ? TLOG_IDX_FOOT : 0);
	if ((buf = malloc(len)) == NULL)
		return -ENOMEM;
	tlog_idx_encode_header(buf, seg->base, TLOG_IDX_F_DATACRC);
	for (i = 0; i < v->n; i++)
		tlog_idx_encode_entry(buf + TLOG_IDX_HDR + i * TLOG_IDX_ENT,
		    &v->e[i]);
	if (sealed) {
		f.records = seg->records;
		f.bytes = seg->bytes;
		f.first_ts = seg->first_ts;
		f.max_ts = seg->max_ts;
		f.sealed_by = seg->sealed_by;
		tlog_idx_encode_footer(buf + len - TLOG_IDX_FOOT, &f);
	}
	tlog_segname_format(seg->base, ".idx", name, sizeof(name));
	r = tlog_write_file_atomic(dfd, name, buf, len, false);
	free(buf);
	if (r == 0)
		took_entries(seg, v);
	return r;
}

/*
 * Loading one segment, in phases (tlog_seg_recover below) that share this:
 * what is known of its files so far and what is decided about them.
 */
struct load {
	const struct tlog_recovery *rc;
	struct tlog_ctx *ctx;
	int dfd;			/* the partition's directory */
	uint64_t base;
	bool last;			/* the newest segment of the partition */
	const char *where;		/* topic/partition, for the log */
	char name[32];			/* the data file's */
	bool *dirty;			/* set when a file changed */
	struct stat st;			/* the data file's */
	uint64_t size;			/* its usable length */
	int64_t mt;			/* its mtime, in ms */
	int fd;				/* the data file, if it must be read */
	struct tlog_segment *seg;	/* what is built */
	struct tlog_footer foot;
	struct entries v;		/* the index's entries (or none) */
	size_t n0;			/* how many the file held */
	bool footer;			/* an intact footer */
	bool torn;			/* the index's tail was cut */
	bool rebuild;			/* the index is rebuilt from the data */
	bool crcs;			/* entries carry data CRCs */
	bool mismatch;			/* data failed its CRC (power cut) */
	bool ro;			/* no file changes: read-only, or
					   rc->keep */
	uint64_t end;			/* where the whole records end */
	uint64_t vouched;		/* records the index's entries count */
};

/* What a repair did to this segment's files, for its log line. */
static const char *
fix(const struct load *l, const char *verb)
{
	return l->rc->keep && !l->ctx->ro ? "left as it is (both copies "
	    "kept)" : tlog_repair_fix(l->ctx, verb);
}

/* Says why the segment is skipped (what, then err's text); -1. */
static int
skip(struct load *l, const char *what, int err)
{
	tlog_ctx_log(l->ctx, LOG_ERR, "%s/%s: %s%s; segment skipped",
	    l->where, l->name, what, strerror(err));
	return -1;
}

/* Frees what the phases hold, once; the segment too unless it is kept. */
static struct tlog_segment *
load_finish(struct load *l, bool keep)
{
	free(l->v.e);
	if (l->fd != -1)
		close(l->fd);
	if (keep) {
		tlog_seg_idle(l->seg);	/* not listed yet: ours alone */
		return l->seg;
	}
	tlog_segment_put(l->seg);
	return NULL;
}

/* The data file's size, without following a link; -1: skip it. */
static int
load_stat(struct load *l)
{
	tlog_segname_format(l->base, ".log", l->name, sizeof(l->name));
	if (fstatat(l->dfd, l->name, &l->st, AT_SYMLINK_NOFOLLOW) == -1)
		return skip(l, "", errno);
	if (!S_ISREG(l->st.st_mode)) {
		tlog_ctx_log(l->ctx, LOG_ERR, "%s/%s: not a regular file; "
		    "segment skipped", l->where, l->name);
		return -1;
	}
	l->size = (uint64_t)l->st.st_size;
	/* No segment is larger (its records and offsets are 32-bit in the
	 * index and in memory): not the store's, never touched. */
	if (l->size > TLOG_CAP_BYTES) {
		tlog_ctx_log(l->ctx, LOG_ERR, "%s/%s: %" PRIu64 " bytes, "
		    "more than a segment holds (%llu); segment skipped",
		    l->where, l->name, l->size, TLOG_CAP_BYTES);
		return -1;
	}
	l->mt = (int64_t)l->st.st_mtim.tv_sec * 1000 +
	    l->st.st_mtim.tv_nsec / 1000000;
	return 0;
}

/*
 * Reads the index's header and footer and, if the footer agrees with the
 * data's size (the clean path), nothing more: v.n is its count of entries,
 * none read; 1. Otherwise, unless quick, its entries up to the first torn
 * or out-of-order one: 0. Negative: no header of this segment (or quick,
 * and not the clean path).
 */
static int
read_index(struct load *l, bool quick)
{
	struct entries *v = &l->v;
	unsigned char ends[4096], *buf = ends;
	struct tlog_idx_entry e;
	struct stat st;
	char name[32];
	size_t i, n, len, body;
	uint64_t hbase;
	int fd, r = -EINVAL;

	tlog_segname_format(l->base, ".idx", name, sizeof(name));
	if ((fd = openat(l->dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) ==
	    -1)
		return -errno;
	if (fstat(fd, &st) == -1 || st.st_size < TLOG_IDX_HDR)
		goto out;
	len = (size_t)st.st_size;
	/* A small index in one read; a large one, its two ends (its footer
	 * where a small one's would be), and the rest only if needed. */
	if (len <= sizeof(ends)) {
		if (pread(fd, ends, len, 0) != st.st_size)
			goto out;
	} else if (pread(fd, ends, TLOG_IDX_HDR, 0) != TLOG_IDX_HDR ||
	    pread(fd, ends + sizeof(ends) - TLOG_IDX_FOOT, TLOG_IDX_FOOT,
	    st.st_size - TLOG_IDX_FOOT) != TLOG_IDX_FOOT)
		goto out;
	if (tlog_idx_decode_header(ends, &hbase) != 0 || hbase != l->base)
		goto out;
	l->crcs = (tlog_idx_header_flags(ends) & TLOG_IDX_F_DATACRC) != 0;
	body = len - TLOG_IDX_HDR;
	if (body >= TLOG_IDX_FOOT && (body - TLOG_IDX_FOOT) % TLOG_IDX_ENT ==
	    0 && tlog_idx_decode_footer(ends + (len < sizeof(ends) ? len :
	    sizeof(ends)) - TLOG_IDX_FOOT, &l->foot) == 0) {
		l->footer = true;
		body -= TLOG_IDX_FOOT;
	}
	if (l->footer && l->foot.bytes == l->size &&
	    body / TLOG_IDX_ENT <= UINT32_MAX) {
		v->n = body / TLOG_IDX_ENT;	/* entries not needed */
		r = 1;
		goto out;
	}
	if (quick || (len > sizeof(ends) && ((buf = malloc(len)) == NULL ||
	    pread(fd, buf, len, 0) != st.st_size)))
		goto out;
	r = 0;
	n = body / TLOG_IDX_ENT;
	if (body % TLOG_IDX_ENT)
		l->torn = true;
	for (i = 0; i < n; i++) {
		if (tlog_idx_decode_entry(buf + TLOG_IDX_HDR +
		    i * TLOG_IDX_ENT, &e) != 0 || (v->n > 0 &&
		    (e.rel < v->e[v->n - 1].rel ||
		    e.pos < v->e[v->n - 1].pos ||
		    e.ts < v->e[v->n - 1].ts))) {
			l->torn = true;
			l->footer = false;
			break;
		}
		if ((r = entries_push(v, e.rel, e.pos, e.ts)) != 0)
			goto out;
		v->e[v->n - 1].crc = e.crc;
	}
out:
	if (buf != ends)
		free(buf);
	close(fd);
	return r;
}

/* The index (read_index); a corrupt or missing one is rebuilt. */
static void
load_index(struct load *l, bool has_idx)
{
	struct tlog_ctx *ctx = l->ctx;

	if (!has_idx || read_index(l, false) < 0) {
		tlog_ctx_log(ctx, LOG_WARNING, "%s/%020" PRIu64 ".idx: %s; "
		    "rebuilding it from the data%s", l->where, l->base,
		    has_idx ? "corrupt index" : "missing",
		    l->ro ? " in memory" : "");
		l->v.n = 0;
		l->rebuild = true;
	}
	if (l->crcs)
		l->v.crc_from = SIZE_MAX;	/* read from the index */
}

/* Opens the data file unless the clean path needs only its size, and
 * cuts what lies past a seal; -1: skip the segment. */
static int
load_open(struct load *l)
{
	struct tlog_ctx *ctx = l->ctx;

	if (!(l->footer && l->foot.bytes == l->size) && (l->fd = openat(l->dfd,
	    l->name, (l->ro ? O_RDONLY : O_RDWR) | O_CLOEXEC |
	    O_NOFOLLOW)) == -1)
		return skip(l, "", errno);
	if (l->footer && l->foot.bytes < l->size) {
		tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: %" PRIu64 " bytes past "
		    "the seal; %s", l->where, l->name, l->size - l->foot.bytes,
		    fix(l, "cut"));
		if (l->ro || ftruncate(l->fd, (off_t)l->foot.bytes) == 0)
			l->size = l->foot.bytes;
		*l->dirty = true;
	}
	return 0;
}

/* The segment as its intact footer says: sealed, its files on disk for
 * good. */
static void
take_footer(struct tlog_segment *seg, const struct tlog_footer *f,
    uint64_t nidx)
{
	seg->records = (uint32_t)f->records;
	seg->bytes = f->bytes;
	seg->first_ts = f->first_ts;
	seg->max_ts = f->max_ts;
	seg->sealed = 1;
	seg->flushed = 1;
	seg->sealed_by = (unsigned char)f->sealed_by;
	seg->nidx = (uint32_t)nidx;
}

struct tlog_segment *
tlog_seg_recover_sealed(struct tlog_partition *p, int dfd, uint64_t base,
    uint64_t size)
{
	struct load l = { .dfd = dfd, .base = base, .size = size };
	struct tlog_segment *seg;

	if (read_index(&l, true) != 1 ||
	    (seg = tlog_seg_new(&p->sd, base)) == NULL)
		return NULL;
	take_footer(seg, &l.foot, l.v.n);
	tlog_seg_idle(seg);	/* not listed yet: ours alone */
	return seg;
}

/*
 * Which entries still vouch for data: none past its end, and after a
 * power cut only those whose data CRC matches. -1: the data cannot be
 * read (skip the segment).
 */
static int
load_entries(struct load *l)
{
	struct tlog_ctx *ctx = l->ctx;
	struct entries *v = &l->v;
	ssize_t k;

	if (l->footer) {
		tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: data shorter than its "
		    "seal (%" PRIu64 " of %" PRIu64 " bytes); keeping its "
		    "whole records", l->where, l->name, l->size,
		    l->foot.bytes);
		l->seg->sealed_by = (unsigned char)l->foot.sealed_by;
		l->rebuild = true;
	}
	if (l->torn && !l->rebuild)
		tlog_ctx_log(ctx, LOG_WARNING, "%s/%020" PRIu64 ".idx: torn or "
		    "corrupt tail %s", l->where, l->base, fix(l, "cut"));
	l->n0 = v->n;
	l->vouched = v->n > 0 ? v->e[v->n - 1].rel : 0;
	while (v->n > 0 && v->e[v->n - 1].pos > l->size)
		v->n--, l->torn = true;
	if (!(l->rc->verify && l->crcs && v->n > 0))
		return 0;
	if ((k = data_crcs(l->fd, v->e, 0, v->n, true)) < 0)
		return skip(l, "cannot read: ", (int)-k);
	if ((size_t)k < v->n) {
		tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: data from byte %" PRIu32
		    " on does not match its index (lost in a power cut); %s",
		    l->where, l->name, v->e[k ? k - 1 : 0].pos,
		    fix(l, "cut"));
		v->n = (size_t)k;
		l->torn = l->mismatch = true;
	}
	return 0;
}

/*
 * Scans the data from pos (record rel) up to limit, adding an index entry
 * every TLOG_IDX_INTERVAL bytes (stamped ts); sets l->end to the end of
 * the last whole record and *records to their count. Bytes after the last
 * newline count as a record only if keep_tail (never after a power cut).
 *
 * After a power cut (rc->verify) the scan also stops at the first run of
 * TLOG_ZERO_RUN zero bytes (*zeros set): data that never reached the disk
 * (a lost page, or any run of torn 512-byte sectors, reads back as
 * zeros). Nothing fsync acknowledged lies past the last verified entry (an
 * fsync writes an entry), so a record there holding such a run loses
 * nothing acknowledged.
 */
#define TLOG_ZERO_RUN 16

static int
scan_data(struct load *l, uint64_t pos, uint64_t rel, uint64_t limit,
    bool keep_tail, int64_t ts, uint64_t *records, bool *zeros)
{
	struct entries *v = &l->v;
	char buf[65536];
	uint64_t at = pos, rstart = pos, last_entry, run = 0;
	ssize_t n, i;
	int r;

	last_entry = v->n ? v->e[v->n - 1].pos : 0;
	while (at < limit && !*zeros) {
		n = pread(l->fd, buf, limit - at < sizeof(buf) ?
		    (size_t)(limit - at) : sizeof(buf), (off_t)at);
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		for (i = 0; i < n; i++) {
			run = buf[i] == 0 ? run + 1 : 0;
			if (run == TLOG_ZERO_RUN && l->rc->verify) {
				*zeros = true;
				break;
			}
			if (buf[i] != '\n')
				continue;
			if (v->n == 0 || rel == 0 ||
			    rstart - last_entry >= TLOG_IDX_INTERVAL) {
				if ((v->n == 0 || v->e[v->n - 1].rel != rel) &&
				    (r = entries_push(v, rel, rstart, ts)) != 0)
					return r;
				last_entry = rstart;
			}
			rel++;
			rstart = at + (uint64_t)i + 1;
		}
		at += (uint64_t)n;
	}
	if (keep_tail && rstart < at) {
		if ((v->n == 0 || rel == 0) &&
		    (r = entries_push(v, rel, rstart, ts)) != 0)
			return r;
		rel++;
		rstart = at;
	}
	*records = rel;
	l->end = rstart;
	return 0;
}

/*
 * The records after the last good entry: scanned up to where the data
 * can be trusted, the rest (an unfinished line, pages lost in a power
 * cut) cut off. Sets the segment's counters and times. -1: the data
 * cannot be read (skip the segment).
 */
static int
load_scan(struct load *l)
{
	struct tlog_ctx *ctx = l->ctx;
	struct tlog_segment *seg = l->seg;
	struct entries *v = &l->v;
	uint64_t pos = 0, rel = 0, records;
	int64_t hint;
	bool keep_tail, zeros = false;
	int r;

	if (v->n > 0) {
		pos = v->e[v->n - 1].pos;
		rel = v->e[v->n - 1].rel;
		seg->first_ts = v->e[0].rel == 0 ? v->e[0].ts : l->mt;
		seg->max_ts = v->e[v->n - 1].ts;
	} else {
		seg->first_ts = l->mt;
		seg->max_ts = l->mt;
	}
	/* The tail after the last newline is a record only where no write
	 * can have been in flight: a sealed segment's, or an index-less
	 * segment behind a newer one; never after a power cut, which can
	 * tear any line that no entry vouches for. */
	keep_tail = !l->last && !l->footer && !l->rc->verify && !l->rc->keep;
	/* Records found past the last entry: the footer's newest time if
	 * there is one, else the data's mtime, never before the entries. */
	hint = l->footer ? l->foot.max_ts : l->mt;
	if (hint < seg->max_ts)
		hint = seg->max_ts;
	/* Past a chunk that failed its CRC nothing is known to be what was
	 * written: the data is cut at the last good entry. */
	if ((r = scan_data(l, pos, rel, l->mismatch ? pos : l->size,
	    keep_tail, hint, &records, &zeros)) != 0)
		return skip(l, "cannot read: ", -r);
	if (l->end < l->size) {
		if (l->mismatch)
			;	/* logged above */
		else if (zeros)
			tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: %" PRIu64 " bytes "
			    "from a run of zero bytes no writer wrote (data "
			    "that never reached the disk) on, %s", l->where,
			    l->name, l->size - l->end,
			    fix(l, "cut"));
		else
			tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: %" PRIu64 " bytes "
			    "of an unfinished line %s", l->where, l->name,
			    l->size - l->end, fix(l, "cut"));
		/* Synced before the store takes appends (tlog_store_open):
		 * appends must never land on a cut a power cut could undo.
		 * Read-only: the bytes stay, past the end served. */
		if (!l->ro && ftruncate(l->fd, (off_t)l->end) == -1)
			tlog_ctx_log(ctx, LOG_ERR, "%s/%s: cannot cut: %s",
			    l->where, l->name, strerror(errno));
		*l->dirty = true;
	}
	if (l->end > pos)
		seg->max_ts = hint;
	if (seg->first_ts > seg->max_ts)
		seg->first_ts = seg->max_ts;
	seg->records = (uint32_t)records;
	seg->bytes = l->end;
	if (records > 0 && (v->n == 0 || v->e[v->n - 1].rel != records))
		entries_push(v, records, l->end, seg->max_ts);
	return 0;
}

/* A segment behind a newer one is sealed; the newest keeps what it has
 * reserved on disk. */
static void
load_seal(struct load *l)
{
	struct tlog_segment *seg = l->seg;
	uint64_t alloc = (uint64_t)l->st.st_blocks * 512;

	if (!l->last || l->footer) {
		seg->sealed = 1;
		if (!l->footer)
			seg->sealed_by = TLOG_TRIG_RECOVERY;
		if (!l->footer && !l->rebuild)
			tlog_ctx_log(l->ctx, LOG_WARNING, "%s/%s: recovery: "
			    "unsealed behind a newer segment; sealed%s",
			    l->where, l->name, l->ro ? " in memory" : "");
	} else if (alloc > ((l->end + 4095) & ~4095ULL)) {
		seg->live->prealloc = alloc;
	}
}

/* A sealed segment gives back what it holds reserved more than a page
 * past its data (unless read-only). */
static void
load_trim(struct load *l)
{
	struct tlog_segment *seg = l->seg;

	if (l->ro || !seg->sealed || (uint64_t)l->st.st_blocks * 512 <=
	    ((seg->bytes + 4095) & ~4095ULL) + 4096)
		return;
	seg->trim_pending = 1;
	seg->live->fd = l->fd;
	tlog_seg_trim(seg);
	seg->live->fd = -1;
}

/* The index as the data now says: kept if it already does, held in
 * memory by a reader, else written again. */
static void
load_fix_index(struct load *l)
{
	struct tlog_ctx *ctx = l->ctx;
	struct tlog_segment *seg = l->seg;
	struct entries *v = &l->v;
	ssize_t k;
	int r;

	if (!l->rebuild && !l->torn && v->n == l->n0 &&
	    l->footer == (bool)seg->sealed) {
		seg->flushed = seg->sealed;
		took_entries(seg, v);
	} else if (l->ro) {
		/* The file stays as it is and says less, or something
		 * else, than the data: look-ups read these entries. */
		seg->live->mem_idx = v->e;
		took_entries(seg, v);
		v->e = NULL;
		*l->dirty = true;
	} else if (v->crc_from < v->n && (k = data_crcs(l->fd, v->e,
	    v->crc_from, v->n, false)) != (ssize_t)v->n) {
		tlog_ctx_log(ctx, LOG_ERR, "%s/%s: cannot read: %s; index not "
		    "rewritten", l->where, l->name,
		    strerror(k < 0 ? (int)-k : EIO));
	} else if (seg->sealed && fdatasync(l->fd) == -1) {
		/* A footer goes only on data that is on disk. */
		tlog_ctx_log(ctx, LOG_ERR, "%s/%s: cannot sync: %s; index not "
		    "rewritten", l->where, l->name, strerror(errno));
	} else if ((r = write_index(l->dfd, seg, v, seg->sealed)) != 0) {
		tlog_ctx_log(ctx, LOG_ERR, "%s/%020" PRIu64 ".idx: cannot "
		    "write: %s", l->where, l->base, strerror(-r));
	} else {
		seg->flushed = seg->sealed;
		*l->dirty = true;
	}
}

void
tlog_part_keep_end(struct tlog_partition *p, int dfd, uint64_t end,
    const char *where, bool *dirty)
{
	char buf[32];
	int n, r;

	if (end > p->next_offset)
		p->next_offset = end;
	if (p->ctx->ro || end <= p->saved_end)
		return;
	n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", end);
	if ((r = tlog_write_file_atomic(dfd, ".next", buf, (size_t)n,
	    false)) != 0)
		tlog_ctx_log(p->ctx, LOG_ERR, "%s/.next: cannot write: %s; "
		    "the end offset %" PRIu64 " is kept in memory only",
		    where, strerror(-r), end);
	else
		p->saved_end = end;
	*dirty = true;
}

/*
 * After a power cut (rc->verify: the last open was in another boot and
 * the store was not closed cleanly) a segment without an intact footer
 * may hold data that never reached the disk: load_entries checks its
 * entries against the data, load_scan cuts what follows them at a run of
 * zero bytes. After a kill -9 in the same boot the page cache still holds
 * everything written: only the tail after the last entry is scanned.
 */
struct tlog_segment *
tlog_seg_recover(struct tlog_partition *p, const struct tlog_recovery *rc,
    int dfd, uint64_t base, bool has_idx, bool last, const char *where,
    bool *dirty)
{
	struct load l = { .rc = rc, .ctx = p->ctx, .ro = p->ctx->ro || rc->keep,
	    .dfd = dfd, .base = base,
	    .last = last, .where = where, .dirty = dirty, .fd = -1,
	    .v.crc_from = SIZE_MAX };
	uint64_t end;

	if (load_stat(&l) != 0)
		return NULL;
	if ((l.seg = tlog_seg_new(&p->sd, base)) == NULL)
		return NULL;
	load_index(&l, has_idx);
	if (load_open(&l) != 0)
		return load_finish(&l, false);
	if (l.footer && l.foot.bytes == l.size) {
		take_footer(l.seg, &l.foot, l.v.n);
		load_trim(&l);
		return load_finish(&l, true);
	}
	if (load_entries(&l) != 0 || load_scan(&l) != 0)
		return load_finish(&l, false);
	/* The newest segment ends below the end saved before a deletion
	 * (.next): newer segments were deleted while its seal footer was
	 * still owed, or it was deleted too and a power cut undid the
	 * unsynced unlink. Its offsets up to .next were handed out: it
	 * takes no appends; empty, it goes (doc/format.md, "Recovery").
	 * Only the second is news (after a crash of the daemon alone the
	 * first is a deletion finished). */
	if (last && base + l.seg->records < p->saved_end) {
		if (l.rc->verify)
			tlog_ctx_log(l.ctx, LOG_WARNING, "%s/%s: recovery: ends "
			    "at %" PRIu64 ", below the saved end %" PRIu64
			    "; takes no appends", where, l.name,
			    base + l.seg->records, p->saved_end);
		l.last = last = false;
	}
	/* Data cut short behind the store, below its seal or its index's
	 * last entry: those offsets were handed out. The end offset stays
	 * there (offsets never go backwards) and the segment takes no
	 * appends. After a power cut an entry may outlive data that never
	 * reached the disk, unacknowledged: its offsets may go again. */
	end = l.footer ? l.foot.records : l.rc->verify ? 0 : l.vouched;
	if (end > l.seg->records) {
		if (!l.footer)
			tlog_ctx_log(l.ctx, LOG_WARNING, "%s/%s: its index "
			    "vouches for %" PRIu64 " records, its data holds "
			    "%" PRIu32 "; the end offset stays at %" PRIu64
			    " and it takes no appends", where, l.name, end,
			    l.seg->records, base + end);
		tlog_part_keep_end(p, dfd, base + end, where, dirty);
		l.last = last = false;
		l.rebuild = true;
	}
	if (l.seg->records == 0 && !last) {
		load_finish(&l, false);
		if (!l.ro) {
			unlinkat(dfd, l.name, 0);
			tlog_segname_format(base, ".idx", l.name,
			    sizeof(l.name));
			unlinkat(dfd, l.name, 0);
		}
		*dirty = true;
		return NULL;
	}
	load_seal(&l);
	load_fix_index(&l);
	/* Records a crash left in the page cache may not be on disk yet:
	 * the partition's next fsync must sync them (unless the open's
	 * syncfs does, see tlog_store_open). */
	if (!l.seg->sealed && !rc->was_clean)
		l.seg->live->wgen = 1;
	load_trim(&l);
	return load_finish(&l, true);
}

