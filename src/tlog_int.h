/*
 * tlog_int.h - the engine's internal structures, shared by the src/ files and the
 * unit tests. Not part of the public API (see tlog.h).
 *
 * Locking, outermost first:
 *   store->tree_lock (rwlock): the topic tree and every topic's partition
 *     tree, names, and the dead flags of topics and partitions.
 *   store->conf_lock (mutex): serializes config writers; readers load the
 *     values atomically without it.
 *   part->sync_lock (mutex): a partition's disk syncs (flush, fsync,
 *     .next); held while the disk works, so never under part->lock.
 *   part->lock (mutex): the partition's segment list and counters.
 *   store->unlink_lock (mutex): the unlink and flush queues.
 * The append path takes tree_lock (read) under a partition lock, to open
 * a new segment's files by path; so nothing holding tree_lock for writing
 * ever takes a partition lock. No engine lock is held while a hook runs
 * or a file is unlinked (the directory is opened under tree_lock, the
 * unlink made after it is dropped).
 */
#ifndef TLOG_INT_H
#define TLOG_INT_H

#include <sys/cdefs.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include <pthread.h>
#include <stdarg.h>
#include <time.h>

#include "tlog.h"
#include "ctx.h"
#include "conf.h"
#include "level.h"
#include "util.h"

/* ---- on-disk index format (doc/format.md) ---- */

#define TLOG_IDX_MAGIC "TLOGIDX1"	/* 8 bytes, header */
#define TLOG_SEAL_MAGIC "TLOGSEAL"	/* 8 bytes, footer */
#define TLOG_IDX_VERSION 1
#define TLOG_IDX_HDR 24		/* magic, version u32, flags u32, base u64 */
#define TLOG_IDX_ENT 24		/* rel u32, pos u32, ts i64, rsv u32, crc u32 */
#define TLOG_IDX_FOOT 48	/* magic, records, bytes, first_ts, max_ts,
				   sealed_by u32, crc u32 */
#define TLOG_IDX_INTERVAL 4096	/* bytes of data between index entries */
#define TLOG_CAP_RECORDS 0xfffffffeULL
#define TLOG_CAP_BYTES 0xffffffffULL
#define TLOG_FORMAT_VERSION 1
/* Header flag: each entry carries the CRC-32C of the data between the
 * previous entry's position and its own. */
#define TLOG_IDX_F_DATACRC 0x1

struct tlog_idx_entry {
	uint32_t rel;		/* offset - base */
	uint32_t pos;		/* byte position in the data file */
	int64_t ts;
	uint32_t crc;		/* data CRC since the previous entry */
};

struct tlog_footer {
	uint64_t records;
	uint64_t bytes;
	int64_t first_ts;
	int64_t max_ts;
	uint32_t sealed_by;
};

void tlog_idx_encode_header(unsigned char *b, uint64_t base, uint32_t flags);
int tlog_idx_decode_header(const unsigned char *b, uint64_t *base);
uint32_t tlog_idx_header_flags(const unsigned char *b);
void tlog_idx_encode_entry(unsigned char *b, const struct tlog_idx_entry *e);
int tlog_idx_decode_entry(const unsigned char *b, struct tlog_idx_entry *e);
void tlog_idx_encode_footer(unsigned char *b, const struct tlog_footer *f);
int tlog_idx_decode_footer(const unsigned char *b, struct tlog_footer *f);

/* ---- objects ---- */

struct tlog_segment {
	TAILQ_ENTRY(tlog_segment) link;	/* partition's list / unlink queue */
	int refs;
	uint64_t ino;
	uint64_t base;
	uint64_t records;	/* committed */
	uint64_t bytes;		/* committed; read atomically by readers */
	int64_t first_ts;
	int64_t max_ts;
	int64_t jitter;		/* taken off segment.ms, drawn at creation */
	uint64_t nidx;		/* index entries in the file */
	uint64_t last_idx_pos;	/* data position of the last index entry */
	uint64_t last_idx_rel;
	uint32_t run_crc;	/* CRC-32C of the data after that entry */
	/* A read-only open's repaired index, which it may not write:
	 * nidx entries that look-ups read instead of the file; NULL
	 * when the file is right. */
	struct tlog_idx_entry *mem_idx;
	int fd;			/* data, O_RDWR; -1 until needed */
	int ifd;		/* index; -1 until needed */
	uint64_t prealloc;	/* length reserved from offset 0 (data
				   included) until the seal trims it; 0 if
				   none */
	unsigned sealed : 1;
	unsigned dead : 1;	/* detached from its partition */
	unsigned trim_pending : 1;
	unsigned char sealed_by;
	unsigned char rule;	/* why it was detached */
	unsigned fd_listed : 1;	/* on the open-file budget's list */
	TAILQ_ENTRY(tlog_segment) fdlink;
	struct tlog_segdir *sd;		/* its partition's; referenced */
	/* Durability (doc/engine.md, "fsync and the flusher"). */
	uint64_t wgen;		/* writes to its files so far */
	uint64_t sgen;		/* wgen as of the last sync covering them */
	unsigned foot_pending : 1;	/* sealed, footer not yet written */
	TAILQ_ENTRY(tlog_segment) synclink;	/* partition's unsynced list */
};
TAILQ_HEAD(tlog_seglist, tlog_segment);
TAILQ_HEAD(tlog_fdlist, tlog_segment);
TAILQ_HEAD(tlog_partq, tlog_partition);

