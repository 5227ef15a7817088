/*
 * ship_state.c - what every part of tlogctl ship shares (ship.h): the
 * tree of partitions by path, the failure flags a publish sets for the
 * main thread, and the log line. It calls none of the other ship files.
 */
#include "config.h"

#include <err.h>
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
