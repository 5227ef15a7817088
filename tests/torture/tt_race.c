/*
 * tt_race - races one namespace change against the first append to a
 * fresh, empty partition, over and over, and checks each outcome at
 * once, in the mount and in the backing store.
 *
 *   tt_race rename|rmdir MNT STORE TOPIC SECONDS
 *
 * rename: iteration i makes TOPIC/a<i> holding one record ("a<i>"), an
 * empty TOPIC/v<i> and a descriptor open for append on v<i>'s current;
 * then one thread renames a<i> over v<i> while another appends "v<i>" to
 * that descriptor. The contract (doc/design.md §6, "rename or rmdir
 * racing an append"): the append lands in v<i> (and the rename then
 * fails with ENOTEMPTY) or fails with ENOENT (v<i> was replaced). So:
 *   - both may not succeed;
 *   - afterwards TOPIC/v<i> holds exactly the records of the partition
 *     that won: "a<i>" if the rename did, else "v<i>" if the append did;
 *     in the mount and in the store's segment files alike;
 *   - STORE/TOPIC/v<i> holds no file but segments and .config/.next.
 * rmdir: iteration i makes an empty TOPIC/x<i> and a descriptor open for
 * append on its current; one thread removes x<i> and at once makes it
 * again, the other appends "x<i>". Both succeeding is the same breach;
 * and the new x<i> must be empty, in the mount and in the store.
 *
 * The two threads start together and each waits a random 0-100 us first,
 * so the append falls at every point of the rename's or rmdir's work.
 * Prints the outcome counts and each breach (the first 10); exits 1 if
 * there was one, 2 on a set-up error.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *mnt, *store, *topic;
static int fd;
static char rec[64];
static int wr_err;
static unsigned wr_delay;
static pthread_barrier_t go;
static unsigned long breaches;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
spin(unsigned usec)
{
	double until = now() + usec / 1e6;

	while (now() < until)
		;
}

static const char *
ename(int e)
{
	const char *n;

	if (e == 0)
		return "OK";
	n = strerrorname_np(e);
	return n != NULL ? n : "E?";
}

static void
breach(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void
breach(const char *fmt, ...)
{
	va_list ap;

	if (breaches++ >= 10)
		return;
	printf("BREACH: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void *
writer(void *arg)
{
	ssize_t n;

	(void)arg;
	pthread_barrier_wait(&go);
	spin(wr_delay);
	n = write(fd, rec, strlen(rec));
	wr_err = n == (ssize_t)strlen(rec) ? 0 : n == -1 ? errno : EIO;
	return NULL;
}

/* The records of a partition, as one string: the mount's files in name
 * order (with -m the mount, else the store's *.log). Strays (anything
 * but segments, .config and .next) are appended as "<stray NAME>". */
static void
contents(const char *dir, int mount, char *out, size_t outlen)
{
	struct dirent **de;
	char p[8192];
	int i, n, f;
	ssize_t r;
	size_t len = 0;

	out[0] = '\0';
	if ((n = scandir(dir, &de, NULL, alphasort)) == -1) {
		snprintf(out, outlen, "<%s>", strerror(errno));
		return;
	}
	for (i = 0; i < n; i++) {
		const char *nm = de[i]->d_name;
		size_t l = strlen(nm);

		if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 ||
		    strcmp(nm, ".config") == 0 || strcmp(nm, ".next") == 0 ||
		    (!mount && l == 24 && strcmp(nm + 20, ".idx") == 0)) {
			free(de[i]);
			continue;
		}
		if (mount ? !(strcmp(nm, "current") == 0 ||
		    (l == 24 && strcmp(nm + 20, ".log") == 0)) :
		    !(l == 24 && strcmp(nm + 20, ".log") == 0)) {
			len += (size_t)snprintf(out + len, outlen - len,
			    "<stray %s>", nm);
			if (len >= outlen)
				len = outlen - 1;
			free(de[i]);
			continue;
		}
		snprintf(p, sizeof(p), "%s/%s", dir, nm);
		if ((f = open(p, O_RDONLY)) != -1) {
			while (len < outlen - 1 &&
			    (r = read(f, out + len, outlen - 1 - len)) > 0)
				len += (size_t)r;
			close(f);
		}
		out[len] = '\0';
		free(de[i]);
	}
	free(de);
}

