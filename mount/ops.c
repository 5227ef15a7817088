/*
 * ops.c - the FUSE low-level operations table of tlogfs, and the
 * operations on names: lookup and forget, getattr and setattr, mkdir,
 * rmdir, rename, unlink, the refused ones (mknod, create, symlink,
 * link), statfs and the session's init. The others live by concern:
 * dir.c (listings), file.c (open files), xattr.c (extended attributes);
 * attr.c says what stat(2) shows, notify.c what the kernel is told,
 * inode.c which engine object a node id stands for.
 *
 * Handlers translate requests into engine calls (tlog.h). The rules are
 * the engine's, but for the few only a mount has: -o ro, which opens
 * may write, who may set segment.preallocate, what .tlogfs/ allows.
 *
 * The view (doc/design.md §1): the root lists .tlogfs/ and the topics, a
 * topic its partitions, a partition its sealed segments as "<base, 20
 * digits>.log" and exactly one `current`. `current` resolves to the
 * active segment's own inode (entry and attr timeout 0, so a roll shows
 * at once); the active segment is not reachable under its numeric name,
 * so a glob of the directory prints every record once. A partition with
 * no active segment has an empty `current` of its own (ino = partition
 * ino | TL_EMPTY_BIT).
 *
 * Limits (tlogfs(8), OPERATIONS and CAVEATS): no atime or mtime changes
 * (EPERM); no MAP_SHARED mmap of `current` (direct I/O: the kernel
 * answers ENODEV). The daemon implements no lock operation, so flock(2)
 * and fcntl(2) locks are kept by the kernel alone.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "mount.h"

/*
 * A read-only mount (-o ro) answers EROFS to every change. The kernel
 * refuses most of them itself on a read-only mount, but not after a
 * `mount -o remount,rw`, which the daemon never hears of; and the
 * engine refuses what reaches it, but not the daemon's own EPERMs.
 * True if it replied.
 */
bool
tl_refuse_ro(fuse_req_t req)
{
	if (!tl_fs_of(req)->ro)
		return false;
	fuse_reply_err(req, EROFS);
	return true;
}

/* Replies with an entry for a freshly looked-up node, counting the
 * lookup; on failure the count is given back. An entry for `current`
 * (uncached) is never cached, whatever the node's state when the reply
 * is made: it may have sealed since it was resolved. */
static void
reply_entry(fuse_req_t req, struct tl_node *n, bool uncached)
{
	struct tl_fs *fs = tl_fs_of(req);
	struct fuse_entry_param e;
	double timeout;
	int r;

	if (n == NULL) {
		r = -ENOMEM;
		goto out_err;
	}
	memset(&e, 0, sizeof(e));
	if ((r = tl_node_attr(fs, n, &e.attr, &timeout)) != 0) {
		tl_node_forget(fs, n->ino, 1);
		goto out_err;
	}
	if (uncached)
		timeout = 0.0;
	e.ino = n->ino;
	e.attr_timeout = timeout;
	/*
	 * A segment's name is never cached: the reaper or the size ceiling
	 * can delete it at any moment, and `ls` and `stat` must not show it
	 * after that, not even until the kernel's notification arrives. Its
	 * attributes are: a sealed segment's never change.
	 */
	e.entry_timeout = (n->kind == TL_SEG || n->kind == TL_EMPTY) ? 0.0 :
	    timeout;
	if (fuse_reply_entry(req, &e) != 0)
		tl_node_forget(fs, n->ino, 1);
	return;
out_err:
	fuse_reply_err(req, -r);
}

static void
reply_node(fuse_req_t req, struct tl_node *n)
{
	reply_entry(req, n, false);
}

static uint64_t
seg_ino(struct tlog_segment *seg)
{
	struct tlog_seginfo info;

	tlog_segment_info(seg, &info);
	return info.ino;
}

