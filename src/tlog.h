/*
 * tlog.h - the tlogfs engine: a store of topics and partitions, each
 * partition an append-only log kept as a run of segment files.
 *
 * This is the whole public contract of libtlog. It knows nothing of FUSE:
 * mount/ translates kernel requests into these calls and holds no policy.
 *
 * Conventions:
 *  - Functions returning int return 0 (or a count) on success and a
 *    negative errno on failure. Nothing is half-applied on failure.
 *  - Objects are reference counted. A function named *_get returns a new
 *    reference that the caller drops with the matching *_put. Objects that
 *    are removed from the store stay valid (but "dead") while referenced.
 *  - Times are milliseconds since the epoch, engine time (tlog_now), made
 *    of the store's wall and boot-time clocks, which tests replace
 *    (struct tlog_store_opts.clock, .boot_clock).
 *  - Thread safety: every function may be called from any thread.
 *  - A store opened read-only (tlog_store_opts.readonly) answers -EROFS
 *    to every call that would change it.
 */
#ifndef TLOG_H
#define TLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define TLOG_NAME_MAX 249	/* longest topic or partition name */
#define TLOG_UNSET INT64_MIN	/* a config level that does not set a key */

struct tlog_store;
struct tlog_topic;
struct tlog_partition;
struct tlog_segment;
struct tlog_writer;

/* ---- configuration keys (doc/design.md §5) ---- */

enum tlog_key {
	TLOG_RETENTION_MS,
	TLOG_RETENTION_BYTES,
	TLOG_SEGMENT_BYTES,
	TLOG_SEGMENT_MS,
	TLOG_SEGMENT_JITTER_MS,
	TLOG_SEGMENT_PREALLOCATE,
	TLOG_RECORD_MAX_BYTES,
	TLOG_RETENTION_CONSUMED_MS,
	TLOG_PARTITION_CLEANUP_MS,
	TLOG_RETENTION_KEEP_FREE,
	TLOG_COMPRESSION_TYPE,		/* TLOG_COMP_* */
	TLOG_COMPRESSION_ZSTD_LEVEL,
	TLOG_NKEYS
};

/* compression.type's values, as kept (the names are what getxattr and
 * the .config files show). */
#define TLOG_COMP_NONE 0
#define TLOG_COMP_ZSTD 1

/* One level's overrides: TLOG_UNSET where the level sets nothing. Each
 * value atomic (conf.h): set under the store's admin_lock, read with no
 * lock; keys are independent, no reader needs two at once. */
struct tlog_conf {
	int64_t v[TLOG_NKEYS];
};

/* "retention.ms" -> TLOG_RETENTION_MS; -1 if unknown. */
int tlog_key_lookup(const char *name);
const char *tlog_key_name(enum tlog_key k);
/* A value of k as getxattr and the key=value files show it. */
void tlog_key_format(enum tlog_key k, int64_t v, char *buf, size_t len);
/*
 * retention.keep.free as a percentage of the file system: N% (1..99) is
 * kept as -100 - N, below -1 (off) and above TLOG_UNSET, so a level's
 * value stays one int64_t.
 */
#define TLOG_PCT_ENCODE(n) (-100 - (int64_t)(n))
#define TLOG_PCT_IS(v) ((v) <= -101 && (v) >= -199)
#define TLOG_PCT_DECODE(v) (-100 - (v))

/* ---- roll triggers and deletion rules ---- */

enum tlog_trigger {
	TLOG_TRIG_NONE = 0,
	TLOG_TRIG_SIZE,		/* S.bytes + len(R) > segment.bytes */
	TLOG_TRIG_TIME,		/* R.ts - S.first_ts >= segment.ms - jitter */
	TLOG_TRIG_IDLE,		/* engine time, no append (reaper) */
	TLOG_TRIG_MANUAL,	/* user.seal or rm */
	TLOG_TRIG_CAPACITY,	/* index or offset width would overflow */
	TLOG_TRIG_RETENTION,	/* sealed so that retention can delete it */
	TLOG_TRIG_RECOVERY,	/* found unsealed behind a newer segment */
	TLOG_NTRIGGERS
};
const char *tlog_trigger_name(enum tlog_trigger t);

