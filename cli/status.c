/*
 * status.c - tlogctl status [--topics] [--bytes] [--json] [PATH...]: what
 * each partition holds, one row each (or one per topic, summed), with a
 * total line, in the manner of df -h (tlogctl(1) shows one), or as JSON
 * lines:
 *
 *   TOPIC  PARTITION  RECORDS  BYTES  DISK  SEGS  OLDEST  EXPIRES  REC/S
 *   CURSORS
 *
 * Everything comes from the statistics the mount offers on a partition
 * directory (tlogfs(8), EXTENDED ATTRIBUTES), one getxattr per value:
 * RECORDS is end_offset - start_offset, BYTES is bytes, SEGS segments,
 * OLDEST now - oldest_ts, EXPIRES next_expiry - now. Two columns need
 * more:
 *
 *  - DISK sums st_blocks * 512 of the partition's files, so it is the
 *    one column that costs a readdir and a stat per segment.
 *  - REC/S is the records of the last minute over 60 s. The mount keeps
 *    no history of appends; user.tlog.since.MS (doc/seek.md) names the
 *    first record that can be that recent, from the sparse index, so the
 *    count may take in up to one index interval (about 4 KiB) of older
 *    records, never miss a newer one. A partition whose oldest record
 *    is that recent needs no look-up: all of it counts.
 *
 * A row's values are read one after the other, not at one moment:
 * start_offset, oldest_ts, the since look-up, end_offset, bytes,
 * segments, next_expiry, the cursors' lag, then the files. In that order
 * start <= since <= end holds (the end never goes back, the start never
 * moves past the end, and since answers a live record or the end), so
 * RECORDS and REC/S are never negative and REC/S counts at most RECORDS.
 *
 * The partitions are listed first, then read by a few threads side by
 * side (read_all), then sorted: by mount point, then topic and partition
 * in version order (partition 2 before 10), as tlogctl lag sorts.
 *
 * A partition removed while the table is made (rmdir, the empty
 * partitions' cleanup) is left out: its directory no longer opens, or
 * its listing fails with ENOENT, which is read last so that a partition
 * removed after its statistics were read is left out too. Any other
 * failure to read one is named in a line on stderr, the other rows are
 * printed, and the exit status is 1.
 */
#include "config.h"

#include <sys/param.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"
#include "tlogctl.h"

static const struct option status_opts[] = {
	{ "topics", no_argument, NULL, 't' },
	{ "bytes", no_argument, NULL, 'b' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

void *
xreallocarray(void *p, size_t n, size_t size)
{
	if ((p = reallocarray(p, n, size)) == NULL)
		err(1, NULL);
	return p;
}

char *
xstrdup(const char *s)
{
	char *d;

	if ((d = strdup(s)) == NULL)
		err(1, NULL);
	return d;
}

/* ---- the mounts ---- */

/* Undoes the octal escapes of /proc/mounts (\040 a space, \011 a tab,
 * \012 a newline, \134 a backslash) in place. */
static void
unescape(char *s)
{
	char *o = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			    (s[3] - '0'));
			s += 4;
		} else
			*o++ = *s++;
	}
	*o = '\0';
}

/*
 * Every mount of the mounts file, in its order (a later mount on the
 * same point hides an earlier one). The test build reads
 * TLOGCTL_TEST_MOUNTS instead, if set, so that a test sees its own
 * mounts only (tests/integration/tlogctl_status.sh).
 */
static void
mounts_load(struct status *st)
{
	const char *file = MOUNTS_FILE;
	char *line = NULL, *dir, *type, *save;
	size_t cap = 0, mcap = 0;
	FILE *f;

#ifdef TLOG_TEST_HOOKS
	if (getenv("TLOGCTL_TEST_MOUNTS") != NULL)
		file = getenv("TLOGCTL_TEST_MOUNTS");
#endif
	if ((f = fopen(file, "re")) == NULL)
		err(1, "%s", file);
	while (getline(&line, &cap, f) != -1) {
		if (strtok_r(line, " \n", &save) == NULL ||
		    (dir = strtok_r(NULL, " \n", &save)) == NULL ||
		    (type = strtok_r(NULL, " \n", &save)) == NULL)
			continue;
		unescape(dir);
		if (st->nmounts == mcap) {
			mcap = mcap ? mcap * 2 : 32;
			st->mounts = xreallocarray(st->mounts, mcap,
			    sizeof(*st->mounts));
		}
		st->mounts[st->nmounts].dir = xstrdup(dir);
		st->mounts[st->nmounts++].tlogfs =
		    strcmp(type, TLOGFS_TYPE) == 0;
	}
	if (ferror(f))
		err(1, "%s", file);
	free(line);
	fclose(f);
}

