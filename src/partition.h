/*
 * partition.h - a partition: an append-only log kept as a run of segments
 * (oldest first), the append path with its roll decision and size
 * ceiling (append.c), sealing, detaching segments for deletion,
 * statistics (partition.c).
 *
 * A partition queues its sealed and deleted segments (queue.h, unlink.h,
 * the same layer) and reaches the store layer above only through the
 * hooks the store fills in (struct tlog_part_env): seal and deletion
 * events, and the scheduler. Its locks: doc/engine.md, "Threads and
 * locks".
 */
#ifndef TLOG_PARTITION_H
#define TLOG_PARTITION_H

#include <sys/queue.h>
#include <sys/tree.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctx.h"
#include "heap.h"
#include "level.h"
#include "segment.h"

struct tlog_partition;
struct tlog_queue;
struct tlog_zbad;

/* What a partition tells its scheduler (the reaper, once attached). */
enum tlog_sched_why {
	TLOG_SCHED_EARLIER,	/* a new segment: p may be due sooner, at
				   `due` (p->sd.lock held) */
	TLOG_SCHED_SEALED,	/* p sealed a segment: keep.free's key of it
				   may change (p->sd.lock held) */
	TLOG_SCHED_AGAIN,	/* p's settings or cursors changed: its due
				   time is computed again (no partition lock
				   held) */
	TLOG_SCHED_GONE		/* p left the store */
};

/* What an append asks of retention.keep.free (no engine lock held). */
enum tlog_space_ask {
	TLOG_SPACE_CHECK,	/* appends passed ctx->free_check bytes:
				   check free space soon */
	TLOG_SPACE_WAIT,	/* appends would take free space below the
				   floor: free space, and wait (bounded) for
				   the unlinks */
	TLOG_SPACE_RECLAIM	/* an append hit ENOSPC: free space now;
				   > 0: something was freed, retry once */
};

/* The scheduler's two calls, which the reaper fills in when attached. */
struct tlog_sched_ops {
	void (*sched)(void *arg, struct tlog_partition *p,
	    enum tlog_sched_why why, int64_t due);
	int (*space)(void *arg, enum tlog_space_ask ask);
};

/* What every partition of a store shares, filled in by the store at open
 * (sched and sched_arg by the reaper, while it is attached). */
struct tlog_part_env {
	struct tlog_ctx *ctx;
	struct tlog_fdbudget *fdb;
	struct tlog_queue *q;		/* the unlink and flush queues */
	/* A seal or a deletion: recorded and reported (no lock held). */
	void (*emit)(void *arg, struct tlog_partition *p,
	    struct tlog_event *ev);
	void *arg;
	const struct tlog_sched_ops *sched;
	/* The reaper: published (release) once it is set up, loaded with
	 * acquire by whoever calls sched; NULL: nothing is scheduled. */
	void *sched_arg;
};

/* Its fields, grouped by what guards them (doc/engine.md, "Threads and
 * locks"). */
struct tlog_partition {
	/* Set when made, then only read. lv: name, topic (the parent),
	 * settings, inode, references, dead flag, and the identity of its
	 * own directory (level.h; the names under the tree lock, the rest
	 * atomic). */
	struct tlog_level lv;
	const struct tlog_part_env *env;	/* the store's */
	struct tlog_ctx *ctx;		/* env->ctx */
	bool quiet;			/* the store's events partition: no
					   metrics, no events of its own */

	/* The partition lock (sd.lock; sd also holds the unsynced list). */
	struct tlog_segdir sd;
	struct tlog_seglist segs;	/* oldest first */
	uint64_t nsegs;			/* atomic count; read unlocked as a
					   hint (rmdir, rename, metrics) */
	uint64_t bytes;
	/* What compression saved: its compressed segments' bytes less
	 * their .log.zst's sizes (negative if they grew). bytes - zsaved
	 * is what the partition holds on disk, which retention.bytes
	 * counts (tlog_part_disk). */
	int64_t zsaved;
	uint64_t next_offset;
	int64_t last_ts;		/* newest timestamp handed out */
	int64_t born;			/* engine time made or loaded */
	bool cleanup_warned;		/* a stray kept it from cleanup */
	/* cursor.c's: the cursors, sorted by name, one malloc'd block
	 * replaced whole (freed with p), their count (stored atomically:
	 * the metrics read it unlocked as a hint) and the slowest
	 * (UINT64_MAX if none) for the rules. */
	struct tlog_cursor *cursors;
	uint32_t ncursors;
	uint64_t cursor_floor;
	/* compress.c's: the compressed frames found corrupt, each said once
	 * (its segment's base, its plain position); NULL if none. */
	struct tlog_zbad *zbad;

