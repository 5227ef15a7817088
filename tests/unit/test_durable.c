/*
 * test_durable.c - what fsync and the store's own writes make durable,
 * checked by simulated power loss (powercut.c): a store is written,
 * everything no sync covered is taken away, the worst way, and the store
 * reopened as after a reboot. Also: writeback errors reach the next
 * fsync, and offsets never go backwards whatever was deleted.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testhelp.h"
#include "retention.h"
#include "store.h"

#define LINE 100		/* bytes per test line, newline included */

/* ---- the store's own writes ---- */

struct layout_res {
	int dummy;
};

static void
layout_load(void *arg)
{
	struct tlog_store *s;
	struct tlog_topic *t;
	struct tlog_partition *p;
	char err[256];

	(void)arg;
	th_dur_start(th_dir);
	s = th_keep(th_open(th_dir));
	ck_assert_int_eq(tlog_topic_create(s, "a", &t), 0);
	ck_assert_int_eq(tlog_topic_create(s, "b", NULL), 0);
	ck_assert_int_eq(tlog_topic_create(s, "gone", NULL), 0);
	ck_assert_int_eq(tlog_partition_create(t, "0", &p), 0);
	ck_assert_int_eq(tlog_partition_create(t, "1", NULL), 0);
	ck_assert_int_eq(tlog_partition_create(t, "2", NULL), 0);
	ck_assert_int_eq(tlog_conf_set(s, NULL, NULL, "retention.ms", "3d",
	    2, err, sizeof(err)), 0);
	ck_assert_int_eq(tlog_conf_set(s, t, NULL, "segment.ms", "1h", 2,
	    err, sizeof(err)), 0);
	ck_assert_int_eq(tlog_conf_set(s, NULL, p, "segment.bytes", "64K",
	    3, err, sizeof(err)), 0);
	ck_assert_int_eq(tlog_partition_rename(t, "1", "renamed"), 0);
	ck_assert_int_eq(tlog_partition_remove(t, "2"), 0);
	ck_assert_int_eq(tlog_topic_remove(s, "gone"), 0);
	ck_assert_int_eq(tlog_topic_rename(s, "b", "c"), 0);
	th_powercut(th_dir, 1, TH_CUT_TRUNCATE);
}

static void
suite_setup(void)
{
	th_sync_fail = NULL;
	th_unlink_hook = NULL;
	th_boot_id[0] = '\0';
}

static void
suite_teardown(void)
{
	th_dur_stop();
	th_sync_fail = NULL;
	th_unlink_hook = NULL;
	th_boot_id[0] = '\0';
}

START_TEST(layout_survives_power_loss)
{
	struct layout_res r = { 0 };
	struct tlog_store *s;
	struct tlog_topic *t;
	struct tlog_partition *p;
	struct tlog_dirent *de;
	size_t n;

	th_in_child(layout_load, &r, sizeof(r));
	th_new_boot();
	s = th_open(th_dir);
	ck_assert_int_eq(tlog_topic_list(s, &de, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(de[0].name, "a");
	ck_assert_str_eq(de[1].name, "c");
	free(de);
	t = tlog_topic_get(s, "a");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(tlog_partition_list(t, &de, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(de[0].name, "0");
	ck_assert_str_eq(de[1].name, "renamed");
	free(de);
	p = tlog_partition_get(t, "0");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_SEGMENT_BYTES), 65536);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_SEGMENT_MS), 3600000);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_RETENTION_MS),
	    3 * 86400000LL);
	tlog_partition_put(p);
	tlog_topic_put(t);
	tlog_store_close(s);
}
END_TEST

/* ---- offsets never go backwards ---- */

