/*
 * compress.c - compressed history (doc/design.md, "Compressed history"):
 * a sealed segment of a partition with compression.type=zstd is
 * rewritten, off the append path, as BASE.log.zst in the seekable format
 * (zseek.h), and its BASE.log then unlinked; reads go through zread.c.
 *
 * The work runs on the front end's unlinker thread, in slices of a few
 * frames (tlog_compress_pending), so unlinks and footers queued behind a
 * large segment wait for one slice, not the whole segment. Its steps,
 * each durable before the next: the footer of the index synced, the
 * .log.zst.tmp written and synced, renamed to .log.zst, the directory
 * synced, the segment switched to it under its partition's lock (new
 * readers open the .log.zst; those that opened the .log keep reading
 * it), and only then the .log unlinked. A crash at any step leaves one
 * complete copy that recovery serves (tlog_seg_zrecover).
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "compress.h"
#include "index.h"
#include "zseek.h"

/* Frames per slice: 4 MiB of input, some 10 ms of one core at level 3. */
#define SLICE_FRAMES 32

void
tlog_part_zqueue(struct tlog_partition *p, struct tlog_segment *seg)
{
	/* Beside a longer .log.zst kept at open (seg->zboth) it would
	 * only fail at its rename, which never replaces a .log.zst. */
	if (p->quiet || p->ctx->ro || seg->zboth ||
	    tlog_part_conf(p, TLOG_COMPRESSION_TYPE) != TLOG_COMP_ZSTD)
		return;
	seg->zlevel = (unsigned char)tlog_part_conf(p,
	    TLOG_COMPRESSION_ZSTD_LEVEL);
	tlog_queue_compress(p->env->q, seg);
}

enum step { STEP_MORE, STEP_DONE, STEP_LATER };

/* Drops what a job wrote; its segment stays as it was. A segment
 * deleted meanwhile (rm, retention: dead before its files go) lost them
 * on purpose: nothing failed, nothing is said. */
static enum step
zjob_drop(struct tlog_zjob *j, int r, const char *what)
{
	struct tlog_segment *seg = j->seg;
	char where[TLOG_SEG_WHERE_MAX], name[40];

	if (r != 0 && !tlog_segment_dead(seg)) {
		tlog_seg_where(seg, where, sizeof(where));
		tlog_ctx_log_err(seg->sd->ctx, "%s: cannot compress it (%s: "
		    "%s); it stays as it is", where, what, strerror(-r));
	}
	if (j->out != -1) {
		tlog_segname_format(seg->base, ".log.zst.tmp", name,
		    sizeof(name));
		tlog_level_unlinkat(seg->sd->lv, name);
	}
	return STEP_DONE;
}

/* Opens the data, the temporary output, and makes the index's footer
 * durable: the .log.zst will be the only copy of the data. */
static enum step
zjob_start(struct tlog_zjob *j)
{
	struct tlog_segment *seg = j->seg;
	char name[40];
	bool pending;
	int fd, r;

	pthread_mutex_lock(&seg->sd->lock);
	pending = seg->live != NULL && seg->live->foot_pending;
	j->end = seg->bytes;
	pthread_mutex_unlock(&seg->sd->lock);
	if (tlog_segment_dead(seg))
		return STEP_DONE;
	if (pending)
		return STEP_LATER;	/* the flusher writes its footer first */
	TLOG_HOOK(seg->sd->ctx, TLOG_HOOK_COMPRESS_START, tlog_seg_part(seg));
	tlog_segname_format(seg->base, ".idx", name, sizeof(name));
	if ((fd = tlog_level_openat(seg->sd->lv, name, O_RDONLY, 0)) < 0)
		return zjob_drop(j, fd, "its index");
	r = fdatasync(fd) == -1 ? -errno : 0;
	close(fd);
	if (r != 0)
		return zjob_drop(j, r, "syncing its index");
	tlog_segname_format(seg->base, ".log", name, sizeof(name));
	if ((fd = tlog_level_openat(seg->sd->lv, name, O_RDONLY, 0)) < 0)
		return zjob_drop(j, fd, "its data");
	j->in = fd;
	tlog_segname_format(seg->base, ".log.zst.tmp", name, sizeof(name));
	/* A leftover of a stopped job is written over. */
	tlog_level_unlinkat(seg->sd->lv, name);
	if ((fd = tlog_level_openat(seg->sd->lv, name, O_WRONLY | O_CREAT |
	    O_EXCL, 0644)) < 0)
		return zjob_drop(j, fd, name);
	j->out = fd;
	if ((j->buf = malloc(TLOG_ZS_FRAME)) == NULL)
		return zjob_drop(j, -ENOMEM, "memory");
	if ((r = tlog_zw_init(&j->w, j->out, seg->zlevel)) != 0)
		return zjob_drop(j, r, "zstd");
	j->started = true;
	return STEP_MORE;
}

