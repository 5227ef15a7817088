/*
 * agecheck - retention, watched from outside. A long-lived writer appends
 * "<ms> <seq>" to DIR/current every 100 ms while a sampler reads the whole
 * partition (every segment, oldest first) every 500 ms and checks:
 *
 *  - no line outlives retention.ms + segment.ms + 1 s (its age is taken
 *    at the start of the read, which only ever flatters the daemon by the
 *    read's own duration, a few ms);
 *  - no line younger than retention.ms is missing: every line whose
 *    write(2) returned before the read started and whose time is within
 *    retention.ms of the read's end is present;
 *  - lines are whole, in order, never twice.
 *
 *   agecheck DIR SECONDS RETENTION_MS SEGMENT_MS
 *
 * Prints one summary line and exits 0 if every sample passed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXLINES 100000

static const char *dir;
static int64_t ts_of[MAXLINES];		/* writer's time of line seq */
static int64_t acked_at[MAXLINES];	/* when its write(2) returned */
static long nacked;			/* lines acknowledged (atomic) */
static int done;			/* main tells the writer to stop (atomic) */

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *
writer(void *arg)
{
	char path[4096], line[64];
	long seq;
	int fd, n;

	(void)arg;
	snprintf(path, sizeof(path), "%s/current", dir);
	if ((fd = open(path, O_WRONLY | O_APPEND)) == -1) {
		perror("agecheck: open current");
		exit(2);
	}
	for (seq = 0; !__atomic_load_n(&done, __ATOMIC_ACQUIRE) &&
	    seq < MAXLINES; seq++) {
		ts_of[seq] = now_ms();
		n = snprintf(line, sizeof(line), "%lld %ld\n",
		    (long long)ts_of[seq], seq);
		if (write(fd, line, (size_t)n) != n) {
			perror("agecheck: write");
			exit(2);
		}
		acked_at[seq] = now_ms();
		__atomic_store_n(&nacked, seq + 1, __ATOMIC_RELEASE);
		usleep(100000);
	}
	close(fd);
	return NULL;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's names, sorted (digits before `current`), and the same
 * names joined into one string to compare listings. */
static char *
listing(char **names, size_t *n)
{
	struct dirent *de;
	char *all = NULL;
	size_t len = 0, i;
	DIR *d;

	*n = 0;
	if ((d = opendir(dir)) == NULL)
		return strdup("");
	while ((de = readdir(d)) != NULL && *n < 4096)
		if (de->d_name[0] != '.')
			names[(*n)++] = strdup(de->d_name);
	closedir(d);
	qsort(names, *n, sizeof(names[0]), name_cmp);
	for (i = 0; i < *n; i++) {
		all = realloc(all, len + strlen(names[i]) + 2);
		len += (size_t)sprintf(all + len, "%s/", names[i]);
	}
	return all != NULL ? all : strdup("");
}

/* Reads the named files in order, freeing the names. */
static char *
read_files(char **names, size_t n, size_t *len)
{
	char path[4096], *buf = NULL;
	size_t i, cap = 0;
	ssize_t r;
	int fd;

	*len = 0;
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		free(names[i]);
		/* A segment deleted since the listing is simply gone. */
		if ((fd = open(path, O_RDONLY)) == -1)
			continue;
		for (;;) {
			if (*len + 65536 > cap) {
				cap = (*len + 65536) * 2;
				buf = realloc(buf, cap);
			}
			if ((r = read(fd, buf + *len, 65536)) <= 0)
				break;
			*len += (size_t)r;
		}
		close(fd);
	}
	return buf;
}

/*
 * Reads every file of dir, oldest segment first, `current` last, as
 * cat of the whole directory does. A roll between the listing and the read of `current`
 * would hide the segment that just sealed (it was not listed, and
 * `current` is already the next one): such a read is seen by listing
 * again, and retried.
 */
static char *
read_partition(size_t *len)
{
	char *names[4096], *names2[4096], *before, *after, *buf;
	size_t n, n2, i;
	int tries, same;

	for (tries = 0;; tries++) {
		before = listing(names, &n);
		buf = read_files(names, n, len);
		after = listing(names2, &n2);
		for (i = 0; i < n2; i++)
			free(names2[i]);
		same = strcmp(before, after) == 0;
		free(before);
		free(after);
		if (same || tries == 20)
			return buf;
		free(buf);
	}
}

int
main(int argc, char **argv)
{
	int64_t secs, rms, sms, bound, t_start, t_end, age, max_age = 0;
	long samples = 0, too_old = 0, missing = 0, broken = 0;
	pthread_t th;

	if (argc != 5) {
		fprintf(stderr, "usage: agecheck DIR SECONDS RETENTION_MS "
		    "SEGMENT_MS\n");
		return 2;
	}
	dir = argv[1];
	secs = atoll(argv[2]);
	rms = atoll(argv[3]);
	sms = atoll(argv[4]);
	bound = rms + sms + 1000;
	pthread_create(&th, NULL, writer, NULL);
	int64_t end = now_ms() + secs * 1000;
	while (now_ms() < end) {
		size_t len, off = 0;
		long acked, prev = -1, first = -1, seq;
		long long ts;
		char *buf;

		usleep(500000);
		acked = __atomic_load_n(&nacked, __ATOMIC_ACQUIRE);
		t_start = now_ms();
		buf = read_partition(&len);
		t_end = now_ms();
		samples++;
		while (off < len) {
			char *nl = memchr(buf + off, '\n', len - off);
			if (nl == NULL || sscanf(buf + off, "%lld %ld", &ts,
			    &seq) != 2 || seq <= prev) {
				broken++;
				break;
			}
			if (first < 0)
				first = seq;
			if (seq != prev + 1 && prev >= 0)
				missing += seq - prev - 1;	/* a hole */
			prev = seq;
			off = (size_t)(nl - buf) + 1;
		}
		if (first >= 0) {
			age = t_start - ts_of[first];
			if (age > max_age)
				max_age = age;
			if (age > bound) {
				too_old++;
				fprintf(stderr, "agecheck: line %ld is %lld ms "
				    "old (bound %lld)\n", first,
				    (long long)age, (long long)bound);
			}
		}
		/* Lines acknowledged before the read and younger than
		 * retention.ms at its end must all be there. */
		for (seq = 0; seq < acked; seq++) {
			if (acked_at[seq] > t_start ||
			    ts_of[seq] < t_end - rms)
				continue;
			if (first < 0 || seq < first || seq > prev) {
				missing++;
				fprintf(stderr, "agecheck: line %ld (%lld ms "
				    "old) missing\n", seq,
				    (long long)(t_end - ts_of[seq]));
			}
		}
		free(buf);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	printf("samples %ld lines %ld max_age_ms %lld bound_ms %lld too_old %ld "
	    "missing %ld broken %ld\n", samples, nacked, (long long)max_age,
	    (long long)bound, too_old, missing, broken);
	return (too_old || missing || broken || samples == 0) ? 1 : 0;
}
