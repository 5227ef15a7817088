/*
 * ship_pump.c - the records `tlogctl ship` publishes: where each
 * partition starts (its cursor, or what the stream already holds of
 * it), its records read through the mount (segread.c, doc/seek.md) and
 * handed to ship_nats.c as long as the window has room.
 *
 * Records are cut at newlines. A record without newline (held bytes
 * flushed at close, or a line cut at record.max.bytes) cannot be told
 * from the bytes alone, so every run of lines is checked against the
 * mount's index: user.tlog.at.OFFSET of the record after the run must
 * be where the run ends. If it is not, the records of that read are
 * taken one by one, each one's end from the seek attribute of the next.
 *
 * Records lost to a corrupt compressed frame (a read or a look-up fails
 * with EIO: design.md, "Compressed history") are never passed over
 * silently: lost.c finds the first record after them that can be read,
 * and one line names them (part_lost). Without --skip-lost the
 * partition stops before them, its cursor at the first of them once
 * all before it is acknowledged; with it, the partition goes on from
 * there and they are never published: the stream gets a gap in
 * Tlog-Offset, the chain of expected ids, which names messages, not
 * offsets, is whole, and the acknowledged prefix passes them with the
 * first record published after them (struct flight's `from`).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ship.h"

static char *buf;		/* what a read got */
static size_t bufcap;

/*
 * What a mount is doing, told once per change rather than once per
 * partition: its daemon gone (ENOTCONN on everything), or a daemon
 * mounted again (every partition another inode on another device).
 * Main thread only.
 */
struct mountstate {
	char *root;
	dev_t dev;		/* of the mount the partitions were bound on */
	bool gone;
};
static struct mountstate *mounts;
static size_t nmounts;

static struct mountstate *
mount_of(const char *root)
{
	struct mountstate *m;
	size_t i;

	for (i = 0; i < nmounts; i++)
		if (strcmp(mounts[i].root, root) == 0)
			return &mounts[i];
	if ((m = reallocarray(mounts, nmounts + 1, sizeof(*m))) == NULL)
		err(1, NULL);
	mounts = m;
	m = &mounts[nmounts++];
	if ((m->root = strdup(root)) == NULL)
		err(1, NULL);
	m->dev = 0;
	m->gone = false;
	return m;
}

/* The partition's mount answers again, on device dev. */
void
ship_mount_seen(struct ship_part *p, dev_t dev)
{
	struct mountstate *m = mount_of(p->root);

	if (m->gone || (m->dev != 0 && m->dev != dev))
		shiplog("%s: mounted again; its partitions are taken up anew "
		    "from their cursors", p->root);
	m->gone = false;
	m->dev = dev;
}

void
ship_mount_lost(const char *root)
{
	struct mountstate *m = mount_of(root);

	if (!m->gone)
		shiplog("%s: %s; shipping from it waits for it to be "
		    "mounted again", root, strerror(ENOTCONN));
	m->gone = true;
}

bool
ship_mounts_gone(void)
{
	size_t i;

	for (i = 0; i < nmounts; i++)
		if (mounts[i].gone)
			return true;
	return false;
}

/* p is no longer what its path names (or its mount is gone). */
static void
part_moved(struct shipper *sh, struct ship_part *p)
{
	p->dead = true;
	pthread_mutex_lock(&sh->mu);
	p->moved = true;	/* the committer reads it */
	pthread_mutex_unlock(&sh->mu);
	p->dead_at = mono_ms();
	p->open = false;
	sr_close(&p->sr);
	/* Its directory is closed, and its path looked at again, by
	 * discovery (ship_find.c). */
	sh->rescan = true;
}

/*
 * Whether p's path still names p, asked after reading and before
 * publishing: records read from p's directory while the path named it
 * were appended while it had that name, so they belong under its
 * subject; once renamed or removed (the path names nothing, or another
 * partition), nothing more of it is published under that subject. Its
 * acknowledged prefix is still committed through its descriptor, and
 * discovery ships the partition under its new name, and the one now
 * at this path, from their own cursors. A dead mount (its daemon gone)
 * or one mounted again counts as moved too, said once for the mount.
 */
