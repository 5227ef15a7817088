/*
 * conf.c - configuration keys (conf.h).
 *
 * Value syntax (doc/engine.md, "Syntax"), deliberately strict so that
 * what is accepted is obvious: digits are decimal, never octal, with no
 * '+', fraction, exponent or separators; compression.type takes a name
 * (none, zstd; kept as TLOG_COMP_*) and retention.keep.free also N%.
 *
 * The cross-key limit segment.jitter.ms <= segment.ms is checked by
 * tlog_conf_set (levels.c, with tlog_key_upper) against the effective
 * value at the level being set only, so the engine clamps the jitter.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "conf.h"

#define TLOG_TIME_MAX	1000000000000000LL	/* 10^15 ms */
#define TLOG_SEG_MIN	1024LL			/* the segment floor */
#define TLOG_SEG_MAX	2147483648LL		/* 2 GiB */
#define VALUE_SHOW	40	/* bytes of a bad value quoted in messages */
#define QUOTED_MAX	(VALUE_SHOW * 4 + 4)	/* its quoted form */

enum unit_kind { UNIT_TIME, UNIT_SIZE, UNIT_NONE, UNIT_NAME };

/* compression.type's names, by value (TLOG_COMP_*). */
static const char *const comp_names[] = { "none", "zstd", NULL };

struct unit {
	const char *name;
	int64_t mult;
};

static const struct unit time_units[] = {
	{ "ms", 1 },
	{ "s", 1000 },
	{ "m", 60 * 1000 },
	{ "h", 3600 * 1000 },
	{ "d", 86400 * 1000 },
	{ "w", 7 * 86400 * 1000 },
	{ NULL, 0 }
};

static const struct unit size_units[] = {
	{ "K", 1LL << 10 },
	{ "M", 1LL << 20 },
	{ "G", 1LL << 30 },
	{ "KiB", 1LL << 10 },
	{ "MiB", 1LL << 20 },
	{ "GiB", 1LL << 30 },
	{ NULL, 0 }
};

struct keyinfo {
	const char *name;
	enum unit_kind unit;
	int64_t def;
	int64_t min;
	int64_t max;
	const char *minus_one;	/* meaning of -1, NULL if refused */
	int upper_key;		/* key bounding it from above, -1 if none */
	bool pct;		/* also N% of the file system (1..99) */
	const char *const *names;	/* UNIT_NAME: value i's name */
};

static const struct keyinfo keys[TLOG_NKEYS] = {
	[TLOG_RETENTION_MS] = { "retention.ms", UNIT_TIME,
	    7 * 86400 * 1000LL, 1000, TLOG_TIME_MAX, "forever", -1 },
	[TLOG_RETENTION_BYTES] = { "retention.bytes", UNIT_SIZE,
	    -1, TLOG_SEG_MIN, INT64_MAX, "none", -1 },
	[TLOG_SEGMENT_BYTES] = { "segment.bytes", UNIT_SIZE,
	    1LL << 30, TLOG_SEG_MIN, TLOG_SEG_MAX, NULL, -1 },
	[TLOG_SEGMENT_MS] = { "segment.ms", UNIT_TIME,
	    7 * 86400 * 1000LL, 1000, TLOG_TIME_MAX, NULL, -1 },
	[TLOG_SEGMENT_JITTER_MS] = { "segment.jitter.ms", UNIT_TIME,
	    0, 0, TLOG_TIME_MAX, NULL, TLOG_SEGMENT_MS },
	[TLOG_SEGMENT_PREALLOCATE] = { "segment.preallocate", UNIT_NONE,
	    0, 0, 1, NULL, -1 },
	[TLOG_RECORD_MAX_BYTES] = { "record.max.bytes", UNIT_SIZE,
	    1LL << 20, 1, TLOG_SEG_MAX, NULL, -1 },
	[TLOG_RETENTION_CONSUMED_MS] = { "retention.consumed.ms", UNIT_TIME,
	    -1, 1000, TLOG_TIME_MAX, "off", -1 },
	[TLOG_PARTITION_CLEANUP_MS] = { "partition.cleanup.ms", UNIT_TIME,
	    -1, 1000, TLOG_TIME_MAX, "off", -1 },
	[TLOG_RETENTION_KEEP_FREE] = { "retention.keep.free", UNIT_SIZE,
	    -1, 1, INT64_MAX, "off", -1, true },
	[TLOG_COMPRESSION_TYPE] = { "compression.type", UNIT_NAME,
	    TLOG_COMP_NONE, TLOG_COMP_NONE, TLOG_COMP_ZSTD, NULL, -1, false,
	    comp_names },
	[TLOG_COMPRESSION_ZSTD_LEVEL] = { "compression.zstd.level", UNIT_NONE,
	    3, 1, 19, NULL, -1 },
};