/* The .log.zst made durable and published, then the .log unlinked. */
static enum step
zjob_finish(struct tlog_zjob *j)
{
	struct tlog_segment *seg = j->seg;
	struct tlog_partition *p = tlog_seg_part(seg);
	struct tlog_ctx *ctx = p->ctx;
	char tmp[40], name[40];
	bool dead;
	int dfd, r;

	if ((r = tlog_zw_finish(&j->w)) != 0)
		return zjob_drop(j, r, "its seek table");
	/* Data that does not compress at all, past what a segment holds:
	 * it stays plain. */
	if (j->w.zpos > TLOG_CAP_BYTES)
		return zjob_drop(j, -EFBIG, "its size");
	if (fsync(j->out) == -1)
		return zjob_drop(j, -errno, "syncing it");
	tlog_segname_format(seg->base, ".log.zst.tmp", tmp, sizeof(tmp));
	tlog_segname_format(seg->base, ".log.zst", name, sizeof(name));
	if ((dfd = tlog_level_dir(seg->sd->lv)) < 0)
		return zjob_drop(j, dfd, "its directory");
	TLOG_HOOK(ctx, TLOG_HOOK_COMPRESS, p);
	/* Never over another .log.zst: a copy recovery could not read is
	 * still the only one of its records. */
	r = renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE);
	if (r == -1 && errno == EINVAL)	/* a file system without it */
		r = faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ?
		    (errno = EEXIST, -1) : renameat(dfd, tmp, dfd, name);
	if (r == -1) {
		r = -errno;
		unlinkat(dfd, tmp, 0);
		close(dfd);
		return zjob_drop(j, r, "renaming it");
	}
	if (fsync(dfd) == -1) {
		/* Both copies are complete: recovery keeps one. */
		r = -errno;
		unlinkat(dfd, name, 0);
		close(dfd);
		return zjob_drop(j, r, "syncing its directory");
	}
	__atomic_add_fetch(&ctx->free_appended, j->w.zpos, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->sd.lock);
	if (!(dead = seg->dead)) {
		__atomic_store_n(&seg->zbytes, (uint32_t)j->w.zpos,
		    __ATOMIC_RELEASE);
		p->zsaved += (int64_t)seg->bytes - (int64_t)j->w.zpos;
		/* A trim the seal could not make concerns the .log, which
		 * goes. */
		seg->trim_pending = 0;
	}
	pthread_mutex_unlock(&p->sd.lock);
	/* Deleted meanwhile: its unlink may have come before the rename. */
	if (dead) {
		unlinkat(dfd, name, 0);
		close(dfd);
		return STEP_DONE;
	}
	TLOG_HOOK(ctx, TLOG_HOOK_COMPRESS_DONE, p);
	tlog_segname_format(seg->base, ".log", tmp, sizeof(tmp));
	/* Counted freed before the unlink (ctx.h, free_unlinked). */
	__atomic_add_fetch(&ctx->free_unlinked, seg->bytes, __ATOMIC_RELAXED);
	if (unlinkat(dfd, tmp, 0) == -1 && errno != ENOENT) {
		/* Served from the .log.zst all the same; the next open
		 * removes the .log (doc/format.md, Recovery). */
		char where[TLOG_SEG_WHERE_MAX];

		r = -errno;
		__atomic_sub_fetch(&ctx->free_unlinked, seg->bytes,
		    __ATOMIC_RELAXED);
		tlog_seg_where(seg, where, sizeof(where));
		tlog_ctx_log_err(ctx, "%s: compressed, but its plain file "
		    "cannot be removed: %s", where, strerror(-r));
	}
	close(dfd);
	/* Its directory changed: the next periodic checkpoint records
	 * it compressed. */
	__atomic_add_fetch(&ctx->ckpt_changes, 1, __ATOMIC_RELAXED);
	TLOG_METRIC_ADD(ctx, z_segments, 1);
	TLOG_METRIC_ADD(ctx, z_in, seg->bytes);
	TLOG_METRIC_ADD(ctx, z_out, j->w.zpos);
	return STEP_DONE;
}

