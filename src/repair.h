/*
 * repair.h - loading one segment of a partition at open and repairing
 * what a crash or corruption left (doc/format.md, "Recovery").
 */
#ifndef TLOG_REPAIR_H
#define TLOG_REPAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "partition.h"

struct tlog_ckpt;

/* What recovery needs to know of the open, and what it tells back. */
struct tlog_recovery {
	bool was_clean;		/* the last close wrote the clean mark */
	/* The last open was in another boot (or unknown) and did not close
	 * cleanly: a power cut may have lost unsynced pages, so data is
	 * checked against the index's data CRCs. */
	bool verify;
	bool repaired;		/* out: a file was changed (atomic) */
	/* This segment's files are left as they are, as on a read-only
	 * mount: both copies of a compressed segment kept for the
	 * operator (recover.c's zrecover). */
	bool keep;
	/* The last clean close's checkpoint (checkpoint.h), if it wrote
	 * one and was the last close; else NULL. */
	struct tlog_ckpt *ckpt;
};

/* What a repair did on disk, for its log line: nothing, read-only. */
static inline const char *
tlog_repair_fix(const struct tlog_ctx *ctx, const char *verb)
{
	return ctx->ro ? "left as it is (read-only)" : verb;
}

/* A sealed segment whose data is size plain bytes held elsewhere (a
 * compressed file): taken from its index's footer if that agrees, with
 * no data read; NULL otherwise. Not linked anywhere yet. */
struct tlog_segment *tlog_seg_recover_sealed(struct tlog_partition *p,
    int dfd, uint64_t base, uint64_t size);
/* Offsets up to end were handed out (files that said so are damaged or
 * gone): p's end offset is raised to end, and .next written unless it
 * already says as much (synced by the open's syncfs, before any append;
 * read-only: in memory). */
void tlog_part_keep_end(struct tlog_partition *p, int dfd, uint64_t end,
    const char *where, bool *dirty);
/*
 * Loads the segment based at base from the partition's directory dfd;
 * returns it (not yet linked) or NULL if it holds nothing worth keeping
 * (its files are then removed, unless read-only). has_idx: its .idx
 * exists; last: it is the newest. *dirty is set when it changed a file.
 */
struct tlog_segment *tlog_seg_recover(struct tlog_partition *p,
    const struct tlog_recovery *rc, int dfd, uint64_t base, bool has_idx,
    bool last, const char *where, bool *dirty);

#endif /* TLOG_REPAIR_H */
