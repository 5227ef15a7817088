/*
 * test_cursor.c - consumers' cursors (cursor.c): commit, read, list,
 * drop, lag, the names and values refused, the .cursors file written,
 * reloaded, found damaged, kept across a rename, the partition's
 * identity, and recovery's end
 * offset never below a committed cursor after a power cut. On the
 * injected clock.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "cursor.h"
#include "reaper.h"
#include "retention.h"
#include "store.h"

/*
 * The engine's reallocarray, here: the test program's definition wins
 * over libc's. While realloc_max is set, an array of more elements is
 * refused, so a test can run a load out of memory.
 */
static size_t realloc_max;

void *
reallocarray(void *ptr, size_t n, size_t size)
{
	if ((realloc_max > 0 && n > realloc_max) ||
	    (size != 0 && n > SIZE_MAX / size)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(ptr, n * size);
}

/* The bytes the heap has handed out. */
static long long
heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (long long)(mi.uordblks + mi.hblkhd);
}

static int
set(struct tlog_partition *p, const char *name, const char *val)
{
	return tlog_partition_cursor_set(p, name, val, strlen(val));
}

static uint64_t
get(struct tlog_partition *p, const char *name)
{
	uint64_t off = 0;

	ck_assert_int_eq(tlog_partition_cursor_get(p, name, &off), 0);
	return off;
}

/* Appends n lines, one ms apart. */
static void
lines(struct tlog_partition *p, int n)
{
	struct tlog_writer *w = tlog_writer_open(p);
	int i;

	for (i = 0; i < n; i++) {
		th_put(w, "record\n");
		th_clock++;
	}
	ck_assert_int_eq(tlog_writer_close(w), 0);
}

static void
suite_setup(void)
{
	th_boot_id[0] = '\0';
	th_open_tp(NULL);
}

static void
suite_teardown(void)
{
	th_dur_stop();
	th_boot_id[0] = '\0';
}

