/*
 * tlbench.c - engine-level benchmarks and store generation for
 * tests/bench/run.sh. Links libtlog (internal API: the module headers).
 *
 *   tlbench gen STORE TOPIC NPARTS SEGS [AGE_MS [RETENTION_MS]]
 *	Writes NPARTS partitions of SEGS segments each straight in the
 *	on-disk format (doc/format.md): one 64-byte record per segment,
 *	all sealed but the last, which is left as an active segment after a
 *	clean close (boundary entry, no footer). Record timestamps are
 *	now - AGE_MS. RETENTION_MS, if given, goes into TOPIC/.config.
 *	Prints the time taken.
 *
 *   tlbench wakeup DIR NPARTS NDUE REPS
 *	The reaper's wake-up cost: NPARTS - NDUE partitions scheduled far
 *	ahead (in memory only, as in tests/unit/test_reaper.c) and NDUE real
 *	ones whose single record has expired; times tlog_reaper_cycle with
 *	NDUE due and with none due, REPS times each.
 *
 *   tlbench drain DIR NSEGS NLAT
 *	A backlog of NSEGS expired segments (generated as above) in
 *	backlog/0. Times NLAT appends of 100-byte lines to lat/0 with the
 *	reaper idle, then starts the reaper thread and an unlinker thread
 *	(as the daemon does) and times appends until the backlog has been
 *	deleted (at least NLAT of them). Reports the deletion rate and the
 *	append latency percentiles of both phases.
 *
 *   tlbench commit PART N
 *	Cursor commits on a mounted partition PART (a real mount, through
 *	setxattr(2), as a consumer commits): N commits of user.cursor.bench
 *	to offsets 0, 1, ... (wrapping below the end offset); each is
 *	durable (atomic replace, fsync) when setxattr returns.
 *   tlbench keepfree DIR NSEGS SECS
 *	retention.keep.free on a fake disk (the injected free_space: a
 *	capacity less what was appended and not yet unlinked). A backlog
 *	of NSEGS segments (generated as above, not expired) with a disk
 *	that reads full: the deletion rate of the reaper and an unlinker
 *	thread. Then one writer appends 100-byte lines to lat/0 (1 MiB
 *	segments) for SECS seconds with the key off, and SECS more with a
 *	16 MiB floor on a disk of 24 MiB over what is in the store, so the
 *	reaper reclaims all along: throughput and latency percentiles of
 *	both, and the segments reclaimed.
 *
 *   tlbench seekread PART N
 *	Random reads of one record by offset on a mounted partition PART,
 *	as tlogctl read --from does them without its process: getxattr
 *	user.tlog.at.OFFSET (the segment and position), open the segment,
 *	read 4 KiB there, close; N offsets drawn uniformly between its
 *	start and end offsets. Reports p50 and p99 in ms.
 *
 * Output: key=value pairs, one line per measurement.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "level.h"
#include "reaper.h"
#include "store.h"

static int64_t clock_offset;	/* added to the wall clock, atomically */

static int64_t
bench_clock(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
	    __atomic_load_n(&clock_offset, __ATOMIC_RELAXED);
}

static void
quiet_log(void *arg, int prio, const char *msg)
{
	(void)arg;
	if (prio <= 3)	/* LOG_ERR and worse */
		fprintf(stderr, "tlog: %s\n", msg);
}

static double
mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	fprintf(stderr, "tlbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct tlog_store *
open_store(const char *dir)
{
	struct tlog_store_opts o;
	struct tlog_store *s = NULL;
	char err[512];
	int r;

	memset(&o, 0, sizeof(o));
	o.clock = bench_clock;
	o.log = quiet_log;
	if ((r = tlog_store_open(dir, &o, &s, err, sizeof(err))) != 0) {
		fprintf(stderr, "tlbench: open %s: %s\n", dir, err);
		exit(1);
	}
	return s;
}

/* ---- gen ---- */

static void
write_file(int dirfd, const char *name, const void *buf, size_t len)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644);

	if (fd < 0)
		die(name);
	if (write(fd, buf, len) != (ssize_t)len)
		die(name);
	close(fd);
}

static void
mkdir_p(const char *path)
{
	if (mkdir(path, 0755) == -1 && errno != EEXIST)
		die(path);
}

