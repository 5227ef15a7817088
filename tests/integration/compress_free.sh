#!/bin/sh
# compress_free.sh - retention.keep.free and retention.ms over compressed
# segments, STORE on a 32 MiB tmpfs with a floor of 12 MiB: a writer
# appends about four times what the disk holds in plain lines, in pieces
# the daemon compresses as they seal; no append fails, free space stays near
# the floor, the partition keeps more plain history than the disk could
# hold plain, and what keep.free deletes leaves no file behind. Then
# retention.ms takes the compressed segments, files and all.
. "${srcdir:-.}/tests/integration/lib.sh"

trap tl_cleanup_tmpfs EXIT

avail() { df --output=avail -B1 "$STORE" | tail -n 1 | tr -d ' '; }
metric() { awk -v k="$1" '$1 == k { print $2 }' "$MNT/.tlogfs/metrics"; }
idle() { [ "$(metric tlogfs_compress_backlog_segments)" = 0 ] &&
    [ "$(metric tlogfs_unlink_queue)" = 0 ]; }

tl_tmpfs 32m
tl_mount
P=$MNT/z/0
mkdir -p "$P"
setfattr -n user.compression.type -v zstd "$MNT/z"
setfattr -n user.segment.bytes -v 1M "$MNT/z"
setfattr -n user.retention.keep.free -v 12M "$MNT"

min=$(avail) bad=0 i=0
while [ $i -lt 64 ]; do
	# 2 MB of lines that compress about 3 times (a random token each).
	awk -v from=$((i * 25000)) 'BEGIN { srand(from)
	    for (n = from; n < from + 25000; n++)
		printf "%09d GET /api/v1/orders %08x%08x 200\n", n,
		    int(rand() * 4294967296), int(rand() * 4294967296) }' |
	    "$TL_BUILD/cli/tlogctl" append "$P" || bad=$((bad + 1))
	tl_wait_for 20 idle
	a=$(avail)
	[ "$a" -lt "$min" ] && min=$a
	i=$((i + 1))
done
plain=$(gx user.tlog.bytes "$P")
disk=$(gx user.tlog.disk_bytes "$P")
tl_diag "keep.free: plain $plain, disk $disk, lowest free $min, deletions $(metric 'tlogfs_deletions_total{rule="free"}')"
tl_is "no append failed" 0 "$bad"
tl_check "free space stayed within 2 segments of the floor" \
    test "$min" -ge $((12 * 1048576 - 2 * 1048576))
tl_check "the partition keeps more plain lines than the disk holds" \
    test "$plain" -gt $((32 * 1048576))
tl_check "keep.free deleted some" \
    test "$(metric 'tlogfs_deletions_total{rule="free"}')" -gt 0
n=$(ls "$STORE/z/0" | grep -c '\.idx$')
tl_is "one data file per index: deleted segments left nothing" "$n" \
    "$(ls "$STORE/z/0" | grep -c '\.log\(\.zst\)\?$')"
tl_is "and one per segment" "$(gx user.tlog.segments "$P")" "$n"

# retention.ms takes the compressed segments too.
setfattr -n user.retention.ms -v 1s "$P"
setfattr -n user.segment.ms -v 1s "$P"
_gone() { [ "$(gx user.tlog.segments "$P")" = 0 ] &&
    ! ls "$STORE/z/0" | grep -q '\.log\|\.idx'; }
tl_wait_for 20 _gone
tl_check "retention.ms deletes compressed segments, files and all" _gone
tl_umount
tl_stderr_clean "the daemon printed only reaper lines" \
    '^tlogfs: reaper: |: format 2 from now on \(compressed segments\)'
tl_done
