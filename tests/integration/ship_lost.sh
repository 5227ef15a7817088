#!/bin/sh
# ship_lost.sh - `tlogctl ship` at records lost to a corrupt compressed
# frame (design.md, "Compressed history"; doc/shipping.md, Lost
# records). By default the partition stops there: every record before
# them is shipped, its cursor stays after the last one acknowledged, one
# line names the lost records and the offset to go on from, once a run,
# and the other partitions go on; `--once` exits 1, and so does every
# run until --skip-lost. With --skip-lost that line is a warning and
# the partition goes on from the first readable record: the stream
# holds every readable record once, in order, with a gap in Tlog-Offset
# where the lost ones were, the cursor goes past them, and a second run
# ships nothing again. Lost records up to a segment's end go on with the
# next segment, and a resync right after the gap (the chain broken at
# the first record after it, a test hook) neither sends a record twice
# nor loops.
. "${srcdir:-.}/tests/integration/shiplib.sh"
SHPID=
trap '[ -n "$SHPID" ] && kill "$SHPID" 2>/dev/null; nats_stop_all; tl_cleanup' EXIT
command -v zstd >/dev/null 2>&1 || tl_skip "zstd not installed"

ship_one_node
P=$MNT/r/0
Q=$MNT/r/1
S=$MNT/s/0
T=$MNT/s/1
mkdir -p "$P" "$Q" "$S" "$T"
setfattr -n user.compression.type -v zstd "$MNT/r"
setfattr -n user.compression.type -v zstd "$MNT/s"
# r/0: 100000 records of 27 bytes (about 20 frames) in segment 0, then
# 10 in the active segment 100000; r/1, healthy: 100 records.
sealed_then "$P" 100000 10 "$TMP/want"
nums 0 99 >"$TMP/q"
cat "$TMP/q" >>"$Q/current"
# s/0: 10000 records (3 frames), the last frame to be damaged, then 5.
nums 0 9999 | sed 's/$/ GET \/a HTTP\/1.1 200/' >"$TMP/swant"
cat "$TMP/swant" >>"$S/current"
setfattr -n user.seal -v 1 "$S/current"
nums 10000 10004 >>"$S/current"
# s/1: the same 10000, the last frame to be damaged, and nothing after.
cat "$TMP/swant" >>"$T/current"
setfattr -n user.seal -v 1 "$T/current"
nums 10000 10004 >>"$TMP/swant"
SEG=$STORE/r/0/00000000000000000000
SEG1=$STORE/s/0/00000000000000000000
SEG2=$STORE/s/1/00000000000000000000
_compressed() { [ -f "$SEG.log.zst" ] && [ ! -e "$SEG.log" ] &&
    [ -f "$SEG1.log.zst" ] && [ ! -e "$SEG1.log" ] &&
    [ -f "$SEG2.log.zst" ] && [ ! -e "$SEG2.log" ]; }
tl_wait_for 30 _compressed
tl_check "segments 0 are compressed" _compressed
tl_umount
sz=$(stat -c %s "$SEG.log.zst")
printf '\377' | dd of="$SEG.log.zst" bs=1 seek=$((sz / 3)) conv=notrunc \
    2>/dev/null
for f in "$SEG1.log.zst" "$SEG2.log.zst"; do
	sz=$(stat -c %s "$f")
	printf '\377' | dd of="$f" bs=1 seek=$((sz - 200)) conv=notrunc \
	    2>/dev/null
done
tl_mount

# lines FIRST LAST of a file, by offset (line N+1 is record N)
recs() { sed -n "$(($2 + 1)),$(($3 + 1))p" "$1"; }
msgs() { "$JSPROBE" msgs "$NATS_URL_1" "$1" 2>/dev/null || echo 0; }
cursor() { gx user.cursor.ship "$1" 2>/dev/null; }
RE='^tlogctl: ship: .*/r/0: segment 00000000000000000000: records ([0-9]+) to ([0-9]+) are lost to a corrupt compressed frame; '
# ship --once: SIGTERM after 120 s, in case it never ends (it did not at
# the first bad frame: a read cut there was tried again and again).
ship() { timeout 120 "$TLOGCTL" ship --nats "$NATS_URL_1" "$@"; }

