/*
 * index.c - encoding of the sparse index file (doc/format.md).
 *
 * An index file is a 24-byte header, then 24-byte entries (offset relative
 * to the segment's base, data position, timestamp), then, once the segment
 * is sealed, a 48-byte footer. Every entry and the footer carry a CRC-32C,
 * so a torn or corrupt tail is recognised and cut rather than trusted;
 * with TLOG_IDX_F_DATACRC in the header, each entry also carries the
 * CRC-32C of the data since the previous entry, which recovery checks
 * after a power cut.
 * All integers are little-endian.
 */
#include "config.h"

#include <string.h>

#include "index.h"
#include "util.h"

static void
put32(unsigned char *b, uint32_t v)
{
	b[0] = v;
	b[1] = v >> 8;
	b[2] = v >> 16;
	b[3] = v >> 24;
}

static void
put64(unsigned char *b, uint64_t v)
{
	put32(b, (uint32_t)v);
	put32(b + 4, (uint32_t)(v >> 32));
}

static uint32_t
get32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	    (uint32_t)b[3] << 24;
}

static uint64_t
get64(const unsigned char *b)
{
	return (uint64_t)get32(b) | (uint64_t)get32(b + 4) << 32;
}

void
tlog_idx_encode_header(unsigned char *b, uint64_t base, uint32_t flags)
{
	memcpy(b, TLOG_IDX_MAGIC, 8);
	put32(b + 8, TLOG_IDX_VERSION);
	put32(b + 12, flags);
	put64(b + 16, base);
}

uint32_t
tlog_idx_header_flags(const unsigned char *b)
{
	return get32(b + 12);
}

int
tlog_idx_decode_header(const unsigned char *b, uint64_t *base)
{
	if (memcmp(b, TLOG_IDX_MAGIC, 8) != 0 ||
	    get32(b + 8) != TLOG_IDX_VERSION)
		return -1;
	*base = get64(b + 16);
	return 0;
}

void
tlog_idx_encode_entry(unsigned char *b, const struct tlog_idx_entry *e)
{
	put32(b, e->rel);
	put32(b + 4, e->pos);
	put64(b + 8, (uint64_t)e->ts);
	put32(b + 16, e->crc);
	put32(b + 20, tlog_crc32c(0, b, 20));
}

int
tlog_idx_decode_entry(const unsigned char *b, struct tlog_idx_entry *e)
{
	if (get32(b + 20) != tlog_crc32c(0, b, 20))
		return -1;
	e->rel = get32(b);
	e->pos = get32(b + 4);
	e->ts = (int64_t)get64(b + 8);
	e->crc = get32(b + 16);
	return 0;
}

void
tlog_idx_encode_footer(unsigned char *b, const struct tlog_footer *f)
{
	memcpy(b, TLOG_SEAL_MAGIC, 8);
	put64(b + 8, f->records);
	put64(b + 16, f->bytes);
	put64(b + 24, (uint64_t)f->first_ts);
	put64(b + 32, (uint64_t)f->max_ts);
	put32(b + 40, f->sealed_by);
	put32(b + 44, tlog_crc32c(0, b, 44));
}

int
tlog_idx_decode_footer(const unsigned char *b, struct tlog_footer *f)
{
	if (memcmp(b, TLOG_SEAL_MAGIC, 8) != 0 ||
	    get32(b + 44) != tlog_crc32c(0, b, 44))
		return -1;
	f->records = get64(b + 8);
	f->bytes = get64(b + 16);
	f->first_ts = (int64_t)get64(b + 24);
	f->max_ts = (int64_t)get64(b + 32);
	f->sealed_by = get32(b + 40);
	return 0;
}
