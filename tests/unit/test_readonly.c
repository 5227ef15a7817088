/*
 * test_readonly.c - a store opened read-only (tlog_store_opts.readonly,
 * the mount's -o ro) changes nothing: not one file's bytes, size,
 * blocks, times or inode, however much recovery would repair. Its
 * repairs stay in memory: whole records only are served, and look-ups
 * read the repaired index. Every changing call gives -EROFS.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reaper.h"
#include "retention.h"
#include "store.h"
#include "testhelp.h"

#define T0 4102444800000LL	/* 2100-01-01: later than any file mtime */
#define NREC 45
#define NONL 15			/* the record without newline */

static char *rec[NREC];		/* every record as appended */

/* ---- a picture of the whole tree ---- */

static char **snap_v;
static size_t snap_n, snap_cap;
static size_t snap_root;

static int
snap_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char *line, *data = NULL;
	uint32_t crc = 0;
	size_t len = 0;

	(void)flag;
	(void)ftw;
	if (S_ISREG(st->st_mode)) {
		data = th_slurp(path, &len);
		ck_assert_ptr_nonnull(data);
		crc = tlog_crc32c(0, data, len);
		free(data);
	}
	ck_assert_int_ge(asprintf(&line, "%s mode=%o ino=%llu size=%lld "
	    "blocks=%lld mtime=%lld.%09ld ctime=%lld.%09ld crc=%08x",
	    path + snap_root, (unsigned)st->st_mode,
	    (unsigned long long)st->st_ino, (long long)st->st_size,
	    (long long)st->st_blocks, (long long)st->st_mtim.tv_sec,
	    st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
	    st->st_ctim.tv_nsec, crc), 0);
	if (snap_n == snap_cap) {
		snap_cap = snap_cap ? snap_cap * 2 : 64;
		snap_v = reallocarray(snap_v, snap_cap, sizeof(*snap_v));
		ck_assert_ptr_nonnull(snap_v);
	}
	snap_v[snap_n++] = line;
	return 0;
}

static int
line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every entry below th_dir: name, mode, inode, size, blocks, mtime, ctime
 * and a CRC of its bytes, sorted; one string. */
static char *
snapshot(void)
{
	char *out;
	size_t i, len = 1;

	snap_n = 0;
	snap_root = strlen(th_dir);
	ck_assert_int_eq(nftw(th_dir, snap_one, 16, FTW_PHYS), 0);
	qsort(snap_v, snap_n, sizeof(*snap_v), line_cmp);
	for (i = 0; i < snap_n; i++)
		len += strlen(snap_v[i]) + 1;
	out = malloc(len);
	ck_assert_ptr_nonnull(out);
	out[0] = '\0';
	for (i = 0; i < snap_n; i++) {
		strcat(out, snap_v[i]);
		strcat(out, "\n");
		free(snap_v[i]);
	}
	free(snap_v);
	snap_v = NULL;
	snap_cap = 0;
	return out;
}

/* Fails naming the first line where two snapshots differ. */
static void
same_tree(const char *before, const char *after)
{
	size_t i = 0, ls = 0;

	while (before[i] != '\0' && before[i] == after[i]) {
		if (before[i] == '\n')
			ls = i + 1;
		i++;
	}
	ck_assert_msg(before[i] == after[i], "the store changed:\n"
	    "before: %.*s\nafter:  %.*s", (int)strcspn(before + ls, "\n"),
	    before + ls, (int)strcspn(after + ls, "\n"), after + ls);
}

/* ---- a store that needs every kind of repair ---- */

static char *
path_of(const char *rel)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/%s", th_dir, rel), 0);
	return p;
}

static char *
seg_path(const char *part, uint64_t base, const char *ext)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/t/%s/%020llu%s", th_dir, part,
	    (unsigned long long)base, ext), 0);
	return p;
}

static void
put_file(const char *path, const char *data, int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, strlen(data)),
	    (ssize_t)strlen(data));
	close(fd);
}

static void
cut_by(const char *path, off_t by)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(truncate(path, st.st_size - by), 0);
}

static void
reserve(const char *path, off_t len)
{
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, len), 0);
	close(fd);
}

