/*
 * ship_nats.c - the JetStream side of `tlogctl ship`: the connection
 * (failover through the URLs, reconnection with backoff, one log line
 * per change of state), the stream (created if absent), asynchronous
 * publishes and their acknowledgments, and the look-up of a subject's
 * last message that a resync and a start rely on (doc/shipping.md).
 *
 * Order and exactly once: every message carries Nats-Msg-Id (the
 * duplicate window drops a copy of a stored record) and, but for the
 * first after a (re)start, Nats-Expected-Last-Msg-Id naming the message
 * published just before it. JetStream stores a message only if the
 * stream's last message is that one, so what the stream holds of the
 * shipper's messages is always a prefix of the order they were sent
 * in: a message lost in a failover makes every later one fail rather
 * than land after a gap. Pipelining stays whole (the check is made when
 * the leader applies the message, not before it is sent).
 */
#include "config.h"

#include <nats/nats.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ship.h"

#define CLOSE_WAIT_MS 1000	/* answers in flight waited for at close
				   (below ship.c's CLOSE_MS) */

/* What the log last said: 0 up, 1 lost, 2 none reachable, 3 closing.
 * Atomic: libnats calls the callbacks below on threads of its own. */
static int conn_state;

/* Moves conn_state from `from` to `to`; true if this call did. */
static bool
conn_move(int from, int to)
{
	return __atomic_compare_exchange_n(&conn_state, &from, to, false,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void
on_disconnected(natsConnection *nc, void *arg)
{
	(void)nc;
	(void)arg;
	if (conn_move(0, 1))
		shiplog("nats: lost the connection; reconnecting");
}

static void
on_reconnected(natsConnection *nc, void *arg)
{
	char url[256];

	if (natsConnection_GetConnectedUrl(nc, url, sizeof(url)) != NATS_OK)
		strlcpy(url, "?", sizeof(url));
	shiplog("nats: connected to %s", url);
	__atomic_store_n(&conn_state, 0, __ATOMIC_RELEASE);
	ship_wake(arg);
}

/* libnats asks this after each pass through every server it knows:
 * backoff, and the "all down" state logged once. */
static int64_t
reconnect_delay(natsConnection *nc, int attempts, void *arg)
{
	int64_t d = 100;
	int i;

	(void)nc;
	(void)arg;
	if (conn_move(1, 2))
		shiplog("nats: no server reachable; retrying every %d s at"
		    " most, shipping waits and the cursors stay",
		    SHIP_BACKOFF_MAX_MS / 1000);
	for (i = 1; i < attempts && d < SHIP_BACKOFF_MAX_MS; i++)
		d *= 2;
	return d < SHIP_BACKOFF_MAX_MS ? d : SHIP_BACKOFF_MAX_MS;
}

/* Finds the flight of msg: answers come in publish order, so it is
 * nearly always where the last one was found, plus one. */
static struct flight *
flight_find(struct shipper *sh, void *msg)
{
	uint64_t s;

	for (s = sh->hint > sh->head ? sh->hint : sh->head; s < sh->tail; s++)
		if (sh->ring[s % SHIP_WINDOW].msg == msg)
			goto found;
	for (s = sh->head; s < sh->hint && s < sh->tail; s++)
		if (sh->ring[s % SHIP_WINDOW].msg == msg)
			goto found;
	return NULL;
found:
	sh->hint = s + 1;
	return &sh->ring[s % SHIP_WINDOW];
}

/*
 * Test hooks, read only by test builds (tests/hooks/tlogctl; in what is
 * installed every count stays 0). For tests/integration/ship_rename.sh:
 * TLOGCTL_TEST_BREAK_CHAIN = N makes the Nats-Expected-Last-Msg-Id of
 * the N-th publish one the stream never had, so it and every later one
 * fail and the shipper resyncs, as after a message lost in a failover;
 * TLOGCTL_TEST_ACK_HOLD holds the first answer until the main thread
 * has found every partition caught up (at most 10 s), so it learns of a
 * failure only after that; TLOGCTL_TEST_ACK_DELAY_MS = N keeps every
 * answer's callback N ms longer after it is counted, as a preempted
 * thread would (nats_close); TLOGCTL_TEST_NO_LAST = N makes the first N asks for a
 * partition's last message fail as a stream without quorum answers
 * (tests/integration/ship_input.sh).
 */
static uint64_t npublished, break_at, nacks;
static long ack_hold, ack_delay_ms, no_last;

void
nats_test_hooks(void)
{
#ifdef TLOG_TEST_HOOKS
	const char *v;

	if ((v = getenv("TLOGCTL_TEST_BREAK_CHAIN")) != NULL)
		break_at = strtoull(v, NULL, 10);
	if ((v = getenv("TLOGCTL_TEST_ACK_HOLD")) != NULL)
		ack_hold = strtol(v, NULL, 10);
	if ((v = getenv("TLOGCTL_TEST_ACK_DELAY_MS")) != NULL)
		ack_delay_ms = strtol(v, NULL, 10);
	if ((v = getenv("TLOGCTL_TEST_NO_LAST")) != NULL)
		no_last = strtol(v, NULL, 10);
#endif
}

static void
on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *arg)
{
	struct shipper *sh = arg;
	struct flight *f;
	int k;

	(void)js;
	(void)pa;
	if (ack_hold > 0 && __atomic_fetch_add(&nacks, 1,
	    __ATOMIC_RELAXED) == 0)
		for (k = 0; k < 10000 && !__atomic_load_n(&sh->caught_up,
		    __ATOMIC_ACQUIRE); k++)
			usleep(1000);
	pthread_mutex_lock(&sh->mu);
	if ((f = flight_find(sh, msg)) != NULL && f->state == FL_PENDING) {
		f->msg = NULL;
		if (pae == NULL)
			flight_done(sh, f, FL_ACKED);
		else {
			flight_done(sh, f, FL_FAILED);
			/* Refused for the chain, which JetStream checks
			 * after the duplicate window: it did not hold the
			 * record then, nor took this copy (ship.c,
			 * recover). */
			if (pae->ErrCode == JSStreamWrongLastMsgIDErr &&
			    (f->p->refused == 0 ||
			    f->off < f->p->refused - 1))
				f->p->refused = f->off + 1;
			if (pae->ErrCode == JSStreamMessageExceedsMaximumErr)
				ship_fatal(sh, "%s: record %" PRIu64 ": stream "
				    "%s refuses it: %s", f->p->path, f->off,
				    sh->stream, pae->ErrText);
			else if (pae->ErrCode == JSStreamNotMatchErr)
				ship_fatal(sh, "%s: subject %s belongs to "
				    "another stream than %s", f->p->path,
				    f->p->subject, sh->stream);
			ship_failing(sh, "%s", pae->ErrText);
		}
	}
	/* The main thread, if it waits for answers, once the window is
	 * half empty (a failure wakes it in ship_failing). */
	if (sh->waiting && sh->inflight <= SHIP_WINDOW / 2 &&
	    sh->inflight_bytes <= SHIP_WINDOW_BYTES / 2) {
		sh->waiting = false;
		ship_wake(sh);
	}
	pthread_mutex_unlock(&sh->mu);
	natsMsg_Destroy(msg);
	if (ack_delay_ms > 0)
		usleep((useconds_t)ack_delay_ms * 1000);
}

/* The reason of the last failed libnats call, without its stack. */
static const char *
why_nats(natsStatus s)
{
	const char *t = nats_GetLastError(NULL);

	return t != NULL && *t != '\0' ? t : natsStatus_GetText(s);
}

/* Whether a filter takes every subject PREFIX.x.y... (the shipper's
 * subjects): tokens matching the prefix's first ones, then >. */
static bool
covers_prefix(const char *filter, const char *prefix)
{
	const char *f = filter, *s = prefix;
	size_t fl, sl;

	for (;;) {
		fl = strcspn(f, ".");
		if (fl == 1 && f[0] == '>' && f[1] == '\0')
			return true;
		if (*s == '\0')
			return false;
		sl = strcspn(s, ".");
		if (!(fl == 1 && f[0] == '*') &&
		    (fl != sl || memcmp(f, s, fl) != 0))
			return false;
		f += fl;
		s += sl;
		if (*f == '\0')
			return false;
		f++;
		if (*s == '.')
			s++;
	}
}

static void
stream_subjects_keep(struct shipper *sh, jsStreamInfo *si)
{
	int i;

	for (i = 0; i < sh->nstream_subjects; i++)
		free(sh->stream_subjects[i]);
	free(sh->stream_subjects);
	sh->nstream_subjects = 0;
	sh->stream_subjects = calloc((size_t)si->Config->SubjectsLen + 1,
	    sizeof(char *));
	if (sh->stream_subjects == NULL)
		err(1, NULL);
	for (i = 0; i < si->Config->SubjectsLen; i++)
		if ((sh->stream_subjects[i] =
		    strdup(si->Config->Subjects[i])) == NULL)
			err(1, NULL);
	sh->nstream_subjects = si->Config->SubjectsLen;
}

/* Creates the stream; 0, or -1 with a reason. */
static int
stream_create(struct shipper *sh, jsStreamInfo **si, char *why,
    size_t whylen)
{
	jsStreamConfig cfg;
	jsErrCode ec = 0;
	natsStatus s;
	char subj[256];
	const char *subjs[1] = { subj };

	snprintf(subj, sizeof(subj), "%s.>", sh->prefix);
	jsStreamConfig_Init(&cfg);
	cfg.Name = sh->stream;
	cfg.Subjects = subjs;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_FileStorage;
	cfg.Replicas = sh->replicas;
	if ((s = js_AddStream(si, sh->js, &cfg, NULL, &ec)) != NATS_OK) {
		snprintf(why, whylen, "%s", why_nats(s));
		return -1;
	}
	shiplog("stream %s: created (file storage, %d replica%s, subjects "
	    "%s)", sh->stream, (int)cfg.Replicas, cfg.Replicas > 1 ? "s" : "",
	    subj);
	return 0;
}

/* The stream, created if absent: 0, -1 (why) if JetStream cannot say,
 * -2 (why) if it refuses the stream. */
static int
stream_ensure(struct shipper *sh, char *why, size_t whylen)
{
	jsStreamInfo *si = NULL;
	jsErrCode ec = 0;
	natsStatus s;
	int i;

	s = js_GetStreamInfo(&si, sh->js, sh->stream, NULL, &ec);
	if (s == NATS_NOT_FOUND || ec == JSStreamNotFoundErr) {
		if (stream_create(sh, &si, why, whylen) == 0)
			goto done;
		return s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS ? -1 : -2;
	}
	if (s != NATS_OK) {
		snprintf(why, whylen, "%s", why_nats(s));
		return -1;
	}
	stream_subjects_keep(sh, si);
	for (i = 0; i < sh->nstream_subjects; i++)
		if (covers_prefix(sh->stream_subjects[i], sh->prefix))
			break;
	if (i == sh->nstream_subjects && !sh->filter_said) {
		sh->filter_said = true;
		shiplog("stream %s: exists and does not take all of %s.>; "
		    "used as it is, partitions whose subject it does not "
		    "take are not shipped", sh->stream, sh->prefix);
	}
	jsStreamInfo_Destroy(si);
	return 0;
done:
	stream_subjects_keep(sh, si);
	jsStreamInfo_Destroy(si);
	return 0;
}

/*
 * A shipper killed a moment ago (kill -9, a crash) leaves messages in the
 * servers that land for a while after it died. One started meanwhile
 * would read where each partition stands, then send again records the
 * dead one also sent; a late message chained to one of those lands
 * after a gap in its own partition, and the stream's last record of it
 * then says nothing of those before it (doc/shipping.md, "Late
 * messages"). So the start waits until the stream's last sequence has
 * not moved for SHIP_SETTLE_MS (one shipper per stream: nothing else
 * moves it), at most SHIP_SETTLE_MAX_MS, then says so and goes on. A
 * stream that cannot say is left to the start's own checks.
 */
static void
stream_settle(struct shipper *sh)
{
	uint64_t seq = 0;
	int64_t t0 = mono_ms(), since = t0;
	jsStreamInfo *si;
	bool first = true;

	for (;;) {
		si = NULL;
		if (js_GetStreamInfo(&si, sh->js, sh->stream, NULL, NULL) !=
		    NATS_OK)
			return;
		if (first || si->State.LastSeq != seq) {
			seq = si->State.LastSeq;
			since = mono_ms();
			first = false;
		}
		jsStreamInfo_Destroy(si);
		if (mono_ms() - since >= SHIP_SETTLE_MS)
			return;
		if (mono_ms() - t0 >= SHIP_SETTLE_MAX_MS) {
			shiplog("stream %s: still taking messages %d s after "
			    "the start: another shipper may publish into it "
			    "(one shipper per stream); starting anyway",
			    sh->stream, SHIP_SETTLE_MAX_MS / 1000);
			return;
		}
		usleep(100 * 1000);
	}
}

void
nats_open(struct shipper *sh)
{
	natsConnection *nc = NULL;
	natsOptions *o = NULL;
	jsCtx *js = NULL;
	jsOptions jo;
	natsStatus s;
	char why[512];
	int r;

	if ((s = natsOptions_Create(&o)) != NATS_OK)
		errx(1, "ship: nats: %s", why_nats(s));
	if ((s = natsOptions_SetServers(o, (const char **)sh->urls,
	    sh->nurls)) != NATS_OK)
		errx(1, "ship: --nats: %s", why_nats(s));
	natsOptions_SetName(o, "tlogctl ship");
	natsOptions_SetTimeout(o, 2000);
	natsOptions_SetMaxReconnect(o, -1);
	natsOptions_SetCustomReconnectDelay(o, reconnect_delay, sh);
	natsOptions_SetDisconnectedCB(o, on_disconnected, sh);
	natsOptions_SetReconnectedCB(o, on_reconnected, sh);
	natsOptions_SetFailRequestsOnDisconnect(o, true);
	/* A server that stops answering, not only one whose socket
	 * closes, is left within about 6 s. */
	natsOptions_SetPingInterval(o, 2000);
	natsOptions_SetMaxPingsOut(o, 3);
	if ((s = natsConnection_Connect(&nc, o)) != NATS_OK)
		errx(1, "ship: cannot connect to %s%s: %s", sh->urls[0],
		    sh->nurls > 1 ? " nor the other URLs" : "", why_nats(s));
	natsOptions_Destroy(o);
	jsOptions_Init(&jo);
	jo.Wait = 5000;
	jo.PublishAsync.AckHandler = on_ack;
	jo.PublishAsync.AckHandlerClosure = sh;
	if ((s = natsConnection_JetStream(&js, nc, &jo)) != NATS_OK)
		errx(1, "ship: nats: %s", why_nats(s));
	sh->nc = nc;
	sh->js = js;
	sh->max_payload = natsConnection_GetMaxPayload(nc);
	if ((r = stream_ensure(sh, why, sizeof(why))) == -2)
		errx(1, "ship: stream %s: JetStream refuses it: %s",
		    sh->stream, why);
	if (r == -1)
		errx(1, "ship: stream %s: %s", sh->stream, why);
	stream_settle(sh);
}

void
nats_close(struct shipper *sh)
{
	natsMsgList pending;
	jsPubOptions po;

	__atomic_store_n(&conn_state, 3, __ATOMIC_RELEASE);
	/* libnats frees an answer only once on_ack returned, and does not
	 * wait for its callbacks at close: answers in flight are waited for
	 * (CLOSE_WAIT_MS at most), the rest taken back. (libnats 3.4
	 * crashes on these calls before a first asynchronous publish.) */
	if (sh->js != NULL && sh->tail > 1) {
		jsPubOptions_Init(&po);
		po.MaxWait = CLOSE_WAIT_MS;
		(void)js_PublishAsyncComplete(sh->js, &po);
		if (js_PublishAsyncGetPendingList(&pending, sh->js) == NATS_OK)
			natsMsgList_Destroy(&pending);
	}
	if (sh->js != NULL)
		jsCtx_Destroy(sh->js);
	if (sh->nc != NULL) {
		natsConnection_Close(sh->nc);
		natsConnection_Destroy(sh->nc);
	}
	sh->js = sh->nc = NULL;
	/* Its threads may still be in on_ack, with a message to destroy:
	 * waited for (5 s at most), so that none is cut off at exit. */
	(void)nats_CloseAndWait(5000);
}

int
nats_stream_ok(struct shipper *sh, char *why, size_t whylen)
{
	int r = stream_ensure(sh, why, whylen);

	return r == 0 ? 0 : -1;
}

bool
nats_connected(struct shipper *sh)
{
	return natsConnection_Status(sh->nc) == NATS_CONN_STATUS_CONNECTED;
}

/* NATS subject matching: whether filter (with * and >) takes subj. */
static bool
subject_match(const char *filter, const char *subj)
{
	const char *f = filter, *s = subj;
	size_t fl, sl;

	for (;;) {
		fl = strcspn(f, ".");
		sl = strcspn(s, ".");
		if (fl == 1 && f[0] == '>')
			return f[1] == '\0' && sl > 0;
		if (!(fl == 1 && f[0] == '*') &&
		    (fl != sl || memcmp(f, s, fl) != 0))
			return false;
		f += fl;
		s += sl;
		if (*f == '\0' || *s == '\0')
			return *f == '\0' && *s == '\0';
		f++;
		s++;
	}
}

bool
nats_covers(struct shipper *sh, const char *subject)
{
	int i;

	for (i = 0; i < sh->nstream_subjects; i++)
		if (subject_match(sh->stream_subjects[i], subject))
			return true;
	return false;
}

/* The header values of record off's message. */
static void
msg_values(struct ship_part *p, uint64_t off, char id[SHIP_IDLEN],
    char num[24], char ts[24])
{
	snprintf(id, SHIP_IDLEN, "%s%" PRIu64, p->idpfx, off);
	snprintf(num, 24, "%" PRIu64, off);
	snprintf(ts, 24, "%" PRId64, p->ts);
}

/* One header line: "Name: value\r\n". */
static size_t
hdr_line(const char *name, const char *value)
{
	return strlen(name) + 2 + strlen(value) + 2;
}

/*
 * The server counts the header block with the payload against
 * max_payload (libnats refuses the publish the same way): "NATS/1.0\r\n",
 * a line for each header nats_publish sets and libnats adds from its
 * options (Nats-Msg-Id, Nats-Expected-Stream, and
 * Nats-Expected-Last-Msg-Id unless it is the first since a start or a
 * resync), then "\r\n". So this is the exact size, for the message as
 * it would be sent now.
 */
bool
nats_fits(struct shipper *sh, struct ship_part *p, uint64_t off, size_t len)
{
	char id[SHIP_IDLEN], num[24], ts[24];
	size_t hdr;

	msg_values(p, off, id, num, ts);
	hdr = strlen("NATS/1.0\r\n") + hdr_line("Tlog-Offset", num) +
	    hdr_line("Tlog-Timestamp", ts) + hdr_line("Nats-Msg-Id", id) +
	    hdr_line("Nats-Expected-Stream", sh->stream) + strlen("\r\n");
	if (sh->last_id[0] != '\0')
		hdr += hdr_line("Nats-Expected-Last-Msg-Id", sh->last_id);
	return len + hdr <= (uint64_t)sh->max_payload;
}


int
nats_publish(struct shipper *sh, struct ship_part *p, uint64_t off,
    const char *data, size_t len)
{
	struct flight *f;
	jsPubOptions po;
	natsMsg *m = NULL;
	natsStatus s;
	char id[SHIP_IDLEN], num[24], ts[24];
	uint64_t seq;

	msg_values(p, off, id, num, ts);
	if ((s = natsMsg_Create(&m, p->subject, NULL, data, (int)len)) !=
	    NATS_OK ||
	    (s = natsMsgHeader_Set(m, "Tlog-Offset", num)) != NATS_OK ||
	    (s = natsMsgHeader_Set(m, "Tlog-Timestamp", ts)) != NATS_OK)
		err(1, "ship: a message: %s", natsStatus_GetText(s));
	jsPubOptions_Init(&po);
	po.MsgId = id;
	po.ExpectStream = sh->stream;
	if (sh->last_id[0] != '\0')
		po.ExpectLastMsgId = sh->last_id;
	if (++npublished == break_at)
		po.ExpectLastMsgId = "tlogctl-test-broken";

	/* The flight exists before the answer can come. */
	pthread_mutex_lock(&sh->mu);
	seq = sh->tail++;
	f = &sh->ring[seq % SHIP_WINDOW];
	memset(f, 0, sizeof(*f));
	f->msg = m;
	f->p = p;
	f->off = off;
	/* Lost records skipped just before it pass with it. */
	f->from = p->skipped != 0 ? p->skipped - 1 : off;
	p->skipped = 0;
	f->sent = mono_ms();
	f->bytes = len;
	f->state = FL_PENDING;
	if (p->last_seq != 0)
		sh->ring[p->last_seq % SHIP_WINDOW].next_same = seq;
	else
		p->first_seq = seq;
	p->last_seq = seq;
	p->inflight++;
	p->next = off + 1;
	sh->inflight++;
	sh->inflight_bytes += len;
	pthread_mutex_unlock(&sh->mu);

	if ((s = js_PublishMsgAsync(sh->js, &m, &po)) != NATS_OK) {
		/* Never sent (or taken back): the flight fails, and with
		 * it the chain, so everything resyncs. */
		pthread_mutex_lock(&sh->mu);
		if (f->state == FL_PENDING) {
			f->msg = NULL;
			flight_done(sh, f, FL_FAILED);
		}
		ship_failing(sh, "publish: %s", why_nats(s));
		pthread_mutex_unlock(&sh->mu);
		natsMsg_Destroy(m);
		return -1;
	}
	strlcpy(sh->last_id, id, sizeof(sh->last_id));
	return 0;
}

void
nats_abandon(struct shipper *sh)
{
	natsMsgList pending;
	struct flight *f;
	uint64_t s;

	if (sh->tail > 1 && js_PublishAsyncGetPendingList(&pending,
	    sh->js) == NATS_OK)
		natsMsgList_Destroy(&pending);
	pthread_mutex_lock(&sh->mu);
	for (s = sh->head; s < sh->tail; s++) {
		f = &sh->ring[s % SHIP_WINDOW];
		if (f->state == FL_PENDING) {
			f->msg = NULL;
			flight_done(sh, f, FL_FAILED);
		}
	}
	pthread_mutex_unlock(&sh->mu);
	sh->last_id[0] = '\0';
}

int
nats_last(struct shipper *sh, struct ship_part *p, uint64_t *off,
    char **data, size_t *len, char *why, size_t whylen)
{
	natsMsg *m = NULL;
	jsErrCode ec = 0;
	natsStatus s;
	const char *id, *o, *pfx = p->idpfx;
	char *end;
	size_t n = strlen(pfx);

	if (no_last > 0) {
		no_last--;
		snprintf(why, whylen, "%s", why_nats(NATS_TIMEOUT));
		return -1;
	}
	s = js_GetLastMsg(&m, sh->js, sh->stream, p->subject, NULL, &ec);
	/* A reply that came as the request timed out can come back with
	 * the error (nats.c #434): it is ours to free whatever the status. */
	if (s != NATS_OK)
		natsMsg_Destroy(m);
	if (s == NATS_NOT_FOUND || ec == JSNoMessageFoundErr)
		return 0;
	if (s != NATS_OK) {
		snprintf(why, whylen, "%s", why_nats(s));
		return -1;
	}
	/* Ours: named by the partition's identity, or by its names as
	 * before identities (an older version, a read-only mount). */
	if (natsMsgHeader_Get(m, "Nats-Msg-Id", &id) != NATS_OK)
		id = "";
	if (strncmp(id, pfx, n) != 0 &&
	    strncmp(id, p->oldpfx, strlen(p->oldpfx)) == 0) {
		pfx = p->oldpfx;
		n = strlen(pfx);
	}
	if (strncmp(id, pfx, n) != 0 ||
	    natsMsgHeader_Get(m, "Tlog-Offset", &o) != NATS_OK ||
	    strcmp(id + n, o) != 0) {
		shiplog("%s: the last message on %s in stream %s is not this "
		    "partition's (another store's, or a partition that had "
		    "its name before); it is left out of the reckoning",
		    p->path, p->subject, sh->stream);
		natsMsg_Destroy(m);
		return 0;
	}
	errno = 0;
	*off = strtoull(o, &end, 10);
	if (errno != 0 || *end != '\0' || end == o) {
		natsMsg_Destroy(m);
		return 0;
	}
	*len = (size_t)natsMsg_GetDataLength(m);
	if ((*data = malloc(*len + 1)) == NULL)
		err(1, NULL);
	memcpy(*data, natsMsg_GetData(m), *len);
	natsMsg_Destroy(m);
	return 1;
}
