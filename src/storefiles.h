/*
 * storefiles.h - the store's own files and directory (storefiles.c),
 * called by store.c at open and close. Each returns 0 or -errno with a
 * message in err, or logs what it could not do and goes on.
 */
#ifndef TLOG_STOREFILES_H
#define TLOG_STOREFILES_H

#include "store.h"

/* The directory is the daemon's and nobody else may write it. */
int tlog_sf_private(struct tlog_store *s, char *err, size_t errlen);
/* .tlogfs/ and its format (made for a new store: s->created). */
int tlog_sf_layout(struct tlog_store *s, char *err, size_t errlen);
/* .tlogfs/format raised to TLOG_FORMAT_ZSTD (atomically, durably), once,
 * before the first segment is compressed: 0 or -errno (logged). */
int tlog_sf_format_zstd(struct tlog_store *s);
/* The lock: flock, and the writer's pid in it. */
int tlog_sf_lock(struct tlog_store *s, char *err, size_t errlen);
/* The mount root's attr, then the directory made 0700. */
void tlog_sf_root_attr_load(struct tlog_store *s);
/* Whether the last close was clean; takes the mark and its checkpoint. */
int tlog_sf_clean_mark(struct tlog_store *s, char *err, size_t errlen);
/* The store's identity, made if missing. */
int tlog_sf_ident(struct tlog_store *s, char *err, size_t errlen);
/* The kernel's boot id (or a test's), and the one of the last open ("" if
 * none was recorded). */
void tlog_sf_boot_id(const struct tlog_store_opts *o, char *buf, size_t len);
void tlog_sf_last_boot(struct tlog_store *s, char *buf, size_t len);
/* name (.tlogfs, .tlogfs/events) is a directory, or missing. */
int tlog_sf_own_dir(struct tlog_store *s, const char *name, char *err,
    size_t errlen);
/* Sets aside want bytes in .tlogfs/reserve for a clean stop. */
void tlog_sf_reserve(struct tlog_store *s, uint64_t want);

#endif /* TLOG_STOREFILES_H */