START_TEST(commit_get_list_drop)
{
	struct tlog_cursor *v;
	uint64_t lag;
	size_t n;

	lines(th_P, 10);
	ck_assert_int_eq(th_P->ncursors, 0);
	ck_assert_uint_eq(th_P->cursor_floor, UINT64_MAX);
	ck_assert_int_eq(set(th_P, "b", "7"), 0);
	ck_assert_int_eq(set(th_P, "a", "3"), 0);
	ck_assert_int_eq(set(th_P, "c", "10\n"), 0);
	ck_assert_uint_eq(get(th_P, "a"), 3);
	ck_assert_uint_eq(get(th_P, "b"), 7);
	ck_assert_uint_eq(get(th_P, "c"), 10);
	ck_assert_int_eq(th_P->ncursors, 3);
	ck_assert_uint_eq(th_P->cursor_floor, 3);
	ck_assert_int_eq(tlog_partition_cursor_lag(th_P, "a", &lag), 0);
	ck_assert_uint_eq(lag, 7);
	ck_assert_int_eq(tlog_partition_cursor_list(th_P, &v, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[0].name, "a");
	ck_assert_str_eq(v[2].name, "c");
	free(v);
	/* Moving the slowest moves the floor. */
	ck_assert_int_eq(set(th_P, "a", "9"), 0);
	ck_assert_uint_eq(th_P->cursor_floor, 7);
	ck_assert_int_eq(tlog_partition_cursor_remove(th_P, "b"), 0);
	ck_assert_uint_eq(th_P->cursor_floor, 9);
	ck_assert_int_eq(tlog_partition_cursor_remove(th_P, "b"), -ENODATA);
	ck_assert_int_eq(tlog_partition_cursor_get(th_P, "b", &lag), -ENODATA);
	ck_assert_int_eq(tlog_partition_cursor_lag(th_P, "b", &lag), -ENODATA);
	ck_assert_int_eq(tlog_partition_cursor_remove(th_P, "a"), 0);
	ck_assert_int_eq(tlog_partition_cursor_remove(th_P, "c"), 0);
	ck_assert_int_eq(th_P->ncursors, 0);
	ck_assert_uint_eq(th_P->cursor_floor, UINT64_MAX);
	/* No cursor left: no file. */
	ck_assert(!th_exists("t/0/.cursors"));
}
END_TEST

/*
 * Two racing first commits of one partition both land: its disk work
 * runs one at a time, so their writes of .cursors do not overlap (ThreadSanitizer watches).
 */
static struct tlog_partition *race_p;

static void *
first_commit(void *arg)
{
	ck_assert_int_eq(set(race_p, (const char *)arg, "5"), 0);
	return NULL;
}

START_TEST(racing_first_commits_both_land)
{
	struct tlog_writer *w;
	pthread_t a, b;

	lines(th_P, 10);
	ck_assert_int_eq(tlog_partition_cursor_remove(th_P, "x"), -ENODATA);
	race_p = th_part(th_S, "t", "1");
	w = tlog_writer_open(race_p);
	th_put(w, "1\n2\n3\n4\n5\n");
	tlog_writer_close(w);
	ck_assert_int_eq(pthread_create(&a, NULL, first_commit, "a"), 0);
	ck_assert_int_eq(pthread_create(&b, NULL, first_commit, "b"), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	ck_assert_uint_eq(get(race_p, "a"), 5);
	ck_assert_uint_eq(get(race_p, "b"), 5);
	tlog_partition_put(race_p);
}
END_TEST

/*
 * Commits and identity requests racing renames of their partition: they
 * read its name (for their log lines) under the tree lock, never while a
 * rename frees it (ThreadSanitizer watches).
 */
static void *
renamer(void *arg)
{
	struct tlog_topic *t = arg;
	int i;

	for (i = 0; i < 200; i++) {
		ck_assert_int_eq(tlog_partition_rename(t, "0", "1"), 0);
		ck_assert_int_eq(tlog_partition_rename(t, "1", "0"), 0);
	}
	return NULL;
}

START_TEST(commits_race_renames)
{
	struct tlog_topic *t = tlog_partition_topic(th_P);
	char id[64];
	pthread_t a;
	int i;

	lines(th_P, 10);
	ck_assert_int_eq(pthread_create(&a, NULL, renamer, t), 0);
	for (i = 0; i < 200; i++) {
		ck_assert_int_eq(set(th_P, "c", "5"), 0);
		ck_assert_int_eq(set(th_P, "c", "zz"), -EINVAL);
		(void)tlog_partition_id(th_P, id, sizeof(id));
	}
	pthread_join(a, NULL);
	ck_assert_uint_eq(get(th_P, "c"), 5);
}
END_TEST

START_TEST(lag_counts_from_start_offset)
{
	struct tlog_seginfo *v;
	uint64_t lag;
	size_t n;

	th_set(th_S, th_P, "segment.bytes", "1K");
	lines(th_P, 400);		/* 7 bytes each: a few segments */
	ck_assert_int_eq(set(th_P, "slow", "0"), 0);
	ck_assert_int_eq(tlog_partition_delete(th_P, 0), 0);
	ck_assert_int_eq(tlog_partition_cursor_lag(th_P, "slow", &lag), 0);
	/* The first segment held 146 records (1K / 7). */
	v = th_segs(th_P, &n);
	ck_assert_uint_gt(v[0].base, 0);
	ck_assert_uint_eq(lag, 400 - v[0].base);
	free(v);
}
END_TEST

START_TEST(lag_metric)
{
	struct tlog_partition *q;
	char *txt;
	size_t len;

	lines(th_P, 10);
	q = th_part(th_S, "t", "1");
	lines(q, 4);
	ck_assert_int_eq(set(th_P, "a", "4"), 0);
	ck_assert_int_eq(set(th_P, "b", "10"), 0);
	ck_assert_int_eq(set(q, "a", "1"), 0);
	ck_assert_int_eq(tlog_metrics_format(th_S, &txt, &len), 0);
	ck_assert_ptr_nonnull(strstr(txt, "# TYPE tlogfs_cursor_lag_records "
	    "gauge\n"));
	ck_assert_ptr_nonnull(strstr(txt, "tlogfs_cursor_lag_records{topic="
	    "\"t\",partition=\"0\",cursor=\"a\"} 6\n"
	    "tlogfs_cursor_lag_records{topic=\"t\",partition=\"0\","
	    "cursor=\"b\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(txt, "tlogfs_cursor_lag_records{topic="
	    "\"t\",partition=\"1\",cursor=\"a\"} 3\n"));
	free(txt);
	tlog_partition_put(q);
}
END_TEST

START_TEST(einval_table)
{
	static const char *const names[] = {
		"", "a/b", "a b", "a:b", "\xc3\xa9", "a\nb",
		"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnx",
		NULL
	};
	static const char *const vals[] = {
		"6", "-1", "+1", " 1", "1 ", "1.0", "0x1", "abc", "", "\n",
		"1\n\n", "18446744073709551616", "99999999999999999999999",
		NULL
	};
	char *at;
	int i, nlog;

	lines(th_P, 5);
	ck_assert_int_eq(set(th_P,
	    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn",
	    "5"), 0);
	ck_assert_int_eq(set(th_P, "Az09._-", "0"), 0);
	ck_assert_int_eq(set(th_P, "c", "2"), 0);
	th_logbuf[0] = '\0';
	for (i = 0; names[i] != NULL; i++)
		ck_assert_msg(set(th_P, names[i], "1") == -EINVAL, "name %s",
		    names[i]);
	for (i = 0; vals[i] != NULL; i++)
		ck_assert_msg(set(th_P, "c", vals[i]) == -EINVAL, "value %s",
		    vals[i]);
	ck_assert_uint_eq(get(th_P, "c"), 2);
	ck_assert_int_eq(th_P->ncursors, 3);
	/* Exactly one line per refusal, naming cursor, value, range. */
	for (nlog = 0, at = th_logbuf; (at = strstr(at, "refused")) != NULL;
	    at++)
		nlog++;
	ck_assert_int_eq(nlog, i + 7);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "cursor c: value \"abc\" "
	    "refused: a decimal offset 0..5"));
	ck_assert_ptr_nonnull(strstr(th_logbuf, "cursor name \"a/b\" "));
}
END_TEST

START_TEST(file_format_and_reload)
{
	char path[1024], *txt;
	size_t len;

	lines(th_P, 20);
	ck_assert_int_eq(set(th_P, "beta", "20"), 0);
	ck_assert_int_eq(set(th_P, "alpha", "12"), 0);
	snprintf(path, sizeof(path), "%s/t/0/.cursors", th_dir);
	txt = th_slurp(path, &len);
	ck_assert_int_eq(strncmp(txt, "tlogfs-cursors 1\nalpha 12\nbeta 20\n"
	    "crc32c ", 41), 0);
	ck_assert_uint_eq(len, 41 + 9);
	ck_assert_uint_eq(tlog_crc32c(0, txt, 34),
	    (uint32_t)strtoul(txt + 41, NULL, 16));
	free(txt);
	ck_assert(!th_exists("t/0/.cursors.tmp"));
	th_close();
	th_open_tp(NULL);
	ck_assert_uint_eq(get(th_P, "alpha"), 12);
	ck_assert_uint_eq(get(th_P, "beta"), 20);
	ck_assert_uint_eq(th_P->cursor_floor, 12);
	ck_assert_int_eq(th_P->ncursors, 2);
	/* Nothing about the file is a stray to recovery. */
	ck_assert_ptr_null(strstr(th_logbuf, "stray"));
}
END_TEST

/* A damaged file: one log line, no cursor, the file kept aside. */
static void
damaged(const char *content)
{
	char path[1024];
	uint64_t off;
	int fd;

	lines(th_P, 20);
	ck_assert_int_eq(set(th_P, "a", "12"), 0);
	th_close();
	snprintf(path, sizeof(path), "%s/t/0/.cursors", th_dir);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, strlen(content)),
	    (ssize_t)strlen(content));
	close(fd);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_int_eq(tlog_partition_cursor_get(th_P, "a", &off), -ENODATA);
	ck_assert_int_eq(th_P->ncursors, 0);
	ck_assert_uint_eq(th_P->cursor_floor, UINT64_MAX);
	ck_assert_ptr_nonnull(strstr(th_logbuf, ".cursors: damaged"));
	ck_assert_ptr_null(strstr(strstr(th_logbuf, ".cursors: damaged") + 1,
	    ".cursors: damaged"));
	ck_assert(!th_exists("t/0/.cursors"));
	ck_assert(th_exists("t/0/.cursors.bad"));
	/* The partition is readable, and takes new commits. */
	ck_assert_uint_eq(th_nsegs(th_P), 1);
	ck_assert_int_eq(set(th_P, "b", "3"), 0);
	th_close();
	th_open_tp(NULL);
	ck_assert_uint_eq(get(th_P, "b"), 3);
}

