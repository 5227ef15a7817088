/*
 * recover.c - loading a partition's segments at open (doc/format.md,
 * "Recovery"): the segment files its directory holds, each loaded and
 * repaired by repair.c, its end offset (.next), and every partition of a
 * store on up to 4 threads.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "checkpoint.h"
#include "compress.h"
#include "cursor.h"
#include "index.h"
#include "recover.h"

struct found {
	uint64_t base;
	bool log, idx, zst;
};

static void
read_next_offset(struct tlog_partition *p, int dfd, const char *where)
{
	char buf[32];
	ssize_t n;
	uint64_t v;

	if ((n = tlog_ctx_read_file(p->ctx, dfd, where, ".next", buf,
	    sizeof(buf))) <= 0)
		return;
	if (!tlog_parse_offset(buf, (size_t)n, &v) || v > TLOG_OFFSET_MAX) {
		tlog_ctx_log(p->ctx, LOG_WARNING, "%s/.next: not an end "
		    "offset (0..%" PRIu64 "); ignored", where,
		    TLOG_OFFSET_MAX);
		return;
	}
	p->saved_end = v;
	if (v > p->next_offset)
		p->next_offset = v;
}

static int
found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	return (x->base > y->base) - (x->base < y->base);
}

/* A regular file (never through a symlink); d_type when it is known. */
static bool
is_regular(int dfd, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type == DT_REG;
	return fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
}

/*
 * Lists the partition's segment files (removing stray temporary files),
 * sorted by base and merged into one entry per segment. The listing is
 * read once and sorted once: O(n log n) in the number of files.
 */
static int
list_segments(struct tlog_partition *p, DIR *d, const char *where,
    struct found **out, size_t *nout, bool *dirty)
{
	struct tlog_ctx *ctx = p->ctx;
	struct found *v = NULL, e;
	struct dirent *de;
	size_t n = 0, cap = 0, i, k = 0;
	void *nv;

	while ((de = readdir(d)) != NULL) {
		const char *nm = de->d_name;
		size_t len = strlen(nm);

		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 ||
		    strcmp(nm, ".config") == 0 || strcmp(nm, ".next") == 0 ||
		    strcmp(nm, ".cursors") == 0 || strcmp(nm, ".cursors.bad") == 0 ||
		    strcmp(nm, ".id") == 0)
			continue;
		if (!is_regular(dirfd(d), de)) {
			/* Never followed, never touched. */
			tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: not a regular file; "
			    "ignored", where, nm);
			continue;
		}
		if (len > 4 && strcmp(nm + len - 4, ".tmp") == 0) {
			tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: stray temporary file "
			    "%s", where, nm, tlog_repair_fix(ctx, "removed"));
			if (!ctx->ro)
				unlinkat(dirfd(d), nm, 0);
			*dirty = true;
			continue;
		}
		/* One entry per file, with the flag of its kind. */
		e = (struct found){ 0, false, false, false };
		if (tlog_segname_parse(nm, ".log", &e.base))
			e.log = true;
		else if (tlog_segname_parse(nm, ".idx", &e.base))
			e.idx = true;
		else if (tlog_segname_parse(nm, ".log.zst", &e.base))
			e.zst = true;
		else {
			tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: stray file ignored",
			    where, nm);
			continue;
		}
		if ((nv = tlog_grow(v, &cap, n, sizeof(*v), 64)) == NULL) {
			free(v);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = e;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), found_cmp);
	/* Then one per segment, in place: the flags of its files merged. */
	for (i = 0; i < n; i++) {
		if (k > 0 && v[k - 1].base == v[i].base) {
			v[k - 1].log |= v[i].log;
			v[k - 1].idx |= v[i].idx;
			v[k - 1].zst |= v[i].zst;
		} else
			v[k++] = v[i];
	}
	*out = v;
	*nout = k;
	return 0;
}

/*
 * Whether the checkpoint's sealed segments are what the directory holds:
 * the same directory, each segment with both its files, in order, and
 * nothing older or in between that it does not name (only newer
 * segments, the active one, may be missing from it). Anything else, and
 * the partition is loaded from its files, as without a checkpoint.
 */
