#!/bin/sh
# ship_rename.sh - tlogctl ship and a partition's identity
# (doc/shipping.md, Identity): a partition removed and made again under
# its name is another partition, whose records JetStream's duplicate
# window never drops as the old one's; a partition renamed while shipped
# goes on under its new subject, and nothing of it is lost or doubled.
# Each case has its own stream (and subject prefix) so counts are exact.
. "${srcdir:-.}/tests/integration/shiplib.sh"
trap 'nats_stop_all; tl_cleanup' EXIT

ship_one_node
msgs() { "$JSPROBE" msgs "$NATS_URL_1" "$1" 2>/dev/null || echo 0; }
has() { [ "$(msgs "$1")" = "$2" ]; }
cursor() { gx user.cursor.ship "$MNT/$1" 2>/dev/null; }
at() { [ "$(cursor "$1")" = "$2" ]; }
ship_once() {
	"$TLOGCTL" ship --nats "$NATS_URL_1" --stream "$1" \
	    --subject-prefix "$2" --once "$MNT/$3" 2>>"$TMP/ship.err"
}

# ---- made again, shipped once at a time ----
mkdir -p "$MNT/a/0"
nums 1 10 >>"$MNT/a/0/current"
tl_is "the partition has an identity" 32 \
    "$(gx user.tlog.partition_id "$MNT/a/0" | tr -dc 0-9a-f | wc -c)"
ID1=$(gx user.tlog.partition_id "$MNT/a/0")
tl_is "ship --once" 0 "$(ship_once A a a; echo $?)"
rm -r "$MNT/a/0" && mkdir "$MNT/a/0"
nums 101 120 >>"$MNT/a/0/current"
ID2=$(gx user.tlog.partition_id "$MNT/a/0")
tl_check "made again, it has another identity" [ "$ID1" != "$ID2" ]
tl_is "ship --once again" 0 "$(ship_once A a a; echo $?)"
nums 1 10 >"$TMP/a_old"
nums 101 120 >"$TMP/a_new"
tl_check "stream A holds the 10 old and then the 20 new records" \
    "$JSPROBE" check "$NATS_URL_1" A "a.a.0=$TMP/a_old" "a.a.0=$TMP/a_new"
tl_is "the new partition's cursor is at its end" 20 "$(cursor a/0)"

# ---- made again while the shipper follows ----
mkdir -p "$MNT/b/0"
nums 1 5000 >>"$MNT/b/0/current"
"$TLOGCTL" ship --nats "$NATS_URL_1" --stream B --subject-prefix b \
    "$MNT/b" 2>>"$TMP/ship.err" &
SHPID=$!
tl_check "5000 records shipped" tl_wait_for 60 at b/0 5000
rm -r "$MNT/b/0" && mkdir "$MNT/b/0"
nums 10001 18000 >>"$MNT/b/0/current"
tl_check "the new partition is shipped to its end" tl_wait_for 60 at b/0 8000
tl_check "the stream holds 5000 + 8000 records" tl_wait_for 30 has B 13000

# ---- renamed while the shipper follows, a new one under the old name ----
mkdir -p "$MNT/b/1"
nums 1 5000 >>"$MNT/b/1/current"
tl_check "5000 records of b/1 shipped" tl_wait_for 60 at b/1 5000
mv "$MNT/b/1" "$MNT/b/old" && mkdir "$MNT/b/1"
nums 5001 6000 >>"$MNT/b/old/current"
nums 20001 28000 >>"$MNT/b/1/current"
tl_check "the renamed partition is shipped to its end" \
    tl_wait_for 60 at b/old 6000
tl_check "the new b/1 is shipped to its end" tl_wait_for 60 at b/1 8000
tl_check "the stream holds 13000 + 5000 + 1000 + 8000 records" \
    tl_wait_for 30 has B 27000
# A partition removed for good: its directory is not held open.
mkdir -p "$MNT/b/2"
nums 1 100 >>"$MNT/b/2/current"
tl_check "b/2 shipped" tl_wait_for 60 at b/2 100
rm -r "$MNT/b/2"
no_deleted() {
	! ls -l "/proc/$SHPID/fd" 2>/dev/null | grep -q '(deleted)'
}
tl_check "the shipper holds nothing removed open" tl_wait_for 30 no_deleted
kill -TERM "$SHPID"
wait "$SHPID"
tl_is "SIGTERM: exit 0" 0 "$?"
# Every record once, in offset order, under the subject of the name its
# partition had when it was appended: b.b.0 and b.b.1 hold their old
# partition's records, then the new one's; b.b.old what b/1 got after
# its rename, as offsets 5000 on.
nums 1 5000 >"$TMP/old"
nums 10001 18000 >"$TMP/new0"
nums 20001 28000 >"$TMP/new1"
nums 5001 6000 >"$TMP/renamed"
nums 1 100 >"$TMP/b2"
tl_check "stream B: each subject holds its records once, in order" \
    "$JSPROBE" check "$NATS_URL_1" B "b.b.0=$TMP/old" "b.b.0=$TMP/new0" \
    "b.b.1=$TMP/old" "b.b.1=$TMP/new1" "b.b.old=$TMP/renamed@5000" \
    "b.b.2=$TMP/b2"

