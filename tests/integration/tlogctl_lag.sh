#!/bin/sh
# tlogctl_lag.sh - `tlogctl lag MOUNT` without cursors: the header alone,
# on an empty mount and on one with topics and partitions; usage errors
# exit 2 with the usage on stderr, a directory that is no mount's root 1
# with one line; --help on stdout, exit 0. (The table with cursors is in
# tlogctl_cursor.sh.)
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
HEADER='TOPIC  PARTITION  CURSOR  OFFSET  START  END  LAG'

tl_mount

"$TLOGCTL" lag 2>"$TMP/u.err"
tl_is "lag without MOUNT: exit 2" 2 $?
tl_check "lag without MOUNT: the usage on stderr" grep -q '^usage:' "$TMP/u.err"
"$TLOGCTL" lag "$MNT" "$MNT" 2>/dev/null
tl_is "lag with two arguments: exit 2" 2 $?
"$TLOGCTL" lag --frob "$MNT" 2>/dev/null
tl_is "lag with an unknown option: exit 2" 2 $?
out=$("$TLOGCTL" lag --help 2>/dev/null)
tl_is "lag --help: exit 0" 0 $?
tl_check "lag --help: the usage on stdout" sh -c "echo '$out' | grep -q '^ *tlogctl lag MOUNT'"

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
