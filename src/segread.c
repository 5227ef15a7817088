/*
 * segread.c - reading a segment: its data up to the last whole record,
 * and the look-ups of an offset or a time through its sparse index
 * (doc/seek.md). Readers take the partition's lock only to copy the
 * counters and a read-only open's repaired index; the files are read
 * with their own descriptors, never the appender's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment.h"

ssize_t
tlog_seg_read(struct tlog_segment *seg, int fd, void *buf, size_t len,
    off_t pos, uint64_t *bad, uint64_t *badlen)
{
	uint64_t end = __atomic_load_n(&seg->bytes, __ATOMIC_ACQUIRE);
	size_t done = 0;
	ssize_t n;

	*bad = UINT64_MAX;
	*badlen = 0;
	if (pos < 0)
		return -EINVAL;
	if ((uint64_t)pos >= end)
		return 0;
	if (len > end - (uint64_t)pos)
		len = (size_t)(end - (uint64_t)pos);
	/* A descriptor of the compressed file: its frames, decoded. One
	 * of the plain file (opened before the segment was compressed)
	 * keeps reading that file to its end. */
	if (tlog_zfd_is(&seg->sd->fdb->zc, fd))
		return tlog_seg_zread(seg, fd, buf, len, (uint64_t)pos, end,
		    bad, badlen);
	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done,
		    pos + (off_t)done);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Reads the index entries of seg into a malloc'd array. */
