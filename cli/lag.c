/*
 * lag.c - tlogctl lag MOUNT: every cursor of every partition of a mount
 * and how far behind the end it is, one line each, in the manner of
 * kafka-consumer-groups --describe:
 *
 *	TOPIC   PARTITION  CURSOR   OFFSET  START  END  LAG
 *
 * OFFSET is the cursor, START and END the partition's start_offset and
 * end_offset, read in that order, and LAG is END - max(OFFSET, START)
 * computed from them. Not user.tlog.lag.NAME: that is read at yet
 * another moment, and while records are appended, committed or deleted
 * it need not agree with the three numbers beside it. Read in that
 * order, END is at least START and OFFSET (the end offset never goes
 * back, and a commit is at most the end offset), so the row holds
 * together, though its numbers are of successive moments, not one.
 *
 * Rows are sorted by topic, partition and cursor, in version order
 * (partition 2 before 10). A mount without cursors prints the header
 * alone, so a script reads "no rows" the same way whatever the mount
 * holds. A partition or cursor that goes while the table is made (rmdir,
 * the empty partitions' cleanup, setfattr -x) is left out. One that
 * cannot be read (listxattr fails with E2BIG when the names of a
 * partition's attributes pass the kernel's 64 KiB) is named in a line on
 * stderr, the other rows are printed, and the exit status is 1.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlogctl.h"

struct row {
	char *topic;
	char *part;
	char *cursor;
	uint64_t v[4];		/* offset, start, end, lag */
};

struct table {
	struct row *rows;
	size_t n, cap;
	bool failed;		/* something could not be read */
};

static const char *const heads[] = {
	"TOPIC", "PARTITION", "CURSOR", "OFFSET", "START", "END", "LAG"
};

static int
row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int c;

	if ((c = strverscmp(x->topic, y->topic)) != 0)
		return c;
	if ((c = strverscmp(x->part, y->part)) != 0)
		return c;
	return strverscmp(x->cursor, y->cursor);
}

/* The partition's attribute names, NUL-separated, or NULL with errno. */
static char *
list_names(int dfd, ssize_t *lenp)
{
	char *buf = NULL, *nbuf;
	ssize_t len;

	for (;;) {
		if ((len = flistxattr(dfd, NULL, 0)) == -1)
			break;
		if ((nbuf = realloc(buf, (size_t)len + 1)) == NULL)
			err(1, NULL);
		buf = nbuf;
		if ((len = flistxattr(dfd, buf, (size_t)len)) >= 0) {
			*lenp = len;
			return buf;
		}
		if (errno != ERANGE)	/* ERANGE: it grew meanwhile */
			break;
	}
	free(buf);
	return NULL;
}

static void
add_row(struct table *t, const char *topic, const char *part,
    const char *cursor, const uint64_t v[4])
{
	struct row *r;

	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		if ((t->rows = reallocarray(t->rows, t->cap,
		    sizeof(*t->rows))) == NULL)
			err(1, NULL);
	}
	r = &t->rows[t->n++];
	if ((r->topic = strdup(topic)) == NULL ||
	    (r->part = strdup(part)) == NULL ||
	    (r->cursor = strdup(cursor)) == NULL)
		err(1, NULL);
	memcpy(r->v, v, sizeof(r->v));
}

static void
scan_part(struct table *t, const char *path, const char *topic,
    const char *part)
{
	char *names, *name, *end;
	const char *cursor;
	uint64_t v[4];
	ssize_t len;
	int dfd;

	if ((dfd = dir_open(path)) == -1) {
		if (!part_gone(errno)) {
			warn("%s", path);
			t->failed = true;
		}
		return;
	}
	if ((names = list_names(dfd, &len)) == NULL) {
		if (!part_gone(errno)) {
			warn("%s: cannot list the cursors", path);
			t->failed = true;
		}
		close(dfd);
		return;
	}
	for (name = names, end = names + len; name < end;
	    name += strlen(name) + 1) {
		if (strncmp(name, CURSOR_PREFIX, strlen(CURSOR_PREFIX)) != 0)
			continue;
		cursor = name + strlen(CURSOR_PREFIX);
		if (part_cursor(dfd, cursor, &v[0]) == -1 ||
		    fd_stat(dfd, "start_offset", &v[1]) == -1 ||
		    fd_stat(dfd, "end_offset", &v[2]) == -1) {
			if (part_gone(errno))
				continue;
			warn("%s: cursor %s", path, cursor);
			t->failed = true;
			continue;
		}
		/* 0 for a cursor beyond the end, which no commit makes. */
		v[3] = v[2] - MIN(v[2], MAX(v[0], v[1]));
		add_row(t, topic, part, cursor, v);
	}
	free(names);
	close(dfd);
}

