#!/bin/sh
# daemon.sh - the tlogfs daemon itself: usage, one-line failures with a
# non-zero status, a quiet idle mount, a clean stop on SIGTERM that
# flushes held partial records, daemonizing, and mount(8) / fstab.
. "${srcdir:-.}/tests/integration/lib.sh"
# A daemonized mount's stderr is /dev/null: on a sanitizer build its
# reports go to files instead, checked at the end.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$TMP/san"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$TMP/san"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$TMP/san"

tl_is "--version" "tlogfs version" "$("$TLOGFS" --version 2>&1 | head -1 | cut -d' ' -f1-2)"
tl_check "--help prints the usage" sh -c "'$TLOGFS' --help | grep -q '^usage: tlogfs STORE MOUNTPOINT'"

# fails CMD...: non-zero status and exactly one line on stderr.
fails() {
	local st=0
	"$@" >/dev/null 2>"$TMP/fail.err" || st=$?
	[ "$st" -ne 0 ] && [ "$(wc -l <"$TMP/fail.err")" -eq 1 ] && return 0
	echo "# status $st, stderr:"; sed 's/^/#   /' "$TMP/fail.err"
	return 1
}
# usage NAME CMD...: a usage error: status 2 and one line on stderr.
usage_err() {
	local st=0 name=$1
	shift
	"$@" >/dev/null 2>"$TMP/fail.err" || st=$?
	tl_is "$name: status 2, one line" "2 1" \
	    "$st $(wc -l <"$TMP/fail.err")"
}
mkdir "$TMP/fresh"
usage_err "no arguments" "$TLOGFS"
tl_is "the usage line is --help's" \
    "$("$TLOGFS" --help | head -1)" \
    "$(sed 's/^tlogfs: //; s/ (see --help)$//' "$TMP/fail.err")"
tl_check "it names every flag of tlogfs(8)'s synopsis (-d -f -s -o)" \
    grep -q '^tlogfs: usage: tlogfs STORE MOUNTPOINT \[-f\] \[-d\] \[-s\] \[-o' \
    "$TMP/fail.err"
usage_err "an unknown -o option" "$TLOGFS" "$TMP/fresh" "$MNT" -f -o bogus
usage_err "an unknown flag" "$TLOGFS" "$TMP/fresh" "$MNT" -f -x
usage_err "a bad option value" "$TLOGFS" "$TMP/fresh" "$MNT" -f -o max_threads=x
usage_err "a third argument" "$TLOGFS" "$TMP/fresh" "$MNT" "$MNT" -f
tl_is "a usage error leaves the store untouched" "" "$(ls -A "$TMP/fresh")"
tl_is "--help: max_idle_threads defaults to 10, as tlogfs(8) says" \
    "allowed (default: 10)" \
    "$("$TLOGFS" --help | grep -A1 'max_idle_threads' | sed -n '2s/^ *//p')"
tl_check "--help says no default of -1" \
    sh -c "! '$TLOGFS' --help | grep -q 'default: -1'"
tl_check "tlogfs(8) says 10 and 10" \
    grep -q 'Tune the multithreaded loop (default 10 and 10)' \
    "${srcdir:-.}/doc/tlogfs.8"
tl_check "a missing STORE: one line, non-zero" \
    fails "$TLOGFS" "$TMP/nostore" "$MNT" -f
tl_check "a missing MOUNTPOINT: one line, non-zero" \
    fails "$TLOGFS" "$STORE" "$TMP/nomnt" -f
mkdir "$TMP/ro"
if mount -t tmpfs -o ro,size=1m tlogfs-ro "$TMP/ro" 2>/dev/null; then
	tl_check "an unwritable STORE: one line, non-zero" \
	    fails "$TLOGFS" "$TMP/ro" "$MNT" -f
	umount "$TMP/ro"
else
	tl_ok "an unwritable STORE # SKIP cannot mount a read-only tmpfs"
fi

tl_mount
mkdir "$TMP/mnt2"
tl_check "a second daemon on the same store: one line, non-zero" \
    fails "$TLOGFS" "$STORE" "$TMP/mnt2" -f