static uint64_t
end_after_reopen(void)
{
	struct tlog_store *s = th_open(th_dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_part_stats st;

	tlog_partition_stats(p, &st);
	tlog_partition_put(p);
	tlog_store_close(s);
	return st.end_offset;
}

/* Two segments [0,2) and [2,4), the second active. */
static struct tlog_store *
two_segments(struct tlog_partition **pp)
{
	struct tlog_store *s = th_open(th_dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_writer *w = tlog_writer_open(p);

	th_put(w, "r0\nr1\n");
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	th_put(w, "r2\nr3\n");
	tlog_writer_close(w);
	*pp = p;
	return s;
}

START_TEST(rm_current_keeps_end_offset)
{
	struct tlog_store *s;
	struct tlog_partition *p;

	s = two_segments(&p);
	ck_assert_int_eq(tlog_partition_delete(p, 2), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 1);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_uint_eq(end_after_reopen(), 4);
	/* Then the older one too. */
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 1);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_uint_eq(end_after_reopen(), 4);
}
END_TEST

/* Holds the first two unlinks of segment data until both drainers have
 * one in hand (the interleaving rmdir and the unlinker thread can take). */
static pthread_mutex_t race_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t race_cond = PTHREAD_COND_INITIALIZER;
static int race_arrived;

static void
race_hook(const char *name)
{
	struct timespec ts;
	size_t len = strlen(name);

	if (len < 4 || strcmp(name + len - 4, ".log") != 0)
		return;
	pthread_mutex_lock(&race_lock);
	if (race_arrived < 2) {
		race_arrived++;
		pthread_cond_broadcast(&race_cond);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		while (race_arrived < 2 && pthread_cond_timedwait(&race_cond,
		    &race_lock, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&race_lock);
}

static void *
drain_one(void *arg)
{
	tlog_store_unlink_pending(arg, 1);
	return NULL;
}

START_TEST(racing_drainers_keep_end_offset)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	pthread_t a, b;

	s = two_segments(&p);
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(tlog_partition_delete(p, 2), 0);
	race_arrived = 0;
	th_unlink_hook = race_hook;
	ck_assert_int_eq(pthread_create(&a, NULL, drain_one, s), 0);
	ck_assert_int_eq(pthread_create(&b, NULL, drain_one, s), 0);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	th_unlink_hook = NULL;
	ck_assert_int_eq(race_arrived, 2);
	ck_assert_uint_eq(tlog_queue_unlinks(&s->q), 0);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_uint_eq(end_after_reopen(), 4);
}
END_TEST

static void
delete_load(void *arg)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;

	(void)arg;
	th_dur_start(th_dir);
	s = th_keep(two_segments(&p));
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	tlog_writer_close(w);
	ck_assert_int_eq(tlog_partition_delete(p, 2), 0);
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 2);
	th_powercut(th_dir, 1, TH_CUT_ZERO);
}

/* The end offset a deletion relies on is on disk before the unlink. */
START_TEST(deletion_end_offset_is_durable)
{
	int r = 0;

	th_in_child(delete_load, &r, sizeof(r));
	th_new_boot();
	ck_assert_uint_eq(end_after_reopen(), 4);
}
END_TEST

/* The descriptor limit before no_fd_hook lowers it to none as the
 * unlinker takes its segment: the end offset's step (save_end) cannot
 * open the partition's directory. */
static struct rlimit nofile;

static void
no_fd_hook(void *arg, int point, struct tlog_partition *p)
{
	struct rlimit none = { 0, nofile.rlim_max };

	(void)arg;
	(void)p;
	if (point == TLOG_HOOK_UNLINK)
		setrlimit(RLIMIT_NOFILE, &none);
}

static void
dir_sync_load(void *arg)
{
	struct tlog_store_opts o;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;

	(void)arg;
	th_dur_start(th_dir);
	memset(&o, 0, sizeof(o));
	o.hook = no_fd_hook;
	s = th_keep(th_open_opts(th_dir, &o));
	p = th_part(s, "t", "0");
	w = th_keep(tlog_writer_open(p));
	th_put(w, "r0\n");
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	tlog_partition_seal(p, TLOG_TRIG_MANUAL);
	th_put(w, "r1\n");	/* a new segment: the directory changed */
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &nofile), 0);
	/* EMFILE: the segment goes back in the queue. */
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 0);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &nofile), 0);
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	th_powercut(th_dir, 1, TH_CUT_ZERO);
}

/* A deletion that could not open the directory to keep the end offset
 * (the newer segment's name keeps it) leaves the directory's sync to the
 * next fsync, which then makes the newer segment's files durable. */
START_TEST(failed_deletion_leaves_dir_sync_to_fsync)
{
	int r = 0;

	th_in_child(dir_sync_load, &r, sizeof(r));
	th_new_boot();
	ck_assert_uint_eq(end_after_reopen(), 2);
}
END_TEST

/* ---- fsync makes every earlier record durable ---- */

static char *
path_in(const char *rel)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/%s", th_dir, rel), 0);
	return p;
}

static bool
exists(const char *rel)
{
	char *p = path_in(rel);
	bool r = access(p, F_OK) == 0;

	free(p);
	return r;
}

/* Line k of writer w: "wW KKKKKK xxx...x\n", LINE bytes. */
static void
make_line(char *buf, int w, unsigned k)
{
	int n = snprintf(buf, LINE, "w%d %06u ", w, k);

	memset(buf + n, 'x', LINE - 1 - (size_t)n);
	buf[LINE - 1] = '\n';
}

/*
 * Checks every record of p: whole test lines of writer w, each at the
 * offset equal to its number (so nothing is repeated or moved), and the
 * first `acked` all there. Returns the partition's end offset.
 */
