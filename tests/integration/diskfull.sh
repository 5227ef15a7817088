#!/bin/bash
# diskfull.sh - the backing store full (STORE on a 16 MiB tmpfs), with 4
# concurrent writers, without and with retention.bytes (enospc.sh covers
# one writer and space freed by rm):
#
#   * ENOSPC reaches every writer; every line whose write(2) returned is
#     there once, in order; no torn or partial record is left and the
#     partition's counters match the data;
#   * the daemon keeps serving reads: a reader reads the whole partition
#     over and over while the writers run into ENOSPC, and cat, stat,
#     getfattr and .tlogfs/metrics work on the full disk; a tail -F
#     started while it is full shows the first record after it;
#   * a clean stop on the full disk is clean: the checkpoint and the
#     clean mark take the room set aside at open;
#   * appends resume once space returns: without retention.bytes when the
#     tmpfs grows (nothing in the store is touched); with retention.bytes
#     (8M, above what the partition holds when another partition fills
#     the disk) when the other partition's oldest segments are removed,
#     and the ceiling then holds through 12 MB more.
#
# Note: while the disk is full, setfattr on a level fails with ENOSPC
# (the config file cannot be rewritten) and changes nothing, so lowering
# retention.bytes is not a way out of a full disk; rm of segments is.
. "${srcdir:-.}/tests/integration/lib.sh"

TPID=
RPID=
diskfull_cleanup() {
	[ -n "$TPID" ] && kill "$TPID" 2>/dev/null
	[ -n "$RPID" ] && kill "$RPID" 2>/dev/null
	tl_cleanup_tmpfs
}
trap diskfull_cleanup EXIT

