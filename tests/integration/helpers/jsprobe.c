/*
 * jsprobe - a small NATS JetStream client for the shipping tests and the
 * bench (tests/integration/ship*.sh, tests/bench/run.sh). Not installed.
 *
 *   jsprobe ready URLS [SECONDS]
 *	exits 0 once JetStream answers and, given several URLS, can place
 *	a stream with a replica on each of them (a cluster that elected
 *	its meta leader may not know every peer yet), 1 at the time limit
 *	(default 30 s)
 *   jsprobe stream URLS NAME SUBJECT REPLICAS
 *	creates a stream with that one subject filter
 *   jsprobe msgs URLS STREAM
 *	prints the number of messages in the stream
 *   jsprobe leader URLS STREAM
 *	prints the name of the node leading the stream (n1, n2...)
 *   jsprobe purge URLS STREAM
 *	removes every message of the stream
 *   jsprobe check URLS STREAM SUBJECT=FILE[@FIRST]...
 *	reads the whole stream and checks that each SUBJECT holds exactly
 *	the lines of FILE, in order, once each, as offsets FIRST (default
 *	0) on, with the headers tlogctl ship sets; no other subject may
 *	appear. One line per subject on stdout; exit 1 on any mismatch
 *	(the first few are named). A SUBJECT given twice holds the
 *	first FILE's lines, then the second's (a partition made again).
 *   jsprobe put URLS STREAM SUBJECT MSGID OFFSET DATA
 *	publishes one message as tlogctl ship would (Nats-Msg-Id MSGID,
 *	Tlog-Offset OFFSET), without an expected last id: a late message
 *	of an earlier shipper (tests/integration/ship_late.sh)
 *   jsprobe seqs URLS STREAM
 *	prints "SEQUENCE SUBJECT" for every message of the stream, in
 *	stream order (tests/integration/ship_settle.sh)
 *   jsprobe pub URLS STREAM SUBJECT FILE [ids|all]
 *	the plain publisher of the bench: every line of FILE as a message
 *	on SUBJECT, asynchronous with the same window as tlogctl ship;
 *	"ids" adds a Nats-Msg-Id, "all" every header tlogctl ship sets
 *	(and the chain of expected ids). Prints "N records/s".
 *   jsprobe follow URLS STREAM SUBJECT
 *	prints each message of SUBJECT stored in the stream from now on,
 *	its payload and a newline, as it is delivered to an ordered push
 *	consumer (JetStream delivers a message once stored: the bench's
 *	follower of tlogctl ship, tests/bench/shipfollow.sh); until killed
 *
 * URLS is a comma-separated list, as for tlogctl ship --nats.
 */
#include "config.h"

#include <nats/nats.h>

#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 16384		/* as cli/ship.c's SHIP_WINDOW */

static natsConnection *nc;
static jsCtx *js;

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* URLS, comma-separated, into the options' server list. */
static void
set_servers(natsOptions *o, const char *urls)
{
	const char *list[16];
	char *copy, *p, *tok;
	int n = 0;

	if ((copy = strdup(urls)) == NULL)
		err(1, NULL);
	for (p = copy; (tok = strsep(&p, ",")) != NULL && n < 16;)
		if (*tok != '\0')
			list[n++] = tok;
	if (natsOptions_SetServers(o, list, n) != NATS_OK)
		errx(2, "%s: %s", urls, nats_GetLastError(NULL));
	free(copy);
}

static natsStatus
connect_to(const char *urls, bool quiet)
{
	natsOptions *o;
	natsStatus s;
	jsOptions jo;

	if ((s = natsOptions_Create(&o)) != NATS_OK)
		return s;
	set_servers(o, urls);
	natsOptions_SetTimeout(o, 2000);
	natsOptions_SetMaxReconnect(o, -1);
	natsOptions_SetReconnectWait(o, 100);
	s = natsConnection_Connect(&nc, o);
	natsOptions_Destroy(o);
	if (s != NATS_OK) {
		if (!quiet)
			warnx("connect %s: %s", urls, natsStatus_GetText(s));
		return s;
	}
	jsOptions_Init(&jo);
	jo.Wait = 10000;
	return natsConnection_JetStream(&js, nc, &jo);
}

static void
disconnect(void)
{
	if (js != NULL)
		jsCtx_Destroy(js);
	if (nc != NULL)
		natsConnection_Destroy(nc);
	js = NULL;
	nc = NULL;
}