tl_check "the line names the holder's pid" grep -q "pid $DPID" "$TMP/fail.err"
mkdir -p "$MNT/d/0"
ls -l "$MNT/d/0" >/dev/null

# A held partial record, then SIGTERM: flushed, clean mark written.
exec 3>>"$MNT/d/0/current"
printf 'whole\npartial' >&3
st=0
tl_kill TERM || st=$?
exec 3>&-
tl_is "SIGTERM stops the daemon with status 0" 0 "$st"
tl_check "the mount is gone" sh -c "! awk '\$2 == \"$MNT\"' /proc/self/mounts | grep -q ."
tl_check "the clean mark is written" test -e "$STORE/.tlogfs/clean"
tl_stderr_clean "an idle mount and a clean stop print nothing"

# A stop that cannot mark the store clean (a directory in the way of the
# mark, not empty, so the open cannot remove it) is no clean stop:
# status 1 and a line saying why.
rm "$STORE/.tlogfs/clean"
mkdir -p "$STORE/.tlogfs/clean/x"
tl_mount
st=0
tl_kill TERM || st=$?
tl_is "a stop that cannot write the clean mark: status 1" 1 "$st"
tl_check "with a line saying so" grep -q "cannot replace .tlogfs/clean" "$ERR"
rm -r "$STORE/.tlogfs/clean"
: >"$ERR"

# Daemonized: returns once mounted; the lock names the daemon.
st=0
"$TLOGFS" "$STORE" "$MNT" 2>>"$ERR" || st=$?
tl_is "daemonized: exits 0 once mounted" 0 "$st"
tl_check "daemonized: mounted" tl_is_mounted "$MNT"
pid=$(cat "$STORE/.tlogfs/lock")
tl_check "the store's lock names the daemon's pid" \
    grep -q tlogfs "/proc/$pid/cmdline"
tl_is "the held partial record was flushed at the stop" "whole
partial" "$(cat "$MNT/d/0/current")"
"$FUSERMOUNT" -u "$MNT"
gone() { ! kill -0 "$pid" 2>/dev/null; }
tl_check "fusermount3 -u stops the daemon" tl_wait_for 10 gone
tl_check "the clean mark is written" test -e "$STORE/.tlogfs/clean"

# mount(8) through mount.fuse3, as from fstab: generic options pass.
if command -v mount.fuse3 >/dev/null; then
	printf '%s#%s %s fuse defaults,nofail,x-systemd.automount,allow_other 0 0\n' \
	    "$TLOGFS" "$STORE" "$MNT" >"$TMP/fstab"
	tl_check "mount -T fstab (mount.fuse3, 'defaults')" mount -T "$TMP/fstab" "$MNT"
	tl_check "mounted as fuse.tlogfs with allow_other" sh -c \
	    "grep ' $MNT fuse.tlogfs ' /proc/self/mounts | grep -q allow_other"
	echo fstab >>"$MNT/d/0/current"
	pid=$(cat "$STORE/.tlogfs/lock")
	tl_check "umount stops it" umount "$MNT"
	tl_check "the daemon exits" tl_wait_for 10 gone
	tl_check "mount -t fuse -o ro,noatime" \
	    mount -t fuse -o ro,noatime "$TLOGFS#$STORE" "$MNT"
	tl_is "a read-only mount refuses appends" EROFS \
	    "$("$PROBE" write "$MNT/d/0/current" "x
")"
	# "partial" became a record without newline at the stop.
	tl_is "and reads" "whole
partialfstab" "$(cat "$MNT/d/0/current")"
	pid=$(cat "$STORE/.tlogfs/lock")
	umount "$MNT"
	tl_check "the daemon exits" tl_wait_for 10 gone
else
	tl_ok "mount(8) # SKIP no mount.fuse3"
fi
tl_stderr_clean "nothing printed by daemonized mounts"
tl_is "no sanitizer report from any daemon" "" \
    "$(cat "$TMP"/san.* 2>/dev/null | head -20)"
tl_done
