/*
 * mount.h - state shared by the files of the tlogfs daemon, and what
 * each offers the others: the daemon (main.c), the inode table
 * (inode.c), the operations table and the operations on names (ops.c),
 * attributes (attr.c), listings (dir.c), open files (file.c), extended
 * attributes (xattr.c), kernel notifications and the unlinker thread
 * (notify.c), poll waiters (poll.c).
 *
 * The kernel's node ids are the engine's inode numbers: the root is
 * TLOG_ROOT_INO, every topic, partition and segment has its own, never
 * reused while the store is open. Two exceptions: a partition's
 * `current` while it has no active segment is the partition's id with
 * TL_EMPTY_BIT set; and a segment has two nodes, the one `current`
 * resolved to while the segment was active (its own id) and the one its
 * sealed name `NNN.log` resolves to (its id with TL_SEALED_BIT set). A
 * long-lived writer keeps the first open: the kernel grows that inode's
 * size with every append, wherever the append lands, so readers of the
 * sealed name must never share it.
 */
#ifndef TLOGFS_MOUNT_H
#define TLOGFS_MOUNT_H

/* configure detects the libfuse API version (configure.ac). */
#ifndef FUSE_USE_VERSION
#error "include config.h first: it defines FUSE_USE_VERSION"
#endif

#include <sys/queue.h>
#include <sys/stat.h>

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tlog.h"

#define TL_EMPTY_BIT (1ULL << 63)
#define TL_SEALED_BIT (1ULL << 61)
/* The hidden .tlogfs/ directory and its metrics file (doc/design.md
 * §7); the events partition inside it has its engine inode number. */
#define TL_META_INO ((1ULL << 62) | 1)
#define TL_METRICS_INO ((1ULL << 62) | 2)

enum tl_kind {
	TL_ROOT,
	TL_TOPIC,
	TL_PART,
	TL_SEG,		/* a segment, sealed or active */
	TL_EMPTY,	/* `current` of a partition with no active segment */
	TL_META,	/* .tlogfs/, read-only */
	TL_METRICS	/* .tlogfs/metrics, Prometheus text made at open */
};

/*
 * One inode the kernel knows. A node holds an engine reference to its
 * object while nlookup > 0; segment and empty-current nodes also pin
 * their partition's node (parent), which supplies the partition.
 */
struct tl_node {
	struct tl_node *next;		/* hash chain */
	uint64_t ino;
	enum tl_kind kind;
	uint64_t nlookup;		/* kernel lookups not yet forgotten */
	unsigned nchild;		/* nodes whose parent this is */
	struct tl_node *parent;		/* TL_SEG, TL_EMPTY: the partition */
	struct tlog_topic *topic;	/* TL_TOPIC */
	struct tlog_partition *part;	/* TL_PART; borrowed for the others */
	struct tlog_segment *seg;	/* TL_SEG */
	int64_t empty_ms;		/* TL_EMPTY: its mtime, set once */
};

/* An open file. Every handle is on the daemon's list, so that a stop
 * flushes writers even when the kernel never sends their release. */
struct tl_handle {
	LIST_ENTRY(tl_handle) link;
	struct tlog_writer *w;		/* NULL for a read-only handle */
	struct tlog_segment *seg;	/* what reads read; NULL: nothing */
	int fd;				/* seg's data file, -1 if none */
	char *text;			/* metrics snapshot, if not NULL */
	size_t textlen;
	/* poll.c: the partition (borrowed from the node, which outlives
	 * the handle; NULL for .tlogfs/metrics), the end of the last read
	 * (atomic), and, while it waits, the kernel's poll handle and the
	 * next waiter of its wait list (both fs->plock) */
	struct tlog_partition *part;
	uint64_t part_ino;
	uint64_t pos;
	struct fuse_pollhandle *ph;
	struct tl_handle *wnext;
};

/* A kernel notification waiting for the unlinker thread: an entry gone. */
struct tl_note {
	STAILQ_ENTRY(tl_note) link;
	uint64_t parent;
	uint64_t child;
	char name[TLOG_NAME_MAX + 1];	/* a segment's or a partition's */
};

struct tl_fs {
	struct tlog_store *store;
	int64_t start_ms;		/* engine time at start: the mtime of
					   a never-written empty `current` */
	struct tlog_partition *events;	/* .tlogfs/events (referenced) */
	struct fuse_session *se;
	bool debug;
	bool ro;			/* -o ro: every change is EROFS */

	pthread_mutex_t lock;		/* the inode table */
	struct tl_node **buckets;
	size_t nbuckets;
	size_t nnodes;
	struct tl_node root;

	pthread_mutex_t hlock;		/* open handles */
	LIST_HEAD(, tl_handle) handles;

	pthread_mutex_t plock;		/* poll wait lists (poll.c) */
	struct tl_handle **waits;
	uint64_t npolled;		/* handles waiting; atomic */
	bool poll_halted;		/* the loop has ended: no new waiter */
	pthread_rwlock_t nlive;		/* notices under way (read), halt */
	uint64_t poll_waits;		/* polls that owe a wake-up; atomic */
	uint64_t poll_wakeups;		/* wake-ups sent; atomic */