START_TEST(damaged_checksum)
{
	damaged("tlogfs-cursors 1\na 13\ncrc32c 00000000\n");
}
END_TEST

START_TEST(damaged_torn)
{
	damaged("tlogfs-cursors 1\na 1");
}
END_TEST

START_TEST(damaged_garbage)
{
	damaged("\x01\x02garbage");
}
END_TEST

/* A line whose checksum holds but whose offset no partition can reach
 * (2^63 - 1 would wrap the end offset) is damage, not a position. */
START_TEST(damaged_offset_out_of_range)
{
	char body[128], content[160];

	snprintf(body, sizeof(body), "tlogfs-cursors 1\na %s\n",
	    "9223372036854775807");
	snprintf(content, sizeof(content), "%scrc32c %08x\n", body,
	    (unsigned)tlog_crc32c(0, body, strlen(body)));
	damaged(content);
}
END_TEST

/* A load that runs out of memory half-way through a long file frees what
 * it had parsed, and the partition has no cursors, as for damage. */
START_TEST(load_out_of_memory_frees)
{
	char path[1024], *buf;
	size_t cap = 2000 * 32, len;
	long long before;
	uint64_t max = 1;
	int dfd, fd, i;

	ck_assert_ptr_nonnull(buf = malloc(cap));
	len = strlcpy(buf, "tlogfs-cursors 1\n", cap);
	for (i = 0; i < 2000; i++)
		len += (size_t)snprintf(buf + len, cap - len, "c%d %d\n", i, i);
	len += (size_t)snprintf(buf + len, cap - len, "crc32c %08x\n",
	    (unsigned)tlog_crc32c(0, buf, len));
	snprintf(path, sizeof(path), "%s/t/0", th_dir);
	ck_assert_int_ge(dfd = open(path, O_RDONLY | O_DIRECTORY), 0);
	fd = openat(dfd, ".cursors", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	free(buf);
	before = heap_used();
	realloc_max = 1000;
	tlog_cursor_load(th_P, dfd, "t/0", &max);
	realloc_max = 0;
	/* Without the fix, 1000 parsed cursors (80 KB) were lost. */
	ck_assert_int_lt(heap_used() - before,
	    (long long)(1000 * sizeof(struct tlog_cursor) / 4));
	ck_assert_ptr_nonnull(strstr(th_logbuf, "damaged (out of memory)"));
	ck_assert_uint_eq(max, 0);
	ck_assert_int_eq(th_P->ncursors, 0);
	close(dfd);
}
END_TEST

/* A partition keeps 256 cursors at most (their names and lag attributes
 * must fit one listxattr answer): a new one past that is ENOSPC, with a
 * log line; moving one that exists still works. */
START_TEST(cursors_capped)
{
	char name[16];
	int i;

	lines(th_P, 3);
	for (i = 0; i < TLOG_CURSORS_MAX; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		ck_assert_int_eq(set(th_P, name, "1"), 0);
	}
	th_logbuf[0] = '\0';
	ck_assert_int_eq(set(th_P, "one-more", "1"), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "cursor one-more refused"));
	ck_assert_int_eq(set(th_P, "c0", "2"), 0);
	ck_assert_uint_eq(get(th_P, "c0"), 2);
	ck_assert_int_eq(th_P->ncursors, TLOG_CURSORS_MAX);
}
END_TEST