static bool
ckpt_agrees(struct tlog_partition *p, const struct tlog_ckpt_part *cp,
    const struct found *f, size_t n, const char *where, int dfd,
    bool was_clean)
{
	uint64_t last = cp->n > 0 ? tlog_ckpt_base(cp, cp->n - 1) : 0;
	struct stat st;
	size_t i, j = 0;

	/* Another directory at the path (partitions swapped or copied
	 * while the store was unmounted), or this one changed since: not
	 * what was checkpointed. */
	if (fstat(dfd, &st) == -1 || !tlog_ckpt_same(cp->dir, &st))
		goto disagree;
	for (i = 0; i < n; i++) {
		if (j < cp->n && f[i].base == tlog_ckpt_base(cp, j)) {
			/* One data file, plain or compressed, and its index. */
			if (f[i].log == f[i].zst || !f[i].idx)
				break;
			j++;
		} else if (f[i].base < last)
			break;
	}
	if (i == n && j == cp->n)
		return true;
disagree:
	/* After a crash, a partition changed since the last periodic
	 * checkpoint is the common case, not news. */
	if (was_clean)
		tlog_ctx_log(p->ctx, LOG_NOTICE, "%s: the checkpoint does not "
		    "match the directory; reading every segment's index",
		    where);
	return false;
}

/* The end of a segment at base by its index: base plus the records its
 * footer counts, or (entries: no power cut, see repair.c) its last
 * entry's; 0 without either (a footer no seal writes is none:
 * tlog_idx_decode_footer). *seal (may be NULL): the footer, zeroed
 * without one. */
static uint64_t
index_end(int dfd, uint64_t base, bool entries, struct tlog_footer *seal)
{
	unsigned char buf[TLOG_IDX_FOOT];
	struct tlog_footer foot;
	struct tlog_idx_entry e;
	struct stat st;
	uint64_t end = 0;
	char name[32];
	int fd;

	if (seal != NULL)
		memset(seal, 0, sizeof(*seal));
	tlog_segname_format(base, ".idx", name, sizeof(name));
	if ((fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) != -1) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size >= TLOG_IDX_HDR + TLOG_IDX_FOOT &&
		    pread(fd, buf, sizeof(buf), st.st_size - TLOG_IDX_FOOT) ==
		    (ssize_t)sizeof(buf) &&
		    tlog_idx_decode_footer(buf, &foot) == 0) {
			end = base + foot.records;
			if (seal != NULL)
				*seal = foot;
		} else if (entries && st.st_size >= TLOG_IDX_HDR +
		    TLOG_IDX_ENT && (st.st_size - TLOG_IDX_HDR) %
		    TLOG_IDX_ENT == 0 && pread(fd, buf, TLOG_IDX_ENT,
		    st.st_size - TLOG_IDX_ENT) == TLOG_IDX_ENT &&
		    tlog_idx_decode_entry(buf, &e) == 0 && e.rel > 0)
			end = base + e.rel;
		close(fd);
	}
	return end;
}

/*
 * A segment with a .log.zst (doc/format.md, "Compressed segments"): a
 * compression that got as far as its rename. With its .log too (a crash
 * before the .log's unlink), the .log.zst is kept if it is whole and
 * holds what the .log holds (every frame decoded and compared), else it
 * goes (unless it is the longer, with no seal to choose: both stay).
 * Alone, it is loaded from its index's footer, which compression synced
 * before it began. Without an index, the only copy stays (skipped); with
 * a .log beside it, it goes.
 */
