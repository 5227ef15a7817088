#!/bin/sh
# tlogctl_status.sh - `tlogctl status [--topics] [--bytes] [--json]
# [PATH...]` on a mount with two topics, partitions of known records and
# sizes, cursors and a retention: the table, its alignment and its total
# line; --topics sums; --bytes exact sizes; --json one valid object per
# line, its numbers those of the mount's attributes, its strings escaped;
# REC/S from the records of the last minute; every tlogfs mount when no
# PATH is given, with a MOUNT column, and a mount point with a space
# (octal in /proc/mounts); a partition removed while the table is made
# left out, without a word; a PATH outside a tlogfs mount, or in one but
# no root, topic or partition: exit 1, one line, nothing on stdout;
# usage errors: exit 2, one line.
#
# The test build of tlogctl takes the moment the table is of from
# TLOGCTL_TEST_NOW, so that every age and rate is known here; it waits
# at TLOGCTL_TEST_STATUS_GATE between listing and reading; and it reads
# TLOGCTL_TEST_MOUNTS instead of /proc/mounts, so that "every mount" is
# this test's, not those of the tests running beside it. How fast status
# is on many partitions is a benchmark's question, not this test's.
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
HOOKED=$TL_BUILD/tests/hooks/tlogctl

# The mount point holds a quote and a letter outside ASCII: --json
# escapes the one and keeps the other.
MNT="$TMP/mnt\"é"
mkdir "$MNT"
JMNT="$TMP/mnt\\\"é"
tl_mount

# ---- the data: every number below follows from it ----
# orders (retention.ms 1h): 0 holds 1000 records of 7 bytes; 1 holds 100,
# sealed, then 50 in a second segment; 10 none. web/0 (7d) holds 3000
# records of 1000 bytes. Cursors: billing on orders/0 at 400 and on
# orders/1 at its end, audit on web/0 at 0.
mkdir -p "$MNT/orders/0" "$MNT/orders/1" "$MNT/orders/10" "$MNT/web/0"
setfattr -n user.retention.ms -v 1h "$MNT/orders"
nums 1 1000 >>"$MNT/orders/0/current"
sleep 0.01
yes "$(printf '%0999d' 0)" | head -n 3000 >>"$MNT/web/0/current"
nums 1 100 >>"$MNT/orders/1/current"
setfattr -n user.seal -v 1 "$MNT/orders/1/current"
sleep 0.05
nums 101 150 >>"$MNT/orders/1/current"
setfattr -n user.cursor.billing -v 400 "$MNT/orders/0"
setfattr -n user.cursor.billing -v 150 "$MNT/orders/1"
setfattr -n user.cursor.audit -v 0 "$MNT/web/0"
tl_is "the data: records, bytes and segments as planned" \
    "1000 7000 1|150 1050 2|0 0 0|3000 3000000 1" \
    "$(for p in orders/0 orders/1 orders/10 web/0; do
	echo "$(gx user.tlog.end_offset "$MNT/$p") $(gx user.tlog.bytes "$MNT/$p") $(gx user.tlog.segments "$MNT/$p")"
    done | paste -sd '|')"

T0=$(gx user.tlog.oldest_ts "$MNT/orders/0")
E0=$(gx user.tlog.next_expiry "$MNT/orders/0")
T1=$(gx user.tlog.oldest_ts "$MNT/orders/1")
E1=$(gx user.tlog.next_expiry "$MNT/orders/1")
TW=$(gx user.tlog.oldest_ts "$MNT/web/0")
EW=$(gx user.tlog.next_expiry "$MNT/web/0")

# ---- now, for the plain build: every record is of the last minute ----
# (so no look-up: all of a partition counts), if this ran fast enough.
out=$("$TLOGCTL" status --json "$MNT/orders/0" "$MNT/orders/1" 2>&1)
if [ $(($(now_ms) - T0)) -lt 50000 ]; then
	tl_is "records of the last minute: all of them" "1000 16.667|150 2.500" \
	    "$(echo "$out" | sed 's/.*"records_1m":\([0-9]*\),"rate":\([0-9.]*\),.*/\1 \2/' | paste -sd '|')"
else
	tl_ok "records of the last minute # SKIP the test ran slower than 50 s"
fi

# ---- 3 days 4 hours after the first record ----
NOW=$((T0 + 273600000))
st() { env TLOGCTL_TEST_NOW="$NOW" "$HOOKED" status "$@"; }

