# lib.sh - sourced by the integration tests: TAP output, a fresh store and
# mountpoint in a temporary directory, mounting, unmounting, and cleanup.
#
# A test script does:
#   . "${srcdir:-.}/tests/integration/lib.sh"
#   tl_mount                     # mounts $STORE on $MNT, daemon in $DPID
#                                # (tl_mount_hooked: the test build)
#   tl_is "name" "want" "$(cmd)"
#   tl_umount                    # $FUSERMOUNT -u, waits for the daemon
#   tl_stderr_clean "name" [ALLOWED_ERE]
#   tl_done                      # prints the plan, exits
#
# and may use, rather than write its own:
#   gx NAME PATH                 # getfattr's value of NAME
#   now_ms                       # the system time in milliseconds
#   nums FIRST LAST              # 000001 000002 ... one a line
#   tl_kill SIG, tl_wait_daemon  # stop the daemon, get its status
#   tl_user PREFIX; as_user ...  # a throwaway user running errno_probe
#   tl_tmpfs SIZE                # STORE on a tmpfs of its own, to fill
#
# Tests run from the build directory (make check); helpers are found
# there, scripts and this file in $srcdir. A script that mounts nothing
# sets TL_NO_MOUNT=1 before sourcing this file, so that it runs without
# /dev/fuse and an unmount command.

set -u

TL_BUILD=$(pwd)
TLOGFS=$TL_BUILD/mount/tlogfs
PROBE=$TL_BUILD/tests/integration/helpers/errno_probe
LINEWRITER=$TL_BUILD/tests/integration/helpers/linewriter
HELD=$TL_BUILD/tests/integration/helpers/heldwriter

# What unmounts: configure's choice (make check passes FUSERMOUNT), else
# the first of fusermount3 and fusermount on PATH.
if [ "${FUSERMOUNT:-no}" = no ]; then
	FUSERMOUNT=$(command -v fusermount3 || command -v fusermount || echo no)
fi

# tl_skip REASON: this test cannot run here. Only a missing /dev/fuse
# is a skip everywhere; with CI set (.ci/run installs everything a test
# needs), any other reason fails the test.
tl_skip() {
	if [ -n "${CI:-}" ]; then
		echo "Bail out! $1 (CI: a skip is a failure)"
		exit 1
	fi
	echo "1..0 # SKIP $1"
	exit 77
}

if [ -z "${TL_NO_MOUNT:-}" ]; then
	if [ ! -c /dev/fuse ]; then
		echo "1..0 # SKIP no /dev/fuse"
		exit 77
	fi
	[ "$FUSERMOUNT" != no ] ||
	    tl_skip "neither fusermount3 nor fusermount found"
fi

TL_N=0
TL_FAILED=0
DPID=
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlogfs-it.XXXXXX")
STORE=$TMP/store
MNT=$TMP/mnt
ERR=$TMP/daemon.err
mkdir -p "$STORE" "$MNT"
: >"$ERR"

tl_ok() {
	TL_N=$((TL_N + 1))
	echo "ok $TL_N - $1"
}

tl_not_ok() {
	TL_N=$((TL_N + 1))
	TL_FAILED=1
	echo "not ok $TL_N - $1"
	shift
	for l in "$@"; do echo "# $l"; done
}

# tl_check NAME CMD...: ok if CMD succeeds.
tl_check() {
	local name=$1
	shift
	if "$@"; then tl_ok "$name"; else tl_not_ok "$name" "failed: $*"; fi
}

# tl_is NAME WANT GOT
tl_is() {
	if [ "$2" = "$3" ]; then
		tl_ok "$1"
	else
		tl_not_ok "$1" "want: $(printf %s "$2" | head -c 400)" \
		    "got:  $(printf %s "$3" | head -c 400)"
	fi
}

tl_diag() { echo "# $*"; }

# gx NAME PATH: the value of the extended attribute NAME of PATH (what
# getfattr prints; on failure nothing, and getfattr's reason on stderr).
gx() { getfattr --absolute-names --only-values -n "$1" "$2"; }

now_ms() { date +%s%3N; }

