/*
 * main.c - tlogctl, the operator's command for a mounted tlogfs: the
 * subcommand table, usage and option handling shared by the
 * subcommands (doc/tlogctl.1).
 */
#include "config.h"

#include <err.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlogctl.h"

static const char usage_text[] =
    "usage: tlogctl append PART\n"
    "       tlogctl read [--from OFFSET | --since TIME |"
    " --cursor NAME [--commit]]\n"
    "                    [--follow] PART\n"
    "       tlogctl lag MOUNT\n"
    "       tlogctl ship --nats URL[,URL...] [--stream NAME] [--replicas N]\n"
    "                    [--subject-prefix P] [--cursor NAME] [--once] PATH...\n"
    "       tlogctl --help\n";

static const struct {
	const char *name;
	int (*fn)(int, char *[]);
} cmds[] = {
	{ "append", cmd_append },
	{ "read", cmd_read },
	{ "lag", cmd_lag },
	{ "ship", cmd_ship },
};

void
usage(void)
{
	fputs(usage_text, stderr);
	exit(EXIT_USAGE);
}

void
help(void)
{
	fputs(usage_text, stdout);
	exit(0);
}

int
next_opt(int argc, char *argv[], const char *optstr,
    const struct option *longopts)
{
	int c;

	opterr = 0;
	c = getopt_long(argc, argv, optstr, longopts, NULL);
	if (c == 'h')
		help();
	if (c == '?' || c == ':') {
		/* A long option is named as given, a short one by its
		 * letter (optind may already be past a bundle of them). */
		if (strncmp(argv[optind - 1], "--", 2) == 0)
			warnx("%s: option %s %s", argv[0], argv[optind - 1],
			    c == ':' ? "needs an argument" : "is unknown");
		else
			warnx("%s: option -%c %s", argv[0], optopt,
			    c == ':' ? "needs an argument" : "is unknown");
		usage();
	}
	return c;
}

static int64_t
clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

int64_t
real_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

int
main(int argc, char *argv[])
{
	size_t i;

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		help();
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	warnx("unknown command: %s", argv[1]);
	usage();
}