static struct tlog_segment *
zrecover(struct tlog_partition *p, struct tlog_recovery *rc, int dfd,
    const struct found *f, bool last, const char *where, bool *dirty)
{
	struct tlog_ctx *ctx = p->ctx;
	struct tlog_recovery keep;
	struct tlog_segment *seg;
	struct stat st;
	uint64_t plain = 0, zsize = 0, end;
	char name[40], lname[40];
	struct tlog_footer seal;
	bool shorter, frames, sealed, same;
	int r;

	tlog_segname_format(f->base, ".log.zst", name, sizeof(name));
	r = tlog_seg_zcheck(dfd, f->base, &plain, &zsize);
	if (!f->idx && !f->log) {
		/* No unlink leaves it (data goes before the index): damage,
		 * and the only copy of its records, which is never removed
		 * (as below, with an unreadable table). */
		tlog_ctx_log(ctx, LOG_ERR, "%s/%s: compressed data without "
		    "its index; segment skipped, its files left as they are",
		    where, name);
		end = f->base + (plain > 0 ? plain : 1);
		if (end > p->next_offset)
			p->next_offset = end;
		return NULL;
	}
	if (f->log) {
		/* A copy goes only once the other is known whole. A .log
		 * shorter than the seal the .log.zst agrees with (its table
		 * whole, every frame decoding) was cut behind the store:
		 * the .log.zst is the one complete copy. */
		tlog_segname_format(f->base, ".log", lname, sizeof(lname));
		if (fstatat(dfd, lname, &st, AT_SYMLINK_NOFOLLOW) != 0)
			st.st_size = 0;
		/* With its table torn, plain is what its whole frames
		 * hold: the .log holding less, the .log.zst has more. */
		shorter = (r == 0 || r == -EBADMSG) &&
		    (uint64_t)st.st_size < plain;
		/* Decided before either is loaded: loading repairs. The
		 * .log.zst is whole if its table is and every frame decodes
		 * (its checksums); the .log, if its own seal (not one
		 * recovery wrote) is of its size. */
		same = r == 0 && plain == (uint64_t)st.st_size &&
		    tlog_seg_zsame(dfd, f->base, true) == 0;
		frames = same || (r == 0 &&
		    tlog_seg_zsame(dfd, f->base, false) == 0);
		(void)index_end(dfd, f->base, false, &seal);
		sealed = seal.records != 0 && seal.sealed_by !=
		    TLOG_TRIG_RECOVERY && seal.bytes == (uint64_t)st.st_size;
		if (frames && (shorter || (plain == (uint64_t)st.st_size &&
		    !same && sealed)) && (seg = tlog_seg_recover_sealed(p,
		    dfd, f->base, plain)) != NULL) {
			/* The .log cut, or changed, behind the store. */
			tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: %s; the "
			    "compressed copy, whole, is kept and it %s", where,
			    lname, shorter ? "shorter than its seal" : "differs "
			    "from the compressed copy of its seal's size "
			    "(damaged behind the store)",
			    tlog_repair_fix(ctx, "removed"));
			seg->zbytes = zsize;
			strlcpy(name, lname, sizeof(name));
		} else if ((same || (r != 0 && sealed && !shorter)) &&
		    (seg = tlog_seg_recover(p, rc, dfd, f->base, f->idx, last,
		    where, dirty)) != NULL) {
			/* Both hold the same (a compression cut after its
			 * rename): the .log goes. A torn table beside a .log
			 * whole by its seal: the .log.zst goes. */
			tlog_ctx_log(ctx, same ? LOG_NOTICE : LOG_WARNING,
			    "%s/%s: %s; %s %s", where, name, same ? "a "
			    "compression was cut short after its rename" :
			    "torn or its seek table unreadable", same ? "the "
			    "plain copy" : "the plain copy, whole by its seal, "
			    "is kept and it", tlog_repair_fix(ctx, "removed"));
			if (same) {
				tlog_segname_format(f->base, ".log", name,
				    sizeof(name));
				seg->zbytes = zsize;
			}
		} else {
			/* Neither is known whole (a cut .log without a
			 * seal, a bad frame, a torn table): both are kept
			 * for the operator. The plain copy is served, takes
			 * no appends (not last) that would make the other
			 * look stale, and is never compressed over; once a
			 * copy is gone the next open goes on as usual. */
			keep = *rc;
			keep.keep = true;
			seg = tlog_seg_recover(p, &keep, dfd, f->base, f->idx,
			    false, where, dirty);
			tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: %s: both are kept "
			    "for the operator, as they are; %s", where, name,
			    r != 0 ? "its seek table cannot be read" : frames ?
			    "no seal of the plain copy says which copy is whole"
			    : "a frame fails its checksum",
			    seg != NULL ? "the plain copy is served, takes no "
			    "appends and is not compressed" : "the plain copy "
			    "holds no whole record: neither is served");
			if (seg != NULL)
				seg->zboth = 1;
			/* The records only the .log.zst holds were handed
			 * out: their offsets never again. A record takes a
			 * byte at least, and records without a newline
			 * cannot be counted from the bytes: base + its
			 * plain size is past them all. */
			if (f->base + plain > p->next_offset)
				p->next_offset = f->base + plain;
			return seg;
		}
		/* name: the copy that goes. */
		if (!ctx->ro)
			unlinkat(dfd, name, 0);
		*dirty = true;
		return seg;
	}
	if (r == 0 &&
	    (seg = tlog_seg_recover_sealed(p, dfd, f->base, plain)) != NULL) {
		seg->zbytes = zsize;
		return seg;
	}
	/* The only copy: never removed, and its offsets never given to
	 * other records (its index's footer says how many; at least its
	 * base). */
	if (r != 0)
		tlog_ctx_log(ctx, LOG_ERR, "%s/%s: its seek table cannot be "
		    "read (%s); segment skipped, its files left as they are",
		    where, name, strerror(-r));
	else
		tlog_ctx_log(ctx, LOG_ERR, "%s/%s: its index has no seal "
		    "footer for %" PRIu64 " bytes; segment skipped, its files "
		    "left as they are", where, name, plain);
	/* Its records were handed out: as many as its footer says, else
	 * past them all (a record takes a byte at least), or at least its
	 * base. */
	if ((end = index_end(dfd, f->base, false, NULL)) <= f->base)
		end = f->base + (plain > 0 ? plain : 1);
	if (end > p->next_offset)
		p->next_offset = end;
	return NULL;
}

