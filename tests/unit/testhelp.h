/*
 * testhelp.h - shared fixtures for the Check unit tests: temporary stores,
 * an injected clock, and small file helpers.
 */
#ifndef TESTHELP_H
#define TESTHELP_H

#include <check.h>
#include <stdint.h>

#include "tlog.h"

/* The fake clock every test store reads: tests move it by hand. */
extern int64_t th_clock;
/* A fake boot-time clock, for stores opened with o.boot_clock =
 * th_boot_now; without it the store's boot clock is th_clock too. */
extern int64_t th_boot;
/* The boot id th_open gives the store; "" for the kernel's. A test
 * changes it to make the next open look like one after a reboot. */
extern char th_boot_id[64];
int64_t th_boot_now(void *arg);

/* A new empty directory under $TMPDIR (or /tmp); caller frees. */
char *th_tmpdir(void);
/* rm -rf */
void th_rmrf(const char *dir);
/* Opens (creating) a store at dir on th_clock, with the reaper attached
 * (no thread); fails the test on error.
 * Log lines are collected in th_logbuf (last 64 KiB) instead of stderr. */
struct tlog_store *th_open(const char *dir);
struct tlog_store *th_open_opts(const char *dir, struct tlog_store_opts *o);
extern char th_logbuf[65536];
/* The log sink that collects them, for a store opened by hand. */
void th_log(void *arg, int prio, const char *msg);
/* Creates topic/partition and returns a reference to the partition. */
struct tlog_partition *th_part(struct tlog_store *s, const char *topic,
    const char *part);
/* Sets a config key at partition level; fails the test on error. */
void th_set(struct tlog_store *s, struct tlog_partition *p, const char *key,
    const char *val);
/* Writes the string through w; fails the test unless all of it is taken. */
void th_put(struct tlog_writer *w, const char *s);
/* Reads a whole file into a malloc'd buffer (NUL added); *len its size. */
char *th_slurp(const char *path, size_t *len);
/* Whether rel (a path under th_dir) is there: lstat(2), so a link
 * counts, whatever it points to. */
bool th_exists(const char *rel);
/* Concatenation of every live segment of p, oldest first. */
char *th_partition_data(struct tlog_partition *p, size_t *len);
/*
 * The fixture every suite shares. th_case adds it to each test as a
 * checked fixture: before the test, th_clock is TH_T0, th_boot 0,
 * th_logbuf empty and th_dir a new directory, then the suite's own setup
 * runs (th_hooks; it may open th_S and th_P); after the test the suite's
 * teardown runs, then th_P is put, th_S closed and th_dir removed. In a
 * run without fork (CK_FORK=no, as under valgrind) that also happens
 * after a failed assertion, so one failure leaves no store behind.
 */
#define TH_T0 1700000000000LL	/* 2023-11-14 */
extern char *th_dir;
extern struct tlog_store *th_S;
extern struct tlog_partition *th_P;
/* The suite's own setup and teardown, for the cases added after it. */
void th_hooks(void (*setup)(void), void (*teardown)(void));
/* th_S on th_dir (o NULL: default options) and th_P = partition t/0. */
void th_open_tp(struct tlog_store_opts *o);
/* Puts th_P and closes th_S (both may be NULL), for a test that reopens. */
void th_close(void);
/* p's segments (tlog_partition_segments); the caller frees. */
struct tlog_seginfo *th_segs(struct tlog_partition *p, size_t *n);
/* Empties the indexes of t/0's segments at bases[0..n). */
void th_empty_indexes(const uint64_t *bases, size_t n);
/* th_empty_indexes, then opens th_S and th_P, and checks that the open logged nothing of t/0 and found those n
 * segments, each compressed: they came from the checkpoint. Returns
 * th_P's segments; the caller frees. */
struct tlog_seginfo *th_open_indexes_emptied(const uint64_t *bases, size_t n);
/* p's segment count. */
size_t th_nsegs(struct tlog_partition *p);
/* The descriptors this process has open (/proc/self/fd). */
int th_count_fds(void);
/* Adds one test in a case of its own, so TAP names it, with the fixture. */
void th_case(Suite *s, const char *name, const TTest *t);
#define TH_CASE(s, t) th_case((s), #t, (t))
/* Runs a suite and returns the process exit status. */
int th_run(Suite *s);

/*
 * Simulated power loss (powercut.c). From th_dur_start(dir) on, every
 * fsync/fdatasync records what it made durable; th_powercut(dir) then
 * leaves only that: entries of directories that were not synced since
 * they changed are gone (renames undone, synced unlinked files back),
 * and each file keeps its content as of its last sync, the rest cut off
 * (TRUNCATE), zero-filled (ZERO), or page by page either way (MIXED,
 * random from seed). th_powercut stops the tracking.
 */
enum th_cut { TH_CUT_TRUNCATE, TH_CUT_ZERO, TH_CUT_MIXED };
void th_dur_start(const char *dir);
void th_dur_stop(void);
void th_powercut(const char *dir, unsigned seed, enum th_cut mode);
/* A sync of a file whose path contains this fails with EIO (counted). */
extern const char *volatile th_sync_fail;
extern unsigned th_sync_failed;
/* Runs before every unlinkat(2), with the name being unlinked. */
extern void (*volatile th_unlink_hook)(const char *name);

/* Crashes in a child process. The machine
 * restarts: the kernel has a new boot id. */
void th_new_boot(void);
/* What a crashing child abandons (a store it never closes, its
 * writers) stays reachable: returns obj. */
void *th_keep(void *obj);
/* Runs fn in a child that dies without closing anything; fn writes what
 * it wants the parent to know into *res (len bytes). */
void th_in_child(void (*fn)(void *), void *res, size_t len);

/* Compressed history's suites: n access-log lines numbered from, their
 * length in *len (malloc'd); written to p by one writer; p sealed and
 * every queued compression run; p holding exactly those lines. */
char *th_lines(int from, int n, size_t *len);
void th_put_lines(struct tlog_partition *p, int from, int n);
void th_seal_and_compress(struct tlog_store *s, struct tlog_partition *p);
void th_check_data(struct tlog_partition *p, int from, int n);
/* th_dir/rel, in one of two static buffers used in turn. */
char *th_path(const char *rel);

#endif
