/*
 * dir.c - directory listings (doc/design.md §1): the root lists
 * .tlogfs/ and the topics, a topic its partitions, a partition its
 * sealed segments as "<base, 20 digits>.log" and exactly one `current`
 * (the active segment, which has no numeric name while it is active;
 * see mount.h for its inode numbers).
 *
 * opendir builds the whole listing and readdir pages through it, so
 * that offsets stay valid while segments roll and expire; a rewind
 * (offset 0 after the first read) builds it again.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mount.h"

struct tl_dent {
	char name[TLOG_NAME_MAX + 1];
	uint64_t ino;
	mode_t type;
};

struct tl_dir {
	struct tl_dent *e;
	size_t n;
	bool fresh;	/* built and not read yet */
};

static void
dir_free(struct tl_dir *d)
{
	free(d->e);
	free(d);
}

static int
dir_push(struct tl_dir *d, size_t *cap, const char *name, uint64_t ino,
    mode_t type)
{
	struct tl_dent *ne;

	if (d->n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		if ((ne = reallocarray(d->e, *cap, sizeof(*ne))) == NULL)
			return -ENOMEM;
		d->e = ne;
	}
	strlcpy(d->e[d->n].name, name, sizeof(d->e[d->n].name));
	d->e[d->n].ino = ino;
	d->e[d->n].type = type;
	d->n++;
	return 0;
}

/* A partition's listing: its sealed segments in offset order, then
 * `current`, always last: tlogctl status reads a listing up to
 * `current` and no further (cli/status.c, read_disk). */
static int
dir_parts(struct tl_dir *d, size_t *cap, struct tl_node *n)
{
	struct tlog_seginfo *si;
	uint64_t cur = n->ino | TL_EMPTY_BIT;
	char name[32];
	size_t i, ns;
	int r;

	if ((r = tlog_partition_segments(n->part, &si, &ns)) != 0)
		return r;
	for (i = 0; i < ns && r == 0; i++) {
		if (!si[i].sealed) {
			cur = si[i].ino;
			continue;
		}
		snprintf(name, sizeof(name), "%020" PRIu64 ".log", si[i].base);
		r = dir_push(d, cap, name, si[i].ino | TL_SEALED_BIT, S_IFREG);
	}
	free(si);
	return r != 0 ? r : dir_push(d, cap, "current", cur, S_IFREG);
}

static int
dir_build(struct tl_fs *fs, struct tl_node *n, struct tl_dir *d)
{
	struct tlog_dirent *de = NULL;
	size_t cap = 0, nde = 0, i;
	uint64_t up = TLOG_ROOT_INO;
	int r;

	free(d->e);
	d->e = NULL;
	d->n = 0;
	if (n->kind == TL_PART)
		up = tl_is_events(fs, n) ? TL_META_INO :
		    tlog_topic_ino(tlog_partition_topic(n->part));
	if ((r = dir_push(d, &cap, ".", n->ino, S_IFDIR)) != 0 ||
	    (r = dir_push(d, &cap, "..", up, S_IFDIR)) != 0)
		return r;
	switch (n->kind) {
	case TL_ROOT:
		if ((r = dir_push(d, &cap, ".tlogfs", TL_META_INO,
		    S_IFDIR)) != 0)
			return r;
		r = tlog_topic_list(fs->store, &de, &nde);
		break;
	case TL_META:
		if ((r = dir_push(d, &cap, "events",
		    tlog_partition_ino(fs->events), S_IFDIR)) != 0)
			return r;
		return dir_push(d, &cap, "metrics", TL_METRICS_INO, S_IFREG);
	case TL_TOPIC:
		r = tlog_partition_list(n->topic, &de, &nde);
		break;
	case TL_PART:
		return dir_parts(d, &cap, n);
	default:
		return -ENOTDIR;
	}
	for (i = 0; i < nde && r == 0; i++)
		r = dir_push(d, &cap, de[i].name, de[i].ino, S_IFDIR);
	free(de);
	return r;
}

void
tl_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tl_node *n;
	struct tl_dir *d;
	int r;

	if ((n = tl_node_get(req, ino)) == NULL)
		return;
	if ((d = calloc(1, sizeof(*d))) == NULL) {
		r = -ENOMEM;
		goto out_err;
	}
	if ((r = dir_build(tl_fs_of(req), n, d)) != 0)
		goto out_free;
	d->fresh = true;
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0)
		dir_free(d);
	return;
out_free:
	dir_free(d);
out_err:
	fuse_reply_err(req, -r);
}

void
tl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct tl_dir *d = (struct tl_dir *)(uintptr_t)fi->fh;
	struct tl_node *n = tl_node_find(tl_fs_of(req), ino);
	struct stat st;
	size_t pos = 0, len, i;
	char *buf;
	int r;

	/* A rewind sees the directory as it is now. */
	if (off == 0 && !d->fresh && n != NULL &&
	    (r = dir_build(tl_fs_of(req), n, d)) != 0)
		goto out_err;
	d->fresh = false;
	if ((buf = malloc(size)) == NULL) {
		r = -ENOMEM;
		goto out_err;
	}
	memset(&st, 0, sizeof(st));
	for (i = off < 0 ? 0 : (size_t)off; i < d->n; i++) {
		st.st_ino = d->e[i].ino;
		st.st_mode = d->e[i].type;
		len = fuse_add_direntry(req, buf + pos, size - pos,
		    d->e[i].name, &st, (off_t)(i + 1));
		if (len > size - pos)
			break;
		pos += len;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
	return;
out_err:
	fuse_reply_err(req, -r);
}

void
tl_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	dir_free((struct tl_dir *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* Makes the backing directory's entries durable: segments created or
 * deleted, topics and partitions made, renamed or removed. */
void
tl_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi)
{
	struct tl_node *n;
	int r = 0;

	(void)datasync; (void)fi;
	if ((n = tl_node_get(req, ino)) == NULL)
		return;
	if (n->kind == TL_ROOT || n->kind == TL_TOPIC ||
	    n->kind == TL_PART)
		r = tlog_level_fsync(tl_fs_of(req)->store,
		    n->kind == TL_TOPIC ? n->topic : NULL,
		    n->kind == TL_PART ? n->part : NULL);
	fuse_reply_err(req, -r);
}