/*
 * The open-file budget: segments holding open descriptors, oldest opened
 * first; past max the oldest idle ones are closed (segment.c).
 */
struct tlog_fdbudget {
	pthread_mutex_t lock;
	struct tlog_fdlist segs;
	size_t n;
	size_t max;
};

/*
 * What the segments of one partition share; the partition embeds it
 * (struct tlog_partition.sd) and each of its segments points to it.
 */
struct tlog_segdir {
	struct tlog_ctx *ctx;
	struct tlog_level *lv;		/* the partition's: its directory,
					   its references */
	struct tlog_fdbudget *fdb;	/* the store's */
	/* The partition lock: the partition's segment list and counters,
	 * its segments' counters, the unsynced list, sync_err. */
	pthread_mutex_t lock;
	/* Durability work that waits on the disk: flushing sealed
	 * segments, fsync, .next. Taken before lock, never under it. */
	pthread_mutex_t sync_lock;
	/* Sealed segments whose footer waits for their data to be synced,
	 * oldest first, each referenced (lock). */
	struct tlog_seglist unsynced;
	uint64_t nunsynced;		/* its length; atomic: the append path
					   reads it with no lock */
	int sync_err;			/* for the next fsync (lock) */
	bool dir_dirty;			/* a file made since the dir sync */
};

struct tlog_partition {
	/* Name, topic (the parent), settings, inode, references, dead
	 * flag, and the identity of its own directory: a path that names
	 * another directory (after a rename over it, or rmdir + mkdir) is
	 * never used to reach this partition's files. */
	struct tlog_level lv;
	RB_ENTRY(tlog_partition) entry;
	struct tlog_segdir sd;		/* lock, sync lock, unsynced list */
	struct tlog_store *store;
	struct tlog_ctx *ctx;		/* the store's */
	struct tlog_seglist segs;	/* oldest first */
	uint64_t nsegs;
	uint64_t bytes;
	uint64_t next_offset;
	int64_t last_ts;		/* newest timestamp handed out */
	uint64_t pending_unlinks;	/* detached, files not yet unlinked;
					   under store->unlink_lock */
	uint64_t pending_bytes;		/* their bytes, counted against the
					   ceiling; changed under unlink_lock,
					   read atomically */
	uint64_t saved_end;		/* durable .next (sd.sync_lock) */
	bool flush_queued;		/* on the store's flush queue */
	TAILQ_ENTRY(tlog_partition) flushlink;	/* (unlink_lock) */
	/* reaper bookkeeping (reaper.c) */
	size_t heap_idx;
	int64_t due;
};
RB_HEAD(tlog_part_tree, tlog_partition);

/* The partition a segment belongs to. */
static inline struct tlog_partition *
tlog_seg_part(const struct tlog_segment *seg)
{
	return TLOG_CONTAINER_OF(seg->sd, struct tlog_partition, sd);
}

struct tlog_topic {
	struct tlog_level lv;		/* name, settings, inode, refs, dead */
	RB_ENTRY(tlog_topic) entry;
	struct tlog_store *store;
	struct tlog_part_tree parts;
};
RB_HEAD(tlog_topic_tree, tlog_topic);
RB_PROTOTYPE(tlog_topic_tree, tlog_topic, entry, topic_cmp)
RB_PROTOTYPE(tlog_part_tree, tlog_partition, entry, part_cmp)

