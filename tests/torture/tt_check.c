/*
 * tt_check - checks what readers saw and what a partition holds against
 * what the torture writers (tt_writer) had acknowledged.
 *
 *   tt_check stream -a ACKDIR [-k] < READER_OUTPUT
 *   tt_check final -a ACKDIR -H HOMES [-m] [-n] [-x ERRS] [-E ENDS]
 *       ROOT DIR...
 *
 * ACKDIR holds the writers' ack files, ack.ID (tt_writer's format), read
 * as needed: a reader's output may name a writer that started after the
 * checker did.
 *
 * stream: the input is sections, each opened by a line
 * "--- strict LABEL" or "--- lenient LABEL" (the output of one cat of
 * all of a partition's files, or of one `tail -F`). Everywhere: no torn
 * line (every line is one writer's whole line, as tt_writer makes them).
 * In strict sections also: each epoch's lines (one open of one
 * partition) in strictly increasing order, so none twice. Such a cat
 * keeps that even when the directory is renamed while it reads: every
 * file it opens is a segment of some partition, and each partition's
 * segments come in order. Lenient sections check torn lines only (tail
 * -F following a name that partitions move in and out of may read one
 * file again from its start). -k: the reader was killed, so a last line
 * without newline is cut, not torn.
 *
 * final: DIR... (relative to ROOT, "TOPIC/PART") are all the partitions
 * there are. Their files are read in name order: "<20 digits>.log" (the
 * store, or a mount) and, with -m (a mount), "current" (its base offset
 * from user.tlog.base_offset); the record at line i of a segment has
 * offset base + i (a record without newline, which no tt_writer line
 * is, breaks that count; it shows as a torn line). HOMES says where each epoch's partition is now:
 * lines "ID EPOCH TOPIC/PART", or "-" for a partition that is gone. The
 * checks:
 *   torn       no line that is not a writer's whole line
 *   label      the TOPIC/PART a line carries is the name its epoch opened
 *   stray      no line whose write(2) failed or was never made (-x ERRS:
 *              errno names, comma-separated, whose failed line may be
 *              there: the write was in flight when the daemon died)
 *   duplicate  no line twice
 *   place      every line in its epoch's partition (HOMES)
 *   order      each epoch's lines in offset order
 *   segments   segments do not overlap; with -n none is missing either
 *              (contiguous from offset 0)
 *   loss       -n: every acknowledged line is there. Without -n (the
 *              test deleted data): every acknowledged line that is not
 *              there had an offset that is gone: between two lines of
 *              its epoch that are there, the offsets missing must be at
 *              least as many as the lines missing (before the first, the
 *              offsets below it; after the last, those up to the end
 *              offset: user.tlog.end_offset with -m, else the end of the
 *              last segment or .next; at least the one ENDS gives, lines
 *              "TOPIC/PART END" recorded before an unmount or kill)
 * Each failure prints a line "FAIL: ..." (the first few of each kind),
 * then a summary; exit 1 if anything failed.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXW	1024	/* writer ids */
#define SHOW	8	/* failures shown per kind */

struct epoch {
	int		 no;
	unsigned long	 first;		/* first seq of the epoch */
	long		 last;		/* last acked seq; first - 1: none */
	int		 ended;		/* an E record was read */
	char		 err[32];	/* what ended it */
	unsigned long long ino;
	char		 name[256];	/* the TOPIC/PART it opened */
	char		 home[256];	/* where that partition is now */
};

struct writer {
	int		 loaded;
	off_t		 ackpos;	/* bytes of the ack file read */
	char		 partial[512];	/* an incomplete last line */
	struct epoch	*ep;
	size_t		 nep, cap;
	/* final mode: per seq, where it was found */
	size_t		 nseen;
	int32_t		*dir;		/* -1: not seen */
	int64_t		*off;
	uint8_t		*count;
};

static struct writer writers[MAXW];
static const char *ackdir;
static int mountview, nodelete, killed;

enum kind { K_TORN, K_LABEL, K_STRAY, K_DUP, K_PLACE, K_ORDER, K_SEG,
	K_LOSS, K_N };
static const char *kindname[K_N] = { "torn", "label", "stray",
	"duplicate", "place", "order", "segments", "loss" };
