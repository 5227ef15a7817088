/*
 * tt_chaos - the torture suite's adversary: random namespace, deletion
 * and configuration operations on a mounted toplogs until a deadline,
 * each a plain system call, each logged with its outcome.
 *
 *   tt_chaos [-D] [-u USEC] [-S SEED] [-o OPS] MNT SECONDS LOG \
 *       "TOPICS" "PARTS" ["STABLE"]
 *
 * TOPICS and PARTS are space-separated names: the topics that may be
 * renamed and removed, and the partition names used in them. STABLE
 * topics (with partitions PARTS) are only sealed, configured and, with
 * -D, trimmed by rm: their names never move, so a reader following them
 * by name may be held to more.
 *
 * Operations (OPS: a comma-separated subset, default all that the mode
 * allows):
 *   seal       setxattr user.seal=1 on TOPIC/PART/current
 *   xattr      set (or remove) retention.ms, retention.bytes,
 *              segment.bytes or segment.ms on the root, a topic or a
 *              partition
 *   prename    rename a partition to another name in its topic (replacing
 *              it if that one is empty)
 *   pover      mkdir an empty partition, then at once rename another over
 *              it: the writers of that name open it and make their first
 *              append while the rename runs
 *   trename    rename a topic (over an empty one, if so)
 *   prmdir     rmdir a partition, then mkdir the same name at once
 *   trmdir     rmdir a topic, then mkdir the same name at once
 *   ensure     mkdir a topic and a partition in it (keeps names in use)
 *   rmseg      (-D) rm a sealed segment
 *   rmcur      (-D) rm current
 *   rmrf       (-D) rm -rf a topic: every file, every partition, the topic
 * Without -D, configuration values never expire or trim data
 * (retention.ms >= 1h or -1, retention.bytes -1 or 1G), so nothing may be
 * lost; with -D, retention is seconds and kilobytes.
 *
 * LOG gets one line per operation: "TIME OP ARGS -> OK|ENAME". At the
 * end, stdout gets one line per operation and outcome with its count,
 * and a line "UNEXPECTED ..." for each outcome that no race explains
 * (an errno other than the ones a concurrent rename, rmdir or deletion
 * can cause). Exit status 0 if there was none, else 3.
 */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum op {
	OP_SEAL, OP_XATTR, OP_PRENAME, OP_POVER, OP_TRENAME, OP_PRMDIR,
	OP_TRMDIR, OP_ENSURE, OP_RMSEG, OP_RMCUR, OP_RMRF, OP_N
};

static const char *opname[OP_N] = {
	"seal", "xattr", "prename", "pover", "trename", "prmdir", "trmdir",
	"ensure", "rmseg", "rmcur", "rmrf"
};
/* Relative frequencies. */
static const int opweight[OP_N] = {
	10, 10, 8, 8, 3, 6, 1, 3, 6, 3, 1
};

/* Outcome counts: [op][errno], errno 0 = success. */
static unsigned long outcome[OP_N][256];
static unsigned long unexpected;

static char *topics[32], *parts[32], *stable[32];
static int ntopics, nparts, nstable;
static const char *mnt;
static FILE *oplog;
static int deletes;
static double t0;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
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

static int
split(char *s, char **v, int max)
{
	int n = 0;
	char *tok, *save = NULL;

	for (tok = strtok_r(s, " ", &save); tok != NULL && n < max;
	    tok = strtok_r(NULL, " ", &save))
		v[n++] = tok;
	return n;
}

static const char *
pick(char **v, int n)
{
	return v[random() % n];
}

/* Records one system call's outcome; ok_errs lists the errnos a race
 * explains (0-terminated). */
static int
note(enum op op, int r, const int *ok_errs, const char *fmt, ...)
{
	va_list ap;
	int e = r == -1 ? errno : 0, i, fine = e == 0;

	for (i = 0; !fine && ok_errs[i] != 0; i++)
		fine = ok_errs[i] == e;
	outcome[op][e & 255]++;
	fprintf(oplog, "%.3f %s ", now() - t0, opname[op]);
	va_start(ap, fmt);
	vfprintf(oplog, fmt, ap);
	va_end(ap);
	fprintf(oplog, " -> %s%s\n", ename(e), fine ? "" : " UNEXPECTED");
	if (!fine)
		unexpected++;
	return e;
}

