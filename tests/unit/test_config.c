/*
 * test_config.c - configuration (doc/design.md §5): the value parser and its
 * units and bounds, the key table, the key=value files, and set/get/unset
 * through a real store with inheritance, persistence and nothing
 * half-applied.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "store.h"

#define GiB (1LL << 30)
#define MiB (1LL << 20)
#define SENTINEL 424242

/* ---- tlog_key_parse, table-driven ---- */

struct prow {
	enum tlog_key key;
	const char *in;
	size_t len;		/* 0: strlen(in) */
	int ret;
	int64_t val;
};

#define OK(k, s, v)	{ k, s, 0, 0, v }
#define BAD(k, s)	{ k, s, 0, -EINVAL, 0 }
#define BADN(k, s, n)	{ k, s, n, -EINVAL, 0 }

static const struct prow prows[] = {
	/* time units */
	OK(TLOG_SEGMENT_JITTER_MS, "500ms", 500),
	OK(TLOG_RETENTION_MS, "30s", 30000),
	OK(TLOG_RETENTION_MS, "15m", 900000),
	OK(TLOG_RETENTION_MS, "36h", 129600000),
	OK(TLOG_RETENTION_MS, "7d", 604800000),
	OK(TLOG_RETENTION_MS, "2w", 1209600000),
	OK(TLOG_SEGMENT_MS, "1h", 3600000),
	OK(TLOG_RETENTION_MS, "1000ms", 1000),
	OK(TLOG_RETENTION_MS, "007s", 7000),
	/* size units */
	OK(TLOG_RECORD_MAX_BYTES, "512K", 524288),
	OK(TLOG_SEGMENT_BYTES, "64M", 67108864),
	OK(TLOG_SEGMENT_BYTES, "1G", GiB),
	OK(TLOG_SEGMENT_BYTES, "1KiB", 1024),
	OK(TLOG_RECORD_MAX_BYTES, "1MiB", MiB),
	OK(TLOG_RETENTION_BYTES, "1GiB", GiB),
	OK(TLOG_SEGMENT_BYTES, "2048M", 2 * GiB),
	OK(TLOG_RETENTION_BYTES, "1024G", 1024 * GiB),
	/* plain integers, -1 where allowed */
	OK(TLOG_RETENTION_MS, "86400000", 86400000),
	OK(TLOG_RETENTION_MS, "-1", -1),
	OK(TLOG_RETENTION_BYTES, "-1", -1),
	OK(TLOG_RETENTION_MS, " -1 \n", -1),
	OK(TLOG_RETENTION_BYTES, "9223372036854775807", INT64_MAX),
	OK(TLOG_RETENTION_BYTES, "8589934591G", INT64_MAX - GiB + 1),
	/* whitespace and the trailing newline */
	OK(TLOG_RETENTION_MS, "  30s  ", 30000),
	OK(TLOG_RETENTION_MS, "30s\n", 30000),
	OK(TLOG_RETENTION_MS, " 30s \n", 30000),
	OK(TLOG_RETENTION_MS, "\t7d\t", 604800000),
	OK(TLOG_SEGMENT_PREALLOCATE, " 1\n", 1),
	/* bounds: at the limits */
	OK(TLOG_RETENTION_MS, "1000", 1000),
	OK(TLOG_RETENTION_MS, "1s", 1000),
	OK(TLOG_RETENTION_MS, "1000000000000000", 1000000000000000LL),
	OK(TLOG_RETENTION_BYTES, "1024", 1024),
	OK(TLOG_RETENTION_BYTES, "1K", 1024),
	OK(TLOG_SEGMENT_BYTES, "1024", 1024),
	OK(TLOG_SEGMENT_BYTES, "2147483648", 2 * GiB),
	OK(TLOG_SEGMENT_BYTES, "2G", 2 * GiB),
	OK(TLOG_SEGMENT_BYTES, "2GiB", 2 * GiB),
	OK(TLOG_SEGMENT_MS, "1000", 1000),
	OK(TLOG_SEGMENT_MS, "1s", 1000),
	OK(TLOG_SEGMENT_JITTER_MS, "0", 0),
	OK(TLOG_SEGMENT_JITTER_MS, "0s", 0),
	OK(TLOG_SEGMENT_PREALLOCATE, "0", 0),
	OK(TLOG_SEGMENT_PREALLOCATE, "1", 1),
	OK(TLOG_RECORD_MAX_BYTES, "1", 1),
	OK(TLOG_RECORD_MAX_BYTES, "2G", 2 * GiB),

	/* retention.keep.free: bytes, or N% (1..99) */
	OK(TLOG_RETENTION_KEEP_FREE, "-1", -1),
	OK(TLOG_RETENTION_KEEP_FREE, "2G", 2 * GiB),
	OK(TLOG_RETENTION_KEEP_FREE, "512M", 512 * MiB),
	OK(TLOG_RETENTION_KEEP_FREE, "1", 1),
	OK(TLOG_RETENTION_KEEP_FREE, "10%", TLOG_PCT_ENCODE(10)),
	OK(TLOG_RETENTION_KEEP_FREE, " 1%\n", TLOG_PCT_ENCODE(1)),
	OK(TLOG_RETENTION_KEEP_FREE, "99%", TLOG_PCT_ENCODE(99)),
	BAD(TLOG_RETENTION_KEEP_FREE, "0%"),
	BAD(TLOG_RETENTION_KEEP_FREE, "100%"),
	BAD(TLOG_RETENTION_KEEP_FREE, "05%"),
	BAD(TLOG_RETENTION_KEEP_FREE, "%"),
	BAD(TLOG_RETENTION_KEEP_FREE, "1.5%"),
	BAD(TLOG_RETENTION_KEEP_FREE, "10%%"),
	BAD(TLOG_RETENTION_KEEP_FREE, "0"),
	BAD(TLOG_RETENTION_KEEP_FREE, "-2"),
	BAD(TLOG_RETENTION_KEEP_FREE, "-110"),
	BAD(TLOG_RETENTION_BYTES, "10%"),
	BAD(TLOG_RETENTION_MS, "10%"),

	/* bounds: one past the limits */
	BAD(TLOG_RETENTION_MS, "999"),
	BAD(TLOG_RETENTION_MS, "500ms"),
	BAD(TLOG_RETENTION_MS, "0"),
	BAD(TLOG_RETENTION_MS, "1000000000000001"),
	BAD(TLOG_RETENTION_MS, "9223372036854775807"),
	BAD(TLOG_RETENTION_BYTES, "1023"),
	BAD(TLOG_RETENTION_BYTES, "0"),
	BAD(TLOG_RETENTION_BYTES, "1"),
	BAD(TLOG_SEGMENT_BYTES, "1023"),
	BAD(TLOG_SEGMENT_BYTES, "0"),
	BAD(TLOG_SEGMENT_BYTES, "2147483649"),
	BAD(TLOG_SEGMENT_BYTES, "3G"),
	BAD(TLOG_SEGMENT_MS, "999"),
	BAD(TLOG_SEGMENT_MS, "0"),
	BAD(TLOG_SEGMENT_PREALLOCATE, "2"),
	BAD(TLOG_RECORD_MAX_BYTES, "0"),
	BAD(TLOG_RECORD_MAX_BYTES, "0K"),
	BAD(TLOG_RECORD_MAX_BYTES, "2147483649"),
	/* -1 where it is not allowed, other negatives */
	BAD(TLOG_SEGMENT_MS, "-1"),
	BAD(TLOG_SEGMENT_BYTES, "-1"),
	BAD(TLOG_SEGMENT_JITTER_MS, "-1"),
	BAD(TLOG_SEGMENT_PREALLOCATE, "-1"),
	BAD(TLOG_RECORD_MAX_BYTES, "-1"),
	BAD(TLOG_RETENTION_MS, "-2"),
	BAD(TLOG_RETENTION_BYTES, "-1024"),
	BAD(TLOG_RETENTION_MS, "-0"),
	BAD(TLOG_RETENTION_MS, "-1s"),
	BAD(TLOG_RETENTION_BYTES, "-1K"),
	BAD(TLOG_RETENTION_MS, "-01"),
	BAD(TLOG_RETENTION_MS, "--1"),
	BAD(TLOG_RETENTION_MS, "- 1"),
	BAD(TLOG_RETENTION_MS, "+5s"),
	/* overflow, in the digits and in the unit multiplication */
	BAD(TLOG_RETENTION_MS, "9223372036854775807w"),
	BAD(TLOG_RETENTION_MS, "99999999999999999999"),
	BAD(TLOG_RETENTION_BYTES, "99999999999999999999"),
	BAD(TLOG_RETENTION_BYTES, "9223372036854775808"),
	BAD(TLOG_RETENTION_BYTES, "8589934592G"),
	BAD(TLOG_RETENTION_BYTES, "9007199254740992K"),
	BAD(TLOG_RETENTION_MS, "15250284453w"),
	/* ... including ones that would wrap around to an in-range value */
	BAD(TLOG_RETENTION_BYTES, "17179869185G"),
	BAD(TLOG_RETENTION_BYTES, "18014398509481985K"),
	BAD(TLOG_SEGMENT_BYTES, "17592186044417M"),
	BAD(TLOG_SEGMENT_BYTES, "18446744073709552640"),
	BAD(TLOG_SEGMENT_PREALLOCATE, "18446744073709551617"),
	/* empty, blank, stray newlines */
	BAD(TLOG_RETENTION_MS, ""),
	BAD(TLOG_RETENTION_MS, "   "),
	BAD(TLOG_RETENTION_MS, "\t"),
	BAD(TLOG_RETENTION_MS, "\n"),
	BAD(TLOG_RETENTION_MS, " \n "),
	BAD(TLOG_RETENTION_MS, "30s\n\n"),
	BAD(TLOG_RETENTION_MS, "30s\r\n"),
	BAD(TLOG_RETENTION_MS, "\n30s"),
	BAD(TLOG_RETENTION_MS, "30s\n "),
	/* NUL bytes anywhere in (s, len) */
	BADN(TLOG_RETENTION_MS, "3\0", 2),
	BADN(TLOG_RETENTION_MS, "30s\0", 4),
	BADN(TLOG_RETENTION_MS, "3\0" "0s", 4),
	BADN(TLOG_SEGMENT_BYTES, "\0" "1024", 5),
	/* garbage, fractions, trailing junk */
	BAD(TLOG_RETENTION_MS, "1.5s"),
	BAD(TLOG_RETENTION_MS, "1,5s"),
	BAD(TLOG_RETENTION_MS, "1e3"),
	BAD(TLOG_RETENTION_MS, "0x10"),
	BAD(TLOG_RETENTION_MS, "10x"),
	BAD(TLOG_RETENTION_MS, "s"),
	BAD(TLOG_SEGMENT_JITTER_MS, "ms"),
	BAD(TLOG_SEGMENT_JITTER_MS, " s"),
	BAD(TLOG_RETENTION_MS, "abc"),
	BAD(TLOG_RETENTION_MS, "forever"),
	BAD(TLOG_RETENTION_MS, "1 000"),
	BAD(TLOG_RETENTION_MS, "30 s"),
	BAD(TLOG_RETENTION_MS, "7 d"),
	BAD(TLOG_RETENTION_MS, "30S"),
	BAD(TLOG_RETENTION_MS, "30sec"),
	BAD(TLOG_RETENTION_MS, "30ss"),
	BAD(TLOG_RETENTION_MS, "1h30m"),
	BAD(TLOG_SEGMENT_PREALLOCATE, "true"),
	/* units: wrong key, wrong case, not in the list */
	BAD(TLOG_RETENTION_MS, "1G"),
	BAD(TLOG_SEGMENT_JITTER_MS, "1K"),
	BAD(TLOG_SEGMENT_BYTES, "5s"),
	BAD(TLOG_SEGMENT_BYTES, "1ms"),
	BAD(TLOG_RECORD_MAX_BYTES, "1m"),
	BAD(TLOG_SEGMENT_PREALLOCATE, "1K"),
	BAD(TLOG_SEGMENT_PREALLOCATE, "1s"),
	BAD(TLOG_SEGMENT_BYTES, "1k"),
	BAD(TLOG_SEGMENT_BYTES, "1KB"),
	BAD(TLOG_SEGMENT_BYTES, "1Ki"),
	BAD(TLOG_SEGMENT_BYTES, "1kib"),
	BAD(TLOG_SEGMENT_BYTES, "1024B"),
	BAD(TLOG_RETENTION_BYTES, "1T"),
};
#define NPROWS ((int)(sizeof(prows) / sizeof(prows[0])))

