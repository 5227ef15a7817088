#!/bin/bash
# soak.sh - MINUTES (default 30) of writers, tail -F readers and the
# reaper against one daemon, under AddressSanitizer (a build configured
# with --enable-sanitizers) or valgrind. Every minute it prints the
# daemon's RSS and open-fd count; at the end both must be flat and the
# daemon must have printed nothing but the reaper's deletion lines.
#
#   tests/soak/soak.sh [MINUTES]
#
# Run it from a build directory, or set BUILD to one:
#   mkdir /tmp/sanbuild && cd /tmp/sanbuild &&
#   /path/to/tlogfs/configure --enable-sanitizers && make &&
#   make tests/integration/helpers/linewriter &&
#   /path/to/tlogfs/tests/soak/soak.sh 30
# Without a sanitizer build, VALGRIND=1 runs the daemon under valgrind
# (memcheck, leak check at exit); much slower, so fewer lines.
#
# Load: 4 partitions (2 topics x 2), one writer each appending numbered
# lines in pieces (linewriter -p -d 2000: about 400 lines/s each), one
# tail -F -s 0.2 --max-unchanged-stats=1 reader each, and a reader that
# cats every partition every 2 s. segment.bytes=64K, segment.ms=2s,
# retention.ms=5s: segments roll on size and on time and the reaper
# deletes all the time, so the steady state holds about 5 s of data.
#
# The deletions column comes from .tlogfs/metrics (a scrape a minute);
# SOAK_METRICS=0 counts the reaper's log lines instead and never opens
# the metrics file.
#
# Flat means: the last RSS sample is at most RSS_SLACK_KB (default 8192)
# above the sample at minute 2 (after warm-up), and the last fd count at
# most FD_SLACK (default 8) above the minute-2 count. Exits 0 if all
# holds, 1 otherwise.
set -u

MINUTES=${1:-30}
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "$here/../.." && pwd)
cd "${BUILD:-$(pwd)}" || exit 1
[ -x mount/tlogfs ] || { echo "soak: no mount/tlogfs in $(pwd); set BUILD" >&2; exit 2; }
[ -x tests/integration/helpers/linewriter ] ||
    make tests/integration/helpers/linewriter >/dev/null || exit 2
export srcdir
. "$srcdir/tests/integration/lib.sh"	# TMP, STORE, MNT, ERR, tl_mount ...

RSS_SLACK_KB=${RSS_SLACK_KB:-8192}
FD_SLACK=${FD_SLACK:-8}
# A small quarantine, so that RSS settles within the warm-up.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=16}
if nm -D "$TLOGFS" 2>/dev/null | grep -q __asan_init ||
    ldd "$TLOGFS" | grep -q libasan; then
	mode=asan
elif [ "${VALGRIND:-0}" = 1 ]; then
	mode=valgrind
	real=$TLOGFS
	TLOGFS=$TMP/tlogfs-vg
	printf '#!/bin/sh\nexec valgrind -q --leak-check=full --error-exitcode=99 --log-file=%s %s "$@"\n' \
	    "$TMP/valgrind.%p" "$real" >"$TLOGFS"
	chmod +x "$TLOGFS"
else
	echo "soak: $TLOGFS is not an ASan build; configure with" \
	    "--enable-sanitizers, or set VALGRIND=1" >&2
	exit 2
fi

PIDS=
soak_cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	tl_cleanup
}
trap soak_cleanup EXIT

tl_mount
# The daemon's pid: under valgrind the shell wrapper execs it.
DAEMON=$DPID
PARTS="a/0 a/1 b/0 b/1"
for t in a b; do
	mkdir -p "$MNT/$t/0" "$MNT/$t/1"
	setfattr -n user.segment.bytes -v 64K "$MNT/$t"
	setfattr -n user.segment.ms -v 2s "$MNT/$t"
	setfattr -n user.retention.ms -v 5s "$MNT/$t"
done
i=0
for p in $PARTS; do
	i=$((i + 1))
	"$LINEWRITER" -p -d 2000 -a "$TMP/ack.$i" "$MNT/$p/current" $i 0 \
	    2>"$TMP/writer.$i.err" &
	PIDS="$PIDS $!"
	tail -F -s 0.2 --max-unchanged-stats=1 -n 0 "$MNT/$p/current" \
	    >"$TMP/tail.$i" \
	    2>"$TMP/tail.$i.err" &
	PIDS="$PIDS $!"