static const int ok_enoent[] = { ENOENT, 0 };
static const int ok_mkdir[] = { EEXIST, ENOENT, 0 };
static const int ok_rmdir[] = { ENOENT, ENOTEMPTY, 0 };
static const int ok_rename[] = { ENOENT, ENOTEMPTY, 0 };
static const int ok_unset[] = { ENOENT, ENODATA, 0 };

static void
path2(char *buf, size_t len, const char *a, const char *b)
{
	if (b != NULL)
		snprintf(buf, len, "%s/%s/%s", mnt, a, b);
	else
		snprintf(buf, len, "%s/%s", mnt, a);
}

/* A topic for seal, xattr and deletions: movable or stable. */
static const char *
any_topic(void)
{
	if (nstable > 0 && random() % (ntopics + nstable) >= ntopics)
		return pick(stable, nstable);
	return pick(topics, ntopics);
}

static void
do_seal(void)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s/%s/current", mnt, any_topic(),
	    pick(parts, nparts));
	note(OP_SEAL, setxattr(p, "user.seal", "1", 1, 0), ok_enoent, "%s",
	    p + strlen(mnt) + 1);
}

static void
do_xattr(void)
{
	static const char *keep_ms[] = { "1h", "7d", "-1" };
	static const char *keep_bytes[] = { "-1", "1G" };
	static const char *del_ms[] = { "1s", "2s", "3s", "1h", "-1" };
	static const char *del_bytes[] = { "8K", "16K", "64K", "-1" };
	static const char *seg_bytes[] = { "1K", "2K", "4K", "64K", "1M" };
	static const char *seg_ms[] = { "1s", "2s", "1h" };
	const char *key, *val;
	char p[4096], name[64];
	int level = (int)(random() % 3), k = (int)(random() % 4);

	if (level == 0)
		snprintf(p, sizeof(p), "%s", mnt);
	else if (level == 1)
		path2(p, sizeof(p), any_topic(), NULL);
	else {
		snprintf(p, sizeof(p), "%s/%s/%s", mnt, any_topic(),
		    pick(parts, nparts));
	}
	switch (k) {
	case 0:
		key = "retention.ms";
		val = deletes ? del_ms[random() % 5] : keep_ms[random() % 3];
		break;
	case 1:
		key = "retention.bytes";
		val = deletes ? del_bytes[random() % 4] :
		    keep_bytes[random() % 2];
		break;
	case 2:
		key = "segment.bytes";
		val = seg_bytes[random() % 5];
		break;
	default:
		key = "segment.ms";
		val = seg_ms[random() % 3];
		break;
	}
	snprintf(name, sizeof(name), "user.%s", key);
	if (random() % 5 == 0)
		note(OP_XATTR, removexattr(p, name), ok_unset, "%s -x %s",
		    level ? p + strlen(mnt) + 1 : "/", key);
	else
		note(OP_XATTR, setxattr(p, name, val, strlen(val), 0),
		    ok_enoent, "%s %s=%s", level ? p + strlen(mnt) + 1 : "/",
		    key, val);
}

/* A name from v other than not, preferring one that does not exist
 * under dir (so that more renames succeed than hit ENOTEMPTY). */
static const char *
pick_target(const char *dir, char **v, int n, const char *not)
{
	const char *b = not;
	char p[4096];
	struct stat st;
	int i;

	for (i = 0; i < 3; i++) {
		do
			b = pick(v, n);
		while (b == not && n > 1);
		snprintf(p, sizeof(p), "%s/%s", dir, b);
		if (stat(p, &st) == -1)
			break;
	}
	return b;
}

