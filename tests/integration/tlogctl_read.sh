#!/bin/sh
# tlogctl_read.sh - `tlogctl read`: from the start, --from in the middle
# of a segment and across rolls, from an offset that is gone (a warning,
# then start_offset), --since (ms, ISO 8601, relative); --follow while a
# writer rolls segments every KiB and the reaper deletes them behind the
# reader, across an emptied partition, and after the reader fell so far
# behind that its next segment went (one warning, then start_offset);
# the seek attributes themselves; usage errors (a start given twice, a
# --since time that does not exist) exit 2 with one line on stderr, a
# missing partition 1; --cursor and --commit usage errors.
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
tl_mount

# ---- usage ----
# usage_err NAME ARGS...: `tlogctl read ARGS` exits 2 with one line on
# stderr, what is wrong and the usage of read, and nothing on stdout.
RUSAGE='tlogctl read [--from OFFSET | --since TIME | --cursor NAME [--commit]] [--follow] [--skip-lost] PART'
usage_err() {
	local name=$1
	shift
	"$TLOGCTL" read "$@" >"$TMP/u.out" 2>"$TMP/u.err"
	tl_is "$name: exit 2" 2 $?
	tl_is "$name: one line on stderr, with the usage of read" "1 1" \
	    "$(wc -l <"$TMP/u.err") $(grep -cF "; usage: $RUSAGE" "$TMP/u.err")"
	tl_is "$name: nothing on stdout" "" "$(cat "$TMP/u.out")"
}
usage_err "read without PART"
usage_err "read with two PARTs" "$MNT/x/0" "$MNT/x/1"
usage_err "--from with --since" --from 1 --since 1 "$MNT/x/0"
usage_err "a bad offset" --from -1 "$MNT/x/0"
usage_err "a bad time" --since yesterday "$MNT/x/0"
usage_err "--cursor with --from" --cursor a --from 1 "$MNT/x/0"
usage_err "--commit without --cursor" --commit "$MNT/x/0"
usage_err "a bad cursor name" --cursor 'a/b' "$MNT/x/0"
usage_err "a cursor name of 65 bytes" --cursor "$(printf '%065d' 0)" "$MNT/x/0"
usage_err "an unknown option" --frob "$MNT/x/0"
usage_err "--from without its argument" --from
usage_err "read --help with an argument" --help "$MNT/x/0"
# A start given twice: the second was taken, the first ignored.
usage_err "--from twice" --from 1 --from 2 "$MNT/x/0"
usage_err "--from=N twice" --from=1 --from=2 "$MNT/x/0"
usage_err "--since twice" --since -1h --since -2h "$MNT/x/0"
usage_err "--cursor twice" --cursor a --cursor b "$MNT/x/0"
usage_err "--since, then --cursor" --since -1h --cursor a "$MNT/x/0"
out=$("$TLOGCTL" read --help 2>"$TMP/u.err")
tl_is "read --help: exit 0" 0 $?
tl_check "read --help: the usage on stdout" sh -c "echo '$out' | grep -q 'cursor NAME'"
tl_is "read --help: nothing on stderr" "" "$(cat "$TMP/u.err")"
"$TLOGCTL" read "$MNT/nope/0" 2>"$TMP/e.err"
tl_is "a missing partition: exit 1" 1 $?
tl_is "a missing partition: one line on stderr" 1 "$(wc -l <"$TMP/e.err")"
"$TLOGCTL" read "$TMP" 2>/dev/null
tl_is "a directory that is no partition: exit 1" 1 $?

# ---- from an offset, across rolls ----
D=$MNT/r/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1K "$D"	# 146 lines a segment
nums 0 999 >>"$D/current"
tl_check "the lines rolled into several segments" \
    test "$(gx user.tlog.segments "$D")" -ge 6
"$TLOGCTL" read "$D" >"$TMP/got" 2>"$TMP/err"
nums 0 999 >"$TMP/want"
tl_check "read prints the whole partition" cmp -s "$TMP/want" "$TMP/got"
"$TLOGCTL" read --from 500 "$D" >"$TMP/got" 2>>"$TMP/err"
nums 500 999 >"$TMP/want"
tl_check "--from 500 (mid-segment) prints 500..999 across rolls" \
    cmp -s "$TMP/want" "$TMP/got"