static unsigned long fails[K_N];

static void
fail(enum kind k, const char *fmt, ...)
{
	va_list ap;

	if (fails[k]++ >= SHOW)
		return;
	printf("FAIL: %s: ", kindname[k]);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void
epoch_add(struct writer *w, const struct epoch *e)
{
	if (w->nep == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		w->ep = reallocarray(w->ep, w->cap, sizeof(*w->ep));
		if (w->ep == NULL) {
			perror("tt_check");
			exit(2);
		}
	}
	w->ep[w->nep++] = *e;
}

static void
ack_line(struct writer *w, const char *l)
{
	struct epoch e;
	unsigned long id;
	long last;
	int no;
	char err[32];

	memset(&e, 0, sizeof(e));
	if (sscanf(l, "S %lu %d %llu %255s %lu", &id, &e.no, &e.ino, e.name,
	    &e.first) == 5) {
		e.last = (long)e.first - 1;
		strlcpy(e.err, "running", sizeof(e.err));
		strlcpy(e.home, "?", sizeof(e.home));
		epoch_add(w, &e);
	} else if (sscanf(l, "E %lu %d %ld %31s", &id, &no, &last, err) == 4 &&
	    w->nep > 0 && w->ep[w->nep - 1].no == no) {
		w->ep[w->nep - 1].last = last;
		w->ep[w->nep - 1].ended = 1;
		strlcpy(w->ep[w->nep - 1].err, err, sizeof(err));
	}
}

/* Reads what is new in ACKDIR/ack.ID. */
static struct writer *
writer_load(unsigned long id)
{
	struct writer *w;
	char path[4096], buf[65536], *p, *nl;
	ssize_t n;
	int fd;

	if (id >= MAXW)
		return NULL;
	w = &writers[id];
	snprintf(path, sizeof(path), "%s/ack.%lu", ackdir, id);
	if ((fd = open(path, O_RDONLY)) == -1)
		return w->loaded ? w : NULL;
	w->loaded = 1;
	while ((n = pread(fd, buf, sizeof(buf) - 1, w->ackpos)) > 0) {
		buf[n] = '\0';
		w->ackpos += n;
		for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
			*nl = '\0';
			if (w->partial[0] != '\0') {
				char joined[1024];

				strlcpy(joined, w->partial, sizeof(joined));
				strlcat(joined, p, sizeof(joined));
				w->partial[0] = '\0';
				ack_line(w, joined);
			} else
				ack_line(w, p);
		}
		strlcat(w->partial, p, sizeof(w->partial));
	}
	close(fd);
	return w;
}

/* The epoch that wrote seq, loading more of the ack file if needed. */
static struct epoch *
epoch_of(unsigned long id, unsigned long seq)
{
	struct writer *w;
	size_t lo, hi, mid;
	int tries;

	for (tries = 0; tries < 2; tries++) {
		if (id >= MAXW)
			return NULL;
		w = &writers[id];
		if (tries > 0 || !w->loaded)
			if ((w = writer_load(id)) == NULL)
				return NULL;
		if (w->nep > 0 && seq >= w->ep[0].first) {
			lo = 0;
			hi = w->nep;
			while (hi - lo > 1) {
				mid = (lo + hi) / 2;
				if (w->ep[mid].first <= seq)
					lo = mid;
				else
					hi = mid;
			}
			/* The last epoch may have grown since. */
			if (lo + 1 < w->nep || tries > 0 ||
			    (long)seq <= w->ep[lo].last + 1)
				return &w->ep[lo];
		}
	}
	return NULL;
}

struct line {
	unsigned long id, seq;
	const char *name;	/* not terminated: namelen bytes */
	size_t namelen;
};

/* Parses one line (without its newline); 0 if it is a whole writer's
 * line, -1 if it is torn. */
