/*
 * ship.c - tlogctl ship --nats URL[,URL...] [--stream NAME] [--replicas
 * N] [--subject-prefix P] [--cursor NAME] [--once] [--skip-lost]
 * PATH...: copies the partitions under each PATH into a NATS JetStream
 * stream, one message per record, each partition in offset order,
 * exactly once (doc/shipping.md says what is shipped, what is
 * guaranteed and what each failure does).
 *
 * This file runs the loop that publishes the partitions' records and,
 * after a failure, resyncs with what the stream holds, and the committer
 * thread. Below it, each calling only those after it: ship_find.c finds
 * the partitions, ship_pump.c reads their records through the mount
 * (segread.c, doc/seek.md) and publishes them, ship_nats.c is the
 * JetStream side, ship_ack.c keeps each partition's prefix JetStream has
 * acknowledged and commits its cursor there, and ship_state.c holds what
 * they all share (the partitions' tree, the failure flags, the log
 * line).
 *
 * Threads: this one (discovery, reading, publishing, resyncs), a
 * committer (setxattr of the cursors, which waits for the disk) and
 * libnats's own (acknowledgments, reconnection).
 */
#include "config.h"

#include <sys/eventfd.h>
#include <sys/resource.h>

#include <err.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ship.h"

#define PUMP_MAX (SHIP_WINDOW / 4) /* records of one partition per turn */
#define DISCOVER_MS 1000	/* partitions looked for while some wait */
#define DISCOVER_MIN_MS 100	/* ...and at most this often on inotify */
#define RESCAN_MS 60000		/* ...and otherwise */
#define STOP_SLACK_MS 1000	/* stopped: the main thread's leeway... */
#define CLOSE_MS 2000		/* ...and its time to close (ship_watch) */
#define COMMIT_MS 500		/* cursors are committed */
#define WATCH_MS 20		/* stopping: how often ship_watch looks */

/* The shipper: file-wide, for the signal handler. */
static struct shipper shipper;
static volatile sig_atomic_t stop;
static int64_t stop_at;		/* committer thread only */
static int64_t closing_at;	/* atomic: when cmd_ship began to close */
static int exit_status;		/* atomic: what it exits with */
static int commitfd = -1;	/* an eventfd: wakes the committer */

static void
on_signal(int sig)
{
	uint64_t one = 1;

	(void)sig;
	/* Atomic: the committer thread reads it too (ship_watch); a
	 * lock-free store is safe in a handler, and so is write(2). */
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	ship_wake(&shipper);
	(void)!write(commitfd, &one, sizeof(one));
}

/* Waits up to ms, less if stopped. */
static void
nap(struct shipper *sh, int ms)
{
	int64_t end = mono_ms() + ms, now;

	while (!stop && (now = mono_ms()) < end)
		ship_wait(sh, (int)(end - now));
}

/*
 * The committer calls this every few ms. A server that stops reading
 * leaves libnats blocked in send(2) (a publish, the flush of a close, a
 * request) for as long as it stays so, and nothing on this side can
 * interrupt that. So once stopped, if the main thread has not finished
 * when nothing has been answered for SHIP_QUIET_MS and STOP_SLACK_MS
 * more, or CLOSE_MS after it began to close, the cursors are committed
 * here (for acknowledged records only, as ever) and the process exits.
 * What was in flight unanswered is sent again by the next start, and
 * the duplicate window drops what of it landed (doc/shipping.md).
 */
static void
ship_watch(struct shipper *sh)
{
	int64_t now = mono_ms(), closing, last;
	const char *why;
	bool fatal, stopped;

	closing = __atomic_load_n(&closing_at, __ATOMIC_ACQUIRE);
	stopped = __atomic_load_n(&stop, __ATOMIC_RELAXED);
	if (!stopped && closing == 0)
		return;
	if (stopped && stop_at == 0)
		stop_at = now;
	pthread_mutex_lock(&sh->mu);
	last = sh->last_answer;
	fatal = sh->fatal;
	why = sh->fatal_why;
	pthread_mutex_unlock(&sh->mu);
	if (closing != 0 ? now - closing < CLOSE_MS :
	    now - (last > stop_at ? last : stop_at) < SHIP_QUIET_MS +
	    STOP_SLACK_MS)
		return;
	shiplog("stream %s: the server does not answer; exiting without "
	    "it, the cursors at what was acknowledged", sh->stream);
	if (closing == 0 && fatal)
		shiplog("%s", why);
	ship_commit_all(sh);
	_exit(closing != 0 ? __atomic_load_n(&exit_status, __ATOMIC_ACQUIRE) :
	    fatal ? 1 : 0);
}

