/*
 * appender.c - the small-append load of the benchmarks: W writer threads,
 * each with its own open(O_WRONLY|O_APPEND) of FILE, write N/W lines of
 * SIZE bytes (newline included), one write(2) per line, as nginx does.
 *
 *   appender [-n lines] [-w writers] [-s size] [-r lines_per_s] [-L] FILE
 *
 * -n  total lines (default 200000), split between the writers
 * -w  writer threads (default 1)
 * -s  line length in bytes, newline included (default 100, at least 11)
 * -r  throttle: total lines per second (default: as fast as possible)
 * -L  time every write(2) and report p50/p99/p99.9/max in microseconds
 *
 * Lines are numbered: line k (0 <= k < n, global) starts with k in nine
 * digits, so a reader can count lost or repeated lines. Writer i writes
 * k = i, i + W, i + 2W, ...
 *
 * Prints one line of key=value pairs on stdout:
 *   lines=200000 secs=4.123 lines_per_s=48507 [p50_us=.. p99_us=..]
 * Exit status 1 on any failed or short write.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *path;
static long nlines = 200000, nwriters = 1, size = 100;
static double rate;
static int lat;
static pthread_barrier_t barrier;

struct writer {
	pthread_t tid;
	long id;
	int failed;
	uint32_t *lat_ns;	/* per-write latency, -L */
	long nlat;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
run(void *arg)
{
	struct writer *w = arg;
	char *buf = malloc((size_t)size);
	double t0, t = 0, per = 0;
	long k, i = 0;
	int fd;

	if (buf == NULL) {
		w->failed = 1;
		return NULL;
	}
	memset(buf, 'x', (size_t)size);
	buf[size - 1] = '\n';
	buf[9] = ' ';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0) {
		fprintf(stderr, "appender: %s: %s\n", path, strerror(errno));
		w->failed = 1;
	}
	pthread_barrier_wait(&barrier);
	if (fd < 0) {
		free(buf);
		return NULL;
	}
	if (rate > 0)
		per = (double)nwriters / rate;	/* seconds per line, per writer */
	t0 = now();
	for (k = w->id; k < nlines; k += nwriters, i++) {
		char num[16];
		ssize_t r;

		snprintf(num, sizeof(num), "%09ld", k % 1000000000L);
		memcpy(buf, num, 9);
		if (per > 0 && (i & 63) == 0) {
			double due = t0 + (double)i * per;

			while ((t = now()) < due)
				usleep((useconds_t)((due - t) * 1e6) + 1);
		}
		if (lat)
			t = now();
		r = write(fd, buf, (size_t)size);
		if (lat) {
			double d = (now() - t) * 1e9;

			w->lat_ns[w->nlat++] = (uint32_t)(d > 4e9 ? 4e9 : d);
		}
		if (r != size) {
			fprintf(stderr, "appender: write: %s\n",
			    r < 0 ? strerror(errno) : "short write");
			w->failed = 1;
			break;
		}
	}
	close(fd);
	free(buf);
	return NULL;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	struct writer *ws;
	double t0, secs;
	int c, failed = 0;
	long i;

	while ((c = getopt(argc, argv, "n:w:s:r:L")) != -1) {
		switch (c) {
		case 'n': nlines = atol(optarg); break;
		case 'w': nwriters = atol(optarg); break;
		case 's': size = atol(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 'L': lat = 1; break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc || nlines < 1 || nwriters < 1 || size < 11)
		goto usage;
	path = argv[optind];
	ws = calloc((size_t)nwriters, sizeof(*ws));
	if (ws == NULL)
		return 1;
	pthread_barrier_init(&barrier, NULL, (unsigned)nwriters + 1);
	for (i = 0; i < nwriters; i++) {
		ws[i].id = i;
		if (lat && (ws[i].lat_ns = calloc((size_t)(nlines / nwriters +
		    1), sizeof(uint32_t))) == NULL)
			return 1;
		if (pthread_create(&ws[i].tid, NULL, run, &ws[i]) != 0)
			return 1;
	}
	pthread_barrier_wait(&barrier);
	t0 = now();
	for (i = 0; i < nwriters; i++) {
		pthread_join(ws[i].tid, NULL);
		failed |= ws[i].failed;
	}
	secs = now() - t0;
	printf("lines=%ld secs=%.4f lines_per_s=%.0f", nlines, secs,
	    (double)nlines / secs);
	if (lat) {
		long n = 0, j;
		uint32_t *all = calloc((size_t)nlines, sizeof(uint32_t));

		if (all == NULL)
			return 1;
		for (i = 0; i < nwriters; i++)
			for (j = 0; j < ws[i].nlat; j++)
				all[n++] = ws[i].lat_ns[j];
		qsort(all, (size_t)n, sizeof(*all), cmp_u32);
		if (n > 0)
			printf(" p50_us=%.1f p99_us=%.1f p999_us=%.1f "
			    "max_us=%.1f", all[n / 2] / 1e3,
			    all[n * 99 / 100] / 1e3, all[n * 999 / 1000] / 1e3,
			    all[n - 1] / 1e3);
		free(all);
	}
	printf("\n");
	return failed;
usage:
	fprintf(stderr, "usage: appender [-n lines] [-w writers] [-s size] "
	    "[-r lines_per_s] [-L] FILE\n");
	return 2;
}
