/*
 * ship_ack.c - what `tlogctl ship` learns from the acknowledgments: each
 * partition's prefix the stream holds (flight_done, on libnats's
 * thread), and the committer thread, which commits each partition's
 * cursor there (doc/shipping.md, Cursors: every record below a
 * committed cursor is in the stream).
 */
#include "config.h"

#include <sys/xattr.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ship.h"


void
flight_done(struct shipper *sh, struct flight *f, int state)
{
	struct ship_part *p = f->p;
	struct flight *g;

	f->state = state;
	sh->inflight--;
	sh->inflight_bytes -= f->bytes;
	sh->last_answer = mono_ms();
	p->inflight--;
	if (state == FL_FAILED)
		p->failed = true;
	else
		sh->acks++;
	/* The partition's acknowledged prefix. */
	while (p->first_seq != 0) {
		g = &sh->ring[p->first_seq % SHIP_WINDOW];
		if (g->state != FL_ACKED)
			break;
		p->first_seq = g->next_same;
	}
	if (p->first_seq == 0) {
		p->last_seq = 0;
		p->acked = p->next;
	} else
		p->acked = sh->ring[p->first_seq % SHIP_WINDOW].from;
	sh->changes++;
	/* Answered flights at the head leave the ring; a failed one
	 * stays until the resync, which clears them all. */
	while (sh->head < sh->tail &&
	    sh->ring[sh->head % SHIP_WINDOW].state == FL_ACKED)
		sh->head++;
}

/* ---- cursors ---- */

/*
 * A test hook of test builds only (tests/hooks/tlogctl,
 * tests/integration/ship_rename.sh): with
 * TLOGCTL_TEST_COMMIT_GATE set, commits of a non-zero offset wait until
 * that file exists (at most 60 s), so a test can remove and make again
 * a partition between the acknowledgment and the commit.
 */
static void
test_gate(const uint64_t *offs, size_t n)
{
#ifdef TLOG_TEST_HOOKS
	const char *gate = getenv("TLOGCTL_TEST_COMMIT_GATE");
	size_t i;
	int k;

	if (gate == NULL)
		return;
	for (i = 0; i < n && offs[i] == 0; i++)
		;
	for (k = 0; i < n && k < 6000 && access(gate, F_OK) == -1; k++)
		usleep(10000);
#else
	(void)offs;
	(void)n;
#endif
}

void
ship_commit_all(struct shipper *sh)
{
	struct ship_part *p, **ps = NULL;
	uint64_t *offs = NULL;
	size_t i, n = 0;
	uint64_t changes;
	char val[24];
	bool gone, all = true;
	int e;

	if (__atomic_load_n(&sh->no_cursors, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&sh->mu);
	/* Nothing acknowledged or moved since every cursor was
	 * committed: nothing to look at. */
	if ((changes = sh->changes) == sh->committed_changes) {
		pthread_mutex_unlock(&sh->mu);
		return;
	}
	if (sh->nparts > 0) {
		ps = calloc(sh->nparts, sizeof(*ps));
		offs = calloc(sh->nparts, sizeof(*offs));
		if (ps == NULL || offs == NULL)
			err(1, NULL);
	}
	RB_FOREACH(p, part_tree, &sh->parts) {
		/* No cursor at 0 on a partition that has none: it says
		 * nothing, and would keep partition.cleanup.ms from
		 * removing an empty partition (doc/shipping.md). */
		if (!p->ready || p->acked == p->committed || p->commit_gone ||
		    (p->committed == UINT64_MAX && p->acked == 0))
			continue;
		ps[n] = p;
		offs[n++] = p->acked;
	}
	pthread_mutex_unlock(&sh->mu);
	test_gate(offs, n);
	/* Through the partition's directory: a renamed one gets its
	 * cursor, one removed and made again never gets the old one's. */
	pthread_mutex_lock(&sh->commit_mu);
	for (i = 0; i < n && !__atomic_load_n(&sh->no_cursors,
	    __ATOMIC_RELAXED); i++) {
		p = ps[i];
		snprintf(val, sizeof(val), "%" PRIu64, offs[i]);
		if (fsetxattr(p->dfd, sh->cursor_key, val, strlen(val), 0) ==
		    0) {
			pthread_mutex_lock(&sh->mu);
			p->committed = offs[i];
			pthread_mutex_unlock(&sh->mu);
			continue;
		}
		e = errno;
		pthread_mutex_lock(&sh->mu);
		if (e == ENOENT || p->moved)
			p->commit_gone = true;
		gone = p->commit_gone;
		pthread_mutex_unlock(&sh->mu);
		if (gone)
			continue;	/* removed: its cursor went with it */
		all = false;	/* tried again next time */
		errno = e;
		if (errno == ENOTSUP) {
			if (!__atomic_exchange_n(&sh->no_cursors, true,
			    __ATOMIC_RELAXED))
				shiplog("%s: this tlogfs keeps no cursors (%s: "
				    "not supported): progress is not committed "
				    "on it", p->root, sh->cursor_key);
		} else if (!p->commit_warned && !ship_mount_gone(errno)) {
			/* A mount gone the main thread says once for
			 * all. */
			shiplog("%s: cannot commit %s=%s: %s", p->path,
			    sh->cursor_key, val, strerror(errno));
			p->commit_warned = true;
		}
	}
	pthread_mutex_unlock(&sh->commit_mu);
	if (all) {
		pthread_mutex_lock(&sh->mu);
		sh->committed_changes = changes;
		pthread_mutex_unlock(&sh->mu);
	}
	free(ps);
	free(offs);
}
