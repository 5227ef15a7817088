/*
 * storefiles.h - the store's own files and directory (storefiles.c),
 * called by store.c at open and close.
 */
#ifndef TLOG_STOREFILES_H
#define TLOG_STOREFILES_H

#include "store.h"

/*
 * The open's part (s->tree.dirfd open), in order: the directory private,
 * .tlogfs/ and its format, the lock, the mount root's attr, the clean
 * mark and its checkpoint, the identity, the boot ids (boot: this boot's,
 * prev: the last open's, "" if unknown, len bytes each; s->rc.verify set
 * from them), .tlogfs/events a directory or missing. 0, or -errno with a
 * message in err; what it cannot do but need not refuse is logged.
 */
int tlog_sf_open(struct tlog_store *s, char *boot, char *prev, size_t len,
    char *err, size_t errlen);
/* .tlogfs/format raised to TLOG_FORMAT_ZSTD (atomically, durably), once,
 * before the first segment is compressed: 0 or -errno (logged). */
int tlog_sf_format_zstd(struct tlog_store *s);
/* Sets aside want bytes in .tlogfs/reserve for a clean stop. */
void tlog_sf_reserve(struct tlog_store *s, uint64_t want);

#endif /* TLOG_STOREFILES_H */