/* The length of mount point dir if path is it or below it, else 0. */
static size_t
under(const char *path, const char *dir)
{
	size_t len = strlen(dir);

	if (strncmp(path, dir, len) != 0)
		return 0;
	if (path[len] == '\0' || path[len] == '/' || dir[len - 1] == '/')
		return len;
	return 0;
}

/* The mount that holds the absolute path: the longest mount point it is
 * at or under, the last of equals; NULL if none is a tlogfs. */
static const struct mnt *
mount_of(const struct status *st, const char *path, size_t *lenp)
{
	const struct mnt *m = NULL;
	size_t i, len, best = 0;

	for (i = 0; i < st->nmounts; i++)
		if ((len = under(path, st->mounts[i].dir)) > 0 &&
		    len >= best) {
			best = len;
			m = &st->mounts[i];
		}
	*lenp = best;
	return m != NULL && m->tlogfs ? m : NULL;
}

/* ---- the partitions to read ---- */

static void
add_part(struct status *st, const char *mount, const char *topic,
    const char *part)
{
	struct row *r;

	if (st->n == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 256;
		st->rows = xreallocarray(st->rows, st->cap, sizeof(*st->rows));
	}
	r = &st->rows[st->n++];
	memset(r, 0, sizeof(*r));
	r->mount = mount;
	r->topic = xstrdup(topic);
	r->part = xstrdup(part);
	r->parts = 1;
}

/*
 * Calls fn(st, arg, name) on each subdirectory of dir but hidden ones
 * (.tlogfs/), by the type readdir gives (a stat only where it gives
 * none). A dir that is gone is silently nothing; another failure is
 * named on stderr.
 */
static void
each_sub(struct status *st, const char *dir,
    void (*fn)(struct status *, const void *, const char *), const void *arg)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;

	if ((d = opendir(dir)) == NULL) {
		if (!part_gone(errno)) {
			warn("%s", dir);
			st->failed = true;
		}
		return;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (de->d_type == DT_UNKNOWN) {
			if (fstatat(dirfd(d), de->d_name, &sb,
			    AT_SYMLINK_NOFOLLOW) == -1) {
				if (!part_gone(errno)) {
					warn("%s/%s", dir, de->d_name);
					st->failed = true;
				}
				continue;
			}
			if (!S_ISDIR(sb.st_mode))
				continue;
		} else if (de->d_type != DT_DIR)
			continue;
		fn(st, arg, de->d_name);
	}
	if (errno != 0 && !part_gone(errno)) {
		warn("%s", dir);
		st->failed = true;
	}
	closedir(d);
}

static char *
join(const char *a, const char *b, const char *c)
{
	char *p;

	if (asprintf(&p, c != NULL ? "%s/%s/%s" : "%s/%s", a, b, c) == -1)
		err(1, NULL);
	return p;
}

/* A topic of a mount, for each_sub's callback: the mount point is
 * borrowed from the table. */
struct where {
	const char *mount;
	const char *topic;
};

static void
got_part(struct status *st, const void *arg, const char *part)
{
	const struct where *w = arg;

	add_part(st, w->mount, w->topic, part);
}

static void
list_topic(struct status *st, const char *mount, const char *topic)
{
	struct where w = { mount, topic };
	char *path = join(mount, topic, NULL);

	each_sub(st, path, got_part, &w);
	free(path);
}

/* arg: the mount point. */
static void
got_topic(struct status *st, const void *arg, const char *topic)
{
	list_topic(st, arg, topic);
}