# nums FIRST LAST: numbered lines of six digits, as tests append them.
nums() { seq -f '%06g' "$1" "$2"; }
# sealed_then PART N TAIL WANT: records 0..N-1 of 27 bytes each in PART's
# current segment, sealed, then TAIL short ones in the next; all of them
# into the file WANT (the lost-records tests' partitions).
sealed_then() {
	nums 0 $(($2 - 1)) | sed 's/$/ GET \/a HTTP\/1.1 200/' >"$4"
	cat "$4" >>"$1/current"
	setfattr -n user.seal -v 1 "$1/current"
	[ "$3" -gt 0 ] || return 0
	nums "$2" $(($2 + $3 - 1)) >>"$1/current"
	nums "$2" $(($2 + $3 - 1)) >>"$4"
}

# tl_wait_for TIMEOUT_S CMD...: polls CMD until it succeeds, soon at
# first, then every 0.1 s (a short wait ends quickly, a long one costs
# the machine little); after TIMEOUT_S of sleeping says so (a TAP
# comment) and returns 1.
tl_wait_for() {
	local limit=$(($1 * 1000)) waited=0 step=5
	shift
	while ! "$@"; do
		if [ $waited -ge $limit ]; then
			echo "# tl_wait_for: gave up after $((limit / 1000)) s: $*"
			return 1
		fi
		sleep "$(printf '0.%03d' $step)"
		waited=$((waited + step))
		step=$((step * 2))
		[ $step -le 100 ] || step=100
	done
	return 0
}

tl_is_mounted() {
	awk -v m="$1" '$2 == m && $3 == "fuse.tlogfs" { f = 1 } END { exit !f }' \
	    /proc/self/mounts
}

