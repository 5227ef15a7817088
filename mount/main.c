/*
 * main.c - the tlogfs daemon: options, the store, the FUSE session,
 * signals, daemonizing, logging and the threads.
 *
 *   tlogfs STORE MOUNTPOINT [-f] [-d] [-s] [-o opt[,opt...]]
 *
 * The order is libfuse's passthrough_ll's, with the store opened before
 * anything is mounted, so that a busy, missing or unwritable store (or a
 * missing mountpoint) fails in the foreground with one line and a
 * non-zero status: parse options, fuse_session_new (which checks the
 * rest of them), open the store, signal handlers, fuse_session_mount,
 * daemonize, record the new pid in the store's lock, start the threads,
 * tell the waiting parent, run the loop, then tear down in reverse. A stop (SIGTERM, SIGINT, SIGHUP, fusermount3 -u) flushes every
 * open writer and closes the store, which writes the clean mark; every
 * other signal sent by mistake is ignored.
 *
 * Logging: stderr in the foreground, syslog (daemon facility) once
 * daemonized. A healthy idle mount logs nothing.
 */
#include "config.h"

#include <sys/stat.h>

#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <mntent.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "mount.h"

#define MAX_IDLE_THREADS 10
#define USAGE "tlogfs STORE MOUNTPOINT [-f] [-d] [-s] [-o opt[,opt...]]"

struct tl_opts {
	char *store;
	char *mountpoint;	/* as given: libfuse resolves its copy */
	bool have_mountpoint;
	bool failed;		/* a runtime error, not a usage error */
	bool ro;		/* -o ro (the last of ro, rw wins) */
	uint64_t frame_cache;	/* -o frame_cache=BYTES; 0: the engine's */
};

enum { KEY_RO, KEY_RW, KEY_FRAME_CACHE };

/* -o frame_cache=N[K|M|G]: bytes, at least 1, at most 1 TiB. */
static bool
parse_frame_cache(const char *v, uint64_t *out)
{
	unsigned long long n;
	char *end;
	int shift = 0;

	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno != 0)
		return false;
	if (strcmp(end, "K") == 0)
		shift = 10;
	else if (strcmp(end, "M") == 0)
		shift = 20;
	else if (strcmp(end, "G") == 0)
		shift = 30;
	else if (*end != '\0')
		return false;
	if (n == 0 || n > (1ULL << 40) >> shift)
		return false;
	*out = (uint64_t)n << shift;
	return true;
}

static bool use_syslog;
static int log_max = LOG_INFO;

/* The engine's log sink. */
static void
tl_log(void *arg, int prio, const char *msg)
{
	(void)arg;
	if (prio > log_max)
		return;
	if (use_syslog)
		syslog(prio, "%s", msg);
	else
		fprintf(stderr, "tlogfs: %s\n", msg);
}

/* libfuse's log sink: the same places. */
static void
tl_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t len;

	if ((int)level > log_max)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = strlen(msg);
	if (use_syslog) {
		while (len > 0 && msg[len - 1] == '\n')
			msg[--len] = '\0';
		syslog((int)level, "%s", msg);
	} else
		fputs(msg, stderr);
}

/* libfuse's fuse_cmdline_help() gives max_idle_threads's default as -1;
 * ours is MAX_IDLE_THREADS (run_loop). */
static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: " USAGE "\n"
	    "\n"
	    "Mounts the tlogfs store in the directory STORE on MOUNTPOINT.\n"
	    "default_permissions is always on; -o allow_other shares the\n"
	    "mount with other users. See tlogfs(8).\n"
	    "\n"
	    "    -h   --help            print help\n"
	    "    -V   --version         print version\n"
	    "    -d   -o debug          enable debug output (implies -f)\n"
	    "    -f                     foreground operation\n"
	    "    -o ro                  read-only: nothing in the store "
	    "changes\n"
	    "    -o frame_cache=BYTES   decoded frames of compressed segments "
	    "kept\n"
	    "                           (K, M, G; default: 16M)\n"
	    "    -s                     disable multi-threaded operation\n"
	    "    -o clone_fd            use separate fuse device fd for each "
	    "thread\n"
	    "    -o max_idle_threads=N  the maximum number of idle worker "
	    "threads\n"
	    "                           allowed (default: %d)\n"
	    "    -o max_threads=N       the maximum number of worker threads\n"
	    "                           allowed (default: 10)\n",
	    MAX_IDLE_THREADS);
}

/*
 * Options that only mean something to mount(8) and fstab; mount.fuse3
 * passes some of them on.
 */
