/*
 * status_out.c - tlogctl status, its output (status.h): the sums of a
 * topic's partitions and of all rows, the table (sizes, durations and
 * rates in human units, columns aligned as df -h aligns them) and the
 * JSON lines.
 */
#include "config.h"

#include <sys/param.h>

#include <err.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "tlogctl.h"

/* ---- sums ---- */

/* Adds src's cursors to dst's, both sorted by name: a merge, so that a
 * total over many partitions with many cursors stays linear. */
static void
add_cursors(struct row *dst, const struct row *src)
{
	struct curlag *m;
	size_t i = 0, j = 0, k = 0;
	int c;

	if (src->ncur == 0)
		return;
	m = xreallocarray(NULL, dst->ncur + src->ncur, sizeof(*m));
	while (i < dst->ncur || j < src->ncur) {
		if (i == dst->ncur)
			c = 1;
		else if (j == src->ncur)
			c = -1;
		else
			c = strcmp(dst->cur[i].name, src->cur[j].name);
		if (c < 0)
			m[k++] = dst->cur[i++];
		else if (c > 0) {
			m[k].name = xstrdup(src->cur[j].name);
			m[k++].lag = src->cur[j++].lag;
		} else {
			m[k] = dst->cur[i++];
			m[k++].lag += src->cur[j++].lag;
		}
	}
	free(dst->cur);
	dst->cur = m;
	dst->ncur = k;
}

/* The earlier of two times, -1 being none. */
static int64_t
earlier(int64_t a, int64_t b)
{
	if (a == -1)
		return b;
	if (b == -1)
		return a;
	return MIN(a, b);
}

/* Adds row src to the sum dst. */
void
add_row(struct row *dst, const struct row *src)
{
	dst->parts += src->parts;
	dst->records += src->records;
	dst->bytes += src->bytes;
	dst->disk += src->disk;
	dst->segments += src->segments;
	dst->recent += src->recent;
	dst->oldest_ts = earlier(dst->oldest_ts, src->oldest_ts);
	dst->next_expiry = earlier(dst->next_expiry, src->next_expiry);
	add_cursors(dst, src);
}

void
sum_init(struct row *r, const char *mount, const char *topic)
{
	memset(r, 0, sizeof(*r));
	r->mount = mount;
	r->topic = topic != NULL ? xstrdup(topic) : NULL;
	r->oldest_ts = r->next_expiry = -1;
}

/* --topics: the rows, sorted, become one per topic. */
void
rows_by_topic(struct status *st)
{
	struct row *out, *t = NULL;
	size_t i, k = 0;

	out = xreallocarray(NULL, MAX(st->n, 1), sizeof(*out));
	for (i = 0; i < st->n; i++) {
		if (t == NULL || strcmp(t->mount, st->rows[i].mount) != 0 ||
		    strcmp(t->topic, st->rows[i].topic) != 0) {
			t = &out[k++];
			sum_init(t, st->rows[i].mount, st->rows[i].topic);
		}
		add_row(t, &st->rows[i]);
		row_free(&st->rows[i]);
	}
	free(st->rows);
	st->rows = out;
	st->n = k;
	st->cap = MAX(k, 1);
}

/* ---- formatting ---- */

static const char size_units[] = "KMGTPE";

static const struct {
	char unit;
	int64_t ms;
} dur_units[] = {
	{ 'd', 86400000 }, { 'h', 3600000 }, { 'm', 60000 }, { 's', 1000 },
};

/* A size as df -h shows it: bytes below 1 KiB, then K, M, G, T, P, E
 * (powers of 1024) with one decimal below 10, rounded up. */
static void
fmt_size(uint64_t v, bool exact, char *buf, size_t len)
{
	const char *units = size_units;
	double x = (double)v;
	uint64_t t;
	int k = 0;

	if (exact || v < 1024) {
		snprintf(buf, len, "%" PRIu64, v);
		return;
	}
	for (x /= 1024; x >= 1024 && k < 5; k++)
		x /= 1024;
	if (x < 10) {
		/* Tenths, rounded up: 9.96 is 10, shown without one. */
		t = (uint64_t)(x * 10);
		t += (double)t < x * 10;
		if (t < 100) {
			snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c",
			    t / 10, t % 10, units[k]);
			return;
		}
	}
	t = (uint64_t)x;
	t += (double)t < x;
	if (t >= 1024 && k < 5) {
		snprintf(buf, len, "1.0%c", units[k + 1]);
		return;
	}
	snprintf(buf, len, "%" PRIu64 "%c", t, units[k]);
}

/* A duration: its largest unit of d, h, m, s and the next one if not 0
 * ("3d4h", "15m", "12s"); ms below a second. */
