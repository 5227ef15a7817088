/*
 * segment.h - one segment: a data file holding records exactly as written
 * and its sparse index (index.h); the struct the segments of one
 * partition share (tlog_segdir, which the partition embeds); and the
 * store's open-file budget. Written in segment.c (the segment in
 * memory), segio.c (opening, the budget, a sync's disk work) and
 * segread.c (reads and look-ups).
 *
 * A segment's counters change only under its partition's lock (sd->lock);
 * bytes is also read atomically by readers, which never see past the last
 * whole record. Segments are counted references; each holds one on its
 * partition (through sd->lv).
 */
#ifndef TLOG_SEGMENT_H
#define TLOG_SEGMENT_H

#include <sys/queue.h>
#include <sys/tree.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctx.h"
#include "index.h"
#include "level.h"

struct tlog_segdir;
struct tlog_segment;

/*
 * What a segment needs only while it is written, has open files or owes
 * the disk something. A sealed, idle segment (most of a store's) has
 * none, which keeps it small (doc/performance.md, "Memory").
 *
 * Its lifetime: it is made, read, written and freed only under sd->lock,
 * or by the only holder of a segment on no list yet (creation,
 * recovery). It exists while the segment has a descriptor open or is on
 * the open-file budget's list, has writes no sync covered yet (wgen !=
 * sgen), waits for its footer, holds a read-only open's repaired index,
 * or is active with append state tlog_seg_live could not make again (a
 * jitter, a reservation, data after its last index entry); tlog_seg_idle
 * frees it once none of that holds. So code that holds sd->lock and sees
 * one of those conditions may use seg->live, the append path makes it
 * (tlog_seg_live) before it reads it, and nothing keeps a pointer to it
 * past the unlock. The budget's eviction reads the list links with only
 * the work lock (ctx->work_lock) held: a listed segment's live part
 * cannot go, as it is unlisted only under that lock too (fd_unlist).
 */
struct tlog_seg_live {
	int64_t jitter;		/* taken off segment.ms, drawn at creation */
	uint32_t last_idx_pos;	/* data position of the last index entry */
	uint32_t last_idx_rel;	/* (32 bits in the index too) */
	uint32_t run_crc;	/* CRC-32C of the data after that entry */
	int fd;			/* data, O_RDWR; -1 until needed */
	int ifd;		/* index; -1 until needed */
	unsigned fd_listed : 1;	/* on the open-file budget's list */
	unsigned foot_pending : 1;	/* sealed, footer not yet written */
	/* A read-only open's repaired index, which it may not write:
	 * nidx entries that look-ups read instead of the file; NULL
	 * when the file is right. Kept until the segment is freed. */
	struct tlog_idx_entry *mem_idx;
	uint64_t prealloc;	/* length reserved from offset 0 (data
				   included) until the seal trims it; 0 if
				   none */
	TAILQ_ENTRY(tlog_segment) fdlink;	/* the budget's list */
	/* Durability (doc/engine.md, "fsync and the flusher"). */
	uint64_t wgen;		/* writes to its files so far */
	uint64_t sgen;		/* wgen as of the last sync covering them */
	TAILQ_ENTRY(tlog_segment) synclink;	/* the unsynced list */
};

struct tlog_segment {
	TAILQ_ENTRY(tlog_segment) link;	/* partition's list / unlink queue */
	struct tlog_segdir *sd;		/* its partition's; referenced */
	struct tlog_seg_live *live;	/* NULL when idle (above) */
	uint64_t ino;
	uint64_t base;
	/* Committed: published (release, under sd->lock) after the
	 * records' data and index entries are written; a reader that
	 * loads it (acquire) may read the files up to it. 32 bits, as the
	 * index's positions: a segment holds less than 4 GiB
	 * (TLOG_CAP_BYTES). */
	uint32_t bytes;
	/* Compressed history (zread.c, compress.c): the size of its
	 * BASE.log.zst once that replaced BASE.log, else 0. Published
	 * (release, under sd->lock) once the .log.zst is in place and
	 * synced: a reader that loads it nonzero (acquire) opens that. */
	uint32_t zbytes;
	int64_t first_ts;
	int64_t max_ts;
	uint32_t records;	/* committed; at most bytes (32 bits) */
	uint32_t nidx;		/* index entries in the file */
	int refs;		/* atomic count; the last put frees */
	unsigned sealed : 1;
	/* Sealed, and its footer written after its data and entries were
	 * synced (or loaded so at open): its files never change again.
	 * Only such segments go into a periodic checkpoint. */
	unsigned flushed : 1;
	unsigned dead : 1;	/* detached from its partition */
	unsigned trim_pending : 1;
	/* Its .log is served beside a longer .log.zst that recovery keeps
	 * for the operator (recover.c, zrecover): never compressed. */
	unsigned zboth : 1;
	unsigned char sealed_by;
	unsigned char rule;	/* why it was detached */
	/* The zstd level it is to be compressed at, decided when it
	 * sealed; 0: it stays plain. */
	unsigned char zlevel;
};
TAILQ_HEAD(tlog_seglist, tlog_segment);

