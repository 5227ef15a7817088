#!/bin/bash
# rmrf.sh - rm -rf of a topic works at once, even right after its
# partitions shed segments (doc/design.md §6: rmdir waits for the
# partition's pending unlinks). Each round makes a topic of 3 partitions
# with 1 KiB segments, writes about 30 segments into each, and then:
#   manual  rm -rf right away (rm's own unlinks are the pending ones);
#   size    retention.bytes=4K: the appends shed segments as they go;
#           rm -rf right after;
#   time    retention.ms=1s, every segment sealed: rm -rf the moment
#           the reaper has moved a partition's start offset (its
#           unlinks in flight).
# Every rm -rf must succeed and leave nothing, in the mount or the store.
#
#   TORTURE_SECONDS=60 make check TESTS=tests/torture/rmrf.sh
. "${srcdir:-.}/tests/torture/lib.sh"

secs=${TORTURE_SECONDS:-4}
tl_mount
setfattr -n user.segment.bytes -v 1K "$MNT"
declare -A runs fails
errs=
end=$(($(date +%s) + secs))
k=0
while [ "$(date +%s)" -lt $end ] || [ $k -lt 3 ]; do
	case $((k % 3)) in
	0) mode=manual ;;
	1) mode=size ;;
	2) mode=time ;;
	esac
	t=$MNT/t$k
	mkdir -p "$t/0" "$t/1" "$t/2"
	[ $mode = size ] && setfattr -n user.retention.bytes -v 4K "$t"
	if [ $mode = time ]; then
		setfattr -n user.retention.ms -v 1s "$t"
		setfattr -n user.segment.ms -v 1s "$t"
	fi
	for p in 0 1 2; do
		seq -f "t$k/$p line %06g padding padding padding padding" \
		    1 700 >>"$t/$p/current"
	done
	if [ $mode = time ]; then
		# Sealed now, so that the reaper only deletes: an idle seal
		# during rm -rf gives a name rm never listed (ENOTEMPTY, as
		# a file created meanwhile would on any file system).
		for p in 0 1 2; do setfattr -n user.seal -v 1 "$t/$p"; done
		moved() { [ "$(gx user.tlog.start_offset "$t/0")" != 0 ]; }
		tl_wait_for 10 moved
	fi
	runs[$mode]=$((${runs[$mode]:-0} + 1))
	if ! out=$(rm -rf "$t" 2>&1) || [ -e "$t" ] ||
	    [ -e "$STORE/t$k" ]; then
		fails[$mode]=$((${fails[$mode]:-0} + 1))
		[ -z "$errs" ] && errs="$mode, round $k: $(echo "$out" | head -n 3 | tr '\n' ' ') mount: $(ls -A "$t" 2>&1 | tr '\n' ' ') store: $(cd "$STORE" && find "t$k" 2>&1 | head -20 | tr '\n' ' ')"
	fi
	k=$((k + 1))
done
for mode in manual size time; do
	tl_is "rm -rf right after $mode deletion: $((${runs[$mode]} - ${fails[$mode]:-0})) of ${runs[$mode]} worked" \
	    "" "$([ -n "${fails[$mode]:-}" ] && echo "$errs")"
done
tl_check "the daemon is alive" tl_daemon_alive
tl_check "clean unmount, daemon exits 0" tl_umount
tt_check_stderr "rmrf"
tt_check_strays
tl_done