static int
parse(const char *s, size_t len, struct line *l)
{
	const char *p = s, *end = s + len, *q;
	unsigned long plen = 0;
	size_t i;
	char c;

	if (p == end || *p++ != 'w')
		return -1;
	for (l->id = 0, q = p; p < end && *p >= '0' && *p <= '9'; p++)
		l->id = l->id * 10 + (unsigned long)(*p - '0');
	if (p == q || p == end || *p++ != ' ')
		return -1;
	for (l->seq = 0, q = p; p < end && *p >= '0' && *p <= '9'; p++)
		l->seq = l->seq * 10 + (unsigned long)(*p - '0');
	if (p == q || p == end || *p++ != ' ')
		return -1;
	for (l->name = p; p < end && *p != ' '; p++)
		;
	l->namelen = (size_t)(p - l->name);
	if (l->namelen == 0 || p == end || *p++ != ' ')
		return -1;
	for (q = p; p < end && *p >= '0' && *p <= '9'; p++)
		plen = plen * 10 + (unsigned long)(*p - '0');
	if (p == q || p == end || *p++ != ' ')
		return -1;
	if (plen != 1 + (l->seq * 7 + l->id * 13) % 100 ||
	    (size_t)(end - p) != plen)
		return -1;
	c = (char)('a' + l->seq % 26);
	for (i = 0; i < plen; i++)
		if (p[i] != c)
			return -1;
	return 0;
}

/* A printable excerpt of a line: its length, and its first bytes with
 * NUL as @ and other unprintable bytes as ?. */
static void
show(char *out, size_t outlen, const char *s, size_t len)
{
	size_t i, k, n;

	k = (size_t)snprintf(out, outlen, "[%zu bytes] ", len);
	n = len < outlen - 1 - k ? len : outlen - 1 - k;
	for (i = 0; i < n; i++)
		out[k + i] = s[i] == '\0' ? '@' :
		    s[i] >= 32 && s[i] < 127 ? s[i] : '?';
	out[k + n] = '\0';
}

/* ---- stream ---- */

struct seen {
	unsigned long id, seq;
	int no;		/* the epoch (pointers move as ack files grow) */
};

static int
run_stream(void)
{
	char *buf = NULL, label[256] = "(start)", ex[100], prev[100] = "";
	size_t cap = 0, lines = 0, sections = 0, n;
	ssize_t len;
	struct line l;
	struct epoch *ep;
	/* the last seq seen per epoch, for this section */
	struct seen *last = NULL;
	size_t nlast = 0, caplast = 0, i;
	int strict = 1;

	while ((len = getline(&buf, &cap, stdin)) != -1) {
		if (len >= 4 && strncmp(buf, "--- ", 4) == 0) {
			buf[len - 1] = '\0';
			strict = strncmp(buf + 4, "strict", 6) == 0;
			strlcpy(label, buf + 4, sizeof(label));
			nlast = 0;
			sections++;
			continue;
		}
		lines++;
		n = (size_t)len;
		if (killed && buf[n - 1] != '\n')
			break;		/* the last line, cut by the kill */
		if (n == 0 || buf[n - 1] != '\n' || parse(buf, n - 1, &l) != 0) {
			show(ex, sizeof(ex), buf, n);
			fail(K_TORN, "%s: \"%s\" after \"%s\"", label, ex,
			    prev);
			continue;
		}
		show(prev, sizeof(prev), buf, n - 1);
		if (!strict)
			continue;
		if ((ep = epoch_of(l.id, l.seq)) == NULL) {
			show(ex, sizeof(ex), buf, n - 1);
			fail(K_STRAY, "%s: no writer wrote \"%.40s\"", label,
			    ex);
			continue;
		}
		for (i = 0; i < nlast && (last[i].id != l.id ||
		    last[i].no != ep->no); i++)
			;
		if (i < nlast) {
			if (l.seq <= last[i].seq)
				fail(l.seq == last[i].seq ? K_DUP : K_ORDER,
				    "%s: w%lu %lu after %lu (epoch %d)", label,
				    l.id, l.seq, last[i].seq, ep->no);
			last[i].seq = l.seq;
			continue;
		}
		if (nlast == caplast) {
			caplast = caplast ? caplast * 2 : 64;
			last = reallocarray(last, caplast, sizeof(*last));
			if (last == NULL)
				return 2;
		}
		last[nlast++] = (struct seen){ l.id, l.seq, ep->no };
	}
	free(buf);
	free(last);
	printf("stream: %zu sections, %zu lines", sections, lines);
	for (i = 0; i < K_N; i++)
		if (fails[i])
			printf(", %s %lu", kindname[i], fails[i]);
	printf("\n");
	for (i = 0; i < K_N; i++)
		if (fails[i])
			return 1;
	return 0;
}

