/*
 * test_store.c - the store's layout and lock, the clean-shutdown mark, and
 * the registry of topics and partitions with its name rules.
 */
#include "config.h"

#include <sys/xattr.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "testhelp.h"
#include "store.h"

static char *
path_in(const char *dir, const char *rel)
{
	char *p;

	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, rel), 0);
	return p;
}

static bool
exists(const char *dir, const char *rel)
{
	char *p = path_in(dir, rel);
	bool r = access(p, F_OK) == 0;

	free(p);
	return r;
}

START_TEST(layout_and_format)
{
	char *dir = th_tmpdir(), *p;
	struct tlog_store *s = th_open(dir);
	size_t n;

	ck_assert(exists(dir, ".tlogfs/format"));
	ck_assert(exists(dir, ".tlogfs/lock"));
	ck_assert(!s->rc.was_clean);
	tlog_store_close(s);
	ck_assert(exists(dir, ".tlogfs/clean"));
	s = th_open(dir);
	ck_assert(s->rc.was_clean);
	/* The mark is gone while the store is open: a crash now is seen. */
	ck_assert(!exists(dir, ".tlogfs/clean"));
	tlog_store_close(s);
	/* An unknown format version is refused with a message. */
	p = path_in(dir, ".tlogfs/format");
	FILE *f = fopen(p, "w");
	fputs("tlogfs 99\n", f);
	fclose(f);
	{
		struct tlog_store *s2 = NULL;
		char err[256] = "";
		ck_assert_int_ne(tlog_store_open(dir, NULL, &s2, err,
		    sizeof(err)), 0);
		ck_assert_ptr_null(s2);
		ck_assert_ptr_nonnull(strstr(err, "format"));
	}
	free(th_slurp(p, &n));
	free(p);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/* The store the parent holds while a forked child tries to open it:
 * reachable from the child too, so valgrind sees no leak there. */
static struct tlog_store *volatile held_store;
static char *volatile held_dir;

START_TEST(second_open_fails_naming_pid)
{
	char *dir = held_dir = th_tmpdir(), err[256] = "", pid[32];
	struct tlog_store *s = held_store = th_open(dir), *s2 = NULL;
	pid_t child;
	int st;

	/* flock is per open file: a second open in this process and one in
	 * another process both fail. */
	ck_assert_int_eq(tlog_store_open(dir, NULL, &s2, err, sizeof(err)),
	    -EBUSY);
	snprintf(pid, sizeof(pid), "pid %ld", (long)getpid());
	ck_assert_msg(strstr(err, pid) != NULL, "message: %s", err);
	child = fork();
	if (child == 0) {
		struct tlog_store *s3 = NULL;
		_exit(tlog_store_open(dir, NULL, &s3, err, sizeof(err)) ==
		    -EBUSY ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tlog_store_close(s);
	s = th_open(dir);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(missing_store_fails)
{
	struct tlog_store *s = NULL;
	char err[256] = "";

	ck_assert_int_eq(tlog_store_open("/nonexistent/tlog/store", NULL, &s,
	    err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/tlog/store"));
}
END_TEST

START_TEST(names)
{
	char longname[300];

	ck_assert_int_eq(tlog_name_check("orders"), 0);
	ck_assert_int_eq(tlog_name_check("a.b_c-D9"), 0);
	ck_assert_int_eq(tlog_name_check(""), -EINVAL);
	ck_assert_int_eq(tlog_name_check(".hidden"), -EINVAL);
	ck_assert_int_eq(tlog_name_check("a/b"), -EINVAL);
	ck_assert_int_eq(tlog_name_check("sp ace"), -EINVAL);
	ck_assert_int_eq(tlog_name_check("caf\xc3\xa9"), -EINVAL);
	memset(longname, 'x', sizeof(longname));
	longname[249] = '\0';
	ck_assert_int_eq(tlog_name_check(longname), 0);
	longname[249] = 'x';
	longname[250] = '\0';
	ck_assert_int_eq(tlog_name_check(longname), -ENAMETOOLONG);
}
END_TEST

START_TEST(topics_and_partitions)
{
	char *dir = th_tmpdir();
	struct tlog_store *s = th_open(dir);
	struct tlog_topic *t;
	struct tlog_partition *p;
	struct tlog_dirent *d;
	struct tlog_writer *w;
	size_t n;

	ck_assert_int_eq(tlog_topic_create(s, "orders", &t), 0);
	ck_assert_int_eq(tlog_topic_create(s, "orders", NULL), -EEXIST);
	ck_assert_int_eq(tlog_topic_create(s, "bad/name", NULL), -EINVAL);
	ck_assert_int_eq(tlog_topic_create(s, "audit", NULL), 0);
	ck_assert_int_eq(tlog_topic_list(s, &d, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(d[0].name, "audit");
	ck_assert_str_eq(d[1].name, "orders");
	ck_assert_uint_ne(d[0].ino, d[1].ino);
	free(d);
	ck_assert_int_eq(tlog_partition_create(t, "0", &p), 0);
	ck_assert_int_eq(tlog_partition_create(t, "1", NULL), 0);
	ck_assert_int_eq(tlog_partition_create(t, "0", NULL), -EEXIST);
	ck_assert(exists(dir, "orders/0"));
	/* A topic with partitions is not empty. */
	ck_assert_int_eq(tlog_topic_remove(s, "orders"), -ENOTEMPTY);
	/* A partition with a segment is not empty. */
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "x\n", 2), 2);
	tlog_writer_close(w);
	ck_assert_int_eq(tlog_partition_remove(t, "0"), -ENOTEMPTY);
	ck_assert_int_eq(tlog_partition_remove(t, "1"), 0);
	ck_assert(!exists(dir, "orders/1"));
	ck_assert_int_eq(tlog_partition_remove(t, "1"), -ENOENT);
	/* Rename keeps the data and the appends going. */
	ck_assert_int_eq(tlog_topic_rename(s, "orders", "sales"), 0);
	ck_assert(exists(dir, "sales/0/00000000000000000000.log"));
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, "y\n", 2), 2);
	tlog_writer_close(w);
	ck_assert_int_eq(tlog_partition_rename(t, "0", "zero"), 0);
	ck_assert(exists(dir, "sales/zero/00000000000000000000.log"));
	{
		size_t len;
		char *data = th_partition_data(p, &len);
		ck_assert_str_eq(data, "x\ny\n");
		free(data);
	}
	/* Renaming over a non-empty topic is refused, over an empty one
	 * replaces it. */
	ck_assert_int_eq(tlog_topic_rename(s, "audit", "sales"), -ENOTEMPTY);
	ck_assert_int_eq(tlog_topic_rename(s, "sales", "audit"), 0);
	ck_assert_ptr_null(tlog_topic_get(s, "sales"));
	tlog_partition_put(p);
	tlog_topic_put(t);
	tlog_store_close(s);
	/* Everything is found again after reopening. */
	s = th_open(dir);
	t = tlog_topic_get(s, "audit");
	ck_assert_ptr_nonnull(t);
	p = tlog_partition_get(t, "zero");
	ck_assert_ptr_nonnull(p);
	{
		size_t len;
		char *data = th_partition_data(p, &len);
		ck_assert_str_eq(data, "x\ny\n");
		free(data);
	}
	tlog_partition_put(p);
	tlog_topic_put(t);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(level_stat_chmod)
{
	char *dir = th_tmpdir();
	struct tlog_store *s = th_open(dir);
	struct tlog_partition *p = th_part(s, "t", "p");
	struct stat st;

	ck_assert_int_eq(tlog_level_chmod(s, NULL, p, 0750), 0);
	ck_assert_int_eq(tlog_level_stat(s, NULL, p, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
	ck_assert_int_eq(tlog_level_chown(s, tlog_partition_topic(p), NULL,
	    1234, 5678), 0);
	ck_assert_int_eq(tlog_level_stat(s, tlog_partition_topic(p), NULL,
	    &st), 0);
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 5678);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(refused_rmdir_keeps_settings)
{
	char *dir = th_tmpdir(), *stray;
	struct tlog_store *s = th_open(dir);
	struct tlog_partition *p = th_part(s, "t", "p");
	struct tlog_topic *t = tlog_partition_topic(p);
	int64_t v;
	FILE *f;

	th_set(s, p, "segment.bytes", "64K");
	stray = path_in(dir, "t/p/notes.txt");
	f = fopen(stray, "w");
	fputs("not ours", f);
	fclose(f);
	ck_assert_int_eq(tlog_partition_remove(t, "p"), -ENOTEMPTY);
	ck_assert(exists(dir, "t/p/.config"));
	ck_assert_int_eq(tlog_conf_get(s, NULL, p, "segment.bytes", &v), 0);
	ck_assert_int_eq(v, 65536);
	unlink(stray);
	free(stray);
	ck_assert_int_eq(tlog_partition_remove(t, "p"), 0);
	ck_assert(!exists(dir, "t/p"));
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(rename_over_empty_partition)
{
	char *dir = th_tmpdir();
	struct tlog_store *s = th_open(dir);
	struct tlog_partition *a = th_part(s, "t", "a");
	struct tlog_partition *b = th_part(s, "t", "b");
	struct tlog_writer *w = tlog_writer_open(a);

	th_set(s, b, "segment.bytes", "64K");
	ck_assert_int_eq(tlog_writer_write(w, "x\n", 2), 2);
	tlog_writer_close(w);
	/* b is empty (only its settings): a's data takes its name. */
	ck_assert_int_eq(tlog_partition_rename(tlog_partition_topic(a), "a",
	    "b"), 0);
	ck_assert(exists(dir, "t/b/00000000000000000000.log"));
	ck_assert(!exists(dir, "t/a"));
	/* And a partition with data is never replaced. */
	w = tlog_writer_open(a);
	tlog_writer_close(w);
	{
		struct tlog_partition *c = th_part(s, "t", "c");
		w = tlog_writer_open(c);
		ck_assert_int_eq(tlog_writer_write(w, "y\n", 2), 2);
		tlog_writer_close(w);
		ck_assert_int_eq(tlog_partition_rename(tlog_partition_topic(a),
		    "c", "b"), -ENOTEMPTY);
		tlog_partition_put(c);
	}
	tlog_partition_put(a);
	tlog_partition_put(b);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST


/* ---- races of rename and rmdir with an append (forced by the hook) ---- */

struct race {
	struct tlog_topic *t;
	int what;		/* 1: rename b over a; 2: rmdir a + mkdir a */
	int fired;
};

static void
race_hook(void *arg, int point, struct tlog_partition *p)
{
	struct race *rc = arg;
	char name[TLOG_NAME_MAX + 1];

	if (point != TLOG_HOOK_NEW_SEGMENT || rc->fired)
		return;
	tlog_level_name(&p->lv, name, sizeof(name));
	if (strcmp(name, "a") != 0)
		return;
	rc->fired = 1;
	/* As another thread would, between the append's check that a is
	 * alive and the creation of its first segment. */
	if (rc->what == 1)
		ck_assert_int_eq(tlog_partition_rename(rc->t, "b", "a"), 0);
	else {
		ck_assert_int_eq(tlog_partition_remove(rc->t, "a"), 0);
		ck_assert_int_eq(tlog_partition_create(rc->t, "a", NULL), 0);
	}
}

static int
count_matching(const char *dir, const char *needle)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += strstr(de->d_name, needle) != NULL;
	closedir(d);
	return n;
}

static void
append_race(int what)
{
	char *dir = th_tmpdir(), *pdir, *data;
	struct tlog_store_opts o;
	struct race rc = { NULL, what, 0 };
	struct tlog_store *s;
	struct tlog_partition *a, *b, *q;
	struct tlog_writer *w, *wb;
	ssize_t r;
	size_t len;

	memset(&o, 0, sizeof(o));
	o.hook = race_hook;
	o.hook_arg = &rc;
	s = th_open_opts(dir, &o);
	a = th_part(s, "t", "a");
	b = th_part(s, "t", "b");
	rc.t = tlog_partition_topic(a);
	wb = tlog_writer_open(b);
	th_put(wb, "b1\nb2\n");
	tlog_writer_close(wb);
	w = tlog_writer_open(a);
	r = tlog_writer_write(w, "victim\n", 7);
	ck_assert_int_eq(rc.fired, 1);
	/* The append lands in the partition it opened, or fails: that
	 * partition is gone, so it fails. */
	ck_assert_int_eq(r, -ENOENT);
	tlog_writer_close(w);
	pdir = path_in(dir, "t/a");
	ck_assert_int_eq(count_matching(pdir, "orphan"), 0);
	q = tlog_partition_get(rc.t, "a");
	ck_assert_ptr_nonnull(q);
	data = th_partition_data(q, &len);
	ck_assert_str_eq(data, what == 1 ? "b1\nb2\n" : "");
	free(data);
	tlog_partition_put(q);
	tlog_partition_put(a);
	tlog_partition_put(b);
	tlog_store_close(s);
	/* And so after a remount. */
	s = th_open(dir);
	q = th_part(s, "t", "a");
	data = th_partition_data(q, &len);
	ck_assert_str_eq(data, what == 1 ? "b1\nb2\n" : "");
	free(data);
	ck_assert_int_eq(count_matching(pdir, "orphan"), 0);
	tlog_partition_put(q);
	tlog_store_close(s);
	free(pdir);
	th_rmrf(dir);
	free(dir);
}

START_TEST(append_races_rename_over_its_partition)
{
	append_race(1);
}
END_TEST

START_TEST(append_races_rmdir_and_mkdir)
{
	append_race(2);
}
END_TEST

/* ---- symlinks and other strays are never followed or touched ---- */

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(symlinks_are_never_followed)
{
	char *dir = th_tmpdir(), *out = th_tmpdir(), *x, *y, *data;
	struct tlog_store *s;
	struct tlog_topic *t;
	struct tlog_dirent *de;
	struct tlog_partition *p;
	struct stat st0, st1;
	size_t n, len;

	/* Outside the store: a "topic" with a partition whose segment ends
	 * in an unfinished line, which recovery would cut if it went in. */
	x = path_in(out, "p");
	ck_assert_int_eq(mkdir(x, 0755), 0);
	free(x);
	x = path_in(out, "p/00000000000000000000.log");
	write_file(x, "outside\nunfinished");
	ck_assert_int_eq(stat(x, &st0), 0);
	s = th_open(dir);
	p = th_part(s, "real", "0");
	tlog_partition_put(p);
	tlog_store_close(s);
	/* A topic that is a symlink, a partition that is a symlink, a
	 * segment that is a symlink, a FIFO. */
	y = path_in(dir, "evil");
	ck_assert_int_eq(symlink(out, y), 0);
	free(y);
	y = path_in(dir, "real/evilp");
	ck_assert_int_eq(symlink(out, y), 0);
	free(y);
	y = path_in(dir, "real/0/00000000000000000000.log");
	ck_assert_int_eq(symlink(x, y), 0);
	free(y);
	y = path_in(dir, "real/0/00000000000000000007.log");
	ck_assert_int_eq(mkfifo(y, 0644), 0);
	free(y);

	th_logbuf[0] = '\0';
	s = th_open(dir);
	ck_assert_int_eq(tlog_topic_list(s, &de, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(de[0].name, "real");
	free(de);
	t = tlog_topic_get(s, "real");
	ck_assert_int_eq(tlog_partition_list(t, &de, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(de[0].name, "0");
	free(de);
	p = tlog_partition_get(t, "0");
	data = th_partition_data(p, &len);
	ck_assert_uint_eq(len, 0);
	free(data);
	/* Appending to it never writes through the symlinked name. */
	{
		struct tlog_writer *w = tlog_writer_open(p);

		(void)tlog_writer_write(w, "mine\n", 5);
		tlog_writer_close(w);
	}
	tlog_partition_put(p);
	tlog_topic_put(t);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "evil"));
	tlog_store_close(s);
	/* Nothing outside changed, and the strays are still there. */
	ck_assert_int_eq(stat(x, &st1), 0);
	ck_assert_int_eq(st1.st_size, st0.st_size);
	ck_assert_int_eq(st1.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);
	ck_assert_int_eq(st1.st_mtim.tv_sec, st0.st_mtim.tv_sec);
	data = th_slurp(x, &len);
	ck_assert_str_eq(data, "outside\nunfinished");
	free(data);
	ck_assert_int_eq(count_matching(out, "idx"), 0);
	y = path_in(dir, "real/0/00000000000000000000.log");
	ck_assert_int_eq(lstat(y, &st1), 0);
	ck_assert(S_ISLNK(st1.st_mode));
	free(y);
	ck_assert(exists(dir, "evil"));
	ck_assert(exists(dir, "real/evilp"));
	free(x);
	th_rmrf(dir);
	th_rmrf(out);
	free(dir);
	free(out);
}
END_TEST

/* ---- rmdir waits for the partition's pending unlinks ---- */

struct unl {
	pthread_mutex_t m;
	pthread_cond_t c;
	int in_flight;
	int may_go;
	struct tlog_store *s;
};

static void
unl_hook(void *arg, int point, struct tlog_partition *p)
{
	struct unl *u = arg;
	struct timespec ts;

	(void)p;
	pthread_mutex_lock(&u->m);
	if (point == TLOG_HOOK_UNLINK) {
		/* The unlinker has taken the segment off the queue: hold it
		 * in flight until rmdir is waiting for it (or 10 s). */
		u->in_flight = 1;
		pthread_cond_broadcast(&u->c);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		while (!u->may_go &&
		    pthread_cond_timedwait(&u->c, &u->m, &ts) == 0)
			;
	} else if (point == TLOG_HOOK_RMDIR_WAIT) {
		u->may_go = 1;
		pthread_cond_broadcast(&u->c);
	}
	pthread_mutex_unlock(&u->m);
}

static void *
unl_thread(void *arg)
{
	struct unl *u = arg;

	tlog_store_unlink_pending(u->s, 1);
	return NULL;
}

/* The store at th_dir does not open; the error names `needed` (unless
 * NULL). */
static void
open_refused(const char *needed)
{
	struct tlog_store_opts o;
	struct tlog_store *s;
	char err[256] = "";

	memset(&o, 0, sizeof(o));
	ck_assert_int_lt(tlog_store_open(th_dir, &o, &s, err, sizeof(err)), 0);
	if (needed != NULL)
		ck_assert_ptr_nonnull(strstr(err, needed));
}

/* The clean mark is created afresh at close: a symlink planted at its
 * name while the store ran is unlinked, never written through (a root
 * daemon would truncate the file it points to), a FIFO never opened
 * (the close would block for good); at open, neither counts as clean. */
START_TEST(clean_mark_never_followed)
{
	char *out = th_tmpdir(), *x, *y, *data;
	struct tlog_store *s;
	struct stat st;
	size_t len;

	x = path_in(out, "victim");
	write_file(x, "precious\n");
	y = path_in(th_dir, ".tlogfs/clean");
	s = th_open(th_dir);
	ck_assert_int_eq(symlink(x, y), 0);
	tlog_store_close(s);
	data = th_slurp(x, &len);
	ck_assert_str_eq(data, "precious\n");
	free(data);
	ck_assert_int_eq(lstat(y, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	s = th_open(th_dir);
	ck_assert(s->rc.was_clean);
	ck_assert_int_eq(mkfifo(y, 0644), 0);
	tlog_store_close(s);
	ck_assert_int_eq(lstat(y, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	/* Planted while the store was closed: not a mark. */
	ck_assert_int_eq(unlink(y), 0);
	ck_assert_int_eq(symlink(x, y), 0);
	s = th_open(th_dir);
	ck_assert(!s->rc.was_clean);
	tlog_store_close(s);
	data = th_slurp(x, &len);
	ck_assert_str_eq(data, "precious\n");
	free(data);
	/* The lock file as a link: the open refuses, writing nothing. */
	free(y);
	y = path_in(th_dir, ".tlogfs/lock");
	ck_assert_int_eq(unlink(y), 0);
	ck_assert_int_eq(symlink(x, y), 0);
	open_refused("lock");
	data = th_slurp(x, &len);
	ck_assert_str_eq(data, "precious\n");
	free(data);
	/* Nor as a second link to a file elsewhere. */
	ck_assert_int_eq(unlink(y), 0);
	ck_assert_int_eq(link(x, y), 0);
	open_refused(NULL);
	data = th_slurp(x, &len);
	ck_assert_str_eq(data, "precious\n");
	free(data);
	/* A FIFO where an atomic write puts its temporary file is unlinked,
	 * not opened (which would block the setting for good). */
	ck_assert_int_eq(unlink(y), 0);
	s = th_open(th_dir);
	free(y);
	y = path_in(th_dir, ".tlogfs/config.tmp");
	ck_assert_int_eq(mkfifo(y, 0644), 0);
	{
		char err[256];

		ck_assert_int_eq(tlog_conf_set(s, NULL, NULL, "retention.ms",
		    "1h", 2, err, sizeof(err)), 0);
	}
	tlog_store_close(s);
	free(x);
	free(y);
	th_rmrf(out);
	free(out);
}
END_TEST

START_TEST(rmdir_waits_for_unlinks_in_flight)
{
	char *dir = th_tmpdir(), *f;
	struct tlog_store_opts o;
	struct unl u;
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_writer *w;
	pthread_t th;

	memset(&u, 0, sizeof(u));
	pthread_mutex_init(&u.m, NULL);
	pthread_cond_init(&u.c, NULL);
	memset(&o, 0, sizeof(o));
	o.hook = unl_hook;
	o.hook_arg = &u;
	u.s = th_open_opts(dir, &o);
	p = th_part(u.s, "t", "p");
	t = tlog_partition_topic(p);
	tlog_level_ref(&t->lv);
	w = tlog_writer_open(p);
	th_put(w, "one\n");
	tlog_writer_close(w);
	ck_assert_int_eq(tlog_partition_delete(p, 0), 0);
	/* The engine's own bookkeeping never makes rmdir fail. */
	f = path_in(dir, "t/p/.next.tmp");
	write_file(f, "1\n");
	free(f);
	f = path_in(dir, "t/p/.config.tmp");
	write_file(f, "");
	free(f);
	ck_assert_int_eq(pthread_create(&th, NULL, unl_thread, &u), 0);
	pthread_mutex_lock(&u.m);
	while (!u.in_flight)
		pthread_cond_wait(&u.c, &u.m);
	pthread_mutex_unlock(&u.m);
	/* rm -r right after the segments went: works at once. */
	ck_assert_int_eq(tlog_partition_remove(t, "p"), 0);
	ck_assert_int_eq(tlog_topic_remove(u.s, "t"), 0);
	pthread_join(th, NULL);
	ck_assert(!exists(dir, "t"));
	tlog_topic_put(t);
	tlog_partition_put(p);
	tlog_store_close(u.s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(open_files_stay_within_budget)
{
	char *dir = th_tmpdir(), name[16], line[32];
	struct tlog_store_opts o;
	struct tlog_store *s;
	struct tlog_partition *p[40];
	struct tlog_writer *w;
	int i, round, base, n;

	memset(&o, 0, sizeof(o));
	o.max_open_segments = 4;
	s = th_open_opts(dir, &o);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		p[i] = th_part(s, "t", name);
	}
	base = th_count_fds();
	/* 40 active partitions written round robin: at most 4 keep their
	 * two files open, and every record lands. */
	for (round = 0; round < 5; round++) {
		for (i = 0; i < 40; i++) {
			w = tlog_writer_open(p[i]);
			n = snprintf(line, sizeof(line), "r%d p%d\n", round, i);
			ck_assert_int_eq(tlog_writer_write(w, line, (size_t)n), n);
			tlog_writer_close(w);
			ck_assert_int_le(th_count_fds(), base + 2 * 4 + 2);
		}
	}
	for (i = 0; i < 40; i++) {
		struct tlog_part_stats st;
		tlog_partition_stats(p[i], &st);
		ck_assert_uint_eq(st.end_offset, 5);
		tlog_partition_put(p[i]);
	}
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/*
 * One write that seals many segments (1,000 lines into segments of two
 * records: 500 seals) holds the descriptors of at most a few sealed
 * segments at a time: it goes in as several appends, each followed by
 * the sync of what it sealed. With 64 descriptors to spare the whole
 * write lands; holding them all, it failed with EMFILE.
 */
START_TEST(a_write_sealing_many_segments_stays_within_descriptors)
{
	char *dir = th_tmpdir(), *buf, *d;
	struct tlog_store_opts o;
	struct tlog_part_stats st;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_store *s;
	struct rlimit rl;
	size_t len = 0, n;
	int i;

	memset(&o, 0, sizeof(o));
	o.max_open_segments = 4;
	o.cap_records = 2;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = (rlim_t)th_count_fds() + 1 + 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	s = th_open_opts(dir, &o);
	p = th_part(s, "t", "p");
	ck_assert_ptr_nonnull(buf = malloc(1000 * 6 + 1));
	for (i = 0; i < 1000; i++)
		len += (size_t)sprintf(buf + len, "l%04d\n", i);
	w = tlog_writer_open(p);
	ck_assert_int_eq(tlog_writer_write(w, buf, len), (ssize_t)len);
	tlog_writer_close(w);
	tlog_partition_stats(p, &st);
	ck_assert_uint_eq(st.end_offset, 1000);
	d = th_partition_data(p, &n);
	ck_assert_uint_eq(n, len);
	ck_assert_int_eq(memcmp(d, buf, len), 0);
	free(d);
	free(buf);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/*
 * Memory (doc/performance.md, "Memory"): a sealed segment whose footer is
 * written and whose files are closed keeps no live part, whether it was
 * sealed here, loaded from the checkpoint of a clean close or from its
 * files; nor does an active segment loaded after a clean close, until it
 * is written again. n_live counts the sealed segments holding one.
 */
static void
live_parts(struct tlog_partition *p, size_t *n_sealed, size_t *n_live,
    bool *active_live)
{
	struct tlog_segment *seg;

	*n_sealed = *n_live = 0;
	*active_live = false;
	pthread_mutex_lock(&p->sd.lock);
	TAILQ_FOREACH(seg, &p->segs, link) {
		if (!seg->sealed) {
			*active_live = seg->live != NULL;
			continue;
		}
		(*n_sealed)++;
		if (seg->live != NULL)
			(*n_live)++;
	}
	pthread_mutex_unlock(&p->sd.lock);
}

START_TEST(sealed_idle_segment_keeps_no_live_part)
{
	char *dir = th_tmpdir(), *ck, *data;
	struct tlog_store *s = th_open(dir);
	struct tlog_partition *p = th_part(s, "t", "0");
	struct tlog_writer *w;
	size_t ns, nl;
	bool act;
	int i;

	ck_assert_uint_le(sizeof(struct tlog_segment), 88);
	w = tlog_writer_open(p);
	for (i = 0; i < 3; i++) {
		th_put(w, "a record\n");
		ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), 0);
	}
	th_put(w, "the active one\n");
	tlog_writer_close(w);
	/* Sealed, footers pending: they keep it until the flush. */
	live_parts(p, &ns, &nl, &act);
	ck_assert_uint_eq(ns, 3);
	ck_assert(act);
	ck_assert_int_eq(tlog_partition_fsync(p, true), 0);
	live_parts(p, &ns, &nl, &act);
	ck_assert_uint_eq(ns, 3);
	ck_assert_uint_eq(nl, 0);
	ck_assert(act);
	tlog_partition_put(p);
	tlog_store_close(s);

	/* From the checkpoint of that clean close. */
	s = th_open(dir);
	p = th_part(s, "t", "0");
	live_parts(p, &ns, &nl, &act);
	ck_assert_uint_eq(ns, 3);
	ck_assert_uint_eq(nl, 0);
	ck_assert(!act);
	data = th_partition_data(p, NULL);
	ck_assert_str_eq(data,
	    "a record\na record\na record\nthe active one\n");
	free(data);
	/* Written again, it has one; its entries go on where they were
	 * (the next open reads every record back). */
	w = tlog_writer_open(p);
	th_put(w, "then more\n");
	tlog_writer_close(w);
	live_parts(p, &ns, &nl, &act);
	ck_assert(act);
	ck_assert_int_eq(tlog_partition_seal(p, TLOG_TRIG_MANUAL), 0);
	ck_assert_int_eq(tlog_partition_fsync(p, true), 0);
	live_parts(p, &ns, &nl, &act);
	ck_assert_uint_eq(ns, 4);
	ck_assert_uint_eq(nl, 0);
	tlog_partition_put(p);
	tlog_store_close(s);

	/* From the files (no checkpoint): after a clean close, the active
	 * segment's index ends with its boundary entry. */
	ck_assert_int_ge(asprintf(&ck, "%s/.tlogfs/checkpoint", dir), 0);
	unlink(ck);
	free(ck);
	s = th_open(dir);
	p = th_part(s, "t", "0");
	w = tlog_writer_open(p);
	th_put(w, "last\n");
	tlog_writer_close(w);
	ck_assert_int_eq(tlog_partition_fsync(p, true), 0);
	tlog_partition_put(p);
	tlog_store_close(s);
	s = th_open(dir);
	p = th_part(s, "t", "0");
	live_parts(p, &ns, &nl, &act);
	ck_assert_uint_eq(ns, 4);
	ck_assert_uint_eq(nl, 0);
	ck_assert(!act);
	data = th_partition_data(p, NULL);
	ck_assert_str_eq(data, "a record\na record\na record\n"
	    "the active one\nthen more\nlast\n");
	free(data);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/*
 * An fsync when the daemon is out of descriptors (readers hold them):
 * idle segments give theirs back and the fsync succeeds, rather than
 * failing with EMFILE while descriptors could be freed.
 */
/* How many times the log holds text. */
static size_t
times_logged(const char *text)
{
	const char *l;
	size_t n = 0;

	for (l = th_logbuf; (l = strstr(l, text)) != NULL; l++)
		n++;
	return n;
}

/* Lowers RLIMIT_NOFILE to 400 (the old limit in *saved) and fills the
 * table with copies of stdin, returned in fill (at most 512): the next
 * open gets EMFILE. */
static int
fill_table(struct rlimit *saved, int fill[512])
{
	struct rlimit low;
	int n = 0, fd;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, saved), 0);
	low = *saved;
	low.rlim_cur = 400;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 512 && (fd = dup(0)) != -1)
		fill[n++] = fd;
	ck_assert_int_eq(errno, EMFILE);
	return n;
}

/*
 * A close whose partitions all reached the disk, but whose clean mark
 * cannot be created (here: out of descriptors), says that, with the
 * reason, rather than that not everything reached the disk.
 */
START_TEST(close_says_why_the_mark_is_missing)
{
	char *dir = th_tmpdir();
	struct tlog_store *s = th_open(dir);
	struct rlimit rl;
	int nfill, fill[512];

	th_logbuf[0] = '\0';
	nfill = fill_table(&rl, fill);
	ck_assert_int_eq(tlog_store_close(s), -1);
	while (nfill > 0)
		close(fill[--nfill]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_msg(strstr(th_logbuf, "cannot create .tlogfs/clean: "
	    "Too many open files") != NULL, "log: %s", th_logbuf);
	ck_assert_ptr_null(strstr(th_logbuf, "not everything reached"));
	ck_assert(!exists(dir, ".tlogfs/clean"));
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(fsync_out_of_descriptors_evicts_idle_segments)
{
	char *dir = th_tmpdir(), name[16];
	struct tlog_store *s = th_open(dir);
	struct tlog_partition *p[4];
	struct tlog_writer *w[4];
	struct rlimit rl;
	int i, nfill, fill[512];

	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		p[i] = th_part(s, "t", name);
		w[i] = tlog_writer_open(p[i]);
		th_put(w[i], "a record\n");
	}
	nfill = fill_table(&rl, fill);
	ck_assert_int_eq(tlog_writer_fsync(w[0], false), 0);
	while (nfill > 0)
		close(fill[--nfill]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	for (i = 0; i < 4; i++) {
		struct tlog_part_stats st;

		ck_assert_int_eq(tlog_writer_fsync(w[i], false), 0);
		tlog_partition_stats(p[i], &st);
		ck_assert_uint_eq(st.end_offset, 1);
		tlog_writer_close(w[i]);
		tlog_partition_put(p[i]);
	}
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(repeated_errors_are_rate_limited)
{
	char *dir = th_tmpdir();
	struct tlog_store *s = th_open(dir);
	int i;

	th_logbuf[0] = '\0';
	for (i = 0; i < 5; i++) {
		tlog_ctx_log_err(&s->ctx, "disk trouble %d", i);
		th_clock += 1000;
	}
	/* One line in 30 s; the next says how many it held back. */
	ck_assert_ptr_nonnull(strstr(th_logbuf, "disk trouble 0\n"));
	ck_assert_ptr_null(strstr(th_logbuf, "disk trouble 1"));
	th_clock += 30000;
	tlog_ctx_log_err(&s->ctx, "disk trouble %d", 5);
	ck_assert_ptr_nonnull(strstr(th_logbuf,
	    "disk trouble 5 (4 similar errors suppressed)"));
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/* The store's identity: made once, kept across opens, its own per
 * store; a store without one gets one at its next read-write open, and
 * a read-only open of such a store has none and writes nothing. */
START_TEST(store_identity)
{
	char *dir = th_tmpdir(), *dir2 = th_tmpdir(), *p, *buf, id[40];
	struct tlog_store_opts o;
	struct tlog_store *s = th_open(dir), *s2 = th_open(dir2);
	size_t n;

	ck_assert_uint_eq(strlen(tlog_store_id(s)), TLOG_STORE_ID_LEN);
	ck_assert_uint_eq(strspn(tlog_store_id(s), "0123456789abcdef"),
	    TLOG_STORE_ID_LEN);
	ck_assert_str_ne(tlog_store_id(s), tlog_store_id(s2));
	snprintf(id, sizeof(id), "%s\n", tlog_store_id(s));
	p = path_in(dir, ".tlogfs/id");
	buf = th_slurp(p, &n);
	ck_assert_uint_eq(n, TLOG_STORE_ID_LEN + 1);
	ck_assert(memcmp(buf, id, n) == 0);
	free(buf);
	tlog_store_close(s);
	tlog_store_close(s2);
	s = th_open(dir);
	ck_assert_int_eq(strncmp(tlog_store_id(s), id, TLOG_STORE_ID_LEN), 0);
	tlog_store_close(s);
	/* A store of before identities: none read-only, a new one after. */
	ck_assert_int_eq(unlink(p), 0);
	memset(&o, 0, sizeof(o));
	o.readonly = true;
	s = th_open_opts(dir, &o);
	ck_assert_str_eq(tlog_store_id(s), "");
	tlog_store_close(s);
	ck_assert(!exists(dir, ".tlogfs/id"));
	s = th_open(dir);
	ck_assert_uint_eq(strlen(tlog_store_id(s)), TLOG_STORE_ID_LEN);
	ck_assert_int_ne(strncmp(tlog_store_id(s), id, TLOG_STORE_ID_LEN), 0);
	ck_assert(exists(dir, ".tlogfs/id"));
	tlog_store_close(s);
	free(p);
	th_rmrf(dir);
	th_rmrf(dir2);
	free(dir);
	free(dir2);
}
END_TEST

/* Holds `held` in a writer of t/`to`, renames t/`from` over it and
 * closes the writer: the log must name t/`to` and the size. */
static void
lose_held(const char *from, const char *to, const char *held)
{
	struct tlog_partition *a = th_part(th_S, "t", from);
	struct tlog_partition *b = th_part(th_S, "t", to);
	struct tlog_writer *w = tlog_writer_open(b);
	char line[128];

	ck_assert_int_eq(tlog_writer_write(w, held, strlen(held)),
	    (ssize_t)strlen(held));
	ck_assert_int_eq(tlog_partition_rename(tlog_partition_topic(a), from,
	    to), 0);
	ck_assert_int_eq(tlog_writer_close(w), -ENOENT);
	snprintf(line, sizeof(line), "t/%s: a held partial record of %zu "
	    "bytes is lost at close", to, strlen(held));
	ck_assert_ptr_nonnull(strstr(th_logbuf, line));
	tlog_partition_put(a);
	tlog_partition_put(b);
}

/* A held partial line whose partition was renamed over is lost at close,
 * and the log says where and how much; the next one, at once, too (no
 * rate limit folds it into a count). */
START_TEST(held_lost_at_close_is_named)
{
	th_open_tp(NULL);
	th_logbuf[0] = '\0';
	lose_held("a", "b", "partial");
	lose_held("c", "d", "xy");
}
END_TEST

/*
 * Anything but a regular file where the store keeps one of its files (a
 * FIFO, which would block open(2) until a writer came; a directory; a
 * symbolic link) is a stray: the open never blocks on it, leaves it
 * alone, names it in the log and goes on as if the file were missing.
 */
START_TEST(strays_never_block_the_open)
{
	static const char *const fifos[] = { "t/0/.next", "t/0/.cursors",
	    "t/0/.config", "t/.config", ".tlogfs/config", ".tlogfs/boot",
	    ".tlogfs/clean" };
	struct tlog_writer *w;
	struct stat st;
	char *f, *data, line[128];
	size_t i, len;

	th_open_tp(NULL);
	w = tlog_writer_open(th_P);
	th_put(w, "a\nb\n");
	tlog_writer_close(w);
	th_set(th_S, th_P, "retention.ms", "1d");
	th_close();
	for (i = 0; i < sizeof(fifos) / sizeof(fifos[0]); i++) {
		ck_assert_int_ge(asprintf(&f, "%s/%s", th_dir, fifos[i]), 0);
		ck_assert(unlink(f) == 0 || errno == ENOENT);
		ck_assert_int_eq(mkfifo(f, 0644), 0);
		free(f);
	}
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	data = th_partition_data(th_P, &len);
	ck_assert_str_eq(data, "a\nb\n");
	free(data);
	for (i = 0; i < sizeof(fifos) / sizeof(fifos[0]); i++) {
		snprintf(line, sizeof(line), "%s: %s", fifos[i],
		    strstr(fifos[i], "clean") != NULL ? "not a regular file, "
		    "so not a clean mark; removed" : "a FIFO: left alone, "
		    "treated as missing");
		ck_assert_msg(strstr(th_logbuf, line) != NULL, "no \"%s\" in "
		    "%s", line, th_logbuf);
		/* Left alone; but the mark and the boot id are the open's
		 * own to replace. */
		if (strncmp(fifos[i], ".tlogfs/", 8) == 0 &&
		    strcmp(fifos[i], ".tlogfs/config") != 0)
			continue;
		ck_assert_int_ge(asprintf(&f, "%s/%s", th_dir, fifos[i]), 0);
		ck_assert_int_eq(lstat(f, &st), 0);
		ck_assert(S_ISFIFO(st.st_mode));
		free(f);
	}
	th_close();
}
END_TEST

/* Whatever has the store file `name` (under th_dir) goes, a directory
 * takes its place (holding a subdirectory x if full), and the store is
 * opened with an empty log. Returns the directory's path. */
static char *
open_with_dir_at(const char *name, bool full)
{
	char *f, *g;

	ck_assert_int_ge(asprintf(&f, "%s/%s", th_dir, name), 0);
	ck_assert(unlink(f) == 0 || errno == ENOENT);
	ck_assert_int_eq(mkdir(f, 0700), 0);
	if (full) {
		ck_assert_int_ge(asprintf(&g, "%s/x", f), 0);
		ck_assert_int_eq(mkdir(g, 0700), 0);
		free(g);
	}
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	return f;
}

/* Closes the store, then removes the directory open_with_dir_at put at
 * f and its subdirectory x. */
static void
close_and_remove_dir(char *f)
{
	char *g;

	th_close();
	ck_assert_int_ge(asprintf(&g, "%s/x", f), 0);
	ck_assert_int_eq(rmdir(g), 0);
	ck_assert_int_eq(rmdir(f), 0);
	free(g);
	free(f);
}

/* A directory at the clean mark's name is no mark either: removed if
 * empty, so that the next clean close leaves a mark again; one that
 * cannot be removed is said so, not said removed. */
START_TEST(directory_at_clean_mark_removed)
{
	struct stat st;
	char *f;

	th_open_tp(NULL);
	th_close();
	f = open_with_dir_at(".tlogfs/clean", false);
	ck_assert_msg(strstr(th_logbuf, ".tlogfs/clean: not a regular file, "
	    "so not a clean mark; removed") != NULL, "log: %s", th_logbuf);
	ck_assert_int_eq(lstat(f, &st), -1);
	th_close();
	ck_assert_int_eq(lstat(f, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	free(f);
	/* Not empty: it stays, and the line says why. */
	f = open_with_dir_at(".tlogfs/clean", true);
	ck_assert_msg(strstr(th_logbuf, ".tlogfs/clean: not a regular file, "
	    "so not a clean mark; cannot remove it: ") != NULL, "log: %s",
	    th_logbuf);
	close_and_remove_dir(f);
}
END_TEST

/* A directory at .tlogfs/reserve: an empty one gives way to the
 * reserve, one that cannot is said in one line. */
START_TEST(directory_at_reserve)
{
	struct stat st;
	char *f;

	th_open_tp(NULL);
	th_close();
	f = open_with_dir_at(".tlogfs/reserve", false);
	ck_assert_int_eq(lstat(f, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_gt((uint64_t)st.st_size, 0);
	th_close();
	free(f);
	f = open_with_dir_at(".tlogfs/reserve", true);
	ck_assert_msg(strstr(th_logbuf, "for a clean stop (.tlogfs/reserve): "
	    "File exists") != NULL, "log: %s", th_logbuf);
	close_and_remove_dir(f);
}
END_TEST

/* The store's own directories planted as links: the open is refused,
 * and the message names the directory and why. */
START_TEST(own_dirs_as_links_refuse_the_open)
{
	char *f, *x;

	th_open_tp(NULL);
	th_close();
	ck_assert_int_ge(asprintf(&f, "%s/.tlogfs/events", th_dir), 0);
	ck_assert_int_ge(asprintf(&x, "%s/t", th_dir), 0);
	th_rmrf(f);
	ck_assert_int_eq(symlink(x, f), 0);
	open_refused(".tlogfs/events: a symbolic link, not a directory");
	free(f);
	ck_assert_int_ge(asprintf(&f, "%s/.tlogfs", th_dir), 0);
	th_rmrf(f);
	ck_assert_int_eq(symlink(x, f), 0);
	open_refused(".tlogfs: a symbolic link, not a directory");
	free(f);
	free(x);
}
END_TEST

/* A read open when the daemon's descriptors run out: idle segments give
 * theirs back first; when none can, ENFILE (the reader's own table is
 * not full), said in one line a minute. */
START_TEST(read_open_out_of_descriptors)
{
	char name[16];
	struct tlog_partition *p[4];
	struct tlog_writer *w[4];
	struct tlog_segment *seg;
	struct rlimit rl;
	int i, fd, fd2, nfill = 0, fill[512];

	th_open_tp(NULL);
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		p[i] = th_part(th_S, "t", name);
		w[i] = tlog_writer_open(p[i]);
		th_put(w[i], "a record\n");
	}
	seg = tlog_segment_get_active(p[0]);
	ck_assert_ptr_nonnull(seg);
	nfill = fill_table(&rl, fill);
	th_logbuf[0] = '\0';
	/* The other partitions' idle segments give theirs back. */
	fd = tlog_segment_open(seg);
	ck_assert_int_ge(fd, 0);
	while (nfill < 512 && (fd2 = dup(0)) != -1)
		fill[nfill++] = fd2;
	/* Nothing left to give back: ENFILE, one line. */
	ck_assert_int_eq(tlog_segment_open(seg), -ENFILE);
	ck_assert_int_eq(tlog_segment_open(seg), -ENFILE);
	th_clock += 30000;
	ck_assert_int_eq(tlog_segment_open(seg), -ENFILE);
	ck_assert_uint_eq(times_logged("out of file descriptors"), 1);
	th_clock += 31000;
	ck_assert_int_eq(tlog_segment_open(seg), -ENFILE);
	ck_assert_uint_eq(times_logged("out of file descriptors"), 2);
	while (nfill > 0)
		close(fill[--nfill]);
	tlog_segment_close(seg, fd);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	tlog_segment_put(seg);
	for (i = 0; i < 4; i++) {
		tlog_writer_close(w[i]);
		tlog_partition_put(p[i]);
	}
}
END_TEST

/*
 * A private store: its directory is the daemon's alone (0700), whatever
 * chmod and chown through the mount give the mount root, which they keep
 * in .tlogfs/attr; one that others may write is refused, naming the fix;
 * an existing one that others may read is made private, said once.
 */
START_TEST(store_is_private)
{
	struct stat st, view;
	char *attr;

	ck_assert_int_eq(chmod(th_dir, 0775), 0);
	open_refused("chmod go-w");
	ck_assert_int_eq(chmod(th_dir, 0755), 0);
	/* Another user's directory: that user could plant anything. */
	if (geteuid() == 0) {
		ck_assert_int_eq(chown(th_dir, 1234, (gid_t)-1), 0);
		open_refused("belongs to uid 1234, not to the daemon's (uid 0)");
		ck_assert_int_eq(chown(th_dir, 0, (gid_t)-1), 0);
	}
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_null(strstr(th_logbuf, "the daemon's alone"));
	ck_assert_int_eq(stat(th_dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(tlog_level_stat(th_S, NULL, NULL, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 0755);
	ck_assert(S_ISDIR(view.st_mode));
	ck_assert_int_eq(tlog_level_chmod(th_S, NULL, NULL, 01777), 0);
	ck_assert_int_eq(tlog_level_chown(th_S, NULL, NULL, 33, 44), 0);
	ck_assert_int_eq(stat(th_dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	th_close();
	th_open_tp(NULL);
	ck_assert_int_eq(tlog_level_stat(th_S, NULL, NULL, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 01777);
	ck_assert_uint_eq(view.st_uid, 33);
	ck_assert_uint_eq(view.st_gid, 44);
	th_close();
	/* A store from before: no .tlogfs/attr, its directory 0755. */
	ck_assert_int_ge(asprintf(&attr, "%s/.tlogfs/attr", th_dir), 0);
	ck_assert_int_eq(unlink(attr), 0);
	free(attr);
	ck_assert_int_eq(chmod(th_dir, 0755), 0);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "its directory is now 0700 "
	    "(was 0755), the daemon's alone"));
	ck_assert_int_eq(stat(th_dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(tlog_level_stat(th_S, NULL, NULL, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 0755);
	th_close();
}
END_TEST

static void plant(const char *rel, const char *text);

/* The mode bits of path in the store's own file system. */
static unsigned
mode_of(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_mode & 07777;
}

/*
 * Topics and partitions are private too: chmod and chown through the
 * mount live in their directory's user.tlogfs.attr, and the directory
 * stays 0700 and the daemon's, so no mode given through the mount lets
 * another user write in the store (a world-writable topic directory let
 * one plant a .config that deleted every record). A store from before,
 * whose directories have the modes, keeps showing them, and its
 * directories are made private at the first read-write open, said once.
 */
START_TEST(topics_and_partitions_are_private)
{
	struct tlog_topic *t;
	struct stat st, view;
	char *tdir, *pdir;

	th_open_tp(NULL);
	ck_assert_int_ge(asprintf(&tdir, "%s/t", th_dir), 0);
	ck_assert_int_ge(asprintf(&pdir, "%s/t/0", th_dir), 0);
	t = tlog_partition_topic(th_P);
	ck_assert_int_eq(tlog_level_stat(th_S, t, NULL, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 0755);
	ck_assert_uint_eq(view.st_uid, geteuid());
	ck_assert_uint_eq(mode_of(tdir), 0700);
	ck_assert_int_eq(tlog_level_chmod(th_S, t, NULL, 01777), 0);
	ck_assert_int_eq(tlog_level_chmod(th_S, NULL, th_P, 0770), 0);
	ck_assert_int_eq(tlog_level_chown(th_S, NULL, th_P, 33, 44), 0);
	ck_assert_uint_eq(mode_of(tdir), 0700);
	ck_assert_int_eq(stat(pdir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	th_close();
	th_open_tp(NULL);
	t = tlog_partition_topic(th_P);
	ck_assert_int_eq(tlog_level_stat(th_S, t, NULL, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 01777);
	ck_assert_int_eq(tlog_level_stat(th_S, NULL, th_P, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 0770);
	ck_assert_uint_eq(view.st_uid, 33);
	ck_assert_uint_eq(view.st_gid, 44);
	th_close();
	/* From before: the modes on the directories, no attribute. */
	ck_assert_int_eq(removexattr(tdir, TLOG_ATTR_XATTR), 0);
	ck_assert_int_eq(removexattr(pdir, TLOG_ATTR_XATTR), 0);
	ck_assert_int_eq(chmod(tdir, 01777), 0);
	ck_assert_int_eq(chmod(pdir, 0750), 0);
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "2 topic and partition "
	    "directories are now 0700, the daemon's alone"));
	ck_assert_uint_eq(mode_of(tdir), 0700);
	ck_assert_uint_eq(mode_of(pdir), 0700);
	t = tlog_partition_topic(th_P);
	ck_assert_int_eq(tlog_level_stat(th_S, t, NULL, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 01777);
	ck_assert_int_eq(tlog_level_stat(th_S, NULL, th_P, &view), 0);
	ck_assert_uint_eq(view.st_mode & 07777, 0750);
	th_close();
	/* Said once: the next open finds nothing to change. */
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_null(strstr(th_logbuf, "are now 0700"));
	th_close();
	if (geteuid() == 0) {
		struct tlog_store_opts o = { .readonly = true,
		    .log = th_log };
		struct tlog_store *s;
		char err[256] = "", *cfg, *seg;
		int64_t v;
		size_t len;

		/* What another user put in a directory others could
		 * write (an old store's) is not the store's: a read-only
		 * open refuses it, a read-write one moves it out and reads
		 * none of it. */
		ck_assert_int_eq(removexattr(pdir, TLOG_ATTR_XATTR), 0);
		ck_assert_int_eq(chmod(pdir, 01777), 0);
		ck_assert_int_ge(asprintf(&cfg, "%s/.config", pdir), 0);
		ck_assert_int_ge(asprintf(&seg, "%s/00000000000000000100.log",
		    pdir), 0);
		plant("t/0/.config", "retention.ms=1000\n");
		plant("t/0/00000000000000000100.log", "forged\n");
		ck_assert_int_eq(chown(cfg, 1234, 1234), 0);
		ck_assert_int_eq(chown(seg, 1234, 1234), 0);
		th_logbuf[0] = '\0';
		ck_assert_int_lt(tlog_store_open(th_dir, &o, &s, err,
		    sizeof(err)), 0);
		ck_assert_ptr_nonnull(strstr(th_logbuf, "t/0: others may write "
		    "its directory (uid 0, mode 1777)"));
		th_logbuf[0] = '\0';
		th_open_tp(NULL);
		ck_assert_ptr_nonnull(strstr(th_logbuf, "t/0/.config: owned by "
		    "uid 1234, not the daemon's, in a directory others could "
		    "write: not the store's, moved to .tlogfs/foreign/"));
		/* A long name still fits: it goes under its inode number. */
		ck_assert_ptr_nonnull(strstr(th_logbuf, "t/0/000000000000000001"
		    "00.log: owned by uid 1234"));
		/* Sticky: nobody could rename the store's own files. */
		ck_assert_ptr_null(strstr(th_logbuf, "not sticky"));
		ck_assert_int_eq(access(cfg, F_OK), -1);
		ck_assert_int_eq(access(seg, F_OK), -1);
		ck_assert_int_eq(tlog_conf_get(th_S, NULL, th_P,
		    "retention.ms", &v), 0);
		ck_assert_int_ne(v, 1000);
		ck_assert_uint_eq(th_nsegs(th_P), 0);
		free(th_partition_data(th_P, &len));
		ck_assert_uint_eq(len, 0);
		free(cfg);
		free(seg);
	}
	free(tdir);
	free(pdir);
}
END_TEST

/* Writes text as th_dir/rel (a file planted in the store). */
static void
plant(const char *rel, const char *text)
{
	char *path;
	FILE *f;

	ck_assert_int_ge(asprintf(&path, "%s/%s", th_dir, rel), 0);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	free(path);
}

/*
 * A directory that is not a store (no .tlogfs) becomes one only if it is
 * empty, but for lost+found: one that holds anything else is refused and
 * left as it was, its mode included. A path through a symbolic link that
 * another user owns is refused (tlog_path_trusted): that user could
 * point it at any directory.
 */
START_TEST(only_an_empty_directory_becomes_a_store)
{
	char err[256], *keep, *lf, *link, *via, *dot, *outer;
	struct stat st;

	ck_assert_int_eq(chmod(th_dir, 0755), 0);
	ck_assert_int_ge(asprintf(&keep, "%s/keep", th_dir), 0);
	plant("keep", "");
	open_refused("not a tlogfs store (no .tlogfs) and not empty (it "
	    "holds keep)");
	ck_assert_int_eq(stat(th_dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_ge(asprintf(&dot, "%s/.tlogfs", th_dir), 0);
	ck_assert_int_eq(access(dot, F_OK), -1);
	ck_assert_int_eq(unlink(keep), 0);
	ck_assert_int_ge(asprintf(&lf, "%s/lost+found", th_dir), 0);
	ck_assert_int_eq(mkdir(lf, 0700), 0);
	th_open_tp(NULL);
	th_close();
	ck_assert_int_eq(access(dot, F_OK), 0);

	ck_assert(tlog_path_trusted(th_dir, err, sizeof(err)));
	ck_assert_int_ge(asprintf(&link, "%s.link", th_dir), 0);
	ck_assert_int_ge(asprintf(&via, "%s/t", link), 0);
	ck_assert_int_eq(symlink(th_dir, link), 0);
	ck_assert(tlog_path_trusted(link, err, sizeof(err)));	/* ours */
	if (geteuid() == 0) {
		ck_assert_int_eq(lchown(link, 1234, (gid_t)-1), 0);
		ck_assert(!tlog_path_trusted(link, err, sizeof(err)));
		ck_assert_ptr_nonnull(strstr(err, "is a symbolic link owned "
		    "by uid 1234"));
		ck_assert(!tlog_path_trusted(via, err, sizeof(err)));
		/* Ours, but leading through theirs: by its target, by a
		 * relative target, and by a directory on the way. */
		ck_assert_int_ge(asprintf(&outer, "%s.outer", th_dir), 0);
		ck_assert_int_eq(symlink(link, outer), 0);
		ck_assert(!tlog_path_trusted(outer, err, sizeof(err)));
		ck_assert_ptr_nonnull(strstr(err, link));
		ck_assert_int_eq(unlink(outer), 0);
		ck_assert_int_eq(symlink(strrchr(link, '/') + 1, outer), 0);
		ck_assert(!tlog_path_trusted(outer, err, sizeof(err)));
		ck_assert_int_eq(unlink(outer), 0);
		ck_assert_int_eq(symlink(via, outer), 0);
		ck_assert(!tlog_path_trusted(outer, err, sizeof(err)));
		ck_assert_int_eq(unlink(outer), 0);
		free(outer);
	}
	ck_assert_int_eq(unlink(link), 0);
	free(keep);
	free(lf);
	free(link);
	free(via);
	free(dot);
}
END_TEST

/*
 * Offsets never wrap: a saved end offset (.next) or a segment's base past
 * TLOG_OFFSET_MAX is not one. Planted, the first is logged and ignored,
 * the second is no segment; appends go on from the records the
 * partition holds.
 */
START_TEST(planted_offsets_never_wrap)
{
	struct tlog_partition *p;
	struct tlog_writer *w;

	th_open_tp(NULL);
	p = th_part(th_S, "t", "0");
	w = tlog_writer_open(p);
	th_put(w, "a\nb\nc\n");
	tlog_writer_close(w);
	tlog_partition_put(p);
	th_close();
	plant("t/0/.next", "18446744073709551615\n");
	plant("t/0/18446744073709551614.log", "x\n");
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "t/0/.next: not an end offset "
	    "(0..4611686018427387904); ignored"));
	p = th_part(th_S, "t", "0");
	ck_assert_uint_eq(p->next_offset, 3);
	w = tlog_writer_open(p);
	th_put(w, "d\n");
	tlog_writer_close(w);
	ck_assert_uint_eq(p->next_offset, 4);
	tlog_partition_put(p);
	th_close();
}
END_TEST

/* A bad line of a config file is logged with the file's place in the
 * store, so the operator knows which of the levels' files it is. */
START_TEST(config_lines_name_their_file)
{
	th_open_tp(NULL);
	th_close();
	plant("t/0/.config", "retention.ms=soon\n");
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "t/0/.config: line 1: "
	    "retention.ms: bad value"));
	th_close();
}
END_TEST

/* .tlogfs/format must say exactly "tlogfs 1" or "tlogfs 2" (a store
 * with compressed segments): anything more or else is a format this
 * tlogfs does not know, and the store is refused. */
START_TEST(format_must_be_exact)
{
	th_open_tp(NULL);
	th_close();
	plant(".tlogfs/format", "tlogfs 1 junk\n");
	open_refused("unsupported store format \"tlogfs 1 junk\"");
	plant(".tlogfs/format", "tlogfs 3\n");
	open_refused("unsupported store format \"tlogfs 3\"");
	plant(".tlogfs/format", "tlogfs 2 \n");
	open_refused("unsupported store format \"tlogfs 2 \"");
	plant(".tlogfs/format", "tlogfs 2\n");
	th_open_tp(NULL);
	th_close();
	plant(".tlogfs/format", "tlogfs 1\n");
	th_open_tp(NULL);
	th_close();
}
END_TEST

/* rmdir of a partition that holds a non-file under one of tlogfs's own
 * names (a FIFO named as a segment, a directory as .config) is refused
 * (ENOTEMPTY) with a line naming it, and removes nothing. */
START_TEST(rmdir_names_non_files)
{
	struct tlog_topic *t;
	char *fifo, *dir, *cfg;

	th_open_tp(NULL);
	th_set(th_S, th_P, "retention.ms", "1d");
	t = tlog_partition_topic(th_P);
	ck_assert_int_ge(asprintf(&fifo, "%s/t/0/00000000000000000005.log",
	    th_dir), 0);
	ck_assert_int_ge(asprintf(&dir, "%s/t/0/.cursors", th_dir), 0);
	ck_assert_int_ge(asprintf(&cfg, "%s/t/0/.config", th_dir), 0);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	th_logbuf[0] = '\0';
	ck_assert_int_eq(tlog_partition_remove(t, "0"), -ENOTEMPTY);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "it holds "
	    "00000000000000000005.log, which is not tlogfs's"));
	ck_assert_int_eq(unlink(fifo), 0);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	th_logbuf[0] = '\0';
	ck_assert_int_eq(tlog_partition_remove(t, "0"), -ENOTEMPTY);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "it holds .cursors, which "
	    "is not tlogfs's"));
	ck_assert_int_eq(access(cfg, F_OK), 0);	/* nothing removed */
	ck_assert_int_eq(rmdir(dir), 0);
	ck_assert_int_eq(tlog_partition_remove(t, "0"), 0);
	th_close();
	free(fifo);
	free(dir);
	free(cfg);
}
END_TEST

/* A device node planted at one of the store's own names is never opened
 * (its driver never reached): a device with no driver, whose open would
 * fail with ENXIO, shows it, as the messages name a stray, not ENXIO. */
START_TEST(devices_are_never_opened)
{
	char *f;

	th_open_tp(NULL);
	th_close();
	ck_assert_int_ge(asprintf(&f, "%s/.tlogfs/checkpoint", th_dir), 0);
	(void)unlink(f);
	if (mknod(f, S_IFCHR | 0600, makedev(240, 0)) == -1) {
		ck_assert_int_eq(errno, EPERM);	/* not root: nothing to test */
		free(f);
		return;
	}
	th_logbuf[0] = '\0';
	th_open_tp(NULL);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "checkpoint: not a checkpoint"));
	th_close();
	free(f);
	ck_assert_int_ge(asprintf(&f, "%s/.tlogfs/lock", th_dir), 0);
	ck_assert_int_eq(unlink(f), 0);
	ck_assert_int_eq(mknod(f, S_IFCHR | 0600, makedev(240, 0)), 0);
	open_refused("lock: not a regular file");
	ck_assert_int_eq(unlink(f), 0);
	free(f);
	ck_assert_int_ge(asprintf(&f, "%s/.tlogfs/format", th_dir), 0);
	ck_assert_int_eq(unlink(f), 0);
	ck_assert_int_eq(mknod(f, S_IFCHR | 0600, makedev(240, 0)), 0);
	open_refused("format: not a regular file");
	free(f);
}
END_TEST

/* Readers may hold only what the limit leaves after the segments' own
 * share: past it they get ENFILE, and appends, even ones that need a
 * new segment's two descriptors, still go in. */
START_TEST(readers_leave_descriptors_for_appends)
{
	struct rlimit rl, low;
	struct tlog_partition *q;
	struct tlog_writer *w;
	struct tlog_segment *seg;
	int fds[256], n = 0, fd, i;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = 200;	/* segments 50 (100 descriptors), readers 64 */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	th_open_tp(NULL);
	w = tlog_writer_open(th_P);
	th_put(w, "a record\n");
	tlog_writer_close(w);
	seg = tlog_segment_get_active(th_P);
	ck_assert_ptr_nonnull(seg);
	while (n < 256 && (fd = tlog_segment_open(seg)) >= 0)
		fds[n++] = fd;
	ck_assert_int_eq(fd, -ENFILE);
	ck_assert_int_eq(n, 64);
	ck_assert_ptr_nonnull(strstr(th_logbuf, "out of file descriptors"));
	for (i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "q%d", i);
		q = th_part(th_S, "t", name);
		w = tlog_writer_open(q);
		ck_assert_int_eq(tlog_writer_write(w, "more\n", 5), 5);
		ck_assert_int_eq(tlog_writer_fsync(w, false), 0);
		tlog_writer_close(w);
		tlog_partition_put(q);
	}
	tlog_segment_close(seg, fds[--n]);
	fd = tlog_segment_open(seg);
	ck_assert_int_ge(fd, 0);
	tlog_segment_close(seg, fd);
	while (n > 0)
		tlog_segment_close(seg, fds[--n]);
	tlog_segment_put(seg);
	th_close();
	/* The front end's own descriptors (FUSE clone_fd) come off too. */
	{
		struct tlog_store_opts o;

		memset(&o, 0, sizeof(o));
		o.fd_reserve = 20;
		th_open_tp(&o);
		seg = tlog_segment_get_active(th_P);
		ck_assert_ptr_nonnull(seg);
		while (n < 256 && (fd = tlog_segment_open(seg)) >= 0)
			fds[n++] = fd;
		ck_assert_int_eq(n, 44);
		while (n > 0)
			tlog_segment_close(seg, fds[--n]);
		tlog_segment_put(seg);
		th_close();
	}
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("store");

	TH_CASE(s, layout_and_format);
	TH_CASE(s, second_open_fails_naming_pid);
	TH_CASE(s, missing_store_fails);
	TH_CASE(s, names);
	TH_CASE(s, topics_and_partitions);
	TH_CASE(s, level_stat_chmod);
	TH_CASE(s, refused_rmdir_keeps_settings);
	TH_CASE(s, rename_over_empty_partition);
	TH_CASE(s, append_races_rename_over_its_partition);
	TH_CASE(s, append_races_rmdir_and_mkdir);
	TH_CASE(s, symlinks_are_never_followed);
	TH_CASE(s, clean_mark_never_followed);
	TH_CASE(s, rmdir_waits_for_unlinks_in_flight);
	TH_CASE(s, open_files_stay_within_budget);
	TH_CASE(s, a_write_sealing_many_segments_stays_within_descriptors);
	TH_CASE(s, fsync_out_of_descriptors_evicts_idle_segments);
	TH_CASE(s, close_says_why_the_mark_is_missing);
	TH_CASE(s, sealed_idle_segment_keeps_no_live_part);
	TH_CASE(s, repeated_errors_are_rate_limited);
	TH_CASE(s, store_identity);
	TH_CASE(s, held_lost_at_close_is_named);
	TH_CASE(s, strays_never_block_the_open);
	TH_CASE(s, directory_at_clean_mark_removed);
	TH_CASE(s, directory_at_reserve);
	TH_CASE(s, own_dirs_as_links_refuse_the_open);
	TH_CASE(s, read_open_out_of_descriptors);
	TH_CASE(s, store_is_private);
	TH_CASE(s, topics_and_partitions_are_private);
	TH_CASE(s, only_an_empty_directory_becomes_a_store);
	TH_CASE(s, planted_offsets_never_wrap);
	TH_CASE(s, config_lines_name_their_file);
	TH_CASE(s, format_must_be_exact);
	TH_CASE(s, rmdir_names_non_files);
	TH_CASE(s, devices_are_never_opened);
	TH_CASE(s, readers_leave_descriptors_for_appends);
	return th_run(s);
}
