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
/* Concatenation of every live segment of p, oldest first. */
char *th_partition_data(struct tlog_partition *p, size_t *len);
/* Adds one test in a case of its own, so TAP names it. */
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

#endif
