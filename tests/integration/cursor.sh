#!/bin/sh
# cursor.sh - consumers' cursors through extended attributes
# (doc/tlogfs.8, EXTENDED ATTRIBUTES): commit, read back, list, lag, drop, the EINVAL
# table, where cursors are refused, durability across kill -9, rename
# and rmdir of the partition.
. "${srcdir:-.}/tests/integration/lib.sh"

p() { "$PROBE" "$@"; }

tl_mount
mkdir -p "$MNT/t/0"
P=$MNT/t/0
nums 1 10 >>"$P/current"

# ---- commit, read back, list, lag, drop ----
tl_is "commit a cursor" OK "$(p setxattr "$P" user.cursor.c1 4)"
tl_is "read it back" 4 "$(gx user.cursor.c1 "$P")"
tl_is "its lag: end - cursor" 6 "$(gx user.tlog.lag.c1 "$P")"
tl_is "setfattr commits too" 10 \
    "$(setfattr -n user.cursor.c2 -v 10 "$P" && gx user.cursor.c2 "$P")"
tl_is "a cursor at the end has no lag" 0 "$(gx user.tlog.lag.c2 "$P")"
tl_is "commit with echo's newline" OK "$(p setxattr "$P" user.cursor.c2 "7
")"
tl_is "moves it" 7 "$(gx user.cursor.c2 "$P")"
tl_is "offset 0 is accepted" OK "$(p setxattr "$P" user.cursor.A-z_0.9 0)"
tl_is "the partition lists its cursors and their lags" \
    "user.cursor.A-z_0.9 user.cursor.c1 user.cursor.c2 user.tlog.lag.A-z_0.9 user.tlog.lag.c1 user.tlog.lag.c2" \
    "$(p listxattr "$P" | tr ' ' '\n' | grep -E 'cursor|lag' | sort | tr '\n' ' ' | sed 's/ $//')"
tl_is "drop a cursor" OK "$(p removexattr "$P" user.cursor.A-z_0.9)"
tl_is "a dropped cursor: ENODATA" ENODATA "$(p getxattr "$P" user.cursor.A-z_0.9)"
tl_is "its lag: ENODATA" ENODATA "$(p getxattr "$P" user.tlog.lag.A-z_0.9)"
tl_is "drop one that is not there: ENODATA" ENODATA \
    "$(p removexattr "$P" user.cursor.nope)"
tl_is "a missing cursor: ENODATA" ENODATA "$(p getxattr "$P" user.cursor.nope)"
tl_is "XATTR_CREATE on an existing cursor: EEXIST" EEXIST \
    "$(p setxattr "$P" user.cursor.c1 5 create)"
tl_is "XATTR_REPLACE on a missing one: ENODATA" ENODATA \
    "$(p setxattr "$P" user.cursor.new 5 replace)"
tl_is "lag is read-only: EPERM" EPERM "$(p setxattr "$P" user.tlog.lag.c1 1)"
tl_is "the cursors' file is not listed" "current" "$(ls -A "$P")"

# ---- EINVAL: names and values, one log line each ----
: >"$ERR"
n64=$(printf 'n%.0s' $(seq 1 64))
tl_is "a 64-byte name is accepted" OK "$(p setxattr "$P" "user.cursor.$n64" 1)"
for bad in "${n64}x" "a/b" "a b" "a:b" "é"; do
	tl_is "name '$bad': EINVAL" EINVAL "$(p setxattr "$P" "user.cursor.$bad" 1)"
done
tl_is "empty name: EINVAL" EINVAL "$(p setxattr "$P" user.cursor. 1)"
for bad in 11 -1 +1 " 1" "1 " 1.0 0x1 abc "" 18446744073709551616 \
    99999999999999999999999; do
	tl_is "value '$bad': EINVAL" EINVAL "$(p setxattr "$P" user.cursor.c1 "$bad")"
done
tl_is "a refused commit changes nothing" 4 "$(gx user.cursor.c1 "$P")"
tl_is "one log line per refusal (6 names, 11 values)" 17 \
    "$(grep -c 'cursor' "$ERR")"
tl_is "the line names the cursor, the value and the range" 1 \
    "$(grep -c 'cursor c1: value "abc" refused: a decimal offset 0\.\.10' "$ERR")"
p removexattr "$P" "user.cursor.$n64" >/dev/null

