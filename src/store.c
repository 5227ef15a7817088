/*
 * store.c - an open store (store.h): open and close with the store's
 * layout, lock, clean mark and boot id; the hooks the partitions reach
 * the layers above them through (events, queues, the scheduler); and the
 * calls of tlog.h that the store answers by delegating to its registry,
 * its queues and its events partition.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "checkpoint.h"
#include "flush.h"
#include "store.h"
#include "unlink.h"

int
tlog_store_statvfs(struct tlog_store *s, struct statvfs *sv)
{
	return fstatvfs(s->tree.dirfd, sv) == -1 ? -errno : 0;
}

/* ---- what the store answers itself ---- */

int64_t
tlog_now(struct tlog_store *s)
{
	return tlog_ctx_now(s != NULL ? &s->ctx : NULL);
}

void
tlog_log(struct tlog_store *s, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tlog_ctx_vlog(s != NULL ? &s->ctx : NULL, prio, fmt, ap);
	va_end(ap);
}

const struct tlog_conf *
tlog_store_conf(struct tlog_store *s)
{
	return tlog_level_conf_of(&s->root);
}

bool
tlog_store_was_clean(const struct tlog_store *s)
{
	return s->rc.was_clean;
}

bool
tlog_store_readonly(const struct tlog_store *s)
{
	return s->ctx.ro;
}

const char *
tlog_store_id(const struct tlog_store *s)
{
	return s->id;
}

void
tlog_store_update_pid(struct tlog_store *s)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

	/* A reader leaves the last writer's pid: it writes nothing. */
	if (s->ctx.ro)
		return;
	if (ftruncate(s->lockfd, 0) == 0 &&
	    pwrite(s->lockfd, buf, (size_t)n, 0) != n)
		tlog_ctx_log(&s->ctx, LOG_WARNING, "cannot record pid in lock file");
}