/* Segment f loaded from its files (NULL: none kept); an index without
 * data goes. */
static struct tlog_segment *
from_files(struct tlog_partition *p, struct tlog_recovery *rc, int dfd,
    const struct found *f, bool last, const char *where, bool *dirty)
{
	struct tlog_ctx *ctx = p->ctx;
	uint64_t end;
	char name[32];

	if (f->zst)
		return zrecover(p, rc, dfd, f, last, where, dirty);
	if (f->log)
		return tlog_seg_recover(p, rc, dfd, f->base, f->idx, last,
		    where, dirty);
	tlog_segname_format(f->base, ".idx", name, sizeof(name));
	tlog_ctx_log(ctx, LOG_WARNING, "%s/%s: index without data %s", where,
	    name, tlog_repair_fix(ctx, "removed"));
	/* Its offsets were handed out (unless an unlink cut short left
	 * it: then its end was saved before, see unlink.c). */
	if ((end = index_end(dfd, f->base, !rc->verify, NULL)) != 0)
		tlog_part_keep_end(p, dfd, end, where, dirty);
	if (!ctx->ro)
		unlinkat(dfd, name, 0);
	*dirty = true;
	return NULL;
}

/*
 * Compression goes in seal order: sealed plain segments newer than the
 * partition's newest compressed one were waiting for it when the daemon
 * stopped, and are queued again if the partition still compresses.
 */
static void
zrequeue(struct tlog_partition *p)
{
	struct tlog_segment *seg, *z = NULL;

	TAILQ_FOREACH(seg, &p->segs, link)
		if (seg->zbytes != 0)
			z = seg;
	if (z == NULL)
		return;
	for (seg = TAILQ_NEXT(z, link); seg != NULL;
	    seg = TAILQ_NEXT(seg, link))
		if (seg->sealed && seg->zbytes == 0 && seg->records > 0)
			tlog_part_zqueue(p, seg);
}

