/*
 * util.c - the small pieces of util.h every engine file uses, and the
 * names of triggers and rules (tlog.h). Nothing here knows a store.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/openat2.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static uint32_t crc_table[256];
static uint32_t (*crc_fn)(uint32_t, const unsigned char *, size_t);
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static uint32_t
crc_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * The SSE4.2 crc32 instruction computes this very CRC (Castagnoli,
 * reflected), 8 bytes at a time: the append path checksums every byte it
 * writes, and this keeps that far below the cost of the write itself.
 * One instruction waits for the one before (3 cycles), so long buffers
 * run three streams over three consecutive blocks and join them: the
 * CRC register is linear, so the state after A then B is the state after
 * A shifted over len(B) zero bytes (a table lookup) xor B's from zero.
 */
#define CRC_LONG 8192
#define CRC_SHORT 256
static uint32_t crc_long[4][256], crc_short[4][256];

static uint32_t
crc_shift(uint32_t t[4][256], uint32_t crc)
{
	return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^
	    t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
}

/* The tables of "append len zero bytes", from the images of the 32
 * one-bit states. */
static void
crc_zeros(uint32_t t[4][256], size_t len)
{
	static const unsigned char zero[CRC_LONG];
	uint32_t basis[32], v;
	int i, k, n, b;

	for (i = 0; i < 32; i++)
		basis[i] = crc_sw(1U << i, zero, len);
	for (k = 0; k < 4; k++)
		for (n = 0; n < 256; n++) {
			for (v = 0, b = 0; b < 8; b++)
				if (n >> b & 1)
					v ^= basis[8 * k + b];
			t[k][n] = v;
		}
}

__attribute__((target("sse4.2")))
static uint64_t
crc_hw_3way(uint64_t c0, const unsigned char **pp, size_t *lenp,
    size_t blk, uint32_t t[4][256])
{
	const unsigned char *p = *pp, *end;
	uint64_t c1, c2, v;

	while (*lenp >= 3 * blk) {
		c1 = c2 = 0;
		for (end = p + blk; p < end; p += 8) {
			memcpy(&v, p, 8);
			c0 = __builtin_ia32_crc32di(c0, v);
			memcpy(&v, p + blk, 8);
			c1 = __builtin_ia32_crc32di(c1, v);
			memcpy(&v, p + 2 * blk, 8);
			c2 = __builtin_ia32_crc32di(c2, v);
		}
		c0 = crc_shift(t, (uint32_t)c0) ^ c1;
		c0 = crc_shift(t, (uint32_t)c0) ^ c2;
		p += 2 * blk;
		*lenp -= 3 * blk;
	}
	*pp = p;
	return c0;
}

__attribute__((target("sse4.2")))
static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc, v;

	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	c = crc_hw_3way(c, &p, &len, CRC_LONG, crc_long);
	c = crc_hw_3way(c, &p, &len, CRC_SHORT, crc_short);
	while (len >= 8) {
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

static void
crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78U : c >> 1;
		crc_table[i] = c;
	}
	crc_fn = crc_sw;
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2")) {
		crc_zeros(crc_long, CRC_LONG);
		crc_zeros(crc_short, CRC_SHORT);
		crc_fn = crc_hw;
	}
#endif
}

uint32_t
tlog_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return ~crc_fn(~crc, buf, len);
}

uint32_t
tlog_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return ~crc_sw(~crc, buf, len);
}

int
tlog_fsync_dir(int dirfd, const char *path)
{
	int fd, r = 0;

	if (strcmp(path, ".") == 0)
		fd = dirfd;
	else if ((fd = tlog_open_beneath(dirfd, path,
	    O_RDONLY | O_DIRECTORY)) < 0)
		return fd;
	if (fsync(fd) == -1 && errno != EINVAL)
		r = -errno;
	if (fd != dirfd)
		close(fd);
	return r;
}

int
tlog_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = pwrite(fd, p, len, off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOSPC;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

void *
tlog_grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t nc;
	void *nv;

	if (n < *cap)
		return v;
	nc = *cap ? *cap * 2 : first;
	if ((nv = reallocarray(v, nc, size)) != NULL)
		*cap = nc;
	return nv;
}

int
tlog_write_file_atomic(int dirfd, const char *path, const void *buf,
    size_t len, bool sync)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	const char *slash;
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* A fresh file: whatever has the name (a crash's leftover, or a
	 * FIFO or link planted there) is unlinked, never opened. */
	if (unlinkat(dirfd, tmp, 0) == -1 && errno != ENOENT)
		return -errno;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0644);
	if (fd == -1)
		return -errno;
	r = tlog_pwrite_all(fd, buf, len, 0);
	if (r == 0 && sync && fsync(fd) == -1)
		r = -errno;
	if (close(fd) == -1 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, path) == -1)
		r = -errno;
	if (r != 0) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	if (!sync)
		return 0;
	/* The rename is durable only once its directory is synced. */
	if ((slash = strrchr(path, '/')) == NULL)
		return tlog_fsync_dir(dirfd, ".");
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	return tlog_fsync_dir(dirfd, parent);
}