# ---- removed and made again between an acknowledgment and its commit
# (the commit waits on a gate): the old partition's cursor never lands
# on the new one ----
mkdir -p "$MNT/c/0"
nums 1 5000 >>"$MNT/c/0/current"
TLOGCTL_TEST_COMMIT_GATE=$TMP/gate "$HOOKED_TLOGCTL" ship --nats "$NATS_URL_1" \
    --stream C --subject-prefix c --once "$MNT/c" 2>>"$TMP/ship.err" &
SHPID=$!
tl_check "5000 records in the stream" tl_wait_for 60 has C 5000
rm -r "$MNT/c/0" && mkdir "$MNT/c/0"
nums 10001 18000 >>"$MNT/c/0/current"
touch "$TMP/gate"
wait "$SHPID"
tl_is "the shipper ends: exit 0" 0 "$?"
tl_is "the new partition has no cursor" "" "$(cursor c/0)"
tl_is "ship --once again" 0 "$(ship_once C c c; echo $?)"
tl_check "stream C holds the 5000 old and then the 8000 new records" \
    "$JSPROBE" check "$NATS_URL_1" C "c.c.0=$TMP/old" "c.c.0=$TMP/new0"

# ---- a resync in --once after the partitions reached their end: the
# chain of expected ids is broken on purpose at the 150th message, and
# the first answer held until ship --once has published everything and
# found each partition caught up (to look again 100 ms later), so it
# learns of the failure only then; every later message failed, and
# every partition must still be shipped before it exits (without the
# fix, those it had found caught up were left unshipped, exit 0) ----
for i in 0 1 2 3 4 5 6 7; do
	mkdir -p "$MNT/e/$i"
	nums 1 100 >>"$MNT/e/$i/current"
done
TLOGCTL_TEST_BREAK_CHAIN=150 TLOGCTL_TEST_ACK_HOLD=1 \
    "$HOOKED_TLOGCTL" ship --nats "$NATS_URL_1" --stream E --subject-prefix e \
    --once "$MNT/e" 2>"$TMP/e.err"
tl_is "--once with a resync: exit 0" 0 "$?"
tl_is "it resynced" 1 \
    "$(grep -c 'resending from what the stream holds' "$TMP/e.err")"
nums 1 100 >"$TMP/e100"
tl_check "--once with a resync: every partition is in the stream" \
    "$JSPROBE" check "$NATS_URL_1" E "e.e.0=$TMP/e100" "e.e.1=$TMP/e100" \
    "e.e.2=$TMP/e100" "e.e.3=$TMP/e100" "e.e.4=$TMP/e100" \
    "e.e.5=$TMP/e100" "e.e.6=$TMP/e100" "e.e.7=$TMP/e100"
cat "$TMP/e.err" >>"$TMP/ship.err"

# ---- records without newline among lines (record.max.bytes 8 cuts the
# long lines; the last record is bytes held until close): each is one
# message, and the lines around them are shipped in bulk (a bisection
# over the seek attribute finds where lines stop being records) ----
mkdir -p "$MNT/k/0"
setfattr -n user.record.max.bytes -v 8 "$MNT/k/0"
awk 'BEGIN { for (i = 1; i <= 3000; i++)
	if (i == 2 || i == 1500 || i == 2999) printf "L%06dxyzw\n", i
	else printf "%05d\n", i }' >>"$MNT/k/0/current"
printf 'tail' >>"$MNT/k/0/current"
awk 'BEGIN { for (i = 1; i <= 3000; i++)
	if (i == 2 || i == 1500 || i == 2999) printf "L%06dx\nyzw\n", i
	else printf "%05d\n", i; print "tail" }' >"$TMP/k"
held() { [ "$(gx user.tlog.end_offset "$MNT/k/0")" = 3004 ]; }
tl_check "3004 records, four without newline" tl_wait_for 10 held
tl_is "ship --once" 0 "$(ship_once K k k; echo $?)"
tl_check "stream K: each record one message, once, in order" \
    "$JSPROBE" check "$NATS_URL_1" K "k.k.0=$TMP/k"

# ---- an empty partition gets no cursor: a cursor at 0 says nothing,
# and would keep partition.cleanup.ms from removing it ----
mkdir -p "$MNT/g/0"
tl_is "ship --once of an empty partition" 0 "$(ship_once G g g; echo $?)"
tl_is "it gets no cursor" "" "$(cursor g/0)"

