/*
 * linewriter - appends numbered, self-checking lines to a file through one
 * O_APPEND descriptor, for the integration tests.
 *
 *   linewriter PATH ID COUNT [-p] [-d USEC] [-s BASE] [-a ACKFILE]
 *
 * Line n of writer ID is "wID n LEN PAYLOAD\n", PAYLOAD being LEN copies
 * of letter 'a' + n % 26 (LEN is BASE plus 1 to 100), so a torn or
 * interleaved line shows. -p writes each line
 * in 2 or 3 pieces with separate write(2) calls; -d sleeps between lines;
 * -a records, after each line whose last write(2) returned, its number in
 * ACKFILE (what a crash must not lose). COUNT 0 writes until a write
 * fails. Exits 0 if every write and the close succeeded, else prints the
 * errno's name and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
write_all(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void
fail(const char *what)
{
	const char *name = strerrorname_np(errno);

	fprintf(stderr, "linewriter: %s: %s\n", what, name ? name : "E?");
	exit(1);
}

int
main(int argc, char *argv[])
{
	char *line, ack[32];
	unsigned long id, count, n, usec = 0, base = 0;
	size_t len, cut1, cut2;
	int fd, afd = -1, pieces = 0, c, plen;

	while ((c = getopt(argc, argv, "pd:s:a:")) != -1) {
		switch (c) {
		case 'p':
			pieces = 1;
			break;
		case 'd':
			usec = strtoul(optarg, NULL, 10);
			break;
		case 's':
			base = strtoul(optarg, NULL, 10);
			if (base > 1 << 20)
				return 2;
			break;
		case 'a':
			afd = open(optarg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (afd == -1)
				fail(optarg);
			break;
		default:
			return 2;
		}
	}
	if (argc - optind != 3) {
		fprintf(stderr, "usage: linewriter PATH ID COUNT [-p] "
		    "[-d USEC] [-s BASE] [-a ACKFILE]\n");
		return 2;
	}
	if ((line = malloc(base + 256)) == NULL)
		fail("malloc");
	id = strtoul(argv[optind + 1], NULL, 10);
	count = strtoul(argv[optind + 2], NULL, 10);
	if ((fd = open(argv[optind], O_WRONLY | O_APPEND)) == -1)
		fail("open");
	for (n = 0; count == 0 || n < count; n++) {
		plen = (int)(base + (n * 7 + id * 13) % 100 + 1);
		len = (size_t)snprintf(line, 64, "w%lu %lu %d ",
		    id, n, plen);
		memset(line + len, 'a' + (int)(n % 26), (size_t)plen);
		len += (size_t)plen;
		line[len++] = '\n';
		if (pieces) {
			cut1 = 1 + (n * 31) % (len - 1);
			cut2 = cut1 + (len - cut1) / 2;
			if (n % 2 == 0 || cut2 == cut1)
				cut2 = len;
			if (write_all(fd, line, cut1) != 0 ||
			    write_all(fd, line + cut1, cut2 - cut1) != 0 ||
			    (cut2 < len &&
			    write_all(fd, line + cut2, len - cut2) != 0))
				fail("write");
		} else if (write_all(fd, line, len) != 0)
			fail("write");
		if (afd != -1) {
			int k = snprintf(ack, sizeof(ack), "%lu\n", n);
			if (pwrite(afd, ack, (size_t)k, 0) != k)
				fail("ack");
		}
		if (usec)
			usleep((useconds_t)usec);
	}
	if (close(fd) == -1)
		fail("close");
	free(line);
	return 0;
}
