/*
 * errno_probe - performs one system call and prints its outcome as "OK"
 * (plus a value where there is one) or the errno's name ("EPERM"), for
 * the integration tests: the shell cannot tell errnos apart.
 *
 *   errno_probe open PATH FLAGS        FLAGS: rdonly|wronly|rdwr, then
 *                                      ,append ,trunc ,creat ,excl
 *   errno_probe write PATH TEXT        open O_WRONLY|O_APPEND, write, close
 *   errno_probe fsync PATH             open O_WRONLY|O_APPEND, fsync
 *   errno_probe truncate PATH LEN
 *   errno_probe mkdir PATH [MODE]      errno_probe rmdir PATH
 *   errno_probe unlink PATH            errno_probe mknod PATH
 *   errno_probe rename FROM TO [noreplace|exchange]
 *   errno_probe link FROM TO           errno_probe symlink TARGET PATH
 *   errno_probe chmod PATH MODE        errno_probe chown PATH UID GID
 *   errno_probe utimens PATH
 *   errno_probe setxattr PATH NAME VALUE [create|replace]
 *   errno_probe getxattr PATH NAME [SIZE]   prints OK VALUE (SIZE 0: OK N)
 *   errno_probe removexattr PATH NAME  errno_probe listxattr PATH
 *   errno_probe mmap PATH shared|private   maps the file read-only
 *                                      (O_RDONLY, PROT_READ), prints OK and
 *                                      its bytes up to the first newline
 *   errno_probe stat PATH              stat(2), no statx fields (the kernel
 *                                      may answer from its cache)
 *   errno_probe cat PATH               the file's bytes, or the errno's name
 *   errno_probe ls PATH                the names in a directory, one a line
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
parse_flags(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int flags = 0;

	for (tok = strtok_r(copy, ",|", &save); tok != NULL;
	    tok = strtok_r(NULL, ",|", &save)) {
		if (strcmp(tok, "rdonly") == 0)
			flags |= O_RDONLY;
		else if (strcmp(tok, "wronly") == 0)
			flags |= O_WRONLY;
		else if (strcmp(tok, "rdwr") == 0)
			flags |= O_RDWR;
		else if (strcmp(tok, "append") == 0)
			flags |= O_APPEND;
		else if (strcmp(tok, "trunc") == 0)
			flags |= O_TRUNC;
		else if (strcmp(tok, "creat") == 0)
			flags |= O_CREAT;
		else if (strcmp(tok, "excl") == 0)
			flags |= O_EXCL;
		else {
			fprintf(stderr, "errno_probe: unknown flag %s\n", tok);
			exit(2);
		}
	}
	free(copy);
	return flags;
}

static int
result(int r)
{
	if (r == -1) {
		/* Linux's ENOTSUP is EOPNOTSUPP; doc/design.md says ENOTSUP. */
		const char *name = errno == ENOTSUP ? "ENOTSUP" :
		    strerrorname_np(errno);
		printf("%s\n", name != NULL ? name : "E?");
		return 1;
	}
	printf("OK\n");
	return 0;
}

static void
need(int argc, int n)
{
	if (argc < n) {
		fprintf(stderr, "errno_probe: missing arguments\n");
		exit(2);
	}
}