/* The node of `current`: the active segment, else the empty one. */
static struct tl_node *
lookup_current(struct tl_fs *fs, struct tl_node *pn)
{
	struct tlog_segment *seg = tlog_segment_get_active(pn->part);
	struct tl_node *n;

	struct tlog_part_stats ps;
	int64_t zero = 0;

	if (seg == NULL) {
		n = tl_node_lookup(fs, pn->ino | TL_EMPTY_BIT, TL_EMPTY, pn,
		    NULL, NULL, NULL);
		if (n == NULL)
			return NULL;
		/*
		 * The empty `current` shows the newest record's time (or the
		 * daemon's start), frozen when its node is made: a time that
		 * moved (the directory's does with every new file, the
		 * partition's newest with every append) would keep a
		 * follower from noticing that `current` is a new file.
		 */
		tlog_partition_stats(pn->part, &ps);
		__atomic_compare_exchange_n(&n->empty_ms, &zero,
		    ps.newest_ts >= 0 ? ps.newest_ts : fs->start_ms, false,
		    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		return n;
	}
	n = tl_node_lookup(fs, seg_ino(seg), TL_SEG, pn, NULL,
	    NULL, seg);
	return n;
}

static void
tl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tl_fs *fs = tl_fs_of(req);
	struct tl_node *pn;
	struct tlog_topic *t;
	struct tlog_partition *p;
	struct tlog_segment *seg;
	uint64_t base;
	int r = -ENOENT;	/* the answer of a break out of the switch */

	if ((pn = tl_node_get(req, parent)) == NULL)
		return;
	switch (pn->kind) {
	case TL_ROOT:
		if (strcmp(name, ".tlogfs") == 0) {
			reply_node(req, tl_node_lookup(fs, TL_META_INO, TL_META,
			    NULL, NULL, NULL, NULL));
			return;
		}
		if ((t = tlog_topic_get(fs->store, name)) == NULL)
			break;
		reply_node(req, tl_node_lookup(fs, tlog_topic_ino(t),
		    TL_TOPIC, NULL, t, NULL, NULL));
		return;
	case TL_TOPIC:
		if ((p = tlog_partition_get(pn->topic, name)) == NULL)
			break;
		reply_node(req, tl_node_lookup(fs, tlog_partition_ino(p),
		    TL_PART, NULL, NULL, p, NULL));
		return;
	case TL_META:
		if (strcmp(name, "metrics") == 0) {
			reply_node(req, tl_node_lookup(fs, TL_METRICS_INO,
			    TL_METRICS, NULL, NULL, NULL, NULL));
			return;
		}
		if (strcmp(name, "events") != 0 ||
		    (p = tlog_store_events(fs->store)) == NULL)
			break;
		reply_node(req, tl_node_lookup(fs, tlog_partition_ino(p),
		    TL_PART, NULL, NULL, p, NULL));
		return;
	case TL_PART:
		if (strcmp(name, "current") == 0) {
			reply_entry(req, lookup_current(fs, pn), true);
			return;
		}
		if (!tlog_segname_parse(name, ".log", &base) ||
		    (seg = tlog_segment_get(pn->part, base)) == NULL)
			break;
		/* The active segment is only `current`. */
		if (!tl_seg_sealed(seg)) {
			tlog_segment_put(seg);
			break;
		}
		reply_node(req, tl_node_lookup(fs, seg_ino(seg) |
		    TL_SEALED_BIT, TL_SEG, pn, NULL, NULL, seg));
		return;
	default:
		r = -ENOTDIR;
		break;
	}
	fuse_reply_err(req, -r);
}

static void
tl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	tl_node_forget(tl_fs_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void
tl_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	size_t i;

	for (i = 0; i < count; i++)
		tl_node_forget(tl_fs_of(req), f[i].ino, f[i].nlookup);
	fuse_reply_none(req);
}

static void
tl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tl_node *n;
	struct stat st;
	double timeout;
	int r;

	(void)fi;
	if ((n = tl_node_get(req, ino)) == NULL)
		return;
	if ((r = tl_node_attr(tl_fs_of(req), n, &st, &timeout)) != 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, timeout);
}

/*
 * Directories take chmod and chown (persisted on the backing directory).
 * Segments take nothing: their mode and owner follow the partition, and
 * their size and times follow the records.
 */