/*
 * Ready: JetStream answers and, for a cluster, a stream with one replica
 * on every node can be placed (a cluster that has elected its meta
 * leader may not know all its peers yet: "no suitable peers for
 * placement"). The probe stream is deleted again.
 */
static bool
placeable(const char *urls)
{
	const char *subj = "jsprobe.ready";
	jsStreamConfig cfg;
	jsStreamInfo *si;
	jsErrCode ec = 0;
	int n = 1;

	for (const char *c = urls; *c != '\0'; c++)
		n += *c == ',';
	if (n == 1)
		return true;
	jsStreamConfig_Init(&cfg);
	cfg.Name = "JSPROBE_READY";
	cfg.Subjects = &subj;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_MemoryStorage;
	cfg.Replicas = n;
	if (js_AddStream(&si, js, &cfg, NULL, &ec) != NATS_OK)
		return false;
	jsStreamInfo_Destroy(si);
	js_DeleteStream(js, "JSPROBE_READY", NULL, NULL);
	return true;
}

static int
cmd_ready(const char *urls, int secs)
{
	int64_t end = now_ms() + (int64_t)secs * 1000;
	jsAccountInfo *ai;

	while (now_ms() < end) {
		if (connect_to(urls, true) == NATS_OK) {
			if (js_GetAccountInfo(&ai, js, NULL, NULL) == NATS_OK) {
				jsAccountInfo_Destroy(ai);
				if (placeable(urls)) {
					disconnect();
					return 0;
				}
			}
		}
		disconnect();
		usleep(100000);
	}
	warnx("%s: no JetStream after %d s", urls, secs);
	return 1;
}

static int
cmd_stream(const char *urls, const char *name, const char *subj,
    const char *replicas)
{
	jsStreamConfig cfg;
	jsStreamInfo *si;
	jsErrCode ec = 0;
	natsStatus s;

	if (connect_to(urls, false) != NATS_OK)
		return 1;
	jsStreamConfig_Init(&cfg);
	cfg.Name = name;
	cfg.Subjects = &subj;
	cfg.SubjectsLen = 1;
	cfg.Storage = js_FileStorage;
	cfg.Replicas = atoi(replicas);
	s = js_AddStream(&si, js, &cfg, NULL, &ec);
	if (s != NATS_OK) {
		warnx("stream %s: %s (%d)", name, nats_GetLastError(NULL),
		    (int)ec);
		return 1;
	}
	jsStreamInfo_Destroy(si);
	disconnect();
	return 0;
}

/* The name of the server leading the stream. */
static int
cmd_leader(const char *urls, const char *stream)
{
	jsStreamInfo *si;

	if (connect_to(urls, false) != NATS_OK)
		return 1;
	if (js_GetStreamInfo(&si, js, stream, NULL, NULL) != NATS_OK ||
	    si->Cluster == NULL || si->Cluster->Leader == NULL) {
		warnx("stream %s: no leader", stream);
		return 1;
	}
	printf("%s\n", si->Cluster->Leader);
	jsStreamInfo_Destroy(si);
	disconnect();
	return 0;
}

/* Removes every message, as an operator's purge would. */
static int
cmd_purge(const char *urls, const char *stream)
{
	if (connect_to(urls, false) != NATS_OK)
		return 1;
	if (js_PurgeStream(js, stream, NULL, NULL) != NATS_OK) {
		warnx("stream %s: %s", stream, nats_GetLastError(NULL));
		return 1;
	}
	disconnect();
	return 0;
}

static int
cmd_msgs(const char *urls, const char *stream)
{
	jsStreamInfo *si;
	natsStatus s;

	if (connect_to(urls, false) != NATS_OK)
		return 1;
	if ((s = js_GetStreamInfo(&si, js, stream, NULL, NULL)) != NATS_OK) {
		warnx("stream %s: %s", stream, nats_GetLastError(NULL));
		return 1;
	}
	printf("%" PRIu64 "\n", si->State.Msgs);
	jsStreamInfo_Destroy(si);
	disconnect();
	return 0;
}

struct expect {
	char *subject;
	char **lines;
	size_t n;
	uint64_t first;
	size_t got;		/* messages seen on the subject */
	int64_t last_ts;
	int bad;
};