static bool
fstab_only(const char *opt)
{
	static const char *const names[] = {
		"defaults", "auto", "noauto", "nofail", "_netdev", "user",
		"users", "nouser", "owner", "group", "nonempty", NULL
	};
	int i;

	if (strncmp(opt, "x-", 2) == 0 || strncmp(opt, "comment=", 8) == 0)
		return true;
	for (i = 0; names[i] != NULL; i++)
		if (strcmp(opt, names[i]) == 0)
			return true;
	return false;
}

/* The mount table's name for path: its directory resolved, then its
 * last component (which may be a dead mount that cannot be resolved). */
static char *
mount_name(const char *path)
{
	char *d = strdup(path), *b = strdup(path), *dir = NULL, *name = NULL;

	if (d != NULL && b != NULL && (dir = realpath(dirname(d), NULL)) != NULL)
		if (asprintf(&name, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir,
		    basename(b)) == -1)
			name = NULL;
	free(dir);
	free(d);
	free(b);
	return name;
}

static bool
is_fuse_mount(const char *name)
{
	struct mntent *m;
	FILE *f;
	bool found = false;

	if ((f = setmntent("/proc/self/mounts", "r")) == NULL)
		return false;
	while ((m = getmntent(f)) != NULL)
		if (strcmp(m->mnt_dir, name) == 0)
			found = strcmp(m->mnt_type, "fuse") == 0 ||
			    strncmp(m->mnt_type, "fuse.", 5) == 0 ||
			    strcmp(m->mnt_type, "fuseblk") == 0;
	endmntent(f);
	return found;
}

/*
 * A FUSE mount whose daemon died (kill -9, a crash) answers ENOTCONN
 * and would keep a restarted daemon (systemd's Restart=) from mounting
 * until someone ran fusermount3 -u: detach it (as root directly, else
 * through fusermount3), with one log line. Returns 0 if it is gone.
 */
static int
clear_dead_mount(char *name, const char *path)
{
	char *argv[] = { "fusermount3", "-u", "-z", "--", name, NULL };
	extern char **environ;
	pid_t pid;
	int st;

	if (umount2(name, MNT_DETACH) == -1 && (errno != EPERM ||
	    posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
	    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0))
		return -1;
	fprintf(stderr, "tlogfs: mountpoint %s: unmounted the dead FUSE "
	    "mount left there by a daemon that died\n", path);
	return 0;
}

/*
 * stat(2) of the mountpoint, through a dead FUSE mount left on it. The
 * kernel may answer a stat of a dead mount from its attribute cache, so
 * a FUSE mount there is asked with an open(2), which reaches its daemon.
 */
static int
stat_mountpoint(const char *path, struct stat *st)
{
	char *name = mount_name(path);
	int fd, r = 0;

	if (name != NULL && is_fuse_mount(name)) {
		if ((fd = open(path, O_RDONLY | O_DIRECTORY)) >= 0)
			close(fd);
		else if (errno == ENOTCONN && clear_dead_mount(name, path) != 0)
			r = -1;
	}
	free(name);
	if (r != 0) {
		errno = ENOTCONN;
		return -1;
	}
	return stat(path, st);
}

static int
tl_opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct tl_opts *o = data;
	struct stat st;

	(void)outargs;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (o->store == NULL) {
			if ((o->store = strdup(arg)) == NULL) {
				o->failed = true;
				return -1;
			}
			return 0;
		}
		if (o->have_mountpoint) {
			fprintf(stderr, "tlogfs: unexpected argument '%s' "
			    "(see --help)\n", arg);
			return -1;
		}
		o->have_mountpoint = true;
		if ((o->mountpoint = strdup(arg)) == NULL) {
			o->failed = true;
			return -1;
		}
		if (stat_mountpoint(arg, &st) == -1) {
			fprintf(stderr, "tlogfs: mountpoint %s: %s\n", arg,
			    strerror(errno));
			o->failed = true;
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "tlogfs: mountpoint %s: %s\n", arg,
			    strerror(ENOTDIR));
			o->failed = true;
			return -1;
		}
		return 1;	/* fuse_parse_cmdline takes it */
	case FUSE_OPT_KEY_OPT:
		return fstab_only(arg) ? 0 : 1;
	case KEY_RO:
	case KEY_RW:
		o->ro = key == KEY_RO;
		return 1;	/* the kernel's flag too */
	case KEY_FRAME_CACHE:
		if (!parse_frame_cache(arg + strlen("frame_cache="),
		    &o->frame_cache)) {
			fprintf(stderr, "tlogfs: -o %s: not a size (bytes, "
			    "or with K, M or G; 1 .. 1T)\n", arg);
			return -1;
		}
		return 0;	/* the daemon's alone */
	default:
		return 1;
	}
}

