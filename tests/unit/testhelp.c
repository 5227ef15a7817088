/*
 * testhelp.c - fixtures for the unit tests (see testhelp.h).
 */
#include "config.h"
#include <dirent.h>

#include <pthread.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"

int64_t th_clock = 1700000000000LL;
int64_t th_boot;
char th_boot_id[64];
char th_logbuf[65536];

/* Loaded atomically: a test that runs the reaper's thread moves the
 * clocks with __atomic_store_n (test_clock.c). */
static int64_t
th_now(void *arg)
{
	(void)arg;
	return __atomic_load_n(&th_clock, __ATOMIC_ACQUIRE);
}

int64_t
th_boot_now(void *arg)
{
	(void)arg;
	return __atomic_load_n(&th_boot, __ATOMIC_ACQUIRE);
}

/* The log buffer is written by any thread of the store (the reaper's). */
static pthread_mutex_t th_log_lock = PTHREAD_MUTEX_INITIALIZER;

void
th_log(void *arg, int prio, const char *msg)
{
	size_t used, n = strlen(msg);

	(void)arg;
	(void)prio;
	if (n + 2 > sizeof(th_logbuf))
		return;
	pthread_mutex_lock(&th_log_lock);
	used = strlen(th_logbuf);
	if (used + n + 2 > sizeof(th_logbuf)) {
		th_logbuf[0] = '\0';
		used = 0;
	}
	memcpy(th_logbuf + used, msg, n);
	th_logbuf[used + n] = '\n';
	th_logbuf[used + n + 1] = '\0';
	pthread_mutex_unlock(&th_log_lock);
	if (getenv("TH_VERBOSE"))
		fprintf(stderr, "log: %s\n", msg);
}

char *
th_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *p;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if (asprintf(&p, "%s/tlogtest.XXXXXX", base) < 0)
		abort();
	if (mkdtemp(p) == NULL)
		ck_abort_msg("mkdtemp: %s", strerror(errno));
	return p;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
th_rmrf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

struct tlog_store *
th_open_opts(const char *dir, struct tlog_store_opts *o)
{
	struct tlog_store *s = NULL;
	char err[512];
	int r;

	if (o->clock == NULL)
		o->clock = th_now;
	if (o->log == NULL)
		o->log = th_log;
	if (o->boot_id == NULL && th_boot_id[0] != '\0')
		o->boot_id = th_boot_id;
	r = tlog_store_open(dir, o, &s, err, sizeof(err));
	ck_assert_msg(r == 0, "tlog_store_open(%s): %s", dir, err);
	/* As the daemon does, without the thread: the tests run the
	 * reaper's wake-ups themselves (tlog_reaper_cycle). */
	r = tlog_reaper_attach(s);
	ck_assert_msg(r == 0, "tlog_reaper_attach: %s", strerror(-r));
	return s;
}

struct tlog_store *
th_open(const char *dir)
{
	struct tlog_store_opts o;

	memset(&o, 0, sizeof(o));
	return th_open_opts(dir, &o);
}

struct tlog_partition *
th_part(struct tlog_store *s, const char *topic, const char *part)
{
	struct tlog_topic *t;
	struct tlog_partition *p;
	int r;

	t = tlog_topic_get(s, topic);
	if (t == NULL) {
		r = tlog_topic_create(s, topic, &t);
		ck_assert_msg(r == 0, "topic_create %s: %d", topic, r);
	}
	p = tlog_partition_get(t, part);
	if (p == NULL) {
		r = tlog_partition_create(t, part, &p);
		ck_assert_msg(r == 0, "partition_create %s: %d", part, r);
	}
	tlog_topic_put(t);
	return p;
}

void
th_set(struct tlog_store *s, struct tlog_partition *p, const char *key,
    const char *val)
{
	char err[256] = "";
	int r;

	r = tlog_conf_set(s, NULL, p, key, val, strlen(val), err, sizeof(err));
	ck_assert_msg(r == 0, "conf_set %s=%s: %d %s", key, val, r, err);
}

void
th_put(struct tlog_writer *w, const char *s)
{
	ck_assert_int_eq(tlog_writer_write(w, s, strlen(s)),
	    (ssize_t)strlen(s));
}

char *
th_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (n + 65536 + 1 > cap) {
			cap = (n + 65536 + 1) * 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
		k = fread(buf + n, 1, 65536, f);
		n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	if (buf == NULL)
		buf = calloc(1, 1);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

bool
th_exists(const char *rel)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", th_dir, rel);
	return lstat(path, &st) == 0;
}

char *
th_partition_data(struct tlog_partition *p, size_t *len)
{
	struct tlog_seginfo *si;
	size_t n, i, total = 0;
	char *out;

	ck_assert_int_eq(tlog_partition_segments(p, &si, &n), 0);
	for (i = 0; i < n; i++)
		total += si[i].bytes;
	out = malloc(total + 1);
	ck_assert_ptr_nonnull(out);
	total = 0;
	for (i = 0; i < n; i++) {
		struct tlog_segment *seg = tlog_segment_get(p, si[i].base);
		ssize_t r;
		int fd;

		ck_assert_ptr_nonnull(seg);
		fd = tlog_segment_open(seg);
		ck_assert_int_ge(fd, 0);
		r = tlog_segment_read(seg, fd, out + total, si[i].bytes, 0);
		ck_assert_int_eq(r, (ssize_t)si[i].bytes);
		total += (size_t)r;
		tlog_segment_close(seg, fd);
		tlog_segment_put(seg);
	}
	free(si);
	out[total] = '\0';
	if (len)
		*len = total;
	return out;
}

