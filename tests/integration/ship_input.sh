#!/bin/sh
# ship_input.sh - tlogctl ship on bad input (doc/shipping.md): a
# malformed URL, a bad stream name or option (usage, exit 2), an
# unreachable server, a stream JetStream refuses, a PATH that is no
# mount (exit 1); each one clear line on stderr.
. "${srcdir:-.}/tests/integration/shiplib.sh"
trap 'nats_stop_all; tl_cleanup' EXIT

# try NAME STATUS ERE ARGS...: tlogctl ship ARGS exits STATUS, and its
# stderr's first line matches ERE (usage errors add the usage text);
# ERE "-": stderr is empty; "!ERE": no line of stderr matches ERE. A
# failure's name carries the status and stderr's first line, which a
# summary of the run that shows only the names still shows.
try() {
	local name=$1 want=$2 ere=$3 st ok
	shift 3
	timeout 60 "$TLOGCTL" ship "$@" >"$TMP/out" 2>"$TMP/err"
	st=$?
	case $ere in
	-) [ ! -s "$TMP/err" ] ;;
	!*) ! grep -Eq -- "${ere#!}" "$TMP/err" ;;
	*) head -1 "$TMP/err" | grep -Eq -- "$ere" ;;
	esac
	ok=$?
	if [ "$st" = "$want" ] && [ "$ok" = 0 ]; then
		tl_ok "$name"
	else
		tl_not_ok "$name (status $st: $(head -1 "$TMP/err" | cut -c1-200))" \
		    "status $st (want $want)" "$(cat "$TMP/err")"
	fi
}
# one_line NAME: the last try printed exactly one line.
one_line() { tl_is "$1: one line" 1 "$(wc -l <"$TMP/err")"; }

ship_one_node
mkdir -p "$MNT/t/0"
echo x >>"$MNT/t/0/current"

try "malformed URL: usage" 2 '^tlogctl: --nats http://x: not a NATS URL.*; usage: tlogctl ship ' \
    --nats http://x "$MNT"
try "an empty URL in the list: usage" 2 'not a NATS URL' \
    --nats "$NATS_URL_1,," "$MNT"
try "a port out of range: usage" 2 'not a NATS URL' \
    --nats nats://127.0.0.1:70000 "$MNT"
try "no --nats: usage" 2 '--nats URL is needed' "$MNT"
try "no PATH: usage" 2 'no PATH' --nats "$NATS_URL_1"
try "a stream name with a dot: usage" 2 '--stream a\.b: not a JetStream stream name' \
    --nats "$NATS_URL_1" --stream a.b "$MNT"
try "--replicas 0: usage" 2 '--replicas 0: not 1 to 5' \
    --nats "$NATS_URL_1" --replicas 0 "$MNT"
try "a bad cursor name: usage" 2 '--cursor a/b: not a cursor name' \
    --nats "$NATS_URL_1" --cursor a/b "$MNT"
try "a bad subject prefix: usage" 2 '--subject-prefix a\.\.b' \
    --nats "$NATS_URL_1" --subject-prefix a..b "$MNT"
try "a PATH that is no mount" 1 "not a tlogfs mount, topic or partition" \
    --nats "$NATS_URL_1" "$TMP"
one_line "a PATH that is no mount"

# Nothing listens on port 1 (root's ports are not nats-server's).
try "an unreachable server" 1 '^tlogctl: ship: cannot connect to nats://127.0.0.1:1' \
    --nats nats://127.0.0.1:1 --once "$MNT"
one_line "an unreachable server"
try "a host that does not resolve" 1 'cannot connect to nats://no-such-host.invalid' \
    --nats nats://no-such-host.invalid:4222 --once "$MNT"
one_line "a host that does not resolve"

# JetStream refuses: 3 replicas on a single server; a stream whose
# subjects overlap another's.
try "3 replicas on one server: JetStream refuses" 1 \
    '^tlogctl: ship: stream R3: JetStream refuses it: .*replicas' \
    --nats "$NATS_URL_1" --stream R3 --replicas 3 --once "$MNT"
one_line "3 replicas on one server"
tl_check "another stream takes tlog.>" \
    "$JSPROBE" stream "$NATS_URL_1" OTHER 'tlog.>' 1
try "a stream whose subjects overlap another's: JetStream refuses" 1 \
    '^tlogctl: ship: stream NEW: JetStream refuses it: .*overlap' \
    --nats "$NATS_URL_1" --stream NEW --once "$MNT"
one_line "overlapping subjects"
# An existing stream is used as it is: OTHER takes the records, and is
# neither created nor found wanting (lines a slow server may cause, a
# retry or a reconnection, say nothing of the stream's configuration).
try "an existing stream is used as it is" 0 \
    '!stream OTHER: (created|exists and does not take)|JetStream refuses' \
    --nats "$NATS_URL_1" --stream OTHER --once "$MNT"
tl_is "it took the record" 1 "$("$JSPROBE" msgs "$NATS_URL_1" OTHER)"
# One that cannot hold the subjects: a warning, and nothing shipped.
tl_check "a stream taking other subjects" \
    "$JSPROBE" stream "$NATS_URL_1" ELSE 'else.>' 1
try "a stream that does not take the subjects: a warning" 0 \
    'stream ELSE: exists and does not take all of tlog\.>' \
    --nats "$NATS_URL_1" --stream ELSE --once "$MNT"

