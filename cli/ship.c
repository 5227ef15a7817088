/*
 * ship.c - tlogctl ship --nats URL[,URL...] [--stream NAME] [--replicas
 * N] [--subject-prefix P] [--cursor NAME] [--once] PATH...: copies the
 * partitions under each PATH into a NATS JetStream stream, one message
 * per record, each partition in offset order, exactly once
 * (doc/shipping.md says what is shipped, what is guaranteed and what
 * each failure does).
 *
 * This file finds the partitions, reads their records through the mount
 * (segread.c, doc/seek.md), runs the loop that publishes them and
 * commits each partition's cursor for the prefix JetStream has
 * acknowledged; ship_nats.c is the JetStream side.
 *
 * Records are cut at newlines. A record without newline (held bytes
 * flushed at close, or a line cut at record.max.bytes) cannot be told
 * from the bytes alone, so every run of lines is checked against the
 * mount's index: user.tlog.at.OFFSET of the record after the run must
 * be where the run ends. If it is not, the records of that read are
 * taken one by one, each one's end from the seek attribute of the next.
 *
 * Threads: this one (discovery, reading, publishing, resyncs), a
 * committer (setxattr of the cursors, which waits for the disk) and
 * libnats's own (acknowledgments, reconnection).
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ship.h"

#define READ_CHUNK (1 << 20)	/* bytes read from a segment at a time */
#define PUMP_MAX (SHIP_WINDOW / 4) /* records of one partition per turn */
#define FOLLOW_MS 100		/* an idle partition is looked at again... */
#define IDLE_MAX_MS 1000	/* ...less often the longer it stays idle */
#define DISCOVER_MS 1000	/* new partitions are looked for */
#define COMMIT_MS 500		/* cursors are committed */
#define REVIVE_MS 30000		/* a partition dropped on an error is retried */

enum kind { K_ROOT, K_TOPIC, K_PART };

struct spec {			/* a PATH argument */
	char *path;		/* canonical */
	enum kind kind;
	char *root;		/* its mount root */
	char *store;		/* the store's identity */
	bool made_id;		/* made up: the mount has none */
};

static volatile sig_atomic_t stop;
static struct spec *specs;
static int nspecs;
static char *buf;		/* what a read got */
static size_t bufcap;

int
part_cmp(struct ship_part *a, struct ship_part *b)
{
	return strcmp(a->path, b->path);
}
RB_GENERATE(part_tree, ship_part, link, part_cmp)

