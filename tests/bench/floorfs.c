/*
 * floorfs.c - the floor of the append benchmarks: a FUSE server that
 * does nothing. Its root holds one file, `sink`, opened with direct I/O
 * as tlogfs's `current` is, whose WRITE only replies that every byte was
 * taken: a write(2) to it is one FUSE round trip and nothing else, the
 * least any FUSE file system can spend on it. Built for `make bench`
 * only (tests/bench/bench.am).
 *
 *   floorfs [-f] [-s] [-o ...] MOUNTPOINT
 *
 * The request loop is set up as tlogfs's is (mount/main.c run_loop,
 * mount/ops.c tl_init): multi-threaded with 10 idle workers, 1 MiB
 * writes, no splice, no async direct I/O, no writeback cache; so the
 * two differ only in what a request does.
 */
#include "config.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SINK_INO 2
#define IDLE_THREADS 10		/* mount/main.c MAX_IDLE_THREADS */

static void
attr_of(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		/* Size 0 always: nothing written is kept. */
		st->st_mode = S_IFREG | 0666;
		st->st_nlink = 1;
	}
}

static void
fl_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~(FUSE_CAP_ASYNC_DIO | FUSE_CAP_WRITEBACK_CACHE |
	    FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
	    FUSE_CAP_SPLICE_MOVE);
	conn->max_write = 1U << 20;
}

static void
fl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "sink") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = SINK_INO;
	attr_of(SINK_INO, &e.attr);
	/* As tlogfs's `current`: neither the name nor the size is cached. */
	fuse_reply_entry(req, &e);
}

static void
fl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != SINK_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	attr_of(ino, &st);
	fuse_reply_attr(req, &st, 0.0);
}

static void
fl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != SINK_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

static void
fl_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	struct fuse_entry_param e;

	(void)mode;
	if (parent != FUSE_ROOT_ID || strcmp(name, "sink") != 0) {
		fuse_reply_err(req, EPERM);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = SINK_INO;
	attr_of(SINK_INO, &e.attr);
	fi->direct_io = 1;
	fuse_reply_create(req, &e, fi);
}

static void
fl_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	(void)ino; (void)buf; (void)off; (void)fi;
	fuse_reply_write(req, size);
}

static void
fl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)ino; (void)size; (void)off; (void)fi;
	fuse_reply_buf(req, NULL, 0);
}

/* FLUSH, RELEASE and FSYNC: nothing to do. */
static void
fl_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	fuse_reply_err(req, 0);
}

static void
fl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi)
{
	(void)datasync;
	fl_flush(req, ino, fi);
}

static const struct fuse_lowlevel_ops fl_ops = {
	.init		= fl_init,
	.lookup		= fl_lookup,
	.getattr	= fl_getattr,
	.open		= fl_open,
	.create		= fl_create,
	.read		= fl_read,
	.write		= fl_write,
	.flush		= fl_flush,
	.release	= fl_flush,
	.fsync		= fl_fsync,
};

int
main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	int r = 1;

	if (fuse_parse_cmdline(&args, &opts) != 0)
		return 1;
	if (opts.mountpoint == NULL) {
		fprintf(stderr, "usage: floorfs [-f] [-s] [-o opts] "
		    "MOUNTPOINT\n");
		goto out;
	}
	if ((se = fuse_session_new(&args, &fl_ops, sizeof(fl_ops), NULL)) ==
	    NULL)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_se;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_sig;
	fuse_daemonize(opts.foreground);
	if (opts.singlethread)
		r = fuse_session_loop(se);
	else if ((cfg = fuse_loop_cfg_create()) != NULL) {
		fuse_loop_cfg_set_clone_fd(cfg, (unsigned)opts.clone_fd);
		fuse_loop_cfg_set_idle_threads(cfg, IDLE_THREADS);
		fuse_loop_cfg_set_max_threads(cfg, opts.max_threads);
		r = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out_se:
	fuse_session_destroy(se);
out:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return r != 0;
}