done
(
	while :; do
		for p in $PARTS; do
			cat "$MNT/$p"/* >/dev/null 2>>"$TMP/cat.err"
		done
		sleep 2
	done
) &
CATPID=$!
PIDS="$PIDS $CATPID"

sample() {
	local rss fds
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON/status" 2>/dev/null)
	fds=$(ls "/proc/$DAEMON/fd" 2>/dev/null | wc -l)
	echo "$rss $fds"
}
acked() {
	local n=0 i a
	for i in 1 2 3 4; do
		a=$(cat "$TMP/ack.$i" 2>/dev/null)
		n=$((n + ${a:-0}))
	done
	echo $n
}

echo "soak: $MINUTES min, $mode, daemon pid $DAEMON, store $STORE"
printf '%4s %10s %5s %10s %9s %8s\n' min rss_kB fds lines segments deleted
start=$(date +%s)
base_rss=
base_fds=
ok=1
for m in $(seq 1 "$MINUTES"); do
	# Wake at each whole minute, and stop early if the daemon died.
	while [ $(($(date +%s) - start)) -lt $((m * 60)) ]; do
		tl_daemon_alive || break 2
		sleep 1
	done
	read -r rss fds <<<"$(sample)"
	segs=0
	for p in $PARTS; do
		segs=$((segs + $(getfattr --only-values -n user.tlog.segments \
		    "$MNT/$p" 2>/dev/null || echo 0)))
	done
	if [ "${SOAK_METRICS:-1}" = 1 ]; then
		del=$(awk '/^tlogfs_deletions_total/ { s += $2 } END { print s + 0 }' \
		    "$MNT/.tlogfs/metrics" 2>/dev/null)
	else	# counted from the reaper's lines instead
		del=$(awk '/^tlogfs: reaper: / { s += $3 } END { print s + 0 }' "$ERR")
	fi
	printf '%4d %10s %5s %10s %9s %8s\n' "$m" "$rss" "$fds" "$(acked)" \
	    "$segs" "$del"
	if [ "$m" -eq 2 ] || { [ "$MINUTES" -lt 2 ] && [ "$m" -eq 1 ]; }; then
		base_rss=$rss
		base_fds=$fds
	fi
	last_rss=$rss
	last_fds=$fds
done

if ! tl_daemon_alive; then
	echo "soak: FAIL: the daemon died"
	ok=0
fi
for i in 1 2 3 4; do
	if [ -s "$TMP/writer.$i.err" ]; then
		echo "soak: FAIL: writer $i: $(cat "$TMP/writer.$i.err")"
		ok=0
	fi
done
kill $PIDS 2>/dev/null
wait $PIDS 2>/dev/null
PIDS=
# What the readers saw: whole lines in each writer's order (tail -F may
# skip a segment that rolled and expired between two polls, so only the
# lines themselves and their order are checked here).
for i in 1 2 3 4; do
	s=$(tl_lines "$TMP/tail.$i" | sed -n 1p)
	# the last line may be cut by the kill
	t=$(head -n -1 "$TMP/tail.$i" | tl_lines /dev/stdin | sed -n 1p)
	if [ "$t" != "torn=0 order=0" ]; then
		echo "soak: FAIL: tail -F reader $i: $s"
		ok=0
	fi
	echo "soak: tail -F reader $i: $(wc -l <"$TMP/tail.$i") lines, $s;" \
	    "$(grep -vc 'has been replaced' "$TMP/tail.$i.err") other messages"
done
for p in $PARTS; do
	cat "$MNT/$p"/* >"$TMP/final" 2>/dev/null
	s=$(tl_lines "$TMP/final" | sed -n 1p)
	if [ "$s" != "torn=0 order=0" ]; then
		echo "soak: FAIL: $p: $s"
		ok=0
	fi
done
[ -s "$TMP/cat.err" ] && echo "soak: note: cat of a partition while" \
    "segments expired: $(sort -u "$TMP/cat.err" | wc -l) vanished files"
if ! tl_umount; then
	echo "soak: FAIL: the daemon's exit status was not 0"
	ok=0
fi
bad=$(grep -Ev '^tlogfs: reaper: [0-9]+ segments \([0-9]+ bytes\) expired from [0-9]+ due partitions in [0-9.]+ ms$' "$ERR")
if [ -n "$bad" ]; then
	echo "soak: FAIL: the daemon printed:"
	echo "$bad" | head -60
	ok=0
fi
if [ $mode = valgrind ] && [ -n "$(cat "$TMP"/valgrind.* 2>/dev/null)" ]; then
	echo "soak: FAIL: valgrind:"
	cat "$TMP"/valgrind.* | head -60
	ok=0
fi
echo "soak: $(grep -c 'reaper:' "$ERR") reaper deletion lines"
if [ -n "${base_rss:-}" ]; then
	echo "soak: rss $base_rss -> $last_rss kB, fds $base_fds -> $last_fds"
	if [ $((last_rss - base_rss)) -gt "$RSS_SLACK_KB" ]; then
		echo "soak: FAIL: RSS grew by $((last_rss - base_rss)) kB"
		ok=0
	fi
	if [ $((last_fds - base_fds)) -gt "$FD_SLACK" ]; then
		echo "soak: FAIL: open fds grew by $((last_fds - base_fds))"
		ok=0
	fi
fi
if [ $ok = 1 ]; then echo "soak: PASS"; exit 0; fi
echo "soak: FAIL"
exit 1
