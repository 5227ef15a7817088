/*
 * main.c - tlogctl, the operator's command for a mounted tlogfs: the
 * subcommand table, usage and option handling shared by the
 * subcommands (doc/tlogctl.1).
 */
#include "config.h"

#include <err.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>

#include "tlogctl.h"

static const char usage_text[] =
    "usage: tlogctl append [--sync] [--sync-interval DURATION] PART\n"
    "       tlogctl read [--from OFFSET | --since TIME |"
    " --cursor NAME [--commit]]\n"
    "                    [--follow] [--skip-lost] PART\n"
    "       tlogctl lag MOUNT\n"
    "       tlogctl status [--topics] [--bytes] [--json] [PATH...]\n"
    "       tlogctl ship --nats URL[,URL...] [--stream NAME] [--replicas N]\n"
    "                    [--subject-prefix P] [--cursor NAME] [--once]\n"
    "                    [--skip-lost] PATH...\n"
    "       tlogctl --help | --version\n";

/* Each command with its usage in one line, for a usage error. */
static const struct {
	const char *name;
	int (*fn)(int, char *[]);
	const char *line;
} cmds[] = {
	{ "append", cmd_append, "tlogctl append [--sync] "
	    "[--sync-interval DURATION] PART" },
	{ "read", cmd_read, "tlogctl read [--from OFFSET | --since TIME | "
	    "--cursor NAME [--commit]] [--follow] [--skip-lost] PART" },
	{ "lag", cmd_lag, "tlogctl lag MOUNT" },
	{ "status", cmd_status, "tlogctl status [--topics] [--bytes] [--json] "
	    "[PATH...]" },
	{ "ship", cmd_ship, "tlogctl ship --nats URL[,URL...] [--stream NAME] "
	    "[--replicas N] [--subject-prefix P] [--cursor NAME] [--once] "
	    "[--skip-lost] PATH..." },
};

void
usage(const char *cmd, const char *fmt, ...)
{
	const char *line = "tlogctl append|read|lag ... (tlogctl --help "
	    "for each)";
	char what[256];
	va_list ap;
	size_t i;

	for (i = 0; cmd != NULL && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmd, cmds[i].name) == 0)
			line = cmds[i].line;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	warnx("%s; usage: %s", what, line);
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
	if (c == 'h') {
		/* Help for "tlogctl CMD --help" alone: with anything
		 * else it is not clear what was meant. */
		if (argc != 2)
			usage(argv[0], "%s takes no other argument",
			    argv[optind - 1]);
		help();
	}
	if (c == '?' || c == ':') {
		/* A long option is named as given, a short one by its
		 * letter (optind may already be past a bundle of them). */
		if (strncmp(argv[optind - 1], "--", 2) == 0)
			usage(argv[0], "option %s %s", argv[optind - 1],
			    c == ':' ? "needs an argument" : "is unknown");
		else
			usage(argv[0], "option -%c %s", optopt,
			    c == ':' ? "needs an argument" : "is unknown");
	}
	return c;
}

void
one_operand(int argc, char *argv[], const char *name)
{
	if (argc - optind < 1)
		usage(argv[0], "%s is missing", name);
	if (argc - optind > 1)
		usage(argv[0], "one %s only, not also %s", name,
		    argv[optind + 1]);
}

void
catch_stop(void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
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

void
pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
main(int argc, char *argv[])
{
	size_t i;

	if (argc < 2)
		usage(NULL, "no command");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		if (argc > 2)
			usage(NULL, "%s takes no other argument", argv[1]);
		help();
	}
	/* The same line as tlogfs --version, for the same package. */
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		if (argc > 2)
			usage(NULL, "%s takes no other argument", argv[1]);
		printf("tlogctl version %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	usage(NULL, "unknown command: %s", argv[1]);
}
