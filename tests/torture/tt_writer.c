/*
 * tt_writer - a torture writer: appends numbered, self-checking lines to
 * one partition NAME (a path under the mount) until a deadline, and
 * records which ones were acknowledged.
 *
 *   tt_writer [-pf] [-u USEC] [-r MIN:MAX] [-S SEED] DIR ID SECONDS ACKFILE
 *
 * Each open is an epoch: open DIR (O_DIRECTORY), fstat it for the
 * partition's inode number (the identity of the partition it opened,
 * whatever it is called later), then openat(dirfd, "current",
 * O_WRONLY|O_APPEND). Line n of writer ID is
 *
 *   "wID n TOPIC/PART LEN PAYLOAD\n"
 *
 * TOPIC/PART is the name the writer opened (the partition it THINKS it
 * writes to), PAYLOAD is LEN copies of 'a' + n % 26, LEN = 1 + (7n + 13
 * ID) % 100; so a torn or spliced line shows. n grows across epochs and
 * is never reused: the line of a failed write(2) is never written again,
 * so if it shows up anyway the check sees it.
 *
 * The writer closes and reopens every MIN..MAX lines (default 20:300) so
 * that first appends to freshly made partitions happen all the time; a
 * write that fails ends the epoch, and the writer opens DIR again (a
 * missing DIR is retried every millisecond) until the deadline. ENOTCONN
 * or ECONNABORTED (the daemon died) end the writer.
 *
 * ACKFILE gets, appended as they happen:
 *   S ID EPOCH INO TOPIC/PART FIRST        an epoch opened
 *   E ID EPOCH LAST ERR                    it ended: LAST = last acked n
 *                                          (FIRST - 1: none); ERR = the
 *                                          errno name that ended it, "-"
 *                                          for a close by choice, or
 *                                          "close:ENAME" if close failed
 *   O ID ENAME COUNT                       failed opens, per errno, at exit
 * -p writes each line in 2 or 3 pieces (the daemon holds the partial
 * line); -f also closes a dup of the descriptor after each piece that
 * leaves a partial line (a FLUSH, as a shell's `printf >&3` makes: the
 * held bytes must stay held until the last close); -u sleeps between
 * lines. Exit 0, or 1 on a usage or local error.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ackfd = -1;

static const char *
ename(int e)
{
	const char *n = strerrorname_np(e);

	return n != NULL ? n : "E?";
}

static void
ack(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf) ||
	    write(ackfd, buf, (size_t)n) != n) {
		perror("tt_writer: ack file");
		exit(1);
	}
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int flushes;

/* One write(2); returns 0 or an errno. A short count is reported as
 * EIO (a line either goes in whole or not at all). With -f, a piece
 * that leaves a partial line is followed by the close of a dup. */
static int
put(int fd, const char *buf, size_t len)
{
	ssize_t n;

	do
		n = write(fd, buf, len);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return errno;
	if ((size_t)n != len)
		return EIO;
	if (flushes && buf[len - 1] != '\n' && close(dup(fd)) == -1)
		return errno;
	return 0;
}

int
main(int argc, char *argv[])
{
	const char *dir, *name;
	char line[256];
	unsigned long id, seed = 1, seq = 0, first, rmin = 20, rmax = 300;
	unsigned long usec = 0, budget, oerr[256] = { 0 };
	double deadline;
	struct stat st;
	size_t len, cut1, cut2;
	int c, pieces = 0, dfd, fd, e, epoch = 0, plen, i;

	while ((c = getopt(argc, argv, "pfu:r:S:")) != -1) {
		switch (c) {
		case 'p':
			pieces = 1;
			break;
		case 'f':
			flushes = 1;
			break;
		case 'u':
			usec = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			if (sscanf(optarg, "%lu:%lu", &rmin, &rmax) != 2 ||
			    rmin < 1 || rmax < rmin)
				return 1;
			break;
		case 'S':
			seed = strtoul(optarg, NULL, 10);
			break;
		default:
			return 1;
		}
	}
	if (argc - optind != 4) {
		fprintf(stderr, "usage: tt_writer [-pf] [-u USEC] [-r MIN:MAX] "
		    "[-S SEED] DIR ID SECONDS ACKFILE\n");
		return 1;
	}
	dir = argv[optind];
	id = strtoul(argv[optind + 1], NULL, 10);
	deadline = now() + strtod(argv[optind + 2], NULL);
	if ((ackfd = open(argv[optind + 3], O_WRONLY | O_CREAT | O_APPEND,
	    0644)) == -1) {
		perror(argv[optind + 3]);
		return 1;
	}
	/* The name as "TOPIC/PART": the last two components of DIR. */
	name = dir + strlen(dir);
	for (i = 0; i < 2 && name > dir; )
		if (*--name == '/' && ++i == 2)
			name++;
	srandom((unsigned)(seed * 7919 + id));

	while (now() < deadline) {
		if ((dfd = open(dir, O_RDONLY | O_DIRECTORY)) == -1 ||
		    fstat(dfd, &st) == -1 ||
		    (fd = openat(dfd, "current", O_WRONLY | O_APPEND)) == -1) {
			e = errno;
			if (dfd != -1)
				close(dfd);
			oerr[e & 255]++;
			if (e == ENOTCONN || e == ECONNABORTED)
				break;
			usleep(1000);
			continue;
		}
		close(dfd);
		epoch++;
		first = seq;
		ack("S %lu %d %llu %s %lu\n", id, epoch,
		    (unsigned long long)st.st_ino, name, first);
		budget = rmin + (unsigned long)random() % (rmax - rmin + 1);
		e = 0;
		while (budget-- > 0 && now() < deadline) {
			plen = (int)(1 + (seq * 7 + id * 13) % 100);
			len = (size_t)snprintf(line, 64, "w%lu %lu %s %d ", id,
			    seq, name, plen);
			memset(line + len, 'a' + (int)(seq % 26), (size_t)plen);
			len += (size_t)plen;
			line[len++] = '\n';
			if (pieces && len > 2) {
				cut1 = 1 + (size_t)random() % (len - 1);
				cut2 = cut1 + (len - cut1) / 2;
				if (random() % 2 == 0 || cut2 == cut1)
					cut2 = len;
				if ((e = put(fd, line, cut1)) == 0 &&
				    (e = put(fd, line + cut1, cut2 - cut1)) == 0 &&
				    cut2 < len)
					e = put(fd, line + cut2, len - cut2);
			} else
				e = put(fd, line, len);
			seq++;	/* never reused, acknowledged or not */
			if (e != 0)
				break;
			if (usec)
				usleep((useconds_t)usec);
		}
		if (close(fd) == -1 && e == 0) {
			ack("E %lu %d %ld close:%s\n", id, epoch,
			    (long)(e ? seq - 2 : seq - 1), ename(errno));
			continue;
		}
		ack("E %lu %d %ld %s\n", id, epoch,
		    (long)(e ? seq - 2 : seq - 1), e ? ename(e) : "-");
		if (e == ENOTCONN || e == ECONNABORTED)
			break;
	}
	for (i = 0; i < 256; i++)
		if (oerr[i])
			ack("O %lu %s %lu\n", id, ename(i), oerr[i]);
	return 0;
}