START_TEST(test_parse_table)
{
	const struct prow *r = &prows[_i];
	size_t len = r->len != 0 ? r->len : strlen(r->in);
	char err[512];
	int64_t v = SENTINEL;
	int ret;

	memset(err, 0, sizeof(err));
	ret = tlog_key_parse(r->key, r->in, len, &v, err, sizeof(err));
	ck_assert_msg(ret == r->ret, "row %d: %s \"%s\": returned %d, want %d "
	    "(err \"%s\")", _i, tlog_key_name(r->key), r->in, ret, r->ret,
	    err);
	if (r->ret == 0) {
		ck_assert_msg(v == r->val, "row %d: %s \"%s\": got %lld, "
		    "want %lld", _i, tlog_key_name(r->key), r->in,
		    (long long)v, (long long)r->val);
	} else {
		ck_assert_msg(v == SENTINEL, "row %d: output written on "
		    "failure", _i);
		ck_assert_msg(strncmp(err, tlog_key_name(r->key),
		    strlen(tlog_key_name(r->key))) == 0,
		    "row %d: err does not name the key: \"%s\"", _i, err);
		ck_assert_msg(strstr(err, "bad value \"") != NULL &&
		    strstr(err, "accepted ") != NULL,
		    "row %d: err lacks the value or the range: \"%s\"", _i,
		    err);
	}
}
END_TEST

