/*
 * fuzz_recover.c - libFuzzer target for recovery. The input becomes a
 * partition's files (a data file and its index, split by the first two
 * bytes; optionally a second segment), and the store must open, serve
 * whole records whose segment names chain, and take an append.
 */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[] = "/tmp/tlogfuzzrec.XXXXXX";
static char store[64];

static void
quiet(void *arg, int prio, const char *msg)
{
	(void)arg;
	(void)prio;
	(void)msg;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
put(const char *name, const uint8_t *b, size_t n)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/t/0/%s", store, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd == -1 || write(fd, b, n) != (ssize_t)n)
		abort();
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tlog_store_opts o;
	struct tlog_store *s;
	struct tlog_topic *t;
	struct tlog_partition *p;
	struct tlog_writer *w;
	struct tlog_seginfo *si;
	char err[512], path[256];
	size_t n, i, split;
	int fd;

	if (root[strlen(root) - 1] == 'X' && mkdtemp(root) == NULL)
		abort();
	snprintf(store, sizeof(store), "%s/s", root);
	nftw(store, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	mkdir(store, 0700);
	/* A store already (tlogfs makes a new one only in an empty
	 * directory): its format file first. */
	snprintf(path, sizeof(path), "%s/.tlogfs", store);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.tlogfs/format", store);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, "tlogfs 1\n", 9) != 9)
		abort();
	close(fd);
	snprintf(path, sizeof(path), "%s/t", store);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/t/0", store);
	mkdir(path, 0755);
	if (size < 3)
		return 0;
	split = ((size_t)data[0] << 8 | data[1]) % (size - 2);
	data += 2;
	size -= 2;
	put("00000000000000000000.log", data, split);
	put("00000000000000000000.idx", data + split, size - split);
	if (size > 64 && (data[0] & 1))
		put("00000000000000000005.log", data, size / 3);
	memset(&o, 0, sizeof(o));
	o.log = quiet;
	if (tlog_store_open(store, &o, &s, err, sizeof(err)) != 0)
		abort();	/* one bad segment never stops the open */
	t = tlog_topic_get(s, "t");
	p = t ? tlog_partition_get(t, "0") : NULL;
	if (p == NULL)
		abort();
	if (tlog_partition_segments(p, &si, &n) != 0)
		abort();
	for (i = 0; i < n; i++) {
		struct tlog_segment *seg = tlog_segment_get(p, si[i].base);
		char *buf = malloc(si[i].bytes + 1);
		int fd = seg ? tlog_segment_open(seg) : -1;

		if (fd < 0 || buf == NULL || tlog_segment_read(seg, fd, buf,
		    si[i].bytes, 0) != (ssize_t)si[i].bytes)
			abort();
		if (i + 1 < n && !si[i].sealed)
			abort();
		tlog_segment_close(seg, fd);
		free(buf);
		tlog_segment_put(seg);
	}
	free(si);
	w = tlog_writer_open(p);
	if (tlog_writer_write(w, "appended\n", 9) != 9)
		abort();
	tlog_writer_close(w);
	tlog_partition_put(p);
	tlog_topic_put(t);
	tlog_store_close(s);
	return 0;
}
