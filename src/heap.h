/*
 * heap.h - an intrusive binary min-heap: the caller embeds a node in each
 * of its objects, keyed by an int64_t, and finds the object again from
 * the node (TLOG_CONTAINER_OF). No lock: the caller serializes.
 */
#ifndef TLOG_HEAP_H
#define TLOG_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tlog_heap_node {
	int64_t key;
	size_t idx;		/* SIZE_MAX: in no heap */
};

struct tlog_heap {
	struct tlog_heap_node **v;
	size_t n, cap;
};

void tlog_heap_init(struct tlog_heap *h);
/* Frees the array; the nodes are the caller's. */
void tlog_heap_destroy(struct tlog_heap *h);
void tlog_heap_node_init(struct tlog_heap_node *x);
/* 0, or -ENOMEM (x is then in no heap). */
int tlog_heap_insert(struct tlog_heap *h, struct tlog_heap_node *x);
void tlog_heap_remove(struct tlog_heap *h, struct tlog_heap_node *x);
/* Puts x back in order after its key changed. */
void tlog_heap_fix(struct tlog_heap *h, struct tlog_heap_node *x);
/* The node with the smallest key; NULL if the heap is empty. */
struct tlog_heap_node *tlog_heap_top(const struct tlog_heap *h);

static inline bool
tlog_heap_holds(const struct tlog_heap_node *x)
{
	return x->idx != SIZE_MAX;
}

#endif /* TLOG_HEAP_H */