/* One slice of a job: its start, some frames, or its end. */
static enum step
zjob_step(struct tlog_zjob *j)
{
	uint64_t t0 = tlog_mono_ns();
	enum step st = STEP_MORE;
	int i, r;

	if (!j->started)
		return zjob_start(j);
	if (tlog_segment_dead(j->seg))
		return zjob_drop(j, 0, NULL);
	for (i = 0; i < SLICE_FRAMES && j->pos < j->end; i++)
		if ((r = tlog_zw_from(&j->w, j->in, &j->pos, j->end,
		    j->buf)) != 0)
			return zjob_drop(j, r, "compressing");
	if (j->pos >= j->end)
		st = zjob_finish(j);
	TLOG_METRIC_ADD(j->seg->sd->ctx, z_ns, tlog_mono_ns() - t0);
	return st;
}

/*
 * The thread compresses at a lower priority (nice + ZNICE) than it
 * unlinks and syncs, so that appends sharing its cores come first; it
 * goes back after, or, if it may not (no CAP_SYS_NICE), it never lowers
 * it again.
 */
#define ZNICE 10
static bool znice_off;		/* atomic flag, only ever set */

static bool
znice(int to)
{
	return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), to) == 0;
}

int
tlog_compress_pending(struct tlog_queue *q, int max)
{
	struct tlog_zjob *j;
	enum step st;
	int done = 0, was = INT_MIN;

	/* Nothing queued: no priority to lower and raise again. */
	if (tlog_queue_zqueued(q) == 0)
		return 0;
	if (!__atomic_load_n(&znice_off, __ATOMIC_RELAXED)) {
		errno = 0;
		was = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
		if (errno != 0 || was + ZNICE > 19 || !znice(was + ZNICE))
			was = INT_MIN;
	}
	while ((max <= 0 || done < max) && (j = tlog_queue_zpop(q)) != NULL) {
		if ((st = zjob_step(j)) == STEP_DONE)
			tlog_zjob_free(q, j);
		else
			tlog_queue_zpush(q, j);
		if (st == STEP_LATER)
			break;	/* its footer first: the flusher's next round */
		done++;
	}
	if (was != INT_MIN && !znice(was)) {
		/* Not allowed back up: stay where it was from now on. */
		__atomic_store_n(&znice_off, true, __ATOMIC_RELAXED);
	}
	return done;
}

/* ---- reads: each corrupt frame is said once, with its event ---- */

struct tlog_zbad {
	uint32_t n, cap;
	struct {
		uint64_t base, pos;
	} f[];
};

/* Whether the frame at plain position bad of seg is new to its
 * partition's list, which it then joins (p->sd.lock held). Without
 * memory it counts as said: a line lost, never one a read repeats. */
static bool
zbad_new(struct tlog_partition *p, struct tlog_segment *seg, uint64_t bad)
{
	struct tlog_zbad *z = p->zbad, *nz;
	uint32_t i, cap;

	for (i = 0; z != NULL && i < z->n; i++)
		if (z->f[i].base == seg->base && z->f[i].pos == bad)
			return false;
	if (z == NULL || z->n == z->cap) {
		cap = z == NULL ? 4 : z->cap * 2;
		if ((nz = realloc(z, sizeof(*z) + cap * sizeof(z->f[0]))) ==
		    NULL)
			return false;
		if (z == NULL)
			nz->n = 0;
		nz->cap = cap;
		p->zbad = z = nz;
	}
	z->f[z->n].base = seg->base;
	z->f[z->n++].pos = bad;
	return true;
}

