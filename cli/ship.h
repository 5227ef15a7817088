/*
 * ship.h - what the files of `tlogctl ship` share: ship.c (the main
 * loop, resyncs, the command), ship_find.c (the options' checks, the
 * partitions to ship), ship_pump.c (reading and publishing records),
 * ship_ack.c (acknowledgments, cursors) and ship_nats.c (the JetStream
 * side). doc/shipping.md says what is shipped and what each failure
 * does; this header, how the parts meet.
 *
 * Locking: sh->mu guards the in-flight ring and, in each partition, the
 * fields marked "mu" (the ack handler runs on a libnats thread). No
 * libnats call is made with sh->mu held.
 */
#ifndef SHIP_H
#define SHIP_H

#include <sys/queue.h>
#include <sys/tree.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "tlogctl.h"

#define SHIP_WINDOW 16384	/* records in flight, all partitions */
#define SHIP_WINDOW_BYTES (64 << 20)
#define SHIP_ACK_WAIT_MS 10000	/* a record unanswered this long: resync */
#define SHIP_QUIET_MS 2000	/* in a resync, no answer this long: give up */
#define SHIP_BACKOFF_MAX_MS 5000
#define SHIP_SETTLE_MS 1000	/* at start, the stream unchanged this long */
#define SHIP_SETTLE_MAX_MS 10000
#define SHIP_IDLEN 640		/* a Nats-Msg-Id, with room to spare */
#define READ_CHUNK (1 << 20)	/* bytes read from a segment at a time */
#define RETRY_MS 100		/* a partition that cannot be waited on */

struct ship_part {
	RB_ENTRY(ship_part) link;	/* by path */
	char *path;		/* the partition directory */
	char *root;		/* its mount root */
	char *topic, *name;
	char *subject;		/* PREFIX.TOPIC.PARTITION */
	char *store;		/* its store's identity (borrowed) */
	/* The partition itself: its directory open, so reads and commits
	 * reach it whatever its name, its inode number, to tell when the
	 * path names it no more, and the Nats-Msg-Id prefix made of its
	 * identity, STOREID/PARTITIONID/ (doc/shipping.md). dfd changes
	 * only with sh->commit_mu held. */
	int dfd;
	dev_t dev;
	ino_t ino;
	char *idpfx;
	char *oldpfx;		/* STOREID/TOPIC/PARTITION/, the form of
				   messages shipped by older versions */
	struct segread sr;
	bool ready;		/* its start is known */
	bool open;		/* sr is at the record `next` */
	bool dead;		/* dropped on an error, or unshippable */
	bool unshippable;	/* no subject, or the stream takes none */
	bool moved;		/* mu: renamed or removed: what the path
				   names is shipped anew once this one's
				   cursor is committed */
	int64_t dead_at;	/* mono ms */
	/* Records lost to a corrupt compressed frame (ship_pump.c,
	 * lost.c): without --skip-lost it stops before them, dead and
	 * `lost`, not taken back in this run unless its path comes to
	 * name another partition; the line naming them is said once a
	 * run (1 + the first lost record it named). After them, look-ups
	 * can fail: the records below lines_until, from the open
	 * position, are one line each (lost.c counted them so). */
	bool lost;
	uint64_t lost_said;
	uint64_t lines_until;
	/* Main thread: where it waits (ship_state.c). */
	TAILQ_ENTRY(ship_part) q;	/* on sh->todo or sh->later */
	int queued;		/* Q_NONE, Q_TODO, Q_LATER */
	int64_t due;		/* on sh->later: when it is looked at */
	bool caught_up;		/* at the end of what it holds: it waits
				   for the mount's wake-up (or on later) */
	bool woken;		/* looked at for a wake-up... */
	bool got;		/* ...and got records since it waited */
	int spurious;		/* wake-ups in a row that brought nothing */
	int64_t ts;		/* Tlog-Timestamp of what the last read got */
	uint64_t committed;	/* cursor on the mount; UINT64_MAX: none */
	bool commit_warned;
	/* mu */
	uint64_t next;		/* the next offset to publish */
	uint64_t acked;		/* every record below it is in the stream */
	uint64_t first_seq;	/* its oldest unresolved flight, 0: none */
	uint64_t last_seq;	/* its newest flight, 0: none */
	uint32_t inflight;
	bool failed;		/* a flight failed or was given up: resync */
	uint64_t refused;	/* 1 + the lowest offset the stream refused
				   for the chain (so it did not hold it)
				   since the last resync; 0: none */
	bool commit_gone;	/* its cursor can be committed no more */
	uint64_t skipped;	/* 1 + the first of the lost records skipped
				   (--skip-lost) just below `next`, while
				   nothing after them is published; 0: none */
};
RB_HEAD(part_tree, ship_part);
TAILQ_HEAD(part_list, ship_part);
enum { Q_NONE, Q_TODO, Q_LATER };
int part_cmp(struct ship_part *a, struct ship_part *b);
RB_PROTOTYPE(part_tree, ship_part, link, part_cmp)

