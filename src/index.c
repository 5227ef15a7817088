/*
 * index.c - the sparse index file's byte encoding (index.h, doc/format.md):
 * a torn or corrupt entry or footer fails its CRC-32C and is cut rather
 * than trusted; recovery checks the entries' data CRCs after a power cut.
 */
#include "config.h"

#include <string.h>

#include "index.h"
#include "util.h"

void
tlog_put32(unsigned char *b, uint32_t v)
{
	b[0] = v;
	b[1] = v >> 8;
	b[2] = v >> 16;
	b[3] = v >> 24;
}

void
tlog_put64(unsigned char *b, uint64_t v)
{
	tlog_put32(b, (uint32_t)v);
	tlog_put32(b + 4, (uint32_t)(v >> 32));
}

uint32_t
tlog_get32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	    (uint32_t)b[3] << 24;
}

uint64_t
tlog_get64(const unsigned char *b)
{
	return (uint64_t)tlog_get32(b) | (uint64_t)tlog_get32(b + 4) << 32;
}

void
tlog_idx_encode_header(unsigned char *b, uint64_t base, uint32_t flags)
{
	memcpy(b, TLOG_IDX_MAGIC, 8);
	tlog_put32(b + 8, TLOG_IDX_VERSION);
	tlog_put32(b + 12, flags);
	tlog_put64(b + 16, base);
}

uint32_t
tlog_idx_header_flags(const unsigned char *b)
{
	return tlog_get32(b + 12);
}

int
tlog_idx_decode_header(const unsigned char *b, uint64_t *base)
{
	if (memcmp(b, TLOG_IDX_MAGIC, 8) != 0 ||
	    tlog_get32(b + 8) != TLOG_IDX_VERSION)
		return -1;
	*base = tlog_get64(b + 16);
	return 0;
}

void
tlog_idx_encode_entry(unsigned char *b, const struct tlog_idx_entry *e)
{
	tlog_put32(b, e->rel);
	tlog_put32(b + 4, e->pos);
	tlog_put64(b + 8, (uint64_t)e->ts);
	tlog_put32(b + 16, e->crc);
	tlog_put32(b + 20, tlog_crc32c(0, b, 20));
}

int
tlog_idx_decode_entry(const unsigned char *b, struct tlog_idx_entry *e)
{
	if (tlog_get32(b + 20) != tlog_crc32c(0, b, 20))
		return -1;
	e->rel = tlog_get32(b);
	e->pos = tlog_get32(b + 4);
	e->ts = (int64_t)tlog_get64(b + 8);
	e->crc = tlog_get32(b + 16);
	return 0;
}

void
tlog_idx_encode_footer(unsigned char *b, const struct tlog_footer *f)
{
	memcpy(b, TLOG_SEAL_MAGIC, 8);
	tlog_put64(b + 8, f->records);
	tlog_put64(b + 16, f->bytes);
	tlog_put64(b + 24, (uint64_t)f->first_ts);
	tlog_put64(b + 32, (uint64_t)f->max_ts);
	tlog_put32(b + 40, f->sealed_by);
	tlog_put32(b + 44, tlog_crc32c(0, b, 44));
}

int
tlog_idx_decode_footer(const unsigned char *b, struct tlog_footer *f)
{
	if (memcmp(b, TLOG_SEAL_MAGIC, 8) != 0 ||
	    tlog_get32(b + 44) != tlog_crc32c(0, b, 44))
		return -1;
	f->records = tlog_get64(b + 8);
	f->bytes = tlog_get64(b + 16);
	f->first_ts = (int64_t)tlog_get64(b + 24);
	f->max_ts = (int64_t)tlog_get64(b + 32);
	f->sealed_by = tlog_get32(b + 40);
	return tlog_seal_sane(f->records, f->bytes) ? 0 : -1;
}

bool
tlog_seal_sane(uint64_t records, uint64_t bytes)
{
	return records > 0 && records <= bytes && bytes <= TLOG_CAP_BYTES;
}
