/*
 * file.c - open files: segments, `current` and .tlogfs/metrics.
 *
 * Sealed segments are read-only and keep their page cache; `current`
 * and every write handle use direct I/O, so sizes are fresh and no page
 * is stale. Writes append to the partition through one engine writer
 * per open file, whatever the offset, and whichever segment the file
 * was opened on: a long-lived writer survives rolls. What may be opened
 * how is doc/design.md §6; held bytes of an unfinished line, §2.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "mount.h"

static void
handle_free(struct tl_fs *fs, struct tl_handle *h, bool unlist)
{
	if (unlist) {
		pthread_mutex_lock(&fs->hlock);
		LIST_REMOVE(h, link);
		pthread_mutex_unlock(&fs->hlock);
	}
	tl_poll_forget(fs, h);
	/* A held record lost at close is logged by the engine. */
	(void)tlog_writer_close(h->w);
	if (h->fd >= 0)
		tlog_segment_close(h->seg, h->fd);
	free(h->text);
	free(h);
}

/* Lists a new handle, so that a stop flushes it even if no RELEASE
 * comes, and replies with it. */
static void
reply_open(fuse_req_t req, struct fuse_file_info *fi, struct tl_handle *h)
{
	struct tl_fs *fs = tl_fs_of(req);

	fi->fh = (uintptr_t)h;
	pthread_mutex_lock(&fs->hlock);
	LIST_INSERT_HEAD(&fs->handles, h, link);
	pthread_mutex_unlock(&fs->hlock);
	if (fuse_reply_open(req, fi) != 0)
		handle_free(fs, h, true);
}

void
tl_close_handles(struct tl_fs *fs)
{
	struct tl_handle *h;

	pthread_mutex_lock(&fs->hlock);
	while ((h = LIST_FIRST(&fs->handles)) != NULL) {
		LIST_REMOVE(h, link);
		pthread_mutex_unlock(&fs->hlock);
		handle_free(fs, h, false);
		pthread_mutex_lock(&fs->hlock);
	}
	pthread_mutex_unlock(&fs->hlock);
}

/*
 * Write opens must append (O_APPEND, no O_TRUNC) and name `current`: the
 * active segment or the empty `current`. The node `current` resolved to
 * stays appendable after its segment seals (a writer that lost a race
 * with the roll appends to the partition); a sealed segment's own name
 * never is.
 */
static int
open_check_write(struct tl_node *n, int flags)
{
	if ((flags & O_TRUNC) || !(flags & O_APPEND))
		return -EPERM;
	if (n->kind == TL_SEG && (n->ino & TL_SEALED_BIT))
		return -EPERM;
	return 0;
}

/* A snapshot of the counters, taken at open, read like a file. */
static void
open_metrics(fuse_req_t req, struct fuse_file_info *fi)
{
	struct tl_fs *fs = tl_fs_of(req);
	struct tl_handle *h;
	int r;

	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		r = -EPERM;
		goto out_err;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL) {
		r = -ENOMEM;
		goto out_err;
	}
	h->fd = -1;
	if ((r = tl_metrics_format(fs, &h->text, &h->textlen)) != 0) {
		free(h);
		goto out_err;
	}
	fi->direct_io = 1;
	reply_open(req, fi, h);
	return;
out_err:
	fuse_reply_err(req, -r);
}