static bool
valid_key(int k)
{
	return k >= 0 && k < TLOG_NKEYS;
}

int
tlog_key_lookup(const char *name)
{
	int k;

	if (name == NULL)
		return -1;
	for (k = 0; k < TLOG_NKEYS; k++)
		if (strcmp(keys[k].name, name) == 0)
			return k;
	return -1;
}

const char *
tlog_key_name(enum tlog_key k)
{
	if (!valid_key((int)k))
		return NULL;
	return keys[k].name;
}

int64_t
tlog_key_default(enum tlog_key k)
{
	if (!valid_key((int)k))
		return TLOG_UNSET;
	return keys[k].def;
}

void
tlog_key_format(enum tlog_key k, int64_t v, char *buf, size_t len)
{
	if (valid_key((int)k) && keys[k].names != NULL && v >= keys[k].min &&
	    v <= keys[k].max)
		snprintf(buf, len, "%s", keys[k].names[v]);
	else if (valid_key((int)k) && keys[k].pct && TLOG_PCT_IS(v))
		snprintf(buf, len, "%" PRId64 "%%", TLOG_PCT_DECODE(v));
	else
		snprintf(buf, len, "%" PRId64, v);
}

/* ---- value parsing ---- */

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Quotes at most VALUE_SHOW bytes of a value for a message: printable
 * ASCII as is, '"' and '\\' escaped, anything else as \n, \t or \xNN.
 */
static void
quote_value(const char *s, size_t len, char *buf, size_t blen)
{
	size_t i, o = 0, n;
	unsigned char c;
	char esc[5];

	if (blen == 0)
		return;
	for (i = 0; i < len && i < VALUE_SHOW; i++) {
		c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			n = (size_t)snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c == '\n' || c == '\t')
			n = (size_t)snprintf(esc, sizeof(esc), "\\%c",
			    c == '\n' ? 'n' : 't');
		else if (c < 0x20 || c >= 0x7f)
			n = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", c);
		else
			n = (size_t)snprintf(esc, sizeof(esc), "%c", c);
		if (o + n + 1 > blen)
			break;
		memcpy(buf + o, esc, n);
		o += n;
	}
	buf[o] = '\0';
	if (i < len && o + 4 <= blen)
		memcpy(buf + o, "...", 4);
}

/*
 * The accepted range of key k as text. lim >= 0 is the effective value
 * of the key bounding k from above at some level; -1 names that key
 * instead.
 */
static void
range_text(enum tlog_key k, int64_t lim, char *buf, size_t blen)
{
	const struct keyinfo *ki = &keys[k];
	const char *word, *units;
	char m1[32] = "", hi[96];

	if (ki->unit == UNIT_NAME) {
		snprintf(buf, blen, "%s or %s", ki->names[0], ki->names[1]);
		return;
	}
	if (ki->unit == UNIT_NONE) {
		snprintf(buf, blen, "%" PRId64 "%s%" PRId64, ki->min,
		    ki->max == ki->min + 1 ? " or " : " .. ", ki->max);
		return;
	}
	if (ki->unit == UNIT_TIME) {
		word = "ms";
		units = "ms, s, m, h, d, w";
	} else {
		word = "bytes";
		units = "K, M, G, KiB, MiB, GiB";
	}
	if (ki->minus_one != NULL)
		snprintf(m1, sizeof(m1), "-1 (%s) or ", ki->minus_one);
	if (ki->upper_key >= 0 && lim >= 0)
		snprintf(hi, sizeof(hi), "%" PRId64 " %s (the effective %s)",
		    lim, word, keys[ki->upper_key].name);
	else if (ki->upper_key >= 0)
		snprintf(hi, sizeof(hi), "%s, in %s", keys[ki->upper_key].name,
		    word);
	else
		snprintf(hi, sizeof(hi), "%" PRId64 " %s", ki->max, word);
	if (ki->pct)
		snprintf(buf, blen, "%s>= %" PRId64 " %s (or with unit %s), "
		    "or N%% of the file system, N in 1..99", m1, ki->min, word,
		    units);
	else if (ki->max == INT64_MAX)
		snprintf(buf, blen, "%s>= %" PRId64 " %s (or with unit %s)",
		    m1, ki->min, word, units);
	else
		snprintf(buf, blen, "%s%" PRId64 " .. %s (or with unit %s)",
		    m1, ki->min, hi, units);
}