# ---- the daemon restarted under a following shipper (killed, the mount
# made again): taken up again at once, from the cursor ----
mkdir -p "$MNT/h/0"
nums 1 1000 >>"$MNT/h/0/current"
"$TLOGCTL" ship --nats "$NATS_URL_1" --stream H --subject-prefix h \
    "$MNT/h" 2>"$TMP/h.err" &
SHPID=$!
tl_check "1000 records shipped" tl_wait_for 60 at h/0 1000
# The shipper holds the mount busy: the daemon is killed, the shipper
# finds the mount dead, the dead mount goes lazily, and a new daemon
# mounts the store. The daemon is stopped first, until a request of the
# shipper waits on it: the kill then fails that request with
# ECONNABORTED (every later one gets ENOTCONN), which must count as a
# dead mount too, not as the partition failing. A shipper that is
# caught up asks the mount nothing (it waits in epoll): it is stopped
# while it reads a backlog (19,000 records: a window and more).
nums 1001 20000 >>"$MNT/h/0/current"
kill -STOP "$DPID"
waits_on_fuse() {
	cat /proc/"$SHPID"/task/*/wchan 2>/dev/null | grep -q request_wait_answer
}
tl_check "a request of the shipper waits on the stopped daemon" \
    tl_wait_for 10 waits_on_fuse
tl_kill KILL 2>/dev/null
dead_seen() { grep -q "^tlogctl: ship: $MNT: Transport endpoint is not connected; shipping from it waits" "$TMP/h.err"; }
tl_check "the shipper finds the mount dead" tl_wait_for 30 dead_seen
"$FUSERMOUNT" -u -z "$MNT"
tl_mount
nums 20001 21000 >>"$MNT/h/0/current"
tl_check "the mount is back: shipped on within 20 s" tl_wait_for 20 at h/0 21000
kill -TERM "$SHPID"
wait "$SHPID"
tl_is "SIGTERM: exit 0" 0 "$?"
tl_is "one line says the mount came back, one that it was gone, no other" \
    "1 1 2" "$(grep -c "$MNT: mounted again" "$TMP/h.err") $(grep -c "not connected" "$TMP/h.err") $(grep -vc ': created' "$TMP/h.err")"
cat "$TMP/h.err" >>"$TMP/ship.err"
nums 1 21000 >"$TMP/h21000"
tl_check "stream H holds each record once, in order" \
    "$JSPROBE" check "$NATS_URL_1" H "h.h.0=$TMP/h21000"

# ---- a partition named by its own path, its daemon gone: one line for
# the mount, none per retry (there was one every 0.1 s) ----
"$TLOGCTL" ship --nats "$NATS_URL_1" --stream H --subject-prefix h \
    "$MNT/h/0" 2>"$TMP/p.err" &
SHPID=$!
holds_part() { ls -l /proc/"$SHPID"/fd 2>/dev/null | grep -q "$MNT/h/0"; }
tl_check "the shipper holds the partition" tl_wait_for 30 holds_part
tl_kill KILL 2>/dev/null
p_dead() { grep -q "$MNT: Transport endpoint is not connected; shipping from it waits" "$TMP/p.err"; }
tl_check "the shipper finds the mount dead" tl_wait_for 30 p_dead
# Ten retries' worth of time.
sleep 1
tl_is "one line for the dead mount, none per partition retry" "1 0" \
    "$(grep -c "not connected" "$TMP/p.err") $(grep -c "not shipped for now" "$TMP/p.err")"
kill -TERM "$SHPID"
wait "$SHPID"
"$FUSERMOUNT" -u -z "$MNT"
tl_mount

# ---- shipped from a read-only mount (no identity: messages named after
# the partition's names, no cursor committed), then from a read-write
# one (an identity now): the stream's last message, in the older form,
# still counts as this partition's, and nothing is sent twice ----
mkdir -p "$MNT/f/0"
nums 1 100 >>"$MNT/f/0/current"
tl_check "unmount" tl_umount
tl_mount -o ro
"$TLOGCTL" ship --nats "$NATS_URL_1" --stream F --subject-prefix f \
    --once "$MNT/f" 2>"$TMP/f.err"
tl_is "ship --once from a read-only mount: exit 0" 0 "$?"
tl_is "one line: the partition has no identity" 1 \
    "$(grep -c "$MNT/f/0: the partition has no identity" "$TMP/f.err")"
cat "$TMP/f.err" >>"$TMP/ship.err"
tl_check "unmount" tl_umount
tl_mount
tl_is "ship --once from the read-write mount" 0 "$(ship_once F f f; echo $?)"
nums 1 100 >"$TMP/f100"
tl_check "stream F holds each record once" \
    "$JSPROBE" check "$NATS_URL_1" F "f.f.0=$TMP/f100"

sed "s/^/# /" "$TMP/ship.err"
tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing" \
    '^tlogfs: .*read-only'

tl_done
