/*
 * store.h - an open store: its directory and lock, the levels' tree with
 * the store's own level, the registry of topics and partitions, the
 * background work queues, the events partition, and the hooks through
 * which the log layer reaches it (struct tlog_part_env, filled in here).
 * Its files: doc/format.md, "Store layout"; the locks and their order:
 * doc/engine.md, "Threads and locks".
 */
#ifndef TLOG_STORE_H
#define TLOG_STORE_H

#include <pthread.h>
#include <stdbool.h>

#include "cleanup.h"
#include "ctx.h"
#include "events.h"
#include "level.h"
#include "partition.h"
#include "queue.h"
#include "recover.h"
#include "registry.h"
#include "segment.h"

/* What .tlogfs/format says (doc/format.md). */
#define TLOG_FORMAT_VERSION 1
/* The format of a store that holds compressed segments, which a tlogfs
 * from before compression must refuse rather than drop from view; a
 * store becomes it before its first segment is compressed. */
#define TLOG_FORMAT_ZSTD 2

struct tlog_store {
	char *path;
	struct tlog_tree tree;		/* the tree lock; the directory */
	struct tlog_level root;		/* the store's level: its settings */
	int lockfd;
	struct tlog_ctx ctx;		/* options, clock, log, metrics */
	struct tlog_recovery rc;	/* was the last close clean, verify */
	/* The store's rare changes, one at a time: settings' writers,
	 * the mount root's attributes, retention.keep.free's passes
	 * (free.c); held across their disk work. Its place in the lock
	 * order: doc/engine.md, "Threads and locks". */
	pthread_mutex_t admin_lock;
	struct tlog_fdbudget fdb;	/* the open-file budget */
	struct tlog_queue q;		/* unlinks and flushes */
	struct tlog_part_env penv;	/* every partition's hooks */
	struct tlog_registry reg;	/* topics and partitions */
	struct tlog_events ev;		/* .tlogfs/events */
	char id[TLOG_STORE_ID_LEN + 1];	/* .tlogfs/id, "" if none */
	/* The mount root's mode (permission bits) and owner, as chmod and
	 * chown through the mount set them: kept in .tlogfs/attr, never on
	 * the store's directory, which stays the daemon's alone (0700;
	 * doc/format.md, "A private store"). Written under admin_lock,
	 * read atomically; the owner is one value (tlog_owner), so a stat
	 * never sees half of a chown. */
	mode_t root_mode;
	uint64_t root_owner;
	bool created;			/* this open made the store */
	/* .tlogfs/format's number; raised to TLOG_FORMAT_ZSTD by the
	 * background thread alone (tlog_store_compress_pending). */
	int format;
	/* The periodic checkpoint, the background thread's alone
	 * (tlog_store_checkpoint_tick): when the last was written
	 * (monotonic ms; 0: none since the open) and ctx.ckpt_changes
	 * then. */
	int64_t ckpt_ms;
	uint64_t ckpt_seen;
	bool ckpt_failing;		/* the last one could not be written */
};

/* The mount root's mode and owner (mode, uid or gid -1: unchanged), written to
 * .tlogfs/attr (atomically, durably) before they apply. */
int tlog_store_root_attr(struct tlog_store *s, mode_t mode, uid_t uid,
    gid_t gid);

/* A scheduler (the reaper) attaches to the store (arg not NULL) or
 * detaches (NULL): while attached, every partition tells it of new
 * segments and changed settings through ops. */
void tlog_store_set_sched(struct tlog_store *s,
    const struct tlog_sched_ops *ops, void *arg);
void *tlog_store_sched(struct tlog_store *s);
/* A level's settings changed (t and p NULL: the store's): every
 * partition it governs has its due time computed again. */
void tlog_store_resched(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p);
/* retention.keep.free changed: free space is checked at once (the
 * scheduler's pressure call, if one is attached) and at the next
 * append. */
void tlog_store_free_changed(struct tlog_store *s);

#endif /* TLOG_STORE_H */