enum { FL_PENDING, FL_ACKED, FL_FAILED };

/* A published record waiting for its acknowledgment. Flights are
 * numbered from 1 in publish order; flight s is ring[s % SHIP_WINDOW]. */
struct flight {
	void *msg;		/* the natsMsg libnats hands back */
	struct ship_part *p;
	uint64_t off;
	uint64_t from;		/* off, or the first of the lost records
				   skipped just before it: acknowledged,
				   the partition's prefix passes them */
	uint64_t next_same;	/* the partition's next flight, 0: none */
	int64_t sent;		/* mono ms */
	size_t bytes;
	int state;
};

struct shipper {
	/* options */
	char **urls;
	int nurls;
	char *stream;
	int replicas;
	const char *prefix;
	const char *cursor;
	char cursor_key[80];	/* user.cursor.NAME */
	bool once;
	bool skip_lost;
	bool lost_stop;		/* a partition stopped at lost records:
				   --once exits 1 */

	struct part_tree parts;
	size_t nparts;
	bool no_cursors;	/* the mount has none: nothing committed */

	/* The main thread's waiting (ship_state.c, doc/shipping.md,
	 * Following): one epoll set holding the eventfd, the inotify
	 * descriptor (-1 if none) and the open segment of each caught-up
	 * partition (EPOLLONESHOT, armed again each time it catches up);
	 * the partitions to look at now, in turn, and those to look at
	 * again at their `due` (a start the stream could not answer, a
	 * seek that must be tried again, a mount whose wake-ups bring
	 * nothing); when the partitions are looked for next (ship.c). */
	int ep, wakefd, inofd;
	struct part_list todo, later;
	int64_t later_at;	/* the earliest `due` on later */
	bool rescan;		/* look for partitions soon: a directory
				   was made or moved in (inotify), or a
				   partition was dropped */
	int64_t discover_at, discovered;
	/* ... and what its rate-limited lines last said: a resync's (its
	 * time, the resyncs since with no acknowledgment, the lines kept
	 * back), a stream that cannot say where a partition stands
	 * (ship_pump.c), partitions without identity (ship_find.c) and
	 * subjects outside the stream's filters (ship_nats.c). */
	int64_t resync_said;
	int resync_streak, resync_quiet;
	int64_t unsure_said;
	bool no_id_said;
	bool filter_said;
	bool caught_up;		/* a turn found every partition caught up
				   (atomic; TLOGCTL_TEST_ACK_HOLD waits
				   for it) */

	/* NATS (ship_nats.c) */
	void *nc, *js;
	char **stream_subjects;	/* the stream's subject filters */
	int nstream_subjects;
	int64_t max_payload;
	char last_id[SHIP_IDLEN]; /* the last published Nats-Msg-Id */

	/* Held by the committer over its commits, by the main thread
	 * while it changes a partition's dfd. */
	pthread_mutex_t commit_mu;

	/* mu */
	pthread_mutex_t mu;
	bool waiting;		/* the main thread waits for answers: the
				   window's room, or all of them */
	uint64_t changes;	/* bumped when a partition's acked moves */
	uint64_t committed_changes; /* ...as it was when every cursor was
				   committed (ship_commit_all) */
	struct flight *ring;
	uint64_t head, tail;	/* unresolved flights are [head, tail) */
	uint64_t hint;		/* where the next answer is looked for */
	size_t inflight, inflight_bytes;
	uint64_t acks;		/* since the last resync */
	bool failing;		/* a flight failed: stop, resync */
	char why[256];		/* what failed first */
	bool fatal;		/* failures no resync cures */
	char *fatal_why;	/* the first of them */
	int64_t last_answer;	/* mono ms */
};

/* ship_state.c */
void shiplog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether a flight failed: set by the acknowledgment thread, read by the
 * main thread without mu (an atomic flag; its reason, sh->why, under mu). */
static inline bool
ship_is_failing(struct shipper *sh)
{
	return __atomic_load_n(&sh->failing, __ATOMIC_ACQUIRE);
}
/* Sets sh->failing (mu held), keeping the first reason, and wakes the
 * main thread. */
