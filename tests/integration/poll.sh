#!/bin/sh
# poll.sh - readers wake at once (tlogfs(8), FOLLOWERS AND WRITERS): a
# reader waiting in poll(2) at the end of `current` is woken by an
# append, by a roll, and not at all while nothing is written; twenty
# waiters on one partition are all woken by one append; a waiter on an
# empty partition is woken by its first record; a waiter whose partition
# is removed (rm -r: by its segment's deletion first), or renamed over,
# is woken and hung up; one whose partition
# is renamed waits on, and the next append under the new name wakes it;
# `tlogctl read --follow` waits in poll(2), gets a line appended at once,
# and makes no request while the partition is idle; a poll found ready
# arms no wake-up, and each armed one is woken once
# (tlogfs_poll_waits_total, tlogfs_poll_wakeups_total).
. "${srcdir:-.}/tests/integration/lib.sh"

POLLWAIT=$TL_BUILD/tests/integration/helpers/pollwait
TLOGCTL=$TL_BUILD/cli/tlogctl
LONG=120000	# ms: a waiter woken by anything but its event is a failure
tl_mount
mkdir -p "$MNT/p/0" "$MNT/p/empty" "$MNT/p/gone" "$MNT/p/gone2" \
    "$MNT/p/old" "$MNT/p/victim"
for d in 0 gone2 old; do echo first >>"$MNT/p/$d/current"; done

# metric waits|wakeups: tlogfs_poll_waits_total (polls armed: found
# not ready and put on a wait list) or tlogfs_poll_wakeups_total.
metric() { awk -v m="tlogfs_poll_$1_total" '$1 == m { print $2 }' "$MNT/.tlogfs/metrics"; }

# in_poll PID: PID sleeps in poll(2) (its kernel wait channel), having
# asked the daemon and been told to wait.
in_poll() { grep -q poll "/proc/$1/wchan" 2>/dev/null; }

# waiter NAME PATH: starts pollwait on PATH in the background ($W is its
# pid, $TMP/NAME.out what it prints) and waits until it waits.
waiter() {
	"$POLLWAIT" "$2" $LONG >"$TMP/$1.out" 2>&1 &
	W=$!
	tl_wait_for 10 in_poll $W || tl_diag "$1: $(cat "$TMP/$1.out")"
}
# woken NAME DESCRIPTION WANT: the last waiter, NAME, exits, having
# printed WANT before "switches".
woken() {
	wait $W
	tl_is "$2" "$3" "$(sed 's/ switches=.*//' "$TMP/$1.out")"
}

waiter append "$MNT/p/0/current"
echo second >>"$MNT/p/0/current"
woken append "an append wakes a waiter at the end of current" in

waiter roll "$MNT/p/0/current"
setfattr -n user.seal -v 1 "$MNT/p/0/current"
woken roll "a roll (the segment sealed) wakes it" in

"$POLLWAIT" "$MNT/p/0/current" 1000 >"$TMP/idle.out"
tl_is "nothing written: the wait ends at its timeout" timeout \
    "$(sed 's/ switches=.*//' "$TMP/idle.out")"
# A poll that times out switches about 3 times (its request to the
# daemon, its sleep); each wake-up would add two more.
tl_check "and is not woken meanwhile (at most 3 switches: $(cat "$TMP/idle.out"))" \
    test "$(sed 's/.*switches=//' "$TMP/idle.out")" -le 3

pids=
for i in $(seq 1 20); do
	waiter "many$i" "$MNT/p/0/current"
	pids="$pids $W"
done
w0=$(metric wakeups)
echo third >>"$MNT/p/0/current"
wait $pids
tl_is "one append wakes all 20 waiters on the partition" 20 \
    "$(cat "$TMP"/many*.out | grep -c '^in ')"
tl_is "with one wake-up each" 20 $(($(metric wakeups) - w0))

waiter empty "$MNT/p/empty/current"
echo one >>"$MNT/p/empty/current"
woken empty "an empty partition's first record wakes a waiter on its current" in

waiter gone "$MNT/p/gone/current"
rmdir "$MNT/p/gone"
woken gone "removing the partition wakes its waiter, hung up" "in hup"
waiter gone2 "$MNT/p/gone2/current"
rm -r "$MNT/p/gone2"
wait $W
tl_check "rm -r of a partition wakes a waiter on its segment" \
    grep -q '^in' "$TMP/gone2.out"

waiter renamed "$MNT/p/old/current"
mv -T "$MNT/p/old" "$MNT/p/new"
tl_check "a rename leaves the waiter waiting" in_poll $W
echo after-rename >>"$MNT/p/new/current"
woken renamed "an append under the new name wakes it" in

waiter victim "$MNT/p/victim/current"
mv -T "$MNT/p/new" "$MNT/p/victim"
woken victim "a rename over its partition wakes the waiter, hung up" "in hup"

# tlogctl read --follow waits in poll(2): a line shows at once (well
# before the 60 s its wait may last), and an idle follower asks nothing.
"$TLOGCTL" read --follow "$MNT/p/0" >"$TMP/follow.out" 2>"$TMP/follow.err" &
F=$!
got_line() { grep -qx "$1" "$TMP/follow.out"; }
tl_wait_for 10 got_line third
tl_wait_for 10 in_poll $F
c0=$(awk '/^voluntary/ { print $2 }' "/proc/$F/status")
echo fourth >>"$MNT/p/0/current"
tl_check "tlogctl read --follow prints an appended line" \
    tl_wait_for 10 got_line fourth
tl_wait_for 10 in_poll $F
c1=$(awk '/^voluntary/ { print $2 }' "/proc/$F/status")
"$POLLWAIT" "$MNT/p/empty/current" 1000 >/dev/null	# a second of idle
c2=$(awk '/^voluntary/ { print $2 }' "/proc/$F/status")
tl_is "an idle follower makes no request" 0 $((c2 - c1))
tl_diag "the follower's switches for one append: $((c1 - c0))"
# Each wake-up makes the kernel poll again before poll(2) returns, and
# the follower polls once more after reading: only the latter, found
# not ready, is armed, and each append wakes it once.
a0=$(metric waits) w0=$(metric wakeups)
for i in $(seq 1 20); do
	echo "line$i" >>"$MNT/p/0/current"
	tl_wait_for 10 got_line "line$i"
	tl_wait_for 10 in_poll $F
done
tl_check "20 appends, each awaited, arm the follower about once each ($(($(metric waits) - a0)) polls armed)" \
    test $(($(metric waits) - a0)) -le 22
tl_check "and wake it once each ($(($(metric wakeups) - w0)) wake-ups)" \
    test $(($(metric wakeups) - w0)) -le 20
kill $F
wait $F 2>/dev/null

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon said nothing"
tl_done