st "$MNT" >"$TMP/out" 2>"$TMP/err"
tl_is "status MOUNT: exit 0" 0 $?
tl_is "status MOUNT: nothing on stderr" "" "$(cat "$TMP/err")"
cat >"$TMP/want" <<'EOF'
TOPIC   PARTITION  RECORDS  BYTES  DISK  SEGS  OLDEST  EXPIRES  REC/S  CURSORS
orders  0             1000   6.9K  7.0K     1    3d4h      now      0  billing=600
orders  1              150   1.1K  1.5K     2    3d3h      now      0  billing=0
orders  10               0      0     0     0       -        -      0  -
web     0             3000   2.9M  2.9M     1    3d3h    3d20h      0  audit=3000
total   -             4150   2.9M  2.9M     4    3d4h      now      0  audit=3000,billing=600
EOF
tl_is "the table: its rows, aligned, and the total line" "$(cat "$TMP/want")" \
    "$(cat "$TMP/out")"
tl_is "a topic, a partition and the mount again: each partition once" \
    "$(cat "$TMP/want")" "$(st "$MNT/orders" "$MNT/web/0" "$MNT/orders/1" "$MNT")"

cat >"$TMP/want" <<'EOF'
TOPIC   PARTITION  RECORDS    BYTES     DISK  SEGS  OLDEST  EXPIRES  REC/S  CURSORS
orders  0             1000     7000     7168     1    3d4h      now      0  billing=600
orders  1              150     1050     1536     2    3d3h      now      0  billing=0
orders  10               0        0        0     0       -        -      0  -
web     0             3000  3000000  3000320     1    3d3h    3d20h      0  audit=3000
total   -             4150  3008050  3009024     4    3d4h      now      0  audit=3000,billing=600
EOF
tl_is "--bytes: exact sizes" "$(cat "$TMP/want")" "$(st --bytes "$MNT")"

cat >"$TMP/want" <<'EOF'
TOPIC   PARTS  RECORDS  BYTES  DISK  SEGS  OLDEST  EXPIRES  REC/S  CURSORS
orders      3     1150   7.9K  8.5K     3    3d4h      now      0  billing=600
web         1     3000   2.9M  2.9M     1    3d3h    3d20h      0  audit=3000
total       4     4150   2.9M  2.9M     4    3d4h      now      0  audit=3000,billing=600
EOF
tl_is "--topics: a row per topic, its partitions summed" "$(cat "$TMP/want")" \
    "$(st --topics "$MNT")"
tl_is "--topics --bytes on a topic" \
    "TOPIC PARTS RECORDS BYTES DISK SEGS OLDEST EXPIRES REC/S CURSORS|orders 3 1150 8050 8704 3 3d4h now 0 billing=600|total 3 1150 8050 8704 3 3d4h now 0 billing=600" \
    "$(st --topics --bytes "$MNT/orders" | awk '{ $1 = $1; print }' | paste -sd '|')"

# ---- --json ----
# What a line may be: an object of strings, numbers, null and the
# cursors' object, as status writes them (JSON's grammar for those).
S='"([^"\\[:cntrl:]]|\\["\\/bfnrt]|\\u[0-9a-f]{4})*"'
N='-?(0|[1-9][0-9]*)(\.[0-9]+)?'
V="($S|$N|null|\\{($S:\\{\"lag\":$N\\}(,$S:\\{\"lag\":$N\\})*)?\\})"
json_ok() { grep -Evx "\\{$S:$V(,$S:$V)*\\}" "$1"; }

st --json "$MNT" >"$TMP/out" 2>"$TMP/err"
tl_is "--json: exit 0" 0 $?
tl_is "--json: nothing on stderr" "" "$(cat "$TMP/err")"
tl_is "--json: every line one JSON object" "" "$(json_ok "$TMP/out")"
cat >"$TMP/want" <<EOF
{"mount":"$JMNT","topic":"orders","partition":"0","start_offset":0,"end_offset":1000,"records":1000,"bytes":7000,"disk_bytes":7168,"segments":1,"oldest_ts":$T0,"next_expiry":$E0,"records_1m":0,"rate":0.000,"cursors":{"billing":{"lag":600}},"time":$NOW}
{"mount":"$JMNT","topic":"orders","partition":"1","start_offset":0,"end_offset":150,"records":150,"bytes":1050,"disk_bytes":1536,"segments":2,"oldest_ts":$T1,"next_expiry":$E1,"records_1m":0,"rate":0.000,"cursors":{"billing":{"lag":0}},"time":$NOW}
{"mount":"$JMNT","topic":"orders","partition":"10","start_offset":0,"end_offset":0,"records":0,"bytes":0,"disk_bytes":0,"segments":0,"oldest_ts":null,"next_expiry":null,"records_1m":0,"rate":0.000,"cursors":{},"time":$NOW}
{"mount":"$JMNT","topic":"web","partition":"0","start_offset":0,"end_offset":3000,"records":3000,"bytes":3000000,"disk_bytes":3000320,"segments":1,"oldest_ts":$TW,"next_expiry":$EW,"records_1m":0,"rate":0.000,"cursors":{"audit":{"lag":3000}},"time":$NOW}
EOF
tl_is "--json: a row per partition, the mount's numbers, no total line" \
    "$(cat "$TMP/want")" "$(cat "$TMP/out")"