bool
ship_part_here(struct shipper *sh, struct ship_part *p)
{
	struct stat st;

	if (stat(p->path, &st) == -1) {
		if (ship_mount_gone(errno))
			ship_mount_lost(p->root);
		else if (errno != ENOENT && errno != ENOTDIR)
			return true;	/* another error: the caller's */
		else if (!p->dead)
			shiplog("%s: renamed or removed while shipped; no "
			    "more of it goes to %s", p->path, p->subject);
	} else if (st.st_dev != p->dev)
		ship_mount_seen(p, st.st_dev);
	else if (st.st_ino == p->ino)
		return true;
	else if (!p->dead)
		shiplog("%s: renamed or removed while shipped; no more of it "
		    "goes to %s", p->path, p->subject);
	part_moved(sh, p);
	return false;
}

/* Drops p on error e, unless the error is that it moved or that its
 * mount is gone (ship_mount_gone: said once for the mount, and p is
 * taken up anew when it is back, as one moved). */
static void
part_drop(struct shipper *sh, struct ship_part *p, int e)
{
	if (ship_mount_gone(e)) {
		ship_mount_lost(p->root);
		part_moved(sh, p);
		return;
	}
	if (!ship_part_here(sh, p))
		return;
	if (e == ENOENT) {
		/* Its segment deleted under the read (an rm of it, or an
		 * rm -r under way): sought again in a while, from the
		 * record it was at; a partition removed by then is found
		 * so. */
		p->open = false;
		sr_close(&p->sr);
		ship_later(sh, p, RETRY_MS);
		return;
	}
	if (!p->dead)
		shiplog("%s: %s; no longer shipped", p->path, strerror(e));
	p->dead = true;
	p->dead_at = mono_ms();
	p->open = false;
	sr_close(&p->sr);
	sh->rescan = true;	/* taken back after REVIVE_MS */
}

/* Record `off` of the partition, without its newline, read from the
 * mount: 1 (free *data), 0 if it is gone, -1 on an error. */
static int
record_read(struct ship_part *p, uint64_t off, char **data, size_t *len)
{
	struct segread r;
	struct stat st;
	uint64_t got, b, q, end;
	ssize_t n;
	int ret = -1;

	sr_init(&r, p->path, p->dfd);
	if (sr_seek(&r, off, &got) == -1)
		return errno == ENODATA ? 0 : -1;
	if (got != off) {
		ret = 0;
		goto out;
	}
	if (part_at(p->dfd, off + 1, &b, &q) == 0 && b == r.base)
		end = q;
	else if (fstat(r.fd, &st) == 0)
		end = (uint64_t)st.st_size;
	else
		goto out;
	if (end <= r.pos || end - r.pos > (64 << 20))
		goto out;
	*len = (size_t)(end - r.pos);
	if ((*data = malloc(*len)) == NULL)
		err(1, NULL);
	if ((n = sr_pread(&r, *data, *len)) != (ssize_t)*len) {
		free(*data);
		*data = NULL;	/* the caller frees it either way */
		goto out;
	}
	if (*len > 0 && (*data)[*len - 1] == '\n')
		(*len)--;
	ret = 1;
out:
	sr_close(&r);
	return ret;
}

static void lost_at_seek(struct shipper *, struct ship_part *, uint64_t);

/* ship_part_seek; after lost records skipped, the acknowledged prefix
 * stays before them (skipped). */
static void
part_seek(struct shipper *sh, struct ship_part *p, uint64_t want,
    bool warn, bool skipped)
{
	uint64_t got;

	p->open = false;
	p->lines_until = 0;
	if (sr_seek(&p->sr, want, &got) == -1) {
		if (errno == EIO) {
			/* Its look-up counts through a bad frame. */
			lost_at_seek(sh, p, want);
			return;
		}
		if ((errno == ENODATA || errno == EAGAIN) &&
		    ship_part_here(sh, p)) {
			/* Beyond the end (it was emptied), or changing
			 * under the seek: no segment to wait on, later. */
			p->caught_up = true;
			ship_later(sh, p, RETRY_MS);
			return;
		}
		part_drop(sh, p, errno);
		return;
	}
	if (got > want && warn)
		shiplog("%s: records %" PRIu64 "-%" PRIu64 " expired or were "
		    "deleted before they were shipped", p->path, want,
		    got - 1);
	pthread_mutex_lock(&sh->mu);
	p->next = got;
	if (p->first_seq == 0 && !skipped)
		p->acked = got;
	sh->changes++;
	pthread_mutex_unlock(&sh->mu);
	p->open = true;
	/* A new position: what was caught up is not any more (after a
	 * resync, `--once` would end with the records behind it). */
	p->caught_up = false;
	ship_todo(sh, p);
}