"$TLOGCTL" read --from 146 "$D" >"$TMP/got" 2>>"$TMP/err"
nums 146 999 >"$TMP/want"
tl_check "--from a segment's base" cmp -s "$TMP/want" "$TMP/got"
tl_is "--from the end prints nothing" "" "$("$TLOGCTL" read --from 1000 "$D")"
"$TLOGCTL" read --from 1001 "$D" >/dev/null 2>"$TMP/e.err"
tl_is "--from beyond the end: exit 1" 1 $?
tl_is "no warning so far" "" "$(cat "$TMP/err")"

# The attributes behind it: the record's segment and byte position.
tl_is "user.tlog.at.500" "438 434" "$(gx user.tlog.at.500 "$D")"
tl_is "user.tlog.at.0" "0 0" "$(gx user.tlog.at.0 "$D")"
getfattr -n user.tlog.at.1001 "$D" >/dev/null 2>"$TMP/e.err"
tl_check "user.tlog.at beyond the end: no such attribute" \
    grep -q 'No such attribute' "$TMP/e.err"

# ---- an offset that is gone ----
rm "$D/00000000000000000000.log" "$D/00000000000000000146.log"
"$TLOGCTL" read --from 100 "$D" >"$TMP/got" 2>"$TMP/err"
tl_is "from a deleted offset: exit 0" 0 $?
nums 292 999 >"$TMP/want"
tl_check "it resumes at start_offset" cmp -s "$TMP/want" "$TMP/got"
tl_is "with one warning" 1 "$(wc -l <"$TMP/err")"
tl_check "the warning names what was skipped" grep -q 'records 100-291' "$TMP/err"
tl_is "user.tlog.at.100 names the first live record" "292 0" \
    "$(gx user.tlog.at.100 "$D")"
"$TLOGCTL" read "$D" >"$TMP/got" 2>"$TMP/err"
tl_check "no --from: start_offset, without a warning" \
    sh -c "cmp -s '$TMP/want' '$TMP/got' && test ! -s '$TMP/err'"

# ---- --since ----
D=$MNT/s/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 16K "$D"
nums 0 19999 >>"$D/current"
# t is a millisecond after the last of those records' stamps (the
# last write may share the millisecond it ended in), and every later
# record is stamped after t.
t=$(now_ms)
t_after() { [ "$(now_ms)" -gt "$t" ]; }
tl_wait_for 5 t_after
t=$(now_ms)
tl_wait_for 5 t_after
nums 20000 29999 >>"$D/current"
"$TLOGCTL" read --since "$t" "$D" >"$TMP/got"
tl_is "--since MS: exit 0" 0 $?
# FILE holds a run of lines up to the last one written, from 20000 or
# earlier: the first is printed.
run_to_end() {
	f=$(head -1 "$1")
	case $f in [0-9][0-9][0-9][0-9][0-9][0-9]) ;; *) return 1 ;; esac
	nums "$f" 29999 | cmp -s - "$1" && [ $((1$f - 1000000)) -le 20000 ] &&
	    echo $((1$f - 1000000))
}
first=$(run_to_end "$TMP/got")
tl_check "--since MS prints every record after MS, up to the end" test -n "$first"
# The index has an entry every 4 KiB: at most that much earlier.
tl_check "and starts at most one index interval (4 KiB) early" \
    test "$((20000 - ${first:-0}))" -le 586
tl_diag "--since started at $first (the first record after MS is 20000)"
o=$(gx user.tlog.since.$t "$D")
tl_is "user.tlog.since.MS names that record" "$first" "${o%% *}"
iso=$(date -u -d "@$((t / 1000))" +%Y-%m-%dT%H:%M:%SZ)
"$TLOGCTL" read --since "$iso" "$D" >"$TMP/got"
run_to_end "$TMP/got" >/dev/null
tl_is "--since ISO 8601 (to the second)" 0 $?
tl_is "--since -1h prints everything" 30000 "$("$TLOGCTL" read --since -1h "$D" | wc -l)"
tl_is "--since @SECONDS" 30000 "$("$TLOGCTL" read --since @$((t / 1000 - 3600)) "$D" | wc -l)"
tl_is "--since after the newest record prints nothing" "" \
    "$("$TLOGCTL" read --since $(($(now_ms) + 60000)) "$D")"