static int
store_lock(struct tlog_store *s, char *err, size_t errlen)
{
	struct stat lst;
	char buf[32] = "";
	ssize_t n;

	/*
	 * A reader takes the lock shared: read-only opens, which change
	 * nothing, coexist; a writer is kept out while any of them runs,
	 * and keeps them out, so what a reader shows never moves.
	 */
	/* Never through a link, never a FIFO or device planted there. */
	if (tlog_not_regular(s->tree.dirfd, ".tlogfs/lock")) {
		snprintf(err, errlen, "%s/.tlogfs/lock: not a regular file "
		    "with one link", s->path);
		return -EINVAL;
	}
	s->lockfd = s->ctx.ro ? openat(s->tree.dirfd, ".tlogfs/lock", O_RDONLY |
	    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : openat(s->tree.dirfd,
	    ".tlogfs/lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC, 0644);
	/* A second link could name a file outside the store. */
	if (s->lockfd != -1 && (fstat(s->lockfd, &lst) == -1 ||
	    !S_ISREG(lst.st_mode) || lst.st_nlink != 1)) {
		close(s->lockfd);
		s->lockfd = -1;
		snprintf(err, errlen, "%s/.tlogfs/lock: not a regular file "
		    "with one link", s->path);
		return -EINVAL;
	}
	if (s->lockfd == -1) {
		snprintf(err, errlen, "%s/.tlogfs/lock: %s", s->path,
		    strerror(errno));
		return -errno;
	}
	if (flock(s->lockfd, (s->ctx.ro ? LOCK_SH : LOCK_EX) | LOCK_NB) == -1) {
		int e = errno;
		n = pread(s->lockfd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		/* Held by readers only: the pid in the file is the last
		 * writer's, not theirs. */
		if (e == EWOULDBLOCK && !s->ctx.ro &&
		    flock(s->lockfd, LOCK_SH | LOCK_NB) == 0) {
			flock(s->lockfd, LOCK_UN);
			snprintf(err, errlen, "store %s is in use by a "
			    "read-only mount", s->path);
		} else if (e == EWOULDBLOCK)
			snprintf(err, errlen, "store %s is in use by pid %s",
			    s->path, *buf ? buf : "(unknown)");
		else
			snprintf(err, errlen, "cannot lock store %s: %s",
			    s->path, strerror(e));
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	tlog_store_update_pid(s);
	return 0;
}

/* The store's own directory name (.tlogfs, .tlogfs/events) must be a
 * directory, never a symbolic link or anything else put in its place:
 * else the store is refused, with the reason. */
static int
own_dir(struct tlog_store *s, const char *name, char *err, size_t errlen)
{
	struct stat st;

	if (fstatat(s->tree.dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s/%s: %s", s->path, name,
		    strerror(errno));
		return -errno;
	}
	if (S_ISDIR(st.st_mode))
		return 0;
	snprintf(err, errlen, "%s/%s: %s, not a directory: the store is "
	    "refused (move it away to open the store)", s->path, name,
	    S_ISLNK(st.st_mode) ? "a symbolic link" : "something else");
	return -ENOTDIR;
}

/*
 * A private store (doc/format.md, "A private store"): anyone who could
 * write in the store's directory could plant files the daemon trusts
 * (a FIFO as a partition's .next, another .config). A directory that
 * its group or others may write is refused; one they may only read or
 * enter is made 0700 by a read-write open, said once. The mount root's
 * own mode and owner live in .tlogfs/attr ("MODE UID GID", mode in
 * octal), made from the directory's own at the first open.
 */
static int
store_private(struct tlog_store *s, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(s->tree.dirfd, &st) == -1) {
		snprintf(err, errlen, "store %s: %s", s->path, strerror(errno));
		return -errno;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "store %s is writable by %s (mode %04o): "
		    "whoever can write it can plant files the daemon trusts; "
		    "refused. chmod go-w %s (tlogfs then makes it 0700)",
		    s->path, (st.st_mode & S_IWOTH) ? "everyone" : "its group",
		    (unsigned)(st.st_mode & 07777), s->path);
		return -EPERM;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "store %s belongs to uid %u, not to the "
		    "daemon's (uid %u): its owner can plant files the daemon "
		    "trusts; refused. chown %u %s", s->path,
		    (unsigned)st.st_uid, (unsigned)geteuid(),
		    (unsigned)geteuid(), s->path);
		return -EPERM;
	}
	s->root_mode = st.st_mode & 07777;
	s->root_uid = st.st_uid;
	s->root_gid = st.st_gid;
	return 0;
}

static int
write_root_attr(struct tlog_store *s, mode_t mode, uid_t uid, gid_t gid)
{
	char buf[64];
	int n;

	n = snprintf(buf, sizeof(buf), "%04o %u %u\n", (unsigned)mode,
	    (unsigned)uid, (unsigned)gid);
	return tlog_write_atomic(s->tree.dirfd, ".tlogfs/attr", buf, (size_t)n);
}

/* After the lock: the mount root's attributes, then the directory made
 * the daemon's alone. */
static void
store_root_attr_load(struct tlog_store *s)
{
	struct stat st;
	unsigned mode, uid, gid;
	char buf[64], nl;
	bool have = false;
	ssize_t n;
	int fd, r;

	if ((fd = tlog_ctx_open_file(&s->ctx, s->tree.dirfd, "",
	    ".tlogfs/attr", O_RDONLY)) >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		/* (uid_t)-1 means "unchanged" to chown: never an owner. */
		have = sscanf(buf, "%o %u %u%c", &mode, &uid, &gid, &nl) == 4 &&
		    nl == '\n' && mode <= 07777 && uid != (unsigned)-1 &&
		    gid != (unsigned)-1;
		if (!have)
			tlog_ctx_log(&s->ctx, LOG_WARNING, ".tlogfs/attr: not "
			    "\"MODE UID GID\"; the mount root shows the "
			    "store's own (%04o %u %u)", (unsigned)s->root_mode,
			    (unsigned)s->root_uid, (unsigned)s->root_gid);
	}
	if (have) {
		s->root_mode = mode;
		s->root_uid = uid;
		s->root_gid = gid;
	}
	if (s->ctx.ro)
		return;
	if (!have && (r = write_root_attr(s, s->root_mode, s->root_uid,
	    s->root_gid)) != 0) {
		tlog_ctx_log(&s->ctx, LOG_ERR, ".tlogfs/attr: cannot write: "
		    "%s; the store's directory keeps its mode", strerror(-r));
		return;
	}
	if (fstat(s->tree.dirfd, &st) == -1 || (st.st_mode & 077) == 0)
		return;
	/* A store made by this open is private from the start: only an
	 * existing one is told of the change. */
	if (fchmod(s->tree.dirfd, st.st_mode & 07700) == -1)
		tlog_ctx_log(&s->ctx, LOG_ERR, "store %s: cannot make it "
		    "private (chmod 0700): %s", s->path, strerror(errno));
	else if (!s->created)
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s: its directory is "
		    "now %04o (was %04o), the daemon's alone; the mount root "
		    "still shows %04o (.tlogfs/attr)", s->path,
		    (unsigned)(st.st_mode & 07700),
		    (unsigned)(st.st_mode & 07777), (unsigned)s->root_mode);
}

int
tlog_store_root_attr(struct tlog_store *s, mode_t mode, uid_t uid,
    gid_t gid)
{
	int r;

	if (s->ctx.ro)
		return -EROFS;
	pthread_mutex_lock(&s->conf_lock);
	if (mode == (mode_t)-1)
		mode = s->root_mode;
	if (uid == (uid_t)-1)
		uid = s->root_uid;
	if (gid == (gid_t)-1)
		gid = s->root_gid;
	if ((r = write_root_attr(s, mode & 07777, uid, gid)) == 0) {
		s->root_mode = mode & 07777;
		s->root_uid = uid;
		s->root_gid = gid;
	}
	pthread_mutex_unlock(&s->conf_lock);
	return r;
}

