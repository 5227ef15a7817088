#!/bin/sh
# retention.sh - the reaper through the mount, with short windows
# (segment.ms=1s, retention.ms=3s): lines leave on time and never sooner;
# an idle partition empties on schedule; the size ceiling holds under
# full-speed writes; a reader keeps a deleted segment; .tlogfs/events
# records each deletion once; .tlogfs/metrics parses as Prometheus text.
. "${srcdir:-.}/tests/integration/lib.sh"

AGECHECK=$TL_BUILD/tests/integration/helpers/agecheck
# The visible size: current first, then sealed segments newest first.
# current only grows and sealed segments only go, so a sample taken in
# this order never counts more than the partition held when it began.
sizes() {
	(cd "$1" && ls -r | xargs stat -c %s 2>/dev/null) |
	    awk '{ s += $1 } END { print s + 0 }'
}
# The daemon reports each reaper wake-up that deleted something.
REAPER_LINE='^tlogfs: reaper: [0-9]+ segments \([0-9]+ bytes\) expired from [0-9]+ due partitions in [0-9.]+ ms$'

tl_mount
mkdir -p "$MNT/ret/age" "$MNT/ret/idle" "$MNT/ret/cap" "$MNT/ret/read"
setfattr -n user.segment.ms -v 1s "$MNT/ret"
setfattr -n user.retention.ms -v 3s "$MNT/ret"

# 1. 20 s of a line every 100 ms, the whole partition sampled every 0.5 s.
out=$("$AGECHECK" "$MNT/ret/age" 20 3000 1000 2>"$TMP/age.err")
st=$?
tl_diag "$out"
[ -s "$TMP/age.err" ] && sed 's/^/# /' "$TMP/age.err" | head -20
tl_is "no line outlives retention.ms + segment.ms + 1 s, none younger than retention.ms is missing" 0 "$st"

# 2. A partition that stops receiving writes empties on schedule: its last
# line must be gone within retention.ms + segment.ms + 1 s (5 s here).
for i in 1 2 3; do echo "idle $i" >>"$MNT/ret/idle/current"; done
t_last=$(now_ms)
# Empty: no live segment, active or sealed, in one snapshot of the
# engine's (a listing and a stat of current, taken apart, could straddle
# the idle seal); and the listing agrees.
_empty() {
	[ "$(getfattr --absolute-names --only-values -n user.tlog.segments \
	    "$MNT/ret/idle")" = 0 ] &&
	    [ "$(ls "$MNT/ret/idle")" = current ]
}
tl_wait_for 10 _empty
gone=$(($(now_ms) - t_last))
tl_diag "idle partition empty after $gone ms"
# The poll runs every 50 ms: allow that much on top of the bound.
tl_check "an idle partition empties within 5 s of its last line" \
    test "$gone" -le 5050 -a "$gone" -ge 3000

# 3. The size ceiling holds: retention.bytes=256K, segment.bytes=32K, a
# writer at full speed, the visible size sampled every 0.2 s.
setfattr -n user.retention.bytes -v 256K "$MNT/ret/cap"
setfattr -n user.segment.bytes -v 32K "$MNT/ret/cap"
setfattr -n user.retention.ms -v 1h "$MNT/ret/cap"
"$LINEWRITER" "$MNT/ret/cap/current" 1 200000 &
wpid=$!
max=0 over=0 samples=0
while kill -0 "$wpid" 2>/dev/null; do
	s=$(sizes "$MNT/ret/cap")
	samples=$((samples + 1))
	[ "$s" -gt "$max" ] && max=$s
	[ "$s" -gt 262144 ] && over=$((over + 1))
	sleep 0.2
done
wait "$wpid"
wst=$?
s=$(sizes "$MNT/ret/cap")
tl_diag "ceiling: $samples samples, largest $max bytes, final $s"
tl_is "the writer was never refused" 0 "$wst"
tl_is "the partition never shows more than retention.bytes" 0 "$over"
tl_check "once full it holds between 7/8 of the cap and the cap" \
    test "$s" -ge $((262144 - 262144 / 8 - 32768)) -a "$s" -le 262144

# 4. A reader holding a segment that is deleted reads it to its end.
for i in $(seq 1 200); do echo "kept for the reader $i"; done >"$TMP/want"
cat "$TMP/want" >>"$MNT/ret/read/current"
setfattr -n user.seal -v 1 "$MNT/ret/read/current"
seg=$MNT/ret/read/00000000000000000000.log
exec 3<"$seg"
_gone() { [ ! -e "$seg" ]; }
tl_check "the segment expires while open" tl_wait_for 10 _gone
cat <&3 >"$TMP/got"
exec 3<&-
tl_check "the open reader still reads all of it" cmp -s "$TMP/want" "$TMP/got"

