#!/bin/sh
# read_lost.sh - `tlogctl read` at records lost to a corrupt compressed
# frame (design.md, "Compressed history"): it stops there with one line
# naming the lost records and the offset to go on from, which --from
# reads on; a record just before the bad frame is still found by
# --from; a consumer (--cursor --commit) stays after the last record it
# printed and is told the same again, never silently moved; with
# --skip-lost every readable record is printed once, in order, the
# lost ones named on stderr, a cursor committed past them (a second run
# starts after them), exit 0; and so under --follow.
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
command -v zstd >/dev/null 2>&1 || tl_skip "zstd not installed"

tl_mount
P=$MNT/r/0
mkdir -p "$P"
setfattr -n user.compression.type -v zstd "$MNT/r"
# 100000 records of 27 bytes (2.7 MB: about 20 frames) in segment 0, then
# 10 in the active segment 100000.
sealed_then "$P" 100000 10 "$TMP/want"
# r/1: 10000 records (3 frames), the last frame to be damaged, then 5.
Q=$MNT/r/1
mkdir -p "$Q"
sealed_then "$Q" 10000 5 "$TMP/qwant"
# r/3: 20000 lines of 27 bytes cut at record.max.bytes 16: each is a
# record without newline (16 bytes), then one with (11), so there are
# twice as many records as newlines; then 2 lines more.
R3=$MNT/r/3
mkdir -p "$R3"
setfattr -n user.record.max.bytes -v 16 "$R3"
sealed_then "$R3" 20000 2 "$TMP/want3"
SEG=$STORE/r/0/00000000000000000000
SEG1=$STORE/r/1/00000000000000000000
SEG3=$STORE/r/3/00000000000000000000
_compressed() { [ -f "$SEG.log.zst" ] && [ ! -e "$SEG.log" ] &&
    [ -f "$SEG1.log.zst" ] && [ ! -e "$SEG1.log" ] &&
    [ -f "$SEG3.log.zst" ] && [ ! -e "$SEG3.log" ]; }
tl_wait_for 30 _compressed
tl_check "segments 0 are compressed" _compressed
tl_umount
sz=$(stat -c %s "$SEG.log.zst")
printf '\377' | dd of="$SEG.log.zst" bs=1 seek=$((sz / 3)) conv=notrunc \
    2>/dev/null
sz=$(stat -c %s "$SEG3.log.zst")
printf '\377' | dd of="$SEG3.log.zst" bs=1 seek=$((sz / 2)) conv=notrunc \
    2>/dev/null
# Well inside the last frame: the seek table behind it is 12 bytes a frame.
sz=$(stat -c %s "$SEG1.log.zst")
printf '\377' | dd of="$SEG1.log.zst" bs=1 seek=$((sz - 200)) conv=notrunc \
    2>/dev/null
tl_mount

# lines FIRST LAST of want, by offset (line N+1 is record N)
recs() { sed -n "$(($1 + 1)),$(($2 + 1))p" "$TMP/want"; }
RE='^tlogctl: .*/r/0: segment 00000000000000000000: records ([0-9]+) to ([0-9]+) are lost to a corrupt compressed frame; '

# ---- the default: stop, and say where to go on ----
"$TLOGCTL" read --from 0 "$P" >"$TMP/got" 2>"$TMP/err"
tl_is "read stops at the lost records: exit 1" 1 $?
tl_is "with one line on stderr" 1 "$(wc -l <"$TMP/err")"
tl_diag "$(cat "$TMP/err")"
tl_check "naming the segment, the lost records and the offset to go on from" \
    grep -Eq "${RE}go on with --from [0-9]+ \\(or --skip-lost\\)$" "$TMP/err"