START_TEST(test_parse_message)
{
	char err[512];
	int64_t v;

	ck_assert_int_eq(tlog_key_parse(TLOG_SEGMENT_BYTES, "12X", 3, &v,
	    err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "segment.bytes: bad value \"12X\": accepted "
	    "1024 .. 2147483648 bytes (or with unit K, M, G, KiB, MiB, GiB)");

	ck_assert_int_eq(tlog_key_parse(TLOG_RETENTION_MS, "0", 1, &v,
	    err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "-1 (forever)"));
	ck_assert_ptr_nonnull(strstr(err, "1000 .. "));
	ck_assert_ptr_nonnull(strstr(err, "ms, s, m, h, d, w"));

	ck_assert_int_eq(tlog_key_parse(TLOG_RETENTION_BYTES, "1", 1, &v,
	    err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "-1 (none) or >= 1024 bytes"));

	ck_assert_int_eq(tlog_key_parse(TLOG_SEGMENT_PREALLOCATE, "2", 1,
	    &v, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "segment.preallocate: bad value \"2\": "
	    "accepted 0 or 1");

	ck_assert_int_eq(tlog_key_parse(TLOG_SEGMENT_JITTER_MS, "x", 1,
	    &v, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "segment.ms"));
	/* record.max.bytes is bounded by nothing but its own range */
	ck_assert_int_eq(tlog_key_parse(TLOG_RECORD_MAX_BYTES, "x", 1,
	    &v, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "record.max.bytes: bad value \"x\": accepted "
	    "1 .. 2147483648 bytes (or with unit K, M, G, KiB, MiB, GiB)");
}
END_TEST

START_TEST(test_parse_message_sanitized)
{
	char err[512], big[300];
	int64_t v;

	/* control bytes, quotes and backslashes are escaped */
	ck_assert_int_eq(tlog_key_parse(TLOG_RETENTION_MS,
	    "\x01\"a\\\n\xff", 6, &v, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "\"\\x01\\\"a\\\\\\n\\xff\"") != NULL,
	    "%s", err);

	/* a NUL byte shows as \x00 and does not cut the message short */
	ck_assert_int_eq(tlog_key_parse(TLOG_RETENTION_MS, "3\0" "0s", 4,
	    &v, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "\"3\\x000s\": accepted") != NULL, "%s",
	    err);

	/* a long value is truncated */
	memset(big, '7', sizeof(big));
	big[sizeof(big) - 1] = 'X';
	ck_assert_int_eq(tlog_key_parse(TLOG_RETENTION_MS, big,
	    sizeof(big), &v, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "...\": accepted"));
	ck_assert_ptr_null(strchr(err, 'X'));
	ck_assert_uint_lt(strlen(err), 200);
}
END_TEST

START_TEST(test_parse_small_err)
{
	char err[16];
	int64_t v = SENTINEL;

	memset(err, 'Z', sizeof(err));
	ck_assert_int_eq(tlog_key_parse(TLOG_SEGMENT_BYTES, "bad", 3, &v,
	    err, 8), -EINVAL);
	ck_assert_str_eq(err, "segment");
	ck_assert_int_eq(err[8], 'Z');

	/* no error buffer at all */
	ck_assert_int_eq(tlog_key_parse(TLOG_SEGMENT_BYTES, "bad", 3, &v,
	    NULL, 0), -EINVAL);
	ck_assert_int_eq(tlog_key_parse(TLOG_SEGMENT_BYTES, "1K", 2, &v,
	    NULL, 0), 0);
	ck_assert_int_eq(v, 1024);

	/* NULL value, and a key out of range */
	v = SENTINEL;
	ck_assert_int_eq(tlog_key_parse(TLOG_SEGMENT_BYTES, NULL, 0, &v,
	    err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(tlog_key_parse(TLOG_NKEYS, "1", 1, &v, err,
	    sizeof(err)), -EINVAL);
	ck_assert_int_eq(v, SENTINEL);
}
END_TEST

/* ---- the key table ---- */

START_TEST(test_keys)
{
	static const struct {
		const char *name;
		int64_t def;
	} want[TLOG_NKEYS] = {
		[TLOG_RETENTION_MS] = { "retention.ms", 604800000 },
		[TLOG_RETENTION_BYTES] = { "retention.bytes", -1 },
		[TLOG_SEGMENT_BYTES] = { "segment.bytes", GiB },
		[TLOG_SEGMENT_MS] = { "segment.ms", 604800000 },
		[TLOG_SEGMENT_JITTER_MS] = { "segment.jitter.ms", 0 },
		[TLOG_SEGMENT_PREALLOCATE] = { "segment.preallocate", 0 },
		[TLOG_RECORD_MAX_BYTES] = { "record.max.bytes", MiB },
		[TLOG_RETENTION_CONSUMED_MS] = { "retention.consumed.ms", -1 },
		[TLOG_PARTITION_CLEANUP_MS] = { "partition.cleanup.ms", -1 },
		[TLOG_RETENTION_KEEP_FREE] = { "retention.keep.free", -1 },
		[TLOG_COMPRESSION_TYPE] = { "compression.type", TLOG_COMP_NONE },
		[TLOG_COMPRESSION_ZSTD_LEVEL] = { "compression.zstd.level", 3 },
	};
	int k;

	for (k = 0; k < TLOG_NKEYS; k++) {
		ck_assert_str_eq(tlog_key_name(k), want[k].name);
		ck_assert_int_eq(tlog_key_lookup(want[k].name), k);
		ck_assert_int_eq(tlog_key_lookup(tlog_key_name(k)), k);
		ck_assert_int_eq(tlog_key_default(k), want[k].def);
	}
	ck_assert_int_eq(tlog_key_lookup("retention.hours"), -1);
	ck_assert_int_eq(tlog_key_lookup("user.retention.ms"), -1);
	ck_assert_int_eq(tlog_key_lookup("retention.ms "), -1);
	ck_assert_int_eq(tlog_key_lookup("RETENTION.MS"), -1);
	ck_assert_int_eq(tlog_key_lookup("retention"), -1);
	ck_assert_int_eq(tlog_key_lookup(""), -1);
	ck_assert_int_eq(tlog_key_lookup(NULL), -1);
	ck_assert_ptr_null(tlog_key_name(TLOG_NKEYS));
	ck_assert_ptr_null(tlog_key_name((enum tlog_key)-1));
	ck_assert_int_eq(tlog_key_default(TLOG_NKEYS), TLOG_UNSET);
}
END_TEST

/* compression.type takes a name, shown by name; the level a number. */
START_TEST(test_compression_keys)
{
	char buf[32], err[TLOG_CONF_MSG_MAX];
	int64_t v;

	ck_assert_int_eq(tlog_key_parse(TLOG_COMPRESSION_TYPE, "zstd\n", 5,
	    &v, err, sizeof(err)), 0);
	ck_assert_int_eq(v, TLOG_COMP_ZSTD);
	tlog_key_format(TLOG_COMPRESSION_TYPE, v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "zstd");
	ck_assert_int_eq(tlog_key_parse(TLOG_COMPRESSION_TYPE, " none ", 6,
	    &v, err, sizeof(err)), 0);
	ck_assert_int_eq(v, TLOG_COMP_NONE);
	ck_assert_int_eq(tlog_key_parse(TLOG_COMPRESSION_TYPE, "1", 1, &v,
	    err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(tlog_key_parse(TLOG_COMPRESSION_TYPE, "ZSTD", 4, &v,
	    err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "compression.type: bad value \"ZSTD\": "
	    "accepted none or zstd");
	ck_assert_int_eq(tlog_key_parse(TLOG_COMPRESSION_ZSTD_LEVEL, "19", 2,
	    &v, err, sizeof(err)), 0);
	ck_assert_int_eq(tlog_key_parse(TLOG_COMPRESSION_ZSTD_LEVEL, "20", 2,
	    &v, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "compression.zstd.level: bad value \"20\": "
	    "accepted 1 .. 19");
	ck_assert_int_eq(tlog_key_parse(TLOG_COMPRESSION_ZSTD_LEVEL, "3K", 2,
	    &v, err, sizeof(err)), -EINVAL);
}
END_TEST

/* ---- key=value files ---- */

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_save_load)
{
	struct tlog_conf c, d;
	char *dir, *path, *text;
	int dfd, k;

	dir = th_tmpdir();
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_ne(asprintf(&path, "%s/cfg", dir), -1);

	/* nothing set: the file exists and is empty */
	tlog_conf_init(&c);
	for (k = 0; k < TLOG_NKEYS; k++)
		ck_assert(c.v[k] == TLOG_UNSET);
	ck_assert_int_eq(tlog_conf_save(dfd, "cfg", &c), 0);
	text = th_slurp(path, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "");
	free(text);
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "cfg", &d), 0);
	for (k = 0; k < TLOG_NKEYS; k++)
		ck_assert(d.v[k] == TLOG_UNSET);

	/* some keys: plain key=value lines with canonical integers */
	c.v[TLOG_RETENTION_MS] = 3 * 86400000LL;
	c.v[TLOG_RETENTION_BYTES] = -1;
	c.v[TLOG_SEGMENT_BYTES] = MiB;
	c.v[TLOG_SEGMENT_PREALLOCATE] = 0;
	ck_assert_int_eq(tlog_conf_save(dfd, "cfg", &c), 0);
	text = th_slurp(path, NULL);
	ck_assert_str_eq(text, "retention.ms=259200000\n"
	    "retention.bytes=-1\n"
	    "segment.bytes=1048576\n"
	    "segment.preallocate=0\n");
	free(text);
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "cfg", &d), 0);
	for (k = 0; k < TLOG_NKEYS; k++)
		ck_assert_msg(d.v[k] == c.v[k], "key %s: %lld != %lld",
		    tlog_key_name(k), (long long)d.v[k], (long long)c.v[k]);

	/* every key set */
	for (k = 0; k < TLOG_NKEYS; k++)
		c.v[k] = tlog_key_default(k);
	c.v[TLOG_RETENTION_BYTES] = INT64_MAX;
	ck_assert_int_eq(tlog_conf_save(dfd, "cfg", &c), 0);
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "cfg", &d), 0);
	ck_assert_int_eq(memcmp(&c, &d, sizeof(c)), 0);

	/* a missing file is all unset, not an error */
	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "nonexistent", &d), 0);
	for (k = 0; k < TLOG_NKEYS; k++)
		ck_assert(d.v[k] == TLOG_UNSET);

	/* a stray in its place (a directory, a FIFO, a symbolic link) is
	 * left alone and counts as missing; the FIFO never blocks */
	ck_assert_int_eq(mkdirat(dfd, "adir", 0755), 0);
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "adir", &d), 0);
	ck_assert_int_eq(mkfifoat(dfd, "afifo", 0644), 0);
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "afifo", &d), 0);
	ck_assert_int_eq(symlinkat("cfg", dfd, "alink"), 0);
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "alink", &d), 0);
	for (k = 0; k < TLOG_NKEYS; k++)
		ck_assert(d.v[k] == TLOG_UNSET);

	/* an absolute path works with any dirfd */
	ck_assert_int_eq(tlog_conf_load(NULL, AT_FDCWD, "", path, &d), 0);
	ck_assert_int_eq(memcmp(&c, &d, sizeof(c)), 0);

	close(dfd);
	free(path);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_load_bad_lines)
{
	struct tlog_conf d;
	char *dir, *path;
	int dfd;

	dir = th_tmpdir();
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_ne(asprintf(&path, "%s/cfg", dir), -1);

	write_file(path,
	    "# a comment\n"
	    "\n"
	    "   \n"
	    "retention.ms=3d\n"
	    "garbage line\n"
	    "segment.bytes=12X\n"
	    "bogus.key=5\n"
	    "=7\n"
	    "  segment.ms = 1h  \n"
	    "segment.jitter.ms=-1\n"
	    "record.max.bytes=4K");	/* no final newline */
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "cfg", &d), 0);
	ck_assert_int_eq(d.v[TLOG_RETENTION_MS], 259200000);
	ck_assert_int_eq(d.v[TLOG_SEGMENT_MS], 3600000);
	ck_assert_int_eq(d.v[TLOG_RECORD_MAX_BYTES], 4096);
	ck_assert(d.v[TLOG_SEGMENT_BYTES] == TLOG_UNSET);
	ck_assert(d.v[TLOG_SEGMENT_JITTER_MS] == TLOG_UNSET);
	ck_assert(d.v[TLOG_RETENTION_BYTES] == TLOG_UNSET);
	ck_assert(d.v[TLOG_SEGMENT_PREALLOCATE] == TLOG_UNSET);

	/* a NUL byte in a line spoils that line only; the last one wins */
	ck_assert_int_eq(unlink(path), 0);
	{
		static const char text[] = "segment.ms=1\0s\nsegment.ms=2s\n"
		    "retention.ms=1d\nretention.ms=2d\n";
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, text, sizeof(text) - 1),
		    (ssize_t)sizeof(text) - 1);
		close(fd);
	}
	ck_assert_int_eq(tlog_conf_load(NULL, dfd, "", "cfg", &d), 0);
	ck_assert_int_eq(d.v[TLOG_SEGMENT_MS], 2000);
	ck_assert_int_eq(d.v[TLOG_RETENTION_MS], 2 * 86400000);

	close(dfd);
	free(path);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/* ---- set/get/unset through a store ---- */

