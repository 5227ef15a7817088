/*
 * cursor.c - a partition's cursors (doc/tlogfs.8, EXTENDED ATTRIBUTES):
 * named, durable positions of its consumers. They live in the
 * partition's .cursors file (doc/format.md, "Store layout"), replaced
 * atomically and synced before a commit returns, and in memory as one
 * sorted array that a commit replaces whole under the partition lock;
 * p->ncursors and p->cursor_floor sum them up for the rules of
 * retention.c, which reads that summary rather than calling here.
 *
 * A commit is its partition's disk work (tlog_segdir_io_begin, segment.h),
 * so two commits never race to write the file;
 * readers take only p->sd.lock, briefly, and never wait behind a
 * commit's fsync.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "cursor.h"
#include "util.h"

#define CURSORS_MAGIC "tlogfs-cursors 1\n"
#define CURSORS_BAD ".cursors.bad"
#define CURSORS_MAX_FILE (16 << 20)	/* a larger file is damaged */

/* Whether name is a valid cursor name (1-64 of [A-Za-z0-9._-]). */
static bool
name_ok(const char *name)
{
	size_t i;

	for (i = 0; name[i] != '\0'; i++)
		if (i >= TLOG_CURSOR_NAME_MAX || !(isalnum((unsigned char)
		    name[i]) || name[i] == '.' || name[i] == '_' ||
		    name[i] == '-'))
			return false;
	return i > 0;
}

/* A value as printable text for a log line (at most 32 bytes of it). */
static void
printable(const char *s, size_t len, char *buf, size_t cap)
{
	size_t i, n = len < 32 ? len : 32;

	if (n >= cap)
		n = cap - 1;
	for (i = 0; i < n; i++)
		buf[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	buf[n] = '\0';
}

static int
cursor_cmp(const void *a, const void *b)
{
	const struct tlog_cursor *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* The index of name in v (sorted), or -1. */
static ssize_t
find(const struct tlog_cursor *v, size_t n, const char *name)
{
	struct tlog_cursor key, *c;

	if (n == 0 || strlen(name) > TLOG_CURSOR_NAME_MAX)
		return -1;	/* v may be NULL: not for bsearch */
	strlcpy(key.name, name, sizeof(key.name));
	c = bsearch(&key, v, n, sizeof(*v), cursor_cmp);
	return c == NULL ? -1 : c - v;
}

/* Puts v (n cursors, malloc'd) in place of p's, and returns the old
 * array; p->sd.lock held. */
static struct tlog_cursor *
publish_locked(struct tlog_partition *p, struct tlog_cursor *v, size_t n)
{
	struct tlog_cursor *old = p->cursors;
	uint64_t floor = UINT64_MAX;
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].offset < floor)
			floor = v[i].offset;
	p->cursors = v;
	/* Atomic: the metrics skip cursorless partitions with no lock. */
	__atomic_store_n(&p->ncursors, (uint32_t)n, __ATOMIC_RELAXED);
	p->cursor_floor = floor;
	return old;
}

/* A copy of p's cursors with room for one more; NULL if out of memory.
 * *end is p's end offset. */
static struct tlog_cursor *
copy_cursors(struct tlog_partition *p, size_t *n, uint64_t *end)
{
	struct tlog_cursor *v;

	pthread_mutex_lock(&p->sd.lock);
	*n = p->ncursors;
	*end = p->next_offset;
	if ((v = reallocarray(NULL, *n + 1, sizeof(*v))) != NULL &&
	    *n > 0)
		memcpy(v, p->cursors, *n * sizeof(*v));
	pthread_mutex_unlock(&p->sd.lock);
	return v;
}

/*
 * Writes v as p's .cursors file: a header line, one "NAME OFFSET" line
 * per cursor, and a line with the CRC-32C of everything before it. No
 * cursor left: the file goes. Durable when this returns 0.
 */
