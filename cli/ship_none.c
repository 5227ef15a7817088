/*
 * ship_none.c - `tlogctl ship` in a build without libnats (configure
 * found none, or --without-nats): one line saying so.
 */
#include "config.h"

#include <err.h>

#include "tlogctl.h"

int
cmd_ship(int argc, char *argv[])
{
	(void)argc;
	(void)argv;
	errx(1, "ship: this build has no NATS support (libnats was not found "
	    "when it was configured)");
}