static char seterr[512];

static int
set(struct tlog_store *s, struct tlog_topic *t, struct tlog_partition *p,
    const char *key, const char *val)
{
	seterr[0] = '\0';
	return tlog_conf_set(s, t, p, key, val, strlen(val), seterr,
	    sizeof(seterr));
}

static void
set_ok(struct tlog_store *s, struct tlog_topic *t, struct tlog_partition *p,
    const char *key, const char *val)
{
	int r = set(s, t, p, key, val);

	ck_assert_msg(r == 0, "set %s=%s: %d %s", key, val, r, seterr);
}

static int64_t
get(struct tlog_store *s, struct tlog_topic *t, struct tlog_partition *p,
    const char *key)
{
	int64_t v = SENTINEL;

	ck_assert_int_eq(tlog_conf_get(s, t, p, key, &v), 0);
	return v;
}

/* Absolute path of a level's config file. */
static char *
level_file(const char *dir, struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p)
{
	char rel[PATH_MAX], *out;
	int r;

	pthread_rwlock_rdlock(&s->tree.lock);
	r = tlog_level_conf_path(p != NULL ? &p->lv : t != NULL ? &t->lv :
	    &s->root, rel, sizeof(rel));
	pthread_rwlock_unlock(&s->tree.lock);
	ck_assert_int_eq(r, 0);
	ck_assert_int_ne(asprintf(&out, "%s/%s", dir, rel), -1);
	return out;
}

