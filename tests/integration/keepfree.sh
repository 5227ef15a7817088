#!/bin/bash
# keepfree.sh - retention.keep.free on a real mount, STORE on a 48 MiB
# tmpfs with a floor of 12 MiB and 1 MiB segments:
#
#   * the key: root only (EINVAL on a topic or a partition), bytes or N%,
#     getxattr shows the canonical form;
#   * two writers appending more than the disk holds (about 80 MB) never
#     see ENOSPC; free space, sampled every 0.2 s, never falls more than
#     a few segments below the floor; the oldest topic (written and
#     sealed first) is emptied before any newer segment goes; each
#     writer's newest lines are all there, whole and in order; the
#     deletions are in .tlogfs/events with "rule":"free" and in the
#     metrics;
#   * back-pressure: eight writers of 1 MiB writes (tlogctl append)
#     while the unlinker waits 100 ms before each batch: together they
#     write faster than the deleted segments are unlinked, yet free space
#     stays within two segments of the floor (the appends wait), nobody
#     sees an error and the newest lines are all there;
#   * small segments (1 KiB) of 100-byte lines: free space stays near
#     the floor though each segment's files take 8 times its bytes;
#   * keep.free off: the disk fills, the writer gets ENOSPC as before,
#     and nothing is deleted.
. "${srcdir:-.}/tests/integration/lib.sh"

SPID=
keepfree_cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null
	tl_cleanup_tmpfs
}
trap keepfree_cleanup EXIT

avail() { df --output=avail -B1 "$STORE" | tail -n 1 | tr -d ' '; }
# Free space every 0.2 s in the background, the lowest kept; sampler_stop
# ends it and leaves the lowest in MIN.
sampler_start() {
	rm -f "$TMP/stop" "$TMP/min"
	(
		min=$(avail)
		while [ ! -e "$TMP/stop" ]; do
			a=$(avail)
			[ "$a" -lt "$min" ] && min=$a
			echo "$min" >"$TMP/min"
			sleep 0.2
		done
	) &
	SPID=$!
}
sampler_stop() {
	touch "$TMP/stop"
	wait "$SPID"
	SPID=
	MIN=$(cat "$TMP/min")
}
TLOGCTL=$TL_BUILD/cli/tlogctl

FLOOR=$((12 << 20))
SEG=$((1 << 20))

tl_tmpfs 48m
tl_mount

# ---- the key ----
mkdir -p "$MNT/old/0" "$MNT/new/0" "$MNT/new/1"
tl_is "default: off" -1 "$(gx user.retention.keep.free "$MNT")"
tl_is "a topic refuses it" EINVAL \
    "$("$PROBE" setxattr "$MNT/old" user.retention.keep.free 1M)"
tl_is "a partition refuses it" EINVAL \
    "$("$PROBE" setxattr "$MNT/old/0" user.retention.keep.free 1M)"
tl_is "a percentage" OK \
    "$("$PROBE" setxattr "$MNT" user.retention.keep.free 10%)"
tl_is "shown as N%" 10% "$(gx user.retention.keep.free "$MNT")"
tl_is "101% is refused" EINVAL \
    "$("$PROBE" setxattr "$MNT" user.retention.keep.free 101%)"
tl_is "a floor larger than the disk is refused" EINVAL \
    "$("$PROBE" setxattr "$MNT" user.retention.keep.free 1G)"
tl_is "and changes nothing" 10% "$(gx user.retention.keep.free "$MNT")"
tl_is "bytes with a unit" OK \
    "$("$PROBE" setxattr "$MNT" user.retention.keep.free 12M)"
tl_is "shown in bytes" $FLOOR "$(gx user.retention.keep.free "$MNT")"
tl_is "a partition shows the store's value" $FLOOR \
    "$(gx user.retention.keep.free "$MNT/new/0")"

# ---- pressure ----
for d in old/0 new/0 new/1; do
	setfattr -n user.segment.bytes -v 1M "$MNT/$d"
done
"$LINEWRITER" -s 2000 "$MNT/old/0/current" 7 3000 2>"$TMP/old.err"
setfattr -n user.seal -v 1 "$MNT/old/0"
tl_is "the old topic is written" "" "$(cat "$TMP/old.err")"
OLDSEGS=$(gx user.tlog.segments "$MNT/old/0")

