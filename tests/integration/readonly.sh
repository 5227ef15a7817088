#!/bin/sh
# readonly.sh - `-o ro` changes nothing in the store: a store with
# expired segments, an idle active segment, a torn tail and a missing
# index, mounted read-only past every retention and idle-seal time, is
# byte for byte the same afterwards (names, sizes, blocks, mtimes,
# ctimes, inodes and sha256 of every file, .tlogfs included), while
# cat, getfattr, the seek attributes and tlogctl read work and every
# change fails with EROFS, from the kernel and, after a remount rw that
# lets them through, from the daemon itself. A store on a read-only
# file system mounts with -o ro. A read-write mount then recovers the
# store and serves everything.
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
# Everything about every entry below the store that a change would move.
tree_state() {
	(cd "$1" && find . -printf '%p %y %m %s %b %T@ %C@ %i\n' |
	    LC_ALL=C sort &&
	    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}
# Recovery's lines, the read-only notice, nothing else.
ALLOWED='^tlogfs: (ro/[a-z]+/[0-9]{20}\.(log|idx): .*|store .* is open read-only: .*|store .* was not closed cleanly before a reboot: .*)$'

# ---- the store: written by a read-write mount, then damaged ----
tl_mount
E=$MNT/ro/exp
I=$MNT/ro/idle
mkdir -p "$E" "$I"
setfattr -n user.segment.bytes -v 1K "$E"	# 146 lines a segment
nums 0 599 >>"$E/current"
for i in $(seq 1 50); do echo "idle $i"; done >>"$I/current"
tl_is "exp rolled into 5 segments" 5 "$(gx user.tlog.segments "$E")"
tl_check "unmount" tl_umount
# As an operator's edit between mounts would: retention.ms 2 s on exp,
# segment.ms 1 s on idle, so both are due (long) before the check.
printf 'segment.bytes=1024\nretention.ms=2000\n' >"$STORE/ro/exp/.config"
printf 'segment.ms=1000\n' >"$STORE/ro/idle/.config"
# The crash that left these: an unfinished line, a lost index, no mark.
printf 'a torn tail' >>"$STORE/ro/idle/00000000000000000000.log"
rm "$STORE/ro/exp/00000000000000000146.idx" "$STORE/.tlogfs/clean"
tree_state "$STORE" >"$TMP/before"

# ---- read-only ----
tl_mount -o ro
tl_check "the mount is read-only" \
    awk -v m="$MNT" '$2 == m && $4 ~ /^ro,/ { f = 1 } END { exit !f }' \
    /proc/self/mounts
nums 0 599 >"$TMP/want.exp"
for i in $(seq 1 50); do echo "idle $i"; done >"$TMP/want.idle"
cat "$E"/* >"$TMP/got"
tl_check "cat of exp serves every line" cmp -s "$TMP/want.exp" "$TMP/got"
cat "$I"/* >"$TMP/got"
tl_check "cat of idle serves its lines, not the torn tail" \
    cmp -s "$TMP/want.idle" "$TMP/got"
tl_is "getfattr: end_offset" 600 "$(gx user.tlog.end_offset "$E")"
tl_is "getfattr: a setting" 2000 "$(gx user.retention.ms "$E")"
tl_is "getfattr: current is not sealed" 0 "$(gx user.tlog.sealed "$I/current")"
tl_is "getfattr: current's size leaves out the torn tail" \
    "$(wc -c <"$TMP/want.idle")" "$(stat -c %s "$I/current")"
# Segment 146's index is gone and may not be rebuilt on disk: the seeks
# read the one rebuilt in memory.
tl_is "user.tlog.at.200 (a segment without index file)" "146 378" \
    "$(gx user.tlog.at.200 "$E")"
"$TLOGCTL" read --from 200 "$E" >"$TMP/got" 2>"$TMP/ctl.err"
nums 200 599 >"$TMP/want"
tl_check "tlogctl read --from 200" cmp -s "$TMP/want" "$TMP/got"
since=$(gx user.tlog.first_ts "$I/current")
"$TLOGCTL" read --since "$since" "$I" >"$TMP/got" 2>>"$TMP/ctl.err"
tl_check "tlogctl read --since" cmp -s "$TMP/want.idle" "$TMP/got"
tl_is "tlogctl says nothing on stderr" "" "$(cat "$TMP/ctl.err")"

# Well past exp's expiry and idle's seal, with the margin the reaper
# would have needed to act on them.
deadline=$(($(gx user.tlog.newest_ts "$E") + 2000 + 1 + 2000))
idle=$(($(gx user.tlog.max_ts "$I/current") + 1000 + 2000))
[ "$idle" -gt "$deadline" ] && deadline=$idle
_past() { [ "$(now_ms)" -gt "$deadline" ]; }
tl_check "the clock passes every due time" tl_wait_for 30 _past
tl_is "nothing expired" 5 "$(gx user.tlog.segments "$E")"
tl_is "nothing sealed" 0 "$(gx user.tlog.sealed "$I/current")"
# fsync through a read descriptor reaches the daemon, which writes
# nothing (coreutils sync opens the file read-only).
tl_check "fsync of current succeeds" sync "$I/current"

# Every change, EROFS. $1 says who refuses it.
probe_all() {
	local out=
	for c in "write $I/current x" "open $I/current wronly,append" \
	    "truncate $I/current 0" "mkdir $MNT/ro/new" "mkdir $MNT/nt" \
	    "rmdir $MNT/ro/exp" "unlink $I/current" \
	    "unlink $E/00000000000000000000.log" "rename $MNT/ro $MNT/ro2" \
	    "rename $E $MNT/ro/exp2" "chmod $E 700" "chown $E 1 1" \
	    "utimens $E" "setxattr $E user.retention.ms 1h" \
	    "removexattr $E user.segment.bytes" \
	    "setxattr $I/current user.seal 1" "mknod $E/f" \
	    "symlink x $E/l" "link $I/current $E/h"; do
		# shellcheck disable=SC2086
		out="$out$("$PROBE" $c) "
	done
	tl_is "every change fails with EROFS ($1)" \
	    "$(printf 'EROFS %.0s' $(seq 1 19))" "$out"
}
probe_all "the kernel refuses"
if [ "$(id -u)" = 0 ] && mount -i -o remount,rw "$MNT" 2>"$TMP/rm.err"; then
	probe_all "remounted rw: the daemon refuses"
	tl_check "fsync after the remount" sync "$I/current"
else
	tl_ok "every change fails with EROFS (the daemon) # SKIP cannot remount: $(cat "$TMP/rm.err")"
	tl_ok "fsync after the remount # SKIP"
fi
tl_check "unmount" tl_umount
tree_state "$STORE" >"$TMP/after"
tl_check "the store is byte for byte the same" \
    cmp -s "$TMP/before" "$TMP/after"
diff "$TMP/before" "$TMP/after" | head -20 | sed 's/^/# /'

# A read-only mount of a store on a read-only file system: nothing
# there can be written, not even the lock.
mkdir "$TMP/rostore"
if [ "$(id -u)" = 0 ] && mount --bind "$STORE" "$TMP/rostore" &&
    mount -o remount,bind,ro "$TMP/rostore"; then
	S0=$STORE
	STORE=$TMP/rostore
	tl_mount -o ro
	cat "$MNT"/ro/exp/* >"$TMP/got"
	tl_check "a store on a read-only file system mounts with -o ro" \
	    cmp -s "$TMP/want.exp" "$TMP/got"
	tl_check "unmount" tl_umount
	umount "$TMP/rostore"
	STORE=$S0
else
	tl_ok "a store on a read-only file system # SKIP no bind mount"
	tl_ok "unmount # SKIP"
fi
tree_state "$STORE" >"$TMP/after"
tl_check "still the same" cmp -s "$TMP/before" "$TMP/after"

# ---- read-write again: recovery makes its repairs ----
# Long retention now, so that what the mount serves can be compared.
printf 'segment.bytes=1024\n' >"$STORE/ro/exp/.config"
tl_mount
cat "$E"/* >"$TMP/got"
tl_check "read-write: exp serves every line" cmp -s "$TMP/want.exp" "$TMP/got"
cat "$I"/* >"$TMP/got"
tl_check "read-write: idle serves its lines" cmp -s "$TMP/want.idle" "$TMP/got"
tl_check "the torn tail is cut on disk" test \
    "$(stat -c %s "$STORE/ro/idle/00000000000000000000.log")" -eq \
    "$(wc -c <"$TMP/want.idle")"
tl_check "the lost index is rebuilt on disk" \
    test -s "$STORE/ro/exp/00000000000000000146.idx"
_sealed() { [ "$(ls "$I" 2>/dev/null)" = "00000000000000000000.log
current" ]; }
tl_check "the reaper seals the idle segment" tl_wait_for 10 _sealed
echo after >>"$I/current"
tl_is "it takes appends" after "$(cat "$I/current")"
tl_check "unmount" tl_umount
tl_stderr_clean "no unexpected daemon output" "$ALLOWED"
tl_done
