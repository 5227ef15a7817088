/*
 * lost.c - where a reader goes on after records it cannot read: a
 * compressed frame that fails its checksum (design.md, "Compressed
 * history"), read through the mount, fails with EIO, and so do the
 * records in the 4 KiB pages it shares with its neighbours. Only the
 * mount's interface is used: the seek attribute user.tlog.at.OFFSET
 * (doc/seek.md) and reads of the segment.
 *
 * The first record to go on from is the first after the damage whose
 * look-up succeeds and whose bytes read whole. Near the damage a
 * look-up fails too (it counts newlines from the index entry before the
 * record, which may lie in the bad frame), so a record that reads fine
 * but cannot be located, in the first index interval after the damage
 * (about 4 KiB), counts as lost with it. A lost range can hold thousands
 * of records: the search probes 1, 2, 4, ... records on until one
 * succeeds, then bisects between the last two probes, so it costs about
 * 2 log2(range) look-ups and reads, bounded by the segment's end. It
 * assumes one damaged stretch there: with two close together, what
 * lies between them may count as lost too.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlogctl.h"

/*
 * Whether record x reads whole: 1 yes (*pos its position, *here false
 * if the look-up named another segment: this one went meanwhile), 0 no,
 * -1 an error. Whole: its bytes up to its newline were read, or up to
 * the end of the segment, or a whole buffer of them (a record longer
 * than that, which the reader will read on).
 */
static int
probe(struct segread *sr, uint64_t x, char *buf, size_t len,
    uint64_t *pos, bool *here)
{
	struct stat st;
	uint64_t base;
	ssize_t n;

	*here = false;
	if (part_at(sr->dfd, x, &base, pos) == -1) {
		if (errno == EIO)
			return 0;
		/* Beyond the end: the partition shrank under us; the seek
		 * from there says what happened. */
		return errno == ENODATA ? 1 : -1;
	}
	if (base != sr->base)
		return 1;
	*here = true;
	while ((n = pread(sr->fd, buf, len, (off_t)*pos)) == -1 &&
	    errno == EINTR)
		;
	if (n == -1)
		return errno == EIO ? 0 : -1;
	if (memchr(buf, '\n', (size_t)n) != NULL || (size_t)n == len)
		return 1;
	if (fstat(sr->fd, &st) == -1)
		return -1;
	/* Short without newline: the end, or a bad page behind it. */
	return *pos + (uint64_t)n >= (uint64_t)st.st_size;
}

int
lost_find(struct segread *sr, uint64_t first, char *buf, size_t len,
    struct lost *l)
{
	uint64_t records, end, lo, hi, mid, step, pos, hipos = 0;
	bool here, hihere = false;
	int ok;

	if (fd_stat(sr->fd, "records", &records) == -1)
		return -1;
	end = sr->base + records;
	l->first = first;
	lo = first;		/* known not to read */
	hi = end;		/* the next segment's first record */
	/* Probes 1, 2, 4, ... records on. */
	for (step = 1; lo < end && end - lo > step; step *= 2) {
		if ((ok = probe(sr, lo + step, buf, len, &pos, &here)) == -1)
			return -1;
		if (ok) {
			hi = lo + step;
			hipos = pos;
			hihere = here;
			break;
		}
		lo += step;
	}
	/* Then the first between the last two probes. */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if ((ok = probe(sr, mid, buf, len, &pos, &here)) == -1)
			return -1;
		if (ok) {
			hi = mid;
			hipos = pos;
			hihere = here;
		} else
			lo = mid;
	}
	l->next = hi < end ? hi : end;
	l->here = hi < end && hihere;
	l->pos = hipos;
	return 0;
}

int
lost_segment(int dfd, uint64_t want, uint64_t *base)
{
	struct dirent *d;
	uint64_t b;
	bool found = false;
	char *end;
	DIR *dir;
	int fd;

	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((d = readdir(dir)) != NULL) {
		if (strlen(d->d_name) != 24 || strcmp(d->d_name + 20, ".log"))
			continue;
		errno = 0;
		b = strtoull(d->d_name, &end, 10);
		if (errno != 0 || end != d->d_name + 20 || b > want)
			continue;
		if (!found || b > *base)
			*base = b;
		found = true;
	}
	closedir(dir);
	if (!found) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

bool
lost_compressed(int fd)
{
	char v[16];
	ssize_t n;

	n = fgetxattr(fd, "user.tlog.compression", v, sizeof(v) - 1);
	return n == 4 && memcmp(v, "zstd", 4) == 0;
}