static uint64_t
check_lines(struct tlog_partition *p, int w, unsigned acked)
{
	struct tlog_seginfo *si;
	struct tlog_part_stats st;
	char want[LINE], *buf;
	size_t n, i, at;
	unsigned k, seen = 0;
	uint64_t off;

	ck_assert_int_eq(tlog_partition_segments(p, &si, &n), 0);
	for (i = 0; i < n; i++) {
		struct tlog_segment *seg = tlog_segment_get(p, si[i].base);
		int fd;

		ck_assert_ptr_nonnull(seg);
		ck_assert_uint_eq(si[i].bytes, si[i].records * LINE);
		buf = malloc(si[i].bytes + 1);
		fd = tlog_segment_open(seg);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(tlog_segment_read(seg, fd, buf, si[i].bytes,
		    0), (ssize_t)si[i].bytes);
		buf[si[i].bytes] = '\0';
		tlog_segment_close(seg, fd);
		for (at = 0, off = si[i].base; at < si[i].bytes;
		    at += LINE, off++) {
			ck_assert_int_eq(sscanf(buf + at + 3, "%6u", &k), 1);
			make_line(want, w, k);
			ck_assert_msg(memcmp(buf + at, want, LINE) == 0,
			    "segment %llu: a torn or foreign record at byte "
			    "%zu", (unsigned long long)si[i].base, at);
			ck_assert_msg(off == k, "line %u at offset %llu", k,
			    (unsigned long long)off);
			if (k < acked)
				seen++;
		}
		free(buf);
		tlog_segment_put(seg);
	}
	free(si);
	ck_assert_msg(seen == acked, "writer %d: %u of %u fsynced lines "
	    "left", w, seen, acked);
	tlog_partition_stats(p, &st);
	ck_assert_uint_ge(st.end_offset, acked);
	return st.end_offset;
}

/* A writeback error of a sealed segment reaches the next fsync, once, and
 * its footer is never written over data that may not be on disk. */
START_TEST(fsync_reports_sealed_segment_error)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct stat st;
	char line[LINE], *idx;
	int i;

	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	th_set(s, p, "segment.bytes", "1K");
	w = tlog_writer_open(p);
	for (i = 0; i < 15; i++) {
		make_line(line, 0, (unsigned)i);
		ck_assert_int_eq(tlog_writer_write(w, line, LINE), LINE);
	}
	th_sync_fail = "/00000000000000000000.log";
	ck_assert_int_eq(tlog_writer_fsync(w, true), -EIO);
	th_sync_fail = NULL;
	/* The line names the segment's partition and file. */
	ck_assert_ptr_nonnull(strstr(th_logbuf,
	    "t/0/00000000000000000000.log: cannot sync: "));
	idx = path_in("t/0/00000000000000000000.idx");
	ck_assert_int_eq(stat(idx, &st), 0);
	ck_assert_int_eq((st.st_size - TLOG_IDX_HDR) % TLOG_IDX_ENT, 0);
	free(idx);
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	tlog_writer_close(w);
	tlog_partition_put(p);
	tlog_store_close(s);
}
END_TEST

/* t/0 of a new store, and a writer of it. */
static struct tlog_store *t0_s;
static struct tlog_partition *t0_p;
static struct tlog_writer *t0_w;

static void
t0_open(void)
{
	t0_s = th_open(th_dir);
	t0_p = th_part(t0_s, "t", "0");
	t0_w = tlog_writer_open(t0_p);
}

static void
t0_close(void)
{
	tlog_writer_close(t0_w);
	tlog_partition_put(t0_p);
	tlog_store_close(t0_s);
}

/* Files may grow to max bytes (RLIMIT_FSIZE; old: what to restore): a
 * write across it is short and sets no errno, as on a full disk; errno
 * is left ENOTTY, as an earlier call might. No check until it is
 * restored: Check's own messages are files too. */
static void
fsize_limit(rlim_t max, struct rlimit *old)
{
	struct rlimit rl;

	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, old), 0);
	rl = *old;
	rl.rlim_cur = max;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	errno = ENOTTY;
}

static void
fsize_restore(const struct rlimit *old)
{
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, old), 0);
}

/* A short write of a new segment's index header fails the append with
 * ENOSPC, not with whatever errno an earlier call left, and leaves no
 * file of the segment behind. */
START_TEST(short_index_header_write_is_enospc)
{
	struct rlimit old;
	ssize_t r;

	t0_open();
	fsize_limit(TLOG_IDX_HDR / 2, &old);
	r = tlog_writer_write(t0_w, "a line\n", 7);
	fsize_restore(&old);
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert(!th_exists("t/0/00000000000000000000.log"));
	ck_assert(!th_exists("t/0/00000000000000000000.idx"));
	th_put(t0_w, "a line\n");
	t0_close();
}
END_TEST

/* A short write of a sealed segment's boundary entry fails its flush
 * with ENOSPC, not with whatever errno an earlier call left. */