static bool committer_stop;	/* atomic: set once, by the main thread */

/* The committer thread: ship_commit_all every COMMIT_MS, and ship_watch,
 * until committer_stop; it sleeps in poll(2) on commitfd in between. */
static void *
committer(void *arg)
{
	struct shipper *sh = arg;
	struct pollfd pfd = { .fd = commitfd, .events = POLLIN };
	int64_t next = mono_ms() + COMMIT_MS, ms;
	uint64_t v;

	while (!__atomic_load_n(&committer_stop, __ATOMIC_ACQUIRE)) {
		ship_watch(sh);
		if ((ms = next - mono_ms()) <= 0) {
			ship_commit_all(sh);
			next = mono_ms() + COMMIT_MS;
			ms = COMMIT_MS;
		}
		if (__atomic_load_n(&stop, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&closing_at, __ATOMIC_ACQUIRE) != 0)
			ms = ms < WATCH_MS ? ms : WATCH_MS;
		if (poll(&pfd, 1, (int)ms) == 1)
			(void)!read(commitfd, &v, sizeof(v));
	}
	return NULL;
}

/* Has the committer look at once (stop, closing). */
static void
committer_wake(void)
{
	uint64_t one = 1;

	(void)!write(commitfd, &one, sizeof(one));
}

/* ---- the loop ---- */

/* Waits until what is in flight is answered, or nothing has been
 * answered nor sent for quiet ms. */
static void
settle(struct shipper *sh, int quiet)
{
	int64_t left, last;
	bool wait;

	for (;;) {
		pthread_mutex_lock(&sh->mu);
		/* The last answer, or the last publish if later. */
		last = sh->last_answer;
		if (sh->tail > sh->head &&
		    sh->ring[(sh->tail - 1) % SHIP_WINDOW].sent > last)
			last = sh->ring[(sh->tail - 1) % SHIP_WINDOW].sent;
		left = quiet - (mono_ms() - last);
		wait = sh->waiting = sh->inflight > 0 && left > 0;
		pthread_mutex_unlock(&sh->mu);
		if (!wait)
			return;
		ship_wait(sh, (int)left);
	}
}

/*
 * A test hook of test builds only (tests/hooks/tlogctl,
 * tests/integration/ship_late.sh): with
 * TLOGCTL_TEST_RESYNC_GATE set, a resync waits, once what was in flight
 * is given up and before it asks the stream anything, until that file
 * exists (at most 60 s), so a test can put a late message in the stream.
 */
static void
resync_gate(void)
{
#ifdef TLOG_TEST_HOOKS
	const char *gate = getenv("TLOGCTL_TEST_RESYNC_GATE");
	int k;

	for (k = 0; gate != NULL && k < 6000 && access(gate, F_OK) == -1;
	    k++)
		usleep(10000);
#endif
}

/*
 * After a failed or unanswered publish: let the rest be answered, give
 * up on what is not, and move each partition that lost some back to
 * what the stream holds of it (its last message there), then publish
 * again. Every later message had failed too (ship_nats.c: the chain of
 * expected ids), so nothing is out of order in the stream.
 *
 * But the chain is of Nats-Msg-Ids, which name records, not sendings:
 * a message of a shipper killed a moment ago, or of this one before a
 * resync (given up unanswered), can still land later, chained to a
 * record this one sent again, and so in another place than it was sent
 * for: after a gap in its partition (doc/shipping.md). The stream's last
 * record then says nothing of those before it. A record the stream
 * refused since the last resync was not in it then; if the stream's last
 * record is at or past it, it got there that way, so the partition goes
 * back to its acknowledged prefix instead, and the duplicate window
 * drops what the stream does hold.
 */