static const struct fuse_opt tl_opt_spec[] = {
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-r", KEY_RO),
	FUSE_OPT_KEY("rw", KEY_RW),
	FUSE_OPT_KEY("frame_cache=", KEY_FRAME_CACHE),
	FUSE_OPT_END
};

/* -o fsname=STORE (escaped), subtype=tlogfs, default_permissions. */
static int
add_fixed_opts(struct fuse_args *args, const char *store)
{
	char *fsname = NULL, *opts = NULL;
	int r = -1;

	if (asprintf(&fsname, "fsname=%s", store) == -1)
		return -1;
	if (fuse_opt_add_opt_escaped(&opts, fsname) == 0 &&
	    fuse_opt_add_opt(&opts, "subtype=tlogfs") == 0 &&
	    fuse_opt_add_opt(&opts, "default_permissions") == 0 &&
	    fuse_opt_insert_arg(args, 1, "-o") == 0 &&
	    fuse_opt_insert_arg(args, 2, opts) == 0)
		r = 0;
	free(fsname);
	free(opts);
	return r;
}

#ifdef TLOG_TEST_HOOKS
/* Test builds only (tests/hooks/tlogfs): with TLOGFS_TEST_STOP_GATE
 * set, the daemon says the request loop ended, then holds until that
 * file exists (at most 60 s) before it stops; the unlinker says each
 * notice it sends meanwhile (tests/integration/signals.sh). */
static void
test_stop_gate(void)
{
	const char *gate = getenv("TLOGFS_TEST_STOP_GATE");
	int k;

	if (gate == NULL)
		return;
	fprintf(stderr, "tlogfs: test: the request loop ended\n");
	for (k = 0; k < 6000 && access(gate, F_OK) == -1; k++)
		usleep(10000);
}
#else
static void
test_stop_gate(void)
{
}
#endif

/*
 * After the request loop: a request queued since may hold a directory's
 * lock that a notice the unlinker is sending waits for, and joining the
 * unlinker then would wait for ever (a stop with busy writers and
 * readers). So no new notice is sent, and this
 * thread goes on answering requests until the unlinker has returned.
 */
static void
answer_until_quiet(struct fuse_session *se, struct tl_fs *fs)
{
	struct fuse_buf fbuf;
	struct pollfd pfd;
	int r;

	tl_notify_halt(fs);
	memset(&fbuf, 0, sizeof(fbuf));
	pfd.fd = fuse_session_fd(se);
	pfd.events = POLLIN;
	while (!tl_notify_done(fs)) {
		if (poll(&pfd, 1, 100) != 1 || !(pfd.revents & POLLIN))
			continue;
		r = fuse_session_receive_buf(se, &fbuf);
		if (r > 0)
			fuse_session_process_buf(se, &fbuf);
		else if (r != -EINTR && r != -EAGAIN)
			break;		/* unmounted: nothing can wait */
	}
	free(fbuf.mem);
}

static int
run_loop(struct fuse_session *se, const struct fuse_cmdline_opts *opts)
{
	struct fuse_loop_config *cfg;
	int r;

	if (opts->singlethread)
		return fuse_session_loop(se);
	if ((cfg = fuse_loop_cfg_create()) == NULL)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned)opts->clone_fd);
	/* libfuse 3.14.0 warns about an unset idle-thread count. */
	fuse_loop_cfg_set_idle_threads(cfg,
	    opts->max_idle_threads == UINT_MAX ? MAX_IDLE_THREADS :
	    opts->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, opts->max_threads);
	r = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return r;
}

/* Open segments and readers use descriptors: take all the system allows
 * (the engine keeps its own share within a quarter of it). */
static void
raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * TERM, INT and HUP stop the daemon cleanly (libfuse's handlers). Any
 * other signal that can reach a daemon by mistake (a stray kill -USR1,
 * a logrotate script's HUP-or-USR1 guess, a broken pipe, a timer, a job
 * control key in the foreground) would otherwise kill or stop it and
 * leave a dead mount with the held lines lost: ignore them. Signals
 * that report a fault (SEGV, BUS, FPE, ILL, ABRT, TRAP, SYS) keep their
 * default action.
 */
static int
ignore_signals(void)
{
	static const int sigs[] = {
		SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGVTALRM, SIGPROF,
		SIGIO, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGXCPU, SIGXFSZ,
		SIGSTKFLT, SIGPWR
	};
	struct sigaction sa;
	size_t i;
	int s;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) == -1)
			return -1;
	for (s = SIGRTMIN; s <= SIGRTMAX; s++)
		if (sigaction(s, &sa, NULL) == -1)
			return -1;
	/* TERM and INT stop the daemon cleanly even when it was started
	 * with them ignored (a shell starts its background jobs with INT
	 * ignored, by accident as far as a daemon goes): libfuse installs
	 * its handler only over the default action. HUP stays ignored when
	 * it came ignored: that is what nohup(1) asks for. */
	sa.sa_handler = SIG_DFL;
	if (sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1)
		return -1;
	return 0;
}