/* .tlogfs/format, never through a link, a FIFO or a device: anything
 * but a regular file fails with ELOOP (the store is refused). */
static int
format_open(struct tlog_store *s)
{
	if (tlog_not_regular(s->tree.dirfd, ".tlogfs/format")) {
		errno = ELOOP;
		return -1;
	}
	return openat(s->tree.dirfd, ".tlogfs/format", O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
}

static int
store_layout(struct tlog_store *s, char *err, size_t errlen)
{
	struct stat st;
	char buf[64];
	ssize_t n;
	int fd, v;

	if (s->ctx.ro) {
		/* A reader creates nothing: the store must be one. */
		if ((v = own_dir(s, ".tlogfs", err, errlen)) != 0)
			return v;
		fd = format_open(s);
		if (fd == -1 && errno == ENOENT) {
			snprintf(err, errlen, "%s is not a tlogfs store (no "
			    ".tlogfs/format), and a read-only open creates "
			    "nothing", s->path);
			return -ENOENT;
		}
		goto check;
	}
	if (mkdirat(s->tree.dirfd, ".tlogfs", 0755) == 0)
		tlog_fsync_dir(s->tree.dirfd, ".");
	else if (errno != EEXIST) {
		snprintf(err, errlen, "%s/.tlogfs: %s", s->path,
		    strerror(errno));
		return -errno;
	}
	if ((v = own_dir(s, ".tlogfs", err, errlen)) != 0)
		return v;
	fd = format_open(s);
	if (fd == -1 && errno == ENOENT) {
		n = snprintf(buf, sizeof(buf), "tlogfs %d\n",
		    TLOG_FORMAT_VERSION);
		if ((v = tlog_write_atomic(s->tree.dirfd, ".tlogfs/format", buf,
		    (size_t)n)) != 0) {
			snprintf(err, errlen, "%s: cannot write format: %s",
			    s->path, strerror(-v));
			return v;
		}
		s->created = true;
		return 0;
	}
check:
	if (fd == -1 && errno != ELOOP) {
		snprintf(err, errlen, "%s/.tlogfs/format: %s", s->path,
		    strerror(errno));
		return -errno;
	}
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (fd != -1)
			close(fd);
		snprintf(err, errlen, "%s/.tlogfs/format: not a regular file "
		    "(a link, a FIFO, a device...): the store is refused",
		    s->path);
		return -EPROTO;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "tlogfs %d", &v) != 1 || v != TLOG_FORMAT_VERSION) {
		snprintf(err, errlen, "%s: unsupported store format \"%.20s\"",
		    s->path, buf);
		return -EPROTO;
	}
	return 0;
}

/*
 * The store's identity (format.md): read from .tlogfs/id, or made and
 * written there (atomically) by a read-write open when it is missing or
 * not 32 hex digits. A read-only open of a store without one has none.
 */
static int
store_ident(struct tlog_store *s, char *err, size_t errlen)
{
	int r;

	if ((r = tlog_id_read(s->tree.dirfd, ".tlogfs/id", s->id)) == 0 ||
	    s->ctx.ro) {
		if (r != 0)
			s->id[0] = '\0';
		return 0;
	}
	if (r == -EINVAL)
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: .tlogfs/id is "
		    "not 32 hex digits; the store gets a new identity",
		    s->path);
	if ((r = tlog_id_make(s->tree.dirfd, ".tlogfs/id", s->id)) != 0) {
		snprintf(err, errlen, "%s: cannot write .tlogfs/id: %s",
		    s->path, strerror(-r));
		s->id[0] = '\0';
		return r;
	}
	return 0;
}

/*
 * The boot id (opts.boot_id, else the kernel's), which changes at every
 * boot: a crash within one boot leaves everything written in the page
 * cache, a power cut (or any reboot without a clean close) does not.
 * "" if unknown.
 */
