#!/bin/sh
# roll.sh - size and time rolls through the mount: after at least 20 size
# rolls and 5 time rolls, cat dir/* equals everything written, in order;
# each segment's name is the previous one's plus its line count; one
# long-lived writer per phase keeps appending across every roll.
. "${srcdir:-.}/tests/integration/lib.sh"

tl_mount
D=$MNT/r/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1K "$D"
setfattr -n user.segment.ms -v 1s "$D"

# The same lines into a plain file: what the log must hold.
: >"$TMP/want"
"$LINEWRITER" "$TMP/want" 1 600
"$LINEWRITER" "$TMP/want" 2 70

# Fast: about 36 KB in one go, so segments seal on size.
tl_check "a long-lived writer appends 600 lines across size rolls" \
    "$LINEWRITER" "$D/current" 1 600
# Slow: 10 lines a second, about 600 bytes, so segments seal on time.
tl_check "a long-lived writer appends 70 lines across time rolls" \
    "$LINEWRITER" -d 100000 "$D/current" 2 70

# Seal the rest first: segment.ms is 1s, and on a loaded machine the
# time seal could land between the glob's listing and cat's reads, which
# would then read the new, empty current in place of the sealed segment.
setfattr -n user.seal -v 1 "$D/current"
cat "$D"/* >"$TMP/got"
tl_check "cat dir/* equals everything written, in order" \
    cmp -s "$TMP/want" "$TMP/got"

size=0 time=0 other=0 prev= bad=
for f in "$D"/*.log; do
	case $(gx user.tlog.sealed_by "$f") in
	size) size=$((size + 1)) ;;
	time) time=$((time + 1)) ;;
	*) other=$((other + 1)) ;;
	esac
	name=$(basename "$f" .log | sed 's/^0*//')
	name=${name:-0}
	if [ -n "$prev" ] && [ "$prev" -ne "$name" ]; then
		bad="$bad $name"
	fi
	prev=$((name + $(wc -l <"$f")))
done
tl_diag "rolls: size $size, time $time, other $other"
tl_check "at least 20 size rolls" test "$size" -ge 20
tl_check "at least 5 time rolls" test "$time" -ge 5
tl_is "each name is the previous name plus its line count" "" "$bad"
tl_is "current starts where the last sealed segment ends" "$prev" \
    "$(gx user.tlog.base_offset "$D/current")"
tl_is "no segment is over segment.bytes" "" \
    "$(for f in "$D"/*.log; do [ "$(stat -c %s "$f")" -le 1024 ] || echo "$f"; done)"
tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
