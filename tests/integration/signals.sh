#!/bin/bash
# signals.sh - signals a daemon can receive by mistake (USR1, USR2, PIPE,
# ALRM, ...) are ignored: with a writer holding a partial line, the
# daemon survives them, keeps serving, and a later SIGTERM, SIGINT or
# SIGHUP stops it cleanly (status 0, clean mark), appending the held
# bytes.
#
# A daemon started with HUP ignored keeps it ignored, as nohup(1) asks;
# TERM and INT stop it even when it was started with them ignored (a
# shell starts its background commands with INT ignored): the INT run
# starts the daemon so.
. "${srcdir:-.}/tests/integration/lib.sh"

TL_LAUNCH="env --default-signal=HUP --default-signal=TERM"

# Not a zombie, and ls through the mount answers (a stopped daemon
# would hang it: timeout).
alive_and_serving() {
	local state
	state=$(awk '{ print $3 }' "/proc/$DPID/stat" 2>/dev/null)
	[ -n "$state" ] && [ "$state" != Z ] &&
	    timeout 5 ls "$MNT/s" >/dev/null 2>&1
}

# No signal pending for the daemon or any of its threads: each was
# ignored (discarded when sent) or has been acted on.
signals_handled() {
	cat "/proc/$DPID/status" "/proc/$DPID"/task/*/status 2>/dev/null |
	    awk '($1 == "ShdPnd:" || $1 == "SigPnd:") && $2 !~ /^0+$/ { p = 1 }
	        END { exit p }'
}

# Gone or a zombie: wait(1) returns at once.
exited() {
	local state
	state=$(awk '{ print $3 }' "/proc/$DPID/stat" 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ]
}

stop_with() {
	local sig=$1 part=$2 st=0
	tl_mount
	mkdir -p "$MNT/s/$part"
	exec 3>>"$MNT/s/$part/current"
	printf 'before\nheld over %s' "$sig" >&3
	for s in USR1 USR2 PIPE ALRM VTALRM PROF IO QUIT TSTP TTIN TTOU \
	    XCPU XFSZ PWR RTMIN RTMAX; do
		kill -s "$s" "$DPID" 2>/dev/null
	done
	tl_check "$sig run: every signal sent is handled or discarded" \
	    tl_wait_for 5 signals_handled
	tl_check "$sig run: the daemon survives USR1 USR2 PIPE ALRM ..." \
	    alive_and_serving
	tl_is "$sig run: the mount serves" "before" \
	    "$(timeout 5 cat "$MNT/s/$part/current" 2>&1)"
	kill -s "$sig" "$DPID"
	if ! tl_wait_for 20 exited; then
		tl_not_ok "SIG$sig did not stop the daemon in 20 s"
		kill -9 "$DPID"
	fi
	tl_wait_daemon || st=$?
	exec 3>&-
	tl_is "then SIG$sig stops it with status 0" 0 "$st"
	tl_check "SIG$sig: the clean mark is written" \
	    test -e "$STORE/.tlogfs/clean"
	tl_is "SIG$sig: the mount is gone" "" \
	    "$(awk -v m="$MNT" '$2 == m' /proc/self/mounts)"
}

stop_with TERM 0
TL_LAUNCH="env --ignore-signal=INT"
stop_with INT 1
TL_LAUNCH="env --default-signal=INT --default-signal=HUP"
stop_with HUP 2

tl_mount
for p in 0 1 2; do
	sig=$(echo "TERM INT HUP" | cut -d' ' -f$((p + 1)))
	tl_is "SIG$sig appended the held bytes" "before
held over $sig" "$(cat "$MNT/s/$p/current")"
done
tl_check "unmount" tl_umount

# A deletion's notice to the kernel after the request loop has ended
# waits for the directory's lock, which a request nobody will answer
# holds (here a lookup that came after the loop stopped reading: it
# holds the partition directory's lock while it waits): the stop
# must not wait for that notice, or the daemon hangs with the mount.
# TLOGFS_TEST_STOP_GATE holds the daemon between the end of the loop and
# the stop while the reaper still deletes, until the deletion's notice
# is on its way.
export TLOGFS_TEST_STOP_GATE=$TMP/stop-gate
tl_mount_hooked
unset TLOGFS_TEST_STOP_GATE
mkdir -p "$MNT/n/0"
echo old >>"$MNT/n/0/current"
setfattr -n user.seal -v 1 "$MNT/n/0"
setfattr -n user.retention.ms -v 2s "$MNT/n/0"
kill -s TERM "$DPID"
# The lookup is sent once the loop stopped reading (the hook says so): it
# never gets an answer, until the stop fails it.
loop_ended() { grep -q 'test: the request loop ended' "$ERR"; }
tl_wait_for 20 loop_ended
stat "$MNT/n/0/never-looked-up" >/dev/null 2>&1 &
LSPID=$!
notice_sent() { grep -q 'test: a notice for 0.*\.log' "$ERR"; }
tl_check "the deletion's notice is sent while the loop is over" \
    tl_wait_for 20 notice_sent
touch "$TMP/stop-gate"
if ! tl_wait_for 20 exited; then
	tl_not_ok "SIGTERM with a deletion's notice behind an unanswered request: the daemon did not stop in 20 s"
	# The lookup's wait is killable: its end frees the lock the notice
	# waits for, and the daemon can go.
	kill -9 "$LSPID" "$DPID" 2>/dev/null
	fusermount3 -uz "$MNT" 2>/dev/null
else
	tl_ok "SIGTERM with a deletion's notice behind an unanswered request: the daemon stops"
fi
st=0
tl_wait_daemon || st=$?
tl_is "and with status 0" 0 "$st"
wait "$LSPID" 2>/dev/null
tl_check "the segment was deleted while the loop was over" \
    grep -q 'reaper: 1 segments .* expired' "$ERR"
tl_stderr_clean "the daemon printed nothing but the hook's and reaper's lines" \
    'test: (the request loop ended|a notice for )|reaper: 1 segments .* expired'
tl_done