static void
recover(struct shipper *sh)
{
	struct ship_part *p;
	char why[256], qwhy[256];
	uint64_t last;
	char *data;
	size_t len;
	int delay, r;
	bool late, said = false;

	pthread_mutex_lock(&sh->mu);
	strlcpy(why, sh->why, sizeof(why));
	if (sh->acks > 0)
		sh->resync_streak = 0;
	sh->acks = 0;
	pthread_mutex_unlock(&sh->mu);
	if (mono_ms() - sh->resync_said >= 30000) {
		shiplog("stream %s: %s; resending from what the stream holds"
		    "%s", sh->stream, why, sh->resync_quiet ? " (and the same, "
		    "more times since the last line)" : "");
		sh->resync_said = mono_ms();
		sh->resync_quiet = 0;
		said = true;
	} else
		sh->resync_quiet++;
	settle(sh, SHIP_QUIET_MS);
	nats_abandon(sh);
	resync_gate();

	for (delay = 200;; delay = delay * 2 < SHIP_BACKOFF_MAX_MS ?
	    delay * 2 : SHIP_BACKOFF_MAX_MS) {
		if (stop || sh->fatal)
			return;
		r = nats_connected(sh) ? nats_stream_ok(sh, qwhy,
		    sizeof(qwhy)) : -1;
		if (r == -1 && !nats_connected(sh))
			strlcpy(qwhy, "not connected", sizeof(qwhy));
		RB_FOREACH(p, part_tree, &sh->parts) {
			if (r == -1 || stop)
				break;
			if (!p->failed)
				continue;
			r = nats_last(sh, p, &last, &data, &len, qwhy,
			    sizeof(qwhy));
			if (r == -1)
				break;
			if (r == 1)
				free(data);
			pthread_mutex_lock(&sh->mu);
			late = r == 1 && last + 1 > p->acked &&
			    p->refused != 0 && last >= p->refused - 1;
			if (r == 1 && last + 1 > p->acked &&
			    last + 1 <= p->next && !late)
				p->acked = last + 1;
			p->next = p->acked;
			sh->changes++;
			p->first_seq = p->last_seq = 0;
			p->failed = false;
			p->refused = 0;
			p->skipped = 0;
			/* Stopped at lost records with some before them
			 * not in the stream: those are sent again, up to
			 * the lost ones (said already). */
			if (p->lost && !p->moved) {
				p->lost = p->dead = false;
				p->open = false;
			}
			pthread_mutex_unlock(&sh->mu);
			if (late)
				shiplog("%s: stream %s holds record %" PRIu64
				    " of %s, which it refused since the last "
				    "resync: a late message of an earlier "
				    "sending; shipping again from %" PRIu64
				    ", the stream may hold records out of "
				    "order", p->path, sh->stream, last,
				    p->subject, p->acked);
			if (!p->dead)
				ship_part_seek(sh, p, p->acked, true);
			r = 0;
		}
		if (stop)
			return;
		if (r != -1)
			break;
		if (said || mono_ms() - sh->resync_said >= 30000) {
			shiplog("stream %s: cannot ask what it holds: %s; "
			    "retrying every %d s at most, the cursors stay",
			    sh->stream, qwhy, SHIP_BACKOFF_MAX_MS / 1000);
			sh->resync_said = mono_ms();
			said = false;
		}
		nap(sh, delay);
	}
	pthread_mutex_lock(&sh->mu);
	sh->head = sh->hint = sh->tail;
	__atomic_store_n(&sh->failing, false, __ATOMIC_RELEASE);
	sh->why[0] = '\0';
	pthread_mutex_unlock(&sh->mu);
	/* Failing again and again with nothing acknowledged between:
	 * back off before the next try. */
	if (sh->resync_streak++ > 0)
		nap(sh, sh->resync_streak < 6 ? 100 << sh->resync_streak : SHIP_BACKOFF_MAX_MS);
}

/* Whether the oldest flight waits longer than it may (its answer was
 * lost, or the message was). */
static void
check_stall(struct shipper *sh)
{
	struct flight *f;

	pthread_mutex_lock(&sh->mu);
	if (sh->head < sh->tail) {
		f = &sh->ring[sh->head % SHIP_WINDOW];
		if (f->state == FL_PENDING &&
		    mono_ms() - f->sent > SHIP_ACK_WAIT_MS)
			ship_failing(sh, "no acknowledgment for %d s",
			    SHIP_ACK_WAIT_MS / 1000);
	}
	pthread_mutex_unlock(&sh->mu);
}

static size_t
room(struct shipper *sh)
{
	size_t r = 0;

	pthread_mutex_lock(&sh->mu);
	if (sh->inflight < SHIP_WINDOW &&
	    sh->inflight_bytes < SHIP_WINDOW_BYTES &&
	    sh->tail - sh->head < SHIP_WINDOW)
		r = SHIP_WINDOW - (size_t)(sh->tail - sh->head);
	pthread_mutex_unlock(&sh->mu);
	return r < PUMP_MAX ? r : PUMP_MAX;
}