# ---- only partitions have cursors ----
tl_is "set on a topic: EPERM" EPERM "$(p setxattr "$MNT/t" user.cursor.x 0)"
tl_is "set on the root: EPERM" EPERM "$(p setxattr "$MNT" user.cursor.x 0)"
tl_is "set on a file: EPERM" EPERM "$(p setxattr "$P/current" user.cursor.x 0)"
tl_is "get on a topic: ENODATA" ENODATA "$(p getxattr "$MNT/t" user.cursor.c1)"
tl_is "remove on a topic: EPERM" EPERM "$(p removexattr "$MNT/t" user.cursor.c1)"
tl_is "a topic lists no cursor" "OK" "$(p listxattr "$MNT/t")"

# ---- durable: kill -9, then a remount ----
p setxattr "$P" user.cursor.c1 9 >/dev/null
tl_kill 9 2>/dev/null
tl_cleanup_mount
tl_mount
tl_is "a commit survives kill -9" 9 "$(gx user.cursor.c1 "$P")"
tl_is "and the other one" 7 "$(gx user.cursor.c2 "$P")"

# ---- rename moves them, rmdir takes them ----
mv "$P" "$MNT/t/moved"
tl_is "a renamed partition keeps its cursors" 9 \
    "$(gx user.cursor.c1 "$MNT/t/moved")"
tl_check "unmount" tl_umount
tl_mount
tl_is "... across a remount too" 7 "$(gx user.cursor.c2 "$MNT/t/moved")"
rm "$MNT/t/moved/current"
only_current() { [ "$(ls "$MNT/t/moved")" = current ]; }
tl_wait_for 10 only_current
tl_check "rmdir of a partition with cursors" rmdir "$MNT/t/moved"
tl_is "its cursors went with it" "" "$(ls -A "$STORE/t")"
mkdir "$MNT/t/moved"
tl_is "a new partition of that name has none" ENODATA \
    "$(p getxattr "$MNT/t/moved" user.cursor.c1)"

# ---- the consumed rule, end to end ----
C=$MNT/t/c
N=$MNT/t/nocursor
mkdir "$C" "$N"
setfattr -n user.retention.consumed.ms -v 1s "$MNT/t"
nums 1 5 >>"$C/current"
nums 1 5 >>"$N/current"
setfattr -n user.seal -v 1 "$C"
nums 6 8 >>"$C/current"
tl_is "retention.consumed.ms is inherited" 1000 \
    "$(gx user.retention.consumed.ms "$C")"
setfattr -n user.cursor.reader -v 5 "$C"
consumed_events() { cat "$MNT/.tlogfs/events"/* | grep -c '"rule":"consumed"'; }
has_events() { [ "$(consumed_events)" = "$1" ]; }
tl_check "the consumed segment goes" tl_wait_for 20 \
    sh -c "[ \"\$(getfattr --only-values -n user.tlog.start_offset '$C' 2>/dev/null)\" = 5 ]"
tl_check "its deletion is audited with rule consumed" tl_wait_for 10 \
    has_events 1
tl_is "the straddled rest stays" 3 "$(gx user.tlog.lag.reader "$C")"
tl_is "no cursor: the rule deletes nothing" 5 "$(wc -l <"$N/current")"
setfattr -n user.cursor.reader -v 8 "$C"
tl_check "a commit to the end empties the partition" tl_wait_for 20 \
    sh -c "[ \"\$(getfattr --only-values -n user.tlog.segments '$C' 2>/dev/null)\" = 0 ]"
tl_check "two consumed deletions audited" tl_wait_for 10 has_events 2
tl_is "the metric counts them" 'tlogfs_deletions_total{rule="consumed"} 2' \
    "$(grep 'rule="consumed"' "$MNT/.tlogfs/metrics")"
tl_is "the cursor's lag is 0" 0 "$(gx user.tlog.lag.reader "$C")"
tl_is "the lag metric" 'tlogfs_cursor_lag_records{topic="t",partition="c",cursor="reader"} 0' \
    "$(grep 'partition="c"' "$MNT/.tlogfs/metrics")"
tl_is "the partition without a cursor kept its data" 5 "$(wc -l <"$N/current")"

# ---- read-only mount ----
p setxattr "$MNT/t/moved" user.cursor.r 0 >/dev/null
tl_check "unmount" tl_umount
tl_mount -o ro
tl_is "read-only: the cursor reads" 0 "$(gx user.cursor.r "$MNT/t/moved")"
tl_is "read-only: commit is EROFS" EROFS \
    "$(p setxattr "$MNT/t/moved" user.cursor.r 0)"
tl_is "read-only: drop is EROFS" EROFS \
    "$(p removexattr "$MNT/t/moved" user.cursor.r)"
tl_check "read-only: unmount" tl_umount
tl_stderr_clean "the daemons printed nothing unexpected" \
    '^tlogfs: (t/[a-z0-9]+: cursor .* refused: |reaper: [0-9]+ consumed segments )'

tl_done