/* Opens the partition at offset `want`, or the first live record after
 * it (with a warning if `warn`: records that were never shipped). */
void
ship_part_seek(struct shipper *sh, struct ship_part *p, uint64_t want,
    bool warn)
{
	part_seek(sh, p, want, warn, false);
}

/*
 * Records from `first` on cannot be read (first at byte floor of the
 * open segment), or first cannot be looked up (floor 0): a compressed
 * frame that fails its checksum, or, on an uncompressed segment, the
 * disk. 0 if p goes on (it was open at first all along, only look-ups
 * fail: from there, or, with --skip-lost, from the first record after
 * them); -1 if it stops there or was dropped.
 */
static int
part_lost(struct shipper *sh, struct ship_part *p, uint64_t first,
    uint64_t floor)
{
	struct lost l;
	char what[128];
	bool say;

	if (lost_find(&p->sr, first, floor, buf, bufcap, &l) == -1) {
		part_drop(sh, p, errno);
		return -1;
	}
	if (l.next < first || (l.next == first && !l.here)) {
		/* Not in this segment after all: what failed says why. */
		part_drop(sh, p, EIO);
		return -1;
	}
	/* All before first is published: with nothing in flight, all
	 * acknowledged too. */
	pthread_mutex_lock(&sh->mu);
	p->next = first;
	if (p->first_seq == 0 && p->skipped == 0)
		p->acked = first;
	sh->changes++;
	pthread_mutex_unlock(&sh->mu);
	p->open = true;
	if (l.next == first) {
		/* It reads, only look-ups fail: lines from there. */
		p->sr.pos = l.pos;
		p->lines_until = l.sure;
		return 0;
	}
	lost_what(what, sizeof(what), first, l.next, p->sr.fd);
	/* Once a run: a resync or a mount come back brings p here again. */
	say = p->lost_said != first + 1;
	p->lost_said = first + 1;
	if (!sh->skip_lost) {
		if (say)
			shiplog("%s: segment %020" PRIu64 ": %s; not shipped "
			    "on: go on with --skip-lost (or set %s to %" PRIu64
			    ")", p->path, p->sr.base, what, sh->cursor_key,
			    l.next);
		sh->lost_stop = true;
		p->lost = p->dead = true;
		p->dead_at = mono_ms();
		p->open = false;
		sr_close(&p->sr);
		return -1;
	}
	if (say)
		shiplog("%s: segment %020" PRIu64 ": %s; going on from %"
		    PRIu64, p->path, p->sr.base, what, l.next);
	pthread_mutex_lock(&sh->mu);
	if (p->skipped == 0)
		p->skipped = first + 1;
	pthread_mutex_unlock(&sh->mu);
	if (!l.here) {
		/* The next segment's first record. */
		sr_close(&p->sr);
		part_seek(sh, p, l.next, true, true);
		return p->open ? 0 : -1;
	}
	pthread_mutex_lock(&sh->mu);
	p->next = l.next;
	pthread_mutex_unlock(&sh->mu);
	p->sr.pos = l.pos;
	p->lines_until = l.sure;
	return 0;
}

/*
 * Offset `want` cannot be looked up: it lies after the start of a bad
 * frame (its look-up counts newlines through it), in it or just after.
 * Its segment is the last that starts at or before it (lost.c).
 */
static void
lost_at_seek(struct shipper *sh, struct ship_part *p, uint64_t want)
{
	uint64_t base;

	if (lost_segment(p->dfd, want, &base) == -1 ||
	    sr_open(&p->sr, base) == -1) {
		part_drop(sh, p, EIO);
		return;
	}
	if (part_lost(sh, p, want, 0) == 0 && p->queued != Q_TODO) {
		p->caught_up = false;
		ship_todo(sh, p);
	}
}

/* Whether a read of n bytes at p->sr.pos stopped short of the
 * segment's end at a part the mount cannot read (a bad compressed
 * frame, read by whole pages), not at the end of what it holds: then
 * reading on fails. */
