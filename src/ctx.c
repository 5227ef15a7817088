/*
 * ctx.c - a store's shared context (ctx.h): options, engine time, the log
 * and its rate limit for errors, inode numbers.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "ctx.h"
#include "index.h"

void
tlog_ctx_init(struct tlog_ctx *ctx, const struct tlog_store_opts *opts)
{
	memset(ctx, 0, sizeof(*ctx));
	if (opts != NULL)
		ctx->opts = *opts;
	ctx->ro = ctx->opts.readonly;
	ctx->log.fn = ctx->opts.log;
	ctx->log.arg = ctx->opts.log_arg;
	ctx->next_ino = TLOG_ROOT_INO + 1;
	ctx->free_limit = INT64_MAX;
	ctx->cap_records = ctx->opts.cap_records != 0 ?
	    ctx->opts.cap_records : TLOG_CAP_RECORDS;
	ctx->held_max = ctx->opts.held_max != 0 ? ctx->opts.held_max :
	    TLOG_HELD_MAX;
	pthread_mutex_init(&ctx->work_lock, NULL);
	pthread_cond_init(&ctx->io_idle, NULL);
	tlog_clock_init(&ctx->clock, ctx->opts.clock, ctx->opts.boot_clock,
	    ctx->opts.clock_arg, &ctx->log);
}

void
tlog_ctx_destroy(struct tlog_ctx *ctx)
{
	pthread_cond_destroy(&ctx->io_idle);
	pthread_mutex_destroy(&ctx->work_lock);
}

int64_t
tlog_ctx_now(struct tlog_ctx *ctx)
{
	return tlog_clock_now(ctx != NULL ? &ctx->clock : NULL);
}

uint64_t
tlog_ctx_ino(struct tlog_ctx *ctx)
{
	return __atomic_fetch_add(&ctx->next_ino, 1, __ATOMIC_RELAXED);
}

void
tlog_ctx_log(struct tlog_ctx *ctx, int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tlog_sink_vlog(ctx != NULL ? &ctx->log : NULL, prio, fmt, ap);
	va_end(ap);
}

void
tlog_ctx_log_err(struct tlog_ctx *ctx, const char *fmt, ...)
{
	int64_t now = tlog_ctx_now(ctx), last;
	unsigned dropped;
	char msg[900];
	va_list ap;

	TLOG_METRIC_ADD(ctx, errors, 1);
	/* One line per 30 s: the one thread whose exchange opens the next
	 * window says it, with the count suppressed before it (give or
	 * take the few that race the line: every one is counted once). */
	last = __atomic_load_n(&ctx->last_err_ts, __ATOMIC_RELAXED);
	if ((last != 0 && now - last < 30000) ||
	    !__atomic_compare_exchange_n(&ctx->last_err_ts, &last, now, false,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&ctx->suppressed, 1, __ATOMIC_RELAXED);
		return;
	}
	dropped = __atomic_exchange_n(&ctx->suppressed, 0, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (dropped)
		tlog_ctx_log(ctx, LOG_ERR, "%s (%u similar errors suppressed)",
		    msg, dropped);
	else
		tlog_ctx_log(ctx, LOG_ERR, "%s", msg);
}

/* The stray under dir/file: logged, never opened again by this call. */
static int
stray(struct tlog_ctx *ctx, const char *dir, const char *file, mode_t mode)
{
	const char *what = S_ISLNK(mode) ? "a symbolic link" :
	    S_ISFIFO(mode) ? "a FIFO" : S_ISDIR(mode) ? "a directory" :
	    S_ISSOCK(mode) ? "a socket" : S_ISCHR(mode) || S_ISBLK(mode) ?
	    "a device" : "not a regular file";

	tlog_ctx_log(ctx, LOG_WARNING, "%s%s%s: %s: left alone, treated as "
	    "missing", dir, *dir != '\0' ? "/" : "", file, what);
	return -ENOENT;
}

int
tlog_ctx_open_file(struct tlog_ctx *ctx, int dirfd, const char *dir,
    const char *file, int flags)
{
	struct stat st;
	int fd, r;

	/* A look first, so that no device's driver is ever opened; the
	 * open and fstat below catch a swap in between. */
	if (fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return stray(ctx, dir, file, st.st_mode);
	fd = openat(dirfd, file, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ELOOP || errno == ENXIO || errno == EISDIR)
			return stray(ctx, dir, file, errno == ELOOP ? S_IFLNK :
			    errno == ENXIO ? S_IFIFO : S_IFDIR);
		return -errno;
	}
	if (fstat(fd, &st) == -1)
		r = -errno;
	else if (S_ISREG(st.st_mode))
		return fd;
	else
		r = stray(ctx, dir, file, st.st_mode);
	close(fd);
	return r;
}

ssize_t
tlog_ctx_read_file(struct tlog_ctx *ctx, int dirfd, const char *dir,
    const char *file, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	buf[0] = '\0';
	if ((fd = tlog_ctx_open_file(ctx, dirfd, dir, file, O_RDONLY)) < 0)
		return fd;
	n = read(fd, buf, len - 1);
	if (n == -1)
		n = -errno;
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}