/* A topic's or partition's directory as the daemon keeps it: 0700, its
 * mode and owner as shown in user.tlogfs.attr (doc/format.md, "A private
 * store"), so that an open finds nothing to make private. */
static void
mkdir_level(const char *path)
{
	char attr[64];
	int n;

	if (mkdir(path, 0700) == -1 && errno != EEXIST)
		die(path);
	n = snprintf(attr, sizeof(attr), "0755 %u %u", (unsigned)geteuid(),
	    (unsigned)getegid());
	if (setxattr(path, TLOG_ATTR_XATTR, attr, (size_t)n, 0) == -1 &&
	    errno != ENOTSUP)
		die(path);
}

static double
gen(const char *store, const char *topic, long nparts, long segs,
    int64_t age_ms, int64_t retention_ms)
{
	unsigned char idx[24 * 3 + 48];
	char path[4096], name[64], rec[64];
	struct tlog_idx_entry e;
	struct tlog_footer f;
	int64_t ts = bench_clock(NULL) - age_ms;
	double t0 = mono();
	long i, j;
	int pfd;

	memset(rec, 'r', sizeof(rec));
	rec[sizeof(rec) - 1] = '\n';
	mkdir_p(store);
	snprintf(path, sizeof(path), "%s/.tlogfs", store);
	mkdir_p(path);
	snprintf(path, sizeof(path), "%s/.tlogfs/format", store);
	if (access(path, F_OK) == -1) {
		int sfd = open(store, O_RDONLY | O_DIRECTORY);

		if (sfd < 0)
			die(store);
		write_file(sfd, ".tlogfs/format", "tlogfs 1\n", 9);
		/* As after a clean close: nothing to check at the mount. */
		write_file(sfd, ".tlogfs/clean", "", 0);
		close(sfd);
	}
	snprintf(path, sizeof(path), "%s/%s", store, topic);
	mkdir_level(path);
	if (retention_ms != 0) {
		int tfd = open(path, O_RDONLY | O_DIRECTORY);
		int n;

		if (tfd < 0)
			die(path);
		n = snprintf(name, sizeof(name), "retention.ms=%" PRId64 "\n",
		    retention_ms);
		write_file(tfd, ".config", name, (size_t)n);
		close(tfd);
	}
	for (i = 0; i < nparts; i++) {
		snprintf(path, sizeof(path), "%s/%s/%ld", store, topic, i);
		mkdir_level(path);
		if ((pfd = open(path, O_RDONLY | O_DIRECTORY)) < 0)
			die(path);
		for (j = 0; j < segs; j++) {
			size_t n = 0;

			snprintf(name, sizeof(name), "%020ld.log", j);
			write_file(pfd, name, rec, sizeof(rec));
			tlog_idx_encode_header(idx, (uint64_t)j,
			    TLOG_IDX_F_DATACRC);
			n += 24;
			e.rel = 0;
			e.pos = 0;
			e.ts = ts;
			e.crc = 0;
			tlog_idx_encode_entry(idx + n, &e);
			n += 24;
			e.rel = 1;
			e.pos = sizeof(rec);
			e.crc = tlog_crc32c(0, rec, sizeof(rec));
			tlog_idx_encode_entry(idx + n, &e);
			n += 24;
			if (j + 1 < segs) {
				f.records = 1;
				f.bytes = sizeof(rec);
				f.first_ts = ts;
				f.max_ts = ts;
				f.sealed_by = TLOG_TRIG_SIZE;
				tlog_idx_encode_footer(idx + n, &f);
				n += 48;
			}
			snprintf(name, sizeof(name), "%020ld.idx", j);
			write_file(pfd, name, idx, n);
		}
		close(pfd);
	}
	return mono() - t0;
}

/* ---- wakeup ---- */

static int
cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
put_line(struct tlog_partition *p, const char *line)
{
	struct tlog_writer *w = tlog_writer_open(p);

	if (w == NULL || tlog_writer_write(w, line, strlen(line)) !=
	    (ssize_t)strlen(line)) {
		fprintf(stderr, "tlbench: append failed\n");
		exit(1);
	}
	tlog_writer_close(w);
}

static void
report(const char *what, double *v, int n, double scale, const char *unit)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	printf("%s median_%s=%.4f min_%s=%.4f max_%s=%.4f\n", what, unit,
	    v[n / 2] * scale, unit, v[0] * scale, unit, v[n - 1] * scale);
}