static void
fmt_dur(int64_t ms, char *buf, size_t len)
{
	const size_t n = sizeof(dur_units) / sizeof(dur_units[0]);
	size_t i;
	int64_t a, b;

	if (ms < 1000) {
		snprintf(buf, len, "%" PRId64 "ms", ms < 0 ? 0 : ms);
		return;
	}
	for (i = 0; ms < dur_units[i].ms; i++)
		;
	a = ms / dur_units[i].ms;
	b = i + 1 < n ? ms % dur_units[i].ms / dur_units[i + 1].ms : 0;
	if (b > 0)
		snprintf(buf, len, "%" PRId64 "%c%" PRId64 "%c", a,
		    dur_units[i].unit, b, dur_units[i + 1].unit);
	else
		snprintf(buf, len, "%" PRId64 "%c", a, dur_units[i].unit);
}

/* Records per second over the window: two decimals below 1, one below
 * 10, none above (judged after rounding: 9.98 is 10). */
static void
fmt_rate(uint64_t recent, char *buf, size_t len)
{
	double r = (double)recent * 1000 / RATE_WINDOW;

	if (recent == 0)
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, r < 0.995 ? "%.2f" : r < 9.95 ? "%.1f" :
		    "%.0f", r);
}

/* ---- the table ---- */

enum {
	C_MOUNT, C_TOPIC, C_PART, C_RECORDS, C_BYTES, C_DISK, C_SEGS,
	C_OLDEST, C_EXPIRES, C_RATE, C_CURSORS, NCOL
};

static const char *const heads[NCOL] = {
	"MOUNT", "TOPIC", "PARTITION", "RECORDS", "BYTES", "DISK", "SEGS",
	"OLDEST", "EXPIRES", "REC/S", "CURSORS"
};

/* A line of the table, every cell its own string. */
struct line {
	char *c[NCOL];
};

/* Columns printed to the left: names, and the cursors. */
static bool
left(int col, bool topics)
{
	return col == C_MOUNT || col == C_TOPIC || col == C_CURSORS ||
	    (col == C_PART && !topics);
}

/* What a cell takes on a terminal: UTF-8 continuation bytes take
 * nothing. */