tl_is "--json --bytes: the same" "$(cat "$TMP/want")" "$(st --json --bytes "$MNT")"
EMIN=$((E0 < E1 ? E0 : E1))
cat >"$TMP/want" <<EOF
{"mount":"$JMNT","topic":"orders","partitions":3,"records":1150,"bytes":8050,"disk_bytes":8704,"segments":3,"oldest_ts":$T0,"next_expiry":$EMIN,"records_1m":0,"rate":0.000,"cursors":{"billing":{"lag":600}},"time":$NOW}
{"mount":"$JMNT","topic":"web","partitions":1,"records":3000,"bytes":3000000,"disk_bytes":3000320,"segments":1,"oldest_ts":$TW,"next_expiry":$EW,"records_1m":0,"rate":0.000,"cursors":{"audit":{"lag":3000}},"time":$NOW}
EOF
st --json --topics "$MNT" >"$TMP/out"
tl_is "--json --topics: a row per topic, summed" "$(cat "$TMP/want")" "$(cat "$TMP/out")"
tl_is "--json --topics: every line one JSON object" "" "$(json_ok "$TMP/out")"

# ---- REC/S: a minute before now falls between orders/1's segments ----
# The look-up (user.tlog.since) answers the second segment: its 50
# records are the last minute's; every other partition's are older.
MAXA=$(gx user.tlog.max_ts "$MNT/orders/1/00000000000000000000.log")
FIRSTB=$(gx user.tlog.first_ts "$MNT/orders/1/current")
tl_check "the two segments of orders/1 are 2 ms apart or more" \
    test $((FIRSTB - MAXA)) -ge 2
NOW=$(((MAXA + FIRSTB) / 2 + 60000))
tl_is "--json: records_1m and rate" "0 0.000|50 0.833|0 0.000|0 0.000" \
    "$(st --json "$MNT" | sed 's/.*"records_1m":\([0-9]*\),"rate":\([0-9.]*\),.*/\1 \2/' | paste -sd '|')"
tl_is "the table: REC/S" "REC/S|0|0.83|0|0|0.83" \
    "$(st "$MNT" | awk '{ print $(NF - 1) }' | paste -sd '|')"

# ---- a partition removed while the table is made ----
# status lists orders/gone, waits at the gate, then reads: the
# partition is gone by then, and left out without a word.
NOW=$((T0 + 273600000))
mkdir "$MNT/orders/gone"
env TLOGCTL_TEST_STATUS_GATE="$TMP/gate" TLOGCTL_TEST_NOW="$NOW" \
    "$HOOKED" status "$MNT" >"$TMP/out" 2>"$TMP/err" &
GP=$!
tl_check "status listed the partitions and waits" \
    tl_wait_for 10 test -e "$TMP/gate.listed"
rmdir "$MNT/orders/gone"
: >"$TMP/gate"
wait $GP
tl_is "a partition removed while listed: exit 0" 0 $?
tl_is "a partition removed while listed: nothing on stderr" "" "$(cat "$TMP/err")"
tl_is "a partition removed while listed: left out" \
    "$(st "$MNT")" "$(cat "$TMP/out")"

# ---- every tlogfs mount: a second one, at a path with a space ----
M2="$TMP/m 2"
mkdir -p "$TMP/store2" "$M2"
"$TLOGFS" "$TMP/store2" "$M2" -f 2>>"$ERR" &
D2=$!
trap '"$FUSERMOUNT" -u "$M2" 2>/dev/null; tl_cleanup' EXIT
tl_check "a second mount at a path with a space" \
    tl_wait_for 10 mountpoint -q "$M2"
mkdir -p "$M2/logs/0"
echo one >>"$M2/logs/0/current"
tl_is "a PATH with a space, found in /proc/mounts (octal there)" \
    "\"mount\":\"$M2\",\"topic\":\"logs\",\"partition\":\"0\"" \
    "$("$TLOGCTL" status --json "$M2/logs/0" | grep -o '"mount":[^,]*,[^,]*,[^,]*')"