/*
 * fuse_daemonize() lets the parent exit as soon as the child runs, before
 * the daemon has recorded its pid in the store's lock and started its
 * threads, so a script that read the lock (or waited for that pid) right
 * after `tlogfs STORE MNT` returned found the parent's. Here the parent
 * waits until the daemon says it is ready, and exits 0, or 1 if the
 * daemon failed or died first.
 */
static int ready_fd = -1;

static int
daemonize(void)
{
	int p[2], nullfd;
	char c;

	if (pipe(p) == -1)
		return -1;
	switch (fork()) {
	case -1:
		close(p[0]);
		close(p[1]);
		return -1;
	case 0:
		break;
	default:
		close(p[1]);
		_exit(read(p[0], &c, 1) == 1 && c == 0 ? 0 : 1);
	}
	close(p[0]);
	ready_fd = p[1];
	if (setsid() == -1)
		return -1;
	if (chdir("/") == -1)
		return -1;
	if ((nullfd = open("/dev/null", O_RDWR)) != -1) {
		dup2(nullfd, STDIN_FILENO);
		dup2(nullfd, STDOUT_FILENO);
		dup2(nullfd, STDERR_FILENO);
		if (nullfd > STDERR_FILENO)
			close(nullfd);
	}
	return 0;
}

/* Lets the waiting parent, if any, exit with status. */
static void
daemon_ready(int status)
{
	char c = (char)status;
	ssize_t n;

	if (ready_fd == -1)
		return;
	n = write(ready_fd, &c, 1);	/* fails if the parent is gone */
	(void)n;
	close(ready_fd);
	ready_fd = -1;
}

int
main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct tlog_store_opts so;
	struct tl_opts o = { NULL, NULL, false, false, false, 0 };
	struct fuse_session *se;
	static struct tl_fs fs;
	char err[512] = "", *store = NULL;
	int r, ret = 1;

	memset(&opts, 0, sizeof(opts));
	fuse_set_log_func(tl_fuse_log);
	/* Usage errors exit 2, with one line (libfuse's, for its options). */
	ret = 2;
	if (fuse_opt_parse(&args, &o, tl_opt_spec, tl_opt_proc) == -1) {
		if (o.failed)
			ret = 1;
		goto out_args;
	}
	if (fuse_parse_cmdline(&args, &opts) != 0)
		goto out_args;
	ret = 1;
	if (opts.show_help) {
		usage(stdout);
		fuse_lowlevel_help();
		ret = 0;
		goto out_args;
	}
	if (opts.show_version) {
		printf("tlogfs version %s\n", PACKAGE_VERSION);
		fflush(stdout);
		fuse_lowlevel_version();
		ret = 0;
		goto out_args;
	}
	if (o.store == NULL || o.mountpoint == NULL || opts.mountpoint == NULL) {
		fprintf(stderr, "tlogfs: usage: " USAGE " (see --help)\n");
		ret = 2;
		goto out_args;
	}
	if (opts.debug)
		log_max = LOG_DEBUG;
	if (!tlog_path_trusted(o.store, err, sizeof(err))) {
		fprintf(stderr, "tlogfs: store %s: %s\n", o.store, err);
		goto out_args;
	}
	if (!tlog_path_trusted(o.mountpoint, err, sizeof(err))) {
		fprintf(stderr, "tlogfs: mountpoint %s: %s\n",
		    o.mountpoint, err);
		goto out_args;
	}
	if ((store = realpath(o.store, NULL)) == NULL) {
		fprintf(stderr, "tlogfs: store %s: %s\n", o.store,
		    strerror(errno));
		goto out_args;
	}
	if (add_fixed_opts(&args, store) != 0) {
		fprintf(stderr, "tlogfs: %s\n", strerror(ENOMEM));
		goto out_args;
	}

	fs.debug = opts.debug != 0;
	fs.ro = o.ro;
	pthread_mutex_init(&fs.hlock, NULL);
	LIST_INIT(&fs.handles);
	tl_notify_init(&fs);
	if (tl_poll_init(&fs) != 0 || tl_inodes_init(&fs) != 0) {
		fprintf(stderr, "tlogfs: %s\n", strerror(ENOMEM));
		goto out_args;
	}
	/*
	 * The session checks the remaining options: an unknown one is a
	 * usage error, found before the store is opened (and recovered).
	 */
	if ((se = fuse_session_new(&args, &tl_ops, sizeof(tl_ops), &fs)) ==
	    NULL) {
		ret = 2;
		goto out_inodes;
	}
	fs.se = se;
	raise_nofile();
	memset(&so, 0, sizeof(so));
	so.log = tl_log;
	so.event = tl_event;
	so.event_arg = &fs;
	so.readonly = o.ro;
	so.frame_cache = o.frame_cache;
	/* With clone_fd every worker thread opens /dev/fuse again. */
	so.fd_reserve = opts.clone_fd ? opts.max_threads + 1 : 1;
	/* The threads that call into the store at once: the request
	 * handlers and, unless read-only, the unlinker (notify.c), which
	 * flushes, unlinks and compresses. */
	so.workers = (opts.singlethread ? 1 : opts.max_threads) +
	    (o.ro ? 0 : 1);