/* ---- final ---- */

struct pdir {
	const char *path;	/* TOPIC/PART */
	int64_t	 end;		/* end offset */
	uint8_t	*present;	/* per offset below end */
	size_t	 cap;
};

static struct pdir *dirs;
static size_t ndirs;
static const char *endsfile;
static char allow[256] = "";

static void
mark(struct pdir *d, int64_t off)
{
	size_t nc;

	if ((size_t)off >= d->cap) {
		nc = d->cap ? d->cap : 1024;
		while (nc <= (size_t)off)
			nc *= 2;
		if ((d->present = realloc(d->present, nc)) == NULL) {
			perror("tt_check");
			exit(2);
		}
		memset(d->present + d->cap, 0, nc - d->cap);
		d->cap = nc;
	}
	d->present[off] = 1;
}

static int
seen_grow(struct writer *w, unsigned long seq)
{
	size_t nc = w->nseen ? w->nseen : 1024, i;

	if (seq < w->nseen)
		return 0;
	while (nc <= seq)
		nc *= 2;
	w->dir = reallocarray(w->dir, nc, sizeof(*w->dir));
	w->off = reallocarray(w->off, nc, sizeof(*w->off));
	w->count = realloc(w->count, nc);
	if (w->dir == NULL || w->off == NULL || w->count == NULL)
		return -1;
	for (i = w->nseen; i < nc; i++) {
		w->dir[i] = -1;
		w->off[i] = -1;
		w->count[i] = 0;
	}
	w->nseen = nc;
	return 0;
}

static int
is_segname(const char *n)
{
	size_t i;

	for (i = 0; i < 20; i++)
		if (n[i] < '0' || n[i] > '9')
			return 0;
	return strcmp(n + 20, ".log") == 0;
}

static int
namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks one line found at offset off of directory di. */
static void
final_line(size_t di, const char *file, int64_t off, const char *s,
    size_t len)
{
	struct line l;
	struct epoch *ep;
	struct writer *w;
	char ex[100];
	char key[40];
	int allowed;

	if (parse(s, len, &l) != 0) {
		show(ex, sizeof(ex), s, len);
		fail(K_TORN, "%s/%s offset %lld: \"%s\"", dirs[di].path, file,
		    (long long)off, ex);
		return;
	}
	if ((ep = epoch_of(l.id, l.seq)) == NULL) {
		fail(K_STRAY, "%s/%s offset %lld: w%lu %lu: no writer wrote "
		    "it", dirs[di].path, file, (long long)off, l.id, l.seq);
		return;
	}
	if (l.namelen != strlen(ep->name) ||
	    memcmp(l.name, ep->name, l.namelen) != 0)
		fail(K_LABEL, "%s/%s offset %lld: w%lu %lu says %.*s, its "
		    "epoch %d opened %s", dirs[di].path, file, (long long)off,
		    l.id, l.seq, (int)l.namelen, l.name, ep->no, ep->name);
	if (ep->ended && (long)l.seq > ep->last) {
		snprintf(key, sizeof(key), ",%s,", ep->err);
		allowed = (long)l.seq == ep->last + 1 &&
		    strstr(allow, key) != NULL;
		if (!allowed)
			fail(K_STRAY, "%s/%s offset %lld: w%lu %lu is there "
			    "but its write(2) %s%s (epoch %d opened %s as "
			    "inode %llu)", dirs[di].path, file,
			    (long long)off, l.id, l.seq,
			    (long)l.seq == ep->last + 1 ? "failed with " :
			    "was never made", (long)l.seq == ep->last + 1 ?
			    ep->err : "", ep->no, ep->name, ep->ino);
	}
	if (strcmp(ep->home, dirs[di].path) != 0)
		fail(K_PLACE, "%s/%s offset %lld: w%lu %lu was written to the "
		    "partition opened as %s (epoch %d, inode %llu), which is "
		    "%s%s", dirs[di].path, file, (long long)off, l.id, l.seq,
		    ep->name, ep->no, ep->ino,
		    strcmp(ep->home, "-") == 0 ? "gone" : "now ",
		    strcmp(ep->home, "-") == 0 ? "" : ep->home);
	w = &writers[l.id];
	if (seen_grow(w, l.seq) != 0) {
		perror("tt_check");
		exit(2);
	}
	if (w->count[l.seq]++ > 0) {
		fail(K_DUP, "%s/%s offset %lld: w%lu %lu, also at %s offset "
		    "%lld", dirs[di].path, file, (long long)off, l.id, l.seq,
		    dirs[w->dir[l.seq]].path, (long long)w->off[l.seq]);
		return;
	}
	w->dir[l.seq] = (int32_t)di;
	w->off[l.seq] = off;
}