void
tlog_bad_value(const char *name, const char *s, size_t len,
    const char *accepted, char *err, size_t errlen)
{
	char q[QUOTED_MAX];

	if (err == NULL || errlen == 0)
		return;
	quote_value(s, s == NULL ? 0 : len, q, sizeof(q));
	snprintf(err, errlen, "%s: bad value \"%s\": accepted %s", name, q,
	    accepted);
}

void
tlog_key_bad_value(enum tlog_key k, const char *s, size_t len, int64_t lim,
    char *err, size_t errlen)
{
	char range[192];

	range_text(k, lim, range, sizeof(range));
	tlog_bad_value(keys[k].name, s, len, range, err, errlen);
}

/* Parses s[0..len) as described at the top of this file, without the
 * range check. Returns false on any syntax error or overflow. */
static bool
parse_syntax(enum tlog_key k, const char *s, size_t len, int64_t *out)
{
	const struct unit *u = NULL;
	size_t i = 0, end = len, ulen;
	int64_t v = 0, mult = 1;

	if (len == 0 || memchr(s, '\0', len) != NULL)
		return false;
	if (s[end - 1] == '\n')
		end--;
	while (i < end && is_blank(s[i]))
		i++;
	while (end > i && is_blank(s[end - 1]))
		end--;
	if (i == end)
		return false;

	if (keys[k].unit == UNIT_NAME) {
		for (v = 0; keys[k].names[v] != NULL; v++)
			if (strlen(keys[k].names[v]) == end - i &&
			    memcmp(keys[k].names[v], s + i, end - i) == 0) {
				*out = v;
				return true;
			}
		return false;
	}
	if (end - i == 2 && s[i] == '-' && s[i + 1] == '1') {
		if (keys[k].minus_one == NULL)
			return false;
		*out = -1;
		return true;
	}

	if (s[i] < '0' || s[i] > '9')
		return false;
	if (keys[k].pct && s[end - 1] == '%') {
		/* 1..99 only: one or two digits, no leading zero. */
		if (end - i < 2 || end - i > 3 || s[i] == '0' ||
		    (end - i == 3 && (s[i + 1] < '0' || s[i + 1] > '9')))
			return false;
		v = s[i] - '0';
		if (end - i == 3)
			v = v * 10 + (s[i + 1] - '0');
		*out = TLOG_PCT_ENCODE(v);
		return true;
	}
	for (; i < end && s[i] >= '0' && s[i] <= '9'; i++) {
		int d = s[i] - '0';

		if (v > (INT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}

	ulen = end - i;
	if (ulen > 0) {
		if (keys[k].unit == UNIT_TIME)
			u = time_units;
		else if (keys[k].unit == UNIT_SIZE)
			u = size_units;
		else
			return false;
		for (; u->name != NULL; u++)
			if (strlen(u->name) == ulen &&
			    memcmp(u->name, s + i, ulen) == 0)
				break;
		if (u->name == NULL)
			return false;
		mult = u->mult;
	}
	if (v > INT64_MAX / mult)
		return false;
	*out = v * mult;
	return true;
}

int
tlog_key_parse(enum tlog_key k, const char *s, size_t len, int64_t *out,
    char *err, size_t errlen)
{
	int64_t v;

	if (!valid_key((int)k)) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "unknown key %d", (int)k);
		return -EINVAL;
	}
	if (s == NULL)
		len = 0;
	if (!parse_syntax(k, s, len, &v) || (v != -1 && !TLOG_PCT_IS(v) &&
	    (v < keys[k].min || v > keys[k].max))) {
		tlog_key_bad_value(k, s, len, -1, err, errlen);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* ---- key=value files ---- */

void
tlog_conf_init(struct tlog_conf *c)
{
	int k;

	for (k = 0; k < TLOG_NKEYS; k++)
		c->v[k] = TLOG_UNSET;
}

int
tlog_conf_save(int dirfd, const char *path, const struct tlog_conf *c)
{
	char buf[TLOG_NKEYS * 64];
	size_t n = 0;
	int64_t v;
	int k;

	for (k = 0; k < TLOG_NKEYS; k++) {
		v = tlog_conf_value(c, k);
		if (v == TLOG_UNSET)
			continue;
		/* cannot truncate: 19 bytes of key, 20 of digits */
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s=",
		    keys[k].name);
		tlog_key_format(k, v, buf + n, sizeof(buf) - n);
		n += strlen(buf + n);
		buf[n++] = '\n';
	}
	return tlog_write_atomic(dirfd, path, buf, n);
}

static int
read_all(int fd, char **out, size_t *outlen)
{
	char *buf = NULL, *nb;
	size_t cap = 0, n = 0;
	ssize_t r;

	for (;;) {
		if ((nb = tlog_grow(buf, &cap, n, 1, 1024)) == NULL) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		r = read(fd, buf + n, cap - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			r = -errno;
			free(buf);
			return (int)r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*outlen = n;
	return 0;
}

/* One line of a config file (without its newline) into c; logs and
 * ignores a bad one. */
static void
load_line(struct tlog_ctx *ctx, const char *path, unsigned lineno,
    const char *l, size_t len, struct tlog_conf *c)
{
	char name[32], q[QUOTED_MAX], err[TLOG_CONF_MSG_MAX];
	const char *eq;
	size_t i = 0, kend;
	int64_t v;
	int k;

	while (i < len && is_blank(l[i]))
		i++;
	if (i == len || l[i] == '#')
		return;
	eq = memchr(l + i, '=', len - i);
	if (eq == NULL) {
		quote_value(l + i, len - i, q, sizeof(q));
		if (ctx != NULL)
			tlog_ctx_log(ctx, LOG_WARNING, "%s: line %u: \"%s\": "
			    "not key=value, ignored", path, lineno, q);
		return;
	}
	kend = (size_t)(eq - l);
	while (kend > i && is_blank(l[kend - 1]))
		kend--;
	k = -1;
	if (kend - i < sizeof(name) && memchr(l + i, '\0', kend - i) == NULL) {
		memcpy(name, l + i, kend - i);
		name[kend - i] = '\0';
		k = tlog_key_lookup(name);
	}
	if (k < 0) {
		quote_value(l + i, kend - i, q, sizeof(q));
		if (ctx != NULL)
			tlog_ctx_log(ctx, LOG_WARNING, "%s: line %u: unknown "
			    "key \"%s\", ignored", path, lineno, q);
		return;
	}
	if (tlog_key_parse(k, eq + 1, len - (size_t)(eq + 1 - l), &v, err,
	    sizeof(err)) != 0) {
		if (ctx != NULL)
			tlog_ctx_log(ctx, LOG_WARNING, "%s: line %u: %s; "
			    "ignored", path, lineno, err);
		return;
	}
	c->v[k] = v;
}

int
tlog_conf_load(struct tlog_ctx *ctx, int dirfd, const char *dir,
    const char *path, struct tlog_conf *c)
{
	const char *l, *nl, *end;
	char *buf = NULL, name[PATH_MAX];
	size_t len = 0;
	unsigned lineno = 0;
	int fd, r;

	/* Lines name the file in the store: t/0/.config, .tlogfs/config. */
	snprintf(name, sizeof(name), "%s%s%s", dir, *dir != '\0' ? "/" : "",
	    path);
	tlog_conf_init(c);
	if ((fd = tlog_ctx_open_file(ctx, dirfd, dir, path, O_RDONLY)) < 0)
		return fd == -ENOENT ? 0 : fd;
	r = read_all(fd, &buf, &len);
	close(fd);
	if (r != 0)
		return r;

	end = buf + len;
	for (l = buf; l < end; l = nl + 1) {
		nl = memchr(l, '\n', (size_t)(end - l));
		if (nl == NULL)
			nl = end;
		load_line(ctx, name, ++lineno, l, (size_t)(nl - l), c);
	}
	free(buf);
	return 0;
}

/* ---- messages for a level's set ---- */

int
tlog_key_upper(enum tlog_key k)
{
	return valid_key((int)k) ? keys[k].upper_key : -1;
}

void
tlog_key_unknown(const char *key, char *err, size_t errlen)
{
	char q[QUOTED_MAX];

	if (err == NULL || errlen == 0)
		return;
	quote_value(key, key == NULL ? 0 : strlen(key), q, sizeof(q));
	snprintf(err, errlen, "\"%s\": unknown key", q);
}