/* What the segment takes on disk: its compressed file's size once it
 * has one, else its bytes. */
static inline uint64_t
tlog_seg_disk(const struct tlog_segment *seg)
{
	uint32_t z = __atomic_load_n(&seg->zbytes, __ATOMIC_ACQUIRE);

	return z != 0 ? z : seg->bytes;
}

/* Its files were just unlinked: if readers still hold the data, the disk
 * gets its bytes back only when they close (ctx->free_held). */
void tlog_seg_unlinked(struct tlog_segment *seg);

/* The segments readers hold descriptors of (tlog_segment_open), one node
 * each, kept apart so that the many segments nobody reads cost nothing:
 * how many, and whether its files were unlinked meanwhile (its bytes
 * then count in ctx->free_held until the last one closes). */
struct tlog_reading {
	RB_ENTRY(tlog_reading) entry;
	struct tlog_segment *seg;
	uint32_t n;
	bool held;
};
RB_HEAD(tlog_reading_tree, tlog_reading);
RB_PROTOTYPE(tlog_reading_tree, tlog_reading, entry, reading_cmp)

/*
 * The store's cache of decompressed frames (zread.c), under the work
 * lock: entries keyed by segment (its inode number, unique within an
 * open) and frame, a seek table being the frame UINT32_MAX; the least
 * recently used go first once their bytes pass max. An entry a reader
 * copies from is referenced and stays until the copy is done. zfd marks
 * the descriptors tlog_segment_open gave for a compressed file (one bit
 * each, atomic).
 */
struct tlog_zent;
TAILQ_HEAD(tlog_zlru, tlog_zent);
struct tlog_zcache {
	struct tlog_zlru lru;		/* most recently used first */
	struct tlog_zent **hash;
	size_t nhash;
	uint64_t bytes;			/* of every entry */
	uint64_t max;
	pthread_cond_t cond;		/* a frame decoded (work lock) */
	uint64_t *zfd;
	size_t nzfd;			/* descriptors it has bits for */
	uint64_t hits, misses;		/* atomic */
};
#define TLOG_ZCACHE_DEFAULT (16ULL << 20)

/*
 * The open-file budget: segments holding open descriptors, oldest opened
 * first; past max the oldest idle ones are closed (and reopened when
 * written again). One per store.
 *
 * A segment counts against max from the moment its files are listed
 * until they are closed: n listed, plus taken, the segments whose
 * descriptors a sync took off the list (tlog_seg_io_take with steal: an
 * eviction's, a flush's) and still holds, two each, until
 * tlog_seg_io_finish closes them. An open that finds the budget spent
 * while a sync still holds descriptors evicts others in their stead:
 * only the last eviction's own victims pass it, until their sync ends
 * (fd_evict).
 */
struct tlog_fdbudget {
	struct tlog_ctx *ctx;		/* its work_lock guards the budget */
	struct tlog_seglist segs;	/* linked through live->fdlink */
	size_t n;
	size_t taken;
	size_t max;
	int64_t full_said;	/* engine ms of the last "out of descriptors"
				 * line (atomic) */
	/* Descriptors readers hold (tlog_segment_open), by segment, and
	 * the most they may (readers_share, segio.c). */
	struct tlog_reading_tree reading;
	size_t readers;
	size_t readers_max;
	/* What readers_max is made of: RLIMIT_NOFILE at the open (0: none),
	 * the front end's reserve, the threads that may do disk work at
	 * once. */
	size_t limit;
	size_t reserve;
	size_t threads;
	struct tlog_zcache zc;		/* the frame cache */
};

/* Sets up and frees the frame cache (zread.c); max 0: the default. */
int tlog_zcache_init(struct tlog_zcache *zc, uint64_t max);
void tlog_zcache_destroy(struct tlog_zcache *zc);
/* The bytes the cache holds now. */
uint64_t tlog_zcache_bytes(struct tlog_fdbudget *b);
/* Whether fd came from tlog_segment_open for a compressed file; its
 * mark set or cleared. */
bool tlog_zfd_is(struct tlog_zcache *zc, int fd);
int tlog_zfd_mark(struct tlog_zcache *zc, int fd, bool on);
/*
 * Reads up to len plain bytes at pos of a compressed segment through fd
 * (its .log.zst), decoding only the frames the range touches, through
 * the cache. A frame that fails its checksum is never served: a read
 * that touches it fails with -EIO, and *bad is set to that frame's
 * plain start and *badlen to its length (UINT64_MAX, 0 otherwise).
 */
