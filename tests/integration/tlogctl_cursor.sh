#!/bin/sh
# tlogctl_cursor.sh - `tlogctl read --cursor NAME [--commit]` and
# `tlogctl lag` against the mount's cursors (user.cursor.NAME): a missing
# cursor reads from the start and --commit creates it; a committed cursor
# resumes exactly after the last record printed, also past records
# without newline; a reader stopped after its first batch committed no
# more than it wrote; a cursor below start_offset resumes at start with a
# warning; a follower with --commit across rolls while the reaper deletes
# behind it, stopped and restarted: every line once, in order; the lag
# table, sorted, with its numbers.
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
tl_mount

D=$MNT/c/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1K "$D"	# 146 lines a segment
nums 0 999 >>"$D/current"

# ---- a missing cursor ----
"$TLOGCTL" read --cursor a "$D" >"$TMP/got" 2>"$TMP/err"
tl_is "a missing cursor: exit 0" 0 $?
nums 0 999 >"$TMP/want"
tl_check "a missing cursor reads from the start" cmp -s "$TMP/want" "$TMP/got"
tl_is "without a warning" "" "$(cat "$TMP/err")"
tl_is "without --commit no cursor is made" "" "$(gx user.cursor.a "$D" 2>/dev/null)"

# ---- --commit ----
"$TLOGCTL" read --cursor a --commit "$D" >"$TMP/got" 2>"$TMP/err"
tl_is "--commit: exit 0" 0 $?
tl_check "--commit prints the same" cmp -s "$TMP/want" "$TMP/got"
tl_is "--commit sets the cursor to the end" 1000 "$(gx user.cursor.a "$D")"
tl_is "read again: nothing" "" "$("$TLOGCTL" read --cursor a --commit "$D")"
tl_is "the cursor stays" 1000 "$(gx user.cursor.a "$D")"
nums 1000 1499 >>"$D/current"
"$TLOGCTL" read --cursor a --commit "$D" >"$TMP/got"
nums 1000 1499 >"$TMP/want"
tl_check "read again: what came since" cmp -s "$TMP/want" "$TMP/got"
tl_is "the cursor moves on" 1500 "$(gx user.cursor.a "$D")"

# ---- a cursor set by hand; read without --commit leaves it ----
setfattr -n user.cursor.b -v 700 "$D"
"$TLOGCTL" read --cursor b "$D" >"$TMP/got"
nums 700 1499 >"$TMP/want"
tl_check "--cursor starts at the cursor" cmp -s "$TMP/want" "$TMP/got"
tl_is "without --commit the cursor stays" 700 "$(gx user.cursor.b "$D")"

# ---- a reader that stops early committed no more than it wrote ----
"$TLOGCTL" read --cursor c --commit "$D" | head -1 >/dev/null
c=$(gx user.cursor.c "$D")
tl_check "stopped after its first line: the cursor is within the partition" \
    test "${c:-0}" -ge 1 -a "${c:-0}" -le 1500
first=$("$TLOGCTL" read --cursor c "$D" | head -1)
# All 1500 lines (10 KB) fit in the pipe: tlogctl may have written them
# all before head exited, and then rightly committed the end.
want=
[ "${c:-0}" -lt 1500 ] && want=$(nums "$c" "$c")
tl_is "and names a record boundary: the next read starts at record $c" \
    "$want" "$first"

# ---- records without newline ----
printf 'no newline' >>"$D/current"	# the close stores it as a record
nums 1500 1599 >>"$D/current"
printf 'again no newline' >>"$D/current"
end=$(gx user.tlog.end_offset "$D")
tl_is "two records without newline in the partition" 1602 "$end"
"$TLOGCTL" read --cursor a --commit "$D" >"$TMP/got"
tl_is "past records without newline, the cursor is exact" "$end" \
    "$(gx user.cursor.a "$D")"
tl_is "nothing twice on the next read" "" "$("$TLOGCTL" read --cursor a "$D")"

# ---- a cursor below start_offset ----
setfattr -n user.cursor.d -v 100 "$D"
rm "$D/00000000000000000000.log" "$D/00000000000000000146.log"
"$TLOGCTL" read --cursor d --commit "$D" >"$TMP/got" 2>"$TMP/err"
tl_is "a cursor below start_offset: exit 0" 0 $?
tl_is "it resumes at start_offset" "$(nums 292 292)" "$(head -1 "$TMP/got")"
tl_is "with one warning" 1 "$(wc -l <"$TMP/err")"
tl_check "naming what was skipped" grep -q 'records 100-291' "$TMP/err"
tl_is "and commits the end" "$end" "$(gx user.cursor.d "$D")"