static void
load_lines(struct expect *e, const char *path)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t len;

	if ((f = fopen(path, "r")) == NULL)
		err(1, "%s", path);
	while ((len = getline(&line, &cap, f)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			line[len - 1] = '\0';
		if (e->n == alloc) {
			alloc = alloc ? alloc * 2 : 1024;
			e->lines = reallocarray(e->lines, alloc, sizeof(char *));
			if (e->lines == NULL)
				err(1, NULL);
		}
		if ((e->lines[e->n++] = strdup(line)) == NULL)
			err(1, NULL);
	}
	free(line);
	fclose(f);
}

static void
complain(struct expect *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
complain(struct expect *e, const char *fmt, ...)
{
	va_list ap;

	if (e->bad++ >= 5)
		return;
	printf("%s: ", e->subject);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* One message against what its subject should hold next. */
static void
check_msg(struct expect *e, natsMsg *m)
{
	const char *off, *ts, *id, *data;
	char want[64];
	uint64_t o = e->first + e->got;
	int64_t t;
	size_t idlen, wlen;
	int len;

	if (natsMsgHeader_Get(m, "Tlog-Offset", &off) != NATS_OK ||
	    natsMsgHeader_Get(m, "Tlog-Timestamp", &ts) != NATS_OK ||
	    natsMsgHeader_Get(m, "Nats-Msg-Id", &id) != NATS_OK) {
		complain(e, "message %zu: a header is missing", e->got);
		goto next;
	}
	snprintf(want, sizeof(want), "%" PRIu64, o);
	if (strcmp(off, want) != 0) {
		jsMsgMetaData *md = NULL;
		uint64_t sseq = 0;

		if (natsMsg_GetMetaData(&md, m) == NATS_OK) {
			sseq = md->Sequence.Stream;
			jsMsgMetaData_Destroy(md);
		}
		complain(e, "message %zu (stream seq %" PRIu64 "): Tlog-Offset "
		    "%s, want %s", e->got, sseq, off, want);
		goto next;
	}
	/* The id ends in /TOPIC/PARTITION/OFFSET (the subject's last two
	 * tokens need not be topic and partition if names hold dots, so
	 * only the offset is checked here). */
	snprintf(want, sizeof(want), "/%" PRIu64, o);
	idlen = strlen(id);
	wlen = strlen(want);
	if (idlen <= wlen || strcmp(id + idlen - wlen, want) != 0)
		complain(e, "message %zu: Nats-Msg-Id %s does not end in %s",
		    e->got, id, want);
	t = strtoll(ts, NULL, 10);
	if (t < 1000000000000LL || t < e->last_ts)
		complain(e, "message %zu: Tlog-Timestamp %s (previous %"
		    PRId64 ")", e->got, ts, e->last_ts);
	e->last_ts = t;
	if (e->got >= e->n) {
		complain(e, "message %zu: more messages than lines (%zu)",
		    e->got, e->n);
		goto next;
	}
	data = natsMsg_GetData(m);
	len = natsMsg_GetDataLength(m);
	if ((size_t)len != strlen(e->lines[e->got]) ||
	    memcmp(data, e->lines[e->got], (size_t)len) != 0)
		complain(e, "message %zu: payload '%.*s', want '%s'", e->got,
		    len > 60 ? 60 : len, data, e->lines[e->got]);
next:
	e->got++;
}

/* Whether a later argument names the same subject as ex[i]. */
static bool
more_of(const struct expect *ex, int n, int i)
{
	int j;

	for (j = i + 1; j < n; j++)
		if (strcmp(ex[j].subject, ex[i].subject) == 0)
			return true;
	return false;
}

/*
 * The messages of a stream, fetched by FETCHERS threads at once over the
 * one connection (a request each, answered by the stream's leader), so
 * that a check waits for one round trip per FETCHERS messages.
 */
#define FETCHERS 16

struct fetch {
	uint64_t first, last;
	uint64_t next;		/* the next sequence to take (atomic) */
	natsMsg **msgs;		/* by sequence - first; NULL: deleted */
	natsStatus status;	/* the first failure, NATS_OK if none */
	uint64_t failed_at;
	const char *stream;
};

static void *
fetcher(void *arg)
{
	struct fetch *f = arg;
	uint64_t seq;
	natsStatus s;
	int j;

	for (;;) {
		seq = __atomic_fetch_add(&f->next, 1, __ATOMIC_RELAXED);
		if (seq > f->last ||
		    __atomic_load_n(&f->status, __ATOMIC_RELAXED) != NATS_OK)
			return NULL;
		/* A cluster whose node has just come back may not answer
		 * for a while. */
		for (j = 0; j < 30; j++) {
			natsMsg *m = NULL;
			jsErrCode ec = 0;

			s = js_GetMsg(&m, js, f->stream, seq, NULL, &ec);
			if (s == NATS_OK) {
				f->msgs[seq - f->first] = m;
				break;
			}
			if (ec == JSNoMessageFoundErr) {
				s = NATS_OK;	/* a deleted message */
				break;
			}
			sleep(1);
		}
		if (s != NATS_OK) {
			natsStatus ok = NATS_OK;

			if (__atomic_compare_exchange_n(&f->status, &ok, s,
			    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
				f->failed_at = seq;
			return NULL;
		}
	}
}

static int
cmd_check(const char *urls, const char *stream, int argc, char *argv[])
{
	struct expect *ex;
	struct fetch f;
	jsStreamInfo *si;
	pthread_t th[FETCHERS];
	uint64_t total, seen = 0, k, count, nmsgs;
	const char *subj;
	int i, j, n = argc, failed = 0, strays = 0;
	char *eq, *at;

	if ((ex = calloc((size_t)n, sizeof(*ex))) == NULL)
		err(1, NULL);
	for (i = 0; i < n; i++) {
		if ((ex[i].subject = strdup(argv[i])) == NULL)
			err(1, NULL);
		if ((eq = strchr(ex[i].subject, '=')) == NULL)
			errx(2, "check: %s: not SUBJECT=FILE", argv[i]);
		*eq++ = '\0';
		if ((at = strchr(eq, '@')) != NULL) {
			*at++ = '\0';
			ex[i].first = strtoull(at, NULL, 10);
		}
		load_lines(&ex[i], eq);
	}
	if (connect_to(urls, false) != NATS_OK)
		return 1;
	if (js_GetStreamInfo(&si, js, stream, NULL, NULL) != NATS_OK) {
		warnx("stream %s: %s", stream, nats_GetLastError(NULL));
		return 1;
	}
	total = si->State.Msgs;
	memset(&f, 0, sizeof(f));
	f.stream = stream;
	f.first = f.next = si->State.FirstSeq;
	f.last = si->State.LastSeq;
	f.status = NATS_OK;
	jsStreamInfo_Destroy(si);
	/*
	 * Each message is asked of the stream's leader by its sequence: a
	 * consumer reads the replica of the node it is placed on, and
	 * nats-server 2.9 was seen to keep a replica that disagrees with
	 * the leader's after a node's kill -9 (doc/shipping.md). What is
	 * checked is what the stream holds, as its leader says.
	 */
	/* An empty stream (first and last sequence 0): nothing to fetch. */
	nmsgs = count = total > 0 && f.last >= f.first ?
	    f.last - f.first + 1 : 0;
	if ((f.msgs = calloc(count ? count : 1, sizeof(*f.msgs))) == NULL)
		err(1, NULL);
	for (i = 0; count > 0 && i < FETCHERS; i++)
		if (pthread_create(&th[i], NULL, fetcher, &f) != 0)
			errx(1, "pthread_create");
	for (i = 0; count > 0 && i < FETCHERS; i++)
		pthread_join(th[i], NULL);
	if (f.status != NATS_OK) {
		warnx("get %" PRIu64 " of %" PRIu64 ": %s", f.failed_at,
		    total, natsStatus_GetText(f.status));
		failed = 1;
		count = f.failed_at - f.first;
	}
	for (k = 0; k < count; k++) {
		natsMsg *m = f.msgs[k];

		if (m == NULL)
			continue;
		seen++;
		subj = natsMsg_GetSubject(m);
		/* A subject named twice: the first file's lines, then
		 * the second's (a partition made again). */
		for (i = 0; i < n; i++)
			if (strcmp(subj, ex[i].subject) == 0 &&
			    (ex[i].got < ex[i].n || !more_of(ex, n, i)))
				break;
		if (i == n) {
			if (strays++ < 5)
				printf("a message on %s\n", subj);
		} else
			check_msg(&ex[i], m);
	}
	for (k = 0; k < nmsgs; k++)
		if (f.msgs[k] != NULL)
			natsMsg_Destroy(f.msgs[k]);
	free(f.msgs);
	if (seen != total)
		printf("%" PRIu64 " messages read, the stream counts %" PRIu64
		    "\n", seen, total);
	for (i = 0; i < n; i++) {
		if (ex[i].got != ex[i].n)
			complain(&ex[i], "%zu messages, want %zu", ex[i].got,
			    ex[i].n);
		printf("%s: %zu messages, %s\n", ex[i].subject, ex[i].got,
		    ex[i].bad ? "BAD" : "ok");
		if (ex[i].bad)
			failed = 1;
	}
	if (strays)
		failed = 1;
	disconnect();
	for (i = 0; i < n; i++) {
		for (j = 0; j < (int)ex[i].n; j++)
			free(ex[i].lines[j]);
		free(ex[i].lines);
		free(ex[i].subject);
	}
	free(ex);
	return failed;
}

static volatile int64_t acked, errors;

static void
pub_ack(jsCtx *ctx, natsMsg *m, jsPubAck *pa, jsPubAckErr *pae, void *arg)
{
	(void)ctx;
	(void)pa;
	(void)arg;
	if (pae != NULL)
		__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&acked, 1, __ATOMIC_RELEASE);
	natsMsg_Destroy(m);
}

static int
cmd_pub(const char *urls, const char *stream, const char *subj,
    const char *path, int mode)
{
	jsOptions jo;
	natsOptions *o;
	jsPubOptions po;
	FILE *f;
	char *line = NULL, id[64], last[64] = "", num[24];
	size_t cap = 0;
	ssize_t len;
	int64_t sent = 0, t0, t1;
	natsMsg *m;

	if ((f = fopen(path, "r")) == NULL)
		err(1, "%s", path);
	if (natsOptions_Create(&o) != NATS_OK)
		errx(1, "options");
	set_servers(o, urls);
	if (natsConnection_Connect(&nc, o) != NATS_OK)
		errx(1, "connect %s: %s", urls, nats_GetLastError(NULL));
	jsOptions_Init(&jo);
	jo.PublishAsync.AckHandler = pub_ack;
	if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK)
		errx(1, "jetstream");
	jsPubOptions_Init(&po);
	po.ExpectStream = stream;
	t0 = now_ms();
	while ((len = getline(&line, &cap, f)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			len--;
		while (sent - __atomic_load_n(&acked, __ATOMIC_ACQUIRE) >=
		    WINDOW)
			usleep(100);
		if (natsMsg_Create(&m, subj, NULL, line, (int)len) != NATS_OK)
			errx(1, "message");
		if (mode >= 1) {
			snprintf(id, sizeof(id), "bench/%s/%" PRId64, subj,
			    sent);
			po.MsgId = id;
		}
		if (mode == 2) {
			/* Everything tlogctl ship sets. */
			snprintf(num, sizeof(num), "%" PRId64, sent);
			natsMsgHeader_Set(m, "Tlog-Offset", num);
			natsMsgHeader_Set(m, "Tlog-Timestamp", "1732871640000");
			po.ExpectLastMsgId = last[0] != '\0' ? last : NULL;
		}
		if (js_PublishMsgAsync(js, &m, &po) != NATS_OK)
			errx(1, "publish: %s", nats_GetLastError(NULL));
		if (mode == 2)
			strlcpy(last, id, sizeof(last));
		sent++;
	}
	while (__atomic_load_n(&acked, __ATOMIC_ACQUIRE) < sent)
		usleep(1000);
	t1 = now_ms();
	if (errors)
		errx(1, "%" PRId64 " publishes failed", errors);
	printf("%.0f records/s\n", (double)sent * 1000.0 /
	    (double)(t1 > t0 ? t1 - t0 : 1));
	free(line);
	fclose(f);
	disconnect();
	return 0;
}

static int
cmd_put(const char *urls, const char *stream, const char *subj,
    const char *id, const char *off, const char *data)
{
	jsPubOptions po;
	jsErrCode ec = 0;
	jsPubAck *pa = NULL;
	natsMsg *m;

	if (connect_to(urls, false) != NATS_OK)
		return 1;
	if (natsMsg_Create(&m, subj, NULL, data, (int)strlen(data)) !=
	    NATS_OK ||
	    natsMsgHeader_Set(m, "Tlog-Offset", off) != NATS_OK ||
	    natsMsgHeader_Set(m, "Tlog-Timestamp", "1732871640000") != NATS_OK)
		errx(1, "message");
	jsPubOptions_Init(&po);
	po.MsgId = id;
	po.ExpectStream = stream;
	if (js_PublishMsg(&pa, js, m, &po, &ec) != NATS_OK)
		errx(1, "publish: %s (%d)", nats_GetLastError(NULL), (int)ec);
	jsPubAck_Destroy(pa);
	natsMsg_Destroy(m);
	disconnect();
	return 0;
}

static int
cmd_seqs(const char *urls, const char *stream)
{
	jsStreamInfo *si = NULL;
	jsErrCode ec = 0;
	uint64_t seq, last;
	natsMsg *m;

	if (connect_to(urls, false) != NATS_OK)
		return 1;
	if (js_GetStreamInfo(&si, js, stream, NULL, NULL) != NATS_OK) {
		warnx("stream %s: %s", stream, nats_GetLastError(NULL));
		return 1;
	}
	last = si->State.LastSeq;
	jsStreamInfo_Destroy(si);
	for (seq = 1; seq <= last; seq++) {
		m = NULL;
		if (js_GetMsg(&m, js, stream, seq, NULL, &ec) != NATS_OK) {
			if (ec == JSNoMessageFoundErr)
				continue;
			warnx("get %" PRIu64 ": %s", seq,
			    nats_GetLastError(NULL));
			return 1;
		}
		printf("%" PRIu64 " %s\n", seq, natsMsg_GetSubject(m));
		natsMsg_Destroy(m);
	}
	disconnect();
	return 0;
}

static int
cmd_follow(const char *urls, const char *stream, const char *subj)
{
	jsSubOptions so;
	natsSubscription *sub;
	jsErrCode ec = 0;
	natsMsg *m;
	natsStatus s;
	char *line;
	int len;

	if (connect_to(urls, false) != NATS_OK)
		return 1;
	jsSubOptions_Init(&so);
	so.Stream = stream;
	so.Ordered = true;
	so.Config.DeliverPolicy = js_DeliverNew;
	if (js_SubscribeSync(&sub, js, subj, NULL, &so, &ec) != NATS_OK)
		errx(1, "subscribe %s: %s", subj, nats_GetLastError(NULL));
	for (;;) {
		if ((s = natsSubscription_NextMsg(&m, sub, 60000)) == NATS_TIMEOUT)
			continue;
		if (s != NATS_OK)
			errx(1, "%s: %s", subj, nats_GetLastError(NULL));
		len = natsMsg_GetDataLength(m);
		if ((line = malloc((size_t)len + 1)) == NULL)
			err(1, NULL);
		memcpy(line, natsMsg_GetData(m), (size_t)len);
		line[len] = '\n';
		/* One write a message: its reader times each line. */
		if (write(STDOUT_FILENO, line, (size_t)len + 1) == -1)
			return 0;
		free(line);
		natsMsg_Destroy(m);
	}
}

int
main(int argc, char *argv[])
{
	int r;

	if (argc < 3)
		errx(2, "usage: jsprobe ready|stream|msgs|leader|purge|check|seqs|put|pub "
		    "URLS ...");
	if (strcmp(argv[1], "ready") == 0)
		r = cmd_ready(argv[2], argc > 3 ? atoi(argv[3]) : 30);
	else if (strcmp(argv[1], "stream") == 0 && argc == 6)
		r = cmd_stream(argv[2], argv[3], argv[4], argv[5]);
	else if (strcmp(argv[1], "msgs") == 0 && argc == 4)
		r = cmd_msgs(argv[2], argv[3]);
	else if (strcmp(argv[1], "leader") == 0 && argc == 4)
		r = cmd_leader(argv[2], argv[3]);
	else if (strcmp(argv[1], "purge") == 0 && argc == 4)
		r = cmd_purge(argv[2], argv[3]);
	else if (strcmp(argv[1], "check") == 0 && argc >= 5)
		r = cmd_check(argv[2], argv[3], argc - 4, argv + 4);
	else if (strcmp(argv[1], "seqs") == 0 && argc == 4)
		r = cmd_seqs(argv[2], argv[3]);
	else if (strcmp(argv[1], "put") == 0 && argc == 8)
		r = cmd_put(argv[2], argv[3], argv[4], argv[5], argv[6],
		    argv[7]);
	else if (strcmp(argv[1], "pub") == 0 && (argc == 6 || argc == 7))
		r = cmd_pub(argv[2], argv[3], argv[4], argv[5],
		    argc == 6 ? 0 : strcmp(argv[6], "ids") == 0 ? 1 :
		    strcmp(argv[6], "all") == 0 ? 2 : 0);
	else if (strcmp(argv[1], "follow") == 0 && argc == 5)
		r = cmd_follow(argv[2], argv[3], argv[4]);
	else
		errx(2, "usage: jsprobe ready|stream|msgs|leader|purge|check|seqs|put|pub|follow "
		    "URLS ...");
	nats_Close();
	return r;
}