/* Calls fn on each directory in dir but . and .. and hidden ones. */
static void
each_dir(const char *dir, void (*fn)(struct table *, const char *,
    const char *, const char *), struct table *t, const char *topic)
{
	struct dirent *de;
	struct stat st;
	char path[PATH_MAX];
	DIR *d;

	/* Only the mount's root failing ends it: for a topic or a
	 * partition, the rest of the table is still worth printing. */
	if ((d = opendir(dir)) == NULL) {
		if (topic == NULL)
			err(1, "%s", dir);
		if (!part_gone(errno)) {	/* else a topic removed meanwhile */
			warn("%s", dir);
			t->failed = true;
		}
		return;
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    de->d_name) >= sizeof(path)) {
			warnx("%s/%s: name too long", dir, de->d_name);
			t->failed = true;
			continue;
		}
		if (stat(path, &st) == -1) {
			if (!part_gone(errno)) {
				warn("%s", path);
				t->failed = true;
			}
			continue;
		}
		if (S_ISDIR(st.st_mode))
			fn(t, path, topic != NULL ? topic : de->d_name,
			    de->d_name);
	}
	if (errno != 0) {
		if (topic == NULL)
			err(1, "%s", dir);
		warn("%s", dir);
		t->failed = true;
	}
	closedir(d);
}

static void
scan_topic(struct table *t, const char *path, const char *topic,
    const char *name)
{
	(void)name;
	each_dir(path, scan_part, t, topic);
}

static int
width(const char *s, int w)
{
	int n = (int)strlen(s);

	return n > w ? n : w;
}

static int
num_width(uint64_t v, int w)
{
	char buf[24];

	return width((snprintf(buf, sizeof(buf), "%" PRIu64, v), buf), w);
}

int
cmd_lag(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct table t = { 0 };
	struct stat st;
	char meta[PATH_MAX];
	const char *mnt;
	int w[7], c, i;
	size_t k;

	while ((c = next_opt(argc, argv, "+h", longopts)) != -1)
		usage(argv[0], "option -%c is unknown", c);
	one_operand(argc, argv, "MOUNT");
	mnt = argv[optind];
	/* The mount's root is the one with .tlogfs/ (tlogfs(8)). */
	/* .tlogfs itself, not a file in it: only root's group may read
	 * it, and anyone may use lag. */
	if ((size_t)snprintf(meta, sizeof(meta), "%s/.tlogfs", mnt) >=
	    sizeof(meta))
		errx(1, "%s: name too long", mnt);
	if (stat(mnt, &st) == -1)
		err(1, "%s", mnt);
	if (!S_ISDIR(st.st_mode) || stat(meta, &st) == -1 ||
	    !S_ISDIR(st.st_mode))
		errx(1, "%s: not the root of a tlogfs mount", mnt);

	each_dir(mnt, scan_topic, &t, NULL);
	if (t.n > 1)		/* rows is NULL when there are none */
		qsort(t.rows, t.n, sizeof(*t.rows), row_cmp);

	for (i = 0; i < 7; i++)
		w[i] = (int)strlen(heads[i]);
	for (k = 0; k < t.n; k++) {
		w[0] = width(t.rows[k].topic, w[0]);
		w[1] = width(t.rows[k].part, w[1]);
		w[2] = width(t.rows[k].cursor, w[2]);
		for (i = 0; i < 4; i++)
			w[3 + i] = num_width(t.rows[k].v[i], w[3 + i]);
	}
	/* Names to the left, numbers to the right, two spaces apart. */
	printf("%-*s  %-*s  %-*s  %*s  %*s  %*s  %*s\n", w[0], heads[0],
	    w[1], heads[1], w[2], heads[2], w[3], heads[3], w[4], heads[4],
	    w[5], heads[5], w[6], heads[6]);
	for (k = 0; k < t.n; k++) {
		printf("%-*s  %-*s  %-*s  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64
		    "  %*" PRIu64 "\n", w[0], t.rows[k].topic, w[1],
		    t.rows[k].part, w[2], t.rows[k].cursor, w[3],
		    t.rows[k].v[0], w[4], t.rows[k].v[1], w[5],
		    t.rows[k].v[2], w[6], t.rows[k].v[3]);
		free(t.rows[k].topic);
		free(t.rows[k].part);
		free(t.rows[k].cursor);
	}
	free(t.rows);
	if (fflush(stdout) == EOF || ferror(stdout))
		err(1, "standard output");
	return t.failed ? 1 : 0;
}
