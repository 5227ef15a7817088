#!/bin/sh
# ceiling.sh - retention.bytes bounds a partition's files on the backing
# store, detached segments not yet unlinked included, with the daemon's
# unlinker keeping up or lagging; and a ceiling lowered on an idle
# partition, or its topic, applies at once.
. "${srcdir:-.}/tests/integration/lib.sh"

CAP=262144		# retention.bytes=256K
SEG=32768		# segment.bytes=32K: the roll size too (256K / 8)

# Total size of every file in a backing directory.
disk_bytes() {
	find "$1" -maxdepth 1 -type f -printf '%s\n' 2>/dev/null |
	    awk '{ s += $1 } END { print s + 0 }'
}

# ceiling_run NAME: a full-speed writer into ret/NAME while the backing
# directory is sampled as fast as it can be; "samples max" go to
# $TMP/samples. The writer writes 40000 lines at a time until the
# sampler has taken 20 samples, so a loaded machine that runs the
# sampler slowly still samples the whole run.
ceiling_run() {
	mkdir "$MNT/ret/$1"
	setfattr -n user.retention.bytes -v 256K "$MNT/ret/$1"
	setfattr -n user.segment.bytes -v 32K "$MNT/ret/$1"
	rm -f "$TMP/stop" "$TMP/sampled"
	(
		while :; do
			"$LINEWRITER" "$MNT/ret/$1/current" 1 40000 || exit
			[ -e "$TMP/sampled" ] && exit 0
		done
	) &
	wpid=$!
	(
		n=0 max=0
		while [ ! -e "$TMP/stop" ]; do
			d=$(disk_bytes "$STORE/ret/$1")
			n=$((n + 1))
			[ "$d" -gt "$max" ] && max=$d
			[ "$n" = 20 ] && : >"$TMP/sampled"
		done
		echo "$n $max"
	) >"$TMP/samples" &
	spid=$!
	wait "$wpid"
	wst=$?
	: >"$TMP/stop"
	wait "$spid"
	tl_is "$1: the writer was never refused" 0 "$wst"
}

check_run() {
	read -r n max <"$TMP/samples"
	tl_diag "$1: $n samples of the backing directory, largest $max bytes" \
	    "(bound $((CAP + 2 * SEG)))"
	tl_check "$1: its files never exceed retention.bytes + 2 segments" \
	    test "$max" -le $((CAP + 2 * SEG))
}

# 1. The daemon's unlinker as it is.
tl_mount
mkdir "$MNT/ret"
ceiling_run fast
check_run fast

# 2. A ceiling lowered on an idle partition applies within a second, at
# the partition's level and at its topic's: no append needed.
log_bytes() {
	find "$1" -maxdepth 1 -type f -name '*.log' -printf '%s\n' |
	    awk '{ s += $1 } END { print s + 0 }'
}
fill() {
	mkdir -p "$1"
	setfattr -n user.segment.bytes -v 16K "$1"
	awk 'BEGIN { for (i = 0; i < 920; i++) printf "%099d\n", i }' \
	    >>"$1/current"
}
bytes_of() {
	getfattr --absolute-names --only-values -n user.tlog.bytes "$1"
}
under() { [ "$(bytes_of "$1")" -le "$2" ] && [ "$(log_bytes "$3")" -le "$2" ]; }
fill "$MNT/ret/idle"
fill "$MNT/topic2/0"
tl_is "an idle partition holds 92000 bytes" 92000 "$(bytes_of "$MNT/ret/idle")"
t=$(now_ms)
setfattr -n user.retention.bytes -v 8K "$MNT/ret/idle"
tl_check "partition level: under the new ceiling, in the view and on disk" \
    tl_wait_for 5 under "$MNT/ret/idle" 8192 "$STORE/ret/idle"
tl_diag "partition level: under 8K after $(($(now_ms) - t)) ms"
t=$(now_ms)
setfattr -n user.retention.bytes -v 8K "$MNT/topic2"
tl_check "topic level: under the new ceiling, in the view and on disk" \
    tl_wait_for 5 under "$MNT/topic2/0" 8192 "$STORE/topic2/0"
tl_diag "topic level: under 8K after $(($(now_ms) - t)) ms"
_size_events() {
	[ "$(cat "$MNT/.tlogfs/events"/* | grep -c \
	    '"event":"delete","topic":"topic2","partition":"0".*"rule":"size"')" -ge 5 ]
}
tl_check "those deletions are recorded with rule size" tl_wait_for 5 _size_events
tl_check "unmount" tl_umount

# 3. An unlinker that waits 200 ms before each batch: the appender must
# unlink what it detached itself.
TLOGFS_TEST_UNLINK_DELAY_MS=200
export TLOGFS_TEST_UNLINK_DELAY_MS
tl_mount_hooked
ceiling_run slow
check_run slow
tl_check "unmount" tl_umount
unset TLOGFS_TEST_UNLINK_DELAY_MS

tl_stderr_clean "the daemon printed nothing unexpected" \
    '^tlogfs: reaper: '
tl_done