/*
 * t/0 holds 45 records of 100 bytes, one a second, in segments of 10
 * (segment.bytes=1K): 0-9, 10-19, 20-29, 30-39 and the active 40-44.
 * Record 15 has no newline (flushed), so counting newlines from a
 * segment's start misplaces every record after it. Then, by hand:
 *   segment 0: 64 KiB reserved past its data (recovery trims it), and
 *              past retention.ms (1h) once the clock moves on;
 *   segment 1: its index's footer torn (garbage after it);
 *   segment 2: its index missing;
 *   segment 3: its footer cut off (unsealed behind a newer segment);
 *   active:    an unfinished line at its end, and space reserved;
 *   strays:    a .tmp file, an index without data;
 *   t/1:       an empty segment behind one whose index is missing.
 * The clean mark is there (the store closed cleanly before the damage)
 * unless `clean` is false; the lock file names another pid.
 */
static void
make_store(uint64_t base[5], bool clean)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	char *f;
	size_t n;
	int i;

	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	th_set(s, p, "segment.bytes", "1K");
	th_set(s, p, "retention.ms", "1h");
	w = tlog_writer_open(p);
	for (i = 0; i < NREC; i++) {
		th_clock = T0 + i * 1000;
		ck_assert_int_ge(asprintf(&rec[i], "record %02d %0*d%s", i,
		    i == NONL ? 90 : 89, i, i == NONL ? "" : "\n"), 0);
		ck_assert_uint_eq(strlen(rec[i]), 100);
		th_put(w, rec[i]);
		if (i == NONL)
			ck_assert_int_eq(tlog_writer_flush(w), 0);
	}
	ck_assert_int_eq(tlog_writer_close(w), 0);
	ck_assert_int_eq(tlog_partition_segments(p, &si, &n), 0);
	ck_assert_uint_eq(n, 5);
	for (i = 0; i < 5; i++) {
		base[i] = si[i].base;
		ck_assert_uint_eq(base[i], (uint64_t)i * 10);
	}
	free(si);
	tlog_partition_put(p);
	tlog_partition_put(th_part(s, "t", "1"));
	tlog_store_close(s);

	f = seg_path("0", base[0], ".log");
	reserve(f, 65536);
	free(f);
	f = seg_path("0", base[1], ".idx");
	put_file(f, "\xff\xff\xff\xff\xff\xff\xff", O_APPEND);
	free(f);
	f = seg_path("0", base[2], ".idx");
	ck_assert_int_eq(unlink(f), 0);
	free(f);
	f = seg_path("0", base[3], ".idx");
	cut_by(f, 48);
	free(f);
	f = seg_path("0", base[4], ".log");
	put_file(f, "an unfinished line", O_APPEND);
	reserve(f, 65536);
	free(f);
	f = path_of("t/0/00000000000000000040.idx.tmp");
	put_file(f, "half", O_TRUNC);
	free(f);
	f = seg_path("0", 99999, ".idx");
	put_file(f, "no data", O_TRUNC);
	free(f);
	f = seg_path("1", 0, ".log");
	put_file(f, "", O_TRUNC);
	free(f);
	f = seg_path("1", 0, ".idx");
	put_file(f, "", O_TRUNC);
	free(f);
	f = seg_path("1", 5, ".log");
	put_file(f, "one\ntwo\n", O_TRUNC);
	free(f);
	f = path_of(".tlogfs/lock");
	put_file(f, "4242\n", O_TRUNC);
	free(f);
	f = path_of(".tlogfs/clean");
	if (!clean)
		ck_assert_int_eq(unlink(f), 0);
	free(f);
}

static struct tlog_store *
open_ro(void)
{
	struct tlog_store_opts o;

	memset(&o, 0, sizeof(o));
	o.readonly = true;
	return th_open_opts(th_dir, &o);
}