static int
persist(struct tlog_partition *p, const struct tlog_cursor *v, size_t n)
{
	char *buf;
	size_t cap = sizeof(CURSORS_MAGIC) + 32 +
	    n * (TLOG_CURSOR_NAME_MAX + 23), len, i;
	int dfd, r;

	if ((dfd = tlog_level_dir(&p->lv)) < 0)
		return dfd;
	if (n == 0) {
		r = 0;
		if (unlinkat(dfd, TLOG_CURSORS_FILE, 0) == -1)
			r = errno == ENOENT ? 0 : -errno;
		if (r == 0)
			r = tlog_fsync_dir(dfd, ".");
		close(dfd);
		return r;
	}
	if ((buf = malloc(cap)) == NULL) {
		close(dfd);
		return -ENOMEM;
	}
	len = strlcpy(buf, CURSORS_MAGIC, cap);
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s %" PRIu64
		    "\n", v[i].name, v[i].offset);
	len += (size_t)snprintf(buf + len, cap - len, "crc32c %08x\n",
	    tlog_crc32c(0, buf, len));
	r = tlog_write_atomic(dfd, TLOG_CURSORS_FILE, buf, len);
	free(buf);
	close(dfd);
	return r;
}

/*
 * Applies a change: v (n cursors, sorted) becomes p's on disk, then in
 * memory (taken if 0). p's disk work begun.
 */
static int
commit(struct tlog_partition *p, struct tlog_cursor *v, size_t n)
{
	struct tlog_cursor *old;
	char where[2 * TLOG_NAME_MAX + 2];
	int r;

	if ((r = persist(p, v, n)) != 0) {
		if (r == -ENOENT)
			return r;	/* removed meanwhile */
		tlog_level_where(&p->lv, where, sizeof(where));
		tlog_ctx_log_err(p->ctx, "%s: cannot save the cursors: %s",
		    where, strerror(-r));
		return r;
	}
	pthread_mutex_lock(&p->sd.lock);
	old = publish_locked(p, v, n);
	pthread_mutex_unlock(&p->sd.lock);
	free(old);
	return 0;
}

