/*
 * storefiles.c - the store's own files and directory (doc/format.md,
 * "Store layout" and "A private store"): the directory's owner and mode,
 * .tlogfs/ and its format, the lock and the pid in it, the identity, the
 * boot id, the mount root's attr, the clean mark and the room set aside
 * for a clean stop. Each is opened without following a link, blocking on
 * a FIFO or opening a device; tlog_sf_open takes them in order.
 */
#include "config.h"

#include <sys/file.h>
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
#include "storefiles.h"

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

/* The lock: flock, and the writer's pid in it. */
static int
take_lock(struct tlog_store *s, char *err, size_t errlen)
{
	struct stat lst;
	char buf[32] = "";
	ssize_t n;

	/* A reader takes the lock shared: read-only opens, which change
	 * nothing, coexist; a writer is kept out while any of them runs,
	 * and keeps them out, so what a reader shows never moves. Never
	 * through a link, never a FIFO or device planted there. */
	if (tlog_not_regular(s->tree.dirfd, ".tlogfs/lock"))
		goto bad;
	s->lockfd = openat(s->tree.dirfd, ".tlogfs/lock", (s->ctx.ro ?
	    O_RDONLY : O_RDWR | O_CREAT) | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC, 0644);
	/* A second link could name a file outside the store. */
	if (s->lockfd != -1 && (fstat(s->lockfd, &lst) == -1 ||
	    !S_ISREG(lst.st_mode) || lst.st_nlink != 1)) {
		close(s->lockfd);
		s->lockfd = -1;
		goto bad;
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
bad:
	snprintf(err, errlen, "%s/.tlogfs/lock: not a regular file with one "
	    "link", s->path);
	return -EINVAL;
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

/* Whoever could write in the store's directory could plant files the
 * daemon trusts: one its group or others may write, or another user's,
 * is refused (doc/format.md, "A private store"). */
static int
private_dir(struct tlog_store *s, char *err, size_t errlen)
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
	s->root_owner = tlog_owner(st.st_uid, st.st_gid);
	return 0;
}

static int
write_root_attr(struct tlog_store *s, mode_t mode, uid_t uid, gid_t gid)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%04o %u %u\n", (unsigned)mode,
	    (unsigned)uid, (unsigned)gid);

	return tlog_write_atomic(s->tree.dirfd, ".tlogfs/attr", buf, (size_t)n);
}

