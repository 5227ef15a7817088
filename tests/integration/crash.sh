#!/bin/sh
# crash.sh - kill -9 of the daemon while a writer appends, then a remount
# (after fusermount3 -u -z of the dead mount): every line whose write(2)
# returned is there, none torn, in order; the partition takes appends.
. "${srcdir:-.}/tests/integration/lib.sh"

tl_mount
D=$MNT/k/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 64K "$D"
"$LINEWRITER" -p -a "$TMP/ack" "$D/current" 1 0 2>"$TMP/writer.err" &
WPID=$!
acked() { [ -s "$TMP/ack" ] && [ "$(cat "$TMP/ack")" -ge 3000 ]; }
tl_check "the writer appends" tl_wait_for 30 acked
tl_kill 9 2>/dev/null
wait "$WPID"
tl_check "the writer's next write fails once the daemon is gone" \
    grep -Eq 'write: (ENOTCONN|ECONNABORTED)$' "$TMP/writer.err"
acked=$(($(cat "$TMP/ack") + 1))
tl_check "the dead mount goes with fusermount3 -u -z" "$FUSERMOUNT" -u -z "$MNT"
tl_check "the store is not marked clean" test ! -e "$STORE/.tlogfs/clean"

tl_mount
cat "$D"/* >"$TMP/got"
summary=$(tl_lines "$TMP/got")
tl_is "no torn line, order kept" "torn=0 order=0" "$(echo "$summary" | sed -n 1p)"
got=$(echo "$summary" | awk '$1 == "w1" { print $2, $3 }')
tl_diag "acknowledged $acked lines; found: $got"
# The line being written at the kill may or may not have landed.
tl_check "every acknowledged line is there" \
    test "${got% *}" -ge "$acked" -a "${got#* }" -eq 0
tl_is "the partition's end offset counts them" "${got% *}" \
    "$(gx user.tlog.end_offset "$D")"
echo after >>"$D/current"
tl_is "the recovered partition takes appends" after "$(tail -n 1 "$D/current")"
tl_check "unmount" tl_umount
tl_check "the clean mark is written at a clean stop" test -e "$STORE/.tlogfs/clean"
# Recovery may report what it rebuilt.
tl_stderr_clean "the daemon printed nothing unexpected" '[Rr]ecover|rebuil'
sed 's/^/# daemon: /' "$ERR"
tl_done