/* Every record's place: seek by offset finds it, by its time too. */
static void
check_seeks(struct tlog_partition *p, uint64_t base[5])
{
	struct tlog_segment *seg;
	struct tlog_pos at;
	char buf[128];
	ssize_t r;
	int i, fd;

	for (i = 0; i < NREC; i++) {
		ck_assert_int_eq(tlog_partition_seek(p, (uint64_t)i, &at), 0);
		ck_assert_uint_eq(at.offset, (uint64_t)i);
		ck_assert_uint_eq(at.base, base[i / 10]);
		seg = tlog_segment_get(p, at.base);
		ck_assert_ptr_nonnull(seg);
		fd = tlog_segment_open(seg);
		ck_assert_int_ge(fd, 0);
		r = tlog_segment_read(seg, fd, buf, 100, (off_t)at.pos);
		tlog_segment_close(seg, fd);
		tlog_segment_put(seg);
		ck_assert_int_eq(r, 100);
		ck_assert_msg(memcmp(buf, rec[i], 100) == 0,
		    "offset %d: found \"%.20s\" at %llu", i, buf,
		    (unsigned long long)at.pos);
	}
	/* The repaired index of segment 1 still knows where the record
	 * after the one without newline starts, and when. */
	ck_assert_int_eq(tlog_partition_seek_time(p, T0 + (NONL + 1) * 1000,
	    &at), 0);
	ck_assert_uint_eq(at.offset, NONL + 1);
	ck_assert_uint_eq(at.pos, (NONL + 1 - 10) * 100);
}

/* What recovery serves: every whole record, nothing of the torn tail;
 * t/1 its two records. */
static void
check_served(struct tlog_store *s, uint64_t base[5])
{
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_part_stats ps;
	char want[NREC * 100 + 1], *got;
	size_t len;
	int i;

	want[0] = '\0';
	for (i = 0; i < NREC; i++)
		strcat(want, rec[i]);
	got = th_partition_data(p, &len);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_str_eq(got, want);
	free(got);
	tlog_partition_stats(p, &ps);
	ck_assert_uint_eq(ps.start_offset, 0);
	ck_assert_uint_eq(ps.end_offset, NREC);
	ck_assert_uint_eq(ps.segments, 5);
	check_seeks(p, base);
	tlog_partition_put(p);
	p = th_part(s, "t", "1");
	got = th_partition_data(p, &len);
	ck_assert_str_eq(got, "one\ntwo\n");
	free(got);
	tlog_partition_put(p);
}

/* Every call that would change the store. */
static void
check_refusals(struct tlog_store *s)
{
	struct tlog_topic *t = tlog_topic_get(s, "t");
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_reap_stats st;
	struct tlog_writer *w;
	char err[256];

	ck_assert_ptr_nonnull(t);
	ck_assert(s->ctx.ro);
	ck_assert_int_eq(tlog_topic_create(s, "new", NULL), -EROFS);
	ck_assert_int_eq(tlog_topic_remove(s, "t"), -EROFS);
	ck_assert_int_eq(tlog_topic_rename(s, "t", "u"), -EROFS);
	ck_assert_int_eq(tlog_partition_create(t, "9", NULL), -EROFS);
	ck_assert_int_eq(tlog_partition_remove(t, "1"), -EROFS);
	ck_assert_int_eq(tlog_partition_rename(t, "0", "9"), -EROFS);
	ck_assert_int_eq(tlog_conf_set(s, NULL, p, "retention.ms", "2h", 2,
	    err, sizeof(err)), -EROFS);
	ck_assert_int_eq(tlog_conf_set(s, NULL, NULL, "segment.ms", "1h", 2,
	    err, sizeof(err)), -EROFS);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "retention.ms"), -EROFS);
	ck_assert_int_eq(tlog_level_chmod(s, t, NULL, 0700), -EROFS);
	ck_assert_int_eq(tlog_level_chown(s, NULL, p, 1, 1), -EROFS);
	ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), -EROFS);
	ck_assert_int_eq(tlog_part_seal_idle(p), -EROFS);
	ck_assert_int_eq(tlog_partition_delete(p, 0), -EROFS);
	ck_assert_int_eq(tlog_partition_delete(p, 40), -EROFS);
	ck_assert_int_eq(tlog_part_expire(p, 64, NULL), -EROFS);
	ck_assert_int_eq(tlog_part_enforce_size(p, 64, NULL), -EROFS);
	w = tlog_writer_open(p);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(tlog_writer_write(w, "a line\n", 7), -EROFS);
	ck_assert_int_eq(tlog_writer_write(w, "held?", 5), -EROFS);
	ck_assert_uint_eq(__atomic_load_n(&p->ctx->held, __ATOMIC_RELAXED), 0);
	ck_assert_int_eq(tlog_writer_fsync(w, false), 0);
	ck_assert_int_eq(tlog_writer_close(w), 0);
	/* Nothing to make durable; the boundary an fsync writes would
	 * change the active segment's index. */
	ck_assert_int_eq(tlog_partition_fsync(p, false), 0);
	/* The reaper has nothing it may do, whatever is past due. */
	ck_assert_int_eq(tlog_reaper_cycle(s, &st), -1);
	ck_assert_uint_eq(st.sealed + st.expired + st.sized, 0);
	ck_assert_uint_eq(tlog_reaper_scheduled(s), 0);
	ck_assert_int_eq(tlog_reaper_start(s), 0);
	tlog_reaper_stop(s);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 0);
	ck_assert_int_eq(tlog_store_flush_pending(s, 0), 0);
	tlog_store_update_pid(s);
	tlog_partition_put(p);
	tlog_topic_put(t);
}

