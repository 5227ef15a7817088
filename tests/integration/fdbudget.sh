#!/bin/sh
# fdbudget.sh - appends always find descriptors (doc/tlogfs.8, the
# descriptors paragraph): a daemon at RLIMIT_NOFILE 384 with 32 worker
# threads, a reader holding every descriptor readers may hold, 128
# partitions (more than the 96 segments whose files stay open, so opens
# evict all the time), and 64 writers appending to 64 of them, fsync
# every 7 lines: no append, fsync or open is refused for want of a
# descriptor, and every line is in the store. Readers get 384 - 2 * 96
# - 32 - 1 (/dev/fuse) - 4 * (32 workers + the unlinker + the reaper)
# = 23.
#
# Syncs must take time for evictions to be in flight, so the store is
# on the disk (DISK_TMPDIR), not a tmpfs. Whether descriptors run out
# depends on how syncs overlap, so the writers run up to three rounds
# (each about 1-3 s), and the test fails at the first round that fails.
TMPDIR=${DISK_TMPDIR:-${TMPDIR:-/tmp}}
. "${srcdir:-.}/tests/integration/lib.sh"

SYNCWRITER=$TL_BUILD/tests/integration/helpers/syncwriter
FDHOLD=$TL_BUILD/tests/integration/helpers/fdhold
NPART=128
NW=64
COUNT=400
ROUNDS=3

command -v prlimit >/dev/null || tl_skip "no prlimit (util-linux)"
TL_LAUNCH="prlimit --nofile=384:384" tl_mount -o max_threads=32
mkdir "$MNT/t"
setfattr -n user.segment.bytes -v 4K "$MNT/t"
i=0
while [ $i -lt $NPART ]; do
	mkdir "$MNT/t/p$i"
	echo first >>"$MNT/t/p$i/current"
	i=$((i + 1))
done

mkfifo "$TMP/hold.in"
"$FDHOLD" "$MNT/t/p0/current" <"$TMP/hold.in" >"$TMP/hold.out" &
HPID=$!
exec 7>"$TMP/hold.in"
held() { [ -s "$TMP/hold.out" ]; }
tl_wait_for 10 held
tl_is "readers hold what the limit leaves them" "23 ENFILE" \
    "$(cat "$TMP/hold.out")"

mkdir "$TMP/ack"
r=0
st=0
while [ $r -lt $ROUNDS ] && [ $st = 0 ]; do
	args=
	i=0
	while [ $i -lt $NW ]; do
		args="$args $((r * 100 + i))=$MNT/t/p$i/current"
		i=$((i + 1))
	done
	# shellcheck disable=SC2086
	"$SYNCWRITER" -n $COUNT "$TMP/ack" $args 2>>"$TMP/writers.err" ||
	    st=1
	r=$((r + 1))
done
tl_is "$r rounds of $NW writers appended and synced without error" \
    "$ROUNDS 0 " "$r $st $(cat "$TMP/writers.err")"
exec 7>&-
wait $HPID
tl_check "unmount" tl_umount
tl_is "no record was refused" "" "$(grep refused "$ERR")"
# Under TSan (make check-threads), the deadlock detector gives up on
# the long lock cycles that 32 threads' evictions make through
# evict_finish, which cannot deadlock (tests/tsan.supp), in one line.
tl_stderr_clean "the daemon said only that readers ran out" \
    "out of file descriptors: opens for reading fail with ENFILE|^WARNING: too long mutex cycle found$"

# Every line of every writer, in its own partition: counted in the
# store's files (PARTITION WRITER COUNT).
want=$(i=0; while [ $i -lt $NW ]; do
	r=0
	while [ $r -lt $ROUNDS ]; do
		echo "p$i w$((r * 100 + i)) $COUNT"
		r=$((r + 1))
	done
	i=$((i + 1))
done | sort)
got=$(awk '/^w/ { n = split(FILENAME, a, "/"); c[a[n - 1] " " $1]++ }
    END { for (k in c) print k, c[k] }' "$STORE"/t/p*/*.log | sort)
tl_is "every line of every writer is in its partition" "$want" "$got"
tl_done
