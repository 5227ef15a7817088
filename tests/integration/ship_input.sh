#!/bin/sh
# ship_input.sh - tlogctl ship on bad input (doc/shipping.md): a
# malformed URL, a bad stream name or option (usage, exit 2), an
# unreachable server, a stream JetStream refuses, a PATH that is no
# mount (exit 1); each one clear line on stderr.
. "${srcdir:-.}/tests/integration/shiplib.sh"
trap 'nats_stop_all; tl_cleanup' EXIT

# try NAME STATUS ERE ARGS...: tlogctl ship ARGS exits STATUS, and its
# stderr's first line matches ERE (usage errors add the usage text);
# ERE "-": stderr is empty.
try() {
	local name=$1 want=$2 ere=$3 st
	shift 3
	timeout 60 "$TLOGCTL" ship "$@" >"$TMP/out" 2>"$TMP/err"
	st=$?
	if [ "$st" = "$want" ] && { [ "$ere" = - ] && [ ! -s "$TMP/err" ] ||
	    head -1 "$TMP/err" | grep -Eq -- "$ere"; }; then
		tl_ok "$name"
	else
		tl_not_ok "$name" "status $st (want $want)" "$(cat "$TMP/err")"
	fi
}
# one_line NAME: the last try printed exactly one line.
one_line() { tl_is "$1: one line" 1 "$(wc -l <"$TMP/err")"; }

if ! nats_cluster 1; then
	tl_not_ok "a JetStream server on 127.0.0.1"
	tl_done
fi
tl_mount
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
# An existing stream is used as it is: OTHER takes the records.
try "an existing stream is used as it is" 0 - \
    --nats "$NATS_URL_1" --stream OTHER --once "$MNT"
tl_is "it took the record" 1 "$("$JSPROBE" msgs "$NATS_URL_1" OTHER)"
# One that cannot hold the subjects: a warning, and nothing shipped.
tl_check "a stream taking other subjects" \
    "$JSPROBE" stream "$NATS_URL_1" ELSE 'else.>' 1
try "a stream that does not take the subjects: a warning" 0 \
    'stream ELSE: exists and does not take all of tlog\.>' \
    --nats "$NATS_URL_1" --stream ELSE --once "$MNT"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