ssize_t tlog_seg_zread(struct tlog_segment *seg, int fd, void *buf,
    size_t len, uint64_t pos, uint64_t end, uint64_t *bad,
    uint64_t *badlen);
/* tlog_segment_read's work, plain or compressed; *bad as above. */
ssize_t tlog_seg_read(struct tlog_segment *seg, int fd, void *buf,
    size_t len, off_t pos, uint64_t *bad, uint64_t *badlen);

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
	/* Its disk work is under way (the store's work lock; see
	 * tlog_segdir_io_begin). */
	bool io_busy;
	/* Sealed segments whose footer waits for their data to be synced,
	 * oldest first, each referenced (lock). */
	struct tlog_seglist unsynced;
	uint64_t nunsynced;		/* its length (lock); atomic: the
					   append path reads it unlocked */
	int sync_err;			/* for the next fsync (lock) */
	bool dir_dirty;			/* a file made since the dir sync */
};

void tlog_segdir_init(struct tlog_segdir *sd, struct tlog_ctx *ctx,
    struct tlog_level *lv, struct tlog_fdbudget *fdb);
void tlog_segdir_destroy(struct tlog_segdir *sd);
/*
 * A partition's disk work, one at a time: flushing its sealed segments,
 * fsync, its end offset (.next), its cursors (.cursors) and identity
 * (.id), an eviction's sync. It waits on the disk, so it runs without
 * sd->lock, marked by sd->io_busy, which the store's work lock guards;
 * whoever wants to start it meanwhile sleeps until it ends
 * (ctx->io_idle). tlog_segdir_io_begin waits for the mark and sets it;
 * neither it nor tlog_segdir_io_end may be called with a partition lock
 * or the work lock held (doc/engine.md, "Threads and locks"); an
 * eviction, which holds the work lock, takes only an unmarked
 * partition's.
 */
void tlog_segdir_io_begin(struct tlog_segdir *sd);
void tlog_segdir_io_end(struct tlog_segdir *sd);
/* Writes the footers of up to max (0: all) sealed segments, oldest first,
 * each after its data and entries are synced; sd's disk work begun. Returns
 * how many; the first error goes to *errp, or, errp NULL, each to
 * sd->sync_err for the next fsync. */
int tlog_segdir_flush(struct tlog_segdir *sd, int max, int *errp);
/* Drops the unsynced list without writing (store teardown). */
void tlog_segdir_drop_unsynced(struct tlog_segdir *sd);

/*
 * Descriptors one thread may hold for a moment beyond the segments'
 * share while it does disk work: the two duplicates an fsync syncs
 * through, or the victim of its eviction in flight, and a directory and
 * an atomic write's temporary file (or a new segment's files until
 * they are listed).
 */
#define TLOG_FD_PER_THREAD 4
/* The store's own files (its directory, lock, events; the compressor's
 * two) and directories being read. */
#define TLOG_FD_MARGIN 32
/* max 0: a quarter of RLIMIT_NOFILE (at least 16). reserve: the front
 * end's own descriptors; workers: the threads outside the store that may
 * call into it at once (0: one). */
void tlog_fdbudget_init(struct tlog_fdbudget *b, struct tlog_ctx *ctx,
    size_t max, size_t reserve, size_t workers);
/* A thread of the store's own that may do disk work started or
 * stopped: the readers' share follows. */
void tlog_fdbudget_thread(struct tlog_fdbudget *b, bool started);
void tlog_fdbudget_destroy(struct tlog_fdbudget *b);

/* A new segment (not yet linked anywhere), with its live part: one
 * reference. */
struct tlog_segment *tlog_seg_new(struct tlog_segdir *sd, uint64_t base);
/* Gives seg a live part if it has none (sd->lock held); 0 or -ENOMEM. */
int tlog_seg_live(struct tlog_segment *seg);
/* Frees seg's live part if nothing needs it any more (sd->lock held). */
void tlog_seg_idle(struct tlog_segment *seg);
/* Whether seg's data ends at its last index entry (or it has neither
 * entry nor record), with no data CRC running past it: the append state
 * tlog_seg_live makes from the counters alone (sd->lock held). */
bool tlog_seg_ends_indexed(const struct tlog_segment *seg);
/* Closes seg's files and frees its live part, whatever it holds: for
 * the last reference (segment on no list). */
void tlog_seg_drop_live(struct tlog_segment *seg);
/* The space seg holds reserved: its preallocation, 0 once sealed
 * (sd->lock held). */
static inline uint64_t
tlog_seg_prealloc(const struct tlog_segment *seg)
{
	return seg->live != NULL ? seg->live->prealloc : 0;
}
/* Whether records follow seg's last index entry, so that its end needs a
 * boundary entry (sd->lock held). An idle segment never needs one. */
