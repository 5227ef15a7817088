/*
 * test_checkpoint.c - the periodic checkpoint (doc/format.md, "The
 * checkpoint"): after a crash, or a power cut, the open takes every
 * partition unchanged since the last periodic checkpoint from it, and
 * reads the files of the others; a segment sealed, written or deleted
 * after it is recovered as without one.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "checkpoint.h"
#include "index.h"
#include "store.h"
#include "util.h"

#define LINES 300
#define MORE 40

/* Line i of partition `which` (0 or 1): 24 to 63 bytes, newline last. */
static size_t
line(char *buf, size_t cap, int which, unsigned i)
{
	return (size_t)snprintf(buf, cap, "p%d record %04u %.*s\n", which, i,
	    (int)(i % 40), "........................................");
}

/* Lines [from, to) of partition `which`, as one string. */
static char *
lines(int which, unsigned from, unsigned to, size_t *len)
{
	char *b = malloc((size_t)(to - from) * 64 + 1);
	unsigned i;

	ck_assert_ptr_nonnull(b);
	*len = 0;
	for (i = from; i < to; i++)
		*len += line(b + *len, 64, which, i);
	return b;
}

static void
put_lines(struct tlog_writer *w, int which, unsigned from, unsigned to)
{
	size_t len;
	char *b = lines(which, from, to, &len);

	ck_assert_int_eq(tlog_writer_write(w, b, len), (ssize_t)len);
	free(b);
}

/* What the child tells the parent. */
struct res {
	uint64_t deleted_end;	/* t/1's records the deletion took */
	unsigned sealed_before;	/* t/0's sealed segments at the checkpoint */
	uint64_t bases[64];	/* t/0's segment bases */
};

/*
 * Two partitions of 2 KiB segments, every sealed segment flushed, a
 * periodic checkpoint; then t/1 changes (more lines, so a seal and a
 * write into the new active segment, and its oldest segment deleted),
 * both partitions are synced, and the power is cut.
 */
static void
load(void *arg)
{
	struct res *r = arg;
	struct tlog_store *s;
	struct tlog_partition *p0, *p1;
	struct tlog_writer *w0, *w1;
	struct tlog_seginfo *si;
	size_t n, i;

	th_dur_start(th_dir);
	s = th_keep(th_open(th_dir));
	p0 = th_part(s, "t", "0");
	p1 = th_part(s, "t", "1");
	th_set(s, p0, "segment.bytes", "2K");
	th_set(s, p1, "segment.bytes", "2K");
	w0 = th_keep(tlog_writer_open(p0));
	w1 = th_keep(tlog_writer_open(p1));
	put_lines(w0, 0, 0, LINES);
	put_lines(w1, 1, 0, LINES);
	ck_assert_int_eq(tlog_writer_fsync(w0, true), 0);
	ck_assert_int_eq(tlog_writer_fsync(w1, true), 0);
	tlog_store_flush_pending(s, 0);
	ck_assert_int_eq(tlog_store_checkpoint(s), 0);

	si = th_segs(p0, &n);
	ck_assert_uint_le(n, 64);
	for (i = 0; i < n; i++) {
		r->bases[i] = si[i].base;
		r->sealed_before += si[i].sealed;
	}
	ck_assert_uint_ge(r->sealed_before, 4);
	free(si);

	put_lines(w1, 1, LINES, LINES + MORE);
	si = th_segs(p1, &n);
	r->deleted_end = si[1].base;
	free(si);
	ck_assert_int_eq(tlog_partition_delete(p1, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 1);
	ck_assert_int_eq(tlog_writer_fsync(w1, true), 0);
	th_powercut(th_dir, 3, TH_CUT_MIXED);
}

/* t/1 holds its lines from the deleted segment's end on (or from 0: the
 * power cut may undo an unlink whose directory was not synced; the data
 * is then kept longer, never lost), then the MORE lines. */
static void
check_changed(struct tlog_store *s, uint64_t deleted_end)
{
	struct tlog_partition *p = th_part(s, "t", "1");
	struct tlog_part_stats st;
	uint64_t first;
	size_t len, elen;
	char *d, *e;

	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, LINES + MORE);
	first = st.start_offset;
	ck_assert(first == 0 || first == deleted_end);
	d = th_partition_data(p, &len);
	e = lines(1, (unsigned)first, LINES + MORE, &elen);
	ck_assert_uint_eq(len, elen);
	ck_assert(memcmp(d, e, len) == 0);
	free(d);
	free(e);
	tlog_partition_put(p);
}