static void
boot_id(const struct tlog_store_opts *o, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if (o->boot_id != NULL) {
		strlcpy(buf, o->boot_id, len);
	} else if ((fd = open("/proc/sys/kernel/random/boot_id",
	    O_RDONLY | O_CLOEXEC)) != -1) {
		n = read(fd, buf, len - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* Reads the boot id of the last open, "" if none was recorded. */
static void
last_boot(struct tlog_store *s, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if ((fd = tlog_ctx_open_file(&s->ctx, s->tree.dirfd, "",
	    ".tlogfs/boot", O_RDONLY)) < 0)
		return;
	n = read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	buf[strcspn(buf, "\n")] = '\0';
}

/* Every active segment is on disk as it is (after a syncfs). */
static void
mark_synced_part(struct tlog_partition *p)
{
	struct tlog_segment *seg;

	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link) {
		if (seg->live == NULL)
			continue;
		seg->live->sgen = seg->live->wgen;
		tlog_seg_idle(seg);
	}
	pthread_mutex_unlock(&p->sd.lock);
}

static void
mark_synced(struct tlog_store *s)
{
	struct tlog_partition **v;
	size_t n, i;

	if (tlog_store_partitions(s, &v, &n) == 0) {
		for (i = 0; i < n; i++) {
			mark_synced_part(v[i]);
			tlog_partition_put(v[i]);
		}
		free(v);
	}
	if (s->ev.p != NULL)
		mark_synced_part(s->ev.p);
}

/* A scheduler still attached lets go first: it holds partitions. */
static void
sched_detach(struct tlog_store *s)
{
	void *arg = tlog_store_sched(s);

	if (arg != NULL)
		s->penv.sched->detach(arg);
}

static void
store_free(struct tlog_store *s)
{
	if (s == NULL)
		return;
	sched_detach(s);
	/* Detached segments not yet unlinked are simply released; their
	 * files are found again (and kept) at the next open. */
	tlog_queue_destroy(&s->q);
	tlog_reg_destroy(&s->reg);
	tlog_events_close(&s->ev);
	tlog_ckpt_free(s->rc.ckpt);
	if (s->lockfd != -1)
		close(s->lockfd);
	if (s->tree.dirfd != -1)
		close(s->tree.dirfd);
	tlog_level_destroy(&s->root);
	pthread_rwlock_destroy(&s->tree.lock);
	pthread_mutex_destroy(&s->conf_lock);
	tlog_ctx_destroy(&s->ctx);
	tlog_fdbudget_destroy(&s->fdb);
	free(s->path);
	free(s);
}

/* The partitions loaded were born (for partition.cleanup.ms) at engine
 * time read before the clock was anchored, which may since have moved
 * on to the newest stamp: they count as born now, never earlier. */
static void
born_now(struct tlog_store *s)
{
	struct tlog_partition **v;
	int64_t now = tlog_ctx_now(&s->ctx);
	size_t n, i;

	if (tlog_store_partitions(s, &v, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&v[i]->sd.lock);
		if (v[i]->born < now)
			v[i]->born = now;
		pthread_mutex_unlock(&v[i]->sd.lock);
		tlog_partition_put(v[i]);
	}
	free(v);
}

/* The newest timestamp in any partition, -1 if none. */
static int64_t
newest_stamp(struct tlog_store *s)
{
	struct tlog_partition **v;
	int64_t newest = s->ev.p != NULL ? s->ev.p->last_ts : -1;
	size_t n, i;

	if (tlog_store_partitions(s, &v, &n) != 0)
		return newest;
	for (i = 0; i < n; i++) {
		if (v[i]->last_ts > newest)
			newest = v[i]->last_ts;
		tlog_partition_put(v[i]);
	}
	free(v);
	return newest;
}

/* ---- the hooks of the layers below ---- */

/* A seal or a deletion: the names filled in, recorded in .tlogfs/events
 * and passed to the opener's hook. No engine lock is held. */
static void
store_emit(void *arg, struct tlog_partition *p, struct tlog_event *ev)
{
	char topic[TLOG_NAME_MAX + 1], part[TLOG_NAME_MAX + 1];
	struct tlog_store *s = arg;

	if (s->ctx.opts.event == NULL && (s->ev.p == NULL || p == s->ev.p))
		return;
	pthread_rwlock_rdlock(&p->lv.tree->lock);
	strlcpy(topic, p->lv.parent->name, sizeof(topic));
	strlcpy(part, p->lv.name, sizeof(part));
	pthread_rwlock_unlock(&p->lv.tree->lock);
	ev->topic = topic;
	ev->partition = part;
	ev->partition_ino = p->lv.ino;
	ev->topic_ino = p->lv.parent->ino;
	tlog_events_record(&s->ev, p, ev);
	if (s->ctx.opts.event != NULL)
		s->ctx.opts.event(s->ctx.opts.event_arg, ev);
}

static void
store_detached(void *arg, struct tlog_segment *seg)
{
	struct tlog_store *s = arg;

	tlog_queue_unlink(&s->q, seg);
}

static void
store_sealed(void *arg, struct tlog_partition *p)
{
	struct tlog_store *s = arg;

	tlog_queue_flush(&s->q, p);
}

static void
store_unlink(void *arg, struct tlog_partition *p, uint64_t limit)
{
	struct tlog_store *s = arg;

	tlog_unlink_part(&s->q, p, limit);
}

static void
penv_init(struct tlog_store *s)
{
	s->penv.ctx = &s->ctx;
	s->penv.fdb = &s->fdb;
	s->penv.emit = store_emit;
	s->penv.detached = store_detached;
	s->penv.sealed = store_sealed;
	s->penv.unlink = store_unlink;
	s->penv.arg = s;
	s->penv.sched = NULL;
	s->penv.sched_arg = NULL;
}

void
tlog_store_set_sched(struct tlog_store *s, const struct tlog_sched_ops *ops,
    void *arg)
{
	if (arg != NULL)
		s->penv.sched = ops;
	__atomic_store_n(&s->penv.sched_arg, arg, __ATOMIC_RELEASE);
}

void *
tlog_store_sched(struct tlog_store *s)
{
	return __atomic_load_n(&s->penv.sched_arg, __ATOMIC_ACQUIRE);
}

void
tlog_store_free_changed(struct tlog_store *s)
{
	void *arg = tlog_store_sched(s);

	__atomic_store_n(&s->ctx.free_check, 1, __ATOMIC_RELAXED);
	if (arg != NULL && s->penv.sched->pressure != NULL)
		s->penv.sched->pressure(arg);
}

/*
 * A setting changed at a level: every partition it governs gets its due
 * time recomputed. The partitions are collected under the tree lock and
 * visited after it is dropped.
 */
void
tlog_store_resched(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p)
{
	struct tlog_partition **v = NULL, *q;
	struct tlog_dirent *d = NULL;
	size_t n = 0, i;

	if (p != NULL) {
		tlog_part_resched(p);
		return;
	}
	if (t == NULL && s->ev.p != NULL)
		tlog_part_resched(s->ev.p);
	if (t != NULL) {
		if (tlog_partition_list(t, &d, &n) != 0)
			return;
		for (i = 0; i < n; i++)
			if ((q = tlog_partition_get(t, d[i].name)) != NULL) {
				tlog_part_resched(q);
				tlog_partition_put(q);
			}
		free(d);
		return;
	}
	/* The store level: every partition of every topic. */
	if (tlog_store_partitions(s, &v, &n) != 0)
		return;
	for (i = 0; i < n; i++) {
		tlog_part_resched(v[i]);
		tlog_partition_put(v[i]);
	}
	free(v);
}

int
tlog_store_partitions(struct tlog_store *s, struct tlog_partition ***v,
    size_t *n)
{
	return tlog_reg_partitions(&s->reg, v, n);
}

/* Loads every topic and partition directory and recovers partitions. */
static int
store_load(struct tlog_store *s)
{
	struct tlog_partition **v;
	size_t n, i;
	int r;

	if ((r = tlog_reg_load(&s->reg)) != 0 ||
	    (r = tlog_reg_partitions(&s->reg, &v, &n)) != 0)
		return r;
	tlog_recover_all(v, n, &s->rc);
	for (i = 0; i < n; i++)
		tlog_partition_put(v[i]);
	free(v);
	return 0;
}

/* ---- open and close ---- */

/* A store not open yet: its locks, queues, hooks and levels. */
static struct tlog_store *
store_alloc(const struct tlog_store_opts *opts)
{
	struct tlog_store *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	tlog_ctx_init(&s->ctx, opts);
	s->tree.dirfd = s->lockfd = -1;
	s->ctx.cap_records = s->ctx.opts.cap_records ? s->ctx.opts.cap_records :
	    TLOG_CAP_RECORDS;
	s->ctx.cap_bytes = s->ctx.opts.cap_bytes ? s->ctx.opts.cap_bytes :
	    TLOG_CAP_BYTES;
	pthread_rwlock_init(&s->tree.lock, NULL);
	pthread_mutex_init(&s->conf_lock, NULL);
	tlog_fdbudget_init(&s->fdb, s->ctx.opts.max_open_segments,
	    s->ctx.opts.fd_reserve);
	tlog_queue_init(&s->q);
	penv_init(s);
	tlog_level_init(&s->root, &s->tree, NULL, NULL, TLOG_ROOT_INO, NULL);
	tlog_reg_init(&s->reg, &s->root, &s->penv, &s->q);
	return s;
}

/* The nonce the clean close wrote in its mark, which its checkpoint
 * repeats; false if the mark holds none (an older tlogfs's). */
static bool
read_mark_nonce(struct tlog_store *s, uint64_t *nonce)
{
	char buf[32];
	ssize_t n;
	int fd;

	fd = tlog_ctx_open_file(&s->ctx, s->tree.dirfd, "", ".tlogfs/clean",
	    O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n != 17 || buf[16] != '\n')
		return false;
	buf[n] = '\0';
	return sscanf(buf, "%16" SCNx64, nonce) == 1;
}

/* Whether the last close was clean; the mark goes while the store is
 * open (read-write). */
static int
store_clean_mark(struct tlog_store *s, char *err, size_t errlen)
{
	uint64_t nonce;
	int r;

	struct stat st;

	/* Only a regular file is the mark: anything else planted there (a
	 * symlink, a FIFO) is not followed, and is removed below as a
	 * stale mark would be. */
	if (fstatat(s->tree.dirfd, ".tlogfs/clean", &st,
	    AT_SYMLINK_NOFOLLOW) == 0) {
		s->rc.was_clean = S_ISREG(st.st_mode);
		if (!s->rc.was_clean)
			tlog_ctx_log(&s->ctx, LOG_WARNING, ".tlogfs/clean: not a "
			    "regular file, so not a clean mark%s: the store is "
			    "checked as after a crash", s->ctx.ro ? "" :
			    "; removed");
		if (!s->ctx.ro && !s->rc.was_clean)
			(void)unlinkat(s->tree.dirfd, ".tlogfs/clean", 0);
	} else
		s->rc.was_clean = false;
	/* The checkpoint is the last clean close's: read now, and gone
	 * with the mark, so that no later open can take an older one for
	 * the last close's (checkpoint.h). */
	if (s->rc.was_clean)
		s->rc.ckpt = tlog_ckpt_load(&s->ctx, s->tree.dirfd,
		    read_mark_nonce(s, &nonce) ? &nonce : NULL);
	/* A directory at the name was never a checkpoint (nor trusted as
	 * one: tlog_ckpt_load said so); it stays, the open goes on. */
	if (!s->ctx.ro && unlinkat(s->tree.dirfd, TLOG_CKPT_PATH, 0) == -1 &&
	    errno != ENOENT && errno != EISDIR) {
		r = -errno;
		snprintf(err, errlen, "store %s: cannot remove %s: %s", s->path,
		    TLOG_CKPT_PATH, strerror(errno));
		return r;
	}
	/* A reader leaves the mark as it found it: it changes nothing the
	 * mark vouches for, and an unclean store stays unclean for the
	 * next writer's recovery. */
	if (!s->ctx.ro && s->rc.was_clean &&
	    unlinkat(s->tree.dirfd, ".tlogfs/clean", 0) == -1) {
		r = -errno;
		snprintf(err, errlen, "store %s is not writable: %s", s->path,
		    strerror(errno));
		return r;
	}
	/* The mark must not outlive a power cut while the store runs. */
	if (!s->ctx.ro && s->rc.was_clean &&
	    (r = tlog_fsync_dir(s->tree.dirfd, ".tlogfs")) != 0) {
		snprintf(err, errlen, "store %s: cannot sync .tlogfs: %s", s->path,
		    strerror(-r));
		return r;
	}
	if (!s->ctx.ro && !s->rc.was_clean &&
	    faccessat(s->tree.dirfd, ".", W_OK, 0) == -1) {
		r = -errno;
		snprintf(err, errlen, "store %s is not writable: %s", s->path,
		    strerror(errno));
		return r;
	}
	return 0;
}

/*
 * Room for the clean stop (doc/format.md, "reserve"): a close writes the
 * checkpoint and the clean mark, which a full disk would refuse, so that
 * the next open would recover as after a crash. The open sets aside
 * twice what the checkpoint takes now (a path, a count and up to 80
 * bytes a segment) plus 1 MiB, in .tlogfs/reserve; the close unlinks it
 * just before it writes them.
 */
#define RESERVE_BASE (1 << 20)
#define RESERVE_PART 280	/* a path of up to 255 bytes, and more */
#define RESERVE_SEG 80

static void
reserve_room(struct tlog_store *s)
{
	struct tlog_partition **v;
	uint64_t want = RESERVE_BASE;
	size_t n, i;
	int fd, e;

	if (tlog_store_partitions(s, &v, &n) == 0) {
		for (i = 0; i < n; i++) {
			want += 2 * (RESERVE_PART + RESERVE_SEG *
			    __atomic_load_n(&v[i]->nsegs, __ATOMIC_RELAXED));
			tlog_partition_put(v[i]);
		}
		free(v);
	}
	/* Whatever has the name (a crash's leftover, a stray) goes. */
	if (unlinkat(s->tree.dirfd, ".tlogfs/reserve", 0) == -1 &&
	    errno != ENOENT && errno != EISDIR)
		return;
	fd = openat(s->tree.dirfd, ".tlogfs/reserve", O_WRONLY | O_CREAT |
	    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		e = errno;
	else if ((e = posix_fallocate(fd, 0, (off_t)want)) != 0)
		(void)unlinkat(s->tree.dirfd, ".tlogfs/reserve", 0);
	if (fd != -1)
		close(fd);
	if (e != 0)
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot set aside "
		    "%" PRIu64 " bytes for a clean stop (.tlogfs/reserve): %s; "
		    "a stop on a full disk may leave no clean mark", s->path,
		    want, strerror(e));
}

int
tlog_store_open(const char *path, const struct tlog_store_opts *opts,
    struct tlog_store **out, char *err, size_t errlen)
{
	struct tlog_store *s;
	char boot[64], prev[64], line[80];
	int r, n;

	*out = NULL;
	if ((s = store_alloc(opts)) == NULL)
		return -ENOMEM;
	if ((s->path = strdup(path)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	s->tree.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->tree.dirfd == -1) {
		r = -errno;
		snprintf(err, errlen, "store %s: %s", path, strerror(errno));
		goto fail;
	}
	if ((r = store_private(s, err, errlen)) != 0 ||
	    (r = store_layout(s, err, errlen)) != 0 ||
	    (r = store_lock(s, err, errlen)) != 0)
		goto fail;
	store_root_attr_load(s);
	if ((r = store_clean_mark(s, err, errlen)) != 0 ||
	    (r = store_ident(s, err, errlen)) != 0)
		goto fail;
	boot_id(&s->ctx.opts, boot, sizeof(boot));
	last_boot(s, prev, sizeof(prev));
	s->rc.verify = !s->rc.was_clean && (boot[0] == '\0' ||
	    strcmp(boot, prev) != 0);
	if (s->rc.verify && prev[0] != '\0')
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s was not closed cleanly before "
		    "a reboot: checking unsealed segments against their data",
		    path);
	if ((r = own_dir(s, ".tlogfs/events", err, errlen)) != 0)
		goto fail;
	tlog_level_load_conf(&s->root, &s->ctx, s->tree.dirfd, "",
	    ".tlogfs/config");
	if ((r = store_load(s)) != 0 ||
	    (r = tlog_events_open(&s->ev, &s->reg, &s->rc)) != 0) {
		snprintf(err, errlen, "store %s: %s", path, strerror(-r));
		goto fail;
	}
	tlog_ckpt_free(s->rc.ckpt);
	s->rc.ckpt = NULL;
	/* Engine time starts no earlier than the newest stamp stored, so
	 * stamps keep increasing whatever the wall clock says. */
	tlog_clock_anchor(&s->ctx.clock, newest_stamp(s));
	born_now(s);
	if (!s->ctx.ro)
		reserve_room(s);
	/*
	 * Recovery's repairs (cuts, rewritten indexes, removed files) are
	 * on disk before the store takes an append; and after a crash,
	 * what the dead daemon wrote may still be only in the page cache.
	 * One syncfs does both, so that neither recovery nor the first
	 * fsync of each partition has to sync file by file.
	 */
	if (!s->ctx.ro && (!s->rc.was_clean || s->rc.repaired)) {
		if (syncfs(s->tree.dirfd) == 0)
			mark_synced(s);
		else
			tlog_ctx_log(&s->ctx, LOG_ERR, "store %s: syncfs: %s; recovery's "
			    "repairs may not be on disk", path,
			    strerror(errno));
	}
	/* Only now, with every repair on disk: a crash before this point
	 * checks again at the next open. */
	if (!s->ctx.ro && boot[0] != '\0' && strcmp(boot, prev) != 0) {
		n = snprintf(line, sizeof(line), "%s\n", boot);
		if ((r = tlog_write_atomic(s->tree.dirfd, ".tlogfs/boot", line,
		    (size_t)n)) != 0)
			tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot record the "
			    "boot id: %s", path, strerror(-r));
	}
	/* Nothing is scheduled yet: whoever opened the store attaches the
	 * reaper (tlog_reaper_start), which schedules everything then. */
	if (s->ctx.ro && s->rc.repaired)
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s is open read-only: "
		    "recovery's repairs are kept in memory, not written; the "
		    "next read-write open makes them", path);
	*out = s;
	return 0;
fail:
	store_free(s);
	return r;
}