static int64_t
getxattr_num(const char *path, const char *name)
{
	char v[64];
	ssize_t n;

	if ((n = getxattr(path, name, v, sizeof(v) - 1)) <= 0)
		return -1;
	v[n] = '\0';
	return strtoll(v, NULL, 10);
}

static void
final_dir(const char *root, size_t di)
{
	struct pdir *d = &dirs[di];
	char path[4096], fpath[4400], **names = NULL, *buf = NULL, *p, *nl;
	size_t nnames = 0, cap = 0, i, bufcap = 0, have;
	int64_t base, off, prev_end = -1, v;
	struct dirent *de;
	ssize_t r;
	DIR *dd;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, d->path);
	if ((dd = opendir(path)) == NULL) {
		printf("FAIL: cannot open %s: %s\n", path, strerror(errno));
		fails[K_SEG]++;
		return;
	}
	while ((de = readdir(dd)) != NULL) {
		if (!is_segname(de->d_name) &&
		    !(mountview && strcmp(de->d_name, "current") == 0))
			continue;
		if (nnames == cap) {
			cap = cap ? cap * 2 : 64;
			names = reallocarray(names, cap, sizeof(*names));
		}
		names[nnames++] = strdup(de->d_name);
	}
	closedir(dd);
	if (nnames > 0)
		qsort(names, nnames, sizeof(*names), namecmp);
	d->end = 0;
	for (i = 0; i < nnames; i++) {
		snprintf(fpath, sizeof(fpath), "%s/%s", path, names[i]);
		if (strcmp(names[i], "current") == 0) {
			base = getxattr_num(fpath, "user.tlog.base_offset");
			if (base < 0)
				continue;	/* no active segment */
		} else
			base = strtoll(names[i], NULL, 10);
		if ((fd = open(fpath, O_RDONLY)) == -1) {
			printf("FAIL: cannot open %s: %s\n", fpath,
			    strerror(errno));
			fails[K_SEG]++;
			continue;
		}
		have = 0;
		while (1) {
			if (bufcap - have < 65536) {
				bufcap = bufcap ? bufcap * 2 : 1 << 20;
				buf = realloc(buf, bufcap);
			}
			r = read(fd, buf + have, bufcap - have);
			if (r <= 0)
				break;
			have += (size_t)r;
		}
		close(fd);
		if (base < prev_end)
			fail(K_SEG, "%s: %s starts at %lld, inside the segment "
			    "before it (which ends at %lld)", d->path,
			    names[i], (long long)base, (long long)prev_end);
		else if (nodelete && base != (prev_end < 0 ? 0 : prev_end))
			fail(K_SEG, "%s: %s starts at %lld, but the data before "
			    "it ends at %lld: records are missing", d->path,
			    names[i], (long long)base,
			    (long long)(prev_end < 0 ? 0 : prev_end));
		off = base;
		for (p = buf; p < buf + have; p = nl + 1, off++) {
			nl = memchr(p, '\n', (size_t)(buf + have - p));
			if (nl == NULL)
				nl = buf + have;	/* a record without \n */
			final_line(di, names[i], off, p, (size_t)(nl - p));
			mark(d, off);
		}
		prev_end = off;
		if (off > d->end)
			d->end = off;
	}
	if (mountview) {
		if ((v = getxattr_num(path, "user.tlog.end_offset")) >= 0) {
			if (v < d->end)
				fail(K_SEG, "%s: user.tlog.end_offset %lld, but "
				    "records go up to %lld", d->path,
				    (long long)v, (long long)d->end);
			else
				d->end = v;
		}
	} else {
		snprintf(fpath, sizeof(fpath), "%s/.next", path);
		if ((fd = open(fpath, O_RDONLY)) != -1) {
			char nb[32];

			if ((r = read(fd, nb, sizeof(nb) - 1)) > 0) {
				nb[r] = '\0';
				if ((v = strtoll(nb, NULL, 10)) > d->end)
					d->end = v;
			}
			close(fd);
		}
	}
	if (endsfile != NULL) {
		FILE *f = fopen(endsfile, "r");
		char ln[600], nm[512];
		long long e;

		while (f != NULL && fgets(ln, sizeof(ln), f) != NULL)
			if (sscanf(ln, "%511s %lld", nm, &e) == 2 &&
			    strcmp(nm, d->path) == 0 && e > d->end)
				d->end = e;
		if (f != NULL)
			fclose(f);
	}
	if (nodelete && d->end > 0 && prev_end < d->end)
		fail(K_SEG, "%s: the end offset is %lld, but the records "
		    "there end at %lld", d->path, (long long)d->end,
		    (long long)(prev_end < 0 ? 0 : prev_end));
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	free(buf);
}

