#!/bin/sh
# ship_stop.sh - tlogctl ship stopped while its server does not answer
# (doc/shipping.md, Failures: SIGTERM): the server is frozen (SIGSTOP)
# with records in flight and more to send, so libnats is stuck writing
# to it; SIGTERM must still end the shipper with status 0 within seconds,
# its cursor where the server last acknowledged, never past it.
. "${srcdir:-.}/tests/integration/shiplib.sh"
trap 'nats_resume 1; nats_stop_all; tl_cleanup' EXIT

ship_one_node
mkdir -p "$MNT/t/0"
nums 1 1000 >>"$MNT/t/0/current"

"$TLOGCTL" ship --nats "$NATS_URL_1" --stream S "$MNT" 2>"$TMP/ship.err" &
SHPID=$!
cursor() { gx user.cursor.ship "$MNT/t/0" 2>/dev/null; }
at() { [ "$(cursor)" = "$1" ]; }
tl_check "the first 1000 records are shipped" tl_wait_for 60 at 1000

nats_pause 1
# Enough to fill the socket's buffers: the shipper blocks in send(2).
nums 1001 100000 >>"$MNT/t/0/current"
sent() { [ "$(gx user.tlog.end_offset "$MNT/t/0")" = 100000 ]; }
tl_check "100000 records in the partition" tl_wait_for 60 sent
# Megabytes wait in the shipper's socket: its buffer is full, so a
# publish, a flush or a close waits for room as long as it is frozen.
queued() {
	ss -tnpH state established 2>/dev/null |
	    awk -v p="pid=$SHPID," 'index($0, p) && $2 > 1000000 { f = 1 }
	    END { exit !f }'
}
tl_check "the shipper's socket fills up" tl_wait_for 60 queued
kill -TERM "$SHPID"
gone() { ! kill -0 "$SHPID" 2>/dev/null; }
t0=$(now_ms)
if tl_wait_for 20 gone; then
	tl_ok "SIGTERM ends the shipper though the server does not answer"
	wait "$SHPID"
	tl_is "it exits 0" 0 "$?"
else
	tl_not_ok "SIGTERM ends the shipper though the server does not answer" \
	    "still running 20 s after SIGTERM"
	kill -9 "$SHPID"
	wait "$SHPID"
fi
tl_diag "exited $(($(now_ms) - t0)) ms after SIGTERM"
tl_is "its cursor stays where the server last acknowledged" 1000 "$(cursor)"
sed "s/^/# /" "$TMP/ship.err"

nats_resume 1
tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
