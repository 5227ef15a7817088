/*
 * conf.h - configuration keys (doc/design.md §5): the key table, the value
 * parser, and the key=value files a level's settings live in. Which
 * level's value applies (inheritance) is level.h's tlog_level_conf; set,
 * get and unset on a level are levels.c's.
 */
#ifndef TLOG_CONF_H
#define TLOG_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"

#define TLOG_CONF_MSG_MAX 512	/* room for any message about a value */

/* key=value files: a missing file, or a stray in its place (anything
 * but a regular file: tlog_ctx_open_file), is all unset; bad lines are
 * logged through ctx (not at all if NULL: tests) and skipped; dir names
 * the level in log lines. Save writes the set keys atomically and
 * durably. */
void tlog_conf_init(struct tlog_conf *c);	/* all unset */
int tlog_conf_load(struct tlog_ctx *ctx, int dirfd, const char *dir,
    const char *path, struct tlog_conf *c);
int tlog_conf_save(int dirfd, const char *path, const struct tlog_conf *c);

/* A level's own value of k, or TLOG_UNSET: read with no lock (the append
 * path reads its settings before it locks the partition). */
static inline int64_t
tlog_conf_value(const struct tlog_conf *c, enum tlog_key k)
{
	return __atomic_load_n(&c->v[k], __ATOMIC_RELAXED);
}

static inline void
tlog_conf_assign(struct tlog_conf *c, enum tlog_key k, int64_t v)
{
	__atomic_store_n(&c->v[k], v, __ATOMIC_RELAXED);
}

int64_t tlog_key_default(enum tlog_key k);
/*
 * Parses a value for key k: a plain integer in the key's unit, or a number
 * with a unit suffix (ms s m h d w; K M G KiB MiB GiB). Leading and trailing
 * blanks (space, tab; design.md §5 says why) and one trailing newline, as
 * `echo` adds, are accepted. On a bad value returns -EINVAL and writes a
 * message naming the key, the value and the accepted range into err.
 */
int tlog_key_parse(enum tlog_key k, const char *s, size_t len, int64_t *out,
    char *err, size_t errlen);
/* The key bounding k from above (segment.ms for segment.jitter.ms), or
 * -1; and the message for a value over that bound's effective lim. */
int tlog_key_upper(enum tlog_key k);
void tlog_key_bad_value(enum tlog_key k, const char *s, size_t len,
    int64_t lim, char *err, size_t errlen);
/* The same message for any name: "NAME: bad value "S": accepted
 * ACCEPTED", S quoted (at most 40 bytes, escaped). */
void tlog_bad_value(const char *name, const char *s, size_t len,
    const char *accepted, char *err, size_t errlen);
/* The message for a key that does not exist. */
void tlog_key_unknown(const char *key, char *err, size_t errlen);

#endif /* TLOG_CONF_H */