int
tlog_write_atomic(int dirfd, const char *path, const void *buf, size_t len)
{
	return tlog_write_file_atomic(dirfd, path, buf, len, true);
}

bool
tlog_not_regular(int dirfd, const char *path)
{
	struct stat st;

	return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode);
}

/* An identity's file: read without following a link, and without
 * blocking on a FIFO or opening a device planted there. */
int
tlog_id_read(int dirfd, const char *path, char id[TLOG_STORE_ID_LEN + 1])
{
	char buf[TLOG_STORE_ID_LEN + 2];
	ssize_t n;
	int fd;

	if (tlog_not_regular(dirfd, path))
		return -EINVAL;
	if ((fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return errno == ENOENT ? -ENOENT : -EINVAL;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n != TLOG_STORE_ID_LEN + 1 || buf[TLOG_STORE_ID_LEN] != '\n' ||
	    strspn(buf, "0123456789abcdef") != TLOG_STORE_ID_LEN)
		return -EINVAL;
	memcpy(id, buf, TLOG_STORE_ID_LEN);
	id[TLOG_STORE_ID_LEN] = '\0';
	return 0;
}

void
tlog_id_new(char id[TLOG_STORE_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[TLOG_STORE_ID_LEN / 2];
	size_t i;

	arc4random_buf(raw, sizeof(raw));
	for (i = 0; i < sizeof(raw); i++) {
		id[2 * i] = hex[raw[i] >> 4];
		id[2 * i + 1] = hex[raw[i] & 15];
	}
	id[TLOG_STORE_ID_LEN] = '\0';
}

int
tlog_id_make(int dirfd, const char *path, char id[TLOG_STORE_ID_LEN + 1])
{
	char buf[TLOG_STORE_ID_LEN + 1];
	int r;

	tlog_id_new(id);
	memcpy(buf, id, TLOG_STORE_ID_LEN);
	buf[TLOG_STORE_ID_LEN] = '\n';
	if ((r = tlog_write_atomic(dirfd, path, buf, sizeof(buf))) != 0)
		id[0] = '\0';
	return r;
}

/*
 * openat(2) that never follows a symbolic link and never leaves dirfd:
 * openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has
 * it (5.6 and later) and lets us call it, else one component at a time
 * with O_NOFOLLOW.
 */
int
tlog_open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how;
	char comp[TLOG_NAME_MAX + 1];
	const char *c = path, *slash;
	int fd, next;
	size_t len;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW);
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd >= 0)
		return fd;
	/* ENOSYS: a kernel before 5.6; EPERM: a seccomp profile (a
	 * container's) written before openat2 existed. Either way, walk the
	 * intermediate directories by hand. */
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	fd = dirfd;
	while ((slash = strchr(c, '/')) != NULL) {
		len = (size_t)(slash - c);
		if (len == 0 || len >= sizeof(comp) ||
		    (len == 2 && c[0] == '.' && c[1] == '.')) {
			next = -EINVAL;
			goto fail;
		}
		memcpy(comp, c, len);
		comp[len] = '\0';
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next == -1) {
			next = -errno;
			goto fail;
		}
		if (fd != dirfd)
			close(fd);
		fd = next;
		c = slash + 1;
	}
	if (strcmp(c, "..") == 0) {
		next = -EINVAL;
		goto fail;
	}
	next = openat(fd, c, flags | O_CLOEXEC | O_NOFOLLOW);
	if (next == -1)
		next = -errno;
fail:
	if (fd != dirfd)
		close(fd);
	return next;
}