/* One turn over the partitions to look at (sh->todo), each once, as
 * long as the window has room: true if every partition is caught up
 * (or waits for its start: false). */
static bool
turn(struct shipper *sh)
{
	struct ship_part *p, *last = TAILQ_LAST(&sh->todo, part_list);
	size_t r;
	int k;

	while ((p = TAILQ_FIRST(&sh->todo)) != NULL && !ship_is_failing(sh) &&
	    !stop) {
		if ((r = room(sh)) == 0)
			return false;
		TAILQ_REMOVE(&sh->todo, p, q);
		p->queued = Q_NONE;
		if (p->dead)
			goto next;
		if (!p->ready) {
			/* Opened where it starts (on todo), or later. */
			ship_part_start(sh, p);
			goto next;
		}
		if (!p->open) {
			ship_part_seek(sh, p, p->next, true);
			goto next;
		}
		p->caught_up = false;
		if ((k = ship_pump(sh, p, r)) > 0)
			p->got = true;
		/* More to read: after the others. */
		if (!p->caught_up && !p->dead && p->queued == Q_NONE)
			ship_todo(sh, p);
next:
		if (p == last)
			break;
	}
	if (!TAILQ_EMPTY(&sh->todo))
		return false;
	TAILQ_FOREACH(p, &sh->later, q)
		if (!p->caught_up && !p->dead)
			return false;
	__atomic_store_n(&sh->caught_up, true, __ATOMIC_RELEASE);
	return true;
}

/* When the partitions are looked for next: at the rescan's time, or
 * soon (at most every DISCOVER_MIN_MS) once sh->rescan asks. */
static int64_t
discover_at(struct shipper *sh)
{
	if (sh->rescan && sh->discover_at > sh->discovered + DISCOVER_MIN_MS)
		sh->discover_at = sh->discovered + DISCOVER_MIN_MS;
	sh->rescan = false;
	return sh->discover_at;
}

/* How long the main thread may wait (-1: until woken): until the
 * partitions are to be looked for, the oldest flight is overdue
 * (check_stall), or a second while the connection is down. */
static int
wait_ms(struct shipper *sh, bool connected)
{
	int64_t ms = -1, now = mono_ms(), d;

	if (!sh->once)
		ms = discover_at(sh) > now ? sh->discover_at - now : 0;
	if (!connected && (ms < 0 || ms > 1000))
		ms = 1000;
	pthread_mutex_lock(&sh->mu);
	if (sh->head < sh->tail) {
		d = sh->ring[sh->head % SHIP_WINDOW].sent + SHIP_ACK_WAIT_MS +
		    1 - now;
		if (ms < 0 || d < ms)
			ms = d > 0 ? d : 0;
	}
	pthread_mutex_unlock(&sh->mu);
	return (int)ms;
}

static int
run(struct shipper *sh)
{
	bool connected, done, full, acks;

	for (;;) {
		if (stop || sh->fatal)
			break;
		if (!sh->once && mono_ms() >= discover_at(sh)) {
			sh->discovered = mono_ms();
			sh->discover_at = sh->discovered + (ship_discover(sh) ?
			    DISCOVER_MS : RESCAN_MS);
		}
		check_stall(sh);
		if (ship_is_failing(sh)) {
			recover(sh);
			continue;
		}
		connected = nats_connected(sh);
		done = connected && turn(sh);
		full = connected && !TAILQ_EMPTY(&sh->todo) && room(sh) == 0;
		pthread_mutex_lock(&sh->mu);
		if (sh->once && done && sh->inflight == 0 &&
		    !ship_is_failing(sh)) {
			pthread_mutex_unlock(&sh->mu);
			break;
		}
		/* Answers wake it only when it waits for them: the
		 * window is full, or --once waits for the last ones. */
		acks = (sh->once && done) || full;
		sh->waiting = acks;
		pthread_mutex_unlock(&sh->mu);
		/* More to read now: the other partitions' wake-ups are
		 * taken in passing, so that they have their turn too. */
		ship_wait(sh, connected && !acks && !TAILQ_EMPTY(&sh->todo) ?
		    0 : wait_ms(sh, connected));
	}
	/* Stopped: what is in flight gets its answers, then the cursors
	 * are committed for what was acknowledged. */
	settle(sh, SHIP_QUIET_MS);
	if (sh->fatal) {
		shiplog("%s", sh->fatal_why);
		return 1;
	}
	/* A partition stopped at lost records (said when it was). */
	return sh->once && sh->lost_stop ? 1 : 0;
}