/* Empties th_P (its one segment deleted and unlinked), then removes it:
 * it was t/NAME. */
static void
remove_p(const char *name)
{
	struct tlog_topic *t = tlog_partition_topic(th_P);
	char rel[64];

	ck_assert_int_eq(tlog_partition_delete(th_P, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(th_S, 0), 1);
	tlog_partition_put(th_P);
	th_P = NULL;
	ck_assert_int_eq(tlog_partition_remove(t, name), 0);
	snprintf(rel, sizeof(rel), "t/%s", name);
	ck_assert(!th_exists(rel));
}

START_TEST(rename_keeps_rmdir_drops)
{
	struct tlog_topic *t = tlog_partition_topic(th_P);
	struct tlog_partition *q;

	lines(th_P, 4);
	ck_assert_int_eq(set(th_P, "a", "4"), 0);
	ck_assert_int_eq(tlog_partition_rename(t, "0", "1"), 0);
	ck_assert_int_eq(set(th_P, "b", "2"), 0);
	ck_assert(th_exists("t/1/.cursors"));
	th_close();
	th_S = th_open(th_dir);
	th_P = th_part(th_S, "t", "1");
	ck_assert_uint_eq(get(th_P, "a"), 4);
	ck_assert_uint_eq(get(th_P, "b"), 2);
	remove_p("1");
	q = th_part(th_S, "t", "1");
	ck_assert_int_eq(q->ncursors, 0);
	tlog_partition_put(q);
}
END_TEST

START_TEST(readonly_refuses)
{
	struct tlog_store_opts o;
	uint64_t off;

	lines(th_P, 4);
	ck_assert_int_eq(set(th_P, "a", "4"), 0);
	th_close();
	memset(&o, 0, sizeof(o));
	o.readonly = true;
	th_open_tp(&o);
	ck_assert_int_eq(tlog_partition_cursor_get(th_P, "a", &off), 0);
	ck_assert_int_eq(set(th_P, "a", "1"), -EROFS);
	ck_assert_int_eq(tlog_partition_cursor_remove(th_P, "a"), -EROFS);
}
END_TEST

/* ---- the partition's identity ---- */

static void
pid(struct tlog_partition *p, char id[TLOG_STORE_ID_LEN + 1])
{
	ck_assert_int_eq(tlog_partition_id(p, id, TLOG_STORE_ID_LEN + 1), 0);
	ck_assert_uint_eq(strlen(id), TLOG_STORE_ID_LEN);
	ck_assert_uint_eq(strspn(id, "0123456789abcdef"), TLOG_STORE_ID_LEN);
}

/* Made at the first request, kept across a mount and a rename; a
 * partition removed and made again under its name has another. */
START_TEST(identity_lasts_until_remade)
{
	struct tlog_topic *t = tlog_partition_topic(th_P);
	char a[TLOG_STORE_ID_LEN + 1], b[TLOG_STORE_ID_LEN + 1];
	char c[TLOG_STORE_ID_LEN + 1];
	struct tlog_partition *q;

	lines(th_P, 4);
	ck_assert(!th_exists("t/0/.id"));
	pid(th_P, a);
	ck_assert(th_exists("t/0/.id"));
	pid(th_P, b);
	ck_assert_str_eq(a, b);
	q = th_part(th_S, "t", "1");
	pid(q, c);
	ck_assert_str_ne(a, c);
	tlog_partition_put(q);
	ck_assert_int_eq(tlog_partition_rename(t, "0", "2"), 0);
	pid(th_P, b);
	ck_assert_str_eq(a, b);
	th_close();
	th_S = th_open(th_dir);
	th_P = th_part(th_S, "t", "2");
	pid(th_P, b);
	ck_assert_str_eq(a, b);
	/* Removed (emptied first) and made again. */
	remove_p("2");
	th_P = th_part(th_S, "t", "2");
	pid(th_P, b);
	ck_assert_str_ne(a, b);
}
END_TEST

/* Read-only: the identity a partition has, none if it has none yet;
 * a damaged file is replaced by a writable mount. */
START_TEST(identity_readonly_and_damaged)
{
	struct tlog_store_opts o;
	char a[TLOG_STORE_ID_LEN + 1], b[TLOG_STORE_ID_LEN + 1];
	struct tlog_partition *q;
	char path[PATH_MAX];
	int fd;

	lines(th_P, 2);
	pid(th_P, a);
	q = th_part(th_S, "t", "1");
	tlog_partition_put(q);
	th_close();
	memset(&o, 0, sizeof(o));
	o.readonly = true;
	th_open_tp(&o);
	pid(th_P, b);
	ck_assert_str_eq(a, b);
	q = th_part(th_S, "t", "1");
	ck_assert_int_eq(tlog_partition_id(q, b, sizeof(b)), -ENODATA);
	ck_assert(!th_exists("t/1/.id"));
	tlog_partition_put(q);
	th_close();
	snprintf(path, sizeof(path), "%s/t/0/.id", th_dir);
	ck_assert_int_ne(fd = open(path, O_WRONLY | O_TRUNC), -1);
	ck_assert_int_eq(write(fd, "xyz\n", 4), 4);
	close(fd);
	th_open_tp(NULL);
	pid(th_P, b);
	ck_assert_str_ne(a, b);
	th_close();
	th_open_tp(NULL);
	pid(th_P, a);
	ck_assert_str_eq(a, b);
}
END_TEST

/* A copy of another partition's .id (cp -a of its directory, or a
 * link to its file) is not its identity: the copy gets its own, the
 * original keeps its. A .id that is no regular file is left alone, and
 * the partition has none. */
START_TEST(identity_copied_or_stray)
{
	char a[TLOG_STORE_ID_LEN + 1], b[TLOG_STORE_ID_LEN + 1];
	char from[PATH_MAX], to[PATH_MAX], *text;
	struct tlog_partition *q;
	struct stat st;
	size_t len;

	pid(th_P, a);
	q = th_part(th_S, "t", "1");
	tlog_partition_put(q);
	q = th_part(th_S, "t", "2");
	tlog_partition_put(q);
	th_close();
	snprintf(from, sizeof(from), "%s/t/0/.id", th_dir);
	snprintf(to, sizeof(to), "%s/t/1/.id", th_dir);
	text = th_slurp(from, &len);
	ck_assert_int_eq(link(from, to), 0);
	snprintf(to, sizeof(to), "%s/t/2/.id", th_dir);
	ck_assert_int_eq(symlink(from, to), 0);
	th_open_tp(NULL);
	q = th_part(th_S, "t", "1");
	pid(q, b);
	ck_assert_str_ne(a, b);
	tlog_partition_put(q);
	pid(th_P, b);
	ck_assert_str_eq(a, b);
	q = th_part(th_S, "t", "2");
	ck_assert_int_eq(tlog_partition_id(q, b, sizeof(b)), -ENODATA);
	ck_assert_int_eq(tlog_partition_id(q, b, sizeof(b)), -ENODATA);
	tlog_partition_put(q);
	ck_assert_int_eq(lstat(to, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	free(text);
	text = th_slurp(from, &len);
	ck_assert_uint_gt(len, TLOG_STORE_ID_LEN + 2);
	ck_assert(strncmp(text, a, TLOG_STORE_ID_LEN) == 0);
	free(text);
}
END_TEST

/* ---- the power-cut rule: offsets below a committed cursor are never
 * handed out again ---- */

static void
cut_load(void)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	pid_t pid;
	int st, i;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		th_dur_start(th_dir);
		s = th_open(th_dir);
		p = th_part(s, "t", "0");
		w = tlog_writer_open(p);
		/* Two synced records, then five that only reach the page
		 * cache; a consumer reads all seven and commits 7. */
		th_put(w, "s0\ns1\n");
		if (tlog_writer_fsync(w, true) != 0)
			_exit(1);
		for (i = 0; i < 5; i++)
			th_put(w, "lost\n");
		tlog_writer_flush(w);
		if (set(p, "c", "7") != 0)
			_exit(2);
		th_powercut(th_dir, 1, TH_CUT_TRUNCATE);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	strlcpy(th_boot_id, "test-cursor-reboot", sizeof(th_boot_id));
}

START_TEST(recovery_end_at_least_max_cursor)
{
	struct tlog_part_stats st;
	struct tlog_seginfo *v;
	struct tlog_writer *w;
	size_t n;

	th_close();
	cut_load();
	th_open_tp(NULL);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(get(th_P, "c"), 7);
	/* Records 2..6 are gone, their offsets are not reused. */
	ck_assert_uint_eq(st.end_offset, 7);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "the end offset is raised"));
	w = tlog_writer_open(th_P);
	th_put(w, "new\n");
	ck_assert_int_eq(tlog_writer_close(w), 0);
	v = th_segs(th_P, &n);
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_eq(v[n - 1].base, 7);
	ck_assert_uint_eq(v[n - 1].records, 1);
	free(v);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 8);
	/* And so again at the next open. */
	th_close();
	th_open_tp(NULL);
	tlog_partition_stats(th_P, &st);
	ck_assert_uint_eq(st.end_offset, 8);
}
END_TEST