/* Both views of TOPIC/NAME must hold exactly want. */
static void
expect(unsigned long i, const char *name, const char *want,
    const char *what)
{
	char d[4096], got[512];
	int mount;

	for (mount = 1; mount >= 0; mount--) {
		snprintf(d, sizeof(d), "%s/%s/%s", mount ? mnt : store, topic,
		    name);
		contents(d, mount, got, sizeof(got));
		if (strcmp(got, want) != 0)
			breach("%lu: after %s, %s %s holds \"%s\", not \"%s\"",
			    i, what, mount ? "the mount's" : "the store's",
			    name, got, want);
	}
}

static int
put(const char *path, const char *s)
{
	int f = open(path, O_WRONLY | O_APPEND), r = 0;

	if (f == -1 || write(f, s, strlen(s)) != (ssize_t)strlen(s))
		r = -1;
	if (f != -1)
		close(f);
	return r;
}

int
main(int argc, char *argv[])
{
	unsigned long i, count[2][256];
	char a[4096], v[4096], cur[4200], want[64], what[128];
	double deadline;
	pthread_t th;
	int ren, k, mode_rename;

	if (argc != 6 || (strcmp(argv[1], "rename") != 0 &&
	    strcmp(argv[1], "rmdir") != 0)) {
		fprintf(stderr, "usage: tt_race rename|rmdir MNT STORE TOPIC "
		    "SECONDS\n");
		return 2;
	}
	mode_rename = strcmp(argv[1], "rename") == 0;
	mnt = argv[2];
	store = argv[3];
	topic = argv[4];
	deadline = now() + strtod(argv[5], NULL);
	memset(count, 0, sizeof(count));
	srandom((unsigned)getpid());
	for (i = 0; now() < deadline; i++) {
		snprintf(a, sizeof(a), "%s/%s/a%lu", mnt, topic, i);
		snprintf(v, sizeof(v), "%s/%s/%c%lu", mnt, topic,
		    mode_rename ? 'v' : 'x', i);
		if (mode_rename) {
			snprintf(cur, sizeof(cur), "%s/current", a);
			snprintf(rec, sizeof(rec), "a%lu\n", i);
			if (mkdir(a, 0755) == -1 || put(cur, rec) == -1) {
				perror(a);
				return 2;
			}
		}
		snprintf(cur, sizeof(cur), "%s/current", v);
		if (mkdir(v, 0755) == -1 ||
		    (fd = open(cur, O_WRONLY | O_APPEND)) == -1) {
			perror(v);
			return 2;
		}
		snprintf(rec, sizeof(rec), "%c%lu\n", mode_rename ? 'v' : 'x',
		    i);
		wr_delay = (unsigned)(random() % 100);
		pthread_barrier_init(&go, NULL, 2);
		pthread_create(&th, NULL, writer, NULL);
		pthread_barrier_wait(&go);
		spin((unsigned)(random() % 100));
		if (mode_rename)
			ren = rename(a, v) == 0 ? 0 : errno;
		else {
			ren = rmdir(v) == 0 ? 0 : errno;
			if (ren == 0 && mkdir(v, 0755) == -1) {
				perror(v);
				return 2;
			}
		}
		pthread_join(th, NULL);
		pthread_barrier_destroy(&go);
		close(fd);
		count[0][ren & 255]++;
		count[1][wr_err & 255]++;
		snprintf(what, sizeof(what), "%s %s, append %s",
		    mode_rename ? "rename" : "rmdir+mkdir", ename(ren),
		    ename(wr_err));
		if (ren == 0 && wr_err == 0)
			breach("%lu: both the %s and the append of \"%c%lu\" "
			    "succeeded", i, mode_rename ? "rename over" :
			    "rmdir of", mode_rename ? 'v' : 'x', i);
		if (ren == 0)
			snprintf(want, sizeof(want), mode_rename ? "a%lu\n" :
			    "", i);
		else if (wr_err == 0)
			snprintf(want, sizeof(want), "%c%lu\n",
			    mode_rename ? 'v' : 'x', i);
		else
			snprintf(want, sizeof(want), "?");
		if (strcmp(want, "?") != 0) {
			k = (int)(strrchr(v, '/') - v) + 1;
			expect(i, v + k, want, what);
		} else
			breach("%lu: %s: neither happened", i, what);
	}
	printf("%s: %lu iterations; %s:", argv[1], i,
	    mode_rename ? "rename" : "rmdir");
	for (k = 0; k < 256; k++)
		if (count[0][k])
			printf(" %s %lu", ename(k), count[0][k]);
	printf("; append:");
	for (k = 0; k < 256; k++)
		if (count[1][k])
			printf(" %s %lu", ename(k), count[1][k]);
	printf("; breaches %lu\n", breaches);
	return breaches ? 1 : 0;
}
