/*
 * ship_state.c - what every part of tlogctl ship shares (ship.h): the
 * tree of partitions by path, the failure flags a publish sets for the
 * main thread, the log line, and where the main thread waits. It calls
 * none of the other ship files.
 *
 * Waiting (doc/shipping.md, Following): a partition is looked at when
 * it is on sh->todo. One at the end of what it holds has its open
 * segment in the epoll set, EPOLLONESHOT: the mount's FUSE poll wakes
 * it once on an append, a seal or its removal (tlogfs(8), FOLLOWERS),
 * and it goes on todo. It is armed again (EPOLL_CTL_MOD, or ADD for a
 * segment opened since: closing a descriptor takes it out of the set)
 * only when it has caught up again, so the set holds no partition that
 * has something to read, and an idle one costs nothing. A wake-up that
 * brings nothing, three times in a row (a mount without poll, whose
 * files always say readable), puts it on later instead, looked at every
 * RETRY_MS: the only timed look at a partition that has a segment open.
 */
#include "config.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>

#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ship.h"

int
part_cmp(struct ship_part *a, struct ship_part *b)
{
	return strcmp(a->path, b->path);
}
RB_GENERATE(part_tree, ship_part, link, part_cmp)

void
shiplog(const char *fmt, ...)
{
	char *msg, *line;
	va_list ap;
	int n;

	/* Whole, however long the paths and subjects it names. */
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n == -1 || (n = asprintf(&line, "%s: ship: %s\n", getprogname(),
	    msg)) == -1)
		err(1, NULL);
	/* One write: lines of several threads never mix. */
	(void)!write(STDERR_FILENO, line, (size_t)n);
	free(msg);
	free(line);
}

void
ship_failing(struct shipper *sh, const char *fmt, ...)
{
	va_list ap;

	if (!sh->failing) {
		va_start(ap, fmt);
		vsnprintf(sh->why, sizeof(sh->why), fmt, ap);
		va_end(ap);
	}
	if (!sh->failing)
		ship_wake(sh);
	__atomic_store_n(&sh->failing, true, __ATOMIC_RELEASE);
}

void
ship_fatal(struct shipper *sh, const char *fmt, ...)
{
	va_list ap;

	if (sh->fatal_why == NULL) {
		va_start(ap, fmt);
		if (vasprintf(&sh->fatal_why, fmt, ap) == -1)
			err(1, NULL);
		va_end(ap);
	}
	sh->fatal = true;
}

/* ---- waiting ---- */

#define SPURIOUS_MAX 3		/* wake-ups in a row that brought nothing */

void
ship_wait_init(struct shipper *sh)
{
	struct epoll_event ev = { .events = EPOLLIN };

	TAILQ_INIT(&sh->todo);
	TAILQ_INIT(&sh->later);
	if ((sh->ep = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    (sh->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		err(1, "ship");
	ev.data.ptr = &sh->wakefd;
	if (epoll_ctl(sh->ep, EPOLL_CTL_ADD, sh->wakefd, &ev) == -1)
		err(1, "ship: epoll");
	/* Without inotify, new partitions are looked for by time. */
	if ((sh->inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) != -1) {
		ev.data.ptr = &sh->inofd;
		if (epoll_ctl(sh->ep, EPOLL_CTL_ADD, sh->inofd, &ev) == -1)
			err(1, "ship: epoll");
	}
}

void
ship_wake(struct shipper *sh)
{
	uint64_t one = 1;

	/* A full counter (never, in practice) wakes as well. */
	(void)!write(sh->wakefd, &one, sizeof(one));
}

static void
unqueue(struct shipper *sh, struct ship_part *p)
{
	if (p->queued == Q_TODO)
		TAILQ_REMOVE(&sh->todo, p, q);
	else if (p->queued == Q_LATER)
		TAILQ_REMOVE(&sh->later, p, q);
	p->queued = Q_NONE;
}

void
ship_todo(struct shipper *sh, struct ship_part *p)
{
	if (p->queued == Q_TODO)
		return;
	unqueue(sh, p);
	TAILQ_INSERT_TAIL(&sh->todo, p, q);
	p->queued = Q_TODO;
}

void
ship_later(struct shipper *sh, struct ship_part *p, int ms)
{
	unqueue(sh, p);
	p->due = mono_ms() + ms;
	if (TAILQ_EMPTY(&sh->later) || p->due < sh->later_at)
		sh->later_at = p->due;
	TAILQ_INSERT_TAIL(&sh->later, p, q);
	p->queued = Q_LATER;
}

void
ship_arm(struct shipper *sh, struct ship_part *p)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT,
	    .data.ptr = p };

	p->spurious = p->got || !p->woken ? 0 : p->spurious + 1;
	p->woken = p->got = false;
	if (p->spurious >= SPURIOUS_MAX) {
		ship_later(sh, p, RETRY_MS);
		return;
	}
	if (epoll_ctl(sh->ep, EPOLL_CTL_MOD, p->sr.fd, &ev) == 0 ||
	    (errno == ENOENT &&
	    epoll_ctl(sh->ep, EPOLL_CTL_ADD, p->sr.fd, &ev) == 0))
		return;
	/* A file epoll cannot wait on: looked at by time. */
	ship_later(sh, p, RETRY_MS);
}

/* Drains the inotify descriptor: any event (a directory made or moved
 * in, a watched one gone, an overflow) has the partitions looked for. */
static void
dirs_read(struct shipper *sh)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	while (read(sh->inofd, buf, sizeof(buf)) > 0)
		sh->rescan = true;
}

void
ship_wait(struct shipper *sh, int ms)
{
	struct epoll_event evs[64];
	struct ship_part *p, *next;
	uint64_t v;
	int64_t now = mono_ms();
	int i, n;

	if (!TAILQ_EMPTY(&sh->later) && (ms < 0 || now + ms > sh->later_at))
		ms = sh->later_at > now ? (int)(sh->later_at - now) : 0;
	n = epoll_wait(sh->ep, evs, sizeof(evs) / sizeof(evs[0]), ms);
	for (i = 0; i < n; i++) {
		if (evs[i].data.ptr == &sh->wakefd)
			(void)!read(sh->wakefd, &v, sizeof(v));
		else if (evs[i].data.ptr == &sh->inofd)
			dirs_read(sh);
		else {
			p = evs[i].data.ptr;
			p->woken = true;
			ship_todo(sh, p);
		}
	}
	if (TAILQ_EMPTY(&sh->later) || (now = mono_ms()) < sh->later_at)
		return;
	sh->later_at = INT64_MAX;
	for (p = TAILQ_FIRST(&sh->later); p != NULL; p = next) {
		next = TAILQ_NEXT(p, q);
		if (p->due <= now) {
			p->woken = true;
			ship_todo(sh, p);
		} else if (p->due < sh->later_at)
			sh->later_at = p->due;
	}
}