/*
 * PATH as the partitions it names: a tlogfs mount root, a topic or a
 * partition. Anything else ends the command with one line (exit 1)
 * before anything is read.
 */
static void
add_path(struct status *st, const char *arg)
{
	char path[PATH_MAX], *rel, *slash;
	const struct mnt *m;
	struct stat sb;
	size_t len;

	if (realpath(arg, path) == NULL)
		err(1, "%s", arg);
	if ((m = mount_of(st, path, &len)) == NULL)
		errx(1, "%s: not in a tlogfs mount", arg);
	for (rel = path + len; *rel == '/'; rel++)
		;
	if (*rel == '\0') {
		each_sub(st, m->dir, got_topic, m->dir);
		return;
	}
	if (stat(path, &sb) == -1)
		err(1, "%s", arg);
	slash = strchr(rel, '/');
	/* .tlogfs/ and what is in it are the mount's, not a topic. */
	if (!S_ISDIR(sb.st_mode) || *rel == '.' || (slash != NULL &&
	    (slash[1] == '.' || strchr(slash + 1, '/') != NULL)))
		errx(1, "%s: not a tlogfs mount root, topic or partition",
		    arg);
	if (slash == NULL) {
		list_topic(st, m->dir, rel);
		return;
	}
	*slash = '\0';
	add_part(st, m->dir, rel, slash + 1);
}

/* A mount point is listed unless a later mount hides it. */
static bool
visible(const struct status *st, size_t i)
{
	size_t j;

	for (j = i + 1; j < st->nmounts; j++)
		if (strcmp(st->mounts[j].dir, st->mounts[i].dir) == 0)
			return false;
	return true;
}

/* No PATH: every tlogfs mount; exit 1 if there is none. */
static void
add_all(struct status *st)
{
	size_t i, n = 0;

	for (i = 0; i < st->nmounts; i++)
		if (st->mounts[i].tlogfs && visible(st, i)) {
			each_sub(st, st->mounts[i].dir, got_topic,
			    st->mounts[i].dir);
			n++;
		}
	if (n == 0)
		errx(1, "no tlogfs mount in %s", MOUNTS_FILE);
}

static int
row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c;

	if ((c = strcmp(x->mount, y->mount)) != 0)
		return c;
	if ((c = strverscmp(x->topic, y->topic)) != 0)
		return c;
	return strverscmp(x->part, y->part);
}

void
row_free(struct row *r)
{
	size_t i;

	for (i = 0; i < r->ncur; i++)
		free(r->cur[i].name);
	free(r->cur);
	free(r->topic);
	free(r->part);
}

/* Sorts the rows and drops those named twice (a mount and one of its
 * topics, say) and those marked skip. */
static void
rows_tidy(struct status *st)
{
	size_t i, k;

	if (st->n > 1)
		qsort(st->rows, st->n, sizeof(*st->rows), row_cmp);
	for (i = k = 0; i < st->n; i++) {
		if (st->rows[i].skip || (k > 0 &&
		    row_cmp(&st->rows[k - 1], &st->rows[i]) == 0)) {
			row_free(&st->rows[i]);
			continue;
		}
		st->rows[k++] = st->rows[i];
	}
	st->n = k;
}

/* ---- reading a partition ---- */

static int
cur_cmp(const void *a, const void *b)
{
	return strcmp(((const struct curlag *)a)->name,
	    ((const struct curlag *)b)->name);
}

/* The partition's cursors (listed as user.cursor.NAME) and the lag of
 * each (user.tlog.lag.NAME): 0, or -1 with errno. A cursor removed
 * meanwhile is left out. */