# ---- the default: the partition stops there, the others go on ----
ship --stream L --once "$MNT/r" 2>"$TMP/err"
tl_is "ship --once at lost records: exit 1" 1 $?
tl_diag "$(cat "$TMP/err")"
tl_is "one line names them" 1 "$(grep -c 'lost to a corrupt' "$TMP/err")"
tl_check "the segment, the lost records and the offset to go on from" \
    grep -Eq "${RE}not shipped on: go on with --skip-lost \\(or set user\\.cursor\\.ship to [0-9]+\\)$" \
    "$TMP/err"
A=$(sed -En "s#${RE}.*#\\1#p" "$TMP/err")
B=$(sed -En "s#${RE}.*#\\2#p" "$TMP/err")
N=$(sed -En 's/.* to ([0-9]+)\)$/\1/p' "$TMP/err")
case "$A$B$N" in *[!0-9]*|'') A=1 B=0 N=0 ;; esac
tl_is "the offset to go on from follows the lost ones" $((B + 1)) "$N"
tl_is "nothing else was said but the stream's creation" 2 \
    "$(wc -l <"$TMP/err")"
# The lost records are those read names.
"$TLOGCTL" read "$P" >/dev/null 2>"$TMP/rerr"
tl_check "the same records read finds lost" \
    grep -q "records $A to $B are lost .*--from $N " "$TMP/rerr"
recs "$TMP/want" 0 $((A - 1)) >"$TMP/before"
tl_check "the stream holds every record before them, and all of r/1" \
    "$JSPROBE" check "$NATS_URL_1" L "tlog.r.0=$TMP/before" \
    "tlog.r.1=$TMP/q"
tl_is "the cursor is after the last record acknowledged" "$A" "$(cursor "$P")"
tl_is "the other partition's is at its end" 100 "$(cursor "$Q")"
n0=$(msgs L)

ship --stream L --once "$MNT/r" 2>"$TMP/err"
tl_is "again: exit 1" 1 $?
tl_check "saying the same" grep -Eq \
    "${RE}not shipped on: go on with --skip-lost \\(or set user\\.cursor\\.ship to $N\\)$" \
    "$TMP/err"
tl_is "once" 1 "$(wc -l <"$TMP/err")"
tl_is "shipping nothing" "$n0" "$(msgs L)"
tl_is "the cursor stays" "$A" "$(cursor "$P")"

# Following: the other partitions go on, the line is said once.
"$TLOGCTL" ship --nats "$NATS_URL_1" --stream L "$MNT/r" 2>"$TMP/ferr" &
SHPID=$!
nums 100 109 >>"$TMP/q"
nums 100 109 >>"$Q/current"
nums 100010 100014 >>"$P/current"
nums 100010 100014 >>"$TMP/want"
has() { [ "$(msgs L)" -ge $((n0 + 10)) ]; }
tl_check "following, the other partition is shipped" tl_wait_for 30 has
tl_check "the stopped one said so" grep -Eq "${RE}" "$TMP/ferr"
kill -TERM "$SHPID"
wait "$SHPID"
tl_is "SIGTERM: exit 0" 0 "$?"
SHPID=
tl_is "one line about the lost records" 1 \
    "$(grep -c 'lost to a corrupt' "$TMP/ferr")"
tl_is "nothing more of the stopped one" $((n0 + 10)) "$(msgs L)"
tl_is "its cursor stays" "$A" "$(cursor "$P")"
tl_is "the other one's moves" 110 "$(cursor "$Q")"

# ---- --skip-lost ----
ship --stream L --once --skip-lost "$MNT/r" 2>"$TMP/err"
tl_is "--skip-lost: exit 0" 0 $?
tl_diag "$(cat "$TMP/err")"
tl_check "a warning names the lost records and where it went on" \
    grep -Eq "${RE}going on from $N$" "$TMP/err"
tl_is "in one line, the only one" 1 "$(wc -l <"$TMP/err")"
recs "$TMP/want" "$N" 100014 >"$TMP/after"
tl_check "the stream holds every readable record once, in order, a gap for the lost ones" \
    "$JSPROBE" check "$NATS_URL_1" L "tlog.r.0=$TMP/before" \
    "tlog.r.0=$TMP/after@$N" "tlog.r.1=$TMP/q"