static int
seg_load_index(struct tlog_segment *seg, struct tlog_idx_entry **out,
    size_t *n)
{
	struct tlog_idx_entry *e = NULL;
	unsigned char *buf;
	char name[32];
	size_t cnt, got;
	ssize_t r;
	bool mem;
	int fd;

	*out = NULL;
	*n = 0;
	/* A read-only open's repaired index, copied under the lock (the
	 * live part that holds it is the lock's). */
	pthread_mutex_lock(&seg->sd->lock);
	cnt = seg->nidx;
	mem = cnt > 0 && seg->live != NULL && seg->live->mem_idx != NULL;
	if (mem && (e = reallocarray(NULL, cnt, sizeof(*e))) != NULL)
		memcpy(e, seg->live->mem_idx, cnt * sizeof(*e));
	pthread_mutex_unlock(&seg->sd->lock);
	if (mem && e == NULL)
		return -ENOMEM;
	if (cnt == 0 || mem) {
		*out = e;
		*n = cnt;
		return 0;
	}
	tlog_segname_format(seg->base, ".idx", name, sizeof(name));
	fd = tlog_level_openat(seg->sd->lv, name, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	buf = reallocarray(NULL, cnt, TLOG_IDX_ENT);
	e = reallocarray(NULL, cnt, sizeof(*e));
	if (buf == NULL || e == NULL) {
		free(buf);
		free(e);
		close(fd);
		return -ENOMEM;
	}
	r = pread(fd, buf, cnt * TLOG_IDX_ENT, TLOG_IDX_HDR);
	close(fd);
	/* Up to the first entry that fails its CRC. */
	for (got = 0; r > 0 && got < (size_t)r / TLOG_IDX_ENT; got++)
		if (tlog_idx_decode_entry(buf + got * TLOG_IDX_ENT,
		    &e[got]) != 0)
			break;
	free(buf);
	*out = e;
	*n = got;
	return 0;
}

/*
 * Where record rel starts, counted back from the entry after it (nrel at
 * npos, or the segment's end), reading no further back than lim: record
 * nrel - 1 ends at npos, with or without its newline, each one before it
 * with one. For a record behind a bad compressed frame, which a count
 * from the entry before cannot pass; -EIO if the bytes between cannot be
 * read (the newline before the record's start included: a frame may end
 * inside a record longer than a frame).
 */
static int
count_back(struct tlog_segment *seg, int fd, uint64_t rel, uint64_t nrel,
    uint64_t npos, uint64_t lim, uint64_t *pos)
{
	char buf[65536];
	uint64_t k = nrel - rel, hi = npos - 1, lo, bad, badlen;
	ssize_t r;
	size_t i;

	while (hi > lim) {
		lo = hi - lim > sizeof(buf) ? hi - sizeof(buf) : lim;
		r = tlog_seg_read(seg, fd, buf, (size_t)(hi - lo), (off_t)lo,
		    &bad, &badlen);
		/* A bad frame in the window: only what follows it. */
		if (r == -EIO && bad != UINT64_MAX && bad + badlen > lo &&
		    bad + badlen < hi) {
			lo = bad + badlen;
			r = tlog_seg_read(seg, fd, buf, (size_t)(hi - lo),
			    (off_t)lo, &bad, &badlen);
		}
		if (r != (ssize_t)(hi - lo))
			return -EIO;
		for (i = (size_t)r; i-- > 0;)
			if (buf[i] == '\n' && --k == 0) {
				*pos = lo + i + 1;
				return 0;
			}
		hi = lo;
	}
	return -EIO;
}

/*
 * Between two index entries every record ends with a newline, except that
 * the record just before an entry may end without one (records without a
 * newline are always followed by an entry). So counting newlines from the
 * nearest entry before finds any offset, and so does counting back from
 * the one after (count_back) when a bad frame lies between.
 */
int
tlog_seg_find_offset(struct tlog_segment *seg, uint64_t offset,
    uint64_t *pos)
{
	struct tlog_idx_entry *e;
	uint64_t rel, at, at0, cur, end, records, bad, badlen, nrel, npos;
	char buf[65536];
	size_t n, lo, hi, i;
	ssize_t r;
	int fd, ret = 0;

	pthread_mutex_lock(&seg->sd->lock);
	records = seg->records;
	end = seg->bytes;
	pthread_mutex_unlock(&seg->sd->lock);
	if (offset < seg->base || offset >= seg->base + records)
		return offset == seg->base + records ? (*pos = end, 0) :
		    -ENOENT;
	rel = offset - seg->base;
	if ((ret = seg_load_index(seg, &e, &n)) != 0)
		return ret;
	/* Last entry with e.rel <= rel. */
	lo = 0;
	hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (e[mid].rel <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	cur = lo ? e[lo - 1].rel : 0;
	at = at0 = lo ? e[lo - 1].pos : 0;
	nrel = lo < n ? e[lo].rel : records;
	npos = lo < n ? e[lo].pos : end;
	free(e);
	if (cur == rel) {
		*pos = at;
		return 0;
	}
	if ((fd = tlog_segment_open(seg)) < 0)
		return fd;
	while (cur < rel && at < end) {
		r = tlog_seg_read(seg, fd, buf, sizeof(buf), (off_t)at, &bad,
		    &badlen);
		/* A bad frame further on fails the whole read: count up
		 * to it, the record may lie before it (design.md: only
		 * the bad frame's records are lost). */
		if (r == -EIO && bad != UINT64_MAX && bad > at &&
		    bad - at < sizeof(buf))
			r = tlog_seg_read(seg, fd, buf, (size_t)(bad - at),
			    (off_t)at, &bad, &badlen);
		if (r <= 0) {
			ret = r < 0 ? (int)r : -EIO;
			break;
		}
		for (i = 0; i < (size_t)r && cur < rel; i++)
			if (buf[i] == '\n')
				cur++;
		at += i;
	}
	if (ret == 0 && cur != rel)
		ret = -EIO;
	if (ret == 0)
		*pos = at;
	else if (ret == -EIO)
		ret = count_back(seg, fd, rel, nrel, npos, at0, pos);
	tlog_segment_close(seg, fd);
	return ret;
}

int
tlog_seg_find_time(struct tlog_segment *seg, int64_t t,
    uint64_t *offset, uint64_t *pos)
{
	struct tlog_idx_entry *e;
	size_t n, j;
	int64_t max_ts;
	int ret;

	pthread_mutex_lock(&seg->sd->lock);
	max_ts = seg->max_ts;
	pthread_mutex_unlock(&seg->sd->lock);
	if (max_ts < t)
		return -ENOENT;
	if ((ret = seg_load_index(seg, &e, &n)) != 0)
		return ret;
	/* First entry with ts >= t; the answer lies after the one before. */
	for (j = 0; j < n && e[j].ts < t; j++)
		;
	if (j > 0)
		j--;
	*offset = seg->base + (n ? e[j].rel : 0);
	*pos = n ? e[j].pos : 0;
	free(e);
	return 0;
}