static void
do_prename(int over)
{
	const char *t = pick(topics, ntopics), *a = pick(parts, nparts), *b;
	char pa[4096], pb[4096];

	path2(pa, sizeof(pa), t, NULL);
	b = pick_target(pa, parts, nparts, a);
	path2(pa, sizeof(pa), t, a);
	path2(pb, sizeof(pb), t, b);
	if (over) {
		note(OP_POVER, mkdir(pb, 0755), ok_mkdir, "mkdir %s/%s", t, b);
		note(OP_POVER, rename(pa, pb), ok_rename, "%s/%s %s/%s", t, a,
		    t, b);
	} else
		note(OP_PRENAME, rename(pa, pb), ok_rename, "%s/%s %s/%s", t,
		    a, t, b);
}

static void
do_trename(void)
{
	const char *a = pick(topics, ntopics), *b;
	char pa[4096], pb[4096];

	b = pick_target(mnt, topics, ntopics, a);
	path2(pa, sizeof(pa), a, NULL);
	path2(pb, sizeof(pb), b, NULL);
	note(OP_TRENAME, rename(pa, pb), ok_rename, "%s %s", a, b);
}

static void
do_rmdir(int topic)
{
	const char *t = pick(topics, ntopics), *pn = NULL;
	char p[4096];
	enum op op = topic ? OP_TRMDIR : OP_PRMDIR;

	if (!topic)
		pn = pick(parts, nparts);
	path2(p, sizeof(p), t, pn);
	if (note(op, rmdir(p), ok_rmdir, "rmdir %s%s%s", t, pn ? "/" : "",
	    pn ? pn : "") == 0)
		note(op, mkdir(p, 0755), ok_mkdir, "mkdir %s%s%s", t,
		    pn ? "/" : "", pn ? pn : "");
}

static void
do_ensure(void)
{
	const char *t = pick(topics, ntopics), *pn = pick(parts, nparts);
	char p[4096];

	path2(p, sizeof(p), t, NULL);
	note(OP_ENSURE, mkdir(p, 0755), ok_mkdir, "mkdir %s", t);
	path2(p, sizeof(p), t, pn);
	note(OP_ENSURE, mkdir(p, 0755), ok_mkdir, "mkdir %s/%s", t, pn);
}

static int
is_segname(const char *n)
{
	size_t i;

	for (i = 0; i < 20; i++)
		if (n[i] < '0' || n[i] > '9')
			return 0;
	return strcmp(n + 20, ".log") == 0;
}

static void
do_rmseg(void)
{
	const char *t = any_topic(), *pn = pick(parts, nparts);
	char p[4096], names[64][32];
	struct dirent *de;
	DIR *d;
	int n = 0;

	path2(p, sizeof(p), t, pn);
	if ((d = opendir(p)) == NULL)
		return;
	while ((de = readdir(d)) != NULL && n < 64)
		if (is_segname(de->d_name))
			strlcpy(names[n++], de->d_name, sizeof(names[0]));
	closedir(d);
	if (n == 0)
		return;
	snprintf(p, sizeof(p), "%s/%s/%s/%s", mnt, t, pn,
	    names[random() % n]);
	note(OP_RMSEG, unlink(p), ok_enoent, "%s", p + strlen(mnt) + 1);
}

static void
do_rmcur(void)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s/%s/current", mnt, any_topic(),
	    pick(parts, nparts));
	note(OP_RMCUR, unlink(p), ok_enoent, "%s", p + strlen(mnt) + 1);
}

/* rm -rf TOPIC, as coreutils does it: depth first, files, then dirs.
 * Writers may race it, so ENOTEMPTY is explained. */
