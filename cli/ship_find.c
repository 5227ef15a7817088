/*
 * ship_find.c - what `tlogctl ship` ships: the checks of the options
 * (NATS URLs, subject prefix, stream name), what each PATH argument is
 * (a mount, a topic or a partition) and its store's identity, and the
 * partitions under the PATHs, looked for again while it runs so that
 * new ones are shipped too (doc/shipping.md).
 */
#include "config.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <ctype.h>
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ship.h"

#define REVIVE_MS 30000		/* a partition dropped on an error is retried */

enum kind { K_ROOT, K_TOPIC, K_PART };

struct spec {			/* a PATH argument */
	char *path;		/* canonical */
	enum kind kind;
	char *root;		/* its mount root */
	char *store;		/* the store's identity */
	bool made_id;		/* made up: the mount has none */
};

static struct spec *specs;
static int nspecs;

/* ---- the command line ---- */

/* NATS subject tokens: non-empty, of [A-Za-z0-9_-]. */
bool
ship_tokens_ok(const char *s)
{
	const char *t;
	size_t n;

	for (t = s;; t += n + 1) {
		n = strcspn(t, ".");
		if (n == 0 || strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789_-") < n)
			return false;
		if (t[n] == '\0')
			return true;
	}
}

/* [nats://|tls://][user[:pass]@]host[:port] */
static bool
url_ok(const char *u)
{
	const char *s = u, *p, *at;
	char *end;
	long port;

	if ((p = strstr(s, "://")) != NULL) {
		if (!((p - s == 4 && strncasecmp(s, "nats", 4) == 0) ||
		    (p - s == 3 && strncasecmp(s, "tls", 3) == 0)))
			return false;
		s = p + 3;
	}
	if ((at = strrchr(s, '@')) != NULL)
		s = at + 1;
	if (*s == '[') {
		if ((p = strchr(s, ']')) == NULL || p == s + 1)
			return false;
		p++;
	} else {
		p = s + strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789.-_");
		if (p == s)
			return false;
	}
	if (*p == '\0')
		return true;
	if (*p != ':' || !isdigit((unsigned char)p[1]))
		return false;
	errno = 0;
	port = strtol(p + 1, &end, 10);
	return errno == 0 && *end == '\0' && port >= 1 && port <= 65535;
}

void
ship_parse_urls(struct shipper *sh, const char *arg)
{
	char *copy, *s, *tok;

	if ((copy = strdup(arg)) == NULL)
		err(1, NULL);
	for (s = copy; (tok = strsep(&s, ",")) != NULL;) {
		if (!url_ok(tok)) {
			usage("ship", "--nats %s: not a NATS URL "
			    "([nats://]HOST[:PORT], comma-separated)",
			    *tok != '\0' ? tok : arg);
		}
		sh->urls = reallocarray(sh->urls, (size_t)sh->nurls + 1,
		    sizeof(char *));
		if (sh->urls == NULL || (sh->urls[sh->nurls++] =
		    strdup(tok)) == NULL)
			err(1, NULL);
	}
	free(copy);
}

/* The default stream: the prefix in capitals, dots as underscores. */
char *
ship_default_stream(const char *prefix)
{
	char *s, *c;

	if ((s = strdup(prefix)) == NULL)
		err(1, NULL);
	for (c = s; *c != '\0'; c++)
		*c = *c == '.' ? '_' : (char)toupper((unsigned char)*c);
	return s;
}

/* ---- the mount ---- */

static bool
is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *
join(const char *a, const char *b)
{
	char *s;

	if (asprintf(&s, "%s/%s", a, b) == -1)
		err(1, NULL);
	return s;
}

/* The store's identity: the mount's user.tlog.store_id, or, on a mount
 * without it, one made of this machine's id and the mount point
 * (doc/shipping.md says what that costs). */
static char *
store_id(const char *root, bool *made)
{
	char val[128], mid[128] = "", *id;
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *c;
	ssize_t n;
	FILE *f;

	n = getxattr(root, "user.tlog.store_id", val, sizeof(val) - 1);
	if (n > 0) {
		val[n] = '\0';
		val[strcspn(val, "\n")] = '\0';
		if (val[0] != '\0' && strchr(val, '/') == NULL &&
		    (id = strdup(val)) != NULL)
			return id;
	}
	if ((f = fopen("/etc/machine-id", "r")) != NULL) {
		if (fgets(mid, sizeof(mid), f) == NULL)
			mid[0] = '\0';
		fclose(f);
	}
	if (mid[0] == '\0')
		gethostname(mid, sizeof(mid) - 1);
	mid[strcspn(mid, "\n")] = '\0';
	/* FNV-1a over "machine-id\nmount point". */
	for (c = mid; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	h = (h ^ '\n') * 0x100000001b3ULL;
	for (c = root; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	if (asprintf(&id, "h-%016" PRIx64, h) == -1)
		err(1, NULL);
	*made = true;
	return id;
}

/* Whether path is a tlogfs mount root: its .tlogfs/, and a setting
 * every level answers (the backing store has the one, not the other). */
static bool
is_root(const char *path)
{
	char *meta = join(path, ".tlogfs");
	bool r;

	r = is_dir(meta) && getxattr(path, "user.retention.ms", NULL, 0) > 0;
	free(meta);
	return r;
}

static void
classify(struct spec *sp, const char *arg)
{
	char *path, *up;
	uint64_t v;
	int fd;

	if ((path = realpath(arg, NULL)) == NULL)
		err(1, "ship: %s", arg);
	sp->path = path;
	if (!is_dir(path))
		errx(1, "ship: %s: not a tlogfs mount, topic or partition",
		    arg);
	if ((fd = dir_open(path)) != -1 &&
	    fd_stat(fd, "start_offset", &v) == 0) {
		sp->kind = K_PART;
		up = join(path, "../..");
	} else if (is_root(path)) {
		sp->kind = K_ROOT;
		up = strdup(path);
	} else {
		sp->kind = K_TOPIC;
		up = join(path, "..");
	}
	if (fd != -1)
		close(fd);
	if (up == NULL || (sp->root = realpath(up, NULL)) == NULL)
		err(1, "ship: %s", arg);
	free(up);
	if (!is_root(sp->root))
		errx(1, "ship: %s: not a tlogfs mount, topic or partition",
		    arg);
}

/* The PATH arguments: what each one is, its mount root and its store;
 * one line and exit 1 on one that is no tlogfs mount, topic or
 * partition. */
void
ship_paths(int n, char *paths[])
{
	int i, j;

	nspecs = n;
	if ((specs = calloc((size_t)nspecs, sizeof(*specs))) == NULL)
		err(1, NULL);
	for (i = 0; i < nspecs; i++) {
		classify(&specs[i], paths[i]);
		for (j = 0; j < i; j++)
			if (strcmp(specs[j].root, specs[i].root) == 0)
				break;
		if (j < i)
			specs[i].store = specs[j].store;
		else
			specs[i].store = store_id(specs[i].root,
			    &specs[i].made_id);
	}
}

/* Which stores are named after this machine (doc/shipping.md). */
void
ship_say_made_ids(void)
{
	int i;

	for (i = 0; i < nspecs; i++)
		if (specs[i].made_id)
			shiplog("%s: the mount has no user.tlog.store_id; the "
			    "store is named %s, after this machine and the "
			    "mount point", specs[i].root, specs[i].store);
}

/* ---- partitions ---- */

static struct ship_part *
part_find(struct shipper *sh, const char *path)
{
	struct ship_part key;

	key.path = (char *)path;
	return RB_FIND(part_tree, &sh->parts, &key);
}

/*
 * Opens p's directory (again) and learns what it is: its inode number,
 * and its identity for the Nats-Msg-Id prefix (doc/shipping.md). A
 * tlogfs that gives partitions none (older, or a read-only mount of a
 * partition never asked) names messages after the partition's names,
 * as before, with one line. false, p dropped for now, if the directory
 * cannot be opened.
 */
static bool
part_bind(struct shipper *sh, struct ship_part *p)
{
	char pid[64];
	struct stat st;
	ssize_t n;
	int fd, old;

	if ((fd = dir_open(p->path)) == -1 || fstat(fd, &st) == -1) {
		if (ship_mount_gone(errno))
			ship_mount_lost(p->root);
		else if (errno != ENOENT)
			shiplog("%s: %s; not shipped for now", p->path,
			    strerror(errno));
		else {
			/* Gone already: inotify tells if it comes back. */
			pthread_mutex_lock(&sh->mu);
			p->moved = true;
			pthread_mutex_unlock(&sh->mu);
		}
		if (fd != -1)
			close(fd);
		p->dead = true;
		p->dead_at = mono_ms();
		return false;
	}
	free(p->idpfx);
	p->idpfx = NULL;
	n = fgetxattr(fd, "user.tlog.partition_id", pid, sizeof(pid) - 1);
	if (n > 0 && memchr(pid, '/', (size_t)n) == NULL) {
		pid[n] = '\0';
		if (asprintf(&p->idpfx, "%s/%s/", p->store, pid) == -1)
			err(1, NULL);
	} else {
		/* An older tlogfs (ENOTSUP): the whole mount, said once;
		 * else this partition (a read-only mount of one never
		 * asked, or a stray .id: the daemon says which). */
		if (n == -1 && errno == ENOTSUP) {
			if (!sh->no_id_said)
				shiplog("%s: this tlogfs gives partitions no "
				    "identity: messages are named after the "
				    "partitions' names, and one removed and "
				    "made again under its name within the "
				    "duplicate window loses records in the "
				    "stream", p->root);
			sh->no_id_said = true;
		} else
			shiplog("%s: the partition has no identity (%s); its "
			    "messages are named after its names", p->path,
			    n == -1 ? strerror(errno) : "malformed");
		if ((p->idpfx = strdup(p->oldpfx)) == NULL)
			err(1, NULL);
	}	sr_close(&p->sr);
	pthread_mutex_lock(&sh->commit_mu);
	old = p->dfd;
	p->dfd = fd;
	if (old != -1)
		close(old);
	pthread_mutex_unlock(&sh->commit_mu);
	ship_mount_seen(p, st.st_dev);
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	sr_init(&p->sr, p->path, p->dfd);
	return true;
}

static bool
moved(struct shipper *sh, struct ship_part *p)
{
	bool r;

	pthread_mutex_lock(&sh->mu);
	r = p->moved;
	pthread_mutex_unlock(&sh->mu);
	return r;
}

/* Whether p, dropped as moved, can make way for what its path names
 * now: nothing in flight, and its cursor committed (or it cannot be). */
static bool
settled(struct shipper *sh, struct ship_part *p)
{
	bool r;

	pthread_mutex_lock(&sh->mu);
	r = p->inflight == 0 && !p->failed && (!p->ready ||
	    p->committed == p->acked || p->commit_gone ||
	    (p->committed == UINT64_MAX && p->acked == 0) ||
	    __atomic_load_n(&sh->no_cursors, __ATOMIC_RELAXED));
	pthread_mutex_unlock(&sh->mu);
	return r;
}

static void
part_add(struct shipper *sh, struct spec *sp, const char *path,
    const char *topic, const char *name)
{
	struct ship_part *p;

	if ((p = part_find(sh, path)) != NULL) {
		/* Dropped on an error, and the path names another
		 * partition now (made again, or the mount is back after
		 * a restart): moved, not waiting for REVIVE_MS. One
		 * stopped at lost records is taken back only so. */
		if (p->dead && !p->unshippable && !moved(sh, p))
			(void)ship_part_here(sh, p);
		if (p->dead && !p->unshippable && (moved(sh, p) ?
		    settled(sh, p) : !p->lost && p->inflight == 0 &&
		    mono_ms() - p->dead_at >= REVIVE_MS)) {
			/* Back (made again, renamed, or the error passed):
			 * from the start again, as at a start. */
			pthread_mutex_lock(&sh->mu);
			p->ready = false;
			p->commit_gone = false;
			p->moved = false;
			pthread_mutex_unlock(&sh->mu);
			p->failed = false;
			p->lost = false;
			p->dead = !part_bind(sh, p);
			if (!p->dead)
				ship_todo(sh, p);
		}
		return;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->path = strdup(path)) == NULL ||
	    (p->root = strdup(sp->root)) == NULL ||
	    (p->topic = strdup(topic)) == NULL ||
	    (p->name = strdup(name)) == NULL ||
	    asprintf(&p->subject, "%s.%s.%s", sh->prefix, topic, name) ==
	    -1 ||
	    asprintf(&p->oldpfx, "%s/%s/%s/", sp->store, topic, name) == -1)
		err(1, NULL);
	p->store = sp->store;
	p->dfd = -1;
	sr_init(&p->sr, p->path, -1);
	p->committed = UINT64_MAX;
	if (!ship_tokens_ok(p->subject)) {
		shiplog("%s: the names make no NATS subject (%s: a name ends "
		    "in a dot or holds two in a row); not shipped", path,
		    p->subject);
		p->dead = p->unshippable = true;
	} else if (!nats_covers(sh, p->subject)) {
		shiplog("%s: stream %s does not take subject %s; not "
		    "shipped", path, sh->stream, p->subject);
		p->dead = p->unshippable = true;
	} else if (part_bind(sh, p))
		ship_todo(sh, p);
	pthread_mutex_lock(&sh->mu);
	RB_INSERT(part_tree, &sh->parts, p);
	sh->nparts++;
	pthread_mutex_unlock(&sh->mu);
}

/* Has inotify say when a directory is made or moved into dir: true,
 * or false if it cannot (no inotify, no watch left, a mount gone):
 * then the PATHs are looked at again by time. A watch is the
 * directory's, not the name's, so one moved away is no longer
 * watched under this name: looked at when the next event comes, or
 * at the next rescan (doc/shipping.md). */
static bool
watch(struct shipper *sh, const char *dir)
{
	return sh->inofd != -1 && (inotify_add_watch(sh->inofd, dir,
	    IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) != -1 || errno == ENOENT ||
	    errno == ENOTDIR);
}

/* The partitions of a topic directory. */
static void
scan_topic(struct shipper *sh, struct spec *sp, const char *dir,
    const char *topic)
{
	struct dirent *de;
	char *path;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;		/* gone meanwhile */
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		path = join(dir, de->d_name);
		if (de->d_type == DT_DIR ||
		    (de->d_type == DT_UNKNOWN && is_dir(path)))
			part_add(sh, sp, path, topic, de->d_name);
		free(path);
	}
	closedir(d);
}

/*
 * Closes the directories of partitions dropped as moved once settled:
 * one renamed away or removed for good is never found under its path
 * again, and its descriptor would keep it, and a descriptor, held.
 * true if a partition is still to be taken up again (dropped on an
 * error, or moved and not settled yet) or was just settled (what its
 * path names now is looked at once more); one stopped at lost records
 * waits for nothing in this run.
 */
static bool
sweep(struct shipper *sh)
{
	struct ship_part *p;
	bool again = false;

	RB_FOREACH(p, part_tree, &sh->parts) {
		if (!p->dead || p->unshippable || (moved(sh, p) ?
		    p->dfd == -1 : p->lost))
			continue;
		again = true;
		if (!moved(sh, p) || !settled(sh, p))
			continue;
		pthread_mutex_lock(&sh->commit_mu);
		close(p->dfd);
		p->dfd = -1;
		pthread_mutex_unlock(&sh->commit_mu);
	}
	return again;
}

bool
ship_discover(struct shipper *sh)
{
	struct dirent *de;
	struct spec *sp;
	char *path;
	bool again = false;
	DIR *d;
	int i;

	for (i = 0; i < nspecs; i++) {
		sp = &specs[i];
		switch (sp->kind) {
		case K_PART:
			/* .../TOPIC/PARTITION, canonical */
			if ((path = strdup(sp->path)) == NULL)
				err(1, NULL);
			*strrchr(path, '/') = '\0';
			again |= !watch(sh, path);
			part_add(sh, sp, sp->path, strrchr(path, '/') + 1,
			    strrchr(sp->path, '/') + 1);
			free(path);
			break;
		case K_TOPIC:
			again |= !watch(sh, sp->path);
			scan_topic(sh, sp, sp->path,
			    strrchr(sp->path, '/') + 1);
			break;
		case K_ROOT:
			again |= !watch(sh, sp->path);
			if ((d = opendir(sp->path)) == NULL) {
				if (ship_mount_gone(errno))
					ship_mount_lost(sp->root);
				else
					shiplog("%s: %s", sp->path,
					    strerror(errno));
				again = true;
				break;
			}
			while ((de = readdir(d)) != NULL) {
				if (de->d_name[0] == '.')
					continue;
				path = join(sp->path, de->d_name);
				again |= !watch(sh, path);
				scan_topic(sh, sp, path, de->d_name);
				free(path);
			}
			closedir(d);
			break;
		}
	}
	return sweep(sh) | again | ship_mounts_gone();
}
