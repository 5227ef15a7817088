#!/bin/sh
# ship_settle.sh - a shipper started while a killed one's messages still
# land (doc/shipping.md, "Late messages") waits until the stream stopped
# taking messages before it reads where each partition stands and sends
# anything: else it could send again records the dead one also sent, a
# late message chained to one of them could land after a gap in its
# partition, and the start could skip the records below it. Here a stand-in for the dead shipper's late messages (one
# every 200 ms for about 2 s, on another subject) is still landing when
# the shipper starts: every message the shipper sends comes after the
# last of them.
. "${srcdir:-.}/tests/integration/shiplib.sh"
LATE=
trap '[ -n "$LATE" ] && kill "$LATE" 2>/dev/null; nats_stop_all; tl_cleanup' EXIT

ship_one_node
mkdir -p "$MNT/t/0"
nums 0 19 >>"$MNT/t/0/current"
tl_check "the stream" "$JSPROBE" stream "$NATS_URL_1" TL 'tlog.>' 1

late() {
	for i in 0 1 2 3 4 5 6 7 8 9; do
		"$JSPROBE" put "$NATS_URL_1" TL tlog.dead.0 "dead/$i" "$i" \
		    "late $i" || return 1
		sleep 0.2
	done
}
late &
LATE=$!
# The shipper starts once the first late message landed.
landed() { [ "$("$JSPROBE" msgs "$NATS_URL_1" TL 2>/dev/null)" -ge 1 ]; }
tl_check "the first late message landed" tl_wait_for 30 landed
: >"$TMP/ship.err"
st=0
"$TLOGCTL" ship --nats "$NATS_URL_1" --stream TL --once "$MNT/t" \
    2>>"$TMP/ship.err" || st=$?
tl_is "ship --once exits 0" 0 "$st"
wait "$LATE"
tl_is "every late message landed" 0 "$?"
LATE=
"$JSPROBE" seqs "$NATS_URL_1" TL >"$TMP/seqs"
tl_is "the stream holds the 10 late messages and the 20 records" 30 \
    "$(wc -l <"$TMP/seqs")"
last_late=$(awk '$2 == "tlog.dead.0" { s = $1 } END { print s }' "$TMP/seqs")
first_mine=$(awk '$2 == "tlog.t.0" { print $1; exit }' "$TMP/seqs")
tl_check "the shipper sent nothing before the last late message landed ($last_late < $first_mine)" \
    test "${last_late:-99}" -lt "${first_mine:-0}"
tl_is "the cursor is at the end" 20 "$(gx user.cursor.ship "$MNT/t/0")"
sed 's/^/# /' "$TMP/ship.err"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
