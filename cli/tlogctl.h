/*
 * tlogctl.h - what the files of tlogctl share. tlogctl speaks to a
 * mounted tlogfs through files and extended attributes only, never to
 * the store (doc/tlogctl.1): it links nothing of the engine.
 *
 * Exit status: 0 done, 1 a runtime error (one line on stderr), 2 a usage
 * error (one line on stderr: what is wrong and the command's usage).
 */
#ifndef TLOGCTL_H
#define TLOGCTL_H

#include <sys/types.h>

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define EXIT_USAGE 2

/* main.c */
/* A usage error: "tlogctl: WHAT; usage: LINE" on stderr, LINE the usage
 * of command cmd (of the whole tool if NULL), and exit 2. */
__attribute__((noreturn, format(printf, 2, 3)))
void usage(const char *cmd, const char *fmt, ...);
/* The full usage on stdout, exit 0. */
__attribute__((noreturn)) void help(void);
/* Options of a subcommand: getopt_long over argv, argv[0] its name.
 * Handles --help (alone, else a usage error) and bad options; returns
 * getopt's character, -1 at the end. */
int next_opt(int argc, char *argv[], const char *optstr,
    const struct option *longopts);
/* After the options: exactly one operand, called name, or a usage
 * error. */
void one_operand(int argc, char *argv[], const char *name);
/* SIGTERM, SIGINT and SIGHUP call fn, which tells the command to stop;
 * no SA_RESTART: a call they interrupt fails with EINTR. */
void catch_stop(void (*fn)(int));
/* Milliseconds of CLOCK_MONOTONIC / CLOCK_REALTIME. */
int64_t mono_ms(void);
int64_t real_ms(void);
/* Sleeps ms milliseconds, through signals. */
void pause_ms(int ms);

/* part.c: a partition through the mount, by its directory open
 * (O_RDONLY): what a descriptor reads stays the same partition through a
 * rename, and a partition removed and made again under its name is
 * another one, which it never reaches. */
/* Opens a partition's directory; exits 1 with one line unless path is
 * a partition. */
int part_check(const char *part);
/* Whether an errno says a partition or what it names is gone (removed
 * meanwhile), not that reading it failed. */
bool part_gone(int e);
/* Opens a directory: the descriptor, or -1 with errno. */
int dir_open(const char *path);
/* A partition's (dfd) or a segment's (fd) statistic, user.tlog.NAME,
 * as a number: 0, or -1 with errno. */
int fd_stat(int fd, const char *name, uint64_t *v);
/* The same for a time, user.tlog.NAME in ms since the epoch or -1 for
 * none (oldest_ts, next_expiry, ...): 0, or -1 with errno. */
int fd_time(int fd, const char *name, int64_t *v);
/* user.tlog.at.OFFSET: base and position of the first live record >=
 * offset. -1 with errno (ENODATA: beyond the end). */
int part_at(int dfd, uint64_t offset, uint64_t *base, uint64_t *pos);
/* user.tlog.since.MS: the first record that can have ts >= ms. */
int part_since(int dfd, int64_t ms, uint64_t *offset, uint64_t *base,
    uint64_t *pos);

/* Cursors: user.cursor.NAME of a partition, NAME 1-64 bytes of
 * [A-Za-z0-9._-]. */
#define CURSOR_PREFIX "user.cursor."
#define CURSOR_NAME_MAX 64
bool cursor_name_ok(const char *name);
/* The cursor's committed offset: 0, or -1 with errno (ENODATA: none). */
int part_cursor(int dfd, const char *name, uint64_t *v);

/*
 * segread.c: a partition's segments through the mount, in offset order
 * (doc/seek.md). Every call returns -1 with errno on failure.
 */
struct segread {
	const char *part;	/* its path, for messages */
	int dfd;		/* the partition's directory (not owned) */
	int fd;			/* the segment being read, -1 if none */
	uint64_t base;		/* its base offset */
	uint64_t pos;		/* next byte to read in it */
	ino_t ino;		/* its inode, to see `current` move on */
};
void sr_init(struct segread *r, const char *part, int dfd);
/* Opens the segment with this base: by its name if sealed, else as
 * `current` if that is it (or, when the partition has no active
 * segment, the empty `current` whose base is the end offset). ENOENT
 * if neither holds any more: it was deleted, or it sealed between the
 * two opens; seek again. The position is left to the caller. */
int sr_open(struct segread *r, uint64_t base);
/* Opens the segment holding offset `want`, or the first live record
 * after it, at that record; *got is the record's offset (> want: the
 * records between were gone). ENODATA: want is beyond the end; EAGAIN:
 * the segment kept changing under the seek. */
int sr_seek(struct segread *r, uint64_t want, uint64_t *got);
void sr_close(struct segread *r);
/* pread at r->pos, which it does not move. */
ssize_t sr_pread(struct segread *r, void *buf, size_t len);
int sr_sealed(struct segread *r, bool *sealed);
/* Whether `current` names another file than the one open. */
int sr_moved(struct segread *r, bool *moved);
/* Waits, up to ms, until the open segment has data past r->pos or can
 * have no more (poll(2): tlogfs(8), FOLLOWERS AND WRITERS): 1 if the
 * mount said so, 0 at the timeout or a signal, -1 on an error. */
int sr_wait(struct segread *r, int ms);

/*
 * lost.c: where to go on after records that cannot be read (a corrupt
 * compressed frame: reads and look-ups near it fail with EIO).
 */
struct lost {
	uint64_t first;		/* the first record lost */
	uint64_t next;		/* the first to go on from: readable, or the
				 * segment's end (its next segment) */
	bool here;		/* next is in the open segment, at pos */
	uint64_t pos;
	uint64_t sure;		/* the first from next on that a look-up
				 * finds (or the segment's end): those
				 * before it are counted by newlines */
};
/* The first record from `first` on (which cannot be read, or, if it is
 * not known where it starts, cannot be looked up) of the open segment
 * that reads whole, and all after it to where a look-up finds one;
 * next == first if that is first itself. No byte before floor is read
 * (first's position, if known); buf (len bytes) is for the reads. 0,
 * or -1 with errno. */
int lost_find(struct segread *sr, uint64_t first, uint64_t floor,
    char *buf, size_t len, struct lost *l);
/* The base of the segment of the partition (dfd) that holds offset want
 * when its look-up failed: the largest base <= want among its BASE.log
 * files. 0, or -1 with errno (ENOENT: none). */
int lost_segment(int dfd, uint64_t want, uint64_t *base);
/* "records FIRST to NEXT-1 are lost to a corrupt compressed frame" (or
 * "record FIRST is", or "unreadable" if the segment open at fd is not
 * compressed): what the line about lost records says, read's and
 * ship's. */
void lost_what(char *buf, size_t len, uint64_t first, uint64_t next, int fd);

/* when.c */
/* TIME for --since as ms since the epoch; -1 if it is not one. */
int parse_time(const char *s, int64_t now, int64_t *out);
/* "500ms", "2s", "1m": a duration in ms (units ms s m h d w); -1 if not
 * one. */
int parse_duration(const char *s, int64_t *out);

/* the subcommands */
int cmd_append(int argc, char *argv[]);
int cmd_read(int argc, char *argv[]);
int cmd_lag(int argc, char *argv[]);
int cmd_status(int argc, char *argv[]);

int cmd_ship(int argc, char *argv[]);

#endif /* TLOGCTL_H */
