/*
 * when.c - TIME for `tlogctl read --since`, as milliseconds since the
 * epoch (the unit of the mount's timestamps):
 *
 *   1732871640000                  ms since the epoch
 *   @1732871640[.5]                seconds since the epoch (date +%s)
 *   -15m  -2h  -1d  -500ms         that long before now (ms s m h d w)
 *   2024-11-29T09:14:00Z           ISO 8601: a date, optionally a time
 *   2024-11-29 09:14:00.250+01:00  (hh:mm[:ss[.fff]]) with T or a space,
 *   2024-11-29                     and a zone (Z, +hh, +hhmm, +hh:mm);
 *                                  without a zone, local time
 *
 * What does not exist is refused, not carried over: February 30, 24:00,
 * a zone beyond 14 hours, "@1e9".
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlogctl.h"

/* Reads exactly n digits. */
static int
digits(const char **sp, int n, int *out)
{
	const char *s = *sp;
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*sp = s + n;
	*out = v;
	return 0;
}

/* "-15m": a duration with a unit, before now. */
static int
parse_ago(const char *s, int64_t now, int64_t *out)
{
	static const struct {
		const char *unit;
		int64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { "w", 604800000 },
	};
	char *end;
	long long v;
	size_t i;

	if (!isdigit((unsigned char)*s))
		return -1;	/* strtoll would take " 15m", "+15m" */
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0) {
			if (v > (INT64_MAX / units[i].ms))
				return -1;
			*out = now - v * units[i].ms;
			return 0;
		}
	return -1;
}

/* "@1732871640.5": seconds since the epoch, as date +%s prints them:
 * digits, then optionally a fraction (milliseconds; finer digits are
 * dropped). Not strtod, which takes 1e9, 0x10 and " 1" as well. */
static int
parse_secs(const char *s, int64_t *out)
{
	int64_t v = 0;
	int ms = 0, n;

	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (INT64_MAX / 1000 - 1) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (*s == '.') {
		for (s++, n = 0; isdigit((unsigned char)*s); s++, n++)
			if (n < 3)
				ms = ms * 10 + (*s - '0');
		if (n == 0)
			return -1;
		for (; n < 3; n++)
			ms *= 10;
	}
	if (*s != '\0')
		return -1;
	*out = v * 1000 + ms;
	return 0;
}

static int
parse_iso(const char *s, int64_t *out)
{
	struct tm tm, norm;
	int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0, zh, zm = 0, n;
	int64_t off = 0;
	bool zone = false;
	time_t t;
	char sign;

	if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) ||
	    *s++ != '-' || digits(&s, 2, &d))
		return -1;
	if (*s == 'T' || *s == ' ') {
		s++;
		if (digits(&s, 2, &h) || *s++ != ':' || digits(&s, 2, &mi))
			return -1;
		if (*s == ':') {
			s++;
			if (digits(&s, 2, &sec))
				return -1;
			if (*s == '.' || *s == ',') {
				/* Milliseconds; finer digits are dropped. */
				for (s++, n = 0; isdigit((unsigned char)*s);
				    s++, n++)
					if (n < 3)
						ms = ms * 10 + (*s - '0');
				if (n == 0)
					return -1;
				for (; n < 3; n++)
					ms *= 10;
			}
		}
	}
	if (*s == 'Z') {
		zone = true;
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++;
		if (digits(&s, 2, &zh))
			return -1;
		if (*s == ':') {
			s++;
			if (digits(&s, 2, &zm))
				return -1;
		} else if (isdigit((unsigned char)*s) && digits(&s, 2, &zm))
			return -1;
		/* The zones of the world lie within UTC-12 to UTC+14;
		 * ISO 8601 allows up to 14 hours either way. */
		if (zm > 59 || zh * 60 + zm > 14 * 60)
			return -1;
		off = (int64_t)(zh * 60 + zm) * 60000;
		if (sign == '-')
			off = -off;
		zone = true;
	}
	if (*s != '\0')
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	/* timegm carries what is out of range into the next field
	 * (February 30 is March 2): a date and time that exist come back
	 * unchanged. A leap second (:60) does not, and is refused. */
	norm = tm;
	t = timegm(&norm);
	if (norm.tm_year != tm.tm_year || norm.tm_mon != tm.tm_mon ||
	    norm.tm_mday != tm.tm_mday || norm.tm_hour != tm.tm_hour ||
	    norm.tm_min != tm.tm_min || norm.tm_sec != tm.tm_sec)
		return -1;
	if (!zone) {
		tm.tm_isdst = -1;
		errno = 0;
		if ((t = mktime(&tm)) == (time_t)-1 && errno != 0)
			return -1;
	}
	*out = (int64_t)t * 1000 + ms - off;
	return 0;
}

int
parse_duration(const char *s, int64_t *out)
{
	int64_t neg;

	if (parse_ago(s, 0, &neg) != 0)
		return -1;
	*out = -neg;
	return 0;
}

int
parse_time(const char *s, int64_t now, int64_t *out)
{
	const char *p;

	if (*s == '\0')
		return -1;
	if (*s == '@')
		return parse_secs(s + 1, out);
	if (*s == '-')
		return parse_ago(s + 1, now, out);
	for (p = s; isdigit((unsigned char)*p); p++)
		;
	if (*p == '\0') {
		char *end;

		errno = 0;
		*out = strtoll(s, &end, 10);
		return errno != 0 ? -1 : 0;
	}
	return parse_iso(s, out);
}