# max_payload counts the header block with the payload: a record whose
# message is exactly max_payload bytes is shipped, one a byte longer is
# refused with one line, exit 1. The server now takes 4096 bytes; the
# header block is "NATS/1.0\r\n", "Name: value\r\n" for each header
# ship sets, "\r\n" (doc/shipping.md; the timestamp has 13 digits).
nats_kill 1
echo "max_payload: 4096" >>"$NATS_DIR/n1.conf"
nats_start 1
tl_check "the server is back with max_payload 4096" \
    "$JSPROBE" ready "$NATS_URL_1" 30
SID=$(gx user.tlog.store_id "$MNT")
hl() { echo $((${#1} + 2 + ${#2} + 2)); }
# hdrs OFF PREV: the headers of record OFF, sent after record PREV
hdrs() {
	echo $((10 + $(hl Tlog-Offset "$1") + $(hl Tlog-Timestamp "$(now_ms)") +
	    $(hl Nats-Msg-Id "$SID/$PID/$1") + $(hl Nats-Expected-Stream MAX) +
	    $(hl Nats-Expected-Last-Msg-Id "$SID/$PID/$2") + 2))
}
# rec N: a record of N bytes
rec() { head -c "$1" /dev/zero | tr '\0' B >"$TMP/rec"; echo >>"$TMP/rec"; cat "$TMP/rec" >>"$MNT/m/0/current"; }
mkdir -p "$MNT/m/0"
echo a >>"$MNT/m/0/current"
# Nats-Msg-Id is STOREID/PARTITIONID/OFFSET (doc/shipping.md).
PID=$(gx user.tlog.partition_id "$MNT/m/0")
N=$((4096 - $(hdrs 1 0)))
rec "$N"
try "a record whose message is exactly max_payload is shipped" 0 \
    '^tlogctl: ship: stream MAX: created' \
    --nats "$NATS_URL_1" --stream MAX --subject-prefix mp --once "$MNT/m/0"
tl_is "the stream holds it" 2 "$("$JSPROBE" msgs "$NATS_URL_1" MAX)"
# Record 2 is the first of the next start (no Nats-Expected-Last-Msg-Id);
# record 3's headers are as long as record 1's.
echo b >>"$MNT/m/0/current"
rec $((N + 1))
try "one byte more is refused" 1 \
    "^tlogctl: ship: .*/m/0: record 3 is $((N + 1)) bytes, more than a NATS message takes here \\(max_payload 4096" \
    --nats "$NATS_URL_1" --stream MAX --subject-prefix mp --once "$MNT/m/0"
one_line "one byte more is refused"
tl_is "the cursor stops before it" 3 "$(gx user.cursor.ship "$MNT/m/0")"
# The line is whole with the longest names (249 bytes each): the path
# and the reason, not a line cut at some buffer's size.
TN=$(head -c 249 /dev/zero | tr '\0' t)
PN=$(head -c 249 /dev/zero | tr '\0' p)
mkdir -p "$MNT/$TN/$PN"
head -c 5000 /dev/zero | tr '\0' C >"$TMP/rec"
cat "$TMP/rec" >>"$MNT/$TN/$PN/current"
try "long names: the error line is whole" 1 \
    "^tlogctl: ship: $MNT/$TN/$PN: record 0 is 5000 bytes, more than a NATS message takes here \\(max_payload 4096, headers included\\)\$" \
    --nats "$NATS_URL_1" --stream MAX --subject-prefix mp --once "$MNT/$TN"
one_line "long names"

# A stream that cannot say where a partition stands (no quorum; a test
# hook fails the first ask as one would): a line says so, and --once
# ends once the stream answers. Before, it waited without a word.
mkdir -p "$MNT/nq/0"
echo rec >>"$MNT/nq/0/current"
st=0
TLOGCTL_TEST_NO_LAST=1 "$HOOKED_TLOGCTL" ship --nats "$NATS_URL_1" --stream NQ \
    --subject-prefix nq --once "$MNT/nq" 2>"$TMP/nq.err" || st=$?
tl_is "no answer: --once ends once the stream answers, status 0" 0 "$st"
[ "$st" = 0 ] || sed 's/^/# /' "$TMP/nq.err" | head -40
tl_is "one line says the stream cannot say where the partition stands" 1 \
    "$(grep -c "^tlogctl: ship: stream NQ: cannot say where $MNT/nq/0 stands: .*; retrying every 5 s\$" "$TMP/nq.err")"
tl_is "the record is shipped" 1 "$("$JSPROBE" msgs "$NATS_URL_1" NQ)"

# Answers whose callback still runs when the shipper closes (a test hook
# keeps each 300 ms longer, as a preempted thread would): the close waits
# for them, so nothing of libnats's is cut off at exit (under ASan, a
# leak report and status 1 without the wait).
mkdir -p "$MNT/ad/0"
printf 'a\nb\nc\n' >>"$MNT/ad/0/current"
st=0
TLOGCTL_TEST_ACK_DELAY_MS=300 "$HOOKED_TLOGCTL" ship --nats "$NATS_URL_1" \
    --stream AD --subject-prefix ad --once "$MNT/ad" 2>"$TMP/ad.err" || st=$?
tl_is "answers in their callback at exit: status 0" 0 "$st"
tl_is "answers in their callback at exit: only the stream's line" "" \
    "$(grep -v '^tlogctl: ship: stream AD: created' "$TMP/ad.err")"
tl_is "answers in their callback at exit: all shipped" 3 \
    "$("$JSPROBE" msgs "$NATS_URL_1" AD)"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
