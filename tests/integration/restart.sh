#!/bin/sh
# restart.sh - a daemon killed with -9 leaves a dead FUSE mount (stat:
# ENOTCONN); a new daemon started on it unmounts it, with one log line,
# and serves. Both ways: the plain command line, and the one
# contrib/tlogfs@.service runs (ExecStartPre, then ExecStart, as systemd
# would for Restart=on-failure), without systemd.
. "${srcdir:-.}/tests/integration/lib.sh"

UNIT=${srcdir:-.}/contrib/tlogfs@.service

# The dead mount fails stat(2) with ENOTCONN once the kernel's cached
# attributes of its root expire (1 s), as they have by the time systemd
# restarts the unit (RestartSec=2); before that, stat (and mkdir -p)
# still work.
dead() { [ "$("$PROBE" stat "$MNT")" = ENOTCONN ]; }

# A mount that answers (tl_mount's poll takes the dead one for it). In
# this order: an open that works means the dead mount is gone, so a
# mount seen after it is the new one.
live() { [ "$("$PROBE" open "$MNT" rdonly)" = OK ] && tl_is_mounted "$MNT"; }

kill9() {
	tl_kill 9 2>/dev/null
}

tl_mount
mkdir -p "$MNT/r/0"
echo before >>"$MNT/r/0/current"
kill9
tl_check "kill -9 leaves a dead mount (ENOTCONN)" tl_wait_for 10 dead
tl_mount
tl_check "a new daemon mounts over it" tl_wait_for 10 live
tl_is "and serves the store" before "$(cat "$MNT/r/0/current")"
tl_is "saying so in one line" 1 "$(grep -c 'unmounted the dead FUSE mount' "$ERR")"
tl_is "the dead mount is gone, not stacked under the new one" 1 \
    "$(awk -v m="$MNT" '$2 == m' /proc/self/mounts | wc -l)"
tl_check "unmount" tl_umount

# The unit's lines, with its paths replaced by this test's.
unit_cmd() {
	sed -n "s/^$1=//p" "$UNIT" | sed -e "s|/usr/local/bin/tlogfs|$TLOGFS|" \
	    -e "s|/var/lib/tlogfs/%i|$STORE|g" -e "s|/mnt/tlogfs/%i|$MNT|g"
}
PRE=$(unit_cmd ExecStartPre)
START=$(unit_cmd ExecStart)
tl_check "the unit's command lines use no other specifier" \
    sh -c "! printf '%s\n' '$PRE' '$START' | grep -q '%'"

# unit_start: ExecStartPre ("-": its failure is ignored), then
# ExecStart in the background; fails if the unit would fail to start.
unit_start() {
	local cmd st=0
	case $PRE in
	-*)	cmd=${PRE#-}; $cmd 2>/dev/null || true ;;
	*)	$PRE || st=$? ;;
	esac
	if [ "$st" -ne 0 ]; then
		echo "# ExecStartPre failed ($st)"
		return 1
	fi
	$START 2>>"$ERR" &
	DPID=$!
	tl_wait_for 10 live
}

: >"$ERR"
tl_check "the unit's command line mounts" unit_start
echo unit >>"$MNT/r/0/current"
kill9
tl_check "kill -9 leaves a dead mount" tl_wait_for 10 dead
tl_check "the unit's command line mounts again on its own" unit_start
tl_is "and serves" "before
unit" "$(cat "$MNT/r/0/current" 2>&1)"
tl_is "logging one line about it" 1 "$(grep -c 'unmounted the dead FUSE mount' "$ERR")"
# The unit's KillSignal.
st=0
tl_kill TERM || st=$?
tl_is "SIGTERM stops it with status 0" 0 "$st"
tl_check "and unmounts" sh -c "! awk -v m='$MNT' '\$2 == m' /proc/self/mounts | grep -q ."
tl_stderr_clean "the daemon printed nothing else" 'unmounted the dead FUSE mount'
tl_done