static int
read_cursors(int dfd, struct row *r, char *names)
{
	const size_t plen = strlen(CURSOR_PREFIX);
	char key[128], val[32], *name, *end;
	const char *cname;
	ssize_t len;

	if ((len = flistxattr(dfd, names, LIST_MAX)) == -1)
		return -1;
	for (name = names, end = names + len; name < end;
	    name += strlen(name) + 1) {
		if (strncmp(name, CURSOR_PREFIX, plen) != 0)
			continue;
		cname = name + plen;
		snprintf(key, sizeof(key), "user.tlog.lag.%s", cname);
		if ((len = fgetxattr(dfd, key, val, sizeof(val) - 1)) == -1) {
			if (errno == ENODATA)
				continue;
			return -1;
		}
		val[len] = '\0';
		r->cur = xreallocarray(r->cur, r->ncur + 1, sizeof(*r->cur));
		r->cur[r->ncur].name = xstrdup(cname);
		r->cur[r->ncur++].lag = strtoull(val, NULL, 10);
	}
	if (r->ncur > 1)
		qsort(r->cur, r->ncur, sizeof(*r->cur), cur_cmp);
	return 0;
}

/*
 * What the partition's files take on disk: st_blocks * 512 of each,
 * through its directory dfd, which it closes. A segment deleted
 * meanwhile counts nothing. 0, or -1 with errno (ENOENT: the partition
 * was removed).
 *
 * Two requests a partition are saved here. The mount lists `current`
 * after every sealed segment (mount/dir.c), so the listing is read up to
 * it and not to its end, which would take a read that finds nothing.
 * And each file's attributes are those its lookup brings (the mount
 * lets a segment's name be cached for no time, so a stat looks it up
 * every time): AT_STATX_DONT_SYNC takes them without a second request.
 */
static int
read_disk(int dfd, struct row *r)
{
	char buf[8192] __attribute__((aligned(8)));
	const struct dirent64 *de;
	struct statx sx;
	bool last = false;
	ssize_t n = 0, off;
	int e = 0;

	while (!last && e == 0 && (n = getdents64(dfd, buf, sizeof(buf))) > 0)
		for (off = 0; off < n && e == 0; off += de->d_reclen) {
			de = (const struct dirent64 *)(const void *)(buf + off);
			if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
				continue;
			last = strcmp(de->d_name, "current") == 0;
			if (statx(dfd, de->d_name, AT_SYMLINK_NOFOLLOW |
			    AT_STATX_DONT_SYNC, STATX_TYPE | STATX_BLOCKS,
			    &sx) == -1)
				e = errno == ENOENT ? 0 : errno;
			else if (S_ISREG(sx.stx_mode))
				r->disk += sx.stx_blocks * 512;
		}
	if (n == -1)
		e = errno;
	close(dfd);
	errno = e;
	return e == 0 ? 0 : -1;
}

/* Reads partition r (the order is the file's head comment's), with
 * names a listxattr buffer of LIST_MAX bytes. A partition that is gone
 * is marked skip in silence, one that cannot be read is named on
 * stderr. */
static void
read_part(struct status *st, struct row *r, char *names)
{
	uint64_t since, base, pos;
	int64_t from = st->now - RATE_WINDOW;
	char *path = join(r->mount, r->topic, r->part);
	int dfd;

	r->skip = true;
	if ((dfd = dir_open(path)) == -1)
		goto out;
	if (fd_stat(dfd, "start_offset", &r->start) == -1 ||
	    fd_time(dfd, "oldest_ts", &r->oldest_ts) == -1)
		goto out_close;
	since = r->start;
	if (r->oldest_ts != -1 && r->oldest_ts < from &&
	    part_since(dfd, from, &since, &base, &pos) == -1)
		goto out_close;
	if (fd_stat(dfd, "end_offset", &r->end) == -1 ||
	    fd_stat(dfd, "bytes", &r->bytes) == -1 ||
	    fd_stat(dfd, "segments", &r->segments) == -1 ||
	    fd_time(dfd, "next_expiry", &r->next_expiry) == -1 ||
	    read_cursors(dfd, r, names) == -1)
		goto out_close;
	/* The MINs keep a row whole against a mount that breaks the
	 * order the head comment relies on. */
	r->records = r->end - MIN(r->end, r->start);
	r->recent = r->end - MIN(r->end, MAX(since, r->start));
	if (read_disk(dfd, r) == -1)
		goto out;
	r->skip = false;
	free(path);
	return;
out_close:
	close(dfd);
out:
	if (!part_gone(errno)) {
		warn("%s", path);
		__atomic_store_n(&st->failed, true, __ATOMIC_RELAXED);
	}
	free(path);
}

