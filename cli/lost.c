/*
 * lost.c - where a reader goes on after records it cannot read: a
 * compressed frame that fails its checksum (design.md, "Compressed
 * history"), read through the mount, fails with EIO, and so do the
 * records in the 4 KiB pages it shares with its neighbours. Only the
 * mount's interface is used: the seek attribute user.tlog.at.OFFSET
 * (doc/seek.md) and reads of the segment.
 *
 * The record to go on from is the first after the damage that reads
 * whole. Found in two steps:
 *
 * 1. The first record after the damage whose look-up succeeds and whose
 *    bytes read whole. A lost range can hold thousands of records: the
 *    search probes 1, 2, 4, ... records on until one succeeds, then
 *    bisects between the last two probes, so it costs about
 *    2 log2(range) look-ups and reads, bounded by the segment's end
 *    (the next segment's first record). It assumes one damaged stretch
 *    there: with two close together, what lies between them counts as
 *    lost too.
 * 2. Before it, records that read whole but cannot be looked up: a
 *    look-up counts newlines from the index entry before the record,
 *    which in the first index interval after the damage (about 4 KiB)
 *    lies in the bad frame. They start after a newline in the pages
 *    before record 1 that read (read back page by page), and their
 *    offsets are counted back from it by their newlines. A record that
 *    starts right at the first page that reads counts as lost: nothing
 *    says it starts there.
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

#define PROBE_READ 65536	/* a probe's read: a record's newline */

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
	if (len > PROBE_READ)
		len = PROBE_READ;
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

/*
 * Step 2: l->next, at l->pos, is where step 1 goes on. Moves it back to
 * the first record after `first` that reads whole, if all from there
 * on reads whole too. No byte below floor is read.
 */
static int
back(struct segread *sr, uint64_t first, uint64_t floor, char *buf,
    size_t len, struct lost *l)
{
	uint64_t at = l->pos, t, c = 0, j;
	size_t i, n;
	ssize_t got;

	/* Back a page at a time while whole pages read, within buf. */
	for (;;) {
		t = at % 4096 != 0 ? at - at % 4096 : at - 4096;
		if (at < 4096 || t <= floor || l->pos - t > len)
			break;
		while ((got = pread(sr->fd, buf, (size_t)(at - t),
		    (off_t)t)) == -1 && errno == EINTR)
			;
		if (got == -1 && errno != EIO)
			return -1;
		if (got != (ssize_t)(at - t))
			break;
		at = t;
	}
	if (at == l->pos)
		return 0;
	n = (size_t)(l->pos - at);
	while ((got = pread(sr->fd, buf, n, (off_t)at)) == -1 &&
	    errno == EINTR)
		;
	if (got != (ssize_t)n)
		return got == -1 && errno != EIO ? -1 : 0;
	/* A record starts after each newline but one ending at l->pos:
	 * the c records before l->next. */
	for (i = 0; i + 1 < n; i++)
		c += buf[i] == '\n';
	if (c == 0)
		return 0;
	/* From `first` if it is among them, else from the first. */
	j = first >= l->next - c ? first - (l->next - c) : 0;
	l->next -= c - j;
	for (i = 0; ; i++)
		if (buf[i] == '\n' && j-- == 0)
			break;
	l->pos = at + i + 1;
	return 0;
}

int
lost_find(struct segread *sr, uint64_t first, uint64_t floor, char *buf,
    size_t len, struct lost *l)
{
	uint64_t records, end, lo, hi, mid, step, pos, hipos = 0;
	bool here, hihere = false;
	struct stat st;
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
	l->sure = l->next;
	l->here = hi < end && hihere;
	l->pos = hipos;
	if (hi >= end) {
		/* Its end: what reads there may be records of its own. */
		if (fstat(sr->fd, &st) == -1)
			return -1;
		l->pos = (uint64_t)st.st_size;
	} else if (!hihere)
		return 0;	/* it went meanwhile: nothing to read back */
	if (back(sr, first, floor, buf, len, l) == -1)
		return -1;
	l->here = l->here || l->next < end;
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

void
lost_what(char *buf, size_t len, uint64_t first, uint64_t next, int fd)
{
	const char *why = "unreadable (Input/output error)";
	char v[16];

	if (fgetxattr(fd, "user.tlog.compression", v, sizeof(v) - 1) == 4 &&
	    memcmp(v, "zstd", 4) == 0)
		why = "lost to a corrupt compressed frame";
	if (next - 1 == first)
		snprintf(buf, len, "record %" PRIu64 " is %s", first, why);
	else
		snprintf(buf, len, "records %" PRIu64 " to %" PRIu64 " are %s",
		    first, next - 1, why);
}
