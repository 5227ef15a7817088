/*
 * xattr.c - the extended-attribute protocol (doc/design.md §5), the one
 * way to read and change settings, statistics and seek positions:
 *
 *   user.KEY        a configuration key (tlog.h's key table), set on a
 *                   level (the mount root, a topic, a partition); read
 *                   anywhere: a file shows its partition's effective
 *                   value, a level its own or the inherited one
 *   user.seal       a command: "1" seals the partition's active segment
 *   user.cursor.NAME  a consumer's committed offset on a partition
 *                   (listed), with its lag as user.tlog.lag.NAME
 *   user.tlog.NAME  read-only statistics of a partition or a segment
 *                   (listed), a partition's seek names (doc/seek.md,
 *                   not listed), the mount root's store_id and a
 *                   partition's partition_id (listed)
 *
 * Any other user. name and any other namespace answer ENOTSUP; the
 * kernel asks for security.capability before every write, and gets
 * ENODATA at once. xattr_kind() classifies a name once for every
 * handler.
 */
#include "config.h"

#include <sys/xattr.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "mount.h"

static const char *const part_stats[] = {
	"start_offset", "end_offset", "bytes", "segments", "oldest_ts",
	"newest_ts", "next_expiry", "disk_bytes", NULL
};
static const char *const seg_stats[] = {
	"base_offset", "records", "first_ts", "max_ts", "sealed",
	"sealed_by", "expires_at", "compression", "disk_bytes", NULL
};