static size_t
dir_index(const char *path)
{
	size_t i;

	for (i = 0; i < ndirs; i++)
		if (strcmp(dirs[i].path, path) == 0)
			return i;
	return SIZE_MAX;
}

/* Offsets missing in [lo, hi) of d. */
static int64_t
absent(const struct pdir *d, int64_t lo, int64_t hi)
{
	int64_t n = 0, o;

	for (o = lo; o < hi; o++)
		if ((size_t)o >= d->cap || !d->present[o])
			n++;
	return n;
}

/* Accounts for every acknowledged line of one epoch. */
static void
final_loss(unsigned long id, struct epoch *ep)
{
	struct writer *w = &writers[id];
	struct pdir *d;
	size_t di;
	long s, run0 = -1;
	int64_t prev_off = -1, gap;

	if (!ep->ended || ep->last < (long)ep->first)
		return;		/* killed mid-epoch, or nothing acked */
	if (strcmp(ep->home, "-") == 0) {
		if (nodelete)
			fail(K_LOSS, "w%lu %lu-%ld (epoch %d, opened as %s, "
			    "inode %llu): acknowledged, but the partition is "
			    "gone", id, ep->first, ep->last, ep->no, ep->name,
			    ep->ino);
		return;
	}
	if ((di = dir_index(ep->home)) == SIZE_MAX) {
		fail(K_LOSS, "w%lu epoch %d: its partition %s was not checked",
		    id, ep->no, ep->home);
		return;
	}
	d = &dirs[di];
	for (s = (long)ep->first; s <= ep->last + 1; s++) {
		int here = s <= ep->last && (size_t)s < w->nseen &&
		    w->count[s] > 0 && w->dir[s] == (int32_t)di;

		if (s <= ep->last && !here) {
			if (run0 < 0)
				run0 = s;
			continue;
		}
		if (run0 >= 0) {
			int64_t hi = s <= ep->last ? w->off[s] : d->end;

			gap = absent(d, prev_off + 1, hi);
			if (nodelete || gap < (int64_t)(s - run0))
				fail(K_LOSS, "%s: w%lu %ld-%ld (epoch %d, "
				    "opened as %s) acknowledged but not "
				    "there; %lld offsets are missing in "
				    "[%lld, %lld)%s", ep->home, id, run0, s - 1,
				    ep->no, ep->name, (long long)gap,
				    (long long)(prev_off + 1), (long long)hi,
				    s > ep->last ? " (up to the end offset)" :
				    "");
			run0 = -1;
		}
		if (s <= ep->last)
			prev_off = w->off[s];
	}
}