sampler_start
for w in 0 1; do
	"$LINEWRITER" -s 2000 -a "$TMP/ack.$w" "$MNT/new/$w/current" "$w" \
	    20000 2>"$TMP/writer.$w.err" &
	eval "wp$w=$!"
done
bad=
for w in 0 1; do
	eval "wait \$wp$w" || bad="$bad w$w: $(cat "$TMP/writer.$w.err")"
done
sampler_stop
tl_is "two writers of 80 MB on a 48 MB disk never see an error" "" "$bad"
tl_diag "lowest free space seen: $MIN bytes (floor $FLOOR)"
tl_check "free space never fell more than 4 segments below the floor" \
    test "$MIN" -ge $((FLOOR - 4 * SEG))
caught_up() { [ "$(avail)" -ge $((FLOOR - SEG)) ]; }
tl_check "free space is back near the floor once the unlinks are done" \
    tl_wait_for 20 caught_up

for w in 0 1; do
	cat "$MNT/new/$w"/* >"$TMP/got.$w"
	last=$(cat "$TMP/ack.$w")
	tl_is "writer $w: whole lines, in order, the newest all there" \
	    "torn=0 order=0 last=$last" \
	    "$(tl_lines "$TMP/got.$w" | awk 'NR == 1 { h = $0 }
	        NR == 2 { l = $4 } END { print h " last=" l }')"
done
tl_is "the old topic is emptied" 0 "$(gx user.tlog.segments "$MNT/old/0")"

free_events() {
	cat "$MNT/.tlogfs/events"/* | grep '"event":"delete"' |
	    grep '"rule":"free"' >"$TMP/events"
	[ "$(grep -c '"topic":"old"' "$TMP/events")" -eq "$OLDSEGS" ]
}
tl_check "every deletion of the old topic is in .tlogfs/events with \"rule\":\"free\"" \
    tl_wait_for 20 free_events
tl_is "the old topic went before any newer segment" "" \
    "$(awk '/"topic":"new"/ { seen = 1 } /"topic":"old"/ && seen { print "old after new: " NR }' \
    "$TMP/events")"
tl_check "newer segments went too" grep -q '"topic":"new"' "$TMP/events"
tl_check "the metrics count deletions by rule free" \
    awk '$1 == "tlogfs_deletions_total{rule=\"free\"}" && $2 > 0 { f = 1 }
        END { exit !f }' "$MNT/.tlogfs/metrics"
tl_check "the metrics count the reclaiming passes" \
    awk '$1 == "tlogfs_free_reclaims_total" && $2 > 0 { f = 1 }
        END { exit !f }' "$MNT/.tlogfs/metrics"
tl_check "the daemon logged the reclaiming" grep -q 'retention.keep.free' "$ERR"
grep 'retention.keep.free [0-9]' "$ERR" | sed -n '1,3p;$p' | sed 's/^/# /'
tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed only its reclaiming lines" \
    'reaper: .*retention.keep.free|retention.keep.free: (set on the mount root only|bad value "(101%|1G)")'
umount "$STORE"

# ---- back-pressure: many fast writers, a slow unlinker ----
: >"$ERR"
tl_tmpfs 48m
TLOGFS_TEST_UNLINK_DELAY_MS=100
export TLOGFS_TEST_UNLINK_DELAY_MS
tl_mount_hooked
unset TLOGFS_TEST_UNLINK_DELAY_MS
setfattr -n user.segment.bytes -v 1M "$MNT"
setfattr -n user.retention.keep.free -v 12M "$MNT"
NW=8
sampler_start
for w in $(seq $NW); do
	mkdir -p "$MNT/bp$w/0"
	# 160 lines of about 60 KB: 10 MB a writer, 80 MB in all.
	{ "$LINEWRITER" /dev/stdout "$w" 160 -s 60000 |
	    "$TLOGCTL" append "$MNT/bp$w/0"; } 2>"$TMP/bp.$w.err" &
	eval "bp$w=$!"
done
bad=
for w in $(seq $NW); do
	eval "wait \$bp$w" || bad="$bad w$w: $(cat "$TMP/bp.$w.err")"
done
sampler_stop
tl_is "back-pressure: $NW writers never see an error" "" "$bad$(cat "$TMP"/bp.*.err)"
tl_diag "lowest free space seen: $MIN bytes (floor $FLOOR)"
tl_check "back-pressure: free space never fell more than 2 segments below the floor" \
    test "$MIN" -ge $((FLOOR - 2 * SEG))
tl_check "back-pressure: appends waited for the unlinks" \
    awk '$1 == "tlogfs_free_waits_total" && $2 > 0 { f = 1 }
        END { exit !f }' "$MNT/.tlogfs/metrics"
bplast=
for w in $(seq $NW); do
	# The newest sealed segment, if any is left, and the active one
	# (current): nothing deletes them under the read.
	{ ls "$MNT/bp$w/0"/*.log 2>/dev/null | tail -n 1
	  echo "$MNT/bp$w/0/current"; } | xargs cat >"$TMP/bp.got"
	bplast="$bplast $(tl_lines "$TMP/bp.got" | awk 'NR == 1 { h = $0 }
	    NR == 2 { l = $4 } END { print h " last=" l }')"
done
tl_is "back-pressure: every writer's newest lines are whole and there" \
    "$(for w in $(seq $NW); do printf ' torn=0 order=0 last=159'; done)" \
    "$bplast"
tl_check "back-pressure: unmount" tl_umount
tl_stderr_clean "back-pressure: the daemon printed only its reclaiming lines" \
    'reaper: .*retention.keep.free'
umount "$STORE"

# ---- small segments: each one's files count, not just its bytes ----
# 1 KiB segments of 100-byte lines take about 8 KiB of disk each (two
# files of a block): counted as record bytes alone, writers took free
# space megabytes below the floor.
: >"$ERR"
tl_tmpfs 32m
tl_mount
setfattr -n user.segment.bytes -v 1K "$MNT"
setfattr -n user.retention.keep.free -v 8M "$MNT"
sampler_start
for w in 1 2 3 4; do
	mkdir -p "$MNT/s$w/0"
	"$LINEWRITER" -s 80 "$MNT/s$w/0/current" "$w" 30000 \
	    2>"$TMP/s.$w.err" &
	eval "sp$w=$!"
done
bad=
for w in 1 2 3 4; do
	eval "wait \$sp$w" || bad="$bad w$w: $(cat "$TMP/s.$w.err")"
done
sampler_stop
tl_is "small segments: 4 writers never see an error" "" "$bad"
tl_diag "lowest free space seen: $MIN bytes (floor $((8 << 20)))"
tl_check "small segments: free space never fell more than 256 KiB below the floor" \
    test "$MIN" -ge $(((8 << 20) - (256 << 10)))
tl_check "small segments: unmount" tl_umount
tl_stderr_clean "small segments: the daemon printed only its reclaiming lines" \
    'reaper: .*retention.keep.free'
umount "$STORE"

# ---- off: ENOSPC as before, nothing deleted ----
: >"$ERR"
tl_tmpfs 16m
tl_mount
mkdir -p "$MNT/old/0" "$MNT/new/0"
setfattr -n user.segment.bytes -v 1M "$MNT/old/0"
setfattr -n user.segment.bytes -v 1M "$MNT/new/0"
"$LINEWRITER" -s 2000 "$MNT/old/0/current" 7 2000 2>/dev/null
setfattr -n user.seal -v 1 "$MNT/old/0"
OLDSEGS=$(gx user.tlog.segments "$MNT/old/0")
"$LINEWRITER" -s 2000 "$MNT/new/0/current" 0 0 2>"$TMP/off.err"
tl_is "off: the writer gets ENOSPC" "linewriter: write: ENOSPC" \
    "$(cat "$TMP/off.err")"
tl_is "off: the old topic keeps its segments" "$OLDSEGS" \
    "$(gx user.tlog.segments "$MNT/old/0")"
tl_is "off: no deletion" "" \
    "$(cat "$MNT/.tlogfs/events"/* | grep '"event":"delete"')"
# The disk is full, yet the stop is clean: its checkpoint and clean mark
# take the room the open set aside (.tlogfs/reserve).
st=0
tl_umount || st=$?
tl_is "off: the unmount on a full disk: status 0" 0 "$st"
tl_is "off: the checkpoint and the clean mark were written" "" \
    "$(grep -E 'clean mark|cannot write' "$ERR")"
umount "$STORE"
tl_done