static int
name_index(const char *const *names, const char *name)
{
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/*
 * What an attribute name is. Every handler classifies it here, then
 * answers by kind; only getxattr answers security.capability apart.
 */
enum xa_kind {
	XA_CAPABILITY,	/* security.capability, asked before every write */
	XA_FOREIGN,	/* any other name outside user. */
	XA_STAT,	/* user.tlog.NAME: a statistic or a seek name */
	XA_SEAL,	/* user.seal: a command, never a value */
	XA_CURSOR,	/* user.cursor.NAME: a partition's cursor */
	XA_KEY,		/* user.KEY of the key table */
	XA_UNKNOWN	/* any other user. name */
};

/* The kind of name; *arg is what follows user. (XA_KEY, XA_UNKNOWN) or
 * user.tlog. (XA_STAT) or user.cursor. (XA_CURSOR), *k the key's index
 * (XA_KEY). */
static enum xa_kind
xattr_kind(const char *name, const char **arg, int *k)
{
	*arg = NULL;
	*k = -1;
	if (strcmp(name, "security.capability") == 0)
		return XA_CAPABILITY;
	if (strncmp(name, "user.", 5) != 0)
		return XA_FOREIGN;
	*arg = name + 5;
	if (strncmp(*arg, "tlog.", 5) == 0) {
		*arg += 5;
		return XA_STAT;
	}
	if (strcmp(*arg, "seal") == 0)
		return XA_SEAL;
	if (strncmp(*arg, "cursor.", 7) == 0) {
		*arg += 7;
		return XA_CURSOR;
	}
	if ((*k = tlog_key_lookup(*arg)) < 0)
		return XA_UNKNOWN;
	return XA_KEY;
}

/* Config levels: the store (root), a topic, a partition. */
static bool
is_level(const struct tl_node *n)
{
	return n->kind == TL_ROOT || n->kind == TL_TOPIC || n->kind == TL_PART;
}

static struct tlog_topic *
level_topic(const struct tl_node *n)
{
	return n->kind == TL_TOPIC ? n->topic : NULL;
}

static struct tlog_partition *
level_part(const struct tl_node *n)
{
	return n->kind == TL_PART ? n->part : NULL;
}

/* Whether the level itself sets key k (rather than inheriting it). */
static bool
level_sets(struct tl_fs *fs, const struct tl_node *n, int k)
{
	const struct tlog_conf *c;

	if (n->kind == TL_TOPIC)
		c = tlog_topic_conf(n->topic);
	else if (n->kind == TL_PART)
		c = tlog_partition_conf(n->part);
	else
		c = tlog_store_conf(fs->store);
	return __atomic_load_n(&c->v[k], __ATOMIC_RELAXED) != TLOG_UNSET;
}

/* A statistic as text: -ENOTSUP if no such statistic, -ENODATA if this
 * node has none of that kind. */
static int
stat_value(struct tl_node *n, const char *stat, char *buf, size_t len)
{
	struct tlog_part_stats ps;
	struct tlog_seginfo si;
	int i;

	/* disk_bytes is both a partition's and a segment's. */
	if ((i = name_index(part_stats, stat)) >= 0 &&
	    (n->kind == TL_PART || name_index(seg_stats, stat) < 0)) {
		if (n->kind != TL_PART)
			return -ENODATA;
		tlog_partition_stats(n->part, &ps);
		int64_t v[] = { (int64_t)ps.start_offset,
		    (int64_t)ps.end_offset, (int64_t)ps.bytes,
		    (int64_t)ps.segments, ps.oldest_ts, ps.newest_ts,
		    ps.next_expiry, (int64_t)ps.disk_bytes };
		snprintf(buf, len, "%" PRId64, v[i]);
		return 0;
	}
	if ((i = name_index(seg_stats, stat)) < 0)
		return -ENOTSUP;
	if (n->kind == TL_SEG)
		tlog_segment_info(n->seg, &si);
	else if (n->kind == TL_EMPTY) {
		tlog_partition_stats(n->part, &ps);
		memset(&si, 0, sizeof(si));
		si.base = ps.end_offset;
		si.first_ts = si.max_ts = si.expires_at = -1;
		si.sealed_by = TLOG_TRIG_NONE;
	} else
		return -ENODATA;
	if (i == 5) {
		snprintf(buf, len, "%s", tlog_trigger_name(si.sealed_by));
		return 0;
	}
	if (i == 7) {
		snprintf(buf, len, "%s", si.zbytes != 0 ? "zstd" : "none");
		return 0;
	}
	int64_t v[] = { (int64_t)si.base, (int64_t)si.records, si.first_ts,
	    si.max_ts, si.sealed ? 1 : 0, 0, si.expires_at, 0,
	    (int64_t)(si.zbytes != 0 ? si.zbytes : si.alloc) };
	snprintf(buf, len, "%" PRId64, v[i]);
	return 0;
}

/*
 * Seek names on a partition, not listed (doc/seek.md): "at.OFFSET" ->
 * "BASE POS" of the first live record >= OFFSET, "since.MS" -> "OFFSET
 * BASE POS" of the first that can have ts >= MS. -ENOTSUP if name is
 * neither, -EINVAL for a bad number.
 */
static int
seek_value(struct tl_node *n, const char *name, char *buf, size_t len)
{
	struct tlog_pos at;
	const char *errstr;
	long long v;
	bool by_time;
	int r;

	if (strncmp(name, "at.", 3) == 0)
		by_time = false;
	else if (strncmp(name, "since.", 6) == 0)
		by_time = true;
	else
		return -ENOTSUP;
	v = strtonum(name + (by_time ? 6 : 3), 0, LLONG_MAX, &errstr);
	if (errstr != NULL)
		return -EINVAL;
	if (n->kind != TL_PART)
		return -ENODATA;
	r = by_time ? tlog_partition_seek_time(n->part, v, &at) :
	    tlog_partition_seek(n->part, (uint64_t)v, &at);
	if (r != 0)
		return r;
	if (by_time)
		snprintf(buf, len, "%" PRIu64 " %" PRIu64 " %" PRIu64,
		    at.offset, at.base, at.pos);
	else
		snprintf(buf, len, "%" PRIu64 " %" PRIu64, at.base, at.pos);
	return 0;
}

/* "lag.NAME" on a partition: how far cursor NAME is behind the end.
 * -ENOTSUP if name is not a lag name. */
static int
lag_value(struct tl_node *n, const char *name, char *buf, size_t len)
{
	uint64_t lag;
	int r;

	if (strncmp(name, "lag.", 4) != 0)
		return -ENOTSUP;
	if (n->kind != TL_PART)
		return -ENODATA;
	if ((r = tlog_partition_cursor_lag(n->part, name + 4, &lag)) == 0)
		snprintf(buf, len, "%" PRIu64, lag);
	return r;
}

/* "store_id" on the mount root, "partition_id" on a partition: their
 * identities (format.md). -ENOTSUP if name is neither. */
static int
id_value(struct tl_fs *fs, struct tl_node *n, const char *name, char *buf,
    size_t len)
{
	const char *id;

	if (strcmp(name, "partition_id") == 0)
		return n->kind == TL_PART ? tlog_partition_id(n->part, buf,
		    len) : -ENODATA;
	if (strcmp(name, "store_id") != 0)
		return -ENOTSUP;
	id = tlog_store_id(fs->store);
	if (n->kind != TL_ROOT || *id == '\0')
		return -ENODATA;
	strlcpy(buf, id, len);
	return 0;
}

/* A cursor's offset: ENODATA but on a partition. */
static int
cursor_value(struct tl_node *n, const char *name, char *buf, size_t len)
{
	uint64_t off;
	int r;

	if (n->kind != TL_PART)
		return -ENODATA;
	if ((r = tlog_partition_cursor_get(n->part, name, &off)) == 0)
		snprintf(buf, len, "%" PRIu64, off);
	return r;
}

static void
reply_xattr_value(fuse_req_t req, const char *val, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, len);
}

