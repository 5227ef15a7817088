/*
 * status.h - tlogctl status (status.c reads the partitions, status_out.c
 * sums and prints them): the rows and what the two share.
 */
#ifndef TLOGCTL_STATUS_H
#define TLOGCTL_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOUNTS_FILE "/proc/mounts"
#define TLOGFS_TYPE "fuse.tlogfs"
#define RATE_WINDOW 60000	/* ms: REC/S is over the last minute */
/* The most a listxattr answers (the kernel's XATTR_LIST_MAX): one call
 * into a buffer this large never needs a second. */
#define LIST_MAX 65536
/* Threads reading partitions side by side (read_all). */
#define READERS 4

/* A mount of /proc/mounts, its mount point decoded. */
struct mnt {
	char *dir;
	bool tlogfs;		/* of type fuse.tlogfs */
};

struct curlag {
	char *name;
	uint64_t lag;
};

/*
 * A row: a partition's numbers, or a topic's or all rows' sums (part
 * NULL). The cursors are sorted by name, each once; on a sum, each
 * cursor's lag is the sum over the partitions that have it.
 */
struct row {
	const char *mount;	/* borrowed from the mount table */
	char *topic, *part;
	bool skip;		/* removed while listed, or unreadable */
	uint64_t parts;		/* partitions summed (1 for a partition) */
	uint64_t start, end;	/* a partition's offsets */
	uint64_t records, bytes, disk, segments;
	uint64_t recent;	/* records of the last RATE_WINDOW */
	int64_t oldest_ts;	/* -1: no record */
	int64_t next_expiry;	/* -1: nothing to expire */
	struct curlag *cur;
	size_t ncur;
};

struct status {
	struct mnt *mounts;
	size_t nmounts;
	struct row *rows;
	size_t n, cap;
	int64_t now;		/* ms since the epoch, read once */
	bool topics, exact, json;
	bool failed;		/* something could not be read (atomic
				   while the readers run) */
	size_t next;		/* the next row to read (atomic) */
};

/* status.c */
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
void row_free(struct row *r);

/* status_out.c: sums, the table, JSON lines */
void sum_init(struct row *r, const char *mount, const char *topic);
void add_row(struct row *dst, const struct row *src);
void rows_by_topic(struct status *st);
void print_table(struct status *st, const struct row *total);
void print_json(const struct status *st, const struct row *r);

#endif /* TLOGCTL_STATUS_H */
