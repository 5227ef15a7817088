/*
 * ctx.h - what every layer of one open store shares: its options, engine
 * time, logging with the error rate limit, the metrics counters and
 * inode numbers. The store embeds one (struct tlog_store.ctx); topics,
 * partitions and segments reach it through a pointer, so a lower layer
 * needs nothing of the store itself.
 */
#ifndef TLOG_CTX_H
#define TLOG_CTX_H

#include <sys/types.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "util.h"

/* Counters behind .tlogfs/metrics; updated with atomic adds. */
struct tlog_metrics {
	uint64_t appends;		/* append calls that stored records */
	uint64_t fsyncs;		/* fsync and fdatasync calls */
	uint64_t records;
	uint64_t bytes;
	uint64_t rolls[TLOG_NTRIGGERS];
	uint64_t deletions[TLOG_NRULES];
	uint64_t deleted_bytes;
	uint64_t reaper_wakeups;
	uint64_t reaper_due;		/* partitions visited, all wake-ups */
	uint64_t reaper_last_due;
	uint64_t reaper_ns;		/* time spent in reaper cycles */
	uint64_t reaper_last_ns;
	uint64_t free_cycles;		/* keep.free passes that freed */
	uint64_t free_sync;		/* ENOSPC appends that reclaimed */
	uint64_t free_waits;		/* appends that waited for space */
	uint64_t errors;
	/* Compressed history (compress.c). */
	uint64_t z_segments;		/* segments compressed */
	uint64_t z_in;			/* their plain bytes */
	uint64_t z_out;			/* their compressed bytes */
	uint64_t z_ns;			/* time spent compressing */
};

struct tlog_ctx {
	struct tlog_store_opts opts;
	bool ro;			/* opened read-only: nothing changes */
	uint64_t cap_records;		/* segment capacity (tlog_store_opts) */
	struct tlog_sink log;
	struct tlog_clock clock;
	/* The store's work lock: store-wide bookkeeping (what it guards
	 * and its place in the lock order: doc/engine.md, "Threads and
	 * locks"). */
	pthread_mutex_t work_lock;
	/* Signalled when a partition's disk work ends (segment.h,
	 * tlog_segdir_io_begin); waited on with work_lock. */
	pthread_cond_t io_idle;
	/* The rate limit of repeated errors (tlog_ctx_log_err): engine
	 * time of the last line, and the count suppressed since; atomic. */
	int64_t last_err_ts;
	unsigned suppressed;
	struct tlog_metrics metrics;
	uint64_t next_ino;		/* atomic */
	/* Segments flushed or unlinked so far (atomic): a periodic
	 * checkpoint is due only once this moved (store.c). */
	uint64_t ckpt_changes;
	/* retention.keep.free: bytes appended (users' and events'; an
	 * atomic counter), and the count at which the reaper wants to
	 * check free space (0: not armed), which the append that passes
	 * it claims by a compare-and-swap to 0. */
	uint64_t free_appended;
	uint64_t free_check;
	/* Back-pressure (doc/reaper.md, "Back-pressure"), all atomic
	 * counters: bytes of appends under way (taken off, release, only
	 * after they are added to free_appended: load it first, acquire),
	 * and bytes of segments unlinked so far (counted just before their
	 * unlink, given back if it fails). A segment's files count
	 * TLOG_SEG_DISK_EXTRA more than its bytes, at creation in
	 * free_appended and at unlink here. */
	uint64_t free_inflight;
	uint64_t free_unlinked;
	/* Bytes of unlinked segments readers still hold open: the disk
	 * has not got them back, and deleting more brings nothing (counter
	 * under work_lock, read unlocked; segment.h, TLOG_SEG_HELD). */
	uint64_t free_held;
	/* The appends' budget, published whole by each free-space pass (one
	 * relaxed word, so no reader mixes two passes): an append goes ahead
	 * while free_appended + free_inflight - free_unlinked <= free_limit,
	 * which is the free space less the floor the pass found, plus
	 * appended - unlinked as read before it. INT64_MAX: no budget. */
	int64_t free_limit;
	/* Bytes all writers hold (writer.c), their limit, and the engine
	 * time the last cut was said; held and said atomic. */
	uint64_t held;
	uint64_t held_max;
	int64_t held_said;
	/* Topics' and partitions' modes and owners: set once at open if
	 * the file system keeps no user xattrs (then they stay on their
	 * directories), and the directories made private at this open
	 * (level.h, tlog_level_load_attr); attr_on_dir atomic. */
	bool attr_on_dir;
	unsigned attr_moved;
	bool attr_unsafe;	/* a directory must not be read (said) */
};