/* A level's value of a key, or its partition's for a file. */
static int
conf_value(struct tl_fs *fs, struct tl_node *n, const char *key, char *buf,
    size_t len)
{
	int64_t v;
	int r;

	if (n->kind == TL_META || n->kind == TL_METRICS)
		return -ENODATA;  /* not a level, and no partition's file */
	if (is_level(n))
		r = tlog_conf_get(fs->store, level_topic(n), level_part(n),
		    key, &v);
	else
		r = tlog_conf_get(fs->store, NULL, n->part, key, &v);
	if (r == 0)
		tlog_key_format(tlog_key_lookup(key), v, buf, len);
	return r;
}

void
tl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	enum xa_kind kind;
	struct tl_node *n;
	const char *arg;
	char val[64];
	int k, r;

	/* Asked before every write: answer from memory, at once. */
	if ((kind = xattr_kind(name, &arg, &k)) == XA_CAPABILITY) {
		r = -ENODATA;
		goto out_err;
	}
	if (kind == XA_FOREIGN) {
		r = -ENOTSUP;
		goto out_err;
	}
	if ((n = tl_node_get(req, ino)) == NULL)
		return;
	switch (kind) {
	case XA_STAT:
		if ((r = seek_value(n, arg, val, sizeof(val))) == -ENOTSUP &&
		    (r = lag_value(n, arg, val, sizeof(val))) == -ENOTSUP &&
		    (r = id_value(tl_fs_of(req), n, arg, val, sizeof(val))) ==
		    -ENOTSUP)
			r = stat_value(n, arg, val, sizeof(val));
		break;
	case XA_CURSOR:
		r = cursor_value(n, arg, val, sizeof(val));
		break;
	case XA_SEAL:
		r = -ENODATA;	/* a command, not a value */
		break;
	case XA_KEY:
		r = conf_value(tl_fs_of(req), n, arg, val, sizeof(val));
		break;
	default:
		r = -ENOTSUP;
		break;
	}
	if (r != 0)
		goto out_err;
	reply_xattr_value(req, val, strlen(val), size);
	return;