START_TEST(test_inherit)
{
	struct tlog_partition *p, *q;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir;
	const char *k = "retention.ms";

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	q = th_part(s, "orders", "1");
	t = tlog_partition_topic(p);

	/* built-in default everywhere */
	ck_assert_int_eq(get(s, NULL, NULL, k), 604800000);
	ck_assert_int_eq(get(s, t, NULL, k), 604800000);
	ck_assert_int_eq(get(s, NULL, p, k), 604800000);

	set_ok(s, NULL, NULL, k, "1d");
	ck_assert_int_eq(get(s, NULL, NULL, k), 86400000);
	ck_assert_int_eq(get(s, t, NULL, k), 86400000);
	ck_assert_int_eq(get(s, NULL, p, k), 86400000);

	set_ok(s, t, NULL, k, "2d");
	ck_assert_int_eq(get(s, NULL, NULL, k), 86400000);
	ck_assert_int_eq(get(s, t, NULL, k), 2 * 86400000);
	ck_assert_int_eq(get(s, NULL, p, k), 2 * 86400000);
	ck_assert_int_eq(get(s, NULL, q, k), 2 * 86400000);

	set_ok(s, NULL, p, k, "3d\n");
	ck_assert_int_eq(get(s, NULL, p, k), 3 * 86400000);
	ck_assert_int_eq(get(s, NULL, q, k), 2 * 86400000);
	ck_assert_int_eq(get(s, t, NULL, k), 2 * 86400000);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_RETENTION_MS),
	    3 * 86400000);
	ck_assert_int_eq(tlog_part_conf(q, TLOG_RETENTION_MS),
	    2 * 86400000);

	/* -1 at a level overrides a finite value above it */
	set_ok(s, NULL, q, k, "-1");
	ck_assert_int_eq(get(s, NULL, q, k), -1);

	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, k), 0);
	ck_assert_int_eq(get(s, NULL, p, k), 2 * 86400000);
	ck_assert_int_eq(tlog_conf_unset(s, t, NULL, k), 0);
	ck_assert_int_eq(get(s, NULL, p, k), 86400000);
	ck_assert_int_eq(get(s, t, NULL, k), 86400000);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, NULL, k), 0);
	ck_assert_int_eq(get(s, NULL, p, k), 604800000);
	ck_assert_int_eq(get(s, NULL, NULL, k), 604800000);
	ck_assert_int_eq(get(s, NULL, q, k), -1);

	/* keys inherit independently */
	set_ok(s, NULL, NULL, "segment.bytes", "64M");
	set_ok(s, t, NULL, "segment.ms", "1h");
	ck_assert_int_eq(get(s, NULL, p, "segment.bytes"), 64 * MiB);
	ck_assert_int_eq(get(s, NULL, p, "segment.ms"), 3600000);
	ck_assert_int_eq(get(s, NULL, p, "record.max.bytes"), MiB);

	tlog_partition_put(p);
	tlog_partition_put(q);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/* The append path's one walk for all keys gives what a walk per key
 * gives, whichever level sets what. */
static void
check_all(struct tlog_partition *p)
{
	int64_t v[TLOG_NKEYS];
	int k;

	tlog_level_conf_all(&p->lv, v);
	for (k = 0; k < TLOG_NKEYS; k++)
		ck_assert_int_eq(v[k], tlog_part_conf(p, k));
}

