/*
 * heap.c - an intrusive binary min-heap (heap.h). Each node knows its own
 * position, so removing or moving one is O(log n) without a search.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "heap.h"
#include "util.h"

void
tlog_heap_init(struct tlog_heap *h)
{
	h->v = NULL;
	h->n = h->cap = 0;
}

void
tlog_heap_destroy(struct tlog_heap *h)
{
	free(h->v);
	tlog_heap_init(h);
}

void
tlog_heap_node_init(struct tlog_heap_node *x)
{
	x->key = -1;
	x->idx = SIZE_MAX;
}

static void
set(struct tlog_heap *h, size_t i, struct tlog_heap_node *x)
{
	h->v[i] = x;
	x->idx = i;
}

static void
sift_up(struct tlog_heap *h, size_t i)
{
	struct tlog_heap_node *x = h->v[i];

	while (i > 0 && x->key < h->v[(i - 1) / 2]->key) {
		set(h, i, h->v[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	set(h, i, x);
}

static void
sift_down(struct tlog_heap *h, size_t i)
{
	struct tlog_heap_node *x = h->v[i];
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1]->key < h->v[c]->key)
			c++;
		if (!(h->v[c]->key < x->key))
			break;
		set(h, i, h->v[c]);
		i = c;
	}
	set(h, i, x);
}

int
tlog_heap_insert(struct tlog_heap *h, struct tlog_heap_node *x)
{
	void *nv;

	if ((nv = tlog_grow(h->v, &h->cap, h->n, sizeof(*h->v), 64)) == NULL)
		return -ENOMEM;
	h->v = nv;
	set(h, h->n++, x);
	sift_up(h, x->idx);
	return 0;
}

void
tlog_heap_remove(struct tlog_heap *h, struct tlog_heap_node *x)
{
	size_t i = x->idx;
	struct tlog_heap_node *last;

	x->idx = SIZE_MAX;
	last = h->v[--h->n];
	if (i == h->n)
		return;
	set(h, i, last);
	tlog_heap_fix(h, last);
}

void
tlog_heap_fix(struct tlog_heap *h, struct tlog_heap_node *x)
{
	sift_up(h, x->idx);
	sift_down(h, x->idx);
}

struct tlog_heap_node *
tlog_heap_top(const struct tlog_heap *h)
{
	return h->n > 0 ? h->v[0] : NULL;
}