/* The mount root's attr, then the directory made 0700. */
static void
root_attr_load(struct tlog_store *s)
{
	struct stat st;
	unsigned mode, uid, gid;
	char buf[64], nl;
	bool have = false;
	int r;

	if (tlog_ctx_read_file(&s->ctx, s->tree.dirfd, "", ".tlogfs/attr",
	    buf, sizeof(buf)) != -ENOENT) {
		/* (uid_t)-1 means "unchanged" to chown: never an owner. */
		have = sscanf(buf, "%o %u %u%c", &mode, &uid, &gid, &nl) == 4 &&
		    nl == '\n' && mode <= 07777 && uid != (unsigned)-1 &&
		    gid != (unsigned)-1;
		if (have) {
			s->root_mode = mode;
			s->root_owner = tlog_owner(uid, gid);
		} else
			tlog_ctx_log(&s->ctx, LOG_WARNING, ".tlogfs/attr: not "
			    "\"MODE UID GID\"; the mount root shows the "
			    "store's own (%04o %u %u)", (unsigned)s->root_mode,
			    (unsigned)tlog_owner_uid(s->root_owner),
			    (unsigned)tlog_owner_gid(s->root_owner));
	}
	if (s->ctx.ro)
		return;
	if (!have && (r = write_root_attr(s, s->root_mode,
	    tlog_owner_uid(s->root_owner),
	    tlog_owner_gid(s->root_owner))) != 0) {
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
	pthread_mutex_lock(&s->admin_lock);
	if (mode == (mode_t)-1)
		mode = s->root_mode;
	if (uid == (uid_t)-1)
		uid = tlog_owner_uid(s->root_owner);
	if (gid == (gid_t)-1)
		gid = tlog_owner_gid(s->root_owner);
	if ((r = write_root_attr(s, mode & 07777, uid, gid)) == 0) {
		__atomic_store_n(&s->root_mode, mode & 07777,
		    __ATOMIC_RELAXED);
		__atomic_store_n(&s->root_owner, tlog_owner(uid, gid),
		    __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&s->admin_lock);
	return r;
}

/* The first entry of the store's directory but lost+found (a file
 * system's own root has one), in buf; NULL if none (or unreadable: the
 * open fails further on). */
static const char *
first_entry(struct tlog_store *s, char *buf, size_t len)
{
	struct dirent *de;
	const char *r = NULL;
	DIR *d;
	int fd;

	if ((fd = openat(s->tree.dirfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return NULL;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, "lost+found") != 0) {
			strlcpy(buf, de->d_name, len);
			r = buf;
			break;
		}
	closedir(d);
	return r;
}

/* .tlogfs/format saying format v, atomically and durably. */
static int
write_format(struct tlog_store *s, int v)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "tlogfs %d\n", v);

	return tlog_write_atomic(s->tree.dirfd, ".tlogfs/format", buf,
	    (size_t)n);
}

/* .tlogfs/ and its format (made for a new store: s->created). */
static int
layout(struct tlog_store *s, char *err, size_t errlen)
{
	struct stat st;
	char buf[64], name[256], want[32];
	ssize_t n;
	int fd, v;

	if (!s->ctx.ro) {
		if (fstatat(s->tree.dirfd, ".tlogfs", &st,
		    AT_SYMLINK_NOFOLLOW) == -1 && errno == ENOENT &&
		    first_entry(s, name, sizeof(name)) != NULL) {
			snprintf(err, errlen, "%s is not a tlogfs store (no "
			    ".tlogfs) and not empty (it holds %s): refused; "
			    "give an empty directory for a new store", s->path,
			    name);
			return -ENOTEMPTY;
		}
		if (mkdirat(s->tree.dirfd, ".tlogfs", 0755) == 0)
			tlog_fsync_dir(s->tree.dirfd, ".");
		else if (errno != EEXIST) {
			snprintf(err, errlen, "%s/.tlogfs: %s", s->path,
			    strerror(errno));
			return -errno;
		}
	}
	if ((v = own_dir(s, ".tlogfs", err, errlen)) != 0)
		return v;
	/* Never through a link, a FIFO or a device: anything but a regular
	 * file is refused. */
	if (tlog_not_regular(s->tree.dirfd, ".tlogfs/format"))
		goto not_regular;
	fd = openat(s->tree.dirfd, ".tlogfs/format", O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	/* A reader creates nothing: the store must be one. */
	if (fd == -1 && errno == ENOENT && s->ctx.ro) {
		snprintf(err, errlen, "%s is not a tlogfs store (no "
		    ".tlogfs/format), and a read-only open creates nothing",
		    s->path);
		return -ENOENT;
	}
	if (fd == -1 && errno == ENOENT) {
		if ((v = write_format(s, TLOG_FORMAT_VERSION)) != 0) {
			snprintf(err, errlen, "%s: cannot write format: %s",
			    s->path, strerror(-v));
			return v;
		}
		s->created = true;
		s->format = TLOG_FORMAT_VERSION;
		return 0;
	}
	if (fd == -1 && errno != ELOOP) {
		snprintf(err, errlen, "%s/.tlogfs/format: %s", s->path,
		    strerror(errno));
		return -errno;
	}
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (fd != -1)
			close(fd);
		goto not_regular;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	/* Exactly "tlogfs 1" or "tlogfs 2" and a newline: anything more
	 * is not known. */
	for (s->format = TLOG_FORMAT_VERSION; s->format <= TLOG_FORMAT_ZSTD;
	    s->format++) {
		v = snprintf(want, sizeof(want), "tlogfs %d", s->format);
		if (strncmp(buf, want, (size_t)v) == 0 && (buf[v] == '\0' ||
		    strcmp(buf + v, "\n") == 0))
			return 0;
	}
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(err, errlen, "%s: unsupported store format \"%.20s\" "
	    "(.tlogfs/format; this tlogfs reads \"tlogfs %d\" and \"tlogfs "
	    "%d\")", s->path, buf, TLOG_FORMAT_VERSION, TLOG_FORMAT_ZSTD);
	return -EPROTO;
not_regular:
	snprintf(err, errlen, "%s/.tlogfs/format: not a regular file (a link, "
	    "a FIFO, a device...): the store is refused", s->path);
	return -EPROTO;
}

int
tlog_sf_format_zstd(struct tlog_store *s)
{
	int r;

	if (s->format >= TLOG_FORMAT_ZSTD)
		return 0;
	if ((r = write_format(s, TLOG_FORMAT_ZSTD)) != 0) {
		tlog_ctx_log_err(&s->ctx, "store %s: cannot write "
		    ".tlogfs/format: %s; nothing is compressed until it is "
		    "written", s->path, strerror(-r));
		return r;
	}
	tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s: format %d from now on "
	    "(compressed segments): a tlogfs from before compression refuses "
	    "it", s->path, TLOG_FORMAT_ZSTD);
	s->format = TLOG_FORMAT_ZSTD;
	return 0;
}

/*
 * The store's identity (format.md): read from .tlogfs/id, or made and
 * written there (atomically) by a read-write open when it is missing or
 * not 32 hex digits. A read-only open of a store without one has none.
 */
static int
ident(struct tlog_store *s, char *err, size_t errlen)
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
 * "" if unknown. prev: the one the last open recorded ("" if none).
 */
static void
boot_ids(struct tlog_store *s, char *boot, char *prev, size_t len)
{
	ssize_t n;
	int fd;

	boot[0] = '\0';
	if (s->ctx.opts.boot_id != NULL) {
		strlcpy(boot, s->ctx.opts.boot_id, len);
	} else if ((fd = open("/proc/sys/kernel/random/boot_id",
	    O_RDONLY | O_CLOEXEC)) != -1) {
		n = read(fd, boot, len - 1);
		boot[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	boot[strcspn(boot, "\n")] = '\0';
	(void)tlog_ctx_read_file(&s->ctx, s->tree.dirfd, "", ".tlogfs/boot",
	    prev, len);
	prev[strcspn(prev, "\n")] = '\0';
}

/* The nonce the clean mark holds (its close's checkpoint's); false if
 * none. */
static bool
read_mark_nonce(struct tlog_store *s, uint64_t *nonce)
{
	char buf[32];

	if (tlog_ctx_read_file(&s->ctx, s->tree.dirfd, "", ".tlogfs/clean",
	    buf, sizeof(buf)) != 17 || buf[16] != '\n')
		return false;
	return sscanf(buf, "%16" SCNx64, nonce) == 1;
}

/* Whether the last close was clean; takes the mark and its checkpoint. */
static int
clean_mark(struct tlog_store *s, char *err, size_t errlen)
{
	struct stat st;
	uint64_t nonce;
	bool found;
	int r;

	/* Only a regular file is the mark: anything else planted there (a
	 * symlink, a FIFO, an empty directory) is not followed, and is
	 * removed; the log line says if it could not be. */
	found = fstatat(s->tree.dirfd, ".tlogfs/clean", &st,
	    AT_SYMLINK_NOFOLLOW) == 0;
	s->rc.was_clean = found && S_ISREG(st.st_mode);
	if (found && !s->rc.was_clean) {
		r = s->ctx.ro ? 0 : unlinkat(s->tree.dirfd, ".tlogfs/clean",
		    S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0 ? 0 : errno;
		tlog_ctx_log(&s->ctx, LOG_WARNING, ".tlogfs/clean: not a "
		    "regular file, so not a clean mark%s%s: the store is "
		    "checked as after a crash", s->ctx.ro ? "" : r == 0 ?
		    "; removed" : "; cannot remove it: ",
		    r == 0 ? "" : strerror(r));
	}
	/* Read now: a clean close's checkpoint goes with the mark
	 * (checkpoint.h). */
	s->rc.ckpt = tlog_ckpt_load(&s->ctx, s->tree.dirfd, s->rc.was_clean,
	    s->rc.was_clean && read_mark_nonce(s, &nonce) ? &nonce : NULL);
	/* A reader leaves the mark as it found it: it changes nothing the
	 * mark vouches for, and an unclean store stays unclean for the
	 * next writer's recovery. */
	if (s->ctx.ro)
		return 0;
	/* A periodic checkpoint stays until the next replaces it, for a
	 * crash before then; a directory at the name (never a checkpoint,
	 * as tlog_ckpt_load said) stays too, and the open goes on. */
	if (!tlog_ckpt_periodic(s->rc.ckpt) &&
	    unlinkat(s->tree.dirfd, TLOG_CKPT_PATH, 0) == -1 &&
	    errno != ENOENT && errno != EISDIR) {
		r = -errno;
		snprintf(err, errlen, "store %s: cannot remove %s: %s", s->path,
		    TLOG_CKPT_PATH, strerror(errno));
		return r;
	}
	/* The mark goes; without one, the store must still be writable. */
	if (s->rc.was_clean ?
	    unlinkat(s->tree.dirfd, ".tlogfs/clean", 0) == -1 :
	    faccessat(s->tree.dirfd, ".", W_OK, 0) == -1) {
		r = -errno;
		snprintf(err, errlen, "store %s is not writable: %s", s->path,
		    strerror(errno));
		return r;
	}
	/* The mark must not outlive a power cut while the store runs. */
	if (s->rc.was_clean &&
	    (r = tlog_fsync_dir(s->tree.dirfd, ".tlogfs")) != 0) {
		snprintf(err, errlen, "store %s: cannot sync .tlogfs: %s", s->path,
		    strerror(-r));
		return r;
	}
	return 0;
}

int
tlog_sf_open(struct tlog_store *s, char *boot, char *prev, size_t len,
    char *err, size_t errlen)
{
	int r;

	if ((r = private_dir(s, err, errlen)) != 0 ||
	    (r = layout(s, err, errlen)) != 0 ||
	    (r = take_lock(s, err, errlen)) != 0)
		return r;
	root_attr_load(s);
	if ((r = clean_mark(s, err, errlen)) != 0 ||
	    (r = ident(s, err, errlen)) != 0)
		return r;
	boot_ids(s, boot, prev, len);
	s->rc.verify = !s->rc.was_clean && (boot[0] == '\0' ||
	    strcmp(boot, prev) != 0);
	if (s->rc.verify && prev[0] != '\0')
		tlog_ctx_log(&s->ctx, LOG_NOTICE, "store %s was not closed "
		    "cleanly before a reboot: checking unsealed segments "
		    "against their data", s->path);
	return own_dir(s, ".tlogfs/events", err, errlen);
}

void
tlog_sf_reserve(struct tlog_store *s, uint64_t want)
{
	int fd, e;

	/* Whatever has the name (a crash's leftover, a stray, an empty
	 * directory) goes; what cannot go makes the open below fail, and
	 * that is said. */
	if (unlinkat(s->tree.dirfd, ".tlogfs/reserve", 0) == -1 &&
	    errno == EISDIR)
		(void)unlinkat(s->tree.dirfd, ".tlogfs/reserve", AT_REMOVEDIR);
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

