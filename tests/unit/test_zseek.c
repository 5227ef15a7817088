/*
 * test_zseek.c - the zstd seekable format (zseek.c): frames cut at record
 * ends, a record longer than a frame, an empty file, the seek table's
 * round trip, `zstd -d` decoding what the writer wrote, and a reader that
 * refuses a torn file, a garbage table and a frame that fails its
 * checksum while it still decodes the others.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testhelp.h"
#include "zseek.h"

/* Writes len bytes of data as a seekable file at path, frames cut as
 * the compressor cuts them; returns the number of frames. */
static size_t
zwrite(const char *path, const char *data, size_t len)
{
	struct tlog_zw w;
	uint64_t pos = 0;
	char *buf = malloc(TLOG_ZS_FRAME);
	size_t n;
	int fd, in;
	char ipath[4096];

	snprintf(ipath, sizeof(ipath), "%s.in", path);
	in = open(ipath, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(in, 0);
	ck_assert_int_eq(write(in, data, len), (ssize_t)len);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(tlog_zw_init(&w, fd, 3), 0);
	while (pos < len)
		ck_assert_int_eq(tlog_zw_from(&w, in, &pos, len, buf), 0);
	ck_assert_int_eq(tlog_zw_finish(&w), 0);
	n = w.n;
	tlog_zw_free(&w);
	close(fd);
	close(in);
	unlink(ipath);
	free(buf);
	return n;
}

/* Every frame decoded, concatenated; checks the table against the data. */
static char *
zread_all(const char *path, size_t *len)
{
	struct tlog_zs *t;
	char *out;
	uint32_t i;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(tlog_zs_load(fd, &t), 0);
	out = malloc(t->pos[t->n] + 1);
	for (i = 0; i < t->n; i++) {
		ck_assert_int_eq(tlog_zs_read_frame(fd, t, i, out + t->pos[i]),
		    0);
		ck_assert_uint_eq(tlog_zs_frame_at(t, t->pos[i]), i);
		ck_assert_uint_eq(tlog_zs_frame_at(t, t->pos[i + 1] - 1), i);
	}
	*len = t->pos[t->n];
	out[*len] = '\0';
	tlog_zs_free(t);
	close(fd);
	return out;
}

static char *
lines(size_t n, size_t *len)
{
	char *b = malloc(n * 64 + 1);
	size_t i, at = 0;

	for (i = 0; i < n; i++)
		at += (size_t)sprintf(b + at, "%zu GET /index.html?q=%zu 200 %zu\n",
		    i, i * 7919 % 1000, i % 13);
	*len = at;
	return b;
}

START_TEST(frames_end_at_record_ends)
{
	char path[4096], *data, *back;
	struct tlog_zs *t;
	size_t len, blen, nf;
	uint32_t i;
	int fd;

	data = lines(40000, &len);	/* about 1.3 MB */
	snprintf(path, sizeof(path), "%s/a.zst", th_dir);
	nf = zwrite(path, data, len);
	ck_assert_uint_ge(nf, len / TLOG_ZS_FRAME);
	back = zread_all(path, &blen);
	ck_assert_uint_eq(blen, len);
	ck_assert(memcmp(back, data, len) == 0);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(tlog_zs_load(fd, &t), 0);
	ck_assert_uint_eq(t->n, nf);
	for (i = 0; i < t->n; i++) {
		ck_assert_uint_le(t->pos[i + 1] - t->pos[i], TLOG_ZS_FRAME);
		ck_assert_int_eq(data[t->pos[i + 1] - 1], '\n');
	}
	tlog_zs_free(t);
	close(fd);
	free(back);
	free(data);
}
END_TEST

START_TEST(a_record_longer_than_a_frame)
{
	size_t big = 2 * TLOG_ZS_FRAME + 1000, len = big + 3 + 5, blen;
	char path[4096], *data = malloc(len), *back;
	struct tlog_zs *t;
	int fd;

	memcpy(data, "ab\n", 3);
	memset(data + 3, 'x', big - 1);
	data[3 + big - 1] = '\n';
	memcpy(data + 3 + big, "tail", 4);	/* no newline at the end */
	data[len - 1] = '!';
	snprintf(path, sizeof(path), "%s/b.zst", th_dir);
	zwrite(path, data, len);
	back = zread_all(path, &blen);
	ck_assert_uint_eq(blen, len);
	ck_assert(memcmp(back, data, len) == 0);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(tlog_zs_load(fd, &t), 0);
	/* "ab\n" alone (the big record does not fit after it), the big one
	 * in whole frames, then its end with the tail. */
	ck_assert_uint_eq(t->pos[1], 3);
	ck_assert_uint_eq(t->pos[2] - t->pos[1], TLOG_ZS_FRAME);
	ck_assert_uint_eq(t->pos[3] - t->pos[2], TLOG_ZS_FRAME);
	ck_assert_uint_eq(t->n, 4);
	tlog_zs_free(t);
	close(fd);
	free(back);
	free(data);
}
END_TEST

START_TEST(an_empty_file_has_an_empty_table)
{
	char path[4096];
	struct tlog_zs *t;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/e.zst", th_dir);
	ck_assert_uint_eq(zwrite(path, "", 0), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 8 + TLOG_ZS_FOOT);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(tlog_zs_load(fd, &t), 0);
	ck_assert_uint_eq(t->n, 0);
	ck_assert_uint_eq(t->pos[0], 0);
	tlog_zs_free(t);
	close(fd);
}
END_TEST

/* The zstd command, if installed, reads what the writer wrote: the file
 * in the store stays readable without tlogfs. */
START_TEST(zstd_decodes_it)
{
	char path[4096], cmd[8192], *data, *back;
	size_t len, blen;

	if (system("command -v zstd >/dev/null 2>&1") != 0) {
		fprintf(stderr, "# zstd not installed: not run\n");
		return;
	}
	data = lines(30000, &len);
	snprintf(path, sizeof(path), "%s/c.zst", th_dir);
	zwrite(path, data, len);
	snprintf(cmd, sizeof(cmd), "zstd -q -d -c %s >%s/c.out && "
	    "zstd -q -d -c %s/e.zst >%s/e.out", path, th_dir, th_dir, th_dir);
	snprintf(path, sizeof(path), "%s/e.zst", th_dir);
	zwrite(path, "", 0);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/c.out", th_dir);
	back = th_slurp(path, &blen);
	ck_assert_uint_eq(blen, len);
	ck_assert(memcmp(back, data, len) == 0);
	free(back);
	snprintf(path, sizeof(path), "%s/e.out", th_dir);
	back = th_slurp(path, &blen);
	ck_assert_uint_eq(blen, 0);
	free(back);
	free(data);
}
END_TEST

START_TEST(torn_or_garbage_tables_are_refused)
{
	char path[4096], *data;
	struct tlog_zs *t;
	struct stat st;
	size_t len;
	int fd;

	data = lines(20000, &len);
	snprintf(path, sizeof(path), "%s/d.zst", th_dir);
	zwrite(path, data, len);
	ck_assert_int_eq(stat(path, &st), 0);
	fd = open(path, O_RDWR);
	/* A byte of the table's frame count. */
	ck_assert_int_eq(pwrite(fd, "\x7f", 1, st.st_size - 9), 1);
	ck_assert_int_eq(tlog_zs_load(fd, &t), -EBADMSG);
	ck_assert_int_eq(pwrite(fd, data, 9, st.st_size - 9), 9);
	ck_assert_int_eq(tlog_zs_load(fd, &t), -EBADMSG);
	/* Torn: cut anywhere before its end. */
	ck_assert_int_eq(ftruncate(fd, st.st_size / 2), 0);
	ck_assert_int_eq(tlog_zs_load(fd, &t), -EBADMSG);
	ck_assert_int_eq(ftruncate(fd, 3), 0);
	ck_assert_int_eq(tlog_zs_load(fd, &t), -EBADMSG);
	close(fd);
	free(data);
}
END_TEST

START_TEST(a_bad_frame_loses_only_itself)
{
	char path[4096], *data, *out;
	struct tlog_zs *t;
	size_t len;
	uint32_t i;
	char c;
	int fd;

	data = lines(30000, &len);
	snprintf(path, sizeof(path), "%s/f.zst", th_dir);
	zwrite(path, data, len);
	fd = open(path, O_RDWR);
	ck_assert_int_eq(tlog_zs_load(fd, &t), 0);
	ck_assert_uint_ge(t->n, 3);
	/* One byte in the middle of frame 1. */
	ck_assert_int_eq(pread(fd, &c, 1, (off_t)(t->zpos[1] + 100)), 1);
	c ^= 0x20;
	ck_assert_int_eq(pwrite(fd, &c, 1, (off_t)(t->zpos[1] + 100)), 1);
	out = malloc(TLOG_ZS_FRAME);
	for (i = 0; i < t->n; i++) {
		int r = tlog_zs_read_frame(fd, t, i, out);

		if (i == 1) {
			ck_assert_int_eq(r, -EBADMSG);
			continue;
		}
		ck_assert_int_eq(r, 0);
		ck_assert(memcmp(out, data + t->pos[i],
		    t->pos[i + 1] - t->pos[i]) == 0);
	}
	free(out);
	tlog_zs_free(t);
	close(fd);
	free(data);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("zseek");

	TH_CASE(s, frames_end_at_record_ends);
	TH_CASE(s, a_record_longer_than_a_frame);
	TH_CASE(s, an_empty_file_has_an_empty_table);
	TH_CASE(s, zstd_decodes_it);
	TH_CASE(s, torn_or_garbage_tables_are_refused);
	TH_CASE(s, a_bad_frame_loses_only_itself);
	return th_run(s);
}
