#!/bin/sh
# compress.sh - compressed history through the mount: a sealed segment of
# a partition with compression.type=zstd becomes BASE.log.zst in the
# store, which zstdcat prints exactly; cat, tail -F and tlogctl read see
# the same plain lines; du shows the disk, ls -l the content; the xattrs
# and metrics say it; retention.bytes counts the disk; a flipped byte in
# one frame loses that frame only, said once, with a corrupt event.
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
command -v zstd >/dev/null 2>&1 || tl_skip "zstd not installed"

tl_mount
P=$MNT/web/0
mkdir -p "$P" "$MNT/web/cap"
setfattr -n user.compression.type -v zstd "$MNT/web"
tl_is "compression.type is inherited" zstd "$(gx user.compression.type "$P")"
tl_is "compression.zstd.level defaults to 3" 3 \
    "$(gx user.compression.zstd.level "$P")"
tl_check "a bad compression.type is refused" \
    sh -c "! setfattr -n user.compression.type -v lz4 '$P' 2>/dev/null"

nums 1 150000 | sed 's/$/ GET \/index.html HTTP\/1.1 200 512 "-" "curl\/7.88"/' \
    >"$TMP/want1"
# Followers started after the first line, so that they hold the segment
# that will be compressed (GNU tail holding an empty current would skip
# a segment that seals between two of its polls: tlogfs(8)).
head -1 "$TMP/want1" >>"$P/current"
tail -s 0.2 --max-unchanged-stats=1 -n +1 -F "$P/current" >"$TMP/tail" \
    2>"$TMP/tail.err" &
tpid=$!
"$TLOGCTL" read --from 0 --follow "$P" >"$TMP/follow" 2>"$TMP/follow.err" &
fpid=$!
_started() { [ -s "$TMP/tail" ] && [ -s "$TMP/follow" ]; }
tl_wait_for 10 _started
tl_is "a store with no compressed segment is format 1" "tlogfs 1" \
    "$(cat "$STORE/.tlogfs/format")"
tail -n +2 "$TMP/want1" >>"$P/current"
setfattr -n user.seal -v 1 "$P/current"
SEG=$STORE/web/0/00000000000000000000
_compressed() { [ -f "$SEG.log.zst" ] && [ ! -e "$SEG.log" ]; }
tl_wait_for 30 _compressed
tl_check "the sealed segment is BASE.log.zst in the store, its .log gone" \
    _compressed
tl_is "a store with compressed segments is format 2 (older tlogfs refuse it)" \
    "tlogfs 2" "$(cat "$STORE/.tlogfs/format")"
tl_is "the daemon said so once" 1 "$(grep -c 'format 2 from now on' "$ERR")"
tl_check "zstdcat of it in the store prints exactly the segment" \
    sh -c "zstd -q -d -c '$SEG.log.zst' | cmp -s - '$TMP/want1'"
tl_check "cat through the mount prints the same lines" \
    cmp -s "$P/00000000000000000000.log" "$TMP/want1"
plain=$(stat -c %s "$P/00000000000000000000.log")
blocks=$(stat -c %b "$P/00000000000000000000.log")
tl_is "st_size is the plain size" "$(stat -c %s "$TMP/want1")" "$plain"
tl_check "st_blocks counts the compressed file (du shows the disk)" \
    test $((blocks * 512)) -lt $((plain / 4))
tl_is "user.tlog.compression" zstd \
    "$(gx user.tlog.compression "$P/00000000000000000000.log")"
tl_is "the segment's user.tlog.disk_bytes is the .log.zst's size" \
    "$(stat -c %s "$SEG.log.zst")" \
    "$(gx user.tlog.disk_bytes "$P/00000000000000000000.log")"
tl_check "the partition's user.tlog.disk_bytes is below its bytes" \
    test "$(gx user.tlog.disk_bytes "$P")" -lt "$(gx user.tlog.bytes "$P")"
tl_is "tlogctl read --from 123456 reads that record" \
    "$(sed -n 123457p "$TMP/want1")" \
    "$("$TLOGCTL" read --from 123456 "$P" 2>/dev/null | head -1)"

# The followers go on past the compression.
nums 150001 150100 >>"$P/current"
cat "$TMP/want1" >"$TMP/want"
nums 150001 150100 >>"$TMP/want"
_followed() { [ "$(wc -l <"$TMP/follow")" -ge 150100 ] &&
    [ "$(wc -l <"$TMP/tail")" -ge 150100 ]; }