/* ---- the consumed rule ---- */

/* Three segments of 10 records: 0-9 and 10-19 sealed, 20-29 active;
 * record i at TH_T0 + i. */
static void
three_segments(struct tlog_partition *p)
{
	int i;

	for (i = 0; i < 3; i++) {
		if (i > 0)
			ck_assert_int_eq(tlog_partition_seal(p,
			    TLOG_TRIG_MANUAL), 0);
		lines(p, 10);
	}
	ck_assert_uint_eq(th_nsegs(p), 3);
}

/* th_P under retention.consumed.ms = age, with three_segments. */
static void
consumed_three(const char *age)
{
	th_set(th_S, th_P, "retention.consumed.ms", age);
	three_segments(th_P);
}

static uint64_t
first_base(struct tlog_partition *p)
{
	struct tlog_part_stats st;

	tlog_partition_stats(p, &st);
	return st.start_offset;
}

/* The consumed deletions the metrics count. */
static unsigned long
consumed_metric(void)
{
	char *txt, *at;
	size_t len;
	unsigned long v = 0;

	ck_assert_int_eq(tlog_metrics_format(th_S, &txt, &len), 0);
	at = strstr(txt, "tlogfs_deletions_total{rule=\"consumed\"} ");
	ck_assert_ptr_nonnull(at);
	v = strtoul(at + strlen("tlogfs_deletions_total{rule=\"consumed\"} "),
	    NULL, 10);
	free(txt);
	return v;
}