static bool
read_cut(struct ship_part *p, size_t n)
{
	struct stat st;
	char c;

	return fstat(p->sr.fd, &st) == 0 &&
	    p->sr.pos + n < (uint64_t)st.st_size &&
	    pread(p->sr.fd, &c, 1, (off_t)(p->sr.pos + n)) == -1 &&
	    errno == EIO;
}

/*
 * Where a partition starts: after the last of its records the stream
 * holds, or at its cursor, whichever is further; with neither, at its
 * oldest record. The stream's record counts only if it is this store's
 * record of this partition (same Nats-Msg-Id prefix, an offset below
 * the end, the same bytes if the record is still here): a store made
 * anew under the same name never inherits another's position.
 */
void
ship_part_start(struct shipper *sh, struct ship_part *p)
{
	char val[32], why[256], *end, *data = NULL, *mine = NULL;
	uint64_t cur = 0, last = 0, eoff, start;
	size_t len = 0, mlen = 0;
	bool has_cur = false, has_last = false;
	ssize_t n;
	int r;

	n = fgetxattr(p->dfd, sh->cursor_key, val, sizeof(val) - 1);
	if (n >= 0) {
		val[n] = '\0';
		errno = 0;
		cur = strtoull(val, &end, 10);
		has_cur = errno == 0 && end != val;
	} else if (errno == ENOTSUP) {
		if (!__atomic_exchange_n(&sh->no_cursors, true,
		    __ATOMIC_RELAXED))
			shiplog("%s: this tlogfs keeps no cursors (%s: not "
			    "supported): progress is not committed on it, "
			    "and a restart resumes from what the stream "
			    "holds", p->root, sh->cursor_key);
	} else if (errno != ENODATA) {
		part_drop(sh, p, errno);
		return;
	}
	r = nats_last(sh, p, &last, &data, &len, why, sizeof(why));
	if (r == -1) {
		/* The cluster cannot say now (no quorum, no leader, a lost
		 * connection): try again in a while, saying so once per
		 * 30 s for all partitions, or a --once run waits without
		 * a word. */
		if (sh->unsure_said == 0 ||
		    mono_ms() - sh->unsure_said >= 30000) {
			shiplog("stream %s: cannot say where %s stands: %s; "
			    "retrying every %d s", sh->stream, p->path, why,
			    SHIP_BACKOFF_MAX_MS / 1000);
			sh->unsure_said = mono_ms();
		}
		ship_later(sh, p, SHIP_BACKOFF_MAX_MS);
		return;
	}
	if (r == 1) {
		has_last = true;
		if (fd_stat(p->dfd, "end_offset", &eoff) == -1) {
			free(data);
			part_drop(sh, p, errno);
			return;
		}
		if (last >= eoff) {
			shiplog("%s: stream %s holds record %" PRIu64 " of %s,"
			    " but the partition ends at %" PRIu64 ": not this"
			    " partition's history; shipping from %s", p->path,
			    sh->stream, last, p->subject, eoff,
			    has_cur ? "the cursor" : "the start");
			has_last = false;
		} else if (record_read(p, last, &mine, &mlen) == 1 &&
		    (mlen != len || memcmp(mine, data, len) != 0)) {
			shiplog("%s: record %" PRIu64 " differs from the one "
			    "stream %s holds on %s: not this partition's "
			    "history; shipping from %s", p->path, last,
			    sh->stream, p->subject,
			    has_cur ? "the cursor" : "the start");
			has_last = false;
		}
		free(mine);
		free(data);
	}
	start = has_cur ? cur : 0;
	if (has_last && last + 1 > start)
		start = last + 1;
	/* The committer reads these (under mu). */
	pthread_mutex_lock(&sh->mu);
	p->committed = has_cur ? cur : UINT64_MAX;
	p->ready = true;
	pthread_mutex_unlock(&sh->mu);
	p->caught_up = false;
	ship_part_seek(sh, p, start, has_cur || has_last);
}

/* ---- records ---- */

void
ship_buf_need(size_t n)
{
	char *b;

	if (n <= bufcap)
		return;
	if ((b = realloc(buf, n)) == NULL)
		err(1, NULL);
	buf = b;
	bufcap = n;
}

static int
too_big(struct shipper *sh, struct ship_part *p, size_t len)
{
	pthread_mutex_lock(&sh->mu);
	ship_fatal(sh, "%s: record %" PRIu64 " is %zu bytes, more than a "
	    "NATS message takes here (max_payload %" PRId64 ", headers "
	    "included)", p->path, p->next, len, sh->max_payload);
	pthread_mutex_unlock(&sh->mu);
	return -1;
}

