#!/bin/sh
# ship_late.sh - a late message (doc/shipping.md, How): a message of a
# shipper killed a moment ago, or of this one before a resync, can land
# in the stream after this one resent records, chained to one of them,
# and so after a gap in its partition. A resync must not take such a
# record, the stream's last of its partition, as proof that the stream
# holds those before it: the cursor would pass records the stream never
# got.
# Here: the 51st publish breaks the chain, so records 50-99 are refused;
# while the shipper resyncs, record 80 lands as a late message would.
. "${srcdir:-.}/tests/integration/shiplib.sh"
trap 'nats_stop_all; tl_cleanup' EXIT

ship_one_node
mkdir -p "$MNT/t/0"
nums 0 99 >>"$MNT/t/0/current"
ID="$(gx user.tlog.store_id "$MNT")/$(gx user.tlog.partition_id "$MNT/t/0")"
GATE=$TMP/gate
: >"$TMP/ship.err"
TLOGCTL_TEST_BREAK_CHAIN=51 TLOGCTL_TEST_RESYNC_GATE=$GATE \
    "$HOOKED_TLOGCTL" ship --nats "$NATS_URL_1" --stream TL --once "$MNT/t" \
    2>>"$TMP/ship.err" &
SHPID=$!
tl_check "the chain breaks at record 50: a resync" tl_wait_for 60 \
    grep -q 'resending from what the stream holds' "$TMP/ship.err"
tl_check "record 80 lands late" "$JSPROBE" put "$NATS_URL_1" TL tlog.t.0 \
    "$ID/80" 80 000080
touch "$GATE"
wait "$SHPID"
tl_is "ship --once exits 0" 0 "$?"
tl_is "the cursor is at the end" 100 "$(gx user.cursor.ship "$MNT/t/0")"
tl_is "the stream holds every record (once: the duplicate window)" 100 \
    "$("$JSPROBE" msgs "$NATS_URL_1" TL 2>/dev/null)"
tl_is "one line says the stream may hold records out of order" 1 \
    "$(grep -c 'holds record 80 of tlog.t.0, which it refused' "$TMP/ship.err")"
sed 's/^/# /' "$TMP/ship.err"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
