/*
 * fuzz_index.c - libFuzzer target for the index decoder: headers, entries
 * and seal footers. Decoding never reads out of bounds, and whatever
 * decodes re-encodes to the same bytes.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char b[TLOG_IDX_FOOT];
	struct tlog_idx_entry e;
	struct tlog_footer f;
	uint64_t base;
	size_t off;

	if (size >= TLOG_IDX_HDR && tlog_idx_decode_header(data, &base) == 0) {
		tlog_idx_encode_header(b, base,
		    tlog_idx_header_flags(data));
		/* Magic, version, flags and base: exact. */
		if (memcmp(b, data, TLOG_IDX_HDR) != 0)
			abort();
	}
	for (off = 0; off + TLOG_IDX_ENT <= size; off += TLOG_IDX_ENT) {
		if (tlog_idx_decode_entry(data + off, &e) != 0)
			continue;
		tlog_idx_encode_entry(b, &e);
		/* The data CRC word is carried: the round trip is exact. */
		if (memcmp(b, data + off, TLOG_IDX_ENT) != 0)
			abort();
	}
	if (size >= TLOG_IDX_FOOT &&
	    tlog_idx_decode_footer(data + size - TLOG_IDX_FOOT, &f) == 0) {
		tlog_idx_encode_footer(b, &f);
		if (memcmp(b, data + size - TLOG_IDX_FOOT, TLOG_IDX_FOOT) != 0)
			abort();
	}
	return 0;
}