tl_is "the cursor is past them, at the end" 100015 "$(cursor "$P")"
n1=$(msgs L)
ship --stream L --once --skip-lost "$MNT/r" 2>"$TMP/err"
tl_is "a second run: exit 0" 0 $?
tl_is "says nothing" "" "$(cat "$TMP/err")"
tl_is "and ships nothing again" "$n1" "$(msgs L)"
ship --stream L --once "$MNT/r" 2>"$TMP/err"
tl_is "nor does one without --skip-lost: exit 0" 0 $?
tl_is "silent" "" "$(cat "$TMP/err")"
tl_is "shipping nothing" "$n1" "$(msgs L)"

# ---- up to a segment's end, and a resync just after the gap ----
RS='^tlogctl: ship: .*/s/0: segment 00000000000000000000: records ([0-9]+) to 9999 are lost to a corrupt compressed frame; '
RT='^tlogctl: ship: .*/s/1: segment 00000000000000000000: records ([0-9]+) to 9999 are lost to a corrupt compressed frame; '
ship --stream S --subject-prefix u --once "$MNT/s" 2>"$TMP/err"
tl_is "lost up to a segment's end: exit 1" 1 $?
tl_diag "$(cat "$TMP/err")"
tl_check "go on from the next segment's first record" grep -Eq \
    "${RS}not shipped on: go on with --skip-lost \\(or set user\\.cursor\\.ship to 10000\\)$" \
    "$TMP/err"
tl_check "or, with none, from the partition's end" grep -Eq \
    "${RT}not shipped on: go on with --skip-lost \\(or set user\\.cursor\\.ship to 10000\\)$" \
    "$TMP/err"
A2=$(sed -En "s#${RS}.*#\\1#p" "$TMP/err")
A3=$(sed -En "s#${RT}.*#\\1#p" "$TMP/err")
case "$A2$A3" in *[!0-9]*|'') A2=1 A3=1 ;; esac
tl_is "the cursor is at the first lost record" "$A2" "$(cursor "$S")"
tl_is "the other's too" "$A3" "$(cursor "$T")"
# The first publish of this run, record 10000, breaks the chain: it and
# every later one fail, and the resync finds the stream's last record
# before the gap.
TLOGCTL_TEST_BREAK_CHAIN=1 timeout 120 "$HOOKED_TLOGCTL" ship --nats "$NATS_URL_1" \
    --stream S --subject-prefix u --once --skip-lost "$MNT/s" 2>"$TMP/err"
tl_is "--skip-lost with a resync after the gap: exit 0" 0 $?
tl_diag "$(cat "$TMP/err")"
tl_is "the lost records named once" 1 \
    "$(grep -Ec "${RS}going on from 10000$" "$TMP/err")"
tl_is "those of the other too" 1 \
    "$(grep -Ec "${RT}going on from 10000$" "$TMP/err")"
tl_is "one resync" 1 "$(grep -c 'resending from what the stream holds' \
    "$TMP/err")"
tl_is "nothing else said" 3 "$(wc -l <"$TMP/err")"
recs "$TMP/swant" 0 $((A2 - 1)) >"$TMP/sbefore"
recs "$TMP/swant" 0 $((A3 - 1)) >"$TMP/tbefore"
nums 10000 10004 >"$TMP/safter"
tl_check "every readable record once, in order" \
    "$JSPROBE" check "$NATS_URL_1" S "u.s.0=$TMP/sbefore" \
    "u.s.0=$TMP/safter@10000" "u.s.1=$TMP/tbefore"
tl_is "the cursor at the end" 10005 "$(cursor "$S")"
tl_is "the other's at its end, nothing after the lost ones" 10000 \
    "$(cursor "$T")"
n2=$(msgs S)
ship --stream S --subject-prefix u --once "$MNT/s" 2>"$TMP/err"
tl_is "a second run without --skip-lost: exit 0" 0 $?
tl_is "says nothing" "" "$(cat "$TMP/err")"
tl_is "and ships nothing again" "$n2" "$(msgs S)"

tl_umount
tl_stderr_clean "the daemon said only the bad frames" \
    ': format 2 from now on \(compressed segments\)|fails its checksum: its records are lost'
tl_done