/*
 * After the power cut, t/0 (unchanged since the checkpoint) is taken
 * from it: its sealed segments' indexes are emptied here, and the open
 * neither notices nor rebuilds them, yet has every segment as it was.
 * t/1, whose directory changed, is read from its files: the deletion
 * and the later seal and writes are all there.
 */
START_TEST(unchanged_partition_taken_after_power_cut)
{
	struct res r;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	size_t n, i;

	memset(&r, 0, sizeof(r));
	th_in_child(load, &r, sizeof(r));
	th_new_boot();
	th_empty_indexes(r.bases, r.sealed_before);
	th_logbuf[0] = '\0';
	s = th_open(th_dir);
	ck_assert(!s->rc.was_clean);
	ck_assert_msg(strstr(th_logbuf, "t/0/") == NULL, "log: %s", th_logbuf);
	p = th_part(s, "t", "0");
	si = th_segs(p, &n);
	ck_assert_uint_ge(n, r.sealed_before);
	for (i = 0; i < r.sealed_before; i++) {
		ck_assert_uint_eq(si[i].base, r.bases[i]);
		ck_assert(si[i].sealed);
	}
	free(si);
	tlog_partition_put(p);
	check_changed(s, r.deleted_end);
	tlog_store_close(s);
}
END_TEST

/* The same power cut, the indexes left alone: every record of both
 * partitions reads back, and appends go on. */
START_TEST(records_after_power_cut)
{
	struct res r;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_part_stats st;
	size_t len, elen;
	char *d, *e;

	memset(&r, 0, sizeof(r));
	th_in_child(load, &r, sizeof(r));
	th_new_boot();
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	d = th_partition_data(p, &len);
	e = lines(0, 0, LINES, &elen);
	ck_assert_uint_eq(len, elen);
	ck_assert(memcmp(d, e, len) == 0);
	free(d);
	free(e);
	w = tlog_writer_open(p);
	put_lines(w, 0, LINES, LINES + 1);
	tlog_writer_close(w);
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, LINES + 1);
	tlog_partition_put(p);
	check_changed(s, r.deleted_end);
	tlog_store_close(s);
}
END_TEST

/* Three partitions of sealed, flushed segments and a periodic
 * checkpoint; then a crash. */
static void
three_load(void *arg)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	char name[2];
	int k;

	(void)arg;
	s = th_keep(th_open(th_dir));
	for (k = 0; k < 3; k++) {
		snprintf(name, sizeof(name), "%d", k);
		p = th_part(s, "t", name);
		th_set(s, p, "segment.bytes", "2K");
		w = th_keep(tlog_writer_open(p));
		put_lines(w, k, 0, LINES);
		ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	}
	tlog_store_flush_pending(s, 0);
	ck_assert_int_eq(tlog_store_checkpoint(s), 0);
}

/* Empties the indexes of t/k's sealed segments (all but the newest). */
static void
empty_indexes(int k)
{
	struct tlog_store_opts o;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	char path[4096], name[2];
	size_t n, i;

	memset(&o, 0, sizeof(o));
	o.readonly = true;
	s = th_open_opts(th_dir, &o);
	snprintf(name, sizeof(name), "%d", k);
	p = th_part(s, "t", name);
	si = th_segs(p, &n);
	tlog_partition_put(p);
	tlog_store_close(s);
	for (i = 0; i + 1 < n; i++) {
		snprintf(path, sizeof(path), "%s/t/%d/%020llu.idx", th_dir, k,
		    (unsigned long long)si[i].base);
		ck_assert_int_eq(truncate(path, 0), 0);
	}
	free(si);
}

