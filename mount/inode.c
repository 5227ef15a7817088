/*
 * inode.c - the inode table: kernel node id -> engine object.
 *
 * A chained hash table under one mutex. A node lives while the kernel
 * counts lookups on it (nlookup) or a child node pins it (nchild); then
 * its engine references are dropped. The root node is static and never
 * forgotten. Request handlers use a node without the lock: the kernel
 * sends no request for an inode it has forgotten.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mount.h"

static size_t
bucket_of(const struct tl_fs *fs, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ULL) >> 32) &
	    (fs->nbuckets - 1);
}

int
tl_inodes_init(struct tl_fs *fs)
{
	fs->nbuckets = 1024;
	fs->buckets = calloc(fs->nbuckets, sizeof(*fs->buckets));
	if (fs->buckets == NULL)
		return -ENOMEM;
	fs->nnodes = 0;
	memset(&fs->root, 0, sizeof(fs->root));
	fs->root.ino = TLOG_ROOT_INO;
	fs->root.kind = TL_ROOT;
	fs->root.nlookup = 1;
	pthread_mutex_init(&fs->lock, NULL);
	return 0;
}

static void
node_release(struct tl_node *n)
{
	switch (n->kind) {
	case TL_TOPIC:
		tlog_topic_put(n->topic);
		break;
	case TL_PART:
		tlog_partition_put(n->part);
		break;
	case TL_SEG:
		tlog_segment_put(n->seg);
		break;
	default:
		break;
	}
	free(n);
}

/* Frees every node (at stop, after the session is gone). Children
 * first, so that a segment never outlives its partition's reference. */
void
tl_inodes_free(struct tl_fs *fs)
{
	struct tl_node *n, *next, *keep = NULL;
	size_t i;

	for (i = 0; i < fs->nbuckets; i++) {
		for (n = fs->buckets[i]; n != NULL; n = next) {
			next = n->next;
			if (n->kind == TL_SEG || n->kind == TL_EMPTY)
				node_release(n);
			else {
				n->next = keep;
				keep = n;
			}
		}
		fs->buckets[i] = NULL;
	}
	for (n = keep; n != NULL; n = next) {
		next = n->next;
		node_release(n);
	}
	free(fs->buckets);
	fs->buckets = NULL;
	fs->nnodes = 0;
	pthread_mutex_destroy(&fs->lock);
}

static struct tl_node *
find_locked(struct tl_fs *fs, uint64_t ino)
{
	struct tl_node *n;

	if (ino == TLOG_ROOT_INO)
		return &fs->root;
	for (n = fs->buckets[bucket_of(fs, ino)]; n != NULL; n = n->next)
		if (n->ino == ino)
			return n;
	return NULL;
}

struct tl_node *
tl_node_find(struct tl_fs *fs, uint64_t ino)
{
	struct tl_node *n;

	pthread_mutex_lock(&fs->lock);
	n = find_locked(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

struct tl_node *
tl_node_get(fuse_req_t req, fuse_ino_t ino)
{
	struct tl_node *n;

	if ((n = tl_node_find(tl_fs_of(req), ino)) == NULL)
		fuse_reply_err(req, ENOENT);
	return n;
}

/* Doubles the table when it is as full as it is wide. */
static void
grow_locked(struct tl_fs *fs)
{
	struct tl_node **old = fs->buckets, *n, *next;
	size_t oldn = fs->nbuckets, i, b;
	struct tl_node **nb;

	if (fs->nnodes < fs->nbuckets || oldn > SIZE_MAX / 4)
		return;
	if ((nb = calloc(oldn * 2, sizeof(*nb))) == NULL)
		return;		/* longer chains, still correct */
	fs->buckets = nb;
	fs->nbuckets = oldn * 2;
	for (i = 0; i < oldn; i++)
		for (n = old[i]; n != NULL; n = next) {
			next = n->next;
			b = bucket_of(fs, n->ino);
			n->next = nb[b];
			nb[b] = n;
		}
	free(old);
}

struct tl_node *
tl_node_lookup(struct tl_fs *fs, uint64_t ino, enum tl_kind kind,
    struct tl_node *parent, struct tlog_topic *t, struct tlog_partition *p,
    struct tlog_segment *seg)
{
	struct tl_node *n, *fresh;
	size_t b;

	/* Allocated before the lock; freed unused if the node exists. */
	fresh = calloc(1, sizeof(*fresh));
	pthread_mutex_lock(&fs->lock);
	if ((n = find_locked(fs, ino)) != NULL) {
		n->nlookup++;
		pthread_mutex_unlock(&fs->lock);
		free(fresh);
		tlog_topic_put(t);
		if (kind == TL_PART)
			tlog_partition_put(p);
		tlog_segment_put(seg);
		return n;
	}
	if (fresh == NULL) {
		pthread_mutex_unlock(&fs->lock);
		tlog_topic_put(t);
		if (kind == TL_PART)
			tlog_partition_put(p);
		tlog_segment_put(seg);
		return NULL;
	}
	n = fresh;
	n->ino = ino;
	n->kind = kind;
	n->nlookup = 1;
	n->topic = t;
	n->part = p;
	n->seg = seg;
	if (parent != NULL) {
		n->parent = parent;
		n->part = parent->part;
		parent->nchild++;
	}
	b = bucket_of(fs, ino);
	n->next = fs->buckets[b];
	fs->buckets[b] = n;
	fs->nnodes++;
	grow_locked(fs);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

static void
unhash_locked(struct tl_fs *fs, struct tl_node *n)
{
	struct tl_node **pp;

	for (pp = &fs->buckets[bucket_of(fs, n->ino)]; *pp != NULL;
	    pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			fs->nnodes--;
			return;
		}
}

void
tl_node_forget(struct tl_fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct tl_node *n, *dead[2];
	int ndead = 0, i;

	if (ino == TLOG_ROOT_INO)
		return;
	pthread_mutex_lock(&fs->lock);
	n = find_locked(fs, ino);
	if (n == NULL) {
		pthread_mutex_unlock(&fs->lock);
		return;
	}
	n->nlookup = nlookup < n->nlookup ? n->nlookup - nlookup : 0;
	while (n != NULL && n->nlookup == 0 && n->nchild == 0 && ndead < 2) {
		unhash_locked(fs, n);
		dead[ndead++] = n;
		n = n->parent;
		if (n != NULL)
			n->nchild--;
	}
	pthread_mutex_unlock(&fs->lock);
	/* Children first: a segment's reference goes before its
	 * partition's. */
	for (i = 0; i < ndead; i++)
		node_release(dead[i]);
}

size_t
tl_node_children(struct tl_fs *fs, struct tl_node *pn, uint64_t *inos,
    size_t max)
{
	struct tl_node *n;
	size_t i, k = 0;

	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < fs->nbuckets && k < max; i++)
		for (n = fs->buckets[i]; n != NULL && k < max; n = n->next)
			if (n->parent == pn)
				inos[k++] = n->ino;
	pthread_mutex_unlock(&fs->lock);
	return k;
}