	pthread_mutex_t nlock;		/* notifications, stop flag */
	STAILQ_HEAD(, tl_note) notes;
	bool stop;
	bool unlinker_done;		/* its thread has returned */
	pthread_t unlinker;
	bool unlinker_started;
};

/* inode.c */
int tl_inodes_init(struct tl_fs *fs);
void tl_inodes_free(struct tl_fs *fs);
/* The node of a known ino, or NULL. */
struct tl_node *tl_node_find(struct tl_fs *fs, uint64_t ino);
/*
 * The node of ino for a request handler, or NULL once it has replied
 * ENOENT, so that a handler begins
 *	if ((n = tl_node_get(req, ino)) == NULL)
 *		return;
 */
struct tl_node *tl_node_get(fuse_req_t req, fuse_ino_t ino);
/*
 * Finds or inserts the node for ino and counts one kernel lookup. The
 * engine reference passed in (topic, part or seg, by kind) is consumed:
 * kept by a new node, dropped if the node existed. parent is the
 * partition node for TL_SEG and TL_EMPTY, else NULL.
 */
struct tl_node *tl_node_lookup(struct tl_fs *fs, uint64_t ino,
    enum tl_kind kind, struct tl_node *parent, struct tlog_topic *t,
    struct tlog_partition *p, struct tlog_segment *seg);
void tl_node_forget(struct tl_fs *fs, uint64_t ino, uint64_t nlookup);
/* Up to max inos of the nodes whose parent is pn; returns the count. */
size_t tl_node_children(struct tl_fs *fs, struct tl_node *pn, uint64_t *inos,
    size_t max);

static inline struct tl_fs *
tl_fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* ops.c: the operations table; names and attributes */
extern const struct fuse_lowlevel_ops tl_ops;
/* On a read-only mount (-o ro): replies EROFS and returns true. */
bool tl_refuse_ro(fuse_req_t req);

/* attr.c: what stat(2) shows */
/* .tlogfs/events or one of its files. */
bool tl_is_events(struct tl_fs *fs, const struct tl_node *n);
bool tl_seg_sealed(struct tlog_segment *seg);
/* Attributes and cache timeout of a known node. */
int tl_node_attr(struct tl_fs *fs, struct tl_node *n, struct stat *st,
    double *timeout);

/* dir.c: directory listings */
void tl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void tl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi);
void tl_releasedir(fuse_req_t req, fuse_ino_t ino,
    struct fuse_file_info *fi);
void tl_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi);

/* file.c: open files */
void tl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void tl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi);
void tl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi);
void tl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void tl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi);
void tl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* Flushes and closes every open handle (at stop). */
void tl_close_handles(struct tl_fs *fs);

/* poll.c: poll(2) on open files; waiters woken by their partition */
int tl_poll_init(struct tl_fs *fs);
void tl_poll_free(struct tl_fs *fs);
void tl_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
    struct fuse_pollhandle *ph);
/* Wakes every waiter on the partition: after an append, a seal or
 * deletion of one of its segments, its removal. Any thread. */
void tl_poll_wake(struct tl_fs *fs, uint64_t part_ino);
/* Takes a closing handle off its wait list. */
void tl_poll_forget(struct tl_fs *fs, struct tl_handle *h);
/* The request loop has ended: drops every waiter, no notice after it. */
void tl_poll_halt(struct tl_fs *fs);
/* .tlogfs/metrics: the store's counters and the wake-ups' (malloc'd). */
int tl_metrics_format(struct tl_fs *fs, char **text, size_t *len);

/* xattr.c: the extended-attribute protocol */
void tl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
    size_t size);
void tl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
    const char *value, size_t size, int flags);
void tl_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void tl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);

/* notify.c: kernel notifications and the unlinker thread */
void tl_notify_init(struct tl_fs *fs);
/* The unlinker thread: unlinks detached segments, writes the footers of
 * sealed ones, sends the queued notifications. start returns 0 or an
 * errno; stop joins it (if started); free drops what is still queued. */
int tl_notify_start(struct tl_fs *fs);
/* No notice is sent any more (the request loop has ended). */
void tl_notify_halt(struct tl_fs *fs);
/* The unlinker thread has returned, or never started. */
bool tl_notify_done(struct tl_fs *fs);
void tl_notify_stop(struct tl_fs *fs);
void tl_notify_free(struct tl_fs *fs);
/* The store's event hook: queues kernel notifications. */
void tl_event(void *arg, const struct tlog_event *ev);
/* Drop the kernel's cached attributes of a partition's files, of
 * .tlogfs/ and all below it. */
void tl_inval_children(struct tl_fs *fs, struct tl_node *pn);
void tl_inval_meta(struct tl_fs *fs);

#endif /* TLOGFS_MOUNT_H */
