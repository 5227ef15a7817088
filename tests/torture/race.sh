#!/bin/bash
# race.sh - the first append to a fresh, empty partition against a rename
# over it, and against rmdir + mkdir of its name, thousands of times
# (tests/torture/tt_race.c). The append must land in the partition it
# opened (and the rename or rmdir then fail with ENOTEMPTY) or fail with
# ENOENT; it must never write into another partition's directory, and
# nothing may be set aside as *.orphan-*.
#
#   TORTURE_SECONDS=60 make check TESTS=tests/torture/race.sh
. "${srcdir:-.}/tests/torture/lib.sh"

secs=${TORTURE_SECONDS:-2}
TT_RACE=$TT_BIN/tt_race
tl_mount
mkdir "$MNT/r" "$MNT/d"
for mode in rename rmdir; do
	t=r
	[ $mode = rmdir ] && t=d
	if out=$("$TT_RACE" $mode "$MNT" "$STORE" $t "$secs" 2>&1); then
		tl_ok "$(echo "$out" | tail -n 1)"
	else
		tl_not_ok "$mode racing the first append: the append lands in its own partition or fails with ENOENT" \
		    "$(echo "$out" | head -n 12)"
	fi
done
tl_check "the daemon is alive" tl_daemon_alive
tl_check "clean unmount, daemon exits 0" tl_umount
tt_check_stderr "race"
tt_check_strays
tl_done