void ship_failing(struct shipper *sh, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Sets sh->fatal (mu held), keeping the first reason. */
void ship_fatal(struct shipper *sh, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Makes the epoll set, the eventfd and the inotify descriptor. */
void ship_wait_init(struct shipper *sh);
/* Wakes the main thread from ship_wait (any thread, or a signal
 * handler). */
void ship_wake(struct shipper *sh);
/* Waits up to ms (-1: no limit) for a wake-up: partitions woken or due
 * go on sh->todo, an inotify event sets sh->rescan. */
void ship_wait(struct shipper *sh, int ms);
/* p is to be looked at now (after those already waiting). */
void ship_todo(struct shipper *sh, struct ship_part *p);
/* p is to be looked at again in ms. */
void ship_later(struct shipper *sh, struct ship_part *p, int ms);
/* p is at the end of what its open segment holds: it waits for the
 * mount's wake-up (poll), or on later if its wake-ups bring nothing. */
void ship_arm(struct shipper *sh, struct ship_part *p);

/* ship_find.c */
/* NATS subject tokens: non-empty, of [A-Za-z0-9_-]. */
bool ship_tokens_ok(const char *s);
/* --nats: adds each URL to sh->urls, or a usage error. */
void ship_parse_urls(struct shipper *sh, const char *arg);
/* The default stream: the prefix in capitals, dots as underscores. */
char *ship_default_stream(const char *prefix);
/* The PATH arguments: what each one is, its mount root and its store;
 * one line and exit 1 on one that is no tlogfs mount, topic or
 * partition. */
void ship_paths(int n, char *paths[]);
/* Says which stores are named after this machine (doc/shipping.md). */
void ship_say_made_ids(void);
/* Adds the partitions under the PATHs not known yet, and takes back
 * those dropped on an error a while ago; watches their directories.
 * true if it must look again soon: a partition waits to be taken up
 * again, a mount is gone, or a directory could not be watched. */
bool ship_discover(struct shipper *sh);

/* ship_pump.c */
/* The read buffer holds n bytes at least. */
void ship_buf_need(size_t n);
/* Finds where a partition starts (its cursor, or after what the stream
 * holds of it) and opens it there; p->ready once it is known. */
void ship_part_start(struct shipper *sh, struct ship_part *p);
/* Opens the partition at offset `want`, or the first live record after
 * it (with a warning if `warn`: records that were never shipped). */
void ship_part_seek(struct shipper *sh, struct ship_part *p, uint64_t want,
    bool warn);
/* Whether p's path still names p; if not, p is dropped as moved (no
 * more published under its subject) and false. */
bool ship_part_here(struct shipper *sh, struct ship_part *p);
/* p's mount answers, on device dev: says once if it was mounted again. */
void ship_mount_seen(struct ship_part *p, dev_t dev);
/* Whether a mount was found gone and not seen again since. */
bool ship_mounts_gone(void);
/* The mount at root answers ENOTCONN (its daemon gone): said once,
 * until ship_mount_seen. */
void ship_mount_lost(const char *root);
/* Whether error e of a call on a mount says its daemon is gone: ENOTCONN,
 * or ECONNABORTED for a request in flight when the daemon died. */
static inline bool
ship_mount_gone(int e)
{
	return e == ENOTCONN || e == ECONNABORTED;
}
/* Ships up to `room` records of the partition from where it stands: the
 * number published, or -1 (the partition was dropped, or a publish
 * failed). */
int ship_pump(struct shipper *sh, struct ship_part *p, size_t room);

/* ship_ack.c */
/* A flight answered (mu held): ACKED or FAILED. */
void flight_done(struct shipper *sh, struct flight *f, int state);
/* Commits the cursor of each partition whose acknowledged prefix moved. */
void ship_commit_all(struct shipper *sh);
/* Atomic: set once, by the main thread. */

/* ship_nats.c */
/* Connects and makes sure of the stream; on failure one line and
 * exit 1. */
void nats_open(struct shipper *sh);
void nats_close(struct shipper *sh);
/* Reads the test hooks' environment (ship_nats.c). */
void nats_test_hooks(void);
/* Whether the stream's subjects take this subject. */
bool nats_covers(struct shipper *sh, const char *subject);
/* Whether the connection is up now. */
bool nats_connected(struct shipper *sh);
/* Whether record off, of len bytes, makes a message within the
 * server's max_payload, headers included (exactly). */
bool nats_fits(struct shipper *sh, struct ship_part *p, uint64_t off,
    size_t len);
/* Publishes one record; 0, or -1 with sh->failing set. */
int nats_publish(struct shipper *sh, struct ship_part *p, uint64_t off,
    const char *data, size_t len);
/* The subject's last message in the stream: 1 with its Tlog-Offset and
 * payload (free it) if the message is this store's, 0 if there is none
 * (or not ours: a warning says so), -1 with a reason on a failure to
 * ask (the cluster is down). */
int nats_last(struct shipper *sh, struct ship_part *p, uint64_t *off,
    char **data, size_t *len, char *why, size_t whylen);
/* Takes back every unanswered message from libnats (their answers, if
 * any come, are dropped) and marks their flights failed. */
void nats_abandon(struct shipper *sh);
/* Checks the stream is still there (creates it if it went); -1 with a
 * reason if the cluster cannot say. */
int nats_stream_ok(struct shipper *sh, char *why, size_t whylen);

#endif /* SHIP_H */
