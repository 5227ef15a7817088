#!/bin/sh
# ship_follow.sh - tlogctl ship follows without a poll interval
# (doc/shipping.md, Following): caught up, its main thread waits in
# epoll and is not woken while nothing is written; an append wakes it
# (the record reaches the stream, the thread having slept meanwhile); a
# partition made after the start is found (inotify) and shipped; one
# removed while followed is dropped with one line, its directory let
# go, and the others go on.
. "${srcdir:-.}/tests/integration/shiplib.sh"
trap 'nats_stop_all; tl_cleanup' EXIT

ship_one_node
msgs() { "$JSPROBE" msgs "$NATS_URL_1" F 2>/dev/null || echo 0; }
has() { [ "$(msgs)" = "$1" ]; }
cursor() { gx user.cursor.ship "$MNT/$1" 2>/dev/null; }
at() { [ "$(cursor "$1")" = "$2" ]; }

mkdir -p "$MNT/f/0" "$MNT/f/1"
nums 1 100 >>"$MNT/f/0/current"
nums 1 100 >>"$MNT/f/1/current"
"$TLOGCTL" ship --nats "$NATS_URL_1" --stream F "$MNT/f" 2>"$TMP/ship.err" &
SHPID=$!
tl_check "200 records shipped" tl_wait_for 60 has 200
tl_check "the cursors are committed" tl_wait_for 30 at f/1 100

# The main thread (its task has the process's id): its voluntary
# context switches, and whether it sleeps in epoll_wait.
switches() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$SHPID/task/$SHPID/status"; }
in_epoll() { grep -q epoll_wait "/proc/$SHPID/task/$SHPID/wchan" 2>/dev/null; }
tl_check "caught up, the main thread waits in epoll_wait" \
    tl_wait_for 10 in_epoll
# What it published is answered; then a second with nothing written.
s0=$(switches)
sleep 1
s1=$(switches)
tl_is "idle for a second: the main thread is not woken (was 10 a second)" \
    0 $((s1 - s0))
echo 101 >>"$MNT/f/0/current"
tl_check "an append is shipped" tl_wait_for 30 has 201
tl_check "the main thread waits again" tl_wait_for 10 in_epoll
tl_diag "the main thread's switches for one append (its requests to the mount included): $(($(switches) - s1))"

# A partition made after the start: inotify says so.
mkdir "$MNT/f/2"
nums 1 50 >>"$MNT/f/2/current"
tl_check "a partition made after the start is shipped" tl_wait_for 30 has 251
tl_check "its cursor is committed" tl_wait_for 30 at f/2 50

# Removed while followed: woken (its poll hangs up), dropped with one
# line, its directory not held open; the others go on.
rm -r "$MNT/f/1"
said() { grep -q "f/1: renamed or removed while shipped" "$TMP/ship.err"; }
tl_check "a removed partition: one line" tl_wait_for 30 said
no_deleted() { ! ls -l "/proc/$SHPID/fd" 2>/dev/null | grep -q '(deleted)'; }
tl_check "its directory is not held open" tl_wait_for 30 no_deleted
echo 102 >>"$MNT/f/0/current"
tl_check "the others are still shipped" tl_wait_for 30 has 252
tl_check "the shipper still runs" kill -0 "$SHPID"

kill -TERM "$SHPID"
wait "$SHPID"
tl_is "SIGTERM: exit 0" 0 "$?"
tl_is "the cursor of f/0 is at its end" 102 "$(cursor f/0)"
nums 1 100 >"$TMP/f0"
printf '101\n102\n' >>"$TMP/f0"
nums 1 100 >"$TMP/f1"
nums 1 50 >"$TMP/f2"
tl_check "the stream holds each record once, in order" \
    "$JSPROBE" check "$NATS_URL_1" F "tlog.f.0=$TMP/f0" "tlog.f.1=$TMP/f1" \
    "tlog.f.2=$TMP/f2"
tl_is "no line but the stream's creation and the removal" 2 \
    "$(wc -l <"$TMP/ship.err")"
sed 's/^/# /' "$TMP/ship.err"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
