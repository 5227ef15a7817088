#!/bin/sh
# concurrent.sh - 4 writers x 5,000 lines on one partition, each line
# written in 2 or 3 pieces with separate write(2) calls on one O_APPEND
# descriptor per writer, across rolls: every line present exactly once,
# none torn, each writer's order kept.
. "${srcdir:-.}/tests/integration/lib.sh"

N=5000
tl_mount
mkdir -p "$MNT/c/0"
setfattr -n user.segment.bytes -v 64K "$MNT/c/0"
pids=
for w in 1 2 3 4; do
	"$LINEWRITER" -p "$MNT/c/0/current" $w $N 2>>"$TMP/writers.err" &
	pids="$pids $!"
done
st=0
for pid in $pids; do wait "$pid" || st=1; done
tl_is "4 writers finished without error" "0 " "$st $(cat "$TMP/writers.err")"
cat "$MNT/c/0"/* >"$TMP/all"
tl_is "every line is there" $((4 * N)) "$(wc -l <"$TMP/all")"
tl_is "every line once, none torn, each writer's order kept" \
    "torn=0 order=0
w1 $N 0 $((N - 1))
w2 $N 0 $((N - 1))
w3 $N 0 $((N - 1))
w4 $N 0 $((N - 1))" "$(tl_lines "$TMP/all")"
tl_is "the partition counts every record" $((4 * N)) \
    "$(getfattr --absolute-names --only-values -n user.tlog.end_offset "$MNT/c/0")"
tl_check "the writes rolled segments" \
    test "$(ls "$MNT/c/0" | grep -c '\.log$')" -ge 5

# One write(2) of 5 MiB reaches the daemon as several 1 MiB requests:
# they must land in order.
mkdir "$MNT/c/big"
seq -f 'line %09g' 1 350000 >"$TMP/big"
tl_check "one 5 MiB write(2)" dd if="$TMP/big" of="$MNT/c/big/current" \
    bs=8M count=1 iflag=fullblock oflag=append conv=notrunc status=none
tl_check "a write larger than max_write lands in order" \
    cmp -s "$TMP/big" "$MNT/c/big/current"
# Opens of `current` racing rolls and a reader that looks every segment
# up by its own name (as `cat dir/*` does): every `>>` open succeeds,
# even when the segment it resolved seals before the open arrives.
mkdir "$MNT/c/race"
setfattr -n user.segment.bytes -v 1K "$MNT/c/race"
(while [ ! -e "$TMP/race.stop" ]; do cat "$MNT/c/race"/* >/dev/null 2>&1; done) &
rpid=$!
pids=
for w in 1 2 3 4; do
	(i=0; while [ $i -lt 300 ]; do
		r=$("$PROBE" write "$MNT/c/race/current" \
		    "writer $w line $i padding padding padding padding
")
		[ "$r" = OK ] || { echo "writer $w line $i: $r"; break; }
		i=$((i + 1))
	done) >>"$TMP/race.err" &
	pids="$pids $!"
done
for pid in $pids; do wait "$pid"; done
: >"$TMP/race.stop"
wait "$rpid"
tl_is "every open of current for append succeeds across rolls" "" \
    "$(cat "$TMP/race.err")"
tl_is "and every line landed" 1200 "$(cat "$MNT/c/race"/* | wc -l)"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
