/*
 * test_durable.c - what fsync and the store's own writes make durable,
 * checked by simulated power loss (powercut.c): a store is written,
 * everything no sync covered is taken away, the worst way, and the store
 * reopened as after a reboot. Also: writeback errors reach the next
 * fsync, and offsets never go backwards whatever was deleted.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testhelp.h"
#include "tlog_int.h"

#define LINE 100		/* bytes per test line, newline included */

static char *dir;
static unsigned boot_seq;

static void
setup(void)
{
	th_clock = 1700000000000LL;
	th_logbuf[0] = '\0';
	th_sync_fail = NULL;
	th_unlink_hook = NULL;
	dir = th_tmpdir();
	unsetenv("TLOGFS_BOOT_ID");
}

static void
teardown(void)
{
	th_dur_stop();
	th_sync_fail = NULL;
	th_unlink_hook = NULL;
	th_rmrf(dir);
	free(dir);
	unsetenv("TLOGFS_BOOT_ID");
}

/* The machine restarts: the kernel has a new boot id. */
static void
new_boot(void)
{
	char id[64];

	snprintf(id, sizeof(id), "test-boot-%u-%d", ++boot_seq, (int)getpid());
	setenv("TLOGFS_BOOT_ID", id, 1);
}

/* Runs fn in a child that dies without closing anything; fn writes what
 * it wants the parent to know into *res. */
static void
in_child(void (*fn)(void *), void *res, size_t len)
{
	int fds[2], st;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		fn(res);
		if (write(fds[1], res, len) != (ssize_t)len)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], res, len), (ssize_t)len);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

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
	th_dur_start(dir);
	s = th_open(dir);
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
	th_powercut(dir, 1, TH_CUT_TRUNCATE);
}

START_TEST(layout_survives_power_loss)
{
	struct layout_res r;
	struct tlog_store *s;
	struct tlog_topic *t;
	struct tlog_partition *p;
	struct tlog_dirent *de;
	size_t n;

	setup();
	in_child(layout_load, &r, sizeof(r));
	new_boot();
	s = th_open(dir);
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
	ck_assert_int_eq(tlog_partition_conf(p, TLOG_SEGMENT_BYTES), 65536);
	ck_assert_int_eq(tlog_partition_conf(p, TLOG_SEGMENT_MS), 3600000);
	ck_assert_int_eq(tlog_partition_conf(p, TLOG_RETENTION_MS),
	    3 * 86400000LL);
	tlog_partition_put(p);
	tlog_topic_put(t);
	tlog_store_close(s);
	teardown();
}
END_TEST

/* ---- offsets never go backwards ---- */

static uint64_t
end_after_reopen(void)
{
	struct tlog_store *s = th_open(dir);
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
	struct tlog_store *s = th_open(dir);
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

	setup();
	s = two_segments(&p);
	ck_assert_int_eq(tlog_partition_delete(p, 2), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 1);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_uint_eq(end_after_reopen(), 4);
	/* Then the older one too. */
	s = th_open(dir);
	p = th_part(s, "t", "0");
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 1);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_uint_eq(end_after_reopen(), 4);
	teardown();
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

	setup();
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
	ck_assert_uint_eq(tlog_store_unlink_queued(s), 0);
	tlog_partition_put(p);
	tlog_store_close(s);
	ck_assert_uint_eq(end_after_reopen(), 4);
	teardown();
}
END_TEST

static void
delete_load(void *arg)
{
	struct tlog_store *s;
	struct tlog_partition *p;
	struct tlog_writer *w;

	(void)arg;
	th_dur_start(dir);
	s = two_segments(&p);
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_fsync(w, true), 0);
	tlog_writer_close(w);
	ck_assert_int_eq(tlog_partition_delete(p, 2), 0);
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	ck_assert_int_eq(tlog_store_unlink_pending(s, 0), 2);
	th_powercut(dir, 1, TH_CUT_ZERO);
}

/* The end offset a deletion relies on is on disk before the unlink. */
START_TEST(deletion_end_offset_is_durable)
{
	int r;

	setup();
	in_child(delete_load, &r, sizeof(r));
	new_boot();
	ck_assert_uint_eq(end_after_reopen(), 4);
	teardown();
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("durable");

	TH_CASE(s, layout_survives_power_loss);
	TH_CASE(s, rm_current_keeps_end_offset);
	TH_CASE(s, racing_drainers_keep_end_offset);
	TH_CASE(s, deletion_end_offset_is_durable);
	return th_run(s);
}