int
tlog_store_close(struct tlog_store *s)
{
	struct tlog_partition **v = NULL;
	size_t n = 0, i;
	uint64_t nonce;
	char line[24];
	bool bad = false;
	int fd, r;

	if (s == NULL)
		return 0;
	/* A reader wrote nothing: nothing to make durable, no mark. */
	if (s->ctx.ro) {
		store_free(s);
		return 0;
	}
	tlog_store_unlink_pending(s, 0);
	sched_detach(s);
	/* The room set aside at open is for what follows (reserve_room). */
	(void)unlinkat(s->tree.dirfd, ".tlogfs/reserve", 0);
	tlog_store_flush_pending(s, 0);
	/* The partitions' syncs run with the tree unlocked: each partition
	 * is held by a reference. */
	if (tlog_store_partitions(s, &v, &n) != 0)
		bad = true;
	for (i = 0; i < n; i++)
		if (tlog_part_close(v[i]) != 0)
			bad = true;
	if (s->ev.p != NULL && tlog_part_close(s->ev.p) != 0)
		bad = true;
	/* The partitions' syncs leave the seal footers unsynced (segio.c:
	 * recovery can rebuild them), but the next open trusts what a
	 * clean close leaves: one syncfs puts the footers, and anything
	 * else of the store still dirty, on the disk before the mark. */
	if (!bad && syncfs(s->tree.dirfd) == -1) {
		tlog_ctx_log(&s->ctx, LOG_ERR, "store %s: cannot sync the "
		    "file system at close: %s", s->path, strerror(errno));
		bad = true;
	}
	/* What the next open needs of every segment, so that it reads
	 * no index (checkpoint.h); without it, the next open reads them
	 * all, and no older checkpoint may stay to be trusted. */
	nonce = ((uint64_t)arc4random() << 32) | arc4random();
	if (!bad && (r = tlog_ckpt_write(s->tree.dirfd, nonce, v, n,
	    s->ev.p)) != 0) {
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot write %s: "
		    "%s; the next open reads every segment's index", s->path,
		    TLOG_CKPT_PATH, strerror(-r));
		if (unlinkat(s->tree.dirfd, TLOG_CKPT_PATH, 0) == -1 &&
		    errno != ENOENT && errno != EISDIR)
			bad = true;
	}
	for (i = 0; i < n; i++)
		tlog_partition_put(v[i]);
	free(v);
	/* The mark says everything before it is on disk: only then. */
	/* Created afresh (O_EXCL never follows a link, never opens a FIFO or
	 * a device): whatever was planted at the name while the store ran
	 * is unlinked, never written through. */
	if (!bad && unlinkat(s->tree.dirfd, ".tlogfs/clean", 0) == -1 &&
	    errno != ENOENT) {
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot replace "
		    ".tlogfs/clean: %s; no clean mark: the next open "
		    "recovers as after a crash", s->path, strerror(errno));
		store_free(s);
		return -1;
	}
	fd = bad ? -1 : openat(s->tree.dirfd, ".tlogfs/clean", O_WRONLY |
	    O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd != -1) {
		n = (size_t)snprintf(line, sizeof(line), "%016" PRIx64 "\n",
		    nonce);
		errno = EIO;	/* a short write sets none */
		if (write(fd, line, n) != (ssize_t)n || fsync(fd) != 0)
			r = -errno;
		else
			r = tlog_fsync_dir(s->tree.dirfd, ".tlogfs");
		if (r != 0) {
			tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: cannot "
			    "write .tlogfs/clean: %s; the next open may "
			    "recover as after a crash", s->path, strerror(-r));
			bad = true;
		}
		close(fd);
	} else
		tlog_ctx_log(&s->ctx, LOG_WARNING, "store %s: not everything reached the "
		    "disk; no clean mark", s->path);
	store_free(s);
	return bad || fd == -1 ? -1 : 0;
}