tl_daemon_alive() { [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; }

# tl_mount [OPTIONS...]: starts the daemon in the foreground, in the
# background of this shell, and polls until the mount is up. TL_LAUNCH,
# if set, is a command prefix, e.g. TL_LAUNCH="env --ignore-signal=INT"
# (a shell starts background commands with SIGINT ignored already).
tl_mount() {
	${TL_LAUNCH:-} "$TLOGFS" "$STORE" "$MNT" -f "$@" 2>>"$ERR" &
	DPID=$!
	if ! tl_wait_for 10 _tl_up; then
		echo "# mount did not come up; daemon stderr:"
		sed 's/^/#   /' "$ERR"
		tl_not_ok "mount $STORE on $MNT"
		exit 1
	fi
}

_tl_up() {
	tl_is_mounted "$MNT" && return 0
	tl_daemon_alive || return 0	# died: stop polling, checked above
	return 1
}

# tl_mount_hooked [OPTIONS...]: tl_mount with the test build of the
# daemon (tests/hooks/tlogfs, never installed), the only one that reads
# the test hooks TLOGFS_TEST_* and TLOGFS_BOOT_ID from the environment.
tl_mount_hooked() {
	local plain=$TLOGFS
	TLOGFS=$TL_BUILD/tests/hooks/tlogfs
	tl_mount "$@"
	TLOGFS=$plain
}

# tl_wait_daemon: waits for the daemon to exit; returns its status.
tl_wait_daemon() {
	local st=0
	if [ -n "$DPID" ]; then
		wait "$DPID" || st=$?
		DPID=
	fi
	return $st
}

# tl_kill SIG: sends SIG to the daemon and waits for it; returns its
# status (2>/dev/null keeps the shell's "Killed" off the log).
tl_kill() {
	kill -"$1" "$DPID"
	tl_wait_daemon
}

# tl_umount: unmounts and waits for the daemon; returns its status.
tl_umount() {
	"$FUSERMOUNT" -u "$MNT" || return 1
	tl_wait_daemon
}

# tl_stderr_clean NAME [ALLOWED_ERE]: ok if the daemon printed nothing
# but lines matching ALLOWED_ERE, and the lines a step of the machine's
# wall clock (NTP, a virtual machine's host) makes it print.
tl_stderr_clean() {
	local bad
	bad=$(grep -Ev -- '^tlogfs: clock: the wall clock stepped' "$ERR" ||
	    true)
	if [ $# -ge 2 ]; then
		bad=$(printf '%s\n' "$bad" | grep -Ev -- "$2" || true)
	fi
	if [ -z "$bad" ]; then
		tl_ok "$1"
	else
		tl_not_ok "$1" "unexpected daemon output:" "$bad"
	fi
}

# tl_no_sanitizer NAME: a failure if the daemon's output so far holds a
# sanitizer report; for a daemon killed on purpose (kill -9 looks the
# same as a sanitizer's halt), before its output is cleared.
tl_no_sanitizer() {
	local bad
	bad=$(grep -E 'Sanitizer|runtime error:' "$ERR" || true)
	[ -z "$bad" ] || tl_not_ok "$1: no sanitizer report" "$bad"
}

# tl_lines FILE: checks linewriter output. Prints "torn=N order=N" then
# "wID COUNT FIRST LAST" per writer: a torn line breaks the format, an
# order error is a number that is not the writer's previous one plus 1.
tl_lines() {
	awk '
	{
		if (NF != 4 || length($4) != $3 + 0 ||
		    $4 !~ ("^" sprintf("%c", 97 + $2 % 26) "+$")) {
			torn++
			next
		}
		w = $1
		if (w in nx && $2 != nx[w]) order++
		if (!(w in first)) first[w] = $2
		nx[w] = $2 + 1
		cnt[w]++
	}
	END {
		printf "torn=%d order=%d\n", torn, order
		for (w in cnt) printf "%s %d %d %d\n", w, cnt[w], first[w], nx[w] - 1
	}' "$1" | { read -r head; echo "$head"; sort; }
}

# tl_cleanup_mount: stops the daemon and unmounts, whatever state they
# are in; tl_cleanup also removes the temporary directory.
tl_cleanup_mount() {
	if [ -n "$DPID" ] && tl_daemon_alive; then
		"$FUSERMOUNT" -u "$MNT" 2>/dev/null || kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	DPID=
	if tl_is_mounted "$MNT"; then
		"$FUSERMOUNT" -u -z "$MNT" 2>/dev/null
	fi
}

tl_cleanup() {
	tl_cleanup_mount
	# Never remove through a live mount.
	if ! tl_is_mounted "$MNT" && ! grep -q " $TMP" /proc/self/mounts; then
		rm -rf "$TMP"
	fi
}

trap tl_cleanup EXIT
# A test stopped by a signal (make's timeout, ^C) cleans up too: exit
# runs the EXIT trap (dash runs it on exit, not on a signal's death).
trap 'exit 143' TERM INT HUP

# tl_tmpfs SIZE: STORE on a new tmpfs of SIZE (named after the test), for
# a test that fills the disk; not ok and the end of the test if it cannot
# (not a skip: only a missing /dev/fuse skips). umount "$STORE" before
# the next one. tl_cleanup_tmpfs, for the test's EXIT trap, is tl_cleanup
# with the tmpfs unmounted after the daemon.
tl_tmpfs() {
	if ! mount -t tmpfs -o size="$1",mode=0700 "tlogfs-$(basename "$0" .sh)" \
	    "$STORE" 2>"$TMP/tmpfs.err"; then
		tl_not_ok "mount a $1 tmpfs on the store" "$(cat "$TMP/tmpfs.err")"
		tl_done
	fi
}

tl_cleanup_tmpfs() {
	tl_cleanup_mount
	umount "$STORE" 2>/dev/null
	tl_cleanup
}

# tl_user PREFIX: makes a throwaway system user for the rest of the test
# (useradd; userdel at exit), named in U, its ids in UID_ and GID_; not ok
# and the end of the test if it cannot. as_user CMD... runs errno_probe
# CMD as that user: the temporary directory opens (755) so that the user
# reaches the mount and a copy of the probe.
tl_user() {
	U=$1$$
	if ! useradd --system --no-create-home --user-group \
	    --shell /usr/sbin/nologin "$U" 2>"$TMP/useradd.err"; then
		tl_not_ok "useradd $U (needs root)" "$(cat "$TMP/useradd.err")"
		tl_done
	fi
	trap _tl_user_cleanup EXIT
	UID_=$(id -u "$U")
	GID_=$(id -g "$U")
	chmod 755 "$TMP"
	cp "$PROBE" "$TMP/probe"
	chmod 755 "$TMP/probe"
}

_tl_user_cleanup() {
	tl_cleanup_mount
	userdel "$U" 2>/dev/null
	tl_cleanup
}

as_user() {
	setpriv --reuid="$UID_" --regid="$GID_" --clear-groups "$TMP/probe" "$@"
}

# tl_done: the plan (at the end, as TAP allows) and the exit status.
tl_done() {
	echo "1..$TL_N"
	exit $TL_FAILED
}