static int
wakeup(const char *dir, long nparts, long ndue, int reps)
{
	struct tlog_store *s;
	struct tlog_partition **real, *p;
	struct tlog_topic *t;
	struct tlog_reap_stats st;
	double *due_ms, *idle_ms, t0;
	char name[32], err[256];
	int64_t now = bench_clock(NULL);
	long i;
	int r;

	mkdir_p(dir);
	s = open_store(dir);
	if (tlog_reaper_attach(s) != 0)
		die("reaper_attach");
	real = calloc((size_t)ndue, sizeof(*real));
	due_ms = calloc((size_t)reps, sizeof(double));
	idle_ms = calloc((size_t)reps, sizeof(double));
	if (real == NULL || due_ms == NULL || idle_ms == NULL)
		die("calloc");
	if (tlog_topic_create(s, "t", &t) != 0)
		die("topic");
	for (i = 0; i < nparts - ndue; i++) {
		snprintf(name, sizeof(name), "idle%ld", i);
		if ((p = tlog_part_alloc(&t->lv, name, t->reg->penv)) == NULL)
			die("tlog_part_alloc");
		tlog_part_sched_earlier(p, now + 365LL * 86400000 + i);
		tlog_partition_put(p);
	}
	for (i = 0; i < ndue; i++) {
		snprintf(name, sizeof(name), "p%ld", i);
		if ((r = tlog_partition_create(t, name, &real[i])) != 0) {
			errno = -r;
			die("partition_create");
		}
		if (tlog_conf_set(s, NULL, real[i], "retention.ms", "1s", 2,
		    err, sizeof(err)) != 0) {
			fprintf(stderr, "tlbench: %s\n", err);
			return 1;
		}
	}
	for (r = 0; r < reps; r++) {
		for (i = 0; i < ndue; i++)
			put_line(real[i], "expiring in one second\n");
		/* Nothing due: the common idle wake-up. */
		t0 = mono();
		tlog_reaper_cycle(s, &st);
		idle_ms[r] = mono() - t0;
		if (st.visited != 0)
			fprintf(stderr, "tlbench: idle cycle visited %" PRIu64
			    "\n", st.visited);
		__atomic_add_fetch(&clock_offset, 2000, __ATOMIC_RELAXED);
		t0 = mono();
		tlog_reaper_cycle(s, &st);
		due_ms[r] = mono() - t0;
		if (st.visited != (uint64_t)ndue || st.expired != (uint64_t)ndue)
			fprintf(stderr, "tlbench: cycle visited %" PRIu64
			    " expired %" PRIu64 ", expected %ld\n", st.visited,
			    st.expired, ndue);
		tlog_store_unlink_pending(s, 0);
	}
	printf("scheduled=%zu\n", tlog_reaper_scheduled(s));
	snprintf(name, sizeof(name), "wakeup_%ld_due", ndue);
	report(name, due_ms, reps, 1e3, "ms");
	report("wakeup_0_due", idle_ms, reps, 1e3, "ms");
	for (i = 0; i < ndue; i++)
		tlog_partition_put(real[i]);
	tlog_topic_put(t);
	tlog_store_close(s);
	return 0;
}

/* ---- drain ---- */

static volatile int stop_unlinker;

