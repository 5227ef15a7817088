/*
 * util.h - the engine's bottom layer: CRC-32C, files replaced atomically,
 * directories synced, opening below a directory without following links,
 * name rules, the segment-name codec, monotonic time for waits, and the
 * log sink. Nothing here knows a store.
 */
#ifndef TLOG_UTIL_H
#define TLOG_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "tlog.h"

/* The structure holding member m at address ptr. */
#define TLOG_CONTAINER_OF(ptr, type, m) \
	((type *)(void *)((char *)(ptr) - offsetof(type, m)))

/* The table-driven CRC-32C, whatever the CPU (tests compare it with
 * tlog_crc32c, which uses the CPU's instruction when there is one). */
uint32_t tlog_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* Writes all len bytes at off (EINTR retried): 0, -errno, or -ENOSPC if
 * the file takes no more. */
int tlog_pwrite_all(int fd, const void *buf, size_t len, off_t off);
/* Writes buf to dirfd/path atomically and durably: temporary file,
 * fsync, rename, fsync of the directory. */
int tlog_write_atomic(int dirfd, const char *path, const void *buf,
    size_t len);
/* fsync of directory dirfd/path ("." for dirfd itself), so that entries
 * made, renamed or removed in it survive a power cut; a file system that
 * cannot sync directories (EINVAL) counts as done. */
int tlog_fsync_dir(int dirfd, const char *path);
/* tlog_write_atomic; with !sync, neither the file nor the directory is
 * synced: recovery syncs the whole file system once (syncfs). */
int tlog_write_file_atomic(int dirfd, const char *path, const void *buf,
    size_t len, bool sync);
/* Room for element n of array v (*cap elements of size allocated,
 * doubling from first): v, or a larger copy of it; NULL when out of
 * memory (v and *cap untouched). */
void *tlog_grow(void *v, size_t *cap, size_t n, size_t size, size_t first);
/* openat(2) below dirfd that never follows a symbolic link; -errno.
 * Opens only (no O_CREAT, so no mode). */
int tlog_open_beneath(int dirfd, const char *path, int flags);
/* Something other than a regular file has the name (a link, a FIFO, a
 * device, a directory): looked at with lstat, never opened, so that no
 * device's driver is reached. */
bool tlog_not_regular(int dirfd, const char *path);

/* The store's identity file (doc/format.md: .tlogfs/id; a partition's
 * .id adds its directory's inode, cursor.c): TLOG_STORE_ID_LEN
 * lowercase hex digits and a newline. Read: 0,
 * -ENOENT if there is none, -EINVAL if the file holds something else.
 * Make: 128 new random bits, written atomically and durably. */
int tlog_id_read(int dirfd, const char *path, char id[TLOG_STORE_ID_LEN + 1]);
int tlog_id_make(int dirfd, const char *path, char id[TLOG_STORE_ID_LEN + 1]);
/* 128 new random bits as hex digits, NUL-terminated. */
void tlog_id_new(char id[TLOG_STORE_ID_LEN + 1]);

/* Segment file names: "<base, 20 digits><ext>", ext ".log" or ".idx".
 * The parser, tlog_segname_parse, is in tlog.h: mount/ uses it too. */
void tlog_segname_format(uint64_t base, const char *ext, char *buf,
    size_t len);

/* 0, -EINVAL (bad characters, leading '.', empty) or -ENAMETOOLONG:
 * the rule for topic and partition names. */
int tlog_name_check(const char *name);

/* Not time of day: for durations (monotonic ns) and for sleeps (a
 * condition variable on CLOCK_MONOTONIC and a deadline ms from now). */
uint64_t tlog_mono_ns(void);
void tlog_cond_init_mono(pthread_cond_t *c);
void tlog_deadline(int64_t ms, struct timespec *ts);

/* Where log lines go: tlog_store_opts.log, or stderr when fn (or the
 * sink itself) is NULL. */
struct tlog_sink {
	void (*fn)(void *arg, int prio, const char *msg);
	void *arg;
};
void tlog_sink_vlog(const struct tlog_sink *k, int prio, const char *fmt,
    va_list ap);
void tlog_sink_log(const struct tlog_sink *k, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Decimal digits, optionally followed by one newline (as echo sends):
 * false for anything else, or a number past UINT64_MAX. */
bool tlog_parse_offset(const char *s, size_t len, uint64_t *out);

/* An owner as one value: uid in the high half, gid in the low. */
static inline uint64_t
tlog_owner(uid_t uid, gid_t gid)
{
	return (uint64_t)uid << 32 | (uint32_t)gid;
}
static inline uid_t
tlog_owner_uid(uint64_t o)
{
	return (uid_t)(o >> 32);
}
static inline gid_t
tlog_owner_gid(uint64_t o)
{
	return (gid_t)(uint32_t)o;
}

#endif /* TLOG_UTIL_H */
