#!/bin/sh
# enospc.sh - the backing store full (STORE on a 32 MiB tmpfs): the write
# fails with ENOSPC, no partial record stays, and writes succeed again
# once old segments are removed with rm, on a descriptor whose held
# partial line was refused.
. "${srcdir:-.}/tests/integration/lib.sh"

if ! mount -t tmpfs -o size=32m,mode=0700 tlogfs-enospc "$STORE" 2>"$TMP/tmpfs.err"; then
	tl_skip "cannot mount a tmpfs: $(cat "$TMP/tmpfs.err")"
fi
enospc_cleanup() {
	tl_cleanup_mount
	umount "$STORE" 2>/dev/null
	tl_cleanup
}
trap enospc_cleanup EXIT

tl_mount
D=$MNT/full/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 4M "$D"
# Lines of about 4 KB until a write fails.
"$LINEWRITER" -s 4000 -a "$TMP/ack" "$D/current" 1 0 2>"$TMP/writer.err"
tl_is "the write fails with ENOSPC" "linewriter: write: ENOSPC" \
    "$(cat "$TMP/writer.err")"
acked=$(($(cat "$TMP/ack") + 1))
cat "$D"/* >"$TMP/got"
tl_is "every acknowledged line is there, and nothing else" \
    "torn=0 order=0
w1 $acked 0 $((acked - 1))" "$(tl_lines "$TMP/got")"
tl_is "no partial record: the log ends with a newline" 0a \
    "$(tail -c 1 "$TMP/got" | od -An -tx1 | tr -d ' ')"
tl_is "the partition's records match the lines" "$acked" \
    "$(gx user.tlog.end_offset "$D")"
tl_is "the partition's bytes match the data" "$(wc -c <"$TMP/got")" \
    "$(gx user.tlog.bytes "$D")"
tl_is "another large append still fails" "linewriter: write: ENOSPC" \
    "$("$LINEWRITER" -s 8000 "$D/current" 2 1 2>&1)"
tl_is "and leaves nothing behind" "$acked" "$(gx user.tlog.end_offset "$D")"

# One descriptor holds part of a line that cannot be stored: that write
# fails once, the held bytes are dropped, and the same descriptor appends
# again once rm of old segments gives space back.
old=$(ls -d "$D"/*.log | sed -n 1,2p | tr '\n' ' ')
tl_is "writes succeed again after rm of old segments" "OK ENOSPC OK OK OK" \
    "$("$TL_BUILD/tests/integration/helpers/fdseq" "$D/current" hold:8000 nl \
    "run:rm $old" "poll:line:after rm" close)"
tl_is "the new record is there, without the refused bytes" "after rm" \
    "$(tail -n 1 "$D/current")"
tl_check "unmount" tl_umount
sed 's/^/# daemon: /' "$ERR"
# Filling the disk may make the engine log (rate-limited) write errors.
tl_stderr_clean "the daemon printed only disk-full errors" \
    'No space left on device|[Cc]annot (write|cut|trim)|similar errors'
tl_done