enum tlog_rule {
	TLOG_RULE_TIME,
	TLOG_RULE_SIZE,
	TLOG_RULE_MANUAL,
	TLOG_RULE_CONSUMED,	/* every cursor passed it, and it is old */
	TLOG_RULE_FREE,		/* retention.keep.free: disk pressure */
	TLOG_RULE_CORRUPT,	/* a compressed frame failed its checksum */
	TLOG_NRULES
};
const char *tlog_rule_name(enum tlog_rule r);

/* ---- store ---- */

/* TLOG_EV_PART_DELETE: an empty partition removed by
 * partition.cleanup.ms (only topic, partition, their inodes, ts and
 * max_ts, its last write, are set). */
/* TLOG_EV_CORRUPT: a frame of a compressed segment failed its checksum
 * (bytes: the plain bytes lost, base: the segment; rule
 * TLOG_RULE_CORRUPT). */
enum tlog_event_kind { TLOG_EV_SEAL, TLOG_EV_DELETE, TLOG_EV_PART_DELETE,
	TLOG_EV_CORRUPT };

/* What a hook learns of a seal or a deletion. Strings are valid for the
 * duration of the call only. */
struct tlog_event {
	enum tlog_event_kind kind;
	int64_t ts;			/* when it happened */
	const char *topic;
	const char *partition;
	uint64_t partition_ino;
	uint64_t topic_ino;
	uint64_t segment_ino;
	uint64_t base;			/* the segment's base offset */
	uint64_t records;
	uint64_t bytes;
	int64_t first_ts;
	int64_t max_ts;
	enum tlog_trigger trigger;	/* TLOG_EV_SEAL */
	enum tlog_rule rule;		/* TLOG_EV_DELETE */
};

struct tlog_store_opts {
	/* Wall clock in ms; NULL for CLOCK_REALTIME. */
	int64_t (*clock)(void *arg);
	/* Elapsed time in ms (any origin, never steps); NULL for
	 * CLOCK_BOOTTIME, or, if clock is set, the same as clock. Both get
	 * clock_arg. Engine time (tlog_now) is made of the two. */
	int64_t (*boot_clock)(void *arg);
	void *clock_arg;
	/* Log sink (syslog priorities); NULL for stderr. */
	void (*log)(void *arg, int prio, const char *msg);
	void *log_arg;
	/*
	 * Called after a seal and after each deletion's unlink succeeded,
	 * with no engine lock held. May be NULL.
	 */
	void (*event)(void *arg, const struct tlog_event *ev);
	void *event_arg;
	/* Records a segment may hold; 0 for the index format's limit.
	 * Tests lower it to exercise the capacity trigger (the byte
	 * capacity is the format's, TLOG_CAP_BYTES). */
	uint64_t cap_records;
	/* Bytes of unfinished lines all writers may hold at once; 0 for
	 * TLOG_HELD_MAX. Past it a writer holding more than
	 * TLOG_HELD_SMALL has its line cut (appended as a record without
	 * newline) as at record.max.bytes. */
	uint64_t held_max;
	/* Segments that may keep their files open at once; 0 for a quarter
	 * of RLIMIT_NOFILE. Past it the least recently opened idle ones are
	 * closed (and reopened when written again). */
	size_t max_open_segments;
	/* Descriptors the process needs besides the store's own and its
	 * readers' (the FUSE front end: one per worker thread with
	 * clone_fd): readers are never given them. */
	size_t fd_reserve;
	/* Threads outside the store that may call into it at once (the
	 * front end's workers and its own threads); 0: one. Each may hold
	 * a few descriptors for a moment while it does disk work, which
	 * readers are never given either (doc/design.md). */
	size_t workers;
	/*
	 * Test hook: called at the points named by enum tlog_hook, so a unit
	 * test can force an interleaving (it may call the engine from the
	 * hook, as another thread would). NULL in production.
	 */
	void (*hook)(void *arg, int point, struct tlog_partition *p);
	void *hook_arg;
	/*
	 * Free space of the store's file system (retention.keep.free):
	 * bytes an unprivileged writer may still use, and the size; 0 or
	 * -errno. NULL: statvfs on the store (f_bavail, f_blocks times
	 * f_frsize). Tests inject a fake disk.
	 */
	int (*free_space)(void *arg, uint64_t *avail, uint64_t *size);
	void *free_space_arg;
	/*
	 * The machine's boot id: an open after a crash within the same
	 * boot trusts the page cache, one after another boot does not.
	 * NULL: the kernel's (/proc/sys/kernel/random/boot_id). Tests name
	 * one to make a restart look like a reboot.
	 */
	const char *boot_id;
	/*
	 * Read-only (the mount's -o ro): nothing in the store changes.
	 * The store is locked shared (read-only opens coexist, a writer
	 * is kept out and keeps them out), the lock's pid, the clean
	 * mark, the boot id and the layout are left as found, and
	 * recovery repairs in memory only (a torn tail is not served, a
	 * rebuilt index is kept in memory). Every changing call returns
	 * -EROFS; the reaper does nothing (doc/engine.md).
	 */
	bool readonly;
	/*
	 * The most bytes of decoded frames (and seek tables) of compressed
	 * segments kept for readers, store-wide; 0: 16 MiB
	 * (doc/design.md, "Compressed history").
	 */
	uint64_t frame_cache;
};