char *th_dir;
struct tlog_store *th_S;
struct tlog_partition *th_P;
static void (*suite_setup)(void), (*suite_teardown)(void);

void
th_hooks(void (*setup)(void), void (*teardown)(void))
{
	suite_setup = setup;
	suite_teardown = teardown;
}

void
th_open_tp(struct tlog_store_opts *o)
{
	struct tlog_store_opts def;

	if (o == NULL) {
		memset(&def, 0, sizeof(def));
		o = &def;
	}
	th_S = th_open_opts(th_dir, o);
	th_P = th_part(th_S, "t", "0");
}

void
th_close(void)
{
	if (th_P != NULL)
		tlog_partition_put(th_P);
	th_P = NULL;
	if (th_S != NULL)
		tlog_store_close(th_S);
	th_S = NULL;
}

struct tlog_seginfo *
th_segs(struct tlog_partition *p, size_t *n)
{
	struct tlog_seginfo *si;

	ck_assert_int_eq(tlog_partition_segments(p, &si, n), 0);
	return si;
}

void
th_empty_indexes(const uint64_t *bases, size_t n)
{
	char path[4096];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/t/0/%020llu.idx", th_dir,
		    (unsigned long long)bases[i]);
		ck_assert_int_eq(truncate(path, 0), 0);
	}
}

struct tlog_seginfo *
th_open_indexes_emptied(const uint64_t *bases, size_t n)
{
	struct tlog_seginfo *si;
	size_t i, k;

	th_empty_indexes(bases, n);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_msg(strstr(th_logbuf, "t/0/") == NULL, "log: %s", th_logbuf);
	si = th_segs(th_P, &k);
	ck_assert_uint_eq(k, n);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(si[i].base, bases[i]);
		ck_assert_uint_gt(si[i].zbytes, 0);
	}
	return si;
}

size_t
th_nsegs(struct tlog_partition *p)
{
	struct tlog_part_stats st;

	tlog_partition_stats(p, &st);
	return st.segments;
}

/* One suite per test program, so one pair of hooks serves all its cases. */
static void
fix_setup(void)
{
	th_clock = TH_T0;
	th_boot = 0;
	th_logbuf[0] = '\0';
	th_S = NULL;
	th_P = NULL;
	th_dir = th_tmpdir();
	if (suite_setup != NULL)
		suite_setup();
}

static void
fix_teardown(void)
{
	if (suite_teardown != NULL)
		suite_teardown();
	th_close();
	if (th_dir != NULL) {
		th_rmrf(th_dir);
		free(th_dir);
	}
	th_dir = NULL;
}

void
th_case(Suite *s, const char *name, const TTest *t)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, fix_setup, fix_teardown);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

int
th_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static unsigned boot_seq;

void
th_new_boot(void)
{
	char id[64];

	snprintf(id, sizeof(id), "test-boot-%u-%d", ++boot_seq, (int)getpid());
	strlcpy(th_boot_id, id, sizeof(th_boot_id));
}

/* Kept reachable, so valgrind sees a crash, not a leak. */
static void *volatile kept[16];

void *
th_keep(void *obj)
{
	static int n;

	if (n < (int)(sizeof(kept) / sizeof(kept[0])))
		kept[n++] = obj;
	return obj;
}

void
th_in_child(void (*fn)(void *), void *res, size_t len)
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

int
th_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* opendir's own */
}

/* ---- compressed history (test_compress, test_zrecover) ---- */

char *
th_lines(int from, int n, size_t *len)
{
	char *b = malloc((size_t)n * 80 + 1);
	size_t at = 0;
	int i;

	for (i = from; i < from + n; i++)
		at += (size_t)sprintf(b + at, "%d 10.0.0.%d - - GET /item/%d "
		    "HTTP/1.1 200 %d\n", i, i % 250, i * 7 % 1000, i % 9000);
	*len = at;
	return b;
}

void
th_put_lines(struct tlog_partition *p, int from, int n)
{
	struct tlog_writer *w;
	size_t len;
	char *b = th_lines(from, n, &len);

	w = tlog_writer_open(p);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(tlog_writer_write(w, b, len), (ssize_t)len);
	tlog_writer_close(w);
	free(b);
}

void
th_seal_and_compress(struct tlog_store *s, struct tlog_partition *p)
{
	ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), 0);
	tlog_store_flush_pending(s, 0);
	while (tlog_store_compress_pending(s, 0) > 0)
		;
}

void
th_check_data(struct tlog_partition *p, int from, int n)
{
	size_t len, glen;
	char *want = th_lines(from, n, &len), *got = th_partition_data(p, &glen);

	ck_assert_uint_eq(glen, len);
	ck_assert(memcmp(got, want, len) == 0);
	free(want);
	free(got);
}

char *
th_path(const char *rel)
{
	static char p[2][4096];
	static int k;

	k ^= 1;
	snprintf(p[k], sizeof(p[k]), "%s/%s", th_dir, rel);
	return p[k];
}