/*
 * A periodic checkpoint is built one partition at a time, so partitions
 * swapped meanwhile can leave a path named twice: both parts go (those
 * partitions are read from their files), the rest is still taken from
 * it, and nothing calls the file damaged.
 */
START_TEST(path_named_twice_drops_only_those)
{
	char path[4096], *b, *at;
	size_t len;
	int dummy = 0;
	FILE *f;

	th_in_child(three_load, &dummy, sizeof(dummy));
	snprintf(path, sizeof(path), "%s/.tlogfs/checkpoint", th_dir);
	b = th_slurp(path, &len);
	ck_assert_ptr_nonnull(b);
	/* t/1's path made t/0's, the CRC made right again. */
	at = memmem(b, len, "t/1", 3);
	ck_assert_ptr_nonnull(at);
	at[2] = '0';
	tlog_put32((unsigned char *)b + len - 4,
	    tlog_crc32c(0, (unsigned char *)b, len - 4));
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(b, 1, len, f), len);
	fclose(f);
	free(b);
	empty_indexes(0);
	empty_indexes(2);
	th_logbuf[0] = '\0';
	tlog_store_close(th_open(th_dir));
	ck_assert_msg(strstr(th_logbuf, "damaged") == NULL, "log: %s",
	    th_logbuf);
	ck_assert_msg(strstr(th_logbuf, "t/2/") == NULL, "log: %s", th_logbuf);
	ck_assert_msg(strstr(th_logbuf, "t/0/") != NULL, "log: %s", th_logbuf);
}
END_TEST

/* t/0 of 2 KiB segments compressed at their seal: LINES lines, every
 * sealed segment compressed; then a crash, with no checkpoint written. */
static void
zload(void *arg)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;

	(void)arg;
	s = th_keep(th_open(th_dir));
	p = th_part(s, "t", "0");
	th_set(s, p, "compression.type", "zstd");
	th_set(s, p, "segment.bytes", "2K");
	w = tlog_writer_open(p);
	ck_assert_ptr_nonnull(w);
	put_lines(w, 0, 0, LINES);
	tlog_writer_close(w);
	ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(s, 0);
	while (tlog_store_compress_pending(s, 0) > 0)
		;
}

/* The open after it, which loads t/0's compressed segments from their
 * files (there is no checkpoint), then a periodic checkpoint and a
 * crash; the segments' bases in *arg. */
static void
zreload(void *arg)
{
	struct res *r = arg;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_seginfo *si;
	size_t n, i;

	s = th_keep(th_open(th_dir));
	p = th_keep(th_part(s, "t", "0"));
	si = th_segs(p, &n);
	ck_assert_uint_le(n, 64);
	for (i = 0; i < n; i++) {
		ck_assert_uint_gt(si[i].zbytes, 0);
		r->bases[i] = si[i].base;
	}
	r->sealed_before = (unsigned)n;
	free(si);
	ck_assert_int_eq(tlog_store_checkpoint(s), 0);
}

/*
 * A sealed compressed segment loaded from its files is on disk for good,
 * as one a checkpoint names: the next periodic checkpoint names it, so
 * that after a crash its index (emptied here) is never read.
 */
START_TEST(checkpoint_takes_compressed_segments_loaded_from_files)
{
	struct res r;
	size_t len, elen;
	char *d, *e;

	memset(&r, 0, sizeof(r));
	th_in_child(zload, &r, sizeof(r));
	ck_assert(!th_exists(TLOG_CKPT_PATH));
	th_in_child(zreload, &r, sizeof(r));
	ck_assert_uint_ge(r.sealed_before, 4);
	free(th_open_indexes_emptied(r.bases, r.sealed_before));
	d = th_partition_data(th_P, &len);
	e = lines(0, 0, LINES, &elen);
	ck_assert_uint_eq(len, elen);
	ck_assert(memcmp(d, e, len) == 0);
	free(d);
	free(e);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("checkpoint");

	TH_CASE(s, unchanged_partition_taken_after_power_cut);
	TH_CASE(s, records_after_power_cut);
	TH_CASE(s, path_named_twice_drops_only_those);
	TH_CASE(s, checkpoint_takes_compressed_segments_loaded_from_files);
	return th_run(s);
}
