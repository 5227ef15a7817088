/*
 * checkpoint.h - what a clean close knows of every segment, so that the
 * next open need read no index (doc/format.md, "The checkpoint").
 *
 * The store writes .tlogfs/checkpoint at a clean close, after every
 * partition is on disk and before the clean mark, both carrying the same
 * random nonce; a read-write open removes it with the mark. Such a
 * checkpoint is trusted only as the record of the close that wrote the
 * mark. While the store runs, it also writes periodic ones (flagged so,
 * with no mark), which name only segments whose files never change
 * again, so that an open after a crash reads only what changed since.
 * Recovery trusts a partition's part of either only when its directory
 * and listing agree (recover.c).
 */
#ifndef TLOG_CHECKPOINT_H
#define TLOG_CHECKPOINT_H

#include <sys/stat.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "partition.h"

#define TLOG_CKPT_PATH ".tlogfs/checkpoint"

/* A loaded checkpoint (read-only once loaded; shared by the recovery
 * threads). */
struct tlog_ckpt;

/* One partition's sealed segments, oldest first, as the file holds them
 * (decoded one at a time by tlog_ckpt_segment), and its active segment
 * if the close recorded it (tlog_ckpt_active). */
struct tlog_ckpt_part {
	const unsigned char *ent;
	size_t n;
	const unsigned char *act;	/* NULL: none recorded */
	const unsigned char *dir;	/* its directory's identity */
};

/* Whether st is the file (or directory) whose identity the checkpoint
 * holds at id: its inode number and its ctime, which nothing can set
 * back, so that a file replaced while the store was unmounted (a copy, a
 * restore, another file given the freed inode number) is never taken for
 * the one checkpointed. */
bool tlog_ckpt_same(const unsigned char *id, const struct stat *st);

/* Reads the checkpoint in the store directory storefd: a periodic one,
 * or after a clean close (was_clean) the one that close wrote with
 * *nonce in the clean mark (NULL: the mark holds none, so no checkpoint
 * is that close's). NULL if there is none, or if it is damaged or
 * another close's (logged once, but for a clean close's after a crash:
 * recovery then reads every footer, as without one). */
struct tlog_ckpt *tlog_ckpt_load(struct tlog_ctx *ctx, int storefd,
    bool was_clean, const uint64_t *nonce);
void tlog_ckpt_free(struct tlog_ckpt *c);
/* Whether c (NULL: none) is a periodic checkpoint. */
bool tlog_ckpt_periodic(const struct tlog_ckpt *c);
/* The part for the partition at path where (topic/partition); false if
 * the checkpoint has none. */
bool tlog_ckpt_find(const struct tlog_ckpt *c, const char *where,
    struct tlog_ckpt_part *out);
/* The base of entry i of cp. */
uint64_t tlog_ckpt_base(const struct tlog_ckpt_part *cp, size_t i);
/* A new sealed segment of p built from entry i of cp (not yet linked),
 * if its data file in dfd is the one checkpointed, of the size it says
 * (a compressed one: any a segment file can have); else NULL (or when
 * out of memory): recovery loads it from its files. */
struct tlog_segment *tlog_ckpt_segment(struct tlog_partition *p,
    const struct tlog_ckpt_part *cp, size_t i, int dfd);

/* The active segment of cp, not yet linked, with its append state, if
 * cp records one based at base, its data file and index in dfd are the
 * ones checkpointed, of the sizes it says, and no saved end
 * (p->saved_end) lies past it; else NULL (or when out of memory). */
struct tlog_segment *tlog_ckpt_active(struct tlog_partition *p,
    const struct tlog_ckpt_part *cp, uint64_t base, int dfd);

/* Writes the checkpoint of v[0..n) (and the events partition ev, if not
 * NULL) to storefd atomically and durably; 0 or -errno. Each
 * partition's lock is taken in turn. A clean close's (periodic false,
 * after every partition and a syncfs): their sealed segments, and each
 * active segment whose data ends at its last index entry (as a clean
 * close leaves it). A periodic one, while the store runs: only the
 * flushed sealed segments, then a syncfs before the file is written. */
int tlog_ckpt_write(int storefd, uint64_t nonce, bool periodic,
    struct tlog_partition **v, size_t n, struct tlog_partition *ev);

#endif /* TLOG_CHECKPOINT_H */