START_TEST(short_boundary_write_is_enospc)
{
	struct rlimit old;
	int r;

	t0_open();
	th_put(t0_w, "a\n");
	th_put(t0_w, "b\n");	/* after the only entry: a boundary is owed */
	ck_assert_int_eq(tlog_partition_seal(t0_p, TLOG_TRIG_MANUAL), 0);
	fsize_limit(TLOG_IDX_HDR + TLOG_IDX_ENT + 2, &old);
	r = tlog_partition_fsync(t0_p, true);
	fsize_restore(&old);
	ck_assert_int_eq(r, -ENOSPC);
	t0_close();
}
END_TEST

/* Two partitions, a and b, of a store that keeps the files of one
 * segment open: a's line is written, so opening b's files evicts a's. */
struct one_fd {
	struct tlog_store *s;
	struct tlog_partition *a, *b;
	struct tlog_writer *wa, *wb;
};

static void
one_fd_open(struct one_fd *t)
{
	struct tlog_store_opts o;

	memset(&o, 0, sizeof(o));
	o.max_open_segments = 1;
	t->s = th_open_opts(th_dir, &o);
	t->a = th_part(t->s, "t", "a");
	t->b = th_part(t->s, "t", "b");
	t->wa = tlog_writer_open(t->a);
	t->wb = tlog_writer_open(t->b);
	th_put(t->wa, "a line\n");
}

static void
one_fd_close(struct one_fd *t)
{
	ck_assert_int_eq(tlog_writer_fsync(t->wa, false), 0);
	ck_assert_int_eq(tlog_writer_fsync(t->wb, false), 0);
	tlog_writer_close(t->wa);
	tlog_writer_close(t->wb);
	tlog_partition_put(t->a);
	tlog_partition_put(t->b);
	tlog_store_close(t->s);
}

/* Closing an idle segment's files to stay within the descriptor budget
 * syncs them first; an error there reaches the next fsync. */
START_TEST(eviction_error_reaches_fsync)
{
	struct one_fd t;

	one_fd_open(&t);
	th_sync_fail = "/t/a/";
	th_put(t.wb, "b line\n");		/* opens b's files: a's close */
	th_sync_fail = NULL;
	ck_assert_uint_gt(th_sync_failed, 0);
	ck_assert_int_eq(tlog_writer_fsync(t.wa, false), -EIO);
	one_fd_close(&t);
}
END_TEST

/* The descriptor budget never closes the files of a partition whose
 * disk work is under way (an fsync, a flush, a cursor commit): that
 * work syncs them with no lock held. Here the work is the test's own:
 * an eviction of a's files would sync them (and fail). */
START_TEST(eviction_skips_partition_at_disk_work)
{
	unsigned failed = th_sync_failed;
	struct one_fd t;

	one_fd_open(&t);
	tlog_segdir_io_begin(&t.a->sd);
	th_sync_fail = "/t/a/";
	th_put(t.wb, "b line\n");		/* over the budget: a is not taken */
	th_sync_fail = NULL;
	ck_assert_uint_eq(th_sync_failed, failed);
	tlog_segdir_io_end(&t.a->sd);
	th_put(t.wb, "b line\n");
	one_fd_close(&t);
}
END_TEST

/* The background flusher writes footers; its errors are kept for the
 * next fsync, and an fsync on any descriptor covers the partition. */
START_TEST(flusher_error_is_sticky)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	char line[LINE];
	int i;

	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	th_set(s, p, "segment.bytes", "1K");
	w = tlog_writer_open(p);
	for (i = 0; i < 25; i++) {
		make_line(line, 0, (unsigned)i);
		ck_assert_int_eq(tlog_writer_write(w, line, LINE), LINE);
	}
	tlog_writer_close(w);
	th_sync_fail = "/00000000000000000010.log";
	ck_assert_int_eq(tlog_store_flush_pending(s, 0), 2);
	th_sync_fail = NULL;
	ck_assert_int_eq(tlog_store_flush_pending(s, 0), 0);
	ck_assert_int_eq(tlog_partition_fsync(p, true), -EIO);
	ck_assert_int_eq(tlog_partition_fsync(p, true), 0);
	/* Segment 0 got its footer, segment 10 did not. */
	ck_assert(strstr(th_logbuf, "00000000000000000010") != NULL);
	tlog_partition_put(p);
	tlog_store_close(s);
}
END_TEST

struct sealed_load {
	unsigned acked;
};

/* Records made durable by an fsync of the partition from another
 * descriptor (a reader's), with flushed and unflushed seals around. */
static void
partition_fsync_load(void *arg)
{
	struct sealed_load *l = arg;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	char line[LINE];
	unsigned i;

	th_dur_start(th_dir);
	s = th_keep(th_open(th_dir));
	p = th_part(s, "t", "0");
	th_set(s, p, "segment.bytes", "1K");
	w = th_keep(tlog_writer_open(p));
	for (i = 0; i < 95; i++) {
		make_line(line, 0, i);
		ck_assert_int_eq(tlog_writer_write(w, line, LINE), LINE);
		if (i == 40)
			tlog_store_flush_pending(s, 1);
	}
	ck_assert_int_eq(tlog_partition_fsync(p, true), 0);
	l->acked = i;
	th_powercut(th_dir, 7, TH_CUT_ZERO);
}