START_TEST(consumed_no_cursor_deletes_nothing)
{
	struct tlog_reap_stats st;

	consumed_three("1s");
	ck_assert_int_eq(tlog_part_consume(th_P, 64, NULL), 0);
	th_clock += 86400000;
	ck_assert_int_eq(tlog_part_consume(th_P, 64, NULL), 0);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 0);
	ck_assert_uint_eq(th_nsegs(th_P), 3);
}
END_TEST

START_TEST(consumed_one_cursor_straddling)
{
	struct tlog_reap_stats st;

	consumed_three("1s");
	/* 15 lies inside the second segment: only the first is passed. */
	ck_assert_int_eq(set(th_P, "a", "15"), 0);
	/* Due once the first segment's newest record (TH_T0 + 9) is
	 * older than 1 s. */
	ck_assert_int_eq(tlog_part_due(th_P, TLOG_DUE_ALL),
	    TH_T0 + 9 + 1000 + 1);
	ck_assert_int_eq(tlog_reaper_next_due(th_S), TH_T0 + 9 + 1001);
	th_clock = TH_T0 + 9 + 1000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 0);
	ck_assert_uint_eq(th_nsegs(th_P), 3);
	th_clock = TH_T0 + 86400000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 1);
	ck_assert_uint_eq(th_nsegs(th_P), 2);
	ck_assert_uint_eq(first_base(th_P), 10);
	ck_assert_int_eq(tlog_store_unlink_pending(th_S, 0), 1);
	ck_assert_uint_eq(consumed_metric(), 1);
	/* The straddled segment is not due: no fruitless visits. */
	ck_assert_int_eq(tlog_part_due(th_P, TLOG_DUE_ALL),
	    TH_T0 + 20 + 604800000LL);
	/* Exactly at its end, it is passed (base + records <= cursor). */
	ck_assert_int_eq(set(th_P, "a", "20"), 0);
	ck_assert_int_eq(tlog_part_due(th_P, TLOG_DUE_ALL),
	    TH_T0 + 19 + 1001);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 1);
	ck_assert_uint_eq(first_base(th_P), 20);
	/* The active one, once wholly consumed, is sealed and goes. */
	ck_assert_int_eq(set(th_P, "a", "30"), 0);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 1);
	ck_assert_uint_eq(th_nsegs(th_P), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(th_S, 0), 2);
	ck_assert_uint_eq(consumed_metric(), 3);
	/* The cursor stays where it was; appends go on at 30. */
	ck_assert_uint_eq(get(th_P, "a"), 30);
	lines(th_P, 1);
	ck_assert_uint_eq(first_base(th_P), 30);
}
END_TEST