# ---- a committing follower across rolls and the reaper, restarted ----
D=$MNT/f/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1K "$D"
setfattr -n user.retention.ms -v 1s "$D"
"$TLOGCTL" read --cursor f --commit --follow "$D" >"$TMP/f1" 2>"$TMP/ferr" &
RPID=$!
reading() { ls -l /proc/$RPID/fd 2>/dev/null | grep -q "$D/current"; }
tl_check "the follower opens current" tl_wait_for 10 reading
: >"$TMP/fwant"
"$LINEWRITER" "$TMP/fwant" 5 600
"$LINEWRITER" -d 3000 "$D/current" 5 600
committed() { [ "$(gx user.cursor.f "$D" 2>/dev/null)" = "$1" ]; }
tl_check "the follower commits each batch, up to the end" \
    tl_wait_for 20 committed 600
deleted() {
	[ "$(awk '$1 == "tlogfs_deletions_total{rule=\"time\"}" { print $2 }' \
	    "$MNT/.tlogfs/metrics")" -ge "$1" ]
}
tl_check "the reaper deletes segments behind it" tl_wait_for 20 deleted 20
# No expiry while it is down: the restart must find its next record.
setfattr -x user.retention.ms "$D"
kill $RPID
wait $RPID 2>/dev/null
# While no one reads: more lines.
"$LINEWRITER" "$TMP/fwant" 6 300
"$LINEWRITER" "$D/current" 6 300
"$TLOGCTL" read --cursor f --commit --follow "$D" >"$TMP/f2" 2>>"$TMP/ferr" &
RPID=$!
flines() { [ "$(cat "$TMP/f1" "$TMP/f2" | wc -l)" -ge 900 ]; }
tl_check "restarted, it goes on" tl_wait_for 20 flines
tl_check "the two runs printed every line once, in order" \
    sh -c "cat '$TMP/f1' '$TMP/f2' | cmp -s '$TMP/fwant' -"
tl_check "and committed the end" tl_wait_for 20 committed 900
kill $RPID
wait $RPID 2>/dev/null
tl_is "no warning" "" "$(cat "$TMP/ferr")"

# ---- the lag table ----
mkdir -p "$MNT/b/2" "$MNT/b/10" "$MNT/a/0"
nums 0 9 >>"$MNT/b/2/current"
nums 0 19 >>"$MNT/b/10/current"
nums 0 4 >>"$MNT/a/0/current"
setfattr -n user.cursor.z -v 5 "$MNT/b/2"
setfattr -n user.cursor.y -v 3 "$MNT/b/2"
setfattr -n user.cursor.x -v 20 "$MNT/b/10"
setfattr -n user.cursor.w -v 0 "$MNT/a/0"
"$TLOGCTL" lag "$MNT" >"$TMP/lag" 2>"$TMP/err"
tl_is "lag: exit 0" 0 $?
tl_is "nothing on stderr" "" "$(cat "$TMP/err")"
# c/0: a=1602 b=700 c d=1602, start 292; f/0: f=900.
s=$(gx user.tlog.start_offset "$MNT/f/0")
fe=$(gx user.tlog.end_offset "$MNT/f/0")
fl=$((fe - (900 > s ? 900 : s)))
cat >"$TMP/lagwant" <<EOT
TOPIC PARTITION CURSOR OFFSET START END LAG
a 0 w 0 0 5 5
b 2 y 3 0 10 7
b 2 z 5 0 10 5
b 10 x 20 0 20 0
c 0 a 1602 292 1602 0
c 0 b 700 292 1602 902
c 0 c $c 292 1602 $((1602 - (c > 292 ? c : 292)))
c 0 d 1602 292 1602 0
f 0 f 900 $s $fe $fl
EOT
tl_check "the table: every cursor, sorted (partition 2 before 10), with its lag" \
    sh -c "awk '{ \$1 = \$1; print }' '$TMP/lag' | cmp -s '$TMP/lagwant' -"
tl_check "columns line up" \
    awk 'NR == 1 { n = length($0) } length($0) != n { exit 1 }' "$TMP/lag"
tl_diag "$(cat "$TMP/lag")"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing but the reaper's lines" \
    '^tlogfs: reaper: [0-9]+ segments .* expired from'
tl_done