tl_wait_for 30 _followed
kill "$tpid" "$fpid" 2>/dev/null
wait "$tpid" "$fpid" 2>/dev/null
tl_check "tlogctl read --follow saw every line once, in order" \
    cmp -s "$TMP/follow" "$TMP/want"
tl_check "tail -F saw every line once, in order" cmp -s "$TMP/tail" "$TMP/want"
diff "$TMP/want" "$TMP/tail" | head -5 | sed 's/^/# /'
sed 's/^/# tail: /' "$TMP/tail.err" | head -3
tl_check "the metrics count it" sh -c "grep -q \
    '^tlogfs_compressed_segments_total [1-9]' '$MNT/.tlogfs/metrics'"

# retention.bytes counts the disk: far more plain history stays.
setfattr -n user.retention.bytes -v 256K "$MNT/web/cap"
_idle() { grep -q '^tlogfs_compress_backlog_segments 0$' \
    "$MNT/.tlogfs/metrics"; }
for i in $(seq 1 30); do
	nums $((i * 10000)) $((i * 10000 + 1999)) |
	    sed 's/$/ GET \/a\/b\/c HTTP\/1.1 200/' >>"$MNT/web/cap/current"
	tl_wait_for 10 _idle
done
tl_diag "cap: disk $(gx user.tlog.disk_bytes "$MNT/web/cap") plain $(gx user.tlog.bytes "$MNT/web/cap")"
tl_check "retention.bytes holds on disk" \
    test "$(gx user.tlog.disk_bytes "$MNT/web/cap")" -le 262144
tl_check "and keeps more than retention.bytes of plain lines" \
    test "$(gx user.tlog.bytes "$MNT/web/cap")" -gt 262144

# A flipped byte in one frame: that frame's records only.
tl_umount
tl_stderr_clean "no error before the flipped byte" \
    'compression.type: bad value "lz4": accepted none or zstd$|: format 2 from now on \(compressed segments\)'
sz=$(stat -c %s "$SEG.log.zst")
printf '\377' | dd of="$SEG.log.zst" bs=1 seek=$((sz / 3)) conv=notrunc \
    2>/dev/null
# A small frame cache: what the daemon keeps decoded stays within it.
tl_mount -o frame_cache=1M
cat "$P"/*.log "$MNT/web/cap"/*.log >/dev/null 2>&1
fc=$(awk '$1 == "tlogfs_frame_cache_bytes" { print $2 }' \
    "$MNT/.tlogfs/metrics")
tl_diag "frame cache: $fc bytes"
tl_check "-o frame_cache=1M bounds the decoded frames kept" \
    test "$fc" -le $((1048576 + 262144 + 4096))
cat "$P/00000000000000000000.log" >"$TMP/got" 2>/dev/null
st=$?
tl_check "cat stops with an error at the bad frame" test "$st" -ne 0
tl_check "what it printed before is the segment's start, never garbage" \
    sh -c "head -c $(stat -c %s "$TMP/got") '$TMP/want1' | cmp -s - '$TMP/got'"
# tlogctl prints whole records only: those before the bad frame's pages.
"$TLOGCTL" read --from 0 "$P" >"$TMP/tgot" 2>"$TMP/terr"
st=$?
tl_check "tlogctl read stops with an error at the bad frame" test "$st" -ne 0
_whole() {
	[ ! -s "$TMP/tgot" ] ||
	    [ "$(tail -c 1 "$TMP/tgot" | od -An -tx1 | tr -d ' ')" = 0a ]
}
tl_check "what tlogctl printed ends with a whole record" _whole
tl_check "and is the segment's start" \
    sh -c "head -c $(stat -c %s "$TMP/tgot") '$TMP/want1' | cmp -s - '$TMP/tgot'"
tl_is "the last record is still served" "150000 GET /index.html HTTP/1.1 200 512 \"-\" \"curl/7.88\"" \
    "$("$TLOGCTL" read --from 149999 "$P" 2>/dev/null | head -1)"
tl_is "one log line says so" 1 \
    "$(grep -c 'fails its checksum' "$ERR")"
_event() { grep -q '"rule":"corrupt"' "$MNT/.tlogfs/events/current" \
    2>/dev/null || cat "$MNT/.tlogfs/events/"*.log 2>/dev/null |
    grep -q '"rule":"corrupt"'; }
tl_wait_for 10 _event
tl_check "an event with rule corrupt" _event
tl_umount
tl_done