int
main(int argc, char *argv[])
{
	const char *op, *path;
	char buf[65536];
	ssize_t n;
	int fd, r, flags;

	need(argc, 3);
	op = argv[1];
	path = argv[2];
	if (strcmp(op, "open") == 0) {
		need(argc, 4);
		fd = open(path, parse_flags(argv[3]), 0644);
		if (fd >= 0)
			close(fd);
		return result(fd >= 0 ? 0 : -1);
	}
	if (strcmp(op, "write") == 0 || strcmp(op, "fsync") == 0) {
		fd = open(path, O_WRONLY | O_APPEND);
		if (fd == -1)
			return result(-1);
		if (strcmp(op, "write") == 0) {
			need(argc, 4);
			r = write(fd, argv[3], strlen(argv[3])) ==
			    (ssize_t)strlen(argv[3]) ? 0 : -1;
		} else
			r = fsync(fd);
		if (r == 0)
			r = close(fd);
		else
			close(fd);
		return result(r);
	}
	if (strcmp(op, "truncate") == 0) {
		need(argc, 4);
		return result(truncate(path, atoll(argv[3])));
	}
	if (strcmp(op, "mkdir") == 0)
		return result(mkdir(path, argc > 3 ?
		    (mode_t)strtol(argv[3], NULL, 8) : 0755));
	if (strcmp(op, "rmdir") == 0)
		return result(rmdir(path));
	if (strcmp(op, "unlink") == 0)
		return result(unlink(path));
	if (strcmp(op, "mknod") == 0)
		return result(mknod(path, S_IFIFO | 0644, 0));
	if (strcmp(op, "rename") == 0) {
		need(argc, 4);
		flags = 0;
		if (argc > 4 && strcmp(argv[4], "noreplace") == 0)
			flags = RENAME_NOREPLACE;
		else if (argc > 4 && strcmp(argv[4], "exchange") == 0)
			flags = RENAME_EXCHANGE;
		return result(renameat2(AT_FDCWD, path, AT_FDCWD, argv[3],
		    (unsigned)flags));
	}
	if (strcmp(op, "link") == 0) {
		need(argc, 4);
		return result(link(path, argv[3]));
	}
	if (strcmp(op, "symlink") == 0) {
		need(argc, 4);
		return result(symlink(path, argv[3]));
	}
	if (strcmp(op, "chmod") == 0) {
		need(argc, 4);
		return result(chmod(path, (mode_t)strtol(argv[3], NULL, 8)));
	}
	if (strcmp(op, "chown") == 0) {
		need(argc, 5);
		return result(chown(path, (uid_t)atol(argv[3]),
		    (gid_t)atol(argv[4])));
	}
	if (strcmp(op, "utimens") == 0)
		return result(utimensat(AT_FDCWD, path, NULL, 0));
	if (strcmp(op, "setxattr") == 0) {
		need(argc, 5);
		flags = 0;
		if (argc > 5 && strcmp(argv[5], "create") == 0)
			flags = XATTR_CREATE;
		else if (argc > 5 && strcmp(argv[5], "replace") == 0)
			flags = XATTR_REPLACE;
		return result(setxattr(path, argv[3], argv[4],
		    strlen(argv[4]), flags));
	}
	if (strcmp(op, "getxattr") == 0) {
		size_t size = sizeof(buf) - 1;
		need(argc, 4);
		if (argc > 4)
			size = (size_t)atol(argv[4]);
		n = getxattr(path, argv[3], size ? buf : NULL, size);
		if (n == -1)
			return result(-1);
		if (size == 0)
			printf("OK %zd\n", n);
		else
			printf("OK %.*s\n", (int)n, buf);
		return 0;
	}
	if (strcmp(op, "removexattr") == 0) {
		need(argc, 4);
		return result(removexattr(path, argv[3]));
	}
	if (strcmp(op, "listxattr") == 0) {
		n = listxattr(path, buf, sizeof(buf));
		if (n == -1)
			return result(-1);
		printf("OK");
		for (char *p = buf; p < buf + n; p += strlen(p) + 1)
			printf(" %s", p);
		printf("\n");
		return 0;
	}
	if (strcmp(op, "mmap") == 0) {
		struct stat st;
		char *m, *nl;
		size_t len;

		need(argc, 4);
		if ((fd = open(path, O_RDONLY)) == -1 || fstat(fd, &st) == -1)
			return result(-1);
		len = st.st_size > 0 ? (size_t)st.st_size : 1;
		m = mmap(NULL, len, PROT_READ, strcmp(argv[3], "shared") == 0 ?
		    MAP_SHARED : MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED)
			return result(-1);
		nl = memchr(m, '\n', len);
		printf("OK %.*s\n", (int)(nl != NULL ? nl - m : (ssize_t)len),
		    m);
		munmap(m, len);
		close(fd);
		return 0;
	}
	if (strcmp(op, "stat") == 0) {
		struct stat st;

		return result(stat(path, &st));
	}
	if (strcmp(op, "cat") == 0) {
		if ((fd = open(path, O_RDONLY)) == -1)
			return result(-1);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, (size_t)n, stdout);
		if (n == -1)
			return result(-1);
		close(fd);
		return 0;
	}
	if (strcmp(op, "ls") == 0) {
		DIR *d = opendir(path);
		struct dirent *de;

		if (d == NULL)
			return result(-1);
		errno = 0;
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				printf("%s\n", de->d_name);
		if (errno != 0)
			return result(-1);
		closedir(d);
		return 0;
	}
	fprintf(stderr, "errno_probe: unknown operation %s\n", op);
	return 2;
}
