# shiplib.sh - sourced by the shipping tests (ship*.sh)
# instead of lib.sh: lib.sh, then tlogctl and jsprobe found in the build
# ($TLOGCTL, $JSPROBE) and the nats-server cluster of nats.sh; the test
# is skipped without nats-server or in a build without libnats.
. "${srcdir:-.}/tests/integration/lib.sh"

JSPROBE=$TL_BUILD/tests/integration/helpers/jsprobe
TLOGCTL=$TL_BUILD/cli/tlogctl
# The test build (never installed), the only one that reads the
# TLOGCTL_TEST_* hooks from the environment.
HOOKED_TLOGCTL=$TL_BUILD/tests/hooks/tlogctl
. "${srcdir:-.}/tests/integration/nats.sh"

if [ -z "$NATS_SERVER" ] || [ ! -x "$JSPROBE" ]; then
	tl_skip "no nats-server (or a build without libnats)"
fi

# One JetStream server on 127.0.0.1 ($NATS_URL_1), then the mount; the
# test's EXIT trap stops both (nats_stop_all, tl_cleanup).
ship_one_node() {
	if ! nats_cluster 1; then
		tl_not_ok "a JetStream server on 127.0.0.1"
		tl_done
	fi
	tl_mount
}