static inline bool
tlog_seg_needs_boundary(const struct tlog_segment *seg)
{
	const struct tlog_seg_live *x = seg->live;

	return x != NULL && seg->records > 0 && !(seg->nidx > 0 &&
	    x->last_idx_rel == seg->records && x->last_idx_pos == seg->bytes);
}
void tlog_seg_ref(struct tlog_segment *seg);
/* An event of this kind about seg at ts, with its counters; the trigger
 * or rule is the caller's to set, the partition's names the emitter's. */
struct tlog_event tlog_seg_event(const struct tlog_segment *seg,
    enum tlog_event_kind kind, int64_t ts);
/* Whether a line said at most once a minute may be said now: true for
 * the one caller that claims *said (engine ms of the last time, atomic;
 * 0: never) for now. */
bool tlog_once_a_minute(struct tlog_ctx *ctx, int64_t *said);
/* "TOPIC/PART/BASE.log", the segment as log lines name it. */
void tlog_seg_where(const struct tlog_segment *seg, char *buf, size_t len);
#define TLOG_SEG_WHERE_MAX (2 * TLOG_NAME_MAX + 32)
/* Opens (or creates, for a new active segment: the index with its
 * header) the data and index files. Through the partition's own
 * directory: a partition removed or replaced meanwhile gets -ENOENT and
 * creates nothing. */
int tlog_seg_open_files(struct tlog_segment *seg, bool create);
/* Closes seg's files; the caller holds sd->lock (or the only reference),
 * and the work lock if locked. close_fds keeps the live part, for the
 * caller to free (tlog_seg_idle); close_files frees it if it may. */
void tlog_seg_close_fds(struct tlog_segment *seg, bool locked);
void tlog_seg_close_files(struct tlog_segment *seg);
/* All or nothing (n > 0): on a failed write the index is cut back, so it
 * never names data the caller takes back. */
int tlog_seg_write_entries(struct tlog_segment *seg,
    const struct tlog_idx_entry *e, size_t n);
/* An entry where the data ends (rel = records, pos = bytes), if
 * tlog_seg_needs_boundary and the index is open: a mount then knows the
 * end of the data without reading it. */
int tlog_seg_write_boundary(struct tlog_segment *seg);
/* Seals in memory (sd->lock held): the segment never changes again. Its
 * footer waits, on the unsynced list with its descriptors, until the
 * flusher, an fsync or an eviction has synced the data (tlog_seg_io_run);
 * only the preallocated space is given back now. */
int tlog_seg_seal(struct tlog_segment *seg, enum tlog_trigger why);
/* Gives back space reserved beyond the data; retried later on failure. */
int tlog_seg_trim(struct tlog_segment *seg);
/* The span after which a segment seals on time: segment.ms less its
 * jitter, never below 1 ms. */
int64_t tlog_seg_span(const struct tlog_segment *seg, int64_t seg_ms);

/*
 * Look-ups inside one segment (doc/seek.md). find_offset: the position of
 * the record with this offset; -ENOENT if the offset is outside it.
 * find_time: offset and position of the first record that can have
 * ts >= t (conservative: from the nearest index entry at or before).
 */
int tlog_seg_find_offset(struct tlog_segment *seg, uint64_t offset,
    uint64_t *pos);
int tlog_seg_find_time(struct tlog_segment *seg, int64_t t,
    uint64_t *offset, uint64_t *pos);

/*
 * Disk work on one segment, done without its partition's lock:
 * descriptors and what must be written, taken under the lock
 * (tlog_seg_io_take), the syncs and the footer (tlog_seg_io_run, the
 * partition's disk work begun: tlog_segdir_io_begin), the result
 * recorded under the lock again (tlog_seg_io_finish).
 */
struct tlog_seg_io {
	struct tlog_segment *seg;	/* referenced */
	int fd, ifd;			/* ours to close; -1: open by name */
	bool taken;			/* counted in the budget's taken */
	uint64_t gen;			/* seg->wgen when taken */
	bool sync;			/* written since the last sync */
	bool footer;			/* write the boundary and footer */
	bool bound;			/* the boundary entry is missing */
	struct tlog_idx_entry be;
	struct tlog_footer f;
	uint64_t nidx;
};

/* Caller holds sd->lock; steal: the segment's own descriptors (closed
 * after, counted in the budget's taken until then), else duplicates.
 * fd_locked: the work lock is held too. A sealed segment waiting for
 * its footer is claimed: taken off the unsynced list, the footer is
 * io's to write. */
void tlog_seg_io_take(struct tlog_segment *seg, struct tlog_seg_io *io,
    bool steal, bool fd_locked);
int tlog_seg_io_run(struct tlog_seg_io *io, bool datasync);
/* keep_err: an error goes to sd->sync_err for the partition's next
 * fsync. */
void tlog_seg_io_finish(struct tlog_seg_io *io, int r, bool keep_err);

#endif /* TLOG_SEGMENT_H */