A=$(sed -E "s#${RE}.*#\\1#" "$TMP/err")
B=$(sed -E "s#${RE}.*#\\2#" "$TMP/err")
N=$(sed -E 's/.*--from ([0-9]+) .*/\1/' "$TMP/err")
case "$A$B$N" in *[!0-9]*|'') A=1 B=0 N=0 ;; esac
tl_is "the offset to go on from follows the lost ones" $((B + 1)) "$N"
tl_check "what it printed is every record before the first lost one" \
    sh -c "recs() { sed -n \"\$((\$1 + 1)),\$((\$2 + 1))p\" '$TMP/want'; };
    recs 0 $((A - 1)) | cmp -s - '$TMP/got'"
# Lost: the records with a byte in the 4 KiB pages of the bad frame (the
# daemon's line says its plain bytes), no more: records of 27 bytes.
bad=$(sed -En 's/.*a compressed frame \(plain bytes ([0-9]+)\.\.([0-9]+)\).*/\1 \2/p' \
    "$ERR")
b0=${bad% *}
b1=${bad#* }
tl_diag "bad frame: plain bytes $bad"
p0=$((b0 / 4096 * 4096))
p1=$(((b1 + 4095) / 4096 * 4096))
tl_is "the first lost record is the first in the bad frame's pages" \
    $((p0 / 27)) "$A"
tl_is "the offset to go on from is the first record past them" \
    $(((p1 + 26) / 27)) "$N"
tl_is "--from the offset it named reads on to the end" \
    "$(recs "$N" 100009 | md5sum)" \
    "$("$TLOGCTL" read --from "$N" "$P" 2>"$TMP/err2" | md5sum)"
tl_is "without a word on stderr" "" "$(cat "$TMP/err2")"
tl_is "--from the last record before the bad frame finds it" \
    "$(recs $((A - 1)) $((A - 1)))" \
    "$("$TLOGCTL" read --from $((A - 1)) "$P" 2>/dev/null | head -1)"
tl_is "--from one past it reads on too (neither can be looked up)" \
    "$(recs $((N + 1)) 100009 | md5sum)" \
    "$("$TLOGCTL" read --from $((N + 1)) "$P" 2>/dev/null | md5sum)"
"$TLOGCTL" read --from $((A + 10)) "$P" >"$TMP/got" 2>"$TMP/err"
tl_is "--from a lost record: exit 1" 1 $?
tl_check "naming the lost ones from there, and the same offset to go on" \
    grep -Eq "records $((A + 10)) to $B are lost .*--from $N " "$TMP/err"

# ---- a consumer ----
"$TLOGCTL" read --cursor c --commit "$P" >"$TMP/got" 2>"$TMP/err"
tl_is "a consumer stops at the lost records: exit 1" 1 $?
tl_is "its cursor is after the last record it printed" "$A" \
    "$(gx user.cursor.c "$P")"
"$TLOGCTL" read --cursor c --commit "$P" >"$TMP/got" 2>"$TMP/err"
tl_is "again: exit 1" 1 $?
tl_is "printing nothing" 0 "$(wc -c <"$TMP/got")"
tl_check "and saying the same" grep -Eq \
    "records $A to $B are lost .*--from $N \\(or --skip-lost\\)$" "$TMP/err"
tl_is "the cursor stays" "$A" "$(gx user.cursor.c "$P")"
"$TLOGCTL" read --cursor c --commit --skip-lost "$P" >"$TMP/got" \
    2>"$TMP/err"
tl_is "--skip-lost: exit 0" 0 $?
tl_check "says which records it skipped and where it went on" grep -Eq \
    "${RE}going on from $N$" "$TMP/err"
tl_is "in one line" 1 "$(wc -l <"$TMP/err")"
tl_is "and prints the rest" "$(recs "$N" 100009 | md5sum)" \
    "$(md5sum <"$TMP/got")"
tl_is "the cursor is committed past the lost records" 100010 \
    "$(gx user.cursor.c "$P")"
nums 100010 100014 >>"$P/current"
nums 100010 100014 >>"$TMP/want"
tl_is "a second run starts after them" "$(nums 100010 100014)" \
    "$("$TLOGCTL" read --cursor c --commit "$P" 2>&1)"

# ---- --skip-lost from the start: every readable record once ----
recs 0 $((A - 1)) >"$TMP/readable"
recs "$N" 100014 >>"$TMP/readable"
"$TLOGCTL" read --cursor d --commit --skip-lost "$P" >"$TMP/got" \
    2>"$TMP/err"
tl_is "a new consumer with --skip-lost: exit 0" 0 $?
tl_check "prints every readable record once, in order" \
    cmp -s "$TMP/readable" "$TMP/got"
tl_is "the lost ones named once" 1 "$(grep -c "records $A to $B" "$TMP/err")"
tl_is "and commits to the end" 100015 "$(gx user.cursor.d "$P")"

# ---- --follow --skip-lost ----
: >"$TMP/follow"
"$TLOGCTL" read --from 0 --follow --skip-lost "$P" >"$TMP/follow" \
    2>"$TMP/ferr" &
fpid=$!
_caught_up() { [ "$(wc -l <"$TMP/follow")" -ge "$(wc -l <"$TMP/readable")" ]; }
tl_wait_for 30 _caught_up
nums 100015 100019 >>"$P/current"
nums 100015 100019 >>"$TMP/readable"
_followed() { [ "$(wc -l <"$TMP/follow")" -ge "$(wc -l <"$TMP/readable")" ]; }
tl_wait_for 30 _followed
tl_check "a follower goes past the lost records and on with what comes" \
    kill -0 "$fpid"
kill "$fpid" 2>/dev/null
wait "$fpid" 2>/dev/null
tl_check "printing every readable record once, in order" \
    cmp -s "$TMP/readable" "$TMP/follow"
tl_check "naming the lost ones" grep -Eq "${RE}going on from $N$" "$TMP/ferr"

# ---- lost up to the segment's end: on with the next segment ----
"$TLOGCTL" read "$Q" >"$TMP/got" 2>"$TMP/err"
tl_is "lost up to a segment's end: exit 1" 1 $?
tl_diag "$(cat "$TMP/err")"
tl_check "go on with the next segment's first record" grep -Eq \
    '/r/1: segment 00000000000000000000: records [1-9][0-9]+ to 9999 are lost .*; go on with --from 10000 ' \
    "$TMP/err"
tl_is "--skip-lost goes on with the next segment" "$(nums 10000 10004)" \
    "$("$TLOGCTL" read --skip-lost "$Q" 2>/dev/null | tail -5)"

# ---- records without newline before the damage ----
# The bytes before record n of r/3 (pairs of 16 and 11 bytes).
before3() { echo $(($1 / 2 * 27 + $1 % 2 * 16)); }
RE3='^tlogctl: .*/r/3: segment 00000000000000000000: records? ([0-9]+) (to [0-9]+ )?(is|are) lost to a corrupt compressed frame; go on with --from ([0-9]+) '
"$TLOGCTL" read "$R3" >"$TMP/got" 2>"$TMP/err"
tl_is "records without newline: exit 1" 1 $?
tl_diag "$(cat "$TMP/err")"
A3=$(sed -En "s#${RE3}.*#\\1#p" "$TMP/err")
N3=$(sed -En "s#${RE3}.*#\\4#p" "$TMP/err")
case "$A3$N3" in *[!0-9]*|'') A3=1 N3=0 ;; esac
tl_is "the first lost record is the one after all it printed" \
    "$(before3 "$A3")" "$(wc -c <"$TMP/got")"
tl_check "which are the first records, whole" \
    sh -c "head -c $(before3 "$A3") '$TMP/want3' | cmp -s - '$TMP/got'"
"$TLOGCTL" read --skip-lost "$R3" >"$TMP/got" 2>/dev/null
{ head -c "$(before3 "$A3")" "$TMP/want3"
  tail -c +$(($(before3 "$N3") + 1)) "$TMP/want3"; } >"$TMP/want3s"
tl_check "--skip-lost prints each readable record once, in order" \
    cmp -s "$TMP/want3s" "$TMP/got"

tl_umount
tl_stderr_clean "the daemon said only the bad frame" \
    ': format 2 from now on \(compressed segments\)|fails its checksum: its records are lost'
tl_done