static void *
unlinker(void *arg)
{
	struct tlog_store *s = arg;

	while (!__atomic_load_n(&stop_unlinker, __ATOMIC_RELAXED)) {
		tlog_store_unlink_wait(s, 100);
		tlog_store_unlink_pending(s, 64);
	}
	return NULL;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void
lat_report(const char *what, uint32_t *ns, size_t n)
{
	qsort(ns, n, sizeof(*ns), cmp_u32);
	printf("%s appends=%zu p50_us=%.2f p99_us=%.2f p999_us=%.2f "
	    "max_us=%.1f\n", what, n, ns[n / 2] / 1e3, ns[n * 99 / 100] / 1e3,
	    ns[n * 999 / 1000] / 1e3, ns[n - 1] / 1e3);
}

/* The backlog gen() wrote (backlog/0) and a new partition lat/0 for the
 * timed appends beside it. */
static void
backlog_and_lat(struct tlog_store *s, struct tlog_partition **bp,
    struct tlog_partition **lp)
{
	struct tlog_topic *t;

	t = tlog_topic_get(s, "backlog");
	*bp = t ? tlog_partition_get(t, "0") : NULL;
	if (*bp == NULL)
		die("backlog/0");
	tlog_topic_put(t);
	if (tlog_topic_create(s, "lat", &t) != 0 ||
	    tlog_partition_create(t, "0", lp) != 0)
		die("lat/0");
	tlog_topic_put(t);
}

static int
drain(const char *dir, long nsegs, long nlat)
{
	struct tlog_store *s;
	struct tlog_partition *lp, *bp;
	struct tlog_writer *w;
	struct tlog_part_stats ps;
	pthread_t ut;
	char line[100];
	uint32_t *ns;
	size_t n, cap = (size_t)nlat * 64;
	double t0, t1, gsecs, tdone = 0;
	long i;

	gsecs = gen(dir, "backlog", 1, nsegs, 2 * 86400000LL, 86400000LL);
	printf("drain_gen segments=%ld secs=%.2f\n", nsegs, gsecs);
	t0 = mono();
	s = open_store(dir);
	printf("drain_open secs=%.3f\n", mono() - t0);
	backlog_and_lat(s, &bp, &lp);
	if ((w = tlog_writer_open(lp)) == NULL)
		die("writer");
	memset(line, 'l', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	if ((ns = calloc(cap, sizeof(*ns))) == NULL)
		die("calloc");
	/* Idle: the backlog is due, but no reaper runs. */
	for (i = 0; i < nlat; i++) {
		t0 = mono();
		if (tlog_writer_write(w, line, sizeof(line)) != sizeof(line))
			die("append");
		ns[i] = (uint32_t)((mono() - t0) * 1e9);
	}
	lat_report("append_idle", ns, (size_t)nlat);
	/* Drain. */
	stop_unlinker = 0;
	if (pthread_create(&ut, NULL, unlinker, s) != 0)
		die("pthread_create");
	t0 = mono();
	if (tlog_reaper_start(s) != 0)
		die("reaper_start");
	for (n = 0; n < cap; n++) {
		t1 = mono();
		if (tlog_writer_write(w, line, sizeof(line)) != sizeof(line))
			die("append");
		ns[n] = (uint32_t)((mono() - t1) * 1e9);
		if ((n & 255) == 0 && tdone == 0) {
			tlog_partition_stats(bp, &ps);
			if (ps.segments == 0 && tlog_queue_unlinks(&s->q) == 0)
				tdone = mono();
		}
		if (tdone != 0 && n >= (size_t)nlat)
			break;
	}
	while (tdone == 0) {
		tlog_partition_stats(bp, &ps);
		if (ps.segments == 0 && tlog_queue_unlinks(&s->q) == 0)
			tdone = mono();
		else
			usleep(1000);
	}
	printf("drain segments=%ld secs=%.3f segments_per_s=%.0f\n", nsegs,
	    tdone - t0, (double)nsegs / (tdone - t0));
	lat_report("append_drain", ns, n);
	tlog_reaper_stop(s);
	stop_unlinker = 1;
	tlog_store_wakeup(s);
	pthread_join(ut, NULL);
	tlog_writer_close(w);
	tlog_partition_put(lp);
	tlog_partition_put(bp);
	tlog_store_close(s);
	free(ns);
	return 0;
}

static int
commit(const char *part, long n)
{
	char end[32], val[32];
	long i, e;
	ssize_t len;
	double t0, secs;

	len = getxattr(part, "user.tlog.end_offset", end, sizeof(end) - 1);
	if (len <= 0) {
		perror(part);
		return 1;
	}
	end[len] = '\0';
	e = atol(end) + 1;
	t0 = mono();
	for (i = 0; i < n; i++) {
		snprintf(val, sizeof(val), "%ld", i % e);
		if (setxattr(part, "user.cursor.bench", val, strlen(val), 0)
		    == -1) {
			perror("setxattr user.cursor.bench");
			return 1;
		}
	}
	secs = mono() - t0;
	printf("commit n=%ld secs=%.3f commits_per_s=%.0f us_per_commit=%.1f\n",
	    n, secs, (double)n / secs, secs * 1e6 / (double)n);
	return 0;
}

/* ---- keepfree ---- */

static struct tlog_store *kf_store;
static uint64_t kf_cap;			/* the fake disk's size */
static int kf_full;			/* it reads full */

static int
kf_free(void *arg, uint64_t *avail, uint64_t *size)
{
	struct tlog_store *s = __atomic_load_n(&kf_store, __ATOMIC_ACQUIRE);
	uint64_t used = 0;

	(void)arg;
	if (s != NULL)
		used = __atomic_load_n(&s->ctx.free_appended,
		    __ATOMIC_RELAXED) - __atomic_load_n(
		    &s->ctx.metrics.deleted_bytes, __ATOMIC_RELAXED);
	*size = kf_cap;
	*avail = kf_full || used >= kf_cap ? 0 : kf_cap - used;
	return 0;
}

static void
kf_set(struct tlog_store *s, struct tlog_partition *p, const char *key,
    const char *v)
{
	char err[256];

	if (tlog_conf_set(s, NULL, p, key, v, strlen(v), err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "tlbench: %s=%s: %s\n", key, v, err);
		exit(1);
	}
}

/* Appends 100-byte lines for secs; reports the rate and percentiles. */
static void
kf_write(const char *what, struct tlog_writer *w, double secs)
{
	static uint32_t *ns;
	size_t cap = 16 << 20, n;
	char line[100];
	double t0 = mono(), t1;

	if (ns == NULL && (ns = calloc(cap, sizeof(*ns))) == NULL)
		die("calloc");
	memset(line, 'k', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	for (n = 0; n < cap; n++) {
		t1 = mono();
		if (tlog_writer_write(w, line, sizeof(line)) != sizeof(line))
			die("append");
		ns[n] = (uint32_t)((mono() - t1) * 1e9);
		if ((n & 1023) == 0 && mono() - t0 >= secs)
			break;
	}
	printf("%s_rate appends_per_s=%.0f mb_per_s=%.1f\n", what,
	    (double)n / (mono() - t0), (double)n * 100 / 1e6 / (mono() - t0));
	lat_report(what, ns, n);
}

static int
keepfree(const char *dir, long nsegs, double secs)
{
	struct tlog_store_opts o;
	struct tlog_store *s = NULL;
	struct tlog_partition *lp, *bp;
	struct tlog_writer *w;
	struct tlog_part_stats ps;
	pthread_t ut;
	char err[512], cap[32];
	uint64_t del0;
	double t0, tdone;

	gen(dir, "backlog", 1, nsegs, 3600000LL, 0);
	memset(&o, 0, sizeof(o));
	o.clock = bench_clock;
	o.log = quiet_log;
	o.free_space = kf_free;
	kf_cap = 1ULL << 40;
	if (tlog_store_open(dir, &o, &s, err, sizeof(err)) != 0) {
		fprintf(stderr, "tlbench: open %s: %s\n", dir, err);
		exit(1);
	}
	__atomic_store_n(&kf_store, s, __ATOMIC_RELEASE);
	backlog_and_lat(s, &bp, &lp);
	kf_set(s, lp, "segment.bytes", "1M");
	stop_unlinker = 0;
	if (pthread_create(&ut, NULL, unlinker, s) != 0)
		die("pthread_create");
	if (tlog_reaper_start(s) != 0)
		die("reaper_start");

	/* The backlog on a disk that reads full. */
	kf_full = 1;
	t0 = mono();
	kf_set(s, NULL, "retention.keep.free", "16M");
	for (;;) {
		tlog_partition_stats(bp, &ps);
		if (ps.segments == 0 && tlog_queue_unlinks(&s->q) == 0)
			break;
		usleep(1000);
	}
	tdone = mono();
	kf_full = 0;
	printf("keepfree_backlog segments=%ld secs=%.3f segments_per_s=%.0f\n",
	    nsegs, tdone - t0, (double)nsegs / (tdone - t0));
	kf_set(s, NULL, "retention.keep.free", "-1");

	if ((w = tlog_writer_open(lp)) == NULL)
		die("writer");
	kf_write("keepfree_off", w, secs);
	/* 24 MiB of room over what the store holds now, 16 MiB floor:
	 * reclaiming starts after 8 MiB. */
	kf_cap = __atomic_load_n(&s->ctx.free_appended, __ATOMIC_RELAXED) -
	    __atomic_load_n(&s->ctx.metrics.deleted_bytes, __ATOMIC_RELAXED) +
	    (24 << 20);
	del0 = s->ctx.metrics.deletions[TLOG_RULE_FREE];
	snprintf(cap, sizeof(cap), "%d", 16 << 20);
	kf_set(s, NULL, "retention.keep.free", cap);
	kf_write("keepfree_on", w, secs);
	printf("keepfree_reclaimed segments=%" PRIu64 "\n",
	    s->ctx.metrics.deletions[TLOG_RULE_FREE] - del0);
	tlog_writer_close(w);
	tlog_reaper_stop(s);
	stop_unlinker = 1;
	tlog_store_wakeup(s);
	pthread_join(ut, NULL);
	tlog_partition_put(lp);
	tlog_partition_put(bp);
	__atomic_store_n(&kf_store, NULL, __ATOMIC_RELEASE);
	tlog_store_close(s);
	return 0;
}

static uint64_t
xattr_u64(const char *path, const char *name)
{
	char buf[64];
	ssize_t n;

	if ((n = getxattr(path, name, buf, sizeof(buf) - 1)) < 0)
		die(name);
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int
seekread(const char *part, long n)
{
	uint64_t start = xattr_u64(part, "user.tlog.start_offset");
	uint64_t end = xattr_u64(part, "user.tlog.end_offset");
	unsigned long long base, pos;
	char name[64], val[96], path[4096], buf[4096];
	double *lat, t0;
	ssize_t r;
	long i;
	int fd;

	if (end <= start || n <= 0 || (lat = calloc((size_t)n,
	    sizeof(*lat))) == NULL)
		die("seekread: an empty partition");
	srandom(7);
	for (i = 0; i < n; i++) {
		uint64_t off = start + ((uint64_t)random() << 31 |
		    (uint64_t)random()) % (end - start);

		t0 = mono();
		snprintf(name, sizeof(name), "user.tlog.at.%" PRIu64, off);
		if ((r = getxattr(part, name, val, sizeof(val) - 1)) < 0)
			die(name);
		val[r] = '\0';
		if (sscanf(val, "%llu %llu", &base, &pos) != 2)
			die(val);
		snprintf(path, sizeof(path), "%s/%020llu.log", part, base);
		if ((fd = open(path, O_RDONLY)) == -1)
			die(path);
		if (pread(fd, buf, sizeof(buf), (off_t)pos) <= 0 ||
		    memchr(buf, '\n', sizeof(buf)) == NULL)
			die("seekread: no record there");
		close(fd);
		lat[i] = (mono() - t0) * 1e3;
	}
	qsort(lat, (size_t)n, sizeof(*lat), cmp_double);
	printf("seekread reads=%ld p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n", n,
	    lat[n / 2], lat[(n * 99) / 100], lat[n - 1]);
	free(lat);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: tlbench gen STORE TOPIC NPARTS SEGS [AGE_MS [RET_MS]]\n"
	    "       tlbench wakeup DIR NPARTS NDUE REPS\n"
	    "       tlbench drain DIR NSEGS NLAT\n"
	    "       tlbench commit PART N\n"
	    "       tlbench keepfree DIR NSEGS SECS\n"
	    "       tlbench seekread PART N\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "gen") == 0 && (argc >= 6 && argc <= 8)) {
		double secs = gen(argv[2], argv[3], atol(argv[4]),
		    atol(argv[5]), argc > 6 ? atoll(argv[6]) : 0,
		    argc > 7 ? atoll(argv[7]) : 0);

		printf("gen partitions=%s segments=%ld secs=%.2f\n", argv[4],
		    atol(argv[4]) * atol(argv[5]), secs);
		return 0;
	}
	if (strcmp(argv[1], "wakeup") == 0 && argc == 6)
		return wakeup(argv[2], atol(argv[3]), atol(argv[4]),
		    atoi(argv[5]));
	if (strcmp(argv[1], "drain") == 0 && argc == 5)
		return drain(argv[2], atol(argv[3]), atol(argv[4]));
	if (strcmp(argv[1], "commit") == 0 && argc == 4)
		return commit(argv[2], atol(argv[3]));
	if (strcmp(argv[1], "seekread") == 0 && argc == 4)
		return seekread(argv[2], atol(argv[3]));
	if (strcmp(argv[1], "keepfree") == 0 && argc == 5)
		return keepfree(argv[2], atol(argv[3]), atof(argv[4]));
	usage();
	return 2;
}