/*
 * The partitions are read by READERS threads side by side: each read is
 * a round trip to the daemon, and one at a time leaves the daemon's
 * threads and the machine's cores waiting on each other. A thread takes
 * the next row by its index (st->next, atomic) and writes that row
 * only; the rows are not moved while they run.
 */
static void *
reader(void *arg)
{
	struct status *st = arg;
	char *names;
	size_t i;

	if ((names = malloc(LIST_MAX)) == NULL)
		err(1, NULL);
	while ((i = __atomic_fetch_add(&st->next, 1, __ATOMIC_RELAXED)) <
	    st->n)
		read_part(st, &st->rows[i], names);
	free(names);
	return NULL;
}

static void
read_all(struct status *st)
{
	pthread_t t[READERS];
	size_t i, n = MIN(READERS, st->n);
	int e;

	st->next = 0;
	for (i = 0; i < n; i++)
		if ((e = pthread_create(&t[i], NULL, reader, st)) != 0)
			errc(1, e, "pthread_create");
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/*
 * A hook of the test build only (tests/hooks/tlogctl,
 * tests/integration/tlogctl_status.sh): with TLOGCTL_TEST_STATUS_GATE
 * set to a file, once the partitions are listed and before any is read,
 * status makes FILE.listed and waits until FILE exists (at most 60 s),
 * so that a test can remove a partition in between.
 */
static void
test_gate(void)
{
#ifdef TLOG_TEST_HOOKS
	const char *gate = getenv("TLOGCTL_TEST_STATUS_GATE");
	char listed[PATH_MAX];
	int fd, k;

	if (gate == NULL)
		return;
	snprintf(listed, sizeof(listed), "%s.listed", gate);
	if ((fd = open(listed, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) != -1)
		close(fd);
	for (k = 0; k < 6000 && access(gate, F_OK) == -1; k++)
		usleep(10000);
#endif
}

/* The moment the ages and the rate are of, in ms since the epoch. The
 * test build takes TLOGCTL_TEST_NOW instead, if set, so that a test
 * knows every age and rate the table shows
 * (tests/integration/tlogctl_status.sh). */
static int64_t
status_now(void)
{
#ifdef TLOG_TEST_HOOKS
	if (getenv("TLOGCTL_TEST_NOW") != NULL)
		return strtoll(getenv("TLOGCTL_TEST_NOW"), NULL, 10);
#endif
	return real_ms();
}

int
cmd_status(int argc, char *argv[])
{
	struct status st;
	struct row total;
	size_t i;
	int c;

	memset(&st, 0, sizeof(st));
	while ((c = next_opt(argc, argv, "+h", status_opts)) != -1) {
		switch (c) {
		case 't':
			st.topics = true;
			break;
		case 'b':
			st.exact = true;
			break;
		case 'j':
			st.json = true;
			break;
		default:
			usage(argv[0], "option -%c is unknown", c);
		}
	}
	mounts_load(&st);
	/* Every PATH is checked before anything is read. */
	if (optind == argc)
		add_all(&st);
	for (i = (size_t)optind; i < (size_t)argc; i++)
		add_path(&st, argv[i]);
	rows_tidy(&st);
	test_gate();
	st.now = status_now();
	read_all(&st);
	rows_tidy(&st);
	if (st.topics)
		rows_by_topic(&st);

	sum_init(&total, NULL, NULL);
	for (i = 0; i < st.n; i++) {
		if (st.json)
			print_json(&st, &st.rows[i]);
		add_row(&total, &st.rows[i]);
	}
	if (!st.json)
		print_table(&st, &total);
	row_free(&total);
	for (i = 0; i < st.n; i++)
		row_free(&st.rows[i]);
	free(st.rows);
	for (i = 0; i < st.nmounts; i++)
		free(st.mounts[i].dir);
	free(st.mounts);
	if (fflush(stdout) == EOF || ferror(stdout))
		err(1, "standard output");
	return st.failed ? 1 : 0;
}