static void
readonly_changes_nothing(bool clean)
{
	struct tlog_store *s;
	uint64_t base[5];
	char *before, *after;

	if (!clean)
		strlcpy(th_boot_id, "boot-1", sizeof(th_boot_id));
	make_store(base, clean);
	if (!clean)
		strlcpy(th_boot_id, "boot-2", sizeof(th_boot_id));	/* a power cut */
	before = snapshot();
	/* Past every segment's retention, and the active one's idle seal. */
	th_clock = T0 + 10 * 3600 * 1000LL;
	s = open_ro();
	check_served(s, base);
	check_refusals(s);
	check_served(s, base);
	tlog_store_close(s);
	after = snapshot();
	same_tree(before, after);
	free(after);
	/* A read-write open then makes the repairs and serves the same. */
	s = th_open(th_dir);
	check_served(s, base);
	tlog_store_close(s);
	after = snapshot();
	ck_assert_str_ne(after, before);
	free(before);
	free(after);
}

static void
suite_setup(void)
{
	th_clock = T0;
}

static void
suite_teardown(void)
{
	int i;

	for (i = 0; i < NREC; i++) {
		free(rec[i]);
		rec[i] = NULL;
	}
	th_boot_id[0] = '\0';
}

START_TEST(readonly_after_clean_close_changes_nothing)
{
	readonly_changes_nothing(true);
}
END_TEST

/* After a crash in another boot: a writer would check data CRCs, write
 * the boot id, sync, and leave a clean mark at close. */
START_TEST(readonly_after_power_cut_changes_nothing)
{
	readonly_changes_nothing(false);
}
END_TEST

/* Readers share the store; a writer and a reader exclude each other. */
START_TEST(readonly_lock_is_shared)
{
	struct tlog_store_opts o;
	struct tlog_store *a, *b, *w;
	char err[512];

	tlog_store_close(th_open(th_dir));
	a = open_ro();
	b = open_ro();
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(tlog_store_open(th_dir, &o, &w, err, sizeof(err)),
	    -EBUSY);
	ck_assert_msg(strstr(err, "read-only") != NULL, "%s", err);
	tlog_store_close(a);
	tlog_store_close(b);
	w = th_open(th_dir);
	o.readonly = true;
	ck_assert_int_eq(tlog_store_open(th_dir, &o, &a, err, sizeof(err)),
	    -EBUSY);
	ck_assert_msg(strstr(err, "in use by pid") != NULL, "%s", err);
	tlog_store_close(w);
}
END_TEST

/* A directory that is no store stays as it is. */
START_TEST(readonly_creates_no_store)
{
	struct tlog_store_opts o;
	struct tlog_store *s;
	char err[512], *before, *after;

	before = snapshot();
	memset(&o, 0, sizeof(o));
	o.readonly = true;
	ck_assert_int_eq(tlog_store_open(th_dir, &o, &s, err, sizeof(err)),
	    -ENOENT);
	ck_assert_msg(strstr(err, "not a tlogfs store") != NULL, "%s", err);
	after = snapshot();
	same_tree(before, after);
	free(before);
	free(after);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("readonly");

	th_hooks(suite_setup, suite_teardown);
	TH_CASE(s, readonly_after_clean_close_changes_nothing);
	TH_CASE(s, readonly_after_power_cut_changes_nothing);
	TH_CASE(s, readonly_lock_is_shared);
	TH_CASE(s, readonly_creates_no_store);
	return th_run(s);
}
