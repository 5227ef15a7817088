/*
 * fuzz_config.c - libFuzzer target for the config value parser and the
 * key=value file loader. Every input must be accepted or refused cleanly;
 * an accepted value must lie in its key's range and survive a save/load
 * round trip unchanged.
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/tlogfuzzcfg.XXXXXX";
static int dirfd_ = -1;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tlog_conf c, c2;
	char err[512];
	char canon[64];
	int64_t v, v2;
	int k, fd;

	if (dirfd_ == -1) {
		if (mkdtemp(dir) == NULL)
			abort();
		dirfd_ = open(dir, O_RDONLY | O_DIRECTORY);
	}
	for (k = 0; k < TLOG_NKEYS; k++) {
		err[0] = '\0';
		if (tlog_key_parse(k, (const char *)data, size, &v, err,
		    sizeof(err)) == 0) {
			/* -1, a non-negative value, or (keep.free only) a
			 * percentage; its canonical form parses back to it. */
			if (v < -1 && !(k == TLOG_RETENTION_KEEP_FREE &&
			    TLOG_PCT_IS(v)))
				abort();
			tlog_key_format(k, v, canon, sizeof(canon));
			if (tlog_key_parse(k, canon, strlen(canon), &v2, err,
			    sizeof(err)) != 0 || v2 != v)
				abort();
		} else if (strstr(err, tlog_key_name(k)) == NULL)
			abort();	/* a refusal names its key */
	}
	/* The same bytes as a config file. */
	fd = openat(dirfd_, "cfg", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd == -1 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	if (tlog_conf_load(NULL, dirfd_, "", "cfg", &c) != 0)
		return 0;
	if (tlog_conf_save(dirfd_, "cfg2", &c) != 0 ||
	    tlog_conf_load(NULL, dirfd_, "", "cfg2", &c2) != 0)
		abort();
	if (memcmp(&c, &c2, sizeof(c)) != 0)
		abort();
	return 0;
}