#ifdef TLOG_TEST_HOOKS
	/* Test builds only: a restart that looks like a reboot. */
	if ((so.boot_id = getenv("TLOGFS_BOOT_ID")) != NULL &&
	    *so.boot_id == '\0')
		so.boot_id = NULL;
#endif
	r = tlog_store_open(store, &so, &fs.store, err, sizeof(err));
	if (r != 0) {
		fprintf(stderr, "tlogfs: %s\n", *err ? err : strerror(-r));
		fuse_session_destroy(se);
		goto out_inodes;
	}
	fs.events = tlog_store_events(fs.store);
	fs.start_ms = tlog_now(fs.store);

	/* First the defaults and the ignored ones, then libfuse's handlers
	 * over TERM, INT and HUP (it takes only signals at their default). */
	if (ignore_signals() != 0)
		goto out_session;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_signals;
	if (opts.foreground ? chdir("/") : daemonize()) {
		tlog_log(fs.store, LOG_ERR, "cannot daemonize: %s",
		    strerror(errno));
		goto out_unmount;
	}
	if (!opts.foreground) {
		openlog("tlogfs", LOG_PID, LOG_DAEMON);
		use_syslog = true;
	}
	tlog_store_update_pid(fs.store);

	/* Threads start only now, in the daemon. A read-only mount has
	 * none: nothing may seal, be deleted or be flushed. */
	if (fs.ro)
		goto ready;
	if ((r = tl_notify_start(&fs)) != 0) {
		tlog_log(fs.store, LOG_ERR, "cannot start the unlinker: %s",
		    strerror(r));
		goto out_unmount;
	}
	if ((r = tlog_reaper_start(fs.store)) != 0) {
		tlog_log(fs.store, LOG_ERR, "cannot start the reaper: %s",
		    strerror(-r));
		tl_notify_stop(&fs);
		goto out_unmount;
	}
ready:
	daemon_ready(0);
	/* A stop by signal is a clean stop: the loop returns the signal. */
	r = run_loop(se, &opts);
	test_stop_gate();
	tlog_reaper_stop(fs.store);
	/* The kernel ending the connection is a stop too: at an unmount
	 * a read of /dev/fuse that races the connection's end gets
	 * ECONNABORTED rather than ENODEV (libfuse prints "reading device"
	 * for it), as after an abort; the store closes as after any stop
	 * (held.sh covers it with a lazy unmount). */
	ret = (r == 0 || r == SIGTERM || r == SIGINT || r == SIGHUP ||
	    r == -ECONNABORTED || r == ECONNABORTED) ? 0 : 1;
	answer_until_quiet(se, &fs);
	tl_poll_halt(&fs);
	tl_notify_stop(&fs);

out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	/* Writers first, so held partial records reach the store. */
	tl_close_handles(&fs);
	tl_inodes_free(&fs);
	tlog_partition_put(fs.events);
	/* A stop that could not mark the store clean is no clean stop:
	 * a supervisor must be able to tell (tlogfs(8), EXIT STATUS). */
	if (tlog_store_close(fs.store) != 0 && ret == 0)
		ret = 1;
	tl_notify_free(&fs);
	goto out_args;
out_inodes:
	tl_inodes_free(&fs);
out_args:
	tl_poll_free(&fs);
	free(store);
	free(o.store);
	free(o.mountpoint);
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	if (use_syslog)
		closelog();
	return ret;
}