int
tlog_partition_cursor_set(struct tlog_partition *p, const char *name,
    const char *value, size_t len)
{
	struct tlog_cursor *v = NULL;
	char shown[40], where[2 * TLOG_NAME_MAX + 2];
	uint64_t off, end;
	size_t n;
	ssize_t i;
	bool ok;
	int r;

	if (p->ctx->ro)
		return -EROFS;
	tlog_level_where(&p->lv, where, sizeof(where));
	if (!name_ok(name)) {
		printable(name, strlen(name), shown, sizeof(shown));
		tlog_ctx_log(p->ctx, LOG_WARNING, "%s: cursor name \"%s\" "
		    "refused: 1-%d bytes of A-Za-z0-9._- accepted", where,
		    shown, TLOG_CURSOR_NAME_MAX);
		return -EINVAL;
	}
	ok = tlog_parse_offset(value, len, &off);
	tlog_segdir_io_begin(&p->sd);
	if (tlog_level_dead(&p->lv)) {
		r = -ENOENT;
		goto out;
	}
	if ((v = copy_cursors(p, &n, &end)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if (!ok || off > end) {
		printable(value, len, shown, sizeof(shown));
		tlog_ctx_log(p->ctx, LOG_WARNING, "%s: cursor %s: value \"%s\" "
		    "refused: a decimal offset 0..%" PRIu64 " (the end "
		    "offset) accepted", where, name, shown, end);
		r = -EINVAL;
		goto out;
	}
	if ((i = find(v, n, name)) < 0 && n >= TLOG_CURSORS_MAX) {
		tlog_ctx_log(p->ctx, LOG_WARNING, "%s: cursor %s refused: the "
		    "partition has %d cursors, the most it keeps (drop one "
		    "first)", where, name, TLOG_CURSORS_MAX);
		r = -ENOSPC;
		goto out;
	}
	if (i < 0) {
		i = (ssize_t)n++;
		strlcpy(v[i].name, name, sizeof(v[i].name));
		v[i].offset = off;
		qsort(v, n, sizeof(*v), cursor_cmp);
	} else
		v[i].offset = off;
	r = commit(p, v, n);
out:
	tlog_segdir_io_end(&p->sd);
	if (r == 0)	/* the consumed rule follows the slowest cursor */
		tlog_part_resched(p);
	else
		free(v);
	return r;
}

int
tlog_partition_cursor_remove(struct tlog_partition *p, const char *name)
{
	struct tlog_cursor *v;
	uint64_t end;
	size_t n;
	ssize_t i;
	int r;

	if (p->ctx->ro)
		return -EROFS;
	tlog_segdir_io_begin(&p->sd);
	if ((v = copy_cursors(p, &n, &end)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((i = find(v, n, name)) < 0) {
		r = -ENODATA;
		goto out;
	}
	memmove(&v[i], &v[i + 1], (n - (size_t)i - 1) * sizeof(*v));
	r = commit(p, v, n - 1);
out:
	tlog_segdir_io_end(&p->sd);
	if (r == 0)
		tlog_part_resched(p);
	else
		free(v);
	return r;
}

int
tlog_partition_cursor_get(struct tlog_partition *p, const char *name,
    uint64_t *offset)
{
	ssize_t i;
	int r = -ENODATA;

	pthread_mutex_lock(&p->sd.lock);
	if ((i = find(p->cursors, p->ncursors, name)) >= 0) {
		*offset = p->cursors[i].offset;
		r = 0;
	}
	pthread_mutex_unlock(&p->sd.lock);
	return r;
}

int
tlog_partition_cursor_lag(struct tlog_partition *p, const char *name,
    uint64_t *lag)
{
	struct tlog_segment *first;
	uint64_t at, start;
	ssize_t i;
	int r = -ENODATA;

	pthread_mutex_lock(&p->sd.lock);
	if ((i = find(p->cursors, p->ncursors, name)) >= 0) {
		first = TAILQ_FIRST(&p->segs);
		start = first != NULL ? first->base : p->next_offset;
		at = p->cursors[i].offset;
		if (at < start)
			at = start;
		*lag = p->next_offset > at ? p->next_offset - at : 0;
		r = 0;
	}
	pthread_mutex_unlock(&p->sd.lock);
	return r;
}

int
tlog_partition_cursor_list(struct tlog_partition *p, struct tlog_cursor **out,
    size_t *n)
{
	uint64_t end;

	if ((*out = copy_cursors(p, n, &end)) == NULL)
		return -ENOMEM;
	return 0;
}

/* Parses a .cursors file's text into a sorted, malloc'd array; NULL
 * with *why set if it is damaged (*why is left alone otherwise). */
static struct tlog_cursor *
parse_file(char *buf, size_t len, size_t *nout, const char **why)
{
	struct tlog_cursor *v = NULL, *nv;
	char *line, *next, *sp, *crcline;
	size_t n = 0, i, ml = strlen(CURSORS_MAGIC);
	unsigned int crc;

	if (len < ml || memcmp(buf, CURSORS_MAGIC, ml) != 0) {
		*why = "no header";
		return NULL;
	}
	/* The last line is the checksum of all before it. */
	if (buf[len - 1] != '\n') {
		*why = "torn";
		return NULL;
	}
	buf[len - 1] = '\0';
	if ((crcline = strrchr(buf, '\n')) == NULL ||
	    (size_t)(crcline + 1 - buf) < ml ||
	    sscanf(crcline + 1, "crc32c %8x", &crc) != 1 ||
	    strlen(crcline + 1) != 15) {
		*why = "no checksum";
		return NULL;
	}
	if (tlog_crc32c(0, buf, (size_t)(crcline + 1 - buf)) != crc) {
		*why = "checksum mismatch";
		return NULL;
	}
	*crcline = '\0';
	for (line = buf + ml; line < crcline; line = next) {
		/* The last entry ends at crcline, cut already. */
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		else
			next = crcline;
		/* Small files: grown one entry at a time. */
		if ((nv = reallocarray(v, n + 1, sizeof(*v))) == NULL) {
			*why = "out of memory";
			goto fail;
		}
		v = nv;
		if ((sp = strchr(line, ' ')) == NULL)
			goto bad_line;
		*sp = '\0';
		if (!name_ok(line) ||
		    !tlog_parse_offset(sp + 1, strlen(sp + 1), &v[n].offset) ||
		    v[n].offset > TLOG_OFFSET_MAX)
			goto bad_line;
		strlcpy(v[n].name, line, sizeof(v[n].name));
		n++;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cursor_cmp);
	for (i = 1; i < n; i++)
		if (strcmp(v[i - 1].name, v[i].name) == 0) {
			*why = "a name twice";
			goto fail;
		}
	*nout = n;
	return v;
bad_line:
	*why = "bad line";
fail:
	free(v);
	return NULL;
}

void
tlog_cursor_load(struct tlog_partition *p, int dfd, const char *where,
    uint64_t *max)
{
	struct tlog_cursor *v = NULL;
	struct stat st;
	const char *why = NULL;
	char *buf = NULL;
	size_t n = 0, i;
	ssize_t got;
	int fd;

	*max = 0;
	fd = tlog_ctx_open_file(p->ctx, dfd, where, TLOG_CURSORS_FILE,
	    O_RDONLY);
	if (fd < 0) {
		if (fd != -ENOENT)
			why = strerror(-fd);
		goto out;
	}
	if (fstat(fd, &st) == -1 || st.st_size > CURSORS_MAX_FILE)
		why = "larger than a cursor list";
	else if ((buf = malloc((size_t)st.st_size + 1)) == NULL)
		why = "out of memory";
	else if ((got = pread(fd, buf, (size_t)st.st_size, 0)) !=
	    (ssize_t)st.st_size)
		why = got == -1 ? strerror(errno) : "short read";
	else {
		buf[got] = '\0';
		v = parse_file(buf, (size_t)got, &n, &why);
	}
	close(fd);
out:
	free(buf);
	if (why != NULL) {
		/* An offset is never guessed: no cursor is safer than a
		 * wrong one (the consumed rule then deletes nothing). */
		if (!p->ctx->ro && renameat(dfd, TLOG_CURSORS_FILE, dfd,
		    CURSORS_BAD) == 0)
			tlog_fsync_dir(dfd, ".");
		tlog_ctx_log(p->ctx, LOG_ERR, "%s/%s: damaged (%s): the "
		    "partition has no cursors; the file is %s", where,
		    TLOG_CURSORS_FILE, why, p->ctx->ro ? "left in place" :
		    "kept as " CURSORS_BAD);
		return;
	}
	for (i = 0; i < n; i++)
		if (v[i].offset > *max)
			*max = v[i].offset;
	free(publish_locked(p, v, n));
}

/* ---- the partition's identity ---- */

/*
 * The .id file: "HEX INO\n", HEX the identity, INO the inode number of
 * the directory it was made in (doc/format.md). 0 with the identity;
 * -ENOENT: none; -ESTALE: made in another directory (a copy of another
 * partition's, or a link to its file); -EINVAL: malformed; -EPERM: not a
 * regular file (a stray: never followed, never replaced).
 */
static int
part_id_read(int dfd, ino_t dino, char id[TLOG_STORE_ID_LEN + 1])
{
	char buf[TLOG_STORE_ID_LEN + 24], *end;
	unsigned long long ino;
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = openat(dfd, TLOG_PART_ID_FILE, O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC)) == -1)
		return errno == ENOENT ? -ENOENT : -EPERM;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < TLOG_STORE_ID_LEN + 3 || buf[n - 1] != '\n' ||
	    strspn(buf, "0123456789abcdef") != TLOG_STORE_ID_LEN ||
	    buf[TLOG_STORE_ID_LEN] != ' ')
		return -EINVAL;
	buf[n - 1] = '\0';
	errno = 0;
	ino = strtoull(buf + TLOG_STORE_ID_LEN + 1, &end, 10);
	if (errno != 0 || *end != '\0' ||
	    !isdigit((unsigned char)buf[TLOG_STORE_ID_LEN + 1]))
		return -EINVAL;
	if (ino != (unsigned long long)dino)
		return -ESTALE;
	memcpy(id, buf, TLOG_STORE_ID_LEN);
	id[TLOG_STORE_ID_LEN] = '\0';
	return 0;
}

/* p has no identity, and says it once: p->id is "". -ENODATA. */
static int
none(struct tlog_partition *p)
{
	char *v;

	if ((v = strdup("")) == NULL)
		return -ENOMEM;
	__atomic_store_n(&p->id, v, __ATOMIC_RELEASE);
	return -ENODATA;
}

/* Reads p's identity, or makes it (read-write), into p->id; p's disk
 * work begun. -ENODATA: none; -ENOENT: removed. */
static int
part_id_load(struct tlog_partition *p)
{
	char id[TLOG_STORE_ID_LEN + 1], buf[TLOG_STORE_ID_LEN + 24];
	char where[2 * TLOG_NAME_MAX + 2], *v;
	struct stat st;
	int dfd, r;

	if (p->id != NULL)
		return *p->id == '\0' ? -ENODATA : 0;
	if ((dfd = tlog_level_dir(&p->lv)) < 0)
		return dfd;
	if (fstat(dfd, &st) == -1) {
		r = -errno;
		goto out;
	}
	r = part_id_read(dfd, st.st_ino, id);
	tlog_level_where(&p->lv, where, sizeof(where));
	if (r == -EPERM) {
		tlog_ctx_log(p->ctx, LOG_WARNING, "%s/%s: not a regular file; "
		    "left alone, and the partition has no identity", where,
		    TLOG_PART_ID_FILE);
		r = none(p);
		goto out;
	}
	if (r == -EINVAL || r == -ESTALE)
		tlog_ctx_log(p->ctx, LOG_WARNING, "%s/%s %s; %s", where,
		    TLOG_PART_ID_FILE, r == -EINVAL ? "is not an identity" :
		    "was made for another directory (a copy of another "
		    "partition's?)", p->ctx->ro ? "read-only: the partition "
		    "has no identity" : "the partition gets a new identity");
	if (r != 0 && p->ctx->ro) {
		r = none(p);
		goto out;
	}
	if (r != 0) {
		tlog_id_new(id);
		snprintf(buf, sizeof(buf), "%s %llu\n", id,
		    (unsigned long long)st.st_ino);
		if ((r = tlog_write_atomic(dfd, TLOG_PART_ID_FILE, buf,
		    strlen(buf))) != 0)
			goto out;
	}
	if ((v = strdup(id)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	__atomic_store_n(&p->id, v, __ATOMIC_RELEASE);
out:
	close(dfd);
	return r;
}

int
tlog_partition_id(struct tlog_partition *p, char *buf, size_t len)
{
	char *id, where[2 * TLOG_NAME_MAX + 2];
	int r;

	if ((id = __atomic_load_n(&p->id, __ATOMIC_ACQUIRE)) != NULL) {
		if (*id == '\0')
			return -ENODATA;
		strlcpy(buf, id, len);
		return 0;
	}
	/* As its disk work: two first requests agree on one identity. */
	tlog_segdir_io_begin(&p->sd);
	r = part_id_load(p);
	tlog_segdir_io_end(&p->sd);
	if (r == 0)
		strlcpy(buf, p->id, len);
	else if (r != -ENOENT && r != -ENODATA) {
		tlog_level_where(&p->lv, where, sizeof(where));
		tlog_ctx_log_err(p->ctx, "%s: cannot write %s: %s", where,
		    TLOG_PART_ID_FILE, strerror(-r));
	}
	return r;
}