static void
do_rmrf(void)
{
	const char *t = pick(topics, ntopics);
	char tp[4096], pp[4400], fp[4700];
	struct dirent *de, *fe;
	DIR *td, *pd;

	path2(tp, sizeof(tp), t, NULL);
	if ((td = opendir(tp)) == NULL)
		return;
	while ((de = readdir(td)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(pp, sizeof(pp), "%s/%s", tp, de->d_name);
		if ((pd = opendir(pp)) == NULL)
			continue;
		while ((fe = readdir(pd)) != NULL) {
			if (fe->d_name[0] == '.')
				continue;
			snprintf(fp, sizeof(fp), "%s/%s", pp, fe->d_name);
			note(OP_RMRF, unlink(fp), ok_enoent, "rm %s",
			    fp + strlen(mnt) + 1);
		}
		closedir(pd);
		note(OP_RMRF, rmdir(pp), ok_rmdir, "rmdir %s",
		    pp + strlen(mnt) + 1);
	}
	closedir(td);
	note(OP_RMRF, rmdir(tp), ok_rmdir, "rmdir %s", t);
}

int
main(int argc, char *argv[])
{
	unsigned long usec = 2000, seed = 1;
	char *opsarg = NULL, *tok, *save = NULL;
	int enabled[OP_N], total = 0, c, i, e, w;
	double deadline;

	while ((c = getopt(argc, argv, "Du:S:o:")) != -1) {
		switch (c) {
		case 'D':
			deletes = 1;
			break;
		case 'u':
			usec = strtoul(optarg, NULL, 10);
			break;
		case 'S':
			seed = strtoul(optarg, NULL, 10);
			break;
		case 'o':
			opsarg = optarg;
			break;
		default:
			return 1;
		}
	}
	if (argc - optind < 5 || argc - optind > 6) {
		fprintf(stderr, "usage: tt_chaos [-D] [-u USEC] [-S SEED] "
		    "[-o OPS] MNT SECONDS LOG \"TOPICS\" \"PARTS\" "
		    "[\"STABLE\"]\n");
		return 1;
	}
	mnt = argv[optind];
	t0 = now();
	deadline = t0 + strtod(argv[optind + 1], NULL);
	if ((oplog = fopen(argv[optind + 2], "w")) == NULL) {
		perror(argv[optind + 2]);
		return 1;
	}
	ntopics = split(argv[optind + 3], topics, 32);
	nparts = split(argv[optind + 4], parts, 32);
	if (argc - optind == 6)
		nstable = split(argv[optind + 5], stable, 32);
	if (ntopics == 0 || nparts == 0)
		return 1;
	for (i = 0; i < OP_N; i++)
		enabled[i] = opsarg == NULL;
	for (tok = opsarg ? strtok_r(opsarg, ",", &save) : NULL; tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < OP_N && strcmp(tok, opname[i]) != 0; i++)
			;
		if (i == OP_N) {
			fprintf(stderr, "tt_chaos: unknown op %s\n", tok);
			return 1;
		}
		enabled[i] = 1;
	}
	if (!deletes)
		enabled[OP_RMSEG] = enabled[OP_RMCUR] = enabled[OP_RMRF] = 0;
	for (i = 0; i < OP_N; i++)
		total += enabled[i] ? opweight[i] : 0;
	if (total == 0)
		return 1;
	srandom((unsigned)seed);

	while (now() < deadline) {
		w = (int)(random() % total);
		for (i = 0; i < OP_N; i++)
			if (enabled[i] && (w -= opweight[i]) < 0)
				break;
		switch (i) {
		case OP_SEAL: do_seal(); break;
		case OP_XATTR: do_xattr(); break;
		case OP_PRENAME: do_prename(0); break;
		case OP_POVER: do_prename(1); break;
		case OP_TRENAME: do_trename(); break;
		case OP_PRMDIR: do_rmdir(0); break;
		case OP_TRMDIR: do_rmdir(1); break;
		case OP_ENSURE: do_ensure(); break;
		case OP_RMSEG: do_rmseg(); break;
		case OP_RMCUR: do_rmcur(); break;
		case OP_RMRF: do_rmrf(); break;
		}
		if (usec)
			usleep((useconds_t)usec);
	}
	fclose(oplog);
	for (i = 0; i < OP_N; i++)
		for (e = 0; e < 256; e++)
			if (outcome[i][e])
				printf("%s %s %lu\n", opname[i], ename(e),
				    outcome[i][e]);
	if (unexpected)
		printf("UNEXPECTED %lu outcomes (see the log)\n", unexpected);
	return unexpected ? 3 : 0;
}
