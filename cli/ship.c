/*
 * ship.c - tlogctl ship --nats URL[,URL...] [--stream NAME] [--replicas
 * N] [--subject-prefix P] [--cursor NAME] [--once] PATH...: copies the
 * partitions under each PATH into a NATS JetStream stream, one message
 * per record, each partition in offset order, exactly once
 * (doc/shipping.md says what is shipped, what is guaranteed and what
 * each failure does).
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

#include <err.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ship.h"

#define PUMP_MAX (SHIP_WINDOW / 4) /* records of one partition per turn */
#define DISCOVER_MS 1000	/* new partitions are looked for */
#define STOP_SLACK_MS 1000	/* stopped: the main thread's leeway... */
#define CLOSE_MS 2000		/* ...and its time to close (ship_watch) */
#define COMMIT_MS 500		/* cursors are committed */

static volatile sig_atomic_t stop;
static int64_t stop_at;		/* committer thread only */
static int64_t closing_at;	/* atomic: when cmd_ship began to close */
static int exit_status;		/* atomic: what it exits with */

static void
on_signal(int sig)
{
	(void)sig;
	/* Atomic: the committer thread reads it too (ship_watch); a
	 * lock-free store is safe in a handler. */
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

/* Waits on sh->cv (mu held) for ms at most. */
static void
wait_ms(struct shipper *sh, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
}

/* Sleeps ms at most, less if stopped. */
static void
nap(struct shipper *sh, int ms)
{
	int64_t end = mono_ms() + ms;

	pthread_mutex_lock(&sh->mu);
	while (!stop && mono_ms() < end)
		wait_ms(sh, 100);
	pthread_mutex_unlock(&sh->mu);
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
 * until committer_stop. */
static void *
committer(void *arg)
{
	struct shipper *sh = arg;
	int64_t next = mono_ms() + COMMIT_MS;

	while (!__atomic_load_n(&committer_stop, __ATOMIC_ACQUIRE)) {
		ship_watch(sh);
		if (mono_ms() < next) {
			usleep(20000);
			continue;
		}
		ship_commit_all(sh);
		next = mono_ms() + COMMIT_MS;
	}
	return NULL;
}

/* ---- the loop ---- */

/* Waits until what is in flight is answered, or nothing has been for
 * quiet ms. */
static void
settle(struct shipper *sh, int quiet)
{
	pthread_mutex_lock(&sh->mu);
	while (sh->inflight > 0 && mono_ms() - sh->last_answer < quiet)
		wait_ms(sh, 100);
	pthread_mutex_unlock(&sh->mu);
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
			p->first_seq = p->last_seq = 0;
			p->failed = false;
			p->refused = 0;
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

/* One turn over the partitions, from where the last one stopped: true
 * if every partition is caught up. */
static bool
turn(struct shipper *sh, bool *progress)
{
	struct ship_part *p;
	size_t i, r;
	int64_t now = mono_ms();
	bool done = true;
	int k;

	p = sh->rr != NULL ? sh->rr : RB_MIN(part_tree, &sh->parts);
	for (i = 0; i < sh->nparts && p != NULL && !ship_is_failing(sh) && !stop; i++,
	    p = (p = RB_NEXT(part_tree, &sh->parts, p)) != NULL ? p :
	    RB_MIN(part_tree, &sh->parts)) {
		if (p->dead)
			continue;
		if (!p->ready) {
			if (now >= p->look_at)
				ship_part_start(sh, p);
			if (!p->ready) {
				done = false;
				continue;
			}
		}
		if (!p->open) {
			if (p->caught_up && now < p->look_at)
				continue;
			ship_part_seek(sh, p, p->next, true);
			if (!p->open) {
				continue;
			}
		}
		if (p->caught_up && now < p->look_at)
			continue;
		if ((r = room(sh)) == 0) {
			sh->rr = p;
			return false;
		}
		p->caught_up = false;
		k = ship_pump(sh, p, r);
		if (k > 0) {
			*progress = true;
			p->idle_ms = FOLLOW_MS;
		}
		if (!p->caught_up)
			done = false;
	}
	sh->rr = p;
	/* Every partition visited, and each caught up. */
	if (done && i == sh->nparts)
		__atomic_store_n(&sh->caught_up, true, __ATOMIC_RELEASE);
	return done;
}

static int
run(struct shipper *sh)
{
	int64_t next_discover = 0;
	bool progress, done;

	for (;;) {
		if (stop || sh->fatal)
			break;
		if (!sh->once && mono_ms() >= next_discover) {
			ship_discover(sh);
			next_discover = mono_ms() + DISCOVER_MS;
		}
		check_stall(sh);
		if (ship_is_failing(sh)) {
			recover(sh);
			continue;
		}
		progress = false;
		done = nats_connected(sh) ? turn(sh, &progress) : false;
		if (sh->once && done) {
			pthread_mutex_lock(&sh->mu);
			while (sh->inflight > 0 && !ship_is_failing(sh) && !stop)
				wait_ms(sh, 100);
			pthread_mutex_unlock(&sh->mu);
			if (!ship_is_failing(sh) && !stop)
				break;
			continue;
		}
		if (!progress) {
			pthread_mutex_lock(&sh->mu);
			wait_ms(sh, FOLLOW_MS);
			pthread_mutex_unlock(&sh->mu);
		}
	}
	/* Stopped: what is in flight gets its answers, then the cursors
	 * are committed for what was acknowledged. */
	settle(sh, SHIP_QUIET_MS);
	if (sh->fatal) {
		shiplog("%s", sh->fatal_why);
		return 1;
	}
	return 0;
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static struct shipper shipper;
	struct shipper *sh = &shipper;
	pthread_condattr_t ca;
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

	RB_INIT(&sh->parts);
	pthread_mutex_init(&sh->mu, NULL);
	pthread_mutex_init(&sh->commit_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sh->cv, &ca);
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
	nats_close(sh);
	__atomic_store_n(&committer_stop, true, __ATOMIC_RELEASE);
	pthread_join(ct, NULL);
	ship_commit_all(sh);
	return ret;
}