out_err:
	fuse_reply_err(req, -r);
}

/* "1", as setfattr sends it, or with the newline of `echo`. */
static bool
is_one(const char *value, size_t size)
{
	return (size == 1 && value[0] == '1') ||
	    (size == 2 && value[0] == '1' && value[1] == '\n');
}

static int
do_seal(struct tl_fs *fs, struct tl_node *n, const char *value, size_t size)
{
	if (!is_one(value, size))
		/* Logged at the level it names, as a bad setting is. */
		return tlog_conf_refuse(fs->store, level_topic(n),
		    n->kind == TL_PART || n->kind == TL_SEG ||
		    n->kind == TL_EMPTY ? n->part : NULL, "seal", value, size,
		    "1");
	switch (n->kind) {
	case TL_PART:
	case TL_EMPTY:
		return tlog_partition_seal(n->part, TLOG_TRIG_MANUAL);
	case TL_SEG:
		/* Sealed already (a sealed segment, or `current` that has
		 * just rolled): nothing to do. */
		if (tl_seg_sealed(n->seg))
			return 0;
		return tlog_partition_seal(n->part, TLOG_TRIG_MANUAL);
	default:
		return -EPERM;	/* sealing is per partition */
	}
}

/*
 * segment.preallocate reserves segment.bytes (up to 2 GiB) per segment
 * until it seals, so anyone who could set it on a partition they may
 * write could take that much disk for a few bytes of data. Only the
 * mount's owner (the daemon's uid) sets or removes it, at any level.
 */
static int
may_change(fuse_req_t req, struct tl_fs *fs, int k)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	if (k != TLOG_SEGMENT_PREALLOCATE || ctx->uid == geteuid())
		return 0;
	tlog_log(fs->store, LOG_WARNING, "segment.preallocate: refused for "
	    "uid %u: only the mount's owner (uid %u) may change it",
	    (unsigned)ctx->uid, (unsigned)geteuid());
	return -EPERM;
}

/* Whether the request may set or remove a name of this kind: 0, or the
 * answer (only XA_KEY on a level can be changed). */
static int
may_write(fuse_req_t req, struct tl_fs *fs, struct tl_node *n,
    enum xa_kind kind, int k)
{
	switch (kind) {
	case XA_STAT:
		return -EPERM;		/* statistics are read-only */
	case XA_KEY:
		if (!is_level(n))
			return -EPERM;	/* set it on the directory */
		return may_change(req, fs, k);	/* the mount's owner only */
	default:
		return -ENOTSUP;
	}
}

/*
 * Commits a cursor (setxattr's flags as for any attribute); only a
 * partition has cursors.
 */
static int
do_cursor(struct tl_node *n, const char *name, const char *value,
    size_t size, int flags)
{
	uint64_t off;
	bool has;

	if (n->kind != TL_PART)
		return -EPERM;
	if (flags & (XATTR_CREATE | XATTR_REPLACE)) {
		has = tlog_partition_cursor_get(n->part, name, &off) == 0;
		if ((flags & XATTR_CREATE) && has)
			return -EEXIST;
		if ((flags & XATTR_REPLACE) && !has)
			return -ENODATA;
	}
	return tlog_partition_cursor_set(n->part, name, value, size);
}

/*
 * The start of setxattr and removexattr: the node a change of name is
 * for, and what the name is; NULL once it has replied (a read-only
 * mount, a name outside user., no such node).
 */
static struct tl_node *
change_target(fuse_req_t req, fuse_ino_t ino, const char *name,
    enum xa_kind *kind, const char **arg, int *k)
{
	if (tl_refuse_ro(req))
		return NULL;
	*kind = xattr_kind(name, arg, k);
	if (*kind == XA_CAPABILITY || *kind == XA_FOREIGN) {
		fuse_reply_err(req, ENOTSUP);
		return NULL;
	}
	return tl_node_get(req, ino);
}