/* Points at which tlog_store_opts.hook is called. */
enum tlog_hook {
	/* The append path, partition lock held, just before a new
	 * segment's files are created. */
	TLOG_HOOK_NEW_SEGMENT = 1,
	/* A detached segment was taken off the unlink queue; its files
	 * are not unlinked yet. No lock held. */
	TLOG_HOOK_UNLINK,
	/* Partition removal is about to wait for unlinks in flight. */
	TLOG_HOOK_RMDIR_WAIT,
	/* the reaper computed a due time and is about to put it in the
	 * heap; the partition lock is held. */
	TLOG_HOOK_RESCHED,
	/* partition.cleanup.ms: the partition was found eligible and is
	 * about to be checked again under the locks and removed. No lock
	 * held. */
	TLOG_HOOK_CLEANUP,
	/* The append path, partition lock held, just before a run of
	 * records is written to the active segment. */
	TLOG_HOOK_WRITE,
	/* Compression (compress.c): the .log.zst.tmp is written and
	 * synced, about to be renamed; then, the .log.zst published and
	 * its directory synced, the .log about to be unlinked. No lock
	 * held. */
	TLOG_HOOK_COMPRESS,
	TLOG_HOOK_COMPRESS_DONE,
	/* An append's check of the free-space budget, its limit read, its
	 * counts not yet. No lock held. */
	TLOG_HOOK_FREE_SHORT,
	/* The open-file budget: an eviction took its victims' descriptors
	 * (still counted) and is about to sync and close them; the thread
	 * may hold the lock of the partition it opens files for. p is
	 * NULL. */
	TLOG_HOOK_EVICT,
	/* Compression: a job found its segment alive and is about to open
	 * its files. No lock held. */
	TLOG_HOOK_COMPRESS_START,
};

/*
 * Opens STORE at path, creating its layout (STORE/.tlogfs) if missing.
 * Takes an exclusive lock: a second open fails with -EBUSY and a message
 * naming the holder's pid in err. Recovers every partition (doc/design.md §8).
 * With opts->readonly the layout must exist (-ENOENT otherwise), the
 * lock is shared (any number of read-only opens; -EBUSY beside a
 * writer) and nothing is written.
 */
int tlog_store_open(const char *path, const struct tlog_store_opts *opts,
    struct tlog_store **out, char *err, size_t errlen);
/* Flushes nothing of writers (close them first); makes every partition
 * durable as fsync does, syncs the file system, then writes the
 * clean-shutdown mark (only if all of that worked); unlocks; frees.
 * 0 if the mark was written (or nothing was to be: read-only, NULL),
 * -1 if not (said in a log line). */
int tlog_store_close(struct tlog_store *s);
/* After fork (daemonizing), records the new holder's pid in the lock;
 * nothing when read-only. */
void tlog_store_update_pid(struct tlog_store *s);
/*
 * The store's identity: 128 random bits in hex, made when the store is
 * created (or at the first read-write open of a store without one) and
 * kept in .tlogfs/id, so that copies of a log elsewhere can tell this
 * store's records from another's. "" for a read-only open of a store
 * that has none.
 */