void
shiplog(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s: ship: ", getprogname());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	/* One write: lines of several threads never mix. */
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

void
ship_failing(struct shipper *sh, const char *fmt, ...)
{
	va_list ap;

	if (!sh->failing) {
		va_start(ap, fmt);
		vsnprintf(sh->why, sizeof(sh->why), fmt, ap);
		va_end(ap);
	}
	sh->failing = true;
}

void
flight_done(struct shipper *sh, struct flight *f, int state)
{
	struct ship_part *p = f->p;
	struct flight *g;

	f->state = state;
	sh->inflight--;
	sh->inflight_bytes -= f->bytes;
	sh->last_answer = mono_ms();
	p->inflight--;
	if (state == FL_FAILED)
		p->failed = true;
	else
		sh->acks++;
	/* The partition's acknowledged prefix. */
	while (p->first_seq != 0) {
		g = &sh->ring[p->first_seq % SHIP_WINDOW];
		if (g->state != FL_ACKED)
			break;
		p->first_seq = g->next_same;
	}
	if (p->first_seq == 0) {
		p->last_seq = 0;
		p->acked = p->next;
	} else
		p->acked = sh->ring[p->first_seq % SHIP_WINDOW].off;
	/* Answered flights at the head leave the ring; a failed one
	 * stays until the resync, which clears them all. */
	while (sh->head < sh->tail &&
	    sh->ring[sh->head % SHIP_WINDOW].state == FL_ACKED)
		sh->head++;
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Waits on sh->cv (mu held) for ms at most. */
static void
wait_ms(struct shipper *sh, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
}

/* Sleeps ms at most, less if stopped. */
static void
nap(struct shipper *sh, int ms)
{
	int64_t end = mono_ms() + ms;

	pthread_mutex_lock(&sh->mu);
	while (!stop && mono_ms() < end)
		wait_ms(sh, 100);
	pthread_mutex_unlock(&sh->mu);
}

/* ---- the command line ---- */

/* NATS subject tokens: non-empty, of [A-Za-z0-9_-]. */
static bool
tokens_ok(const char *s)
{
	const char *t;
	size_t n;

	for (t = s;; t += n + 1) {
		n = strcspn(t, ".");
		if (n == 0 || strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789_-") < n)
			return false;
		if (t[n] == '\0')
			return true;
	}
}

/* [nats://|tls://][user[:pass]@]host[:port] */
static bool
url_ok(const char *u)
{
	const char *s = u, *p, *at;
	char *end;
	long port;

	if ((p = strstr(s, "://")) != NULL) {
		if (!((p - s == 4 && strncasecmp(s, "nats", 4) == 0) ||
		    (p - s == 3 && strncasecmp(s, "tls", 3) == 0)))
			return false;
		s = p + 3;
	}
	if ((at = strrchr(s, '@')) != NULL)
		s = at + 1;
	if (*s == '[') {
		if ((p = strchr(s, ']')) == NULL || p == s + 1)
			return false;
		p++;
	} else {
		p = s + strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789.-_");
		if (p == s)
			return false;
	}
	if (*p == '\0')
		return true;
	if (*p != ':' || !isdigit((unsigned char)p[1]))
		return false;
	errno = 0;
	port = strtol(p + 1, &end, 10);
	return errno == 0 && *end == '\0' && port >= 1 && port <= 65535;
}

static void
parse_urls(struct shipper *sh, const char *arg)
{
	char *copy, *s, *tok;

	if ((copy = strdup(arg)) == NULL)
		err(1, NULL);
	for (s = copy; (tok = strsep(&s, ",")) != NULL;) {
		if (!url_ok(tok)) {
			usage("ship", "--nats %s: not a NATS URL "
			    "([nats://]HOST[:PORT], comma-separated)",
			    *tok != '\0' ? tok : arg);
		}
		sh->urls = reallocarray(sh->urls, (size_t)sh->nurls + 1,
		    sizeof(char *));
		if (sh->urls == NULL || (sh->urls[sh->nurls++] =
		    strdup(tok)) == NULL)
			err(1, NULL);
	}
	free(copy);
}

/* The default stream: the prefix in capitals, dots as underscores. */
static char *
default_stream(const char *prefix)
{
	char *s, *c;

	if ((s = strdup(prefix)) == NULL)
		err(1, NULL);
	for (c = s; *c != '\0'; c++)
		*c = *c == '.' ? '_' : (char)toupper((unsigned char)*c);
	return s;
}

/* ---- the mount ---- */

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *
join(const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s/%s", a, b) == -1)
		err(1, NULL);
	return s;
}

/* The store's identity: the mount's user.tlog.store_id, or, on a mount
 * without it, one made of this machine's id and the mount point
 * (doc/shipping.md says what that costs). */
static char *
store_id(const char *root, bool *made)
{
	char val[128], mid[128] = "", *id;
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *c;
	ssize_t n;
	FILE *f;

	n = getxattr(root, "user.tlog.store_id", val, sizeof(val) - 1);
	if (n > 0) {
		val[n] = '\0';
		val[strcspn(val, "\n")] = '\0';
		if (val[0] != '\0' && strchr(val, '/') == NULL &&
		    (id = strdup(val)) != NULL)
			return id;
	}
	if ((f = fopen("/etc/machine-id", "r")) != NULL) {
		if (fgets(mid, sizeof(mid), f) == NULL)
			mid[0] = '\0';
		fclose(f);
	}
	if (mid[0] == '\0')
		gethostname(mid, sizeof(mid) - 1);
	mid[strcspn(mid, "\n")] = '\0';
	/* FNV-1a over "machine-id\nmount point". */
	for (c = mid; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	h = (h ^ '\n') * 0x100000001b3ULL;
	for (c = root; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	if (asprintf(&id, "h-%016" PRIx64, h) == -1)
		err(1, NULL);
	*made = true;
	return id;
}

/* Whether path is a tlogfs mount root: its .tlogfs/, and a setting
 * every level answers (the backing store has the one, not the other). */
static bool
is_root(const char *path)
{
	char *meta = join(path, ".tlogfs");
	bool r;

	r = is_dir(meta) && getxattr(path, "user.retention.ms", NULL, 0) > 0;
	free(meta);
	return r;
}

static void
classify(struct spec *sp, const char *arg)
{
	char *path, *up;
	uint64_t v;

	if ((path = realpath(arg, NULL)) == NULL)
		err(1, "ship: %s", arg);
	sp->path = path;
	if (!is_dir(path))
		errx(1, "ship: %s: not a tlogfs mount, topic or partition",
		    arg);
	if (part_stat(path, "start_offset", &v) == 0) {
		sp->kind = K_PART;
		up = join(path, "../..");
	} else if (is_root(path)) {
		sp->kind = K_ROOT;
		up = strdup(path);
	} else {
		sp->kind = K_TOPIC;
		up = join(path, "..");
	}
	if (up == NULL || (sp->root = realpath(up, NULL)) == NULL)
		err(1, "ship: %s", arg);
	free(up);
	if (!is_root(sp->root))
		errx(1, "ship: %s: not a tlogfs mount, topic or partition",
		    arg);
}

/* ---- partitions ---- */

static struct ship_part *
part_find(struct shipper *sh, const char *path)
{
	struct ship_part key;

	key.path = (char *)path;
	return RB_FIND(part_tree, &sh->parts, &key);
}

static void
part_drop(struct ship_part *p, const char *what)
{
	if (!p->dead)
		shiplog("%s: %s; no longer shipped", p->path, what);
	p->dead = true;
	p->dead_at = mono_ms();
	p->open = false;
	sr_close(&p->sr);
}

static void
part_add(struct shipper *sh, struct spec *sp, const char *path,
    const char *topic, const char *name)
{
	struct ship_part *p;

	if ((p = part_find(sh, path)) != NULL) {
		if (p->dead && p->inflight == 0 && !p->unshippable &&
		    mono_ms() - p->dead_at >= REVIVE_MS) {
			/* Back (re-created, or the error passed): from
			 * the start again, as at a start. */
			p->dead = false;
			p->ready = false;
			p->failed = false;
			p->look_at = 0;
		}
		return;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->path = strdup(path)) == NULL ||
	    (p->root = strdup(sp->root)) == NULL ||
	    (p->topic = strdup(topic)) == NULL ||
	    (p->name = strdup(name)) == NULL ||
	    asprintf(&p->subject, "%s.%s.%s", sh->prefix, topic, name) ==
	    -1 ||
	    asprintf(&p->idpfx, "%s/%s/%s/", sp->store, topic, name) == -1)
		err(1, NULL);
	if (sr_init(&p->sr, p->path) == -1)
		err(1, "ship: %s", p->path);
	p->committed = UINT64_MAX;
	p->idle_ms = FOLLOW_MS;
	if (!tokens_ok(p->subject)) {
		shiplog("%s: the names make no NATS subject (%s: a name ends "
		    "in a dot or holds two in a row); not shipped", path,
		    p->subject);
		p->dead = p->unshippable = true;
	} else if (!nats_covers(sh, p->subject)) {
		shiplog("%s: stream %s does not take subject %s; not "
		    "shipped", path, sh->stream, p->subject);
		p->dead = p->unshippable = true;
	}
	pthread_mutex_lock(&sh->mu);
	RB_INSERT(part_tree, &sh->parts, p);
	sh->nparts++;
	pthread_mutex_unlock(&sh->mu);
}

/* The partitions of a topic directory. */
static void
scan_topic(struct shipper *sh, struct spec *sp, const char *dir,
    const char *topic)
{
	struct dirent *de;
	char *path;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;		/* gone meanwhile */
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		path = join(dir, de->d_name);
		if (de->d_type == DT_DIR ||
		    (de->d_type == DT_UNKNOWN && is_dir(path)))
			part_add(sh, sp, path, topic, de->d_name);
		free(path);
	}
	closedir(d);
}

static void
discover(struct shipper *sh)
{
	struct dirent *de;
	struct spec *sp;
	char *path;
	DIR *d;
	int i;

	for (i = 0; i < nspecs; i++) {
		sp = &specs[i];
		switch (sp->kind) {
		case K_PART:
			/* .../TOPIC/PARTITION, canonical */
			if ((path = strdup(sp->path)) == NULL)
				err(1, NULL);
			*strrchr(path, '/') = '\0';
			part_add(sh, sp, sp->path, strrchr(path, '/') + 1,
			    strrchr(sp->path, '/') + 1);
			free(path);
			break;
		case K_TOPIC:
			scan_topic(sh, sp, sp->path,
			    strrchr(sp->path, '/') + 1);
			break;
		case K_ROOT:
			if ((d = opendir(sp->path)) == NULL) {
				shiplog("%s: %s", sp->path, strerror(errno));
				break;
			}
			while ((de = readdir(d)) != NULL) {
				if (de->d_name[0] == '.')
					continue;
				path = join(sp->path, de->d_name);
				scan_topic(sh, sp, path, de->d_name);
				free(path);
			}
			closedir(d);
			break;
		}
	}
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

	if (sr_init(&r, p->path) == -1 || sr_seek(&r, off, &got) == -1)
		return errno == ENODATA ? 0 : -1;
	if (got != off) {
		ret = 0;
		goto out;
	}
	if (part_at(p->path, off + 1, &b, &q) == 0 && b == r.base)
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
		goto out;
	}
	if (*len > 0 && (*data)[*len - 1] == '\n')
		(*len)--;
	ret = 1;
out:
	sr_close(&r);
	return ret;
}

/* Opens the partition at offset `want`, or the first live record after
 * it (with a warning if `warn`: records that were never shipped). */
static void
part_seek(struct shipper *sh, struct ship_part *p, uint64_t want, bool warn)
{
	uint64_t got;

	p->open = false;
	if (sr_seek(&p->sr, want, &got) == -1) {
		if (errno == ENODATA || errno == EAGAIN) {
			/* Beyond the end (it was emptied), or changing
			 * under the seek: later. */
			p->look_at = mono_ms() + FOLLOW_MS;
			p->caught_up = true;
			return;
		}
		part_drop(p, strerror(errno));
		return;
	}
	if (got > want && warn)
		shiplog("%s: records %" PRIu64 "-%" PRIu64 " expired or were "
		    "deleted before they were shipped", p->path, want,
		    got - 1);
	pthread_mutex_lock(&sh->mu);
	p->next = got;
	if (p->first_seq == 0)
		p->acked = got;
	pthread_mutex_unlock(&sh->mu);
	p->open = true;
}

/*
 * Where a partition starts: after the last of its records the stream
 * holds, or at its cursor, whichever is further; with neither, at its
 * oldest record. The stream's record counts only if it is this store's
 * record of this partition (same Nats-Msg-Id prefix, an offset below
 * the end, the same bytes if the record is still here): a store made
 * anew under the same name never inherits another's position.
 */
static void
part_start(struct shipper *sh, struct ship_part *p)
{
	char val[32], why[256], *end, *data = NULL, *mine = NULL;
	uint64_t cur = 0, last = 0, eoff, start;
	size_t len = 0, mlen = 0;
	bool has_cur = false, has_last = false;
	ssize_t n;
	int r;

	n = getxattr(p->path, sh->cursor_key, val, sizeof(val) - 1);
	if (n >= 0) {
		val[n] = '\0';
		errno = 0;
		cur = strtoull(val, &end, 10);
		has_cur = errno == 0 && end != val;
	} else if (errno == ENOTSUP) {
		if (!sh->no_cursors)
			shiplog("%s: this tlogfs keeps no cursors (%s: not "
			    "supported): progress is not committed on it, "
			    "and a restart resumes from what the stream "
			    "holds", p->root, sh->cursor_key);
		sh->no_cursors = true;
	} else if (errno != ENODATA) {
		part_drop(p, strerror(errno));
		return;
	}
	r = nats_last(sh, p, &last, &data, &len, why, sizeof(why));
	if (r == -1) {
		/* The cluster cannot say now: the connection's own lines
		 * tell why; try again in a while. */
		p->look_at = mono_ms() + SHIP_BACKOFF_MAX_MS;
		return;
	}
	if (r == 1) {
		has_last = true;
		if (part_stat(p->path, "end_offset", &eoff) == -1) {
			free(data);
			part_drop(p, strerror(errno));
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
	p->committed = has_cur ? cur : UINT64_MAX;
	p->ready = true;
	p->caught_up = false;
	part_seek(sh, p, start, has_cur || has_last);
}

/* ---- records ---- */

static void
buf_need(size_t n)
{
	char *b;

	if (n <= bufcap)
		return;
	if ((b = realloc(buf, n)) == NULL)
		err(1, NULL);
	buf = b;
	bufcap = n;
}

/* Whether a message of len payload bytes fits the server's limit. */
static bool
fits(struct shipper *sh, struct ship_part *p, size_t len)
{
	size_t hdr = 200 + 2 * (strlen(p->idpfx) + 20) + strlen(sh->stream);

	return (int64_t)(len + hdr) <= sh->max_payload;
}

static int
too_big(struct shipper *sh, struct ship_part *p, size_t len)
{
	pthread_mutex_lock(&sh->mu);
	sh->fatal = true;
	snprintf(sh->fatal_why, sizeof(sh->fatal_why), "%s: record %" PRIu64
	    " is %zu bytes, more than a NATS message takes here "
	    "(max_payload %" PRId64 ", headers included)", p->path, p->next,
	    len, sh->max_payload);
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

	if (part_at(p->path, p->next + n, &b, &q) == 0 &&
	    b == p->sr.base && q == endpos)
		return true;
	return fd_stat(p->sr.fd, "records", &recs) == 0 &&
	    p->sr.base + recs == p->next + n;
}

/* The end of record p->next in the open segment, from the seek
 * attribute of the record after it: 1, 0 if not known yet, -1. */
static int
record_end(struct ship_part *p, uint64_t *end)
{
	struct stat st;
	uint64_t b, q;
	bool sealed;

	if (part_at(p->path, p->next + 1, &b, &q) == -1)
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
	size_t len, k;
	ssize_t n;
	int r;

	for (k = 0; k < room && k < 64; k++) {
		if ((r = record_end(p, &end)) == -1) {
			part_drop(p, strerror(errno));
			return -1;
		}
		if (r == 0)
			break;
		len = (size_t)(end - p->sr.pos);
		if (!fits(sh, p, len > 0 ? len - 1 : 0))
			return too_big(sh, p, len);
		buf_need(len);
		if ((n = sr_pread(&p->sr, buf, len)) == -1) {
			part_drop(p, strerror(errno));
			return -1;
		}
		if ((size_t)n != len)
			break;
		if (nats_publish(sh, p, p->next, buf,
		    buf[len - 1] == '\n' ? len - 1 : len) == -1)
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
		part_drop(p, strerror(errno));
		return;
	}
	if (sealed) {
		/* What went in just before the seal shows only now. */
		if (sr_pread(&p->sr, &c, 1) > 0)
			return;
		if (fd_stat(p->sr.fd, "records", &recs) == -1) {
			part_drop(p, strerror(errno));
			return;
		}
		sr_close(&p->sr);
		part_seek(sh, p, p->sr.base + recs, true);
		return;
	}
	if (sr_moved(&p->sr, &moved) == 0 && moved) {
		/* The empty `current` of a partition that had no active
		 * segment: one has started since. */
		part_seek(sh, p, p->next, true);
		return;
	}
	p->caught_up = true;
	p->look_at = mono_ms() + p->idle_ms;
	if (p->idle_ms < IDLE_MAX_MS)
		p->idle_ms *= 2;
}

/*
 * Ships up to `room` records of the partition from where it stands: the
 * number published, or -1 (the partition was dropped, or a publish
 * failed).
 */
static int
pump(struct shipper *sh, struct ship_part *p, size_t room)
{
	uint64_t ts;
	size_t n, nl, k, len;
	ssize_t got;
	char *s, *e, *last;

	if ((got = sr_pread(&p->sr, buf, READ_CHUNK)) == -1) {
		part_drop(p, strerror(errno));
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
	if ((last = memrchr(buf, '\n', n)) == NULL)
		return pump_slow(sh, p, room);
	for (nl = 0, s = buf; s <= last; s = e + 1, nl++)
		e = memchr(s, '\n', (size_t)(last - s) + 1);
	if (!lines_are_records(p, nl, p->sr.pos + (uint64_t)(last - buf) + 1))
		return pump_slow(sh, p, room);
	for (k = 0, s = buf; k < nl && k < room; k++, s = e + 1) {
		e = memchr(s, '\n', (size_t)(last - s) + 1);
		len = (size_t)(e - s);
		if (!fits(sh, p, len))
			return too_big(sh, p, len);
		if (nats_publish(sh, p, p->next, s, len) == -1)
			return -1;
		p->sr.pos += len + 1;
	}
	return (int)k;
}

/* ---- cursors ---- */

static void
commit_all(struct shipper *sh)
{
	struct ship_part *p, **ps = NULL;
	uint64_t *offs = NULL;
	size_t i, n = 0;
	char val[24];

	if (sh->no_cursors)
		return;
	pthread_mutex_lock(&sh->mu);
	if (sh->nparts > 0) {
		ps = calloc(sh->nparts, sizeof(*ps));
		offs = calloc(sh->nparts, sizeof(*offs));
		if (ps == NULL || offs == NULL)
			err(1, NULL);
	}
	RB_FOREACH(p, part_tree, &sh->parts) {
		if (!p->ready || p->acked == p->committed)
			continue;
		ps[n] = p;
		offs[n++] = p->acked;
	}
	pthread_mutex_unlock(&sh->mu);
	for (i = 0; i < n && !sh->no_cursors; i++) {
		p = ps[i];
		snprintf(val, sizeof(val), "%" PRIu64, offs[i]);
		if (setxattr(p->path, sh->cursor_key, val, strlen(val), 0) ==
		    0) {
			p->committed = offs[i];
			continue;
		}
		if (errno == ENOTSUP) {
			shiplog("%s: this tlogfs keeps no cursors (%s: not "
			    "supported): progress is not committed on it",
			    p->root, sh->cursor_key);
			sh->no_cursors = true;
		} else if (errno != ENOENT && !p->commit_warned) {
			shiplog("%s: cannot commit %s=%s: %s", p->path,
			    sh->cursor_key, val, strerror(errno));
			p->commit_warned = true;
		}
	}
	free(ps);
	free(offs);
}

static bool committer_stop;	/* atomic: set once, by the main thread */

static void *
committer(void *arg)
{
	struct shipper *sh = arg;
	int64_t next = mono_ms() + COMMIT_MS;

	while (!__atomic_load_n(&committer_stop, __ATOMIC_ACQUIRE)) {
		if (mono_ms() < next) {
			usleep(20000);
			continue;
		}
		commit_all(sh);
		next = mono_ms() + COMMIT_MS;
	}
	return NULL;
}

/* ---- the loop ---- */

/* Waits until what is in flight is answered, or nothing has been for
 * quiet ms. */
static void
settle(struct shipper *sh, int quiet)
{
	pthread_mutex_lock(&sh->mu);
	while (sh->inflight > 0 && mono_ms() - sh->last_answer < quiet)
		wait_ms(sh, 100);
	pthread_mutex_unlock(&sh->mu);
}

/*
 * After a failed or unanswered publish: let the rest be answered, give
 * up on what is not, and move each partition that lost some back to
 * what the stream holds of it (its last message there), then publish
 * again. Every later message had failed too (ship_nats.c: the chain of
 * expected ids), so nothing is out of order in the stream.
 */
static void
recover(struct shipper *sh)
{
	static int64_t logged_at;
	static int streak, quiet_logs;
	struct ship_part *p;
	char why[256], qwhy[256];
	uint64_t last;
	char *data;
	size_t len;
	int delay, r;
	bool said = false;

	pthread_mutex_lock(&sh->mu);
	strlcpy(why, sh->why, sizeof(why));
	if (sh->acks > 0)
		streak = 0;
	sh->acks = 0;
	pthread_mutex_unlock(&sh->mu);
	if (mono_ms() - logged_at >= 30000) {
		shiplog("stream %s: %s; resending from what the stream holds"
		    "%s", sh->stream, why, quiet_logs ? " (and the same, "
		    "more times since the last line)" : "");
		logged_at = mono_ms();
		quiet_logs = 0;
		said = true;
	} else
		quiet_logs++;
	settle(sh, SHIP_QUIET_MS);
	nats_abandon(sh);

	for (delay = 200;; delay = delay * 2 < SHIP_BACKOFF_MAX_MS ?
	    delay * 2 : SHIP_BACKOFF_MAX_MS) {
		if (stop || sh->fatal)
			return;
		r = nats_connected(sh) ? nats_stream_ok(sh, qwhy,
		    sizeof(qwhy)) : -1;
		if (r == -1 && !nats_connected(sh))
			strlcpy(qwhy, "not connected", sizeof(qwhy));
		RB_FOREACH(p, part_tree, &sh->parts) {
			if (r == -1)
				break;
			if (!p->failed)
				continue;
			r = nats_last(sh, p, &last, &data, &len, qwhy,
			    sizeof(qwhy));
			if (r == -1)
				break;
			if (r == 1)
				free(data);
			pthread_mutex_lock(&sh->mu);
			if (r == 1 && last + 1 > p->acked &&
			    last + 1 <= p->next)
				p->acked = last + 1;
			p->next = p->acked;
			p->first_seq = p->last_seq = 0;
			p->failed = false;
			pthread_mutex_unlock(&sh->mu);
			if (!p->dead)
				part_seek(sh, p, p->acked, true);
			r = 0;
		}
		if (r != -1)
			break;
		if (said || mono_ms() - logged_at >= 30000) {
			shiplog("stream %s: cannot ask what it holds: %s; "
			    "retrying every %d s at most, the cursors stay",
			    sh->stream, qwhy, SHIP_BACKOFF_MAX_MS / 1000);
			logged_at = mono_ms();
			said = false;
		}
		nap(sh, delay);
	}
	pthread_mutex_lock(&sh->mu);
	sh->head = sh->hint = sh->tail;
	sh->failing = false;
	sh->why[0] = '\0';
	pthread_mutex_unlock(&sh->mu);
	/* Failing again and again with nothing acknowledged between:
	 * back off before the next try. */
	if (streak++ > 0)
		nap(sh, streak < 6 ? 100 << streak : SHIP_BACKOFF_MAX_MS);
}

/* Whether the oldest flight waits longer than it may (its answer was
 * lost, or the message was). */
static void
check_stall(struct shipper *sh)
{
	struct flight *f;

	pthread_mutex_lock(&sh->mu);
	if (sh->head < sh->tail) {
		f = &sh->ring[sh->head % SHIP_WINDOW];
		if (f->state == FL_PENDING &&
		    mono_ms() - f->sent > SHIP_ACK_WAIT_MS)
			ship_failing(sh, "no acknowledgment for %d s",
			    SHIP_ACK_WAIT_MS / 1000);
	}
	pthread_mutex_unlock(&sh->mu);
}

static size_t
room(struct shipper *sh)
{
	size_t r = 0;

	pthread_mutex_lock(&sh->mu);
	if (sh->inflight < SHIP_WINDOW &&
	    sh->inflight_bytes < SHIP_WINDOW_BYTES &&
	    sh->tail - sh->head < SHIP_WINDOW)
		r = SHIP_WINDOW - (size_t)(sh->tail - sh->head);
	pthread_mutex_unlock(&sh->mu);
	return r < PUMP_MAX ? r : PUMP_MAX;
}

/* One turn over the partitions, from where the last one stopped: true
 * if every partition is caught up. */
static bool
turn(struct shipper *sh, bool *progress)
{
	static struct ship_part *rr;
	struct ship_part *p;
	size_t i, r;
	int64_t now = mono_ms();
	bool done = true;
	int k;

	p = rr != NULL ? rr : RB_MIN(part_tree, &sh->parts);
	for (i = 0; i < sh->nparts && p != NULL && !sh->failing; i++,
	    p = (p = RB_NEXT(part_tree, &sh->parts, p)) != NULL ? p :
	    RB_MIN(part_tree, &sh->parts)) {
		if (p->dead)
			continue;
		if (!p->ready) {
			if (now >= p->look_at)
				part_start(sh, p);
			if (!p->ready) {
				done = false;
				continue;
			}
		}
		if (!p->open) {
			if (p->caught_up && now < p->look_at)
				continue;
			part_seek(sh, p, p->next, true);
			if (!p->open) {
				continue;
			}
		}
		if (p->caught_up && now < p->look_at)
			continue;
		if ((r = room(sh)) == 0) {
			rr = p;
			return false;
		}
		p->caught_up = false;
		k = pump(sh, p, r);
		if (k > 0) {
			*progress = true;
			p->idle_ms = FOLLOW_MS;
		}
		if (!p->caught_up)
			done = false;
	}
	rr = p;
	return done;
}

static int
run(struct shipper *sh)
{
	int64_t next_discover = 0;
	bool progress, done;

	for (;;) {
		if (stop || sh->fatal)
			break;
		if (!sh->once && mono_ms() >= next_discover) {
			discover(sh);
			next_discover = mono_ms() + DISCOVER_MS;
		}
		check_stall(sh);
		if (sh->failing) {
			recover(sh);
			continue;
		}
		progress = false;
		done = nats_connected(sh) ? turn(sh, &progress) : false;
		if (sh->once && done) {
			pthread_mutex_lock(&sh->mu);
			while (sh->inflight > 0 && !sh->failing && !stop)
				wait_ms(sh, 100);
			pthread_mutex_unlock(&sh->mu);
			if (!sh->failing && !stop)
				break;
			continue;
		}
		if (!progress) {
			pthread_mutex_lock(&sh->mu);
			wait_ms(sh, FOLLOW_MS);
			pthread_mutex_unlock(&sh->mu);
		}
	}
	/* Stopped: what is in flight gets its answers, then the cursors
	 * are committed for what was acknowledged. */
	settle(sh, SHIP_QUIET_MS);
	if (sh->fatal) {
		shiplog("%s", sh->fatal_why);
		return 1;
	}
	return 0;
}

int
cmd_ship(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "nats", required_argument, NULL, 'n' },
		{ "stream", required_argument, NULL, 's' },
		{ "replicas", required_argument, NULL, 'r' },
		{ "subject-prefix", required_argument, NULL, 'p' },
		{ "cursor", required_argument, NULL, 'c' },
		{ "once", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static struct shipper shipper;
	struct shipper *sh = &shipper;
	struct sigaction sa;
	pthread_condattr_t ca;
	pthread_t ct;
	const char *errstr;
	int c, i, j, ret;

	sh->prefix = "tlog";
	sh->cursor = "ship";
	sh->replicas = 1;
	while ((c = next_opt(argc, argv, "+:h", longopts)) != -1) {
		switch (c) {
		case 'n':
			parse_urls(sh, optarg);
			break;
		case 's':
			if ((sh->stream = strdup(optarg)) == NULL)
				err(1, NULL);
			break;
		case 'r':
			sh->replicas = (int)strtonum(optarg, 1, 5, &errstr);
			if (errstr != NULL) {
				usage("ship", "--replicas %s: not 1 to 5",
				    optarg);
			}
			break;
		case 'p':
			sh->prefix = optarg;
			break;
		case 'c':
			sh->cursor = optarg;
			break;
		case 'o':
			sh->once = true;
			break;
		default:
			usage("ship", "unknown option");
		}
	}
	if (sh->nurls == 0) {
		usage("ship", "--nats URL is needed");
	}
	if (!tokens_ok(sh->prefix)) {
		usage("ship", "--subject-prefix %s: not NATS subject tokens "
		    "(A-Z a-z 0-9 _ -, dot-separated)", sh->prefix);
	}
	if (sh->stream == NULL)
		sh->stream = default_stream(sh->prefix);
	/* What JetStream takes as a name, and a file name besides. */
	if (sh->stream[0] == '\0' || strlen(sh->stream) > 255 ||
	    strpbrk(sh->stream, " \t\r\n\f.*>/\\") != NULL) {
		usage("ship", "--stream %s: not a JetStream stream name (no "
		    "spaces, dots, *, >, / or \\)", sh->stream);
	}
	if (!cursor_name_ok(sh->cursor)) {
		usage("ship", "--cursor %s: not a cursor name (1-64 of A-Z a-z "
		    "0-9 . _ -)", sh->cursor);
	}
	if (argc - optind < 1) {
		usage("ship", "no PATH");
	}
	snprintf(sh->cursor_key, sizeof(sh->cursor_key), "user.cursor.%s",
	    sh->cursor);

	nspecs = argc - optind;
	if ((specs = calloc((size_t)nspecs, sizeof(*specs))) == NULL)
		err(1, NULL);
	for (i = 0; i < nspecs; i++) {
		classify(&specs[i], argv[optind + i]);
		for (j = 0; j < i; j++)
			if (strcmp(specs[j].root, specs[i].root) == 0)
				break;
		if (j < i)
			specs[i].store = specs[j].store;
		else
			specs[i].store = store_id(specs[i].root,
			    &specs[i].made_id);
	}

	RB_INIT(&sh->parts);
	pthread_mutex_init(&sh->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sh->cv, &ca);
	if ((sh->ring = calloc(SHIP_WINDOW, sizeof(*sh->ring))) == NULL)
		err(1, NULL);
	sh->head = sh->tail = sh->hint = 1;	/* flight 0 means none */
	buf_need(READ_CHUNK);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	nats_open(sh);
	/* Said once the start cannot fail any more (a failed start is
	 * one line). */
	for (i = 0; i < nspecs; i++)
		if (specs[i].made_id)
			shiplog("%s: the mount has no user.tlog.store_id; the "
			    "store is named %s, after this machine and the "
			    "mount point", specs[i].root, specs[i].store);
	discover(sh);
	if (pthread_create(&ct, NULL, committer, sh) != 0)
		errx(1, "ship: cannot start a thread");
	ret = run(sh);
	__atomic_store_n(&committer_stop, true, __ATOMIC_RELEASE);
	pthread_join(ct, NULL);
	commit_all(sh);
	nats_close(sh);
	return ret;
}
