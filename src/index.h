/*
 * index.h - the sparse index file's byte encoding (doc/format.md): a
 * header, entries, and a footer once the segment is sealed, each entry
 * and the footer with its CRC-32C. All integers are little-endian.
 */
#ifndef TLOG_INDEX_H
#define TLOG_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#define TLOG_IDX_MAGIC "TLOGIDX1"	/* 8 bytes, header */
#define TLOG_SEAL_MAGIC "TLOGSEAL"	/* 8 bytes, footer */
#define TLOG_IDX_VERSION 1
#define TLOG_IDX_HDR 24		/* magic, version u32, flags u32, base u64 */
#define TLOG_IDX_ENT 24		/* rel u32, pos u32, ts i64, data crc u32,
				   crc u32 */
#define TLOG_IDX_FOOT 48	/* magic, records, bytes, first_ts, max_ts,
				   sealed_by u32, crc u32 */
#define TLOG_IDX_INTERVAL 4096	/* bytes of data between index entries */
/* What a segment may hold, bounded by the entries' 32-bit fields. */
#define TLOG_CAP_RECORDS 0xfffffffeULL
#define TLOG_CAP_BYTES 0xffffffffULL
/* Header flag: each entry carries the CRC-32C of the data between the
 * previous entry's position and its own. */
#define TLOG_IDX_F_DATACRC 0x1

struct tlog_idx_entry {
	uint32_t rel;		/* offset - base */
	uint32_t pos;		/* byte position in the data file */
	int64_t ts;
	uint32_t crc;		/* data CRC since the previous entry */
};

struct tlog_footer {
	uint64_t records;
	uint64_t bytes;
	int64_t first_ts;
	int64_t max_ts;
	uint32_t sealed_by;
};

void tlog_idx_encode_header(unsigned char *b, uint64_t base, uint32_t flags);
int tlog_idx_decode_header(const unsigned char *b, uint64_t *base);
uint32_t tlog_idx_header_flags(const unsigned char *b);
void tlog_idx_encode_entry(unsigned char *b, const struct tlog_idx_entry *e);
int tlog_idx_decode_entry(const unsigned char *b, struct tlog_idx_entry *e);
void tlog_idx_encode_footer(unsigned char *b, const struct tlog_footer *f);
/* -1 unless b is a footer whose CRC holds and which a sealed segment
 * can have (tlog_seal_sane). */
int tlog_idx_decode_footer(const unsigned char *b, struct tlog_footer *f);
/* What a sealed segment can hold, wherever its counts are read from (a
 * footer, a checkpoint entry): at least one record, each of at least one
 * byte, within a segment's capacity. */
bool tlog_seal_sane(uint64_t records, uint64_t bytes);

/* Little-endian integers, as every tlogfs file stores them. */
void tlog_put32(unsigned char *b, uint32_t v);
void tlog_put64(unsigned char *b, uint64_t v);
uint32_t tlog_get32(const unsigned char *b);
uint64_t tlog_get64(const unsigned char *b);

#endif /* TLOG_INDEX_H */