START_TEST(test_conf_all)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);

	check_all(p);
	set_ok(s, NULL, NULL, "segment.bytes", "64M");
	set_ok(s, NULL, NULL, "retention.ms", "1d");
	check_all(p);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_SEGMENT_BYTES), 64 * MiB);
	set_ok(s, t, NULL, "segment.ms", "1h");
	set_ok(s, t, NULL, "retention.ms", "2d");
	check_all(p);
	set_ok(s, NULL, p, "record.max.bytes", "4K");
	set_ok(s, NULL, p, "segment.bytes", "1M");
	check_all(p);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_SEGMENT_BYTES), MiB);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_RETENTION_MS), 2 * 86400000);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_SEGMENT_MS), 3600000);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_RECORD_MAX_BYTES), 4096);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "segment.bytes"), 0);
	ck_assert_int_eq(tlog_conf_unset(s, t, NULL, "retention.ms"), 0);
	check_all(p);
	ck_assert_int_eq(tlog_part_conf(p, TLOG_SEGMENT_BYTES), 64 * MiB);

	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_unset)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir, *file, *text;
	int k;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);

	for (k = 0; k < TLOG_NKEYS; k++) {
		const char *name = tlog_key_name(k);

		ck_assert_int_eq(tlog_conf_unset(s, NULL, NULL, name),
		    -ENODATA);
		ck_assert_int_eq(tlog_conf_unset(s, t, NULL, name), -ENODATA);
		ck_assert_int_eq(tlog_conf_unset(s, NULL, p, name), -ENODATA);
	}

	/* set at the store: still not set at the partition */
	set_ok(s, NULL, NULL, "segment.ms", "1h");
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "segment.ms"), -ENODATA);
	ck_assert_int_eq(tlog_conf_unset(s, t, NULL, "segment.ms"), -ENODATA);

	set_ok(s, NULL, p, "segment.ms", "2h");
	set_ok(s, NULL, p, "retention.bytes", "1G");
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "segment.ms"), 0);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "segment.ms"), -ENODATA);
	ck_assert_int_eq(get(s, NULL, p, "segment.ms"), 3600000);

	/* the file no longer mentions it */
	file = level_file(dir, s, NULL, p);
	text = th_slurp(file, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "retention.bytes=1073741824\n");
	free(text);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "retention.bytes"), 0);
	text = th_slurp(file, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "");
	free(text);
	free(file);

	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_bad_value_untouched)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir, *pfile, *sfile, *before, *sbefore, *after;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);

	set_ok(s, NULL, p, "segment.bytes", "64K");
	set_ok(s, NULL, p, "retention.ms", "1h");
	set_ok(s, NULL, NULL, "segment.bytes", "1M");
	pfile = level_file(dir, s, NULL, p);
	sfile = level_file(dir, s, NULL, NULL);
	before = th_slurp(pfile, NULL);
	sbefore = th_slurp(sfile, NULL);
	ck_assert_ptr_nonnull(before);
	ck_assert_ptr_nonnull(sbefore);

	th_logbuf[0] = '\0';
	ck_assert_int_eq(set(s, NULL, p, "segment.bytes", "12X"), -EINVAL);
	ck_assert_str_eq(seterr, "segment.bytes: bad value \"12X\": accepted "
	    "1024 .. 2147483648 bytes (or with unit K, M, G, KiB, MiB, GiB)");
	ck_assert_msg(strstr(th_logbuf, "segment.bytes: bad value \"12X\"")
	    != NULL, "not logged: %s", th_logbuf);

	ck_assert_int_eq(set(s, NULL, p, "segment.bytes", "1023"), -EINVAL);
	ck_assert_int_eq(set(s, NULL, p, "segment.bytes", "5s"), -EINVAL);
	ck_assert_int_eq(set(s, NULL, p, "retention.ms", ""), -EINVAL);
	ck_assert_int_eq(set(s, NULL, p, "retention.ms", "1G"), -EINVAL);
	ck_assert_int_eq(set(s, NULL, NULL, "segment.bytes", "-1"), -EINVAL);
	ck_assert_int_eq(set(s, t, NULL, "segment.bytes", "2GiB+1"), -EINVAL);
	ck_assert_int_eq(tlog_conf_set(s, NULL, p, "retention.ms", "1h\0", 3,
	    seterr, sizeof(seterr)), -EINVAL);

	ck_assert_int_eq(get(s, NULL, p, "segment.bytes"), 65536);
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 3600000);
	ck_assert_int_eq(get(s, NULL, NULL, "segment.bytes"), MiB);
	ck_assert_int_eq(get(s, t, NULL, "segment.bytes"), MiB);
	after = th_slurp(pfile, NULL);
	ck_assert_str_eq(after, before);
	free(after);
	after = th_slurp(sfile, NULL);
	ck_assert_str_eq(after, sbefore);
	free(after);

	free(before);
	free(sbefore);
	free(pfile);
	free(sfile);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_save_failure_untouched)
{
	struct tlog_partition *p;
	struct tlog_store *s;
	char *dir, *pfile;
	int r;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	set_ok(s, NULL, p, "retention.ms", "1h");

	/* a directory where the config file goes: the rename must fail */
	pfile = level_file(dir, s, NULL, p);
	ck_assert_int_eq(unlink(pfile), 0);
	ck_assert_int_eq(mkdir(pfile, 0755), 0);
	r = set(s, NULL, p, "retention.ms", "2h");
	ck_assert_msg(r < 0 && r != -EINVAL, "set over a directory: %d", r);
	ck_assert_ptr_nonnull(strstr(seterr, "retention.ms"));
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 3600000);
	r = tlog_conf_unset(s, NULL, p, "retention.ms");
	ck_assert_msg(r < 0 && r != -ENODATA, "unset over a directory: %d", r);
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 3600000);
	ck_assert_int_eq(rmdir(pfile), 0);

	set_ok(s, NULL, p, "retention.ms", "2h");
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 7200000);

	free(pfile);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_unknown_key)
{
	static const char *bad[] = { "retention.hours", "user.retention.ms",
	    "retention.ms ", "RETENTION.MS", "", "tlog.bytes", "seal" };
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir;
	int64_t v;
	size_t i;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(set(s, NULL, NULL, bad[i], "1"), -ENOTSUP);
		ck_assert_int_eq(set(s, t, NULL, bad[i], "1"), -ENOTSUP);
		ck_assert_int_eq(set(s, NULL, p, bad[i], "1"), -ENOTSUP);
		ck_assert_int_eq(tlog_conf_get(s, NULL, NULL, bad[i], &v),
		    -ENOTSUP);
		ck_assert_int_eq(tlog_conf_get(s, t, NULL, bad[i], &v),
		    -ENOTSUP);
		ck_assert_int_eq(tlog_conf_get(s, NULL, p, bad[i], &v),
		    -ENOTSUP);
		ck_assert_int_eq(tlog_conf_unset(s, NULL, NULL, bad[i]),
		    -ENOTSUP);
		ck_assert_int_eq(tlog_conf_unset(s, t, NULL, bad[i]),
		    -ENOTSUP);
		ck_assert_int_eq(tlog_conf_unset(s, NULL, p, bad[i]),
		    -ENOTSUP);
	}
	/* an unknown key wins over a bad value */
	ck_assert_int_eq(set(s, NULL, p, "nope", "garbage"), -ENOTSUP);

	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/*
 * Memory (doc/performance.md, "Memory"): a level that sets nothing holds
 * no settings block; one is made by the first set, kept through an
 * unset, and loaded only for a level whose .config sets something.
 */
