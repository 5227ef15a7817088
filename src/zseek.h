/*
 * zseek.h - the zstd seekable format (doc/format.md, "Compressed
 * segments"): independent zstd frames, each with its content checksum,
 * then a seek table in a skippable frame, so that `zstd -d` and
 * `zstdcat` print the plain bytes and a reader decompresses only the
 * frames it needs. The writer appends frames to a descriptor and ends
 * with the table; the reader loads the table and decodes one frame.
 *
 * Seek table (all integers little-endian), the last bytes of the file:
 *   u32 0x184D2A5E (skippable frame), u32 size of what follows,
 *   per frame: u32 compressed size, u32 plain size, u32 checksum (the low
 *   32 bits of the XXH64 of its plain bytes: the frame's own trailer),
 *   u32 number of frames, u8 descriptor (0x80: checksums present),
 *   u32 0x8F92EAB1.
 */
#ifndef TLOG_ZSEEK_H
#define TLOG_ZSEEK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most plain bytes one frame holds. Frames end at a record's end
 * (a newline) unless one record fills the whole frame. At 128 KiB zstd
 * picks its parameters for small inputs, which on log lines makes the
 * frames together as small as one frame of the whole (0.96-1.08x at
 * level 3, doc/performance.md, workload 12), and one frame decodes in
 * about 0.1 ms. A reader takes frames of up to TLOG_ZS_FRAME_MAX, so
 * the writer's size may change without a new format. */
#define TLOG_ZS_FRAME (128 * 1024)
#define TLOG_ZS_FRAME_MAX (1024 * 1024)
#define TLOG_ZS_SKIP_MAGIC 0x184D2A5EU
#define TLOG_ZS_MAGIC 0x8F92EAB1U
#define TLOG_ZS_FOOT 9
#define TLOG_ZS_F_SUM 0x80

/* A writer: frames appended to fd, which it writes from its start. */
struct tlog_zw {
	void *cctx;
	int fd;
	uint64_t zpos;			/* bytes written to fd */
	unsigned char *e;		/* the table's entries, as written */
	size_t n, cap;
	void *zbuf;
	size_t zcap;
};

/* 0 or -ENOMEM; level 1..19. */
int tlog_zw_init(struct tlog_zw *w, int fd, int level);
/* Reads the next frame's plain bytes from infd at *pos (below end) into
 * buf (TLOG_ZS_FRAME bytes), cuts it at a record's end and writes it;
 * advances *pos. 0 or -errno (-EIO: the file ended early). */
int tlog_zw_from(struct tlog_zw *w, int infd, uint64_t *pos, uint64_t end,
    void *buf);
/* The seek table, after the last frame; 0 or -errno. */
int tlog_zw_finish(struct tlog_zw *w);
void tlog_zw_free(struct tlog_zw *w);

/* A loaded seek table: frame i holds plain bytes [pos[i], pos[i+1]) at
 * [zpos[i], zpos[i+1]) of the file; pos[n] is the plain size, zpos[n]
 * where the table starts. zpos follows pos in one allocation. */
struct tlog_zs {
	uint32_t n;
	uint64_t *pos;
	uint64_t *zpos;
};

/* Loads and checks fd's seek table: -EBADMSG if it is missing, torn or
 * does not describe the file exactly; -ENOMEM, -errno. */
int tlog_zs_load(int fd, struct tlog_zs **out);
/* Without the table: the plain bytes of fd's whole frames from its start
 * on, by their headers (nothing decoded), up to the first that is not
 * whole or not a data frame. 0, -ENOMEM or -errno. */
int tlog_zs_walk(int fd, uint64_t *plain);
void tlog_zs_free(struct tlog_zs *t);
/* The frame holding plain position pos (< pos[n]). */
uint32_t tlog_zs_frame_at(const struct tlog_zs *t, uint64_t pos);
/* Decodes frame i into dst (pos[i+1] - pos[i] bytes, at most
 * TLOG_ZS_FRAME_MAX): 0, -EBADMSG if
 * it fails its checksum or does not decode to exactly its size,
 * -ENOMEM or -errno. */
int tlog_zs_read_frame(int fd, const struct tlog_zs *t, uint32_t i,
    void *dst);

#endif /* TLOG_ZSEEK_H */