int
tlog_part_recover(struct tlog_partition *p, struct tlog_recovery *rc)
{
	struct tlog_ctx *ctx = p->ctx;
	struct tlog_segment *seg, *prev = NULL;
	struct found *f = NULL;
	struct tlog_ckpt_part cp;
	char where[2 * TLOG_NAME_MAX + 2];
	size_t n = 0, i, j, lastlog;
	uint64_t saved, floor;
	bool dirty = false, trusted;
	DIR *d;
	int fd, dfd, r;

	tlog_level_where(&p->lv, where, sizeof(where));
	/* Everything is opened relative to the partition's directory:
	 * one path lookup for the whole partition. */
	if ((fd = tlog_level_dir(&p->lv)) < 0)
		return fd;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	dfd = dirfd(d);
	if ((r = list_segments(p, d, where, &f, &n, &dirty)) != 0) {
		closedir(d);
		return r;
	}
	/* First the end the partition saved before deleting segments: a
	 * newest segment ending below it is not kept active (repair.c). */
	read_next_offset(p, dfd, where);
	/* A committed cursor is an offset handed out too (its records may
	 * be lost in a power cut, their offsets never reused): for the
	 * load it counts as a saved end (doc/format.md, "Recovery"). */
	saved = p->saved_end;
	tlog_cursor_load(p, dfd, where, &floor);
	if (floor > p->saved_end)
		p->saved_end = floor;
	if (floor > p->next_offset)
		p->next_offset = floor;
	/* The newest segment with data is the active candidate. */
	for (lastlog = n; lastlog > 0 && !f[lastlog - 1].log &&
	    !f[lastlog - 1].zst; lastlog--)
		;
	trusted = tlog_ckpt_find(rc->ckpt, where, &cp) &&
	    ckpt_agrees(p, &cp, f, n, where, dfd, rc->was_clean);
	for (i = 0, j = 0; i < n; i++) {
		seg = NULL;
		if (trusted && j < cp.n && f[i].base == tlog_ckpt_base(&cp, j))
			seg = tlog_ckpt_segment(p, &cp, j++, dfd);
		if (seg == NULL && trusted && i + 1 == lastlog && f[i].idx)
			seg = tlog_ckpt_active(p, &cp, f[i].base, dfd);
		if (seg == NULL)
			seg = from_files(p, rc, dfd, &f[i], i + 1 == lastlog,
			    where, &dirty);
		if (seg == NULL)
			continue;
		if (prev != NULL && seg->base < prev->base + prev->records)
			tlog_ctx_log(ctx, LOG_WARNING, "%s: segments %020" PRIu64
			    " and %020" PRIu64 " overlap", where, prev->base,
			    seg->base);
		TAILQ_INSERT_TAIL(&p->segs, seg, link);
		p->nsegs++;
		p->bytes += seg->bytes;
		if (seg->zbytes != 0)
			p->zsaved += (int64_t)seg->bytes - (int64_t)seg->zbytes;
		if (seg->max_ts > p->last_ts)
			p->last_ts = seg->max_ts;
		if (seg->base + seg->records > p->next_offset)
			p->next_offset = seg->base + seg->records;
		prev = seg;
	}
	free(f);
	zrequeue(p);
	if (floor > saved && (prev == NULL ||
	    prev->base + prev->records < floor))
		tlog_ctx_log(ctx, LOG_WARNING, "%s: recovery: a cursor is at "
		    "%" PRIu64 ", past the records found; the end offset is "
		    "raised to it", where, floor);
	p->saved_end = saved;
	/* Repairs are on disk before the store takes appends: one syncfs
	 * at the end of the open covers every file and directory. */
	if (dirty)
		__atomic_store_n(&rc->repaired, true, __ATOMIC_RELAXED);
	closedir(d);
	return 0;
}

struct workers {
	struct tlog_partition **v;
	size_t n;
	size_t next;		/* atomic: the next partition to take */
	struct tlog_recovery *rc;
};

static void *
recover_worker(void *arg)
{
	struct workers *w = arg;
	size_t i;

	while ((i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED)) < w->n)
		tlog_part_recover(w->v[i], w->rc);
	return NULL;
}

/* One thread per core, up to 4: opening a store is mostly system calls,
 * one partition independent of the next. None outlives the call, so none
 * exists when the daemon forks. */
void
tlog_recover_all(struct tlog_partition **v, size_t n, struct tlog_recovery *rc)
{
	struct workers w = { v, n, 0, rc };
	pthread_t th[3];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nth, i, started = 0;

	nth = ncpu > 1 ? (size_t)ncpu : 1;
	if (nth > 4)
		nth = 4;
	if (nth > n / 64 + 1)
		nth = n / 64 + 1;
	for (i = 0; i + 1 < nth; i++)
		if (pthread_create(&th[i], NULL, recover_worker, &w) == 0)
			started++;
	recover_worker(&w);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}