START_TEST(consumed_two_cursors_slowest_wins)
{
	struct tlog_reap_stats st;

	consumed_three("1s");
	ck_assert_int_eq(set(th_P, "fast", "30"), 0);
	ck_assert_int_eq(set(th_P, "slow", "9"), 0);
	th_clock = TH_T0 + 86400000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 0);
	ck_assert_uint_eq(th_nsegs(th_P), 3);
	ck_assert_int_eq(set(th_P, "slow", "25"), 0);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 2);
	ck_assert_uint_eq(first_base(th_P), 20);
	/* Dropping the slow one leaves the fast one the slowest. */
	ck_assert_int_eq(tlog_partition_cursor_remove(th_P, "slow"), 0);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.consumed, 1);
	ck_assert_uint_eq(th_nsegs(th_P), 0);
}
END_TEST

START_TEST(consumed_waits_for_its_age)
{
	consumed_three("1h");
	ck_assert_int_eq(set(th_P, "a", "30"), 0);
	th_clock = TH_T0 + 9 + 3600000;
	ck_assert_int_eq(tlog_part_consume(th_P, 64, NULL), 0);
	th_clock = TH_T0 + 19 + 3600001;
	/* Oldest first, stopping at the first too young. */
	ck_assert_int_eq(tlog_part_consume(th_P, 64, NULL), 2);
	ck_assert_uint_eq(first_base(th_P), 20);
	/* Off (-1): nothing, cursors or not. */
	th_set(th_S, th_P, "retention.consumed.ms", "-1");
	th_clock += 86400000;
	ck_assert_int_eq(tlog_part_consume(th_P, 64, NULL), 0);
	ck_assert_uint_eq(th_nsegs(th_P), 1);
}
END_TEST

START_TEST(time_rule_ignores_cursors)
{
	struct tlog_reap_stats st;

	/* A cursor at 0 pins nothing against retention.ms. */
	th_set(th_S, th_P, "retention.consumed.ms", "1h");
	th_set(th_S, th_P, "retention.ms", "2s");
	three_segments(th_P);
	ck_assert_int_eq(set(th_P, "stuck", "0"), 0);
	th_clock = TH_T0 + 60000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.expired, 3);
	ck_assert_uint_eq(st.consumed, 0);
	ck_assert_uint_eq(th_nsegs(th_P), 0);
}
END_TEST