START_TEST(test_settings_made_when_set)
{
	struct tlog_partition *p, *q;
	struct tlog_store *s;
	char *dir;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	q = th_part(s, "orders", "1");
	ck_assert_ptr_null(p->lv.conf);
	ck_assert_ptr_null(tlog_partition_topic(p)->lv.conf);
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"),
	    tlog_key_default(TLOG_RETENTION_MS));
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "retention.ms"),
	    -ENODATA);
	ck_assert_ptr_null(p->lv.conf);
	set_ok(s, NULL, p, "retention.ms", "3d");
	ck_assert_ptr_nonnull(p->lv.conf);
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 259200000);
	set_ok(s, NULL, q, "retention.ms", "1d");
	ck_assert_int_eq(tlog_conf_unset(s, NULL, q, "retention.ms"), 0);
	ck_assert_int_eq(get(s, NULL, q, "retention.ms"),
	    tlog_key_default(TLOG_RETENTION_MS));
	tlog_partition_put(p);
	tlog_partition_put(q);
	tlog_store_close(s);

	s = th_open(dir);
	p = th_part(s, "orders", "0");
	q = th_part(s, "orders", "1");
	ck_assert_ptr_nonnull(p->lv.conf);
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 259200000);
	ck_assert_ptr_null(q->lv.conf);	/* its .config sets nothing */
	ck_assert_ptr_null(tlog_partition_topic(p)->lv.conf);
	tlog_partition_put(p);
	tlog_partition_put(q);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_persist)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir, *pfile, *text;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);
	set_ok(s, NULL, NULL, "segment.ms", "1h");
	set_ok(s, NULL, NULL, "segment.jitter.ms", "1m");
	set_ok(s, t, NULL, "retention.bytes", "1G");
	set_ok(s, t, NULL, "retention.ms", "-1");
	set_ok(s, NULL, p, "record.max.bytes", "4K");
	set_ok(s, NULL, p, "retention.ms", "3d");
	set_ok(s, NULL, p, "segment.preallocate", "1");
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "segment.preallocate"),
	    0);
	pfile = level_file(dir, s, NULL, p);
	tlog_partition_put(p);
	tlog_store_close(s);

	text = th_slurp(pfile, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "retention.ms=259200000\n"
	    "record.max.bytes=4096\n");
	free(text);

	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);
	ck_assert_int_eq(get(s, NULL, NULL, "segment.ms"), 3600000);
	ck_assert_int_eq(get(s, NULL, NULL, "segment.jitter.ms"), 60000);
	ck_assert_int_eq(get(s, t, NULL, "retention.bytes"), GiB);
	ck_assert_int_eq(get(s, t, NULL, "retention.ms"), -1);
	ck_assert_int_eq(get(s, NULL, p, "record.max.bytes"), 4096);
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 259200000);
	ck_assert_int_eq(get(s, NULL, p, "retention.bytes"), GiB);
	ck_assert_int_eq(get(s, NULL, p, "segment.ms"), 3600000);
	ck_assert_int_eq(get(s, NULL, p, "segment.preallocate"), 0);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "segment.preallocate"),
	    -ENODATA);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "segment.ms"), -ENODATA);
	ck_assert_int_eq(tlog_conf_unset(s, t, NULL, "segment.ms"), -ENODATA);

	/* an unset persists too */
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "retention.ms"), 0);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, NULL, "segment.ms"), 0);
	tlog_partition_put(p);
	tlog_store_close(s);

	s = th_open(dir);
	p = th_part(s, "orders", "0");
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), -1);
	ck_assert_int_eq(get(s, NULL, p, "segment.ms"), 604800000);
	ck_assert_int_eq(get(s, NULL, p, "record.max.bytes"), 4096);
	tlog_partition_put(p);
	tlog_store_close(s);

	free(pfile);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_jitter_bound)
{
	struct tlog_partition *p, *q;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir, *pfile, *before, *after;
	const char *j = "segment.jitter.ms";

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	q = th_part(s, "orders", "1");
	t = tlog_partition_topic(p);

	/* against the partition's own segment.ms */
	set_ok(s, NULL, p, "segment.ms", "1h");
	pfile = level_file(dir, s, NULL, p);
	before = th_slurp(pfile, NULL);
	th_logbuf[0] = '\0';
	ck_assert_int_eq(set(s, NULL, p, j, "2h"), -EINVAL);
	ck_assert_msg(strncmp(seterr, j, strlen(j)) == 0, "%s", seterr);
	ck_assert_msg(strstr(seterr, "3600000") != NULL, "%s", seterr);
	ck_assert_ptr_nonnull(strstr(th_logbuf, j));
	ck_assert_int_eq(set(s, NULL, p, j, "3600001"), -EINVAL);
	ck_assert_int_eq(get(s, NULL, p, j), 0);
	after = th_slurp(pfile, NULL);
	ck_assert_str_eq(after, before);
	free(after);
	set_ok(s, NULL, p, j, "1h");	/* inclusive */
	ck_assert_int_eq(get(s, NULL, p, j), 3600000);

	/* the topic's effective segment.ms is still the default 7d */
	set_ok(s, t, NULL, j, "2h");
	ck_assert_int_eq(set(s, t, NULL, j, "8d"), -EINVAL);

	/* an inherited bound counts: q takes segment.ms from the topic */
	set_ok(s, t, NULL, "segment.ms", "1m");
	ck_assert_int_eq(set(s, NULL, q, j, "61s"), -EINVAL);
	set_ok(s, NULL, q, j, "60s");

	/* and at the store */
	set_ok(s, NULL, NULL, "segment.ms", "10s");
	ck_assert_int_eq(set(s, NULL, NULL, j, "11s"), -EINVAL);
	set_ok(s, NULL, NULL, j, "10s");

	free(before);
	free(pfile);
	tlog_partition_put(p);
	tlog_partition_put(q);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_record_max_independent)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir;
	const char *r = "record.max.bytes";

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);

	/* Not bounded by segment.bytes: a longer record gets a segment of
	 * its own. getxattr shows the value set, the limit in force. */
	set_ok(s, t, NULL, "segment.bytes", "64K");
	set_ok(s, NULL, p, r, "128K");
	ck_assert_int_eq(get(s, NULL, p, r), 131072);
	set_ok(s, t, NULL, r, "1M");
	ck_assert_int_eq(get(s, t, NULL, r), MiB);
	set_ok(s, NULL, NULL, "segment.bytes", "1M");
	set_ok(s, NULL, NULL, r, "2G");
	ck_assert_int_eq(get(s, NULL, NULL, r), 2 * GiB);
	/* Lowering segment.bytes leaves it alone. */
	set_ok(s, NULL, p, "segment.bytes", "1K");
	ck_assert_int_eq(get(s, NULL, p, r), 131072);
	/* Its own range still holds. */
	ck_assert_int_eq(set(s, NULL, p, r, "2147483649"), -EINVAL);
	ck_assert_int_eq(set(s, NULL, p, r, "0"), -EINVAL);
	ck_assert_int_eq(get(s, NULL, p, r), 131072);

	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