# Times that are none: usage errors. Times at the edges: read.
for bad in 2026-02-30 2026-02-29 2023-02-29 2024-13-01 2024-00-10 \
    2024-04-31 2024-01-01T24:00 2024-01-01T23:60 2024-01-01T23:59:60Z \
    2024-01-01T00:00+25:00 2024-01-01T00:00+14:01 2024-01-01T00:00-14:30 \
    2024-01-01T00:00+01:60 2024-01-01T00:00+01: 2024-01-01T00:00+01:0030 \
    @1e9 @0x10 @1.5e3 @ @. @1. "@ 1" "@+1" @-1 @inf "- 15m" "-+15m" \
    99999999999999999999; do
	usage_err "--since $bad" --since "$bad" "$D"
done
for good in 2024-02-29 2024-12-31T23:59:59Z 2024-01-01T00:00+14:00 \
    2024-01-01T00:00-14:00 2024-01-01T00:00:00.5+0530 1970-01-01T00:00Z \
    @1732871640.5 @0 -0s; do
	"$TLOGCTL" read --since "$good" "$D" >/dev/null 2>"$TMP/u.err"
	tl_is "--since $good: read" "0 " "$? $(cat "$TMP/u.err")"
done

# ---- --follow across size rolls while the reaper deletes ----
D=$MNT/f/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1K "$D"
setfattr -n user.retention.ms -v 1s "$D"
"$TLOGCTL" read --follow "$D" >"$TMP/fgot" 2>"$TMP/ferr" &
RPID=$!
# The reader is in place once it has `current` open.
reading() { ls -l /proc/$RPID/fd 2>/dev/null | grep -q "$D/current"; }
tl_check "the follower opens current" tl_wait_for 10 reading
: >"$TMP/fwant"
"$LINEWRITER" "$TMP/fwant" 5 1500
tl_check "a writer appends 1500 lines over about 3 s" \
    "$LINEWRITER" -d 2000 "$D/current" 5 1500
flines() { [ "$(wc -l <"$TMP/fgot")" -ge "$1" ]; }
tl_wait_for 20 flines 1500
tl_check "the follower printed every line once, in order" \
    cmp -s "$TMP/fwant" "$TMP/fgot"
deleted=$(awk '$1 == "tlogfs_deletions_total{rule=\"time\"}" { print $2 }' "$MNT/.tlogfs/metrics")
tl_diag "segments now: $(gx user.tlog.segments "$D"), deleted by the time rule: $deleted"
tl_check "the reaper deleted segments behind the reader" test "$deleted" -ge 20

# The reaper empties the idle partition: no active segment, then a new one.
empty() { [ "$(gx user.tlog.segments "$D")" = 0 ]; }
tl_check "the partition empties" tl_wait_for 20 empty
"$LINEWRITER" "$TMP/fwant" 6 300
"$LINEWRITER" "$D/current" 6 300
tl_wait_for 20 flines 1800
tl_check "the follower goes on in a partition that was emptied" \
    cmp -s "$TMP/fwant" "$TMP/fgot"
tl_is "no warning" "" "$(cat "$TMP/ferr")"

# ---- a follower that fell behind the reaper ----
kill -STOP $RPID
e0=$(gx user.tlog.end_offset "$D")
"$LINEWRITER" "$D/current" 7 600
gone() { [ "$(gx user.tlog.start_offset "$D")" -gt $((e0 + 300)) ]; }
tl_check "while it is stopped, the reaper deletes what it has not read" \
    tl_wait_for 20 gone
kill -CONT $RPID
warned() { [ -s "$TMP/ferr" ]; }
tl_check "resumed, it warns" tl_wait_for 20 warned
"$LINEWRITER" "$D/current" 8 200
last() { tail -1 "$TMP/fgot" | grep -q '^w8 199 '; }
tl_check "and follows on to the newest line" tl_wait_for 20 last
kill $RPID
wait $RPID 2>/dev/null
# One warning per fall: on a loaded machine the reaper may overtake it
# once more before it catches up, so every line must be that warning.
tl_check "only warnings, each naming the records skipped" \
    awk '!/expired or were deleted/ { bad = 1 } END { exit bad || NR == 0 }' \
    "$TMP/ferr"