START_TEST(size_rule_ignores_cursors)
{
	char big[600];
	struct tlog_writer *w;

	th_set(th_S, th_P, "retention.consumed.ms", "1h");
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	big[sizeof(big) - 2] = '\n';
	w = tlog_writer_open(th_P);
	th_put(w, big);
	ck_assert_int_eq(tlog_writer_close(w), 0);
	ck_assert_int_eq(tlog_partition_seal(th_P, TLOG_TRIG_MANUAL), 0);
	w = tlog_writer_open(th_P);
	th_put(w, big);
	ck_assert_int_eq(tlog_writer_close(w), 0);
	ck_assert_int_eq(set(th_P, "stuck", "0"), 0);
	ck_assert_uint_eq(th_nsegs(th_P), 2);
	/* A ceiling lowered below what it holds: the oldest goes. */
	th_set(th_S, th_P, "retention.bytes", "1K");
	ck_assert_int_eq(tlog_part_enforce_size(th_P, 64, NULL), 1);
	ck_assert_uint_eq(th_nsegs(th_P), 1);
	ck_assert_uint_eq(get(th_P, "stuck"), 0);
}
END_TEST

/*
 * O(due): partitions whose old data no cursor has passed are not visited
 * at all; a commit makes exactly its partition due.
 */
START_TEST(commit_reschedules_only_its_partition)
{
	struct tlog_partition *v[50];
	struct tlog_reap_stats st;
	char name[16];
	int i;

	th_set(th_S, NULL, "retention.consumed.ms", "1s");
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		v[i] = th_part(th_S, "t", name);
		lines(v[i], 3);
		ck_assert_int_eq(set(v[i], "c", "0"), 0);
	}
	th_clock += 60000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 0);
	/* Their only due time is the idle seal, 7 days out. */
	ck_assert_int_ge(tlog_reaper_next_due(th_S), TH_T0 + 86400000LL);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(set(v[i], "c", "3"), 0);
	/* A commit that passes nothing does not make its partition due. */
	ck_assert_int_eq(set(v[10], "c", "2"), 0);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 5);
	ck_assert_uint_eq(st.consumed, 5);
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 0);
	for (i = 0; i < 50; i++) {
		ck_assert_uint_eq(th_nsegs(v[i]), i < 5 ? 0 : 1);
		tlog_partition_put(v[i]);
	}
}
END_TEST

START_TEST(config_change_reschedules_consumed)
{
	struct tlog_reap_stats st;

	three_segments(th_P);
	ck_assert_int_eq(set(th_P, "a", "30"), 0);
	th_clock = TH_T0 + 60000;
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 0);
	th_set(th_S, NULL, "retention.consumed.ms", "10s");
	tlog_reaper_cycle(th_S, &st);
	ck_assert_uint_eq(st.visited, 1);
	ck_assert_uint_eq(st.consumed, 3);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cursor");

	th_hooks(suite_setup, suite_teardown);
	TH_CASE(s, commit_get_list_drop);
	TH_CASE(s, lag_counts_from_start_offset);
	TH_CASE(s, lag_metric);
	TH_CASE(s, einval_table);
	TH_CASE(s, file_format_and_reload);
	TH_CASE(s, damaged_checksum);
	TH_CASE(s, damaged_torn);
	TH_CASE(s, damaged_garbage);
	TH_CASE(s, damaged_offset_out_of_range);
	TH_CASE(s, load_out_of_memory_frees);
	TH_CASE(s, cursors_capped);
	TH_CASE(s, rename_keeps_rmdir_drops);
	TH_CASE(s, identity_lasts_until_remade);
	TH_CASE(s, identity_readonly_and_damaged);
	TH_CASE(s, identity_copied_or_stray);
	TH_CASE(s, readonly_refuses);
	TH_CASE(s, recovery_end_at_least_max_cursor);
	TH_CASE(s, consumed_no_cursor_deletes_nothing);
	TH_CASE(s, consumed_one_cursor_straddling);
	TH_CASE(s, consumed_two_cursors_slowest_wins);
	TH_CASE(s, consumed_waits_for_its_age);
	TH_CASE(s, time_rule_ignores_cursors);
	TH_CASE(s, size_rule_ignores_cursors);
	TH_CASE(s, commit_reschedules_only_its_partition);
	TH_CASE(s, config_change_reschedules_consumed);
	TH_CASE(s, racing_first_commits_both_land);
	TH_CASE(s, commits_race_renames);
	return th_run(s);
}