ssize_t
tlog_segment_read(struct tlog_segment *seg, int fd, void *buf, size_t len,
    off_t pos)
{
	struct tlog_partition *p;
	char where[TLOG_SEG_WHERE_MAX];
	struct tlog_event ev;
	uint64_t bad, badlen;
	bool first;
	ssize_t r;

	r = tlog_seg_read(seg, fd, buf, len, pos, &bad, &badlen);
	if (bad == UINT64_MAX)
		return r;
	p = tlog_seg_part(seg);
	pthread_mutex_lock(&p->sd.lock);
	first = zbad_new(p, seg, bad);
	pthread_mutex_unlock(&p->sd.lock);
	if (!first)
		return r;
	tlog_seg_where(seg, where, sizeof(where));
	tlog_ctx_log(p->ctx, LOG_ERR, "%s: a compressed frame (plain bytes "
	    "%" PRIu64 "..%" PRIu64 ") fails its checksum: its records are "
	    "lost, the other frames are still served", where, bad,
	    bad + badlen);
	ev = tlog_seg_event(seg, TLOG_EV_CORRUPT, tlog_ctx_now(p->ctx));
	ev.records = 0;		/* bytes: the plain bytes lost */
	ev.bytes = badlen;
	ev.rule = TLOG_RULE_CORRUPT;
	TLOG_METRIC_ADD(p->ctx, deletions[TLOG_RULE_CORRUPT], 1);
	p->env->emit(p->env->arg, p, &ev);
	return r;
}

/* ---- recovery ---- */

int
tlog_seg_zsame(int dfd, uint64_t base, bool cmp)
{
	struct tlog_zs *t = NULL;
	char name[40], *a = NULL, *b = NULL;
	uint64_t len;
	uint32_t i;
	int zfd = -1, fd = -1, r;

	tlog_segname_format(base, ".log.zst", name, sizeof(name));
	zfd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	tlog_segname_format(base, ".log", name, sizeof(name));
	if (cmp)
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
		    O_NONBLOCK);
	if (zfd == -1 || (cmp && fd == -1)) {
		r = -errno;
		goto out;
	}
	if ((r = tlog_zs_load(zfd, &t)) != 0)
		goto out;
	if ((a = malloc(TLOG_ZS_FRAME_MAX)) == NULL ||
	    (b = malloc(TLOG_ZS_FRAME_MAX)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	/* Every frame decodes (its checksum holds), with cmp to the plain
	 * copy's bytes. */
	for (i = 0; i < t->n; i++) {
		len = t->pos[i + 1] - t->pos[i];
		if ((r = tlog_zs_read_frame(zfd, t, i, a)) != 0)
			goto out;
		if (cmp && (pread(fd, b, len, (off_t)t->pos[i]) !=
		    (ssize_t)len || memcmp(a, b, len) != 0)) {
			r = -EBADMSG;
			goto out;
		}
	}
out:
	free(a);
	free(b);
	tlog_zs_free(t);
	if (zfd != -1)
		close(zfd);
	if (fd != -1)
		close(fd);
	return r;
}

int
tlog_seg_zcheck(int dfd, uint64_t base, uint64_t *plain, uint64_t *zsize)
{
	struct tlog_zs *t;
	struct stat st;
	char name[40];
	int fd, r;

	tlog_segname_format(base, ".log.zst", name, sizeof(name));
	if ((fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1)
		return -errno;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	r = st.st_size > (off_t)TLOG_CAP_BYTES ? -EFBIG : tlog_zs_load(fd, &t);
	/* Its table unreadable, what its whole frames hold, at least. */
	if (r == -EBADMSG && tlog_zs_walk(fd, plain) != 0)
		*plain = 0;
	close(fd);
	if (r != 0)
		return r;
	*plain = t->pos[t->n];
	*zsize = (uint64_t)st.st_size;
	tlog_zs_free(t);
	return 0;
}
