#!/bin/sh
# tlogctl_lag.sh - `tlogctl lag MOUNT` without cursors: the header alone,
# on an empty mount and on one with topics and partitions; usage errors
# exit 2 with one line on stderr (what is wrong; the usage of lag), a
# directory that is no mount's root 1 with one line; --help on stdout,
# exit 0. (The table with cursors is in tlogctl_cursor.sh.)
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
HEADER='TOPIC  PARTITION  CURSOR  OFFSET  START  END  LAG'

tl_mount

# usage_err NAME ARGS...: exit 2, nothing on stdout, one line on stderr
# naming the usage of lag.
usage_err() {
	local name=$1
	shift
	"$TLOGCTL" "$@" >"$TMP/u.out" 2>"$TMP/u.err"
	tl_is "$name: exit 2" 2 $?
	tl_is "$name: one line on stderr, with the usage of lag" \
	    "1 1" "$(wc -l <"$TMP/u.err") $(grep -c '^tlogctl: .*; usage: tlogctl lag MOUNT$' "$TMP/u.err")"
	tl_is "$name: nothing on stdout" "" "$(cat "$TMP/u.out")"
}
usage_err "lag without MOUNT" lag
usage_err "lag with two arguments" lag "$MNT" "$MNT"
usage_err "lag with an unknown option" lag --frob "$MNT"
usage_err "lag --help with an argument" lag --help "$MNT"
out=$("$TLOGCTL" lag --help 2>"$TMP/u.err")
tl_is "lag --help: exit 0" 0 $?
tl_check "lag --help: the usage on stdout" sh -c "echo '$out' | grep -q '^ *tlogctl lag MOUNT'"
tl_is "lag --help: nothing on stderr" "" "$(cat "$TMP/u.err")"

"$TLOGCTL" lag "$TMP" >/dev/null 2>"$TMP/e.err"
tl_is "a directory that is no mount: exit 1" 1 $?
tl_is "a directory that is no mount: one line on stderr" 1 "$(wc -l <"$TMP/e.err")"
"$TLOGCTL" lag "$TMP/nope" >/dev/null 2>"$TMP/e.err"
tl_is "a missing directory: exit 1" 1 $?
tl_is "a missing directory: one line on stderr" 1 "$(wc -l <"$TMP/e.err")"
mkdir -p "$MNT/t/0"
"$TLOGCTL" lag "$MNT/t" >/dev/null 2>"$TMP/e.err"
tl_is "a topic instead of the mount: exit 1" 1 $?

tl_is "no cursors: the header alone" "$HEADER" "$("$TLOGCTL" lag "$MNT")"
rmdir "$MNT/t/0" "$MNT/t"
tl_is "an empty mount: the header alone" "$HEADER" "$("$TLOGCTL" lag "$MNT")"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