static void
tl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct tl_fs *fs = tl_fs_of(req);
	const int ignored = FUSE_SET_ATTR_CTIME |
	    FUSE_SET_ATTR_KILL_SUID | FUSE_SET_ATTR_KILL_SGID;
	struct tl_node *n;
	struct tlog_topic *t;
	struct tlog_partition *p;
	int r = 0;

	(void)fi;
	if ((n = tl_node_get(req, ino)) == NULL)
		return;
	if (tl_refuse_ro(req))
		return;
	if (n->kind == TL_META || n->kind == TL_METRICS || tl_is_events(fs, n)) {
		r = -EPERM;	/* .tlogfs/ is read-only */
		goto out_err;
	}
	if (n->kind == TL_SEG || n->kind == TL_EMPTY) {
		if (to_set & ~ignored) {
			r = -EPERM;
			goto out_err;
		}
		tl_getattr(req, ino, NULL);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		r = -EISDIR;
		goto out_err;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
	    FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW)) {
		r = -EPERM;
		goto out_err;
	}
	t = n->kind == TL_TOPIC ? n->topic : NULL;
	p = n->kind == TL_PART ? n->part : NULL;
	if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		r = tlog_level_chown(fs->store, t, p,
		    (to_set & FUSE_SET_ATTR_UID) ? attr->st_uid : (uid_t)-1,
		    (to_set & FUSE_SET_ATTR_GID) ? attr->st_gid : (gid_t)-1);
	if (r == 0 && (to_set & FUSE_SET_ATTR_MODE))
		r = tlog_level_chmod(fs->store, t, p, attr->st_mode & 07777);
	if (r != 0)
		goto out_err;
	/* Files take their mode and owner from the partition: the kernel's
	 * cached attributes of its sealed segments are stale now. */
	if (p != NULL)
		tl_inval_children(fs, n);
	else if (n->kind == TL_ROOT && (to_set & (FUSE_SET_ATTR_UID |
	    FUSE_SET_ATTR_GID)))
		tl_inval_meta(fs);
	tl_getattr(req, ino, NULL);
	return;
out_err:
	fuse_reply_err(req, -r);
}

/* ---- directories: topics and partitions ---- */

/* A new directory takes the mode asked for and its creator as owner,
 * like any file system (when the daemon may give it away). */
static void
adopt_dir(struct tl_fs *fs, fuse_req_t req, struct tlog_topic *t,
    struct tlog_partition *p, mode_t mode)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	int r;

	if ((mode & 07777) != 0755 &&
	    (r = tlog_level_chmod(fs->store, t, p, mode & 07777)) != 0)
		tlog_log(fs->store, LOG_WARNING, "cannot set mode %o on a new "
		    "directory: %s", (unsigned)(mode & 07777), strerror(-r));
	if (geteuid() == 0 && (ctx->uid != 0 || ctx->gid != 0) &&
	    (r = tlog_level_chown(fs->store, t, p, ctx->uid, ctx->gid)) != 0)
		tlog_log(fs->store, LOG_WARNING, "cannot give a new directory "
		    "to %u:%u: %s", (unsigned)ctx->uid, (unsigned)ctx->gid,
		    strerror(-r));
}

static void
tl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct tl_fs *fs = tl_fs_of(req);
	struct tl_node *pn;
	struct tlog_topic *t;
	struct tlog_partition *p;
	int r;

	if ((pn = tl_node_get(req, parent)) == NULL)
		return;
	if (tl_refuse_ro(req))
		return;
	switch (pn->kind) {
	case TL_ROOT:
		if ((r = tlog_topic_create(fs->store, name, &t)) != 0)
			break;
		adopt_dir(fs, req, t, NULL, mode);
		reply_node(req, tl_node_lookup(fs, tlog_topic_ino(t),
		    TL_TOPIC, NULL, t, NULL, NULL));
		return;
	case TL_TOPIC:
		if ((r = tlog_partition_create(pn->topic, name, &p)) != 0)
			break;
		adopt_dir(fs, req, NULL, p, mode);
		reply_node(req, tl_node_lookup(fs, tlog_partition_ino(p),
		    TL_PART, NULL, NULL, p, NULL));
		return;
	case TL_PART:
	case TL_META:
		r = -EPERM;	/* nothing nests below a partition */
		break;
	default:
		r = -ENOTDIR;
		break;
	}
	fuse_reply_err(req, -r);
}