struct tlog_store {
	char *path;
	struct tlog_tree tree;		/* the tree lock; the directory */
	struct tlog_level root;		/* the store's level: its settings */
	int lockfd;
	struct tlog_ctx ctx;		/* options, clock, log, metrics */
	bool was_clean;
	/* The last open was in another boot (or unknown) and did not close
	 * cleanly: a power cut may have lost unsynced pages, so recovery
	 * checks data against the index's data CRCs. */
	bool verify;
	bool repaired;			/* recovery changed a file (atomic) */
	struct tlog_topic_tree topics;
	pthread_mutex_t conf_lock;
	pthread_mutex_t unlink_lock;
	pthread_cond_t unlink_cond;
	struct tlog_seglist unlinkq;
	size_t nunlink;
	/* partitions with sealed segments to flush, each referenced */
	struct tlog_partq flushq;
	size_t nflush;
	bool wakeup;
	/* the reaper: a min-heap of partitions by due time (reaper.c) */
	pthread_mutex_t reap_lock;
	pthread_cond_t reap_cond;
	struct tlog_partition **heap;
	size_t nheap, heapcap;
	pthread_t reaper;
	bool reaper_running;
	bool reaper_stop;
	/* the internal events partition, .tlogfs/events (events.c) */
	struct tlog_topic *itopic;
	struct tlog_partition *events;
	struct tlog_fdbudget fdb;	/* the open-file budget */
};

/* ---- internal helpers ---- */

/* Path of a level's config file relative to the store dir; the caller
 * holds the tree lock (read) so names are stable. */
int tlog_level_conf_path(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, char *buf, size_t len);

/*
 * Disk work on one segment, done without its partition's lock:
 * descriptors and what must be written, taken under the lock
 * (tlog_seg_io_take), the syncs and the footer (tlog_seg_io_run, with
 * p->sync_lock held), the result recorded under the lock again
 * (tlog_seg_io_finish). The footer is written only after the data and
 * the index entries are on disk.
 */
struct tlog_seg_io {
	struct tlog_segment *seg;	/* referenced */
	int fd, ifd;			/* ours to close; -1: open by name */
	uint64_t gen;			/* seg->wgen when taken */
	bool sync;			/* written since the last sync */
	bool footer;			/* write the boundary and footer */
	bool bound;			/* the boundary entry is missing */
	struct tlog_idx_entry be;
	struct tlog_footer f;
	uint64_t nidx;
};

/* segment.c */
/* Caller holds p->lock; steal: the segment's own descriptors (closed
 * after), else duplicates. fd_locked: s->fd_lock is held too. A sealed
 * segment waiting for its footer is claimed: taken off the unsynced
 * list, the footer is io's to write. */
void tlog_seg_io_take(struct tlog_segment *seg, struct tlog_seg_io *io,
    bool steal, bool fd_locked);
int tlog_seg_io_run(struct tlog_seg_io *io, bool datasync);
/* keep_err: an error goes to the partition for its next fsync. */
void tlog_seg_io_finish(struct tlog_seg_io *io, int r, bool keep_err);
struct tlog_segment *tlog_seg_new(struct tlog_segdir *sd, uint64_t base);
void tlog_segdir_init(struct tlog_segdir *sd, struct tlog_ctx *ctx,
    struct tlog_level *lv, struct tlog_fdbudget *fdb);
void tlog_segdir_destroy(struct tlog_segdir *sd);
int tlog_segdir_flush(struct tlog_segdir *sd, int max, bool keep_err,
    int *errp);
void tlog_segdir_drop_unsynced(struct tlog_segdir *sd);
void tlog_fdbudget_init(struct tlog_fdbudget *b, size_t max);
void tlog_fdbudget_destroy(struct tlog_fdbudget *b);
void tlog_seg_ref(struct tlog_segment *seg);
int tlog_seg_open_files(struct tlog_segment *seg, bool create);
void tlog_seg_close_files(struct tlog_segment *seg);
int tlog_seg_write_entries(struct tlog_segment *seg,
    const struct tlog_idx_entry *e, size_t n);
int tlog_seg_seal(struct tlog_segment *seg, enum tlog_trigger why);
int tlog_seg_trim(struct tlog_segment *seg);
int tlog_seg_write_boundary(struct tlog_segment *seg);