START_TEST(partition_fsync_covers_everything)
{
	struct sealed_load l = { 0 };
	struct tlog_store *s;
	struct tlog_partition *p;

	th_in_child(partition_fsync_load, &l, sizeof(l));
	th_new_boot();
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	ck_assert_uint_eq(check_lines(p, 0, l.acked), l.acked);
	tlog_partition_put(p);
	tlog_store_close(s);
}
END_TEST

static void
clean_close_load(void *arg)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;

	(void)arg;
	th_dur_start(th_dir);
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	th_put(w, "kept by a clean close\n");
	tlog_writer_close(w);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_powercut(th_dir, 1, TH_CUT_ZERO);
}

static void
reopen_load(void *arg)
{
	(void)arg;
	th_dur_start(th_dir);
	th_keep(th_open(th_dir));	/* and the power goes while it runs */
	th_powercut(th_dir, 1, TH_CUT_ZERO);
}

/* A clean close is durable as a whole, clean mark included; the mark's
 * removal at the next open is durable before anything else happens. */
START_TEST(clean_mark_is_durable)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	int r = 0;
	char *d;

	th_in_child(clean_close_load, &r, sizeof(r));
	th_new_boot();
	s = th_open(th_dir);
	ck_assert(s->rc.was_clean);
	p = th_part(s, "t", "0");
	d = th_partition_data(p, NULL);
	ck_assert_str_eq(d, "kept by a clean close\n");
	free(d);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_in_child(reopen_load, &r, sizeof(r));
	ck_assert(!exists(".tlogfs/clean"));
}
END_TEST