void
tl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tl_fs *fs = tl_fs_of(req);
	int acc = fi->flags & O_ACCMODE;
	struct tl_handle *h;
	struct tl_node *n;
	bool sealed;
	int r;

	if ((n = tl_node_get(req, ino)) == NULL)
		return;
	if ((acc != O_RDONLY || (fi->flags & O_TRUNC)) && tl_refuse_ro(req))
		return;
	/* Nothing here can be truncated, not even by a read-only open. */
	if (fi->flags & O_TRUNC) {
		r = -EPERM;
		goto out_err;
	}
	if (n->kind == TL_METRICS) {
		open_metrics(req, fi);
		return;
	}
	if (n->kind != TL_SEG && n->kind != TL_EMPTY) {
		r = -EISDIR;
		goto out_err;
	}
	if (acc != O_RDONLY && tl_is_events(fs, n)) {
		r = -EPERM;	/* the daemon's own log */
		goto out_err;
	}
	if (acc != O_RDONLY && (r = open_check_write(n, fi->flags)) != 0)
		goto out_err;
	if ((h = calloc(1, sizeof(*h))) == NULL) {
		r = -ENOMEM;
		goto out_err;
	}
	h->fd = -1;
	h->part = n->part;
	h->part_ino = tlog_partition_ino(n->part);
	/* Only a sealed name keeps its page cache (see mount.h). */
	sealed = n->kind == TL_SEG && (n->ino & TL_SEALED_BIT) &&
	    tl_seg_sealed(n->seg);
	if (acc != O_RDONLY && (h->w = tlog_writer_open(n->part)) == NULL) {
		r = -ENOMEM;
		goto out_free;
	}
	if (acc != O_WRONLY && n->kind == TL_SEG) {
		if ((r = tlog_segment_open(n->seg)) < 0)
			goto out_free;
		h->fd = r;
		h->seg = n->seg;
	}
	/* Sealed data never changes: keep its pages. Anything that can
	 * grow, and every writer, goes straight to the daemon, one request
	 * at a time per write(2) (no async direct I/O, see tl_init). */
	if (acc == O_RDONLY && sealed)
		fi->keep_cache = 1;
	else
		fi->direct_io = 1;
	reply_open(req, fi, h);
	return;
out_free:
	handle_free(fs, h, false);
out_err:
	fuse_reply_err(req, -r);
}

void
tl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	struct tl_handle *h = (struct tl_handle *)(uintptr_t)fi->fh;
	ssize_t n;
	char *buf;
	int r;

	(void)ino;
	if (h->text != NULL) {
		size_t len = 0;

		/* From a copy: a release of this handle may run on another
		 * thread while the reply is still being sent. */
		if (off >= 0 && (size_t)off < h->textlen)
			len = h->textlen - (size_t)off < size ?
			    h->textlen - (size_t)off : size;
		if ((buf = malloc(len ? len : 1)) == NULL) {
			r = -ENOMEM;
			goto out_err;
		}
		memcpy(buf, h->text + (len ? off : 0), len);
		fuse_reply_buf(req, buf, len);
		free(buf);
		return;
	}
	if (h->fd < 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if ((buf = malloc(size ? size : 1)) == NULL) {
		r = -ENOMEM;
		goto out_err;
	}
	if ((n = tlog_segment_read(h->seg, h->fd, buf, size, off)) < 0) {
		free(buf);
		r = (int)n;
		goto out_err;
	}
	/* Where a poll looks for data past the reader (poll.c). */
	__atomic_store_n(&h->pos, (uint64_t)off + (uint64_t)n,
	    __ATOMIC_RELAXED);
	fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
	return;
out_err:
	fuse_reply_err(req, -r);
}

void
tl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	struct tl_handle *h = (struct tl_handle *)(uintptr_t)fi->fh;
	/* Neither h nor req may be used after the reply. */
	uint64_t part_ino = h->part_ino;
	struct tl_fs *fs = tl_fs_of(req);
	ssize_t n;

	(void)ino; (void)off;	/* every write appends */
	if (h->w == NULL)
		n = -EBADF;
	else
		n = tlog_writer_write(h->w, buf, size);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
	/* After the reply: the writer does not wait for its readers. */
	if (n > 0)
		tl_poll_wake(fs, part_ino);
}

/*
 * Every close(2) of a descriptor sends FLUSH, also the close of a dup or
 * a forked child's exit while the open file lives on: held bytes of an
 * unfinished line belong to the open file, so they wait for its next
 * write, fsync or RELEASE (the last close), never for a FLUSH.
 */
void
tl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	fuse_reply_err(req, 0);
}

void
tl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi)
{
	struct tl_handle *h = (struct tl_handle *)(uintptr_t)fi->fh;
	struct tl_node *n;
	int r = 0;

	/* A writer's held bytes first; any descriptor of the partition
	 * makes the whole partition durable. */
	if (h->w != NULL)
		r = tlog_writer_fsync(h->w, datasync != 0);
	else if ((n = tl_node_find(tl_fs_of(req), ino)) != NULL &&
	    n->part != NULL &&
	    (n->kind == TL_SEG || n->kind == TL_EMPTY))
		r = tlog_partition_fsync(n->part, datasync != 0);
	fuse_reply_err(req, -r);
}

void
tl_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	handle_free(tl_fs_of(req), (struct tl_handle *)(uintptr_t)fi->fh, true);
	fuse_reply_err(req, 0);
}