/* What a segment takes of the disk beyond its bytes, for the budget: its
 * two files' last blocks (4 KiB on ext4 and tmpfs); a 1 KiB segment takes
 * 8 KiB, not 1. */
#define TLOG_SEG_DISK_EXTRA 8192

void tlog_ctx_init(struct tlog_ctx *ctx, const struct tlog_store_opts *opts);
void tlog_ctx_destroy(struct tlog_ctx *ctx);
/* Engine time (tlog_now); the wall clock if ctx is NULL. */
int64_t tlog_ctx_now(struct tlog_ctx *ctx);
/* Logging through the store's sink (stderr if ctx is NULL). */
void tlog_ctx_log(struct tlog_ctx *ctx, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error that may repeat: at most one line per 30 s of engine time,
 * with the count of those suppressed; every one is counted. */
void tlog_ctx_log_err(struct tlog_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * Opens an existing file of the store, file relative to dirfd, for flags
 * (O_RDONLY, O_WRONLY or O_RDWR): never follows a symbolic link, never
 * blocks (a FIFO under the name would block open(2) until a writer came)
 * and never opens a device. Anything but a regular file under the name
 * is a stray: left alone, logged as dir/file (dir: the level's name in
 * the store, "" for its root) and answered as missing. Returns the
 * descriptor, -ENOENT (missing or a stray) or -errno.
 */
int tlog_ctx_open_file(struct tlog_ctx *ctx, int dirfd, const char *dir,
    const char *file, int flags);
/* A small file of the store, opened as above: at most len - 1 bytes
 * into buf, NUL-terminated ("" on failure). Returns the count or
 * -errno (-ENOENT: missing or a stray). */
ssize_t tlog_ctx_read_file(struct tlog_ctx *ctx, int dirfd, const char *dir,
    const char *file, char *buf, size_t len);
/* A new inode number: unique within one open of the store. */
uint64_t tlog_ctx_ino(struct tlog_ctx *ctx);

#define TLOG_METRIC_ADD(ctx, field, n) \
	__atomic_add_fetch(&(ctx)->metrics.field, (n), __ATOMIC_RELAXED)

/* Calls the test hook, if a test set one (tlog_store_opts.hook). */
#define TLOG_HOOK(ctx, point, p) do {					\
	if ((ctx)->opts.hook != NULL)					\
		(ctx)->opts.hook((ctx)->opts.hook_arg, (point), (p));	\
} while (0)

/* Appends under way and done since the last check of free space would
 * take it below retention.keep.free. */
static inline bool
tlog_ctx_free_short(struct tlog_ctx *ctx)
{
	int64_t limit = __atomic_load_n(&ctx->free_limit, __ATOMIC_RELAXED);
	uint64_t used;

	if (limit == INT64_MAX)
		return false;
	TLOG_HOOK(ctx, TLOG_HOOK_FREE_SHORT, NULL);
	/* In flight first: bytes leave it only once in free_appended. */
	used = __atomic_load_n(&ctx->free_inflight, __ATOMIC_ACQUIRE);
	used += __atomic_load_n(&ctx->free_appended, __ATOMIC_RELAXED);
	used -= __atomic_load_n(&ctx->free_unlinked, __ATOMIC_RELAXED);
	return (int64_t)used > limit;
}

#endif /* TLOG_CTX_H */