# fill NAME D: 4 writers of lines of 2-3 KB until each write fails,
# while a reader reads the whole partition over and over; checks what is
# left and that reads work while the disk is full; starts a tail -F.
fill() {
	local name=$1 D=$2 w bad= acked
	(
		n=0
		while [ ! -e "$TMP/stop.$name" ]; do
			cat "$D"/* >/dev/null 2>>"$TMP/reader.$name.err"
			n=$((n + 1))
		done
		echo $n >"$TMP/reads.$name"
	) &
	RPID=$!
	for w in 1 2 3 4; do
		"$LINEWRITER" -s 2000 -a "$TMP/ack.$name.$w" "$D/current" "$w" 0 \
		    2>"$TMP/writer.$name.$w.err" &
		eval "wp$w=$!"
	done
	for w in 1 2 3 4; do
		eval "wait \$wp$w"
		[ "$(cat "$TMP/writer.$name.$w.err")" = "linewriter: write: ENOSPC" ] ||
		    bad="$bad w$w: $(cat "$TMP/writer.$name.$w.err")"
	done
	tl_is "$name: every writer gets ENOSPC" "" "$bad"
	touch "$TMP/stop.$name"
	wait "$RPID"
	tl_is "$name: reads during the writes and the ENOSPC all worked ($(cat "$TMP/reads.$name") passes)" \
	    "" "$(cat "$TMP/reader.$name.err")"

	cat "$D"/* >"$TMP/got.$name"
	acked=
	for w in 1 2 3 4; do
		a=$(cat "$TMP/ack.$name.$w" 2>/dev/null)
		a=${a:--1}	# no line acknowledged
		[ "$a" -ge 0 ] && acked="$acked
w$w $((a + 1)) 0 $a"
	done
	tl_is "$name: every acknowledged line once, in order, nothing else" \
	    "torn=0 order=0$acked" "$(tl_lines "$TMP/got.$name")"
	tl_is "$name: no partial record: the log ends with a newline" 0a \
	    "$(tail -c 1 "$TMP/got.$name" | od -An -tx1 | tr -d ' ')"
	tl_is "$name: the end offset counts the lines" \
	    "$(wc -l <"$TMP/got.$name")" "$(gx user.tlog.end_offset "$D")"
	tl_is "$name: the partition's bytes match the data" \
	    "$(wc -c <"$TMP/got.$name")" "$(gx user.tlog.bytes "$D")"

	# Reads while the disk is full.
	tl_is "$name: a second read gives the same bytes" \
	    "$(md5sum <"$TMP/got.$name")" "$(cat "$D"/* | md5sum)"
	tl_check "$name: stat works" listed "$D"
	tl_check "$name: the metrics are served" \
	    grep -q '^tlogfs_' "$MNT/.tlogfs/metrics"
	tail -F -s 0.2 --max-unchanged-stats=1 -n 1 "$D/current" \
	    >"$TMP/tail.$name" 2>"$TMP/tail.$name.err" &
	TPID=$!
	tl_is "$name: another append still fails with ENOSPC" ENOSPC \
	    "$("$PROBE" write "$D/current" "$BIG")"
	tl_is "$name: and leaves nothing behind" \
	    "$(wc -l <"$TMP/got.$name")" "$(gx user.tlog.end_offset "$D")"
}
listed() { ls -l "$1" >/dev/null; }
# A record of 3000 bytes: more than the few bytes a full tmpfs may
# still have in a partly used page.
BIG="space is back $(head -c 3000 /dev/zero | tr '\0' x)
"

# resumed NAME D: appends resume, and the tail -F started while the disk
# was full shows the new record.
resumed() {
	local n=$1 D=$2
	tl_check "$n: appends resume once space returns" \
	    tl_wait_for 10 appended "$D"
	tl_is "$n: the new record follows the old ones" \
	    "$(md5sum <"$TMP/got.$n")" "$(cat "$D"/* | head -n -1 | md5sum)"
	tl_check "$n: tail -F started while the disk was full sees it" \
	    tl_wait_for 10 grep -q '^space is back' "$TMP/tail.$n"
	kill "$TPID"
	wait "$TPID" 2>/dev/null
	TPID=
}

appended() { [ "$("$PROBE" write "$1/current" "$BIG")" = OK ]; }

# ---- no retention.bytes: space returns when the tmpfs grows ----
tl_tmpfs 16m
tl_mount
D=$MNT/plain/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1M "$D"
fill plain "$D"
mount -o remount,size=32m "$STORE"
resumed plain "$D"
tl_check "plain: unmount" tl_umount
sed 's/^/# daemon: /' "$ERR" | sort | uniq -c | sort -rn | head -20
# Filling the disk makes the engine log (rate-limited) write errors.
ENOSPC_ERE='No space left on device|[Cc]annot (write|cut|trim)|similar errors'
tl_stderr_clean "plain: the daemon printed only disk-full errors" "$ENOSPC_ERE"
umount "$STORE"

# ---- retention.bytes 8M: a partition well under its ceiling when
# another partition fills the disk; space returns with rm of the other
# partition's oldest segments; then the ceiling holds ----
: >"$ERR"
tl_tmpfs 16m
tl_mount
D=$MNT/capped/0
F=$MNT/filler/0
mkdir -p "$D" "$F"
setfattr -n user.segment.bytes -v 1M "$D"
setfattr -n user.retention.bytes -v 8M "$D"
setfattr -n user.segment.bytes -v 1M "$F"
"$LINEWRITER" -s 2000 "$F/current" 8 0 2>"$TMP/filler.err"
tl_is "capped: the filler partition fills the disk" \
    "linewriter: write: ENOSPC" "$(cat "$TMP/filler.err")"
rm $(ls -d "$F"/*.log | sed -n 1p)
fill capped "$D"
tl_is "capped: setfattr on the full disk fails with ENOSPC" ENOSPC \
    "$("$PROBE" setxattr "$D" user.retention.bytes 4M)"
tl_is "capped: and changes nothing" 8388608 \
    "$(gx user.retention.bytes "$D")"
rm $(ls -d "$F"/*.log | sed -n 2,11p)
resumed capped "$D"
"$LINEWRITER" -s 2000 "$D/current" 9 6000 2>"$TMP/writer.capped.9.err"
tl_is "capped: 12 MB more append without error" "" \
    "$(cat "$TMP/writer.capped.9.err")"
tl_check "capped: the partition is under its ceiling" \
    test "$(gx user.tlog.bytes "$D")" -le $((8 << 20))
cat "$D"/* >"$TMP/after.capped"
tl_is "capped: whole lines, each writer's in order" \
    "torn=0 order=0" "$(tl_lines "$TMP/after.capped" | sed -n 1p)"
tl_is "capped: the partition's bytes match the data" \
    "$(wc -c <"$TMP/after.capped")" "$(gx user.tlog.bytes "$D")"
tl_check "capped: unmount" tl_umount
sed 's/^/# daemon: /' "$ERR" | sort | uniq -c | sort -rn | head -20
tl_stderr_clean "capped: the daemon printed only disk-full errors" "$ENOSPC_ERE"
umount "$STORE"

# ---- a clean stop on a full disk: the checkpoint and the clean mark
# take the room the open set aside (.tlogfs/reserve) ----
: >"$ERR"
tl_tmpfs 8m
tl_mount
D=$MNT/stop/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 64K "$D"
"$LINEWRITER" -s 2000 "$D/current" 1 0 2>"$TMP/stop.err"
tl_is "stop: the writer fills the disk" "linewriter: write: ENOSPC" \
    "$(cat "$TMP/stop.err")"
tl_check "stop: unmount on the full disk" tl_umount
tl_is "stop: the checkpoint and the clean mark were written" "" \
    "$(grep -E 'clean mark|cannot write|every segment' "$ERR")"
tl_check "stop: the mark is there" test -f "$STORE/.tlogfs/clean"
tl_check "stop: the room set aside is given back" \
    test ! -e "$STORE/.tlogfs/reserve"
tl_done