void
tl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
    const char *value, size_t size, int flags)
{
	struct tl_fs *fs = tl_fs_of(req);
	enum xa_kind kind;
	struct tl_node *n;
	const char *arg;
	char err[256];
	int k, r;

	if ((n = change_target(req, ino, name, &kind, &arg, &k)) == NULL)
		return;
	if (kind == XA_SEAL)
		r = do_seal(fs, n, value, size);
	else if (kind == XA_CURSOR)
		r = do_cursor(n, arg, value, size, flags);
	else if ((r = may_write(req, fs, n, kind, k)) != 0)
		;
	else if ((flags & XATTR_CREATE) && level_sets(fs, n, k))
		r = -EEXIST;
	else if ((flags & XATTR_REPLACE) && !level_sets(fs, n, k))
		r = -ENODATA;
	else
		r = tlog_conf_set(fs->store, level_topic(n), level_part(n),
		    arg, value, size, err, sizeof(err));
	fuse_reply_err(req, -r);
}

void
tl_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct tl_fs *fs = tl_fs_of(req);
	enum xa_kind kind;
	struct tl_node *n;
	const char *arg;
	int k, r;

	if ((n = change_target(req, ino, name, &kind, &arg, &k)) == NULL)
		return;
	if (kind == XA_SEAL)
		r = -ENODATA;
	else if (kind == XA_CURSOR)
		r = n->kind != TL_PART ? -EPERM :
		    tlog_partition_cursor_remove(n->part, arg);
	else if ((r = may_write(req, fs, n, kind, k)) == 0)
		r = tlog_conf_unset(fs->store, level_topic(n), level_part(n),
		    arg);
	fuse_reply_err(req, -r);
}

static void
list_add(char *buf, size_t *len, size_t cap, const char *prefix,
    const char *name)
{
	size_t l = strlen(prefix) + strlen(name) + 1;

	if (*len + l <= cap)
		snprintf(buf + *len, l, "%s%s", prefix, name);
	*len += l;
}

/* A level lists the keys it sets itself (so `getfattr -d` shows its
 * overrides); partitions and files also list their statistics, a
 * partition its cursors and their lags. */
void
tl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct tl_fs *fs = tl_fs_of(req);
	const char *const *stats = NULL;
	struct tlog_cursor *cur = NULL;
	struct tl_node *n;
	char *buf;
	size_t len = 0, cap = 1024, ncur = 0, i;
	int k;

	if ((n = tl_node_get(req, ino)) == NULL)
		return;
	if (n->kind == TL_PART &&
	    tlog_partition_cursor_list(n->part, &cur, &ncur) != 0) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	cap += ncur * (2 * TLOG_CURSOR_NAME_MAX + 32);
	if ((buf = malloc(cap)) == NULL) {
		free(cur);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (i = 0; i < ncur; i++) {
		list_add(buf, &len, cap, "user.cursor.", cur[i].name);
		list_add(buf, &len, cap, "user.tlog.lag.", cur[i].name);
	}
	free(cur);
	if (is_level(n))
		for (k = 0; k < TLOG_NKEYS; k++)
			if (level_sets(fs, n, k))
				list_add(buf, &len, cap, "user.",
				    tlog_key_name(k));
	if (n->kind == TL_PART)
		stats = part_stats;
	else if (n->kind == TL_SEG || n->kind == TL_EMPTY)
		stats = seg_stats;
	for (k = 0; stats != NULL && stats[k] != NULL; k++)
		list_add(buf, &len, cap, "user.tlog.", stats[k]);
	if (n->kind == TL_PART)
		list_add(buf, &len, cap, "user.tlog.", "partition_id");
	if (n->kind == TL_ROOT && *tlog_store_id(fs->store) != '\0')
		list_add(buf, &len, cap, "user.tlog.", "store_id");
	reply_xattr_value(req, buf, len, size);
	free(buf);
}