START_TEST(test_dead_level)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "gone");
	t = tlog_partition_topic(p);
	set_ok(s, NULL, p, "retention.ms", "1h");
	ck_assert_int_eq(tlog_partition_remove(t, "gone"), 0);
	ck_assert_int_eq(set(s, NULL, p, "retention.ms", "2h"), -ENOENT);
	ck_assert_int_eq(tlog_conf_unset(s, NULL, p, "retention.ms"),
	    -ENOENT);
	ck_assert_int_eq(get(s, NULL, p, "retention.ms"), 3600000);

	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/* Concurrent setters of different keys on one level: each save carries
 * every key, so the file ends up matching the live values. */

struct racer {
	struct tlog_store *s;
	struct tlog_partition *p;
	const char *key;
	int fails;
};

static void *
race(void *arg)
{
	struct racer *r = arg;
	char val[32], err[256];
	int i;

	for (i = 0; i < 25; i++) {
		if (strcmp(r->key, "segment.preallocate") == 0)
			snprintf(val, sizeof(val), "%d", i % 2);
		else
			snprintf(val, sizeof(val), "%dK", 1 + i);
		if (strcmp(r->key, "retention.bytes") == 0 ||
		    strcmp(r->key, "segment.bytes") == 0)
			snprintf(val, sizeof(val), "%dM", 1 + i);
		if (tlog_conf_set(r->s, NULL, r->p, r->key, val, strlen(val),
		    err, sizeof(err)) != 0)
			r->fails++;
	}
	return NULL;
}

START_TEST(test_concurrent_set)
{
	static const char *keys[] = { "retention.bytes", "segment.bytes",
	    "record.max.bytes", "segment.preallocate" };
	struct racer rs[4];
	pthread_t th[4];
	struct tlog_conf c;
	struct tlog_partition *p;
	struct tlog_store *s;
	char *dir, *pfile;
	int i;

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	for (i = 0; i < 4; i++) {
		rs[i].s = s;
		rs[i].p = p;
		rs[i].key = keys[i];
		rs[i].fails = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, race, &rs[i]),
		    0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(rs[i].fails, 0);
	}
	pfile = level_file(dir, s, NULL, p);
	ck_assert_int_eq(tlog_conf_load(NULL, AT_FDCWD, "", pfile, &c), 0);
	for (i = 0; i < TLOG_NKEYS; i++)
		ck_assert_msg(c.v[i] == tlog_level_own(&p->lv, i),
		    "%s: file %lld, live %lld", tlog_key_name(i),
		    (long long)c.v[i],
		    (long long)tlog_level_own(&p->lv, i));
	ck_assert_int_eq(get(s, NULL, p, "retention.bytes"), 25 * MiB);
	ck_assert_int_eq(get(s, NULL, p, "segment.bytes"), 25 * MiB);
	ck_assert_int_eq(get(s, NULL, p, "record.max.bytes"), 25 * 1024);
	ck_assert_int_eq(get(s, NULL, p, "segment.preallocate"), 0);

	free(pfile);
	tlog_partition_put(p);
	tlog_store_close(s);
	th_rmrf(dir);
	free(dir);
}
END_TEST

/*
 * retention.keep.free: the mount root only (EINVAL on a topic or a
 * partition, nothing changed), shown as bytes or N%, kept across opens
 * in its canonical form.
 */
START_TEST(test_keep_free)
{
	struct tlog_partition *p;
	struct tlog_topic *t;
	struct tlog_store *s;
	char *dir, *sfile, *text, buf[32];

	dir = th_tmpdir();
	s = th_open(dir);
	p = th_part(s, "orders", "0");
	t = tlog_partition_topic(p);
	ck_assert_int_eq(get(s, NULL, NULL, "retention.keep.free"), -1);
	ck_assert_int_eq(set(s, t, NULL, "retention.keep.free", "1G"),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(seterr, "mount root only"));
	ck_assert_int_eq(set(s, NULL, p, "retention.keep.free", "10%"),
	    -EINVAL);
	ck_assert_int_eq(get(s, NULL, p, "retention.keep.free"), -1);
	set_ok(s, NULL, NULL, "retention.keep.free", "10%");
	tlog_key_format(TLOG_RETENTION_KEEP_FREE,
	    get(s, NULL, p, "retention.keep.free"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "10%");
	set_ok(s, NULL, NULL, "retention.keep.free", "2M");
	tlog_key_format(TLOG_RETENTION_KEEP_FREE,
	    get(s, NULL, NULL, "retention.keep.free"), buf, sizeof(buf));
	ck_assert_str_eq(buf, "2097152");
	set_ok(s, NULL, NULL, "retention.keep.free", "25%");
	sfile = level_file(dir, s, NULL, NULL);
	tlog_partition_put(p);
	tlog_store_close(s);

	text = th_slurp(sfile, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "retention.keep.free=25%\n");
	free(text);
	s = th_open(dir);
	ck_assert_int_eq(get(s, NULL, NULL, "retention.keep.free"),
	    TLOG_PCT_ENCODE(25));
	tlog_store_close(s);
	free(sfile);
	th_rmrf(dir);
	free(dir);
}
END_TEST

int
main(void)
{
	Suite *su = suite_create("config");
	TCase *tc;

	tc = tcase_create("parse_table");
	tcase_add_loop_test(tc, test_parse_table, 0, NPROWS);
	suite_add_tcase(su, tc);
	th_case(su, "parse_message", test_parse_message);
	th_case(su, "parse_message_sanitized", test_parse_message_sanitized);
	th_case(su, "parse_small_err", test_parse_small_err);
	th_case(su, "keys", test_keys);
	th_case(su, "compression_keys", test_compression_keys);
	th_case(su, "save_load", test_save_load);
	th_case(su, "load_bad_lines", test_load_bad_lines);
	th_case(su, "inherit", test_inherit);
	th_case(su, "conf_all", test_conf_all);
	th_case(su, "unset", test_unset);
	th_case(su, "bad_value_untouched", test_bad_value_untouched);
	th_case(su, "save_failure_untouched", test_save_failure_untouched);
	th_case(su, "unknown_key", test_unknown_key);
	th_case(su, "persist", test_persist);
	th_case(su, "settings_made_when_set", test_settings_made_when_set);
	th_case(su, "jitter_bound", test_jitter_bound);
	th_case(su, "record_max_independent", test_record_max_independent);
	th_case(su, "dead_level", test_dead_level);
	th_case(su, "concurrent_set", test_concurrent_set);
	th_case(su, "keep_free", test_keep_free);
	return th_run(su);
}