/* Whether the n lines read from the open position, ending at byte
 * endpos, are n records: the next record starts at endpos, or the
 * segment has no more. */
static bool
lines_are_records(struct ship_part *p, uint64_t n, uint64_t endpos)
{
	uint64_t b, q, recs;

	if (part_at(p->dfd, p->next + n, &b, &q) == 0 &&
	    b == p->sr.base && q == endpos)
		return true;
	return fd_stat(p->sr.fd, "records", &recs) == 0 &&
	    p->sr.base + recs == p->next + n;
}

/*
 * Of the nl lines read (chunk up to last), how many from the first are
 * one record each, when not all are (a record without newline: it and
 * the record after it make one line). k lines are k records exactly
 * when record p->next + k starts where line k - 1 ends: each line holds
 * at least one record, so they cannot hold more. The prefix is found by
 * bisection, a seek attribute per step, so one such record costs some twenty
 * look-ups and not two per record of its segment; pump_slow then takes
 * the records of the line it is in.
 */
static uint64_t
lines_records_prefix(struct ship_part *p, const char *chunk,
    const char *last, uint64_t nl)
{
	uint64_t lo = 0, hi = nl, mid, i, b, q;
	const char *s, *e = NULL;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		for (i = 0, s = chunk; i < mid; i++, s = e + 1)
			e = memchr(s, '\n', (size_t)(last - s) + 1);
		if (part_at(p->dfd, p->next + mid, &b, &q) == 0 &&
		    b == p->sr.base &&
		    q == p->sr.pos + (uint64_t)(e - chunk) + 1)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The end of record p->next in the open segment, from the seek
 * attribute of the record after it: 1, 0 if not known yet, -1. */
static int
record_end(struct ship_part *p, uint64_t *end)
{
	struct stat st;
	uint64_t b, q;
	bool sealed;

	if (part_at(p->dfd, p->next + 1, &b, &q) == -1)
		return errno == ENODATA ? 0 : -1;
	if (b == p->sr.base) {
		*end = q;
		return q > p->sr.pos;
	}
	/* The last record of its segment, which is sealed: the rest. */
	if (sr_sealed(&p->sr, &sealed) == -1)
		return -1;
	if (!sealed)
		return 0;
	if (fstat(p->sr.fd, &st) == -1)
		return -1;
	*end = (uint64_t)st.st_size;
	return *end > p->sr.pos;
}

/* Records one at a time (slow: two look-ups a record). */
static int
pump_slow(struct shipper *sh, struct ship_part *p, size_t room)
{
	uint64_t end;
	size_t len, plen, k;
	ssize_t n;
	int r;

	for (k = 0; k < room && k < 64; k++) {
		if ((r = record_end(p, &end)) == -1) {
			/* Its end cannot be looked up: lost, or just after
			 * lost records (if lost.c said so already, a line
			 * without newline there: dropped, not tried again
			 * and again). */
			if (errno == EIO && k > 0)
				break;
			if (errno == EIO && p->next >= p->lines_until)
				return part_lost(sh, p, p->next, p->sr.pos);
			part_drop(sh, p, errno);
			return -1;
		}
		if (r == 0) {
			/* Its end is not known yet: it shows with the
			 * next record or the seal. */
			if (k == 0)
				ship_later(sh, p, RETRY_MS);
			break;
		}
		len = (size_t)(end - p->sr.pos);
		ship_buf_need(len);
		if ((n = sr_pread(&p->sr, buf, len)) == -1 && errno != EIO) {
			part_drop(sh, p, errno);
			return -1;
		}
		if ((size_t)n != len) {
			if (k == 0 && (n == -1 || read_cut(p, (size_t)n)))
				return part_lost(sh, p, p->next, p->sr.pos);
			break;
		}
		plen = buf[len - 1] == '\n' ? len - 1 : len;
		if (!nats_fits(sh, p, p->next, plen))
			return too_big(sh, p, plen);
		if (!ship_part_here(sh, p))
			return -1;
		if (nats_publish(sh, p, p->next, buf, plen) == -1)
			return -1;
		p->sr.pos = end;
	}
	return (int)k;
}

/* At the end of what the open segment holds. */
static void
at_end(struct shipper *sh, struct ship_part *p)
{
	uint64_t recs;
	bool sealed, moved;
	char c;

	if (sr_sealed(&p->sr, &sealed) == -1) {
		part_drop(sh, p, errno);
		return;
	}
	if (sealed) {
		/* What went in just before the seal shows only now. */
		if (sr_pread(&p->sr, &c, 1) > 0)
			return;
		if (fd_stat(p->sr.fd, "records", &recs) == -1) {
			part_drop(sh, p, errno);
			return;
		}
		sr_close(&p->sr);
		ship_part_seek(sh, p, p->sr.base + recs, true);
		return;
	}
	if (sr_moved(&p->sr, &moved) == 0 && moved) {
		/* The empty `current` of a partition that had no active
		 * segment: one has started since. */
		ship_part_seek(sh, p, p->next, true);
		return;
	}
	if (!ship_part_here(sh, p))
		return;
	/* Lost records skipped at the end, nothing in flight: nothing
	 * after them to wait for, the prefix passes them. */
	pthread_mutex_lock(&sh->mu);
	if (p->skipped != 0 && p->first_seq == 0) {
		p->acked = p->next;
		p->skipped = 0;
		sh->changes++;
	}
	pthread_mutex_unlock(&sh->mu);
	p->caught_up = true;
	if (!sh->once)
		ship_arm(sh, p);
}

/*
 * Ships up to `room` records of the partition from where it stands: the
 * number published, or -1 (the partition was dropped, or a publish
 * failed).
 */
int
ship_pump(struct shipper *sh, struct ship_part *p, size_t room)
{
	uint64_t ts;
	size_t n, nl, k, len;
	ssize_t got;
	char *s, *e, *last;

	if ((got = sr_pread(&p->sr, buf, READ_CHUNK)) == -1) {
		if (errno == EIO)
			return part_lost(sh, p, p->next, p->sr.pos);
		part_drop(sh, p, errno);
		return -1;
	}
	if (got == 0) {
		at_end(sh, p);
		return 0;
	}
	n = (size_t)got;
	/* Tlog-Timestamp: the segment's newest record, read after the
	 * bytes, so no earlier than any of them (doc/shipping.md). */
	p->ts = fd_stat(p->sr.fd, "max_ts", &ts) == 0 ? (int64_t)ts :
	    real_ms();
	if ((last = memrchr(buf, '\n', n)) == NULL) {
		/* Cut inside its first record by a part that cannot be
		 * read: lost. (A read cut after whole lines ships them;
		 * the next one starts at the cut.) */
		if (n < READ_CHUNK && read_cut(p, n))
			return part_lost(sh, p, p->next, p->sr.pos);
		return pump_slow(sh, p, room);
	}
	for (nl = 0, s = buf; s <= last; s = e + 1, nl++)
		e = memchr(s, '\n', (size_t)(last - s) + 1);
	if (lines_are_records(p, nl, p->sr.pos + (uint64_t)(last - buf) + 1))
		;
	else if (p->next < p->lines_until)
		/* Just after lost records, where look-ups fail: lost.c
		 * counted these by their newlines. */
		nl = nl < p->lines_until - p->next ? nl :
		    p->lines_until - p->next;
	else if ((nl = lines_records_prefix(p, buf, last, nl)) == 0)
		return pump_slow(sh, p, room);
	if (!ship_part_here(sh, p))
		return -1;
	for (k = 0, s = buf; k < nl && k < room; k++, s = e + 1) {
		e = memchr(s, '\n', (size_t)(last - s) + 1);
		len = (size_t)(e - s);
		if (!nats_fits(sh, p, p->next, len))
			return too_big(sh, p, len);
		if (nats_publish(sh, p, p->next, s, len) == -1)
			return -1;
		p->sr.pos += len + 1;
	}
	/* A short read of whole records, all published: the end for now
	 * (a file grows by whole records). Following, p waits for the
	 * mount's wake-up, which a seal brings too, without a look at the
	 * seal or at `current`: at_end looks when a wake-up finds nothing
	 * to read. */
	if (!sh->once && n < READ_CHUNK && k == nl && last == buf + n - 1) {
		p->got = true;
		p->caught_up = true;
		ship_arm(sh, p);
	}
	return (int)k;
}