/* After r, the result of an operation that removes or replaces p (a
 * reference taken before it, or NULL): p's poll waiters hang up. */
static int
hang_up(struct tl_fs *fs, struct tlog_partition *p, int r)
{
	if (p != NULL) {
		if (r == 0)
			tl_poll_wake(fs, tlog_partition_ino(p));
		tlog_partition_put(p);
	}
	return r;
}

static int
remove_partition(struct tl_fs *fs, struct tlog_topic *t, const char *name)
{
	struct tlog_partition *p = tlog_partition_get(t, name);

	return hang_up(fs, p, tlog_partition_remove(t, name));
}

/* Within its topic; the waiters of the partition it replaced hang up. */
static int
rename_partition(struct tl_fs *fs, struct tlog_topic *t, const char *from,
    const char *to)
{
	struct tlog_partition *victim = tlog_partition_get(t, to);

	return hang_up(fs, victim, tlog_partition_rename(t, from, to));
}

static void
tl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tl_fs *fs = tl_fs_of(req);
	struct tl_node *pn;
	int r;

	if ((pn = tl_node_get(req, parent)) == NULL)
		return;
	if (fs->ro)
		r = -EROFS;
	else if (pn->kind == TL_META ||
	    (pn->kind == TL_ROOT && strcmp(name, ".tlogfs") == 0))
		r = -EPERM;
	else if (pn->kind == TL_ROOT)
		r = tlog_topic_remove(fs->store, name);
	else if (pn->kind == TL_TOPIC)
		r = remove_partition(fs, pn->topic, name);
	else
		r = -ENOTDIR;
	fuse_reply_err(req, -r);
}

/* Topics rename within the root, partitions within their topic. */
static void
tl_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct tl_fs *fs = tl_fs_of(req);
	struct tl_node *pn, *npn;
	struct tlog_topic *t;
	struct tlog_partition *p;
	int r;

	if (flags & ~RENAME_NOREPLACE) {
		r = -EINVAL;	/* no RENAME_EXCHANGE, no whiteouts */
		goto out;
	}
	if ((pn = tl_node_get(req, parent)) == NULL ||
	    (npn = tl_node_get(req, newparent)) == NULL)
		return;
	if (tl_refuse_ro(req))
		return;
	/* .tlogfs is not a topic, and no topic can take its name. */
	if ((pn->kind == TL_ROOT && strcmp(name, ".tlogfs") == 0) ||
	    (npn->kind == TL_ROOT && strcmp(newname, ".tlogfs") == 0))
		r = -EPERM;
	else if (pn->kind == TL_ROOT && npn->kind == TL_ROOT) {
		if ((flags & RENAME_NOREPLACE) &&
		    (t = tlog_topic_get(fs->store, newname)) != NULL) {
			tlog_topic_put(t);
			r = -EEXIST;
		} else
			r = tlog_topic_rename(fs->store, name, newname);
	} else if (pn->kind == TL_TOPIC && npn->kind == TL_TOPIC &&
	    pn->topic == npn->topic) {
		if ((flags & RENAME_NOREPLACE) &&
		    (p = tlog_partition_get(pn->topic, newname)) != NULL) {
			tlog_partition_put(p);
			r = -EEXIST;
		} else
			r = rename_partition(fs, pn->topic, name, newname);
	} else
		r = -EPERM;
out:
	fuse_reply_err(req, -r);
}

/* Nothing but the engine creates files. */
static void
tl_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    dev_t rdev)
{
	(void)parent; (void)name; (void)mode; (void)rdev;
	if (!tl_refuse_ro(req))
		fuse_reply_err(req, EPERM);
}

/*
 * Nothing but the engine creates files; but `current` is always there in
 * a partition, so a create of it (`>>` is O_CREAT) means the lookup just
 * found the partition gone (removed, by rmdir or partition.cleanup.ms,
 * while the open was on its way): the append fails as it would a moment
 * later, with ENOENT.
 */