/* ---- calls of tlog.h answered by the registry, queues and events ---- */

int
tlog_topic_create(struct tlog_store *s, const char *name,
    struct tlog_topic **out)
{
	return tlog_reg_topic_create(&s->reg, name, out);
}

struct tlog_topic *
tlog_topic_get(struct tlog_store *s, const char *name)
{
	return tlog_reg_topic_get(&s->reg, name);
}

int
tlog_topic_remove(struct tlog_store *s, const char *name)
{
	return tlog_reg_topic_remove(&s->reg, name);
}

int
tlog_topic_rename(struct tlog_store *s, const char *from, const char *to)
{
	return tlog_reg_topic_rename(&s->reg, from, to);
}

int
tlog_topic_list(struct tlog_store *s, struct tlog_dirent **out, size_t *n)
{
	return tlog_reg_topic_list(&s->reg, out, n);
}

int
tlog_store_unlink_pending(struct tlog_store *s, int max)
{
	return tlog_unlink_pending(&s->q, max);
}

int
tlog_store_flush_pending(struct tlog_store *s, int max)
{
	return tlog_flush_pending(&s->q, max);
}

size_t
tlog_store_unlink_wait(struct tlog_store *s, int timeout_ms)
{
	return tlog_queue_wait(&s->q, timeout_ms);
}

void
tlog_store_wakeup(struct tlog_store *s)
{
	tlog_queue_wakeup(&s->q);
}

size_t
tlog_store_unlink_queued(struct tlog_store *s)
{
	return tlog_queue_unlinks(&s->q);
}

struct tlog_partition *
tlog_store_events(struct tlog_store *s)
{
	if (s->ev.p != NULL)
		tlog_part_ref(s->ev.p);
	return s->ev.p;
}
