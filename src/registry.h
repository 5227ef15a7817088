/*
 * registry.h - the registry of a store's topics and partitions: trees by
 * name under the tree lock (level.h), create, remove and rename with their
 * directories, listings, and loading the tree from disk at open.
 *
 * The tree lock is taken for writing only here, and never with a
 * partition lock held: the append path takes it for reading under a
 * partition lock (doc/engine.md, "Threads and locks").
 */
#ifndef TLOG_REGISTRY_H
#define TLOG_REGISTRY_H

#include <sys/tree.h>

#include <stddef.h>

#include "partition.h"

RB_HEAD(tlog_part_tree, tlog_partition);

struct tlog_topic {
	struct tlog_level lv;		/* name, settings, inode, refs, dead */
	RB_ENTRY(tlog_topic) entry;
	struct tlog_registry *reg;
	struct tlog_part_tree parts;	/* tree lock */
};
RB_HEAD(tlog_topic_tree, tlog_topic);
RB_PROTOTYPE(tlog_topic_tree, tlog_topic, entry, topic_cmp)
RB_PROTOTYPE(tlog_part_tree, tlog_partition, entry, part_cmp)

struct tlog_registry {
	struct tlog_level *root;	/* the store's level, topics' parent */
	/* For new partitions; its queue: rmdir waits for its unlinks. */
	const struct tlog_part_env *penv;
	struct tlog_topic_tree topics;	/* tree lock */
};

void tlog_reg_init(struct tlog_registry *reg, struct tlog_level *root,
    const struct tlog_part_env *penv);
void tlog_reg_destroy(struct tlog_registry *reg);
/* Reads every topic and partition directory (not their segments: see
 * recover.h). A stray (a link, a file) is logged and left alone. */
int tlog_reg_load(struct tlog_registry *reg);
/* A referenced snapshot of every partition (put each, free v). */
int tlog_reg_partitions(struct tlog_registry *reg,
    struct tlog_partition ***v, size_t *n);
size_t tlog_reg_count(struct tlog_registry *reg);

/* The calls behind tlog_topic_create, _get, _remove, _rename and
 * tlog_topic_list (tlog.h), which the store makes on its registry. */
int tlog_reg_topic_create(struct tlog_registry *reg, const char *name,
    struct tlog_topic **out);
struct tlog_topic *tlog_reg_topic_get(struct tlog_registry *reg,
    const char *name);
int tlog_reg_topic_remove(struct tlog_registry *reg, const char *name);
int tlog_reg_topic_rename(struct tlog_registry *reg, const char *from,
    const char *to);
int tlog_reg_topic_list(struct tlog_registry *reg, struct tlog_dirent **out,
    size_t *n);

/* What rmdir does to a directory, which partition.cleanup.ms (cleanup.c)
 * does too: removes the empty level directory name in dirfd, or
 * -ENOTEMPTY if it holds more than bookkeeping files (a stray is logged,
 * named as shown, unless shown is NULL); syncs the directory fd that
 * held it, closing fd unless it is the root's. */
int tlog_reg_remove_dir(struct tlog_registry *reg, int dirfd,
    const char *name, const char *shown);
void tlog_reg_sync_parent(struct tlog_registry *reg, int fd,
    const char *what);

/* A topic not in the tree (the events partition's, ".tlogfs"). */
struct tlog_topic *tlog_topic_alloc(struct tlog_registry *reg,
    const char *name);

#endif /* TLOG_REGISTRY_H */