static void
check_reopened(unsigned acked, unsigned *left)
{
	struct tlog_store *s = th_open(th_dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_part_stats st;

	check_lines(p, 0, acked);
	tlog_partition_stats(p, &st);
	if (left != NULL)
		*left = (unsigned)st.end_offset;
	tlog_partition_put(p);
	tlog_store_close(s);
}

/*
 * Records a killed daemon left in the page cache: the first fsync after
 * the restart (here through a new writer) makes them durable too. The
 * kill is simulated in one process, so one tracker sees it all: the
 * first store is abandoned (its lock dropped), not closed.
 */
static void
crash_restart_fsync(void *arg)
{
	unsigned *lines = arg;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	char line[LINE];
	unsigned i;

	th_dur_start(th_dir);
	s = th_keep(th_open(th_dir));
	p = th_part(s, "t", "0");
	th_set(s, p, "segment.bytes", "16K");
	w = th_keep(tlog_writer_open(p));
	for (i = 0; i < *lines; i++) {
		make_line(line, 0, i);
		ck_assert_int_eq(tlog_writer_write(w, line, LINE), LINE);
	}
	close(s->lockfd);	/* killed: nothing else happens */
	s->lockfd = -1;
	s = th_keep(th_open(th_dir));
	p = th_part(s, "t", "0");
	w = th_keep(tlog_writer_open(p));
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	th_powercut(th_dir, 3, TH_CUT_ZERO);
}

START_TEST(fsync_after_crash_covers_earlier_records)
{
	unsigned lines = 300;

	th_in_child(crash_restart_fsync, &lines, sizeof(lines));
	th_new_boot();
	check_reopened(lines, NULL);
}
END_TEST

/* ---- recovery after a power cut ---- */

struct crash {
	unsigned lines;		/* written to t/0 */
	unsigned acked;		/* of which fsynced */
	const char *segbytes;
};

/* Writes c->lines lines to t/0, fsyncs after the first c->acked, and
 * dies without closing: what a kill -9 leaves. */
static void
write_and_die(void *arg)
{
	struct crash *c = arg;
	struct tlog_store *s = th_keep(th_open(th_dir));
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_writer *w;
	char line[LINE];
	unsigned i;

	th_set(s, p, "segment.bytes", c->segbytes);
	w = th_keep(tlog_writer_open(p));
	for (i = 0; i < c->lines; i++) {
		make_line(line, 0, i);
		ck_assert_int_eq(tlog_writer_write(w, line, LINE), LINE);
		if (i + 1 == c->acked)
			ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	}
}

struct load {
	unsigned seed;
	enum th_cut mode;
	unsigned acked[2];
	unsigned written[2];
};

/*
 * Two writers on two partitions (segment.bytes=1K, so a segment holds
 * ten lines and rolls often), each fsyncing every 7 lines, with manual
 * seals mixed in; then lines nobody synced; then the power goes.
 */
static void
load_and_cut(void *arg)
{
	struct load *l = arg;
	struct tlog_store *s;
	struct tlog_partition *p[2];
	struct tlog_writer *w[2];
	char line[LINE];
	unsigned i, seed = l->seed;
	int k;

	th_dur_start(th_dir);
	s = th_keep(th_open(th_dir));
	for (k = 0; k < 2; k++) {
		p[k] = th_part(s, "t", k ? "1" : "0");
		/* Partition 1 keeps pages of unsynced lines per segment. */
		th_set(s, p[k], "segment.bytes", k ? "16K" : "1K");
		w[k] = th_keep(tlog_writer_open(p[k]));
	}
	for (i = 0; i < 600; i++) {
		k = rand_r(&seed) % 2;
		make_line(line, k, l->written[k]);
		ck_assert_int_eq(tlog_writer_write(w[k], line, LINE), LINE);
		l->written[k]++;
		th_clock += rand_r(&seed) % 3;
		if (l->written[k] % (k ? 37 : 7) == 0) {
			ck_assert_int_eq(tlog_writer_fsync(w[k], k == 0), 0);
			l->acked[k] = l->written[k];
		}
		if (rand_r(&seed) % 40 == 0)
			tlog_partition_seal(p[k], TLOG_TRIG_MANUAL);
	}
	/* Lines nobody synced: pages of them, over several segments. */
	for (i = 0; i < 800; i++) {
		k = i % 2;
		make_line(line, k, l->written[k]);
		ck_assert_int_eq(tlog_writer_write(w[k], line, LINE), LINE);
		l->written[k]++;
	}
	th_powercut(th_dir, l->seed, l->mode);
}

static void
powercut_round(unsigned seed, enum th_cut mode)
{
	struct load l;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	char line[LINE];
	uint64_t end;
	int k;

	memset(&l, 0, sizeof(l));
	l.seed = seed;
	l.mode = mode;
	th_rmrf(th_dir);
	ck_assert_int_eq(mkdir(th_dir, 0700), 0);
	th_in_child(load_and_cut, &l, sizeof(l));
	th_new_boot();
	s = th_open(th_dir);
	for (k = 0; k < 2; k++) {
		p = th_part(s, "t", k ? "1" : "0");
		end = check_lines(p, k, l.acked[k]);
		/* Appends go on from the end. */
		make_line(line, k, (unsigned)end);
		w = tlog_writer_open(p);
		ck_assert_int_eq(tlog_writer_write(w, line, LINE), LINE);
		tlog_writer_close(w);
		check_lines(p, k, l.acked[k]);
		tlog_partition_put(p);
	}
	tlog_store_close(s);
}

START_TEST(fsync_survives_power_loss)
{
	unsigned seed;

	for (seed = 1; seed <= 3; seed++) {
		powercut_round(seed, TH_CUT_TRUNCATE);
		powercut_round(seed, TH_CUT_ZERO);
		powercut_round(seed, TH_CUT_MIXED);
	}
}
END_TEST

static void
overwrite(const char *rel, off_t at, const void *buf, size_t len)
{
	char *path = path_in(rel);
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, len, at), (ssize_t)len);
	close(fd);
	free(path);
}

/* The footer of an index, if it has one, never reached the disk. */
static void
drop_footer(const char *rel)
{
	char *path = path_in(rel), *d;
	size_t len;

	d = th_slurp(path, &len);
	ck_assert_ptr_nonnull(d);
	if (len >= TLOG_IDX_HDR + TLOG_IDX_FOOT &&
	    memcmp(d + len - TLOG_IDX_FOOT, TLOG_SEAL_MAGIC, 8) == 0)
		ck_assert_int_eq(truncate(path, (off_t)(len - TLOG_IDX_FOOT)),
		    0);
	free(d);
	free(path);
}

/* A page inside the file that never reached the disk reads back as
 * zeros: after the reboot the records from there on are cut, the synced
 * ones all stay. */
START_TEST(lost_page_is_cut_after_reboot)
{
	struct crash c = { 200, 50, "1M" };
	char zero[4096];
	unsigned left;

	th_in_child(write_and_die, &c, sizeof(c));
	memset(zero, 0, sizeof(zero));
	overwrite("t/0/00000000000000000000.log", 12288, zero, sizeof(zero));
	th_new_boot();
	check_reopened(c.acked, &left);
	ck_assert_uint_ge(left, c.acked);
	ck_assert_uint_le(left, 12288 / LINE);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "power cut"));
}
END_TEST

/* Past the last index entry nothing verifies the data: a run of zero
 * bytes there (a torn page: sectors of 512 B, wherever they fall, or
 * the end of one straddling the entry) is data that never reached the
 * disk. The records are cut at the last whole one before it, none of
 * them a record of zeros or a line's tail. 200 lines of 100 bytes, an
 * fsync after 50: entries at 5000 (the fsync's), then one every 4 KiB,
 * the last at 17300. */
