#!/bin/sh
# cleanup.sh - partition.cleanup.ms through the mount (tlogfs(8)): with
# 1s set on a topic, a partition whose segments were deleted with rm
# vanishes from `ls` with a partition_deleted event and one log line; a
# partition held open for writing (exec 3>>current) stays until it is
# closed; one with records and the topic itself stay; a mkdir of the same
# name afterwards makes a fresh partition.
. "${srcdir:-.}/tests/integration/lib.sh"

EV=$MNT/.tlogfs/events
listed() { ls "$MNT/cl" | grep -qx "$1"; }
unlisted() { ! listed "$1"; }
events() { cat "$EV"/* 2>/dev/null | grep -c "$1"; }
# The event and the log line follow the removal (doc/reaper.md): an ls
# may miss the partition a moment before they are written.
has_event() { [ "$(events "$1")" -ge 1 ]; }
logged() { grep -q "$1" "$ERR"; }

tl_mount
mkdir "$MNT/cl"
setfattr -n user.partition.cleanup.ms -v 1s "$MNT/cl"
mkdir "$MNT/cl/keep" "$MNT/cl/w" "$MNT/cl/0"
tl_is "inherited by the partitions" 1000 "$(gx user.partition.cleanup.ms "$MNT/cl/0")"
echo 'stays' >>"$MNT/cl/keep/current"
exec 3>>"$MNT/cl/w/current"

# Written, then its segments deleted by hand: empty and unwritten.
echo 'one' >>"$MNT/cl/0/current"
setfattr -n user.seal -v 1 "$MNT/cl/0/current"
echo 'two' >>"$MNT/cl/0/current"
rm "$MNT/cl/0/"*
tl_check "the emptied partition vanishes from ls" tl_wait_for 20 unlisted 0
tl_check "and from lookups" test ! -e "$MNT/cl/0"
tl_wait_for 20 has_event '"event":"partition_deleted","topic":"cl","partition":"0",'
tl_wait_for 20 logged 'removed partition cl/0: empty'
tl_is "one partition_deleted event for it" 1 \
    "$(events '"event":"partition_deleted","topic":"cl","partition":"0",')"
tl_is "with rule cleanup" 1 "$(events '"partition":"0","last_write_ts":[0-9]*,"rule":"cleanup"}')"
tl_is "one log line" 1 "$(grep -c 'removed partition cl/0: empty' "$ERR")"

# A partition made later goes later: once it is gone, the reaper has
# been past the one held open for writing, which stays.
mkdir "$MNT/cl/probe"
tl_check "a partition never written vanishes too" tl_wait_for 20 unlisted probe
tl_check "an open writer keeps its partition" listed w
tl_check "records keep their partition" listed keep
tl_check "the topic stays" test -d "$MNT/cl"
exec 3>&-
tl_check "closed, it vanishes" tl_wait_for 20 unlisted w
tl_wait_for 20 has_event '"event":"partition_deleted","topic":"cl","partition":"w",'
tl_is "the held-open one recorded once closed" 1 \
    "$(events '"event":"partition_deleted","topic":"cl","partition":"w",')"
tl_check "still there: records and topic" listed keep

# The same name again: a fresh partition, at offset 0.
tl_check "mkdir of the same name" mkdir "$MNT/cl/0"
echo 'fresh' >>"$MNT/cl/0/current"
tl_is "a fresh partition" "fresh" "$(cat "$MNT/cl/0/"*)"
tl_is "from offset 0" 0 "$(gx user.tlog.start_offset "$MNT/cl/0")"

tl_umount
tl_stderr_clean "no unexpected daemon output" \
    '^tlogfs: removed partition cl/(0|probe|w): empty, unwritten for [0-9]+ ms \(partition.cleanup.ms 1000\)$'
tl_done