static int
cell_width(const char *s)
{
	int w = 0;

	for (; *s != '\0'; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static char *
cell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
cell(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		err(1, NULL);
	va_end(ap);
	return s;
}

/* "billing=50,audit=0", or "-" for none. */
static char *
cursors_cell(const struct row *r)
{
	char *s = NULL, *o;
	size_t i;

	if (r->ncur == 0)
		return cell("-");
	for (i = 0; i < r->ncur; i++) {
		o = s;
		s = cell("%s%s%s=%" PRIu64, o != NULL ? o : "",
		    o != NULL ? "," : "", r->cur[i].name, r->cur[i].lag);
		free(o);
	}
	return s;
}

/* The cells of row r, or of the total line (r->topic NULL), which says
 * "total" in the first column shown (MOUNT if mounts) and "-" in the
 * other names. A control character shows as '?', so that a row stays
 * one line. */
static void
row_line(const struct status *st, const struct row *r, bool mounts,
    struct line *l)
{
	const bool total = r->topic == NULL;
	char buf[64];	/* the longest cell: two int64s and their units */
	char *p;
	int i;

	if (total) {
		l->c[C_MOUNT] = cell("%s", mounts ? "total" : "-");
		l->c[C_TOPIC] = cell("%s", mounts ? "-" : "total");
	} else {
		l->c[C_MOUNT] = cell("%s", r->mount);
		l->c[C_TOPIC] = cell("%s", r->topic);
	}
	if (st->topics)
		l->c[C_PART] = cell("%" PRIu64, r->parts);
	else
		l->c[C_PART] = cell("%s", total ? "-" : r->part);
	l->c[C_RECORDS] = cell("%" PRIu64, r->records);
	fmt_size(r->bytes, st->exact, buf, sizeof(buf));
	l->c[C_BYTES] = cell("%s", buf);
	fmt_size(r->disk, st->exact, buf, sizeof(buf));
	l->c[C_DISK] = cell("%s", buf);
	l->c[C_SEGS] = cell("%" PRIu64, r->segments);
	if (r->oldest_ts == -1)
		l->c[C_OLDEST] = cell("-");
	else {
		fmt_dur(st->now - r->oldest_ts, buf, sizeof(buf));
		l->c[C_OLDEST] = cell("%s", buf);
	}
	if (r->next_expiry == -1)
		l->c[C_EXPIRES] = cell("-");
	else if (r->next_expiry <= st->now)
		l->c[C_EXPIRES] = cell("now");
	else {
		fmt_dur(r->next_expiry - st->now, buf, sizeof(buf));
		l->c[C_EXPIRES] = cell("%s", buf);
	}
	fmt_rate(r->recent, buf, sizeof(buf));
	l->c[C_RATE] = cell("%s", buf);
	l->c[C_CURSORS] = cursors_cell(r);
	for (i = 0; i < NCOL; i++)
		for (p = l->c[i]; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
}

static void
put_line(const struct line *l, const int *w, bool mounts, bool topics)
{
	int i, pad;

	for (i = mounts ? C_MOUNT : C_TOPIC; i < NCOL; i++) {
		pad = w[i] - cell_width(l->c[i]);
		if (!left(i, topics))
			printf("%*s", pad, "");
		fputs(l->c[i], stdout);
		if (i == NCOL - 1)
			break;
		printf("%*s", left(i, topics) ? pad + 2 : 2, "");
	}
	putchar('\n');
}

void
print_table(struct status *st, const struct row *total)
{
	struct line *ls, head;
	bool mounts = false;
	int w[NCOL], i;
	size_t k;

	/* A MOUNT column only when the rows are of more than one. */
	for (k = 1; k < st->n && !mounts; k++)
		mounts = strcmp(st->rows[k].mount, st->rows[0].mount) != 0;
	ls = xreallocarray(NULL, st->n + 1, sizeof(*ls));
	for (k = 0; k < st->n; k++)
		row_line(st, &st->rows[k], mounts, &ls[k]);
	row_line(st, total, mounts, &ls[st->n]);
	for (i = 0; i < NCOL; i++)
		head.c[i] = (char *)heads[i];
	if (st->topics)
		head.c[C_PART] = (char *)"PARTS";
	for (i = 0; i < NCOL; i++) {
		w[i] = cell_width(head.c[i]);
		for (k = 0; k <= st->n; k++)
			w[i] = MAX(w[i], cell_width(ls[k].c[i]));
	}
	put_line(&head, w, mounts, st->topics);
	for (k = 0; k <= st->n; k++) {
		put_line(&ls[k], w, mounts, st->topics);
		for (i = 0; i < NCOL; i++)
			free(ls[k].c[i]);
	}
	free(ls);
}

/* ---- JSON ---- */

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF), 0 if none. */
static int
utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	} else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* s as a JSON string: quotes, backslashes and control characters
 * escaped; a byte that is not UTF-8 (a mount point may hold any) as
 * U+FFFD, since JSON text is UTF-8. */
static void
json_str(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	int n;

	putchar('"');
	while (*p != '\0') {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p++);
		else if (*p == '\n')
			fputs("\\n", stdout), p++;
		else if (*p == '\t')
			fputs("\\t", stdout), p++;
		else if (*p < 0x20)
			printf("\\u%04x", *p++);
		else if (*p < 0x80)
			putchar(*p++);
		else if ((n = utf8_len(p)) > 0) {
			fwrite(p, 1, (size_t)n, stdout);
			p += n;
		} else {
			fputs("\\ufffd", stdout);
			p++;
		}
	}
	putchar('"');
}

static void
json_time(const char *key, int64_t ms)
{
	if (ms == -1)
		printf(",\"%s\":null", key);
	else
		printf(",\"%s\":%" PRId64, key, ms);
}

/* One object, one line: the row's numbers exact, times in ms since the
 * epoch (null: none). */
void
print_json(const struct status *st, const struct row *r)
{
	size_t i;

	fputs("{\"mount\":", stdout);
	json_str(r->mount);
	fputs(",\"topic\":", stdout);
	json_str(r->topic);
	if (r->part != NULL) {
		fputs(",\"partition\":", stdout);
		json_str(r->part);
		printf(",\"start_offset\":%" PRIu64 ",\"end_offset\":%" PRIu64,
		    r->start, r->end);
	} else
		printf(",\"partitions\":%" PRIu64, r->parts);
	printf(",\"records\":%" PRIu64 ",\"bytes\":%" PRIu64
	    ",\"disk_bytes\":%" PRIu64 ",\"segments\":%" PRIu64, r->records,
	    r->bytes, r->disk, r->segments);
	json_time("oldest_ts", r->oldest_ts);
	json_time("next_expiry", r->next_expiry);
	printf(",\"records_1m\":%" PRIu64 ",\"rate\":%.3f", r->recent,
	    (double)r->recent * 1000 / RATE_WINDOW);
	fputs(",\"cursors\":{", stdout);
	for (i = 0; i < r->ncur; i++) {
		if (i > 0)
			putchar(',');
		json_str(r->cur[i].name);
		printf(":{\"lag\":%" PRIu64 "}", r->cur[i].lag);
	}
	printf("},\"time\":%" PRId64 "}\n", st->now);
}

/* ---- the command ---- */