# Writers 5, 6, 7, 8 in that order, each strictly increasing, no line
# twice, all of 8.
tl_is "nothing twice, nothing out of order, every line of the last writer" \
    "ok 200" "$(awk '{ k = substr($1, 2) * 1000000 + $2 }
	k <= p { bad = 1 } { p = k } $1 == "w8" { n8++ }
	END { print (bad ? "bad" : "ok"), n8 }' "$TMP/fgot")"

# ---- followed through a rename, until removed ----
# The reader holds the partition's directory: after a rename it reads on
# (and commits there); when the partition is removed it says so.
mkdir -p "$MNT/mv/0"
nums 1 5 >>"$MNT/mv/0/current"
"$TLOGCTL" read --follow --cursor c --commit "$MNT/mv/0" \
    >"$TMP/mvout" 2>"$TMP/mverr" &
RPID=$!
lines_in() { [ "$(wc -l <"$TMP/mvout")" -ge "$1" ]; }
tl_check "following: the first 5 lines" tl_wait_for 10 lines_in 5
mv "$MNT/mv/0" "$MNT/mv/1"
nums 6 10 >>"$MNT/mv/1/current"
tl_check "renamed: it reads on" tl_wait_for 10 lines_in 10
committed() { [ "$(gx user.cursor.c "$MNT/mv/1" 2>/dev/null)" = 10 ]; }
tl_check "and commits on the renamed partition" tl_wait_for 10 committed
rm -r "$MNT/mv/1"
gone() { ! kill -0 "$RPID" 2>/dev/null; }
tl_check "removed: the reader stops" tl_wait_for 10 gone
wait "$RPID"
tl_is "with status 1" 1 "$?"
tl_is "and one line saying so" "tlogctl: $MNT/mv/0: the partition was removed" \
    "$(cat "$TMP/mverr")"

# ---- --follow: a record without newline, then more before the check ----
# A short read that ends at a record without newline is whole even when
# more arrives before tlogctl looks at the size (the hook appends then).
mkdir -p "$MNT/nl/0"
printf 'first' >>"$MNT/nl/0/current"
TLOGCTL_TEST_SHORT_READ_CMD="printf 'second\\n' >>'$MNT/nl/0/current'" \
    "$TL_BUILD/tests/hooks/tlogctl" read --follow "$MNT/nl/0" \
    >"$TMP/nl.out" 2>"$TMP/nl.err" &
NPID=$!
both() { [ "$(cat "$TMP/nl.out")" = firstsecond ]; }
tl_check "follow: a record without newline then more: both printed" \
    tl_wait_for 10 both
tl_check "and the reader still follows" kill -0 "$NPID"
kill "$NPID" 2>/dev/null
wait "$NPID" 2>/dev/null
tl_is "and said nothing" "" "$(cat "$TMP/nl.err")"

# ---- --commit over many records without newline ----
# Every third record without newline (each printf a writer's last line):
# far more than newlines count; the cursor still names the end exactly.
mkdir -p "$MNT/nn/0"
i=0
while [ $i -lt 300 ]; do
	if [ $((i % 3)) = 0 ]; then printf 'r%d' $i; else printf 'r%d\n' $i; fi \
	    >>"$MNT/nn/0/current"
	i=$((i + 1))
done
tl_is "300 records, 100 without newline" 300 \
    "$(gx user.tlog.end_offset "$MNT/nn/0")"
"$TLOGCTL" read --cursor nn --commit "$MNT/nn/0" >"$TMP/nn.out"
tl_is "--commit: the cursor at the end, not at the newlines' count" 300 \
    "$(gx user.cursor.nn "$MNT/nn/0")"
tl_is "and nothing is printed again" "" \
    "$("$TLOGCTL" read --cursor nn --commit "$MNT/nn/0")"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing but the reaper's lines" \
    '^tlogfs: reaper: [0-9]+ segments .* expired from'
tl_done