START_TEST(zero_runs_past_the_last_entry_are_cut)
{
	static const struct {
		off_t at;
		size_t len;
	} runs[] = { { 17408, 512 }, { 17501, 48 }, { 17600, 600 },
	    { 17310, 2600 }, { 18432, 1024 }, { 19950, 16 } };
	struct crash c = { 200, 50, "1M" };
	char zero[4096];
	unsigned left;
	size_t i;

	memset(zero, 0, sizeof(zero));
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		th_rmrf(th_dir);
		ck_assert_int_eq(mkdir(th_dir, 0700), 0);
		th_in_child(write_and_die, &c, sizeof(c));
		overwrite("t/0/00000000000000000000.log", runs[i].at, zero,
		    runs[i].len);
		th_new_boot();
		th_logbuf[0] = '\0';
		check_reopened(c.acked, &left);
		ck_assert_uint_ge(left, c.acked);
		ck_assert_uint_le(left, (unsigned)(runs[i].at / LINE));
		ck_assert_msg(strstr(th_logbuf, "a run of zero bytes") != NULL,
		    "run %zu: left %u: %s", i, left, th_logbuf);
	}
}
END_TEST

/* Index entries that reached the disk before their data: the data CRC
 * in each entry catches bytes that are not what was written. */
START_TEST(data_crc_mismatch_is_cut_after_reboot)
{
	struct crash c = { 200, 30, "1M" };
	unsigned left;

	th_in_child(write_and_die, &c, sizeof(c));
	overwrite("t/0/00000000000000000000.log", 100 * LINE + 50, "y", 1);
	th_new_boot();
	check_reopened(c.acked, &left);
	ck_assert_uint_ge(left, c.acked);
	ck_assert_uint_le(left, 100);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "does not match"));
}
END_TEST

/* In the same boot (kill -9) the page cache kept everything: recovery
 * reads no data before the last index entry, as it always did. */
START_TEST(same_boot_recovery_reads_no_data)
{
	struct crash c = { 200, 30, "1M" };
	char line[LINE];
	unsigned left;

	th_in_child(write_and_die, &c, sizeof(c));
	overwrite("t/0/00000000000000000000.log", 20 * LINE + 50, "y", 1);
	th_logbuf[0] = '\0';
	{
		struct tlog_store *s = th_open(th_dir);
		struct tlog_partition *p = th_part(s, "t", "0");
		struct tlog_part_stats st;
		char *d;

		tlog_partition_stats(p, &st);
		left = (unsigned)st.end_offset;
		d = th_partition_data(p, NULL);
		make_line(line, 0, 20);
		line[50] = 'y';
		ck_assert(memcmp(d + 20 * LINE, line, LINE) == 0);
		free(d);
		tlog_partition_put(p);
		tlog_store_close(s);
	}
	ck_assert_uint_eq(left, c.lines);
	ck_assert_ptr_null(strstr(th_logbuf, "does not match"));
}
END_TEST

/* A segment sealed behind a newer one whose footer never made it: a
 * line torn by the power cut at its end is cut, not kept as a record. */
START_TEST(torn_line_behind_newer_segment_is_cut)
{
	struct crash c = { 15, 0, "1K" };
	char *path;
	struct stat st;

	th_in_child(write_and_die, &c, sizeof(c));
	path = path_in("t/0/00000000000000000000.log");
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 10 * LINE);
	ck_assert_int_eq(truncate(path, 7 * LINE + 30), 0);
	free(path);
	drop_footer("t/0/00000000000000000000.idx");
	th_new_boot();
	check_reopened(0, NULL);
}
END_TEST

/* A record that holds pages of zero bytes, fsynced: verified by its data
 * CRC, it is kept whole after a reboot. */
START_TEST(synced_zero_pages_are_kept)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	char rec[10000], *d, *clean;
	size_t len;

	memset(rec, 0, sizeof(rec));
	rec[0] = 'z';
	rec[sizeof(rec) - 1] = '\n';
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	th_put(w, "before\n");
	ck_assert_int_eq(tlog_writer_write(w, rec, sizeof(rec)),
	    (ssize_t)sizeof(rec));
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	tlog_writer_close(w);
	tlog_partition_put(p);
	tlog_store_close(s);
	/* As if the power went: no clean mark, and another boot. */
	clean = path_in(".tlogfs/clean");
	ck_assert_int_eq(unlink(clean), 0);
	free(clean);
	th_new_boot();
	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	d = th_partition_data(p, &len);
	ck_assert_uint_eq(len, 7 + sizeof(rec));
	ck_assert(memcmp(d + 7, rec, sizeof(rec)) == 0);
	free(d);
	tlog_partition_put(p);
	tlog_store_close(s);
}
END_TEST

/* ---- deleted segments a power cut brings back ---- */