static void
tl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	struct tl_node *pn;

	(void)mode; (void)fi;
	if ((pn = tl_node_get(req, parent)) == NULL || tl_refuse_ro(req))
		return;
	fuse_reply_err(req, pn->kind == TL_PART &&
	    strcmp(name, "current") == 0 ? ENOENT : EPERM);
}

static void
tl_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name)
{
	(void)link; (void)parent; (void)name;
	if (!tl_refuse_ro(req))
		fuse_reply_err(req, EPERM);
}

static void
tl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname)
{
	(void)ino; (void)newparent; (void)newname;
	if (!tl_refuse_ro(req))
		fuse_reply_err(req, EPERM);
}

/* rm of a sealed segment or of `current`: a manual deletion. */
static void
tl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tlog_segment *seg = NULL;
	struct tlog_seginfo info;
	struct tl_node *pn;
	uint64_t base;
	int r;

	if ((pn = tl_node_get(req, parent)) == NULL)
		return;
	if (tl_refuse_ro(req))
		return;
	if (pn->kind != TL_PART || tl_is_events(tl_fs_of(req), pn)) {
		r = pn->kind == TL_SEG || pn->kind == TL_EMPTY ? -ENOTDIR :
		    -EPERM;
		goto out;
	}
	if (strcmp(name, "current") == 0)
		seg = tlog_segment_get_active(pn->part);
	else if (tlog_segname_parse(name, ".log", &base) &&
	    (seg = tlog_segment_get(pn->part, base)) != NULL &&
	    !tl_seg_sealed(seg)) {
		tlog_segment_put(seg);	/* the active one is only `current` */
		seg = NULL;
	}
	if (seg == NULL) {
		r = -ENOENT;
		goto out;
	}
	tlog_segment_info(seg, &info);
	tlog_segment_put(seg);
	r = tlog_partition_delete(pn->part, info.base);
out:
	fuse_reply_err(req, -r);
}

static void
tl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	int r;

	(void)ino;
	if ((r = tlog_store_statvfs(tl_fs_of(req)->store, &sv)) != 0) {
		fuse_reply_err(req, -r);
		return;
	}
	if (sv.f_namemax > TLOG_NAME_MAX)
		sv.f_namemax = TLOG_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

/* ---- session ---- */

static void
tl_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/*
	 * Writes of one handle must reach the engine in order: no async
	 * direct I/O (the parts of one large write could run at once), no
	 * writeback cache (it breaks O_APPEND and the daemon-side roll),
	 * no splice.
	 */
	conn->want &= ~(FUSE_CAP_ASYNC_DIO | FUSE_CAP_WRITEBACK_CACHE |
	    FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
	    FUSE_CAP_SPLICE_MOVE);
	/* O_TRUNC reaches open(), which refuses it. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->max_write = 1U << 20;
}

const struct fuse_lowlevel_ops tl_ops = {
	.init		= tl_init,
	.lookup		= tl_lookup,
	.forget		= tl_forget,
	.forget_multi	= tl_forget_multi,
	.getattr	= tl_getattr,
	.setattr	= tl_setattr,
	.mknod		= tl_mknod,
	.mkdir		= tl_mkdir,
	.unlink		= tl_unlink,
	.rmdir		= tl_rmdir,
	.poll		= tl_poll,
	.symlink	= tl_symlink,
	.rename		= tl_rename,
	.link		= tl_link,
	.open		= tl_open,
	.read		= tl_read,
	.write		= tl_write,
	.flush		= tl_flush,
	.release	= tl_release,
	.fsync		= tl_fsync,
	.opendir	= tl_opendir,
	.readdir	= tl_readdir,
	.releasedir	= tl_releasedir,
	.fsyncdir	= tl_fsyncdir,
	.statfs		= tl_statfs,
	.setxattr	= tl_setxattr,
	.getxattr	= tl_getxattr,
	.listxattr	= tl_listxattr,
	.removexattr	= tl_removexattr,
	.create		= tl_create,
};