	/* Its disk work's (tlog_segdir_io_begin). */
	uint64_t saved_end;		/* durable .next (unlink.c) */
	/* Its identity (cursor.c), read or made at the first request:
	 * published (release) once the string is filled, loaded with
	 * acquire; freed with p. */
	char *id;

	/* The store's work lock (ctx->work_lock): the queues and the
	 * reaper's heaps. Detached segments whose files are not unlinked
	 * yet, and their bytes, counted against the ceiling (atomic
	 * counts: read unlocked as hints, by the append path's ceiling
	 * and the cleanup's veto). */
	uint64_t pending_unlinks;
	uint64_t pending_bytes;
	bool flush_queued;		/* on the flush queue (queue.c) */
	TAILQ_ENTRY(tlog_partition) flushlink;
	struct tlog_heap_node sched;	/* the reaper's heap: key = due time */
	struct tlog_heap_node fheap;	/* the free-space heap: key = oldest
					   segment's max_ts */
	/* The store's admin_lock: the last keep.free pass that took from
	 * it (free.c). */
	uint64_t free_pass;

	/* The tree lock: its topic's tree (registry.c). */
	RB_ENTRY(tlog_partition) entry;

	/* Atomic: open writers (writer.c). partition.cleanup.ms never
	 * removes a partition someone holds open for writing. */
	uint32_t nwriters;
};

/* A new partition of parent's (not yet in any tree): one reference. */
struct tlog_partition *tlog_part_alloc(struct tlog_level *parent,
    const char *name, const struct tlog_part_env *env);
void tlog_part_ref(struct tlog_partition *p);
/* At close, when nothing else runs: drops p's segments, then the
 * reference. */
void tlog_part_release(struct tlog_partition *p);
/* Effective value of a key for p: partition, topic, store, built-in. */
int64_t tlog_part_conf(struct tlog_partition *p, enum tlog_key k);

/* p's bytes on disk (p->sd.lock held). */
static inline uint64_t
tlog_part_disk(const struct tlog_partition *p)
{
	return (uint64_t)((int64_t)p->bytes - p->zsaved);
}

/* The partition a segment belongs to. */
static inline struct tlog_partition *
tlog_seg_part(const struct tlog_segment *seg)
{
	return TLOG_CONTAINER_OF(seg->sd, struct tlog_partition, sd);
}

/*
 * When a segment whose newest record is max_ts expires under retention.ms
 * rms: max_ts + rms + 1, the first ms strictly after its window (an age
 * of exactly rms is kept); -1 if rms is -1 (forever).
 */
int64_t tlog_part_expires_at(int64_t max_ts, int64_t rms);

/* The active segment (unsealed, the last), or NULL; p->sd.lock held. */
struct tlog_segment *tlog_part_active(struct tlog_partition *p);

/* Events collected under the partition lock, emitted after it. */
struct tlog_evbuf {
	struct tlog_event *ev;
	size_t n, cap;
};
/* Seals the active segment if it has records (p->sd.lock held); its
 * event goes to eb, if not NULL. */
int tlog_part_seal_active(struct tlog_partition *p, enum tlog_trigger why,
    struct tlog_evbuf *eb, int64_t now);
/* Counts and emits the events of eb, then frees them; no lock held. */
void tlog_part_emit(struct tlog_partition *p, struct tlog_evbuf *eb);
/* Takes seg off p's list and queues it for unlinking, with no I/O
 * (p->sd.lock held). */
void tlog_part_detach(struct tlog_partition *p, struct tlog_segment *seg,
    enum tlog_rule rule);
/*
 * The one step of every rule that takes p's oldest segment (retention.c;
 * append.c's size ceiling too), p->sd.lock held: sealed first if active
 * (its event to eb), detached with rule, its bytes on disk (tlog_seg_disk)
 * added to *bytes (may
 * be NULL): 1. An empty active segment only gives back its reservation:
 * 0, or -1 if it has none (or p no segment): nothing to take.
 */
int tlog_part_take_oldest(struct tlog_partition *p, enum tlog_rule rule,
    struct tlog_evbuf *eb, int64_t now, uint64_t *bytes);

/*
 * Appends the whole records at the front of buf (see writer.c) and
 * returns how many bytes they took; bytes after the last newline stay
 * unless tail_is_record. If it stops early on an error, *errp is the
 * negative errno and the records before it are appended (a short write);
 * otherwise *errp is 0.
 */
size_t tlog_part_append(struct tlog_partition *p, const char *buf,
    size_t len, bool tail_is_record, int *errp);

/* The scheduler's calls for p, if one is attached. */
void tlog_part_sched_earlier(struct tlog_partition *p, int64_t due);
void tlog_part_resched(struct tlog_partition *p);
void tlog_part_unsched(struct tlog_partition *p);
/* The scheduler's argument, NULL if none is attached (append.c's calls). */
void *tlog_part_sched_arg(struct tlog_partition *p);

#endif /* TLOG_PARTITION_H */