int
tlog_name_check(const char *name)
{
	size_t n = 0;
	const char *c;

	if (name == NULL || *name == '\0' || *name == '.')
		return -EINVAL;
	for (c = name; *c; c++, n++) {
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' ||
		    *c == '-'))
			return -EINVAL;
	}
	if (n > TLOG_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

void
tlog_segname_format(uint64_t base, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%020" PRIu64 "%s", base, ext);
}

bool
tlog_segname_parse(const char *name, const char *ext, uint64_t *base)
{
	uint64_t v;

	/* 20 digits: tlog_parse_offset would also take 19 and a newline. */
	if (strlen(name) != 20 + strlen(ext) || strcmp(name + 20, ext) != 0 ||
	    name[19] == '\n' || !tlog_parse_offset(name, 20, &v) ||
	    v > TLOG_OFFSET_MAX)
		return false;
	*base = v;
	return true;
}

bool
tlog_parse_offset(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len > 0 && s[len - 1] == '\n')
		len--;
	if (len == 0 || len > 20)
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* Whoever owns a directory, or may write it (but for a sticky one's
 * entries owned by root or us), can replace what a path names in it. */
static bool
owner_ok(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/*
 * Walks path as the kernel would, one component at a time, following
 * every symbolic link itself (the links inside a link's target too), so
 * that each link met is judged by its owner, and each directory the path
 * passes through by who could rename what is in it (as sshd's
 * StrictModes): the check then holds when the path is used, since
 * nobody else can change what it names. `done` is the real path walked
 * so far, `todo` what is left to walk.
 */
bool
tlog_path_trusted(const char *path, char *err, size_t errlen)
{
	char done[PATH_MAX], todo[PATH_MAX], link[PATH_MAX], next[PATH_MAX];
	char *comp, *rest;
	struct stat st;
	size_t dlen;
	ssize_t n;
	int links = 0;

	if (strlcpy(todo, path, sizeof(todo)) >= sizeof(todo))
		return true;	/* open(2) says ENAMETOOLONG */
	if (path[0] == '/')
		strlcpy(done, "/", sizeof(done));
	else if (getcwd(done, sizeof(done)) == NULL)
		return true;	/* open(2) says why */
	while (todo[0] != '\0') {
		comp = todo;
		while (*comp == '/')
			comp++;
		if ((rest = strchr(comp, '/')) != NULL)
			*rest++ = '\0';
		else
			rest = comp + strlen(comp);
		dlen = strlen(done);
		if (*comp == '\0' || strcmp(comp, ".") == 0) {
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		if (strcmp(comp, "..") == 0) {
			while (dlen > 1 && done[dlen - 1] != '/')
				dlen--;
			done[dlen > 1 ? dlen - 1 : 1] = '\0';
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		if (snprintf(next, sizeof(next), "%s%s%s", done,
		    dlen > 1 ? "/" : "", comp) >= (int)sizeof(next))
			return true;
		if (lstat(done, &st) == 0 && (!owner_ok(st.st_uid) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		    !(st.st_mode & S_ISVTX)))) {
			snprintf(err, errlen, "%s belongs to uid %u or others "
			    "may write it (mode %04o): they could put anything "
			    "in place of %s; refused", done,
			    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			    comp);
			return false;
		}
		if (lstat(next, &st) == -1)
			return true;	/* open(2) says why */
		if (!S_ISLNK(st.st_mode)) {
			if (!owner_ok(st.st_uid)) {
				/* In a sticky directory, its owner could
				 * rename it away. */
				snprintf(err, errlen, "%s belongs to uid %u, "
				    "who could put anything in its place; "
				    "refused", next, (unsigned)st.st_uid);
				return false;
			}
			strlcpy(done, next, sizeof(done));
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			snprintf(err, errlen, "%s is a symbolic link owned by "
			    "uid %u, who could point it anywhere; refused "
			    "(give the real path)", next, (unsigned)st.st_uid);
			return false;
		}
		if (++links > 40 ||
		    (n = readlink(next, link, sizeof(link) - 1)) == -1)
			return true;	/* open(2) says ELOOP, or why */
		link[n] = '\0';
		/* The link's target, then what followed it. */
		if (snprintf(next, sizeof(next), "%s%s%s", link,
		    *rest != '\0' ? "/" : "", rest) >= (int)sizeof(next))
			return true;
		strlcpy(todo, next, sizeof(todo));
		if (link[0] == '/')
			strlcpy(done, "/", sizeof(done));
	}
	return true;
}

uint64_t
tlog_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void
tlog_cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

void
tlog_deadline(int64_t ms, struct timespec *ts)
{
	uint64_t ns;

	/* Waiters check again when they wake: an hour at most. */
	if (ms < 0)
		ms = 0;
	if (ms > 3600000)
		ms = 3600000;
	ns = tlog_mono_ns() + (uint64_t)ms * 1000000ULL;

	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
}

void
tlog_sink_vlog(const struct tlog_sink *k, int prio, const char *fmt,
    va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (k != NULL && k->fn != NULL)
		k->fn(k->arg, prio, msg);
	else
		fprintf(stderr, "tlogfs: %s\n", msg);
}

void
tlog_sink_log(const struct tlog_sink *k, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tlog_sink_vlog(k, prio, fmt, ap);
	va_end(ap);
}

const char *
tlog_trigger_name(enum tlog_trigger t)
{
	static const char *names[TLOG_NTRIGGERS] = {
		"none", "size", "time", "idle", "manual", "capacity",
		"retention", "recovery"
	};

	return (unsigned)t < TLOG_NTRIGGERS ? names[t] : "unknown";
}

const char *
tlog_rule_name(enum tlog_rule r)
{
	static const char *names[TLOG_NRULES] = { "time", "size", "manual",
	    "consumed", "free", "corrupt" };

	return (unsigned)r < TLOG_NRULES ? names[r] : "unknown";
}