# 5. One deletion event per deleted segment, and none for a live one.
echo "to be removed" >>"$MNT/ret/read/current"
rm "$MNT/ret/read/current"
# A deletion is recorded after its unlink, on the unlinker's thread.
_manual() {
	cat "$MNT/.tlogfs/events"/* | grep -q \
	    '"event":"delete","topic":"ret","partition":"read".*"rule":"manual"'
}
tl_check "the manual rm is recorded with rule manual" tl_wait_for 10 _manual
cat "$MNT/.tlogfs/events"/* >"$TMP/events"
ls "$MNT/ret/age" >"$TMP/live"
awk -v live="$TMP/live" '
	BEGIN { while ((getline l < live) > 0) alive[l] = 1 }
	/"topic":"ret"/ {
		match($0, /"partition":"[^"]*"/); p = substr($0, RSTART + 13, RLENGTH - 14)
		match($0, /"segment":"[0-9]+"/); s = substr($0, RSTART + 11, RLENGTH - 12)
		k = p "/" s
		if ($0 ~ /"event":"seal"/) sealed[k] = 1
		if ($0 ~ /"event":"delete"/) del[k]++
	}
	END {
		for (k in del) {
			if (del[k] != 1) { print "twice: " k; bad++ }
			split(k, a, "/")
			if (a[1] == "age" && ((a[2] ".log") in alive)) { print "live: " k; bad++ }
		}
		n = 0
		for (k in del) n++
		printf "deletions %d\n", n
		exit bad > 0
	}' "$TMP/events" >"$TMP/ev.out"
st=$?
tl_diag "$(tr '\n' ' ' <"$TMP/ev.out")"
tl_is "each deletion recorded once, none for a live segment" 0 "$st"
tl_check "expiry is recorded with rule time" \
    grep -q '"event":"delete","topic":"ret","partition":"age".*"rule":"time"' "$TMP/events"
tl_check "the ceiling is recorded with rule size" \
    grep -q '"event":"delete","topic":"ret","partition":"cap".*"rule":"size"' "$TMP/events"

# 6. The metrics are Prometheus text.
cat "$MNT/.tlogfs/metrics" >"$TMP/metrics"
awk '
	/^# (HELP|TYPE) tlogfs_[a-z_]+ / { next }
	/^tlogfs_[a-z_]+(\{[a-z_]+="[a-z_]+"\})? -?[0-9.e+-]+$/ { n++; next }
	{ print "bad line: " $0; bad++ }
	END { print n " samples"; exit bad > 0 || n < 15 }' "$TMP/metrics" >"$TMP/m.out"
tl_is "metrics parse as Prometheus text ($(tail -1 "$TMP/m.out"))" 0 $?
tl_check "metrics count deletions by rule" \
    grep -Eq '^tlogfs_deletions_total\{rule="time"\} [1-9]' "$TMP/metrics"
if command -v promtool >/dev/null 2>&1; then
	tl_check "promtool check metrics" sh -c "promtool check metrics <'$TMP/metrics'"
fi

# 7. .tlogfs/events is a partition under retention, set like any other,
# and read-only to users.
setfattr -n user.retention.ms -v 1h "$MNT/.tlogfs/events"
tl_is "retention of .tlogfs/events is set by xattr" 3600000 \
    "$(getfattr --absolute-names --only-values -n user.retention.ms "$MNT/.tlogfs/events")"
tl_is "appending to .tlogfs/events: EPERM" EPERM \
    "$("$PROBE" open "$MNT/.tlogfs/events/current" wronly,append)"
tl_is "rm in .tlogfs/events: EPERM" EPERM \
    "$("$PROBE" unlink "$MNT/.tlogfs/events/current")"
tl_is "mkdir in .tlogfs: EPERM" EPERM "$("$PROBE" mkdir "$MNT/.tlogfs/x")"
tl_check "unmount" tl_umount
tl_mount
tl_is "the events partition's retention persists" 3600000 \
    "$(getfattr --absolute-names --only-values -n user.retention.ms "$MNT/.tlogfs/events")"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed only reaper lines" "$REAPER_LINE"
tl_done