/*
 * Every segment deleted after records no fsync covered, then a power
 * cut: .next (3) is on disk, the unlinks are not, so segment 0 comes
 * back, empty, or with the record synced first (short). Its offsets
 * below .next were handed out: the next record goes at 3 or after.
 */
enum gone_how { GONE_RM, GONE_CEILING, GONE_SHORT };

static void
gone_load(void *arg)
{
	enum gone_how *how = arg;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	char big[1500];

	th_dur_start(th_dir);
	s = th_keep(th_open(th_dir));
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	th_put(w, "r0\n");
	if (*how == GONE_SHORT)
		ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	/* Over the smallest ceiling (1K) for the size rule. */
	memset(big, 'b', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	big[sizeof(big) - 2] = '\n';
	th_put(w, *how == GONE_CEILING ? big : "r1\n");
	th_put(w, "r2\n");
	tlog_writer_close(w);
	if (*how == GONE_CEILING) {
		th_set(s, p, "retention.bytes", "1K");
		ck_assert_int_eq(tlog_part_enforce_size(p, 16, NULL), 1);
	} else
		ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 1);
	th_powercut(th_dir, 1, TH_CUT_ZERO);
}

static void
append_after_gone(enum gone_how how)
{
	struct tlog_store_opts o;
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_part_stats st;
	struct tlog_seginfo *v;
	size_t n;

	th_in_child(gone_load, &how, sizeof(how));
	th_new_boot();
	ck_assert(exists("t/0/00000000000000000000.log"));
	/* Read-only: the same end, and nothing on disk changes. */
	memset(&o, 0, sizeof(o));
	o.readonly = true;
	s = th_open_opts(th_dir, &o);
	p = th_part(s, "t", "0");
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, 3);
	ck_assert_ptr_null(tlog_segment_get_active(p));
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert(exists("t/0/00000000000000000000.log"));

	s = th_open(th_dir);
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	th_put(w, "x\n");
	tlog_writer_close(w);
	v = th_segs(p, &n);
	ck_assert_uint_ge(n, 1);
	/* The new record is the last segment's last one: at 3. */
	ck_assert_uint_eq(v[n - 1].base, 3);
	ck_assert_uint_eq(v[n - 1].records, 1);
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, 4);
	if (how == GONE_SHORT) {
		/* The synced record stays, sealed. */
		ck_assert_uint_eq(n, 2);
		ck_assert_uint_eq(v[0].base, 0);
		ck_assert_uint_eq(v[0].records, 1);
		ck_assert(v[0].sealed);
	} else {
		ck_assert_uint_eq(n, 1);
		ck_assert(!exists("t/0/00000000000000000000.log"));
		ck_assert(!exists("t/0/00000000000000000000.idx"));
	}
	free(v);
	tlog_partition_put(p);
	tlog_store_close(s);
}

START_TEST(deleted_segment_back_after_cut_takes_no_append)
{
	append_after_gone(GONE_RM);
}
END_TEST

START_TEST(ceiling_segment_back_after_cut_takes_no_append)
{
	append_after_gone(GONE_CEILING);
}
END_TEST

START_TEST(short_segment_back_after_cut_is_sealed)
{
	append_after_gone(GONE_SHORT);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("durable");

	th_hooks(suite_setup, suite_teardown);
	TH_CASE(s, layout_survives_power_loss);
	TH_CASE(s, rm_current_keeps_end_offset);
	TH_CASE(s, racing_drainers_keep_end_offset);
	TH_CASE(s, deletion_end_offset_is_durable);
	TH_CASE(s, failed_deletion_leaves_dir_sync_to_fsync);
	TH_CASE(s, deleted_segment_back_after_cut_takes_no_append);
	TH_CASE(s, ceiling_segment_back_after_cut_takes_no_append);
	TH_CASE(s, short_segment_back_after_cut_is_sealed);
	TH_CASE(s, fsync_reports_sealed_segment_error);
	TH_CASE(s, short_index_header_write_is_enospc);
	TH_CASE(s, short_boundary_write_is_enospc);
	TH_CASE(s, eviction_error_reaches_fsync);
	TH_CASE(s, eviction_skips_partition_at_disk_work);
	TH_CASE(s, flusher_error_is_sticky);
	TH_CASE(s, partition_fsync_covers_everything);
	TH_CASE(s, clean_mark_is_durable);
	TH_CASE(s, fsync_after_crash_covers_earlier_records);
	TH_CASE(s, fsync_survives_power_loss);
	TH_CASE(s, lost_page_is_cut_after_reboot);
	TH_CASE(s, data_crc_mismatch_is_cut_after_reboot);
	TH_CASE(s, same_boot_recovery_reads_no_data);
	TH_CASE(s, torn_line_behind_newer_segment_is_cut);
	TH_CASE(s, synced_zero_pages_are_kept);
	TH_CASE(s, zero_runs_past_the_last_entry_are_cut);
	return th_run(s);
}