#define TLOG_STORE_ID_LEN 32
const char *tlog_store_id(const struct tlog_store *s);
/*
 * Engine time in ms since the epoch: record stamps and every time rule.
 * The wall clock at open (or the newest stored timestamp, if later), then
 * advancing with real elapsed time: a forward step of the wall clock is
 * not followed, and while the wall clock is behind by more than 1 s engine
 * time runs at half speed until it catches up (doc/engine.md).
 */
int64_t tlog_now(struct tlog_store *s);
void tlog_log(struct tlog_store *s, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const struct tlog_conf *tlog_store_conf(struct tlog_store *s);

/* Inode numbers: unique per object for the store's lifetime, never reused.
 * The store root is 1. */
#define TLOG_ROOT_INO 1

/* ---- directory listings ---- */

struct tlog_dirent {
	char name[TLOG_NAME_MAX + 1];
	uint64_t ino;
};
/* Fills a malloc'd array (caller frees) sorted by name. */
int tlog_topic_list(struct tlog_store *s, struct tlog_dirent **out, size_t *n);
int tlog_partition_list(struct tlog_topic *t, struct tlog_dirent **out,
    size_t *n);

/* ---- topics ---- */

int tlog_topic_create(struct tlog_store *s, const char *name,
    struct tlog_topic **out /* may be NULL; else a reference */);
struct tlog_topic *tlog_topic_get(struct tlog_store *s, const char *name);
void tlog_topic_put(struct tlog_topic *t);
/* -ENOENT, -ENOTEMPTY unless it has no partitions. */
int tlog_topic_remove(struct tlog_store *s, const char *name);
/* Atomic. An existing empty target is replaced; a non-empty one gives
 * -ENOTEMPTY. */
int tlog_topic_rename(struct tlog_store *s, const char *from, const char *to);
uint64_t tlog_topic_ino(const struct tlog_topic *t);
const struct tlog_conf *tlog_topic_conf(struct tlog_topic *t);

/* ---- partitions ---- */

int tlog_partition_create(struct tlog_topic *t, const char *name,
    struct tlog_partition **out /* may be NULL */);
struct tlog_partition *tlog_partition_get(struct tlog_topic *t,
    const char *name);
void tlog_partition_put(struct tlog_partition *p);
/* -ENOTEMPTY unless it holds no segment. */
int tlog_partition_remove(struct tlog_topic *t, const char *name);
int tlog_partition_rename(struct tlog_topic *t, const char *from,
    const char *to);
uint64_t tlog_partition_ino(const struct tlog_partition *p);
/* True once the partition is removed (rmdir, partition.cleanup.ms) or
 * renamed over; a reference keeps it valid but dead. */
bool tlog_partition_removed(const struct tlog_partition *p);
const struct tlog_conf *tlog_partition_conf(struct tlog_partition *p);
/* The partition's topic (borrowed; valid while p is referenced). */
struct tlog_topic *tlog_partition_topic(struct tlog_partition *p);


struct tlog_part_stats {
	uint64_t start_offset;	/* base of the oldest segment (end if none) */
	uint64_t end_offset;	/* offset the next record gets */
	uint64_t bytes;
	uint64_t disk_bytes;	/* bytes on disk: compressed segments count
				   their .log.zst */
	uint64_t segments;
	int64_t oldest_ts;	/* oldest segment's first_ts; -1 if empty */
	int64_t newest_ts;	/* newest record's ts; -1 if empty */
	int64_t next_expiry;	/* when the oldest segment goes: its max_ts
				   + retention.ms + 1 (deletion is strictly
				   after the window); -1 if empty or
				   retention.ms = -1 */
};
void tlog_partition_stats(struct tlog_partition *p, struct tlog_part_stats *st);

/* ---- configuration through levels (store, topic or partition) ---- */

/*
 * A level is exactly one of: the store (t = p = NULL), a topic (t), or a
 * partition (p). Set parses, validates, persists atomically, then applies;
 * on any failure nothing changes. Get returns the level's effective value
 * (its own, else inherited). Unset drops the level's override (-ENODATA if
 * it had none). Unknown keys: -ENOTSUP.
 */
int tlog_conf_set(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *key, const char *value, size_t len,
    char *err, size_t errlen);
int tlog_conf_get(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *key, int64_t *out);
int tlog_conf_unset(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *key);
/*
 * A bad value for an attribute that is not a key (user.seal): the one
 * log line a bad setting gives, "LEVEL: NAME: bad value "VALUE":
 * accepted ACCEPTED". Returns -EINVAL.
 */
int tlog_conf_refuse(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, const char *name, const char *value,
    size_t len, const char *accepted);

/*
 * The backing directory of a level (store root, topic or partition): its
 * owner and mode are the level's, so chmod and chown persist.
 */
int tlog_level_stat(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, struct stat *st);
int tlog_level_chmod(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, mode_t mode);
int tlog_level_chown(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, uid_t uid, gid_t gid);
/* fsync(2) of the level's backing directory (fsyncdir). */
int tlog_level_fsync(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p);
/* statvfs of the backing store. */
int tlog_store_statvfs(struct tlog_store *s, struct statvfs *sv);

/* ---- segments ---- */

struct tlog_seginfo {
	uint64_t ino;
	uint64_t base;
	uint64_t records;
	uint64_t bytes;
	uint64_t alloc;		/* bytes, or the preallocated length if more:
				   what the data file takes on disk */
	uint64_t zbytes;	/* its .log.zst's size once compressed, else
				   0 (then alloc is what the disk holds) */
	int64_t first_ts;	/* -1 while empty */
	int64_t max_ts;		/* -1 while empty */
	bool sealed;
	enum tlog_trigger sealed_by;
	int64_t expires_at;	/* max_ts + retention.ms + 1: the first ms at
				   which it goes; -1 if never/empty */
};

/* A snapshot of the live segments, oldest first (the last one may be the
 * active segment). Caller frees. */
int tlog_partition_segments(struct tlog_partition *p,
    struct tlog_seginfo **out, size_t *n);
/* Live segment by base offset / the active segment; NULL if none. */
struct tlog_segment *tlog_segment_get(struct tlog_partition *p, uint64_t base);
struct tlog_segment *tlog_segment_get_active(struct tlog_partition *p);
void tlog_segment_put(struct tlog_segment *seg);
void tlog_segment_info(struct tlog_segment *seg, struct tlog_seginfo *info);
/* True once the segment has been deleted (detached from its partition). */
bool tlog_segment_dead(struct tlog_segment *seg);
/* Opens the segment's data file read-only: a new descriptor that keeps
 * reading the data even after the segment is deleted; close it with
 * tlog_segment_close. Readers may hold what RLIMIT_NOFILE leaves after
 * the segments' own share, so appends always find descriptors; past
 * that, or when the table is full even after idle segments gave theirs
 * back, -ENFILE (logged once a minute). */
int tlog_segment_open(struct tlog_segment *seg);
void tlog_segment_close(struct tlog_segment *seg, int fd);
/* Reads up to len bytes at pos, never past the last whole record. */
ssize_t tlog_segment_read(struct tlog_segment *seg, int fd, void *buf,
    size_t len, off_t pos);

/*
 * Where a reader starts (the mount's user.tlog.at.N and user.tlog.since.MS,
 * doc/seek.md). tlog_partition_seek finds the first live record with
 * offset >= the one asked for: the record itself, or, if it expired or was
 * deleted, the first record of the next live segment (then out->offset is
 * larger than asked). tlog_partition_seek_time finds the first record that
 * can have ts >= t, from the sparse index: it may start up to one index
 * interval (about 4 KiB) early. Neither scans a segment from its start.
 * With no such record yet, both answer the end: offset = end_offset, in
 * the active segment at its size, or with no active segment base =
 * end_offset and pos 0. seek beyond end_offset: -ENODATA.
 */
struct tlog_pos {
	uint64_t offset;	/* the record found */
	uint64_t base;		/* the segment holding it */
	uint64_t pos;		/* its byte position in that segment */
};
int tlog_partition_seek(struct tlog_partition *p, uint64_t offset,
    struct tlog_pos *out);
int tlog_partition_seek_time(struct tlog_partition *p, int64_t t,
    struct tlog_pos *out);

/* ---- cursors (cursor.c, doc/tlogfs.8 EXTENDED ATTRIBUTES) ---- */

/*
 * A cursor is a consumer's durable position in a partition: the offset of
 * the next record it wants. Names are 1-64 bytes of [A-Za-z0-9._-].
 * Set takes the offset as decimal text (0 <= offset <= end_offset) and
 * returns once it is on disk (the partition's .cursors file, replaced
 * atomically); a bad name or offset is -EINVAL with one log line. Get
 * and remove answer -ENODATA for a cursor that is not there. List fills
 * a malloc'd array sorted by name (caller frees). Lag is end_offset -
 * max(cursor, start_offset).
 */
#define TLOG_CURSOR_NAME_MAX 64
/* The most cursors a partition keeps: their names and lag attributes
 * must fit the kernel's 64 KiB listxattr answer (tlogfs(8)). */
#define TLOG_CURSORS_MAX 256
struct tlog_cursor {
	char name[TLOG_CURSOR_NAME_MAX + 1];
	uint64_t offset;
};
int tlog_partition_cursor_set(struct tlog_partition *p, const char *name,
    const char *value, size_t len);
int tlog_partition_cursor_get(struct tlog_partition *p, const char *name,
    uint64_t *offset);
int tlog_partition_cursor_remove(struct tlog_partition *p, const char *name);
int tlog_partition_cursor_list(struct tlog_partition *p,
    struct tlog_cursor **out, size_t *n);
int tlog_partition_cursor_lag(struct tlog_partition *p, const char *name,
    uint64_t *lag);

/*
 * A partition's identity (doc/format.md, the partition's .id): 32 hex
 * digits, made at the first request and kept in its directory, so that
 * it survives a mount and a rename, and a partition removed and made
 * again under the same name has another. tlogctl ship puts it in each
 * record's Nats-Msg-Id. buf holds TLOG_STORE_ID_LEN + 1 bytes at least.
 * -ENODATA on a read-only mount of a partition that has none yet.
 */
int tlog_partition_id(struct tlog_partition *p, char *buf, size_t len);

/* ---- appending ---- */

/*
 * One writer per open file. It frames lines and holds the bytes after the
 * last newline until that same writer completes them, flushes, or they
 * reach record.max.bytes. Returns len; or, if an error (-ENOSPC, -EFBIG,
 * -EIO) stops it after some whole records went in, the count of bytes
 * they took, like a short write(2), so a retry of the rest duplicates
 * nothing; or the negative errno if nothing went in. No partial record
 * ever stays on disk. A record that fails is refused and logged once:
 * held bytes it was made of are dropped (with the bytes of this write
 * that completed them), so the writer works again for the next record.
 */
struct tlog_writer *tlog_writer_open(struct tlog_partition *p);
ssize_t tlog_writer_write(struct tlog_writer *w, const void *buf, size_t len);
/* Appends the held bytes, if any, as a record without newline; on an
 * error they are dropped, so the error is returned only once. */
int tlog_writer_flush(struct tlog_writer *w);
/* Flush, then make data and index durable. */
int tlog_writer_fsync(struct tlog_writer *w, bool datasync);
/* Flush and free; returns the flush's result. Held bytes lost because
 * the partition is gone are logged, with the partition and their size. */
int tlog_writer_close(struct tlog_writer *w);

/*
 * fsync(2) of any file of the partition: returns once every record
 * appended to it before the call is durable (data, index, segments
 * sealed since, their directory entries), or with the first error,
 * including one met by the background flusher since the last fsync.
 */
int tlog_partition_fsync(struct tlog_partition *p, bool datasync);

/* Seals the active segment now (user.seal). 0 if there is none. */
int tlog_partition_seal(struct tlog_partition *p, enum tlog_trigger why);

/* ---- deletion ---- */

/*
 * Manual deletion (rm): detaches the segment with this base (sealing it
 * first if active) and queues its files for unlinking. -ENOENT if gone.
 */
int tlog_partition_delete(struct tlog_partition *p, uint64_t base);

/*
 * Detached segments wait in the store's unlink queue. This unlinks up to
 * max of them (max <= 0: all) with no engine lock held, emits their
 * deletion events, and returns how many it unlinked.
 */
int tlog_store_unlink_pending(struct tlog_store *s, int max);
/*
 * Sealed segments wait for the flusher: it syncs up to max (max <= 0:
 * all) of them, oldest first, each data then index, and only then
 * writes their footers and closes their files. Returns how many. Errors
 * are logged and kept for the partition's next fsync.
 */
int tlog_store_flush_pending(struct tlog_store *s, int max);
/* Blocks until the unlink, flush or compress queue is non-empty or
 * timeout_ms passes (-1 forever) or tlog_store_wakeup is called. Returns
 * the length of the three. */
size_t tlog_store_unlink_wait(struct tlog_store *s, int timeout_ms);
/* Up to max (<= 0: all) slices of the compression of sealed segments
 * (compression.type), each a few frames of one segment, no lock held;
 * the unlinker runs them after the unlinks and footers. Returns how
 * many were done. */
int tlog_store_compress_pending(struct tlog_store *s, int max);
void tlog_store_wakeup(struct tlog_store *s);
/*
 * The periodic checkpoint (doc/format.md, "The checkpoint"), so that an
 * open after a crash reads only the partitions changed since.
 * tlog_store_checkpoint writes one now: 0 or -errno. The store's
 * background thread calls tlog_store_checkpoint_tick, which writes one
 * when due (at once after the open, then TLOG_CKPT_EVERY_MS after the
 * last once a segment was flushed, compressed or deleted since, or
 * sooner after
 * TLOG_CKPT_EVERY_CHANGES of them, but never within TLOG_CKPT_MIN_MS of
 * the last), and returns the ms until it should be called again at the
 * latest (-1: never; a read-only store writes none).
 */
#define TLOG_CKPT_EVERY_MS 60000
#define TLOG_CKPT_EVERY_CHANGES 10000
#define TLOG_CKPT_MIN_MS 5000
int tlog_store_checkpoint(struct tlog_store *s);
int tlog_store_checkpoint_tick(struct tlog_store *s);

/* ---- the reaper (reaper.c) ---- */

/*
 * The reaper is not started by the store: whoever opens it attaches one
 * (and schedules every partition then) and, in a daemon, starts its
 * thread, which sleeps until the earliest due time and runs wake-ups,
 * logging one line per wake-up that expired something. A read-only
 * store gets none. A reaper still attached when the store closes is
 * detached by the close.
 */
int tlog_reaper_attach(struct tlog_store *s);
/* Attaches (if not yet) and starts the thread. */
int tlog_reaper_start(struct tlog_store *s);
void tlog_reaper_stop(struct tlog_store *s);

/* ---- observability (store.c, metrics.c) ---- */

/* The internal partition .tlogfs/events: a new reference (put it). */
struct tlog_partition *tlog_store_events(struct tlog_store *s);
/* Prometheus text exposition of the store's counters; caller frees. */
int tlog_metrics_format(struct tlog_store *s, char **out, size_t *len);

/* ---- small utilities shared by the engine and its users ---- */

uint32_t tlog_crc32c(uint32_t crc, const void *buf, size_t len);
/* The largest offset a partition may reach (2^62): a segment's base, a
 * saved end offset or a cursor past it is not one (a planted value could
 * otherwise make the offsets wrap). 146 years at 10^9 records a second. */
#define TLOG_OFFSET_MAX ((uint64_t)1 << 62)
/* The default of tlog_store_opts.held_max: 64 MiB; and the unfinished
 * line an open file may hold whatever all hold (writer.c). */
#define TLOG_HELD_MAX ((uint64_t)64 << 20)
#define TLOG_HELD_SMALL 4096
/* Segment file names: "<base, 20 digits><ext>" (ext ".log" or ".idx")
 * -> base, at most TLOG_OFFSET_MAX; false for any other name. */
bool tlog_segname_parse(const char *name, const char *ext, uint64_t *base);
/* Whether a path (the store's, the mountpoint's, as given) may be
 * trusted: false, with the reason in err, if a symbolic link met on the
 * way, the links inside a link's target included, is owned by neither
 * root nor the daemon's user (whoever owns it could point it
 * anywhere). */
bool tlog_path_trusted(const char *path, char *err, size_t errlen);

#endif /* TLOG_H */