static void
final_order(void)
{
	unsigned long id;
	size_t k;
	long s, hi, prevs;

	/* Within a partition, an epoch's lines have increasing offsets. */
	for (id = 0; id < MAXW; id++) {
		struct writer *w = &writers[id];

		for (k = 0; k < w->nep; k++) {
			hi = (long)(k + 1 < w->nep ? w->ep[k + 1].first :
			    w->nseen) - 1;
			prevs = -1;
			for (s = (long)w->ep[k].first; s <= hi &&
			    (size_t)s < w->nseen; s++) {
				if (w->count[s] == 0)
					continue;
				if (prevs >= 0 && w->dir[s] == w->dir[prevs] &&
				    w->off[s] < w->off[prevs])
					fail(K_ORDER, "%s: w%lu %ld at offset "
					    "%lld, before %ld at %lld",
					    dirs[w->dir[s]].path, id, s,
					    (long long)w->off[s], prevs,
					    (long long)w->off[prevs]);
				prevs = s;
			}
		}
	}
}

static int
run_final(int argc, char *argv[], const char *homes)
{
	char l[1024], hpath[256];
	unsigned long id, lines = 0, acked = 0;
	int no, i, r = 0;
	size_t k;
	FILE *f;
	struct dirent *de;
	DIR *ad;

	/* Every writer's ack file. */
	if ((ad = opendir(ackdir)) == NULL) {
		perror(ackdir);
		return 2;
	}
	while ((de = readdir(ad)) != NULL)
		if (sscanf(de->d_name, "ack.%lu", &id) == 1)
			writer_load(id);
	closedir(ad);
	if ((f = fopen(homes, "r")) == NULL) {
		perror(homes);
		return 2;
	}
	while (fgets(l, sizeof(l), f) != NULL)
		if (sscanf(l, "%lu %d %255s", &id, &no, hpath) == 3 &&
		    id < MAXW)
			for (k = 0; k < writers[id].nep; k++)
				if (writers[id].ep[k].no == no)
					strlcpy(writers[id].ep[k].home, hpath,
					    sizeof(hpath));
	fclose(f);
	ndirs = (size_t)(argc - 1);
	dirs = calloc(ndirs + 1, sizeof(*dirs));
	for (i = 1; i < argc; i++)
		dirs[i - 1].path = argv[i];
	for (k = 0; k < ndirs; k++)
		final_dir(argv[0], k);
	final_order();
	for (id = 0; id < MAXW; id++)
		for (k = 0; k < writers[id].nep; k++) {
			struct epoch *ep = &writers[id].ep[k];

			if (ep->ended && ep->last >= (long)ep->first)
				acked += (unsigned long)(ep->last -
				    (long)ep->first + 1);
			final_loss(id, ep);
		}
	for (id = 0; id < MAXW; id++)
		for (k = 0; k < writers[id].nseen; k++)
			lines += writers[id].count[k];
	printf("final: %zu partitions, %lu lines, %lu acknowledged",
	    ndirs, lines, acked);
	for (i = 0; i < K_N; i++)
		if (fails[i]) {
			printf(", %s %lu", kindname[i], fails[i]);
			r = 1;
		}
	printf("\n");
	return r;
}

int
main(int argc, char *argv[])
{
	const char *homes = NULL, *mode;
	int c;

	if (argc < 2) {
		fprintf(stderr, "usage: tt_check stream|final ...\n");
		return 2;
	}
	mode = argv[1];
	argc--;
	argv++;
	while ((c = getopt(argc, argv, "a:E:H:kmnx:")) != -1) {
		switch (c) {
		case 'a':
			ackdir = optarg;
			break;
		case 'E':
			endsfile = optarg;
			break;
		case 'H':
			homes = optarg;
			break;
		case 'k':
			killed = 1;
			break;
		case 'm':
			mountview = 1;
			break;
		case 'n':
			nodelete = 1;
			break;
		case 'x':
			snprintf(allow, sizeof(allow), ",%s,", optarg);
			break;
		default:
			return 2;
		}
	}
	if (ackdir == NULL)
		return 2;
	if (strcmp(mode, "stream") == 0)
		return run_stream();
	if (strcmp(mode, "final") == 0 && homes != NULL && argc - optind >= 1)
		return run_final(argc - optind, argv + optind, homes);
	fprintf(stderr, "usage: tt_check stream -a ACKDIR [-k] < OUTPUT\n"
	    "       tt_check final -a ACKDIR -H HOMES [-m] [-n] [-x ERRS] "
	    "[-E ENDS] ROOT DIR...\n");
	return 2;
}