int
cmd_ship(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "nats", required_argument, NULL, 'n' },
		{ "stream", required_argument, NULL, 's' },
		{ "replicas", required_argument, NULL, 'r' },
		{ "subject-prefix", required_argument, NULL, 'p' },
		{ "cursor", required_argument, NULL, 'c' },
		{ "once", no_argument, NULL, 'o' },
		{ "skip-lost", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct shipper *sh = &shipper;
	struct rlimit rl;
	pthread_t ct;
	const char *errstr;
	int c, ret;

	sh->prefix = "tlog";
	sh->cursor = "ship";
	sh->replicas = 1;
	while ((c = next_opt(argc, argv, "+:h", longopts)) != -1) {
		switch (c) {
		case 'n':
			ship_parse_urls(sh, optarg);
			break;
		case 's':
			if ((sh->stream = strdup(optarg)) == NULL)
				err(1, NULL);
			break;
		case 'r':
			sh->replicas = (int)strtonum(optarg, 1, 5, &errstr);
			if (errstr != NULL) {
				usage("ship", "--replicas %s: not 1 to 5",
				    optarg);
			}
			break;
		case 'p':
			sh->prefix = optarg;
			break;
		case 'c':
			sh->cursor = optarg;
			break;
		case 'o':
			sh->once = true;
			break;
		case 'L':
			sh->skip_lost = true;
			break;
		default:
			usage("ship", "unknown option");
		}
	}
	if (sh->nurls == 0) {
		usage("ship", "--nats URL is needed");
	}
	if (!ship_tokens_ok(sh->prefix)) {
		usage("ship", "--subject-prefix %s: not NATS subject tokens "
		    "(A-Z a-z 0-9 _ -, dot-separated)", sh->prefix);
	}
	if (sh->stream == NULL)
		sh->stream = ship_default_stream(sh->prefix);
	/* What JetStream takes as a name, and a file name besides. */
	if (sh->stream[0] == '\0' || strlen(sh->stream) > 255 ||
	    strpbrk(sh->stream, " \t\r\n\f.*>/\\") != NULL) {
		usage("ship", "--stream %s: not a JetStream stream name (no "
		    "spaces, dots, *, >, / or \\)", sh->stream);
	}
	if (!cursor_name_ok(sh->cursor)) {
		usage("ship", "--cursor %s: not a cursor name (1-64 of A-Z a-z "
		    "0-9 . _ -)", sh->cursor);
	}
	if (argc - optind < 1) {
		usage("ship", "no PATH");
	}
	snprintf(sh->cursor_key, sizeof(sh->cursor_key), "user.cursor.%s",
	    sh->cursor);

	ship_paths(argc - optind, argv + optind);
	/* Each partition followed holds two descriptors (its directory
	 * and its open segment): take all the system allows. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}

	RB_INIT(&sh->parts);
	pthread_mutex_init(&sh->mu, NULL);
	pthread_mutex_init(&sh->commit_mu, NULL);
	ship_wait_init(sh);
	if ((commitfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		err(1, "ship");
	if ((sh->ring = calloc(SHIP_WINDOW, sizeof(*sh->ring))) == NULL)
		err(1, NULL);
	sh->head = sh->tail = sh->hint = 1;	/* flight 0 means none */
	ship_buf_need(READ_CHUNK);

	catch_stop(on_signal);
	signal(SIGPIPE, SIG_IGN);

	nats_test_hooks();
	nats_open(sh);
	/* Said once the start cannot fail any more (a failed start is
	 * one line). */
	ship_say_made_ids();
	ship_discover(sh);
	if (pthread_create(&ct, NULL, committer, sh) != 0)
		errx(1, "ship: cannot start a thread");
	ret = run(sh);
	/* Closing can block too (ship_watch): the committer runs on. */
	__atomic_store_n(&exit_status, ret, __ATOMIC_RELEASE);
	__atomic_store_n(&closing_at, mono_ms(), __ATOMIC_RELEASE);
	committer_wake();
	nats_close(sh);
	__atomic_store_n(&committer_stop, true, __ATOMIC_RELEASE);
	committer_wake();
	pthread_join(ct, NULL);
	ship_commit_all(sh);
	return ret;
}