/* partition.c */
/* Events collected under the partition lock, emitted after it. */
struct tlog_evbuf {
	struct tlog_event *ev;
	size_t n, cap;
};
/* The active segment (unsealed, the last), or NULL; p->sd.lock held. */
struct tlog_segment *tlog_part_active(struct tlog_partition *p);
/* Seals the active segment if it has records; its event goes to eb. */
int tlog_part_seal_active(struct tlog_partition *p, enum tlog_trigger why,
    struct tlog_evbuf *eb, int64_t now);
/* Emits and frees the events of eb; no lock held. */
void tlog_part_emit(struct tlog_partition *p, struct tlog_evbuf *eb);
/* The span after which a segment seals on time: segment.ms less its
 * jitter, never below 1 ms. */
int64_t tlog_seg_span(const struct tlog_segment *seg, int64_t seg_ms);
struct tlog_partition *tlog_part_alloc(struct tlog_topic *t, const char *name);
void tlog_part_ref(struct tlog_partition *p);
/* Caller holds p->lock. */
void tlog_part_detach(struct tlog_partition *p, struct tlog_segment *seg,
    enum tlog_rule rule);
void tlog_emit_event(struct tlog_partition *p, struct tlog_event *ev);
/*
 * Appends the whole records at the front of buf (see writer.c) and
 * returns how many bytes they took; bytes after the last newline stay
 * unless tail_is_record. If it stops early on an error, *errp is the
 * negative errno and the records before it are appended (a short write);
 * otherwise *errp is 0.
 */
size_t tlog_part_append(struct tlog_partition *p, const char *buf,
    size_t len, bool tail_is_record, int *errp);
int tlog_part_fsync(struct tlog_partition *p, bool datasync);
/* Flushes all of p's sealed segments (takes p->sync_lock). */
void tlog_part_flush(struct tlog_partition *p, bool keep_err);
/* Queues p for the flusher (p->lock held). */
void tlog_part_queue_flush(struct tlog_partition *p);
/* Before files ending at offset `need` are unlinked: a durable .next of
 * at least that. 0 or -errno (then the unlink must wait). */
int tlog_part_save_end(struct tlog_partition *p, uint64_t need);

/* recover.c */
int tlog_part_recover(struct tlog_partition *p);
/* Recovers every partition, on up to 4 threads. */
int tlog_recover_all(struct tlog_store *s);
/* Makes everything durable (as fsync) and closes the files (clean
 * shutdown); 0 or the first error. */
int tlog_part_close(struct tlog_partition *p);

/* registry.c */
struct tlog_topic *tlog_topic_alloc(struct tlog_store *s, const char *name);
/* Loads every topic and partition directory and recovers partitions. */
int tlog_store_load(struct tlog_store *s);
void tlog_topic_ref(struct tlog_topic *t);
/*
 * Unlinks p's detached segments now, on the caller's thread, and waits
 * for those another thread is unlinking, until p's detached bytes are at
 * most `limit`: the size ceiling's bound on disk. The caller holds no
 * engine lock.
 */
void tlog_store_unlink_part(struct tlog_store *s, struct tlog_partition *p,
    uint64_t limit);
/* Waits until no file of p's deleted segments is left (limit < 0) or
 * they hold at most limit bytes (unlink.c). */
int tlog_unlink_drain(struct tlog_partition *p, int64_t limit);
/* A referenced snapshot of every user partition (put each, free v). */
int tlog_all_partitions(struct tlog_store *s, struct tlog_partition ***v,
    size_t *n);

/* reaper.c: lock order part->lock -> reap_lock; never the reverse. */
void tlog_reaper_init(struct tlog_store *s);
void tlog_reaper_fini(struct tlog_store *s);
/* Brings p's due time forward to `due` if that is earlier (or p is not
 * scheduled). Safe with p->lock held. */
void tlog_sched_earlier(struct tlog_partition *p, int64_t due);
/* Recomputes p's due time exactly and applies it, both under p->lock
 * (caller does not hold it). */
void tlog_resched(struct tlog_partition *p);
void tlog_unsched(struct tlog_partition *p);
/* Due time of p: the earlier of its idle seal and its time rule; -1 if
 * none. The _locked one is in partition.c (caller holds p->lock). */
int64_t tlog_part_due(struct tlog_partition *p);
int64_t tlog_part_due_locked(struct tlog_partition *p);
/* After a config change at a level: reschedules what it governs. */
void tlog_conf_changed(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p);

/* events.c */
int tlog_events_open(struct tlog_store *s);
void tlog_events_record(struct tlog_store *s, struct tlog_partition *p,
    const struct tlog_event *ev);

#endif /* TLOG_INT_H */