# The mounts the test build reads instead of /proc/mounts: these two
# (as /proc/mounts writes them), and another file system's.
{
	grep " $TMP/.* fuse.tlogfs " /proc/self/mounts
	echo "tmpfs $TMP tmpfs rw 0 0"
} >"$TMP/mounts"
tl_is "the mounts file: the two mounts" 2 "$(grep -c fuse.tlogfs "$TMP/mounts")"
TLOGCTL_TEST_MOUNTS=$TMP/mounts
export TLOGCTL_TEST_MOUNTS
st --topics >"$TMP/out" 2>"$TMP/err"
tl_is "no PATH: exit 0" 0 $?
tl_is "no PATH: nothing on stderr" "" "$(cat "$TMP/err")"
tl_is "no PATH: every tlogfs mount, a MOUNT column, sorted by it" \
    "MOUNT|$M2|$MNT|$MNT|total" \
    "$(sed 's/  .*//' "$TMP/out" | paste -sd '|')"
tl_is "no PATH: the topics and the total" \
    "TOPIC PARTS RECORDS|logs 1 1|orders 3 1150|web 1 3000|- 5 4151" \
    "$(sed -e "s#^MOUNT *##" -e "s#^$M2 *##" -e "s#^$MNT *##" \
    -e "s#^total *##" "$TMP/out" | awk '{ print $1, $2, $3 }' | paste -sd '|')"
st --json >"$TMP/out"
tl_is "no PATH, --json: the rows of both mounts" \
    "$M2 logs 0|$JMNT orders 0|$JMNT orders 1|$JMNT orders 10|$JMNT web 0" \
    "$(sed 's/^{"mount":"\(.*\)","topic":"\([^"]*\)","partition":"\([^"]*\)".*/\1 \2 \3/' "$TMP/out" | paste -sd '|')"
echo "tmpfs $TMP tmpfs rw 0 0" >"$TMP/mounts"
st >"$TMP/out" 2>"$TMP/err"
tl_is "no tlogfs mount: exit 1" 1 $?
tl_is "no tlogfs mount: one line on stderr, nothing on stdout" "1|" \
    "$(wc -l <"$TMP/err")|$(cat "$TMP/out")"
unset TLOGCTL_TEST_MOUNTS
"$FUSERMOUNT" -u "$M2"
wait $D2
tl_is "the second mount: unmounted, exit 0" 0 $?
trap tl_cleanup EXIT

# ---- errors: exit 1, one line on stderr, nothing on stdout ----
run_err() {
	local name=$1
	shift
	"$TLOGCTL" status "$@" >"$TMP/e.out" 2>"$TMP/e.err"
	tl_is "$name: exit 1" 1 $?
	tl_is "$name: one line on stderr, nothing on stdout" "1|" \
	    "$(wc -l <"$TMP/e.err")|$(cat "$TMP/e.out")"
}
run_err "a directory in no tlogfs mount" "$TMP"
run_err "a missing path" "$MNT/nope"
run_err "a segment, not a partition" "$MNT/orders/0/current"
run_err "the mount's .tlogfs" "$MNT/.tlogfs"
run_err "a good path and a bad one" "$MNT" "$TMP"

# ---- usage errors: exit 2, one line naming status's usage ----
usage_err() {
	local name=$1
	shift
	"$TLOGCTL" "$@" >"$TMP/u.out" 2>"$TMP/u.err"
	tl_is "$name: exit 2" 2 $?
	tl_is "$name: one line on stderr, with the usage of status" "1 1" \
	    "$(wc -l <"$TMP/u.err") $(grep -c '^tlogctl: .*; usage: tlogctl status \[--topics\] \[--bytes\] \[--json\] \[PATH\.\.\.\]$' "$TMP/u.err")"
	tl_is "$name: nothing on stdout" "" "$(cat "$TMP/u.out")"
}
usage_err "an unknown option" status --frob "$MNT"
usage_err "an unknown short option" status -x
usage_err "an option with a value it does not take" status --json=1
usage_err "--help with an argument" status --help "$MNT"
out=$("$TLOGCTL" status --help 2>"$TMP/u.err")
tl_is "status --help: exit 0" 0 $?
tl_check "status --help: the usage on stdout" \
    sh -c "echo '$out' | grep -q '^ *tlogctl status \[--topics\] \[--bytes\] \[--json\] \[PATH...\]$'"
tl_is "status --help: nothing on stderr" "" "$(cat "$TMP/u.err")"

tl_umount
tl_is "the daemon exits 0" 0 $?
tl_done
