/*
 * levels.h - what a user changes on a level of the store's tree (the
 * store, a topic, a partition): settings, and the backing directory's
 * mode, owner and fsync. The calls themselves are in tlog.h
 * (tlog_conf_set, tlog_level_chmod, ...); this is what else the tests
 * use.
 */
#ifndef TLOG_LEVELS_H
#define TLOG_LEVELS_H

#include <stddef.h>

#include "store.h"

/* Path of a level's config file relative to the store's directory; the
 * caller holds the tree lock (read) so names are stable. */
int tlog_level_conf_path(struct tlog_store *s, struct tlog_topic *t,
    struct tlog_partition *p, char *buf, size_t len);

#endif /* TLOG_LEVELS_H */
