/*
 * attr.c - what stat(2) shows of a node, and how long the kernel may
 * keep it.
 *
 * A directory shows its backing directory's attributes. A segment or
 * `current` takes its partition directory's owner and group, `current`
 * its r and w bits and a sealed segment its r bits (doc/design.md §6);
 * its mtime is its newest record's time, st_blocks counts what is
 * preallocated. .tlogfs/ and all below it take the mount root's owner
 * and group, read-only, nothing for others (§7).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mount.h"

#define DIR_TIMEOUT 1.0		/* names change only through the mount */
#define SEALED_TIMEOUT 60.0	/* a sealed segment's attributes never change */

static void
ms_to_ts(int64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)(ms % 1000) * 1000000L;
}

/* Attributes of a directory level: its backing directory's. */
static int
dir_attr(struct tl_fs *fs, enum tl_kind kind, uint64_t ino,
    struct tlog_topic *t, struct tlog_partition *p, struct stat *st)
{
	int r;

	if (kind == TL_TOPIC)
		r = tlog_level_stat(fs->store, t, NULL, st);
	else if (kind == TL_PART)
		r = tlog_level_stat(fs->store, NULL, p, st);
	else
		r = tlog_level_stat(fs->store, NULL, NULL, st);
	if (r != 0)
		return r;
	st->st_ino = ino;
	return 0;
}

/*
 * Attributes of a segment (seg != NULL) or an empty `current`: owner and
 * group of the partition directory; `current` gets its r and w bits, a
 * sealed segment its r bits; mtime is the newest record's time.
 */
static int
file_attr(struct tl_fs *fs, uint64_t ino, struct tlog_partition *p,
    struct tlog_segment *seg, int64_t empty_ms, struct stat *st,
    bool *sealed)
{
	struct tlog_seginfo info;
	struct stat dst;
	int r;

	if ((r = tlog_level_stat(fs->store, NULL, p, &dst)) != 0)
		return r;
	memset(st, 0, sizeof(*st));
	memset(&info, 0, sizeof(info));
	info.max_ts = -1;
	if (seg != NULL)
		tlog_segment_info(seg, &info);
	st->st_ino = ino;
	st->st_mode = S_IFREG | (dst.st_mode & (info.sealed ? 0444 : 0666));
	st->st_nlink = (seg != NULL && tlog_segment_dead(seg)) ? 0 : 1;
	st->st_uid = dst.st_uid;
	st->st_gid = dst.st_gid;
	st->st_size = (off_t)info.bytes;
	st->st_blksize = 4096;
	/* Preallocated space shows, so du sees what the segment takes;
	 * a compressed segment takes its .log.zst, while st_size stays the
	 * plain bytes a read returns. */
	st->st_blocks = (blkcnt_t)(((info.zbytes != 0 ? info.zbytes :
	    info.alloc) + 511) / 512);
	if (seg == NULL)
		info.max_ts = empty_ms;
	if (info.max_ts >= 0)
		ms_to_ts(info.max_ts, &st->st_mtim);
	else
		st->st_mtim = dst.st_mtim;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
	*sealed = info.sealed;
	return 0;
}

/*
 * .tlogfs/ names every topic (event lines, metric series), whoever may
 * read it: so it and everything below it take the mount root's owner
 * and group, read-only for them (r-x, r--) and nothing for others. An
 * operator shares it by a chgrp of the mount root (tlogfs(8)).
 */
static int
meta_perms(struct tl_fs *fs, struct stat *st)
{
	struct stat rst;
	int r;

	if ((r = tlog_level_stat(fs->store, NULL, NULL, &rst)) != 0)
		return r;
	st->st_uid = rst.st_uid;
	st->st_gid = rst.st_gid;
	st->st_mode = (st->st_mode & S_IFMT) |
	    (S_ISDIR(st->st_mode) ? 0550 : 0440);
	return 0;
}

/* .tlogfs/, and metrics: a file whose size is that of the text it
 * would give now. */
static int
meta_attr(struct tl_fs *fs, enum tl_kind kind, struct stat *st)
{
	struct timespec now;
	int64_t ms = tlog_now(fs->store);
	char *text;
	size_t len;
	int r;

	if ((r = tlog_level_stat(fs->store, NULL, NULL, st)) != 0)
		return r;
	now.tv_sec = (time_t)(ms / 1000);
	now.tv_nsec = (long)(ms % 1000) * 1000000L;
	st->st_atim = st->st_mtim = st->st_ctim = now;
	if (kind == TL_META) {
		st->st_ino = TL_META_INO;
		st->st_mode = S_IFDIR | 0550;
		st->st_nlink = 3;
		return 0;
	}
	if ((r = tl_metrics_format(fs, &text, &len)) != 0)
		return r;
	free(text);
	st->st_ino = TL_METRICS_INO;
	st->st_mode = S_IFREG | 0440;
	st->st_nlink = 1;
	st->st_size = (off_t)len;
	st->st_blocks = (blkcnt_t)((len + 511) / 512);
	return 0;
}

bool
tl_is_events(struct tl_fs *fs, const struct tl_node *n)
{
	return n->part != NULL && n->part == fs->events;
}

/* Attributes and cache timeout of a known node. */
int
tl_node_attr(struct tl_fs *fs, struct tl_node *n, struct stat *st,
    double *timeout)
{
	bool sealed = false;
	int r;

	switch (n->kind) {
	case TL_SEG:
	case TL_EMPTY:
		r = file_attr(fs, n->ino, n->part, n->seg,
		    __atomic_load_n(&n->empty_ms, __ATOMIC_RELAXED), st,
		    &sealed);
		/* Only a sealed name's attributes are cached: the node of a
		 * former `current` has writers growing its kernel size. */
		*timeout = sealed && (n->ino & TL_SEALED_BIT) ?
		    SEALED_TIMEOUT : 0.0;
		break;
	case TL_META:
	case TL_METRICS:
		*timeout = n->kind == TL_META ? DIR_TIMEOUT : 0.0;
		return meta_attr(fs, n->kind, st);
	default:
		*timeout = DIR_TIMEOUT;
		r = dir_attr(fs, n->kind, n->ino, n->topic, n->part, st);
		break;
	}
	/* .tlogfs/events and its files are .tlogfs/'s. */
	if (r == 0 && tl_is_events(fs, n))
		r = meta_perms(fs, st);
	return r;
}

bool
tl_seg_sealed(struct tlog_segment *seg)
{
	struct tlog_seginfo info;

	tlog_segment_info(seg, &info);
	return info.sealed;
}
