#!/bin/bash
# run.sh BUILDDIR - the tlogfs benchmarks (doc/performance.md).
#
# Compares the native file system, libfuse's passthrough_ll and tlogfs on
# the same backing directory, on tmpfs and on disk, with floorfs (an empty
# FUSE server whose write only replies) beside the appends. In every round
# each target runs once, the order rotated round after round; the report
# (Markdown) gives each target's median [min-max] and, for each pair it
# compares, the median [min-max] of the per-round ratios, each line saying
# what it compares and whether that is like for like.
#
# Environment:
#   BENCH_QUICK=1   smaller sizes and 3 repetitions (about 20 minutes)
#   BENCH_OUT       the report (default BUILDDIR/tests/bench/results.md)
#   BENCH_TMPFS     tmpfs parent directory (default /dev/shm)
#   BENCH_DISK      disk parent directory (default /var/tmp)
#   BENCH_ONLY      space-separated workloads to run (default "1 2 3 4 5 6 7 8 9 10 11 12")
#   BENCH_Z_MIB     workload 12's generated corpora, MiB each (default 256,
#                   quick 32)
#   BENCH_SCALE_PARTS  workload 5's partitions (default 100000, quick 10000;
#                   10 segments each)
#
# Needs root (FUSE mounts, /proc/sys/vm/drop_caches), fusermount3,
# pkg-config + libfuse3-dev (passthrough_ll is built from its examples),
# logrotate (workload 6), nats-server and a build with libnats (workload
# 9: tlogctl ship), and for workload 7 the pipe loggers rotatelogs
# (Debian apache2-utils), multilog (daemontools) and svlogd (runit). It
# installs nothing: a missing tool skips its part with a note. All of them:
#   apt-get install logrotate apache2-utils daemontools runit
# Every mount and temporary directory is removed on exit, also on failure.
set -eu
set -o pipefail

BUILD=$(cd "${1:?usage: run.sh BUILDDIR}" && pwd)
QUICK=${BENCH_QUICK:-0}
[ -n "$QUICK" ] || QUICK=0
OUT=${BENCH_OUT:-$BUILD/tests/bench/results.md}
TMPFS_PARENT=${BENCH_TMPFS:-/dev/shm}
DISK_PARENT=${BENCH_DISK:-/var/tmp}
ONLY=${BENCH_ONLY:-1 2 3 4 5 6 7 8 9 10 11 12}
TLOGFS=$BUILD/mount/tlogfs
TLOGCTL=$BUILD/cli/tlogctl
APPENDER=$BUILD/tests/bench/appender
TLBENCH=$BUILD/tests/bench/tlbench
FOLLOWLAT=$BUILD/tests/bench/followlat
FLOORFS=$BUILD/tests/bench/floorfs

if [ "$QUICK" != 0 ]; then
	REPS=3
	SMALL_LINES=50000
	BULK_MIB=64
	READ_MIB=64 READ_SEG=8M
	WAKE_PARTS=100000
	DRAIN_SEGS=20000
	KEEPFREE_SECS=2
	SCALE_PARTS=10000 SCALE_SEGS=10
	LR_LINES=400000 LR_RATE=100000
	PIPE_LINES=2000000 PIPE_WLINES=400000 PIPE_REPS=3
	COMMITS=2000
	SHIP_LINES=200000
	Z_MIB=32 Z_READS=200 Z_APPENDS=10000
else
	REPS=5
	SMALL_LINES=200000
	BULK_MIB=512
	READ_MIB=512 READ_SEG=64M
	WAKE_PARTS=100000
	DRAIN_SEGS=100000
	KEEPFREE_SECS=5
	SCALE_PARTS=100000 SCALE_SEGS=10
	LR_LINES=400000 LR_RATE=40000
	PIPE_LINES=5000000 PIPE_WLINES=1000000 PIPE_REPS=5
	COMMITS=10000
	SHIP_LINES=1000000
	Z_MIB=256 Z_READS=1000 Z_APPENDS=40000
fi
Z_MIB=${BENCH_Z_MIB:-$Z_MIB}
SCALE_PARTS=${BENCH_SCALE_PARTS:-$SCALE_PARTS}
JSPROBE=$BUILD/tests/integration/helpers/jsprobe

# shellcheck source=tests/bench/lib.sh
. "$(dirname "$0")/lib.sh"
# workload 11: tlogctl ship following
. "$(dirname "$0")/shipfollow.sh"

[ "$(id -u)" = 0 ] || die "needs root (FUSE mounts, drop_caches)"
for f in "$TLOGFS" "$APPENDER" "$TLBENCH" "$TLOGCTL" "$FOLLOWLAT" "$FLOORFS"; do
	[ -x "$f" ] || die "$f not built (run make bench)"
done

# ---- passthrough_ll, built here ----
mktempdir /tmp; PTDIR=$TMPD
EX=/usr/share/doc/libfuse3-dev/examples
[ -f $EX/passthrough_ll.c ] || die "$EX/passthrough_ll.c missing (libfuse3-dev)"
cp $EX/passthrough_ll.c $PTDIR/
[ -f $EX/passthrough_helpers.h ] && cp $EX/passthrough_helpers.h $PTDIR/
(cd $PTDIR && cc -O2 -w $(pkg-config --cflags fuse3) passthrough_ll.c \
	$(pkg-config --libs fuse3) -o passthrough_ll) || die "building passthrough_ll"
PT=$PTDIR/passthrough_ll
mktempdir /tmp; MNTROOT=$TMPD

# passthrough_ll and floorfs get a session of their own, as tlogfs has
# once it daemonizes: with sched_autogroup (Debian's default) a session
# is a scheduling group, and a daemon in the load's own group is woken
# next to it far more often; in the group of this script passthrough_ll
# ran workload 1 at about twice its speed as a daemon
# (doc/performance.md, hotspot 5). setsid -w: if it must fork, $! still
# lives as long as the server.
declare -A FG_PID	# mountpoint -> its server's pid
fg_mount() {	# MNT PROGRAM [ARGS...]: runs PROGRAM ARGS -f MNT
	local mnt=$1
	shift
	mkdir -p "$mnt"
	MOUNTS+=("$mnt")
	setsid -w "$@" -f "$mnt" >/dev/null 2>&1 &
	FG_PID[$mnt]=$!
	PIDS+=("$!")
	wait_mounted "$mnt"
}
fg_umount() {	# MNT
	fusermount3 -u "$1"
	wait_gone "${FG_PID[$1]}"
}
# passthrough_ll's caching, as its -o cache= says: auto (its default:
# page-cache reads and writes, the page cache dropped at each open),
# never (direct_io, as tlogfs's `current`), always (the page cache kept
# across opens, as tlogfs's sealed segments).
pt_mount() {	# SOURCE MNT CACHE
	fg_mount "$2" "$PT" -o source="$1",cache="$3"
}

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }

# ---- results: one TSV line per measurement, aggregated at the end ----
# workload, fs, target, value, round: ROUND is the round (repetition) the
# loop running the measurement is in, so that targets measured in the
# same round can be compared round by round (per_round, lib.sh).
mktempdir /tmp; RES=$TMPD/results.tsv
: >"$RES"
ROUND=0
record() {	# workload fs target value (none: nothing recorded)
	[ -n "$4" ] || return 0
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$ROUND" >>"$RES"
}
# record_from OUT workload fs target SED: records what sed -n SED takes
# out of OUT, a benchmark's output.
record_from() { record "$2" "$3" "$4" "$(echo "$1" | sed -n "$5")"; }
NOTES=()
note() { NOTES+=("$*"); log "$*"; }

mib_per_s() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.1f", b / 1048576 / s }'; }	# none for no time

# ---- the backing file systems ----
FS_LIST=()
for pair in "tmpfs:$TMPFS_PARENT" "disk:$DISK_PARENT"; do
	FS_LIST+=("$pair")
done

src_lines() {	# FILE MIB: 100-byte lines
	yes "$(printf '%099d' 0)" | head -c $(($2 * 1048576)) >"$1" || true
	[ "$(stat -c %s "$1")" = $(($2 * 1048576)) ] || die "generating $1"
}

want() { case " $ONLY " in *" $1 "*) return 0;; esac; return 1; }

# ================= workloads 1-3, per file system =================
# The targets, all on one backing directory BACK:
#   native   BACK/native, the file system itself
#   pt       passthrough_ll of BACK, -o cache=auto (its default)
#   ptn      passthrough_ll of BACK, -o cache=never (direct_io)
#   pta      passthrough_ll of BACK, -o cache=always
#   floor    floorfs (its `sink` takes every write, keeps nothing)
#   tlogfs   tlogfs of BACK/store
# The appends (1, 2) go to native, pt, ptn, floor and tlogfs; the read
# (3) goes through native, pt, pta and tlogfs. What each comparison is
# worth is said with it in the report (COMPARE).
declare -A PT_CACHE=([pt]=auto [ptn]=never [pta]=always)
lines_per_s() { sed -n 's/.*lines_per_s=\([0-9]*\).*/\1/p'; }

run_fs_workloads() {	# NAME PARENT
	local fs=$1 parent=$2 back tmnt store r w t f n out t0 t1 k dir
	local -A mnt
	mktempdir "$parent"; back=$TMPD
	tmnt=$MNTROOT/tl-$fs
	store=$back/store
	mkdir -p "$back/native" "$back/pt" "$store"
	for t in pt ptn pta; do
		mnt[$t]=$MNTROOT/$t-$fs
		pt_mount "$back" "${mnt[$t]}" "${PT_CACHE[$t]}"
	done
	mnt[floor]=$MNTROOT/floor-$fs
	fg_mount "${mnt[floor]}" "$FLOORFS"
	tl_mount "$store" "$tmnt"

	if want 1; then
		log "$fs: workload 1, small appends ($SMALL_LINES lines of 100 bytes)"
		mkdir -p "$tmnt/small"
		for r in $(seq 1 $REPS); do
			ROUND=$r
			for w in 1 2; do
				for t in $(rotate $r native pt ptn floor tlogfs); do
					case $t in
					native) f=$back/native/small.log ;;
					floor) f=${mnt[floor]}/sink ;;
					tlogfs) mkdir "$tmnt/small/w$w-r$r"
						f=$tmnt/small/w$w-r$r/current ;;
					*) f=${mnt[$t]}/pt/small.log ;;
					esac
					out=$("$APPENDER" -n $SMALL_LINES -w $w "$f")
					record "1 small appends, $w writer(s) (lines/s)" $fs $t "$(echo "$out" | lines_per_s)"
					case $t in
					tlogfs) n=$(cat "$tmnt/small/w$w-r$r/"* | wc -l)
						[ "$n" = $SMALL_LINES ] || note "$fs: tlogfs small/w$w-r$r holds $n lines, expected $SMALL_LINES" ;;
					floor) ;;
					*) rm -f "$f" ;;
					esac
				done
			done
		done
	fi

	if want 2; then
		log "$fs: workload 2, bulk append (cat of $BULK_MIB MiB >> file)"
		local src=$TMPFS_SRC/bulk.src bytes=$((BULK_MIB * 1048576))
		mkdir -p "$tmnt/bulk"
		for r in $(seq 1 $REPS); do
			ROUND=$r
			for t in $(rotate $r native pt ptn floor tlogfs); do
				case $t in
				native) f=$back/native/bulk.log ;;
				floor) f=${mnt[floor]}/sink ;;
				tlogfs) mkdir "$tmnt/bulk/r$r"
					f=$tmnt/bulk/r$r/current ;;
				*) f=${mnt[$t]}/pt/bulk.log ;;
				esac
				t0=$(now); cat "$src" >>"$f"; t1=$(now)
				record "2 bulk append (MiB/s)" $fs $t "$(mib_per_s $bytes "$(elapsed $t0 $t1)")"
				case $t in
				tlogfs) n=$(cat "$tmnt/bulk/r$r/"* | wc -c)
					[ "$n" = $bytes ] || note "$fs: tlogfs bulk/r$r holds $n bytes, expected $bytes"
					rm -f "$tmnt/bulk/r$r/"* ;;
				floor) ;;
				*) rm -f "$f" ;;
				esac
			done
		done
	fi

	if want 3; then
		log "$fs: workload 3, read of sealed segments ($READ_MIB MiB, segment.bytes=$READ_SEG)"
		local rbytes=$((READ_MIB * 1048576)) files
		mkdir -p "$tmnt/read/0"
		setfattr -n user.segment.bytes -v $READ_SEG "$tmnt/read"
		head -c $rbytes "$TMPFS_SRC/bulk.src" >>"$tmnt/read/0/current"
		setfattr -n user.seal -v 1 "$tmnt/read/0/current"
		rbytes=$(cat "$store"/read/0/*.log | wc -c)
		[ "$rbytes" = $((READ_MIB * 1048576)) ] || note "$fs: read/0 holds $rbytes bytes"
		files=$(cd "$store/read/0" && ls *.log | wc -l)
		log "$fs: $files sealed segments"
		# The same segment files: natively (the store's own), through
		# passthrough_ll, through tlogfs. Cold: caches dropped, a FUSE
		# target freshly mounted; then two warm reads: the first moves
		# every page the cold read brought in to the active LRU list
		# (a cost per page, so per 4 KiB on FUSE), the second finds
		# them there (doc/performance.md, hotspot 9). A warm read that
		# keeps its page cache asks no daemon anything: the reader's
		# CPU time (user + system) is all it costs, a measure the
		# machine's other load moves less than the clock. Not so for
		# passthrough_ll's default (pt), whose daemon serves its warm
		# reads: its reader's CPU is not recorded.
		local TIMEFORMAT='%U %S' tf=$MNTROOT/time-$fs
		for r in $(seq 1 $REPS); do
			ROUND=$r
			for t in $(rotate $r native pt pta tlogfs); do
				case $t in
				native) drop_caches
					dir=$store/read/0 ;;
				tlogfs) tl_umount "$tmnt"; drop_caches
					tl_mount "$store" "$tmnt"
					dir=$tmnt/read/0 ;;
				*) fg_umount "${mnt[$t]}"; drop_caches
					pt_mount "$back" "${mnt[$t]}" "${PT_CACHE[$t]}"
					dir=${mnt[$t]}/store/read/0 ;;
				esac
				for k in "cold" "warm, 1st re-read" "warm, 2nd re-read"; do
					t0=$(now)
					{ time cat "$dir"/*.log >/dev/null; } 2>"$tf"
					t1=$(now)
					record "3 read, $k (MiB/s)" $fs $t "$(mib_per_s $rbytes "$(elapsed $t0 $t1)")"
					[ "$k" = cold ] || [ $t = pt ] ||
					record "3 read, $k (MiB per CPU second of the reader)" $fs $t "$(mib_per_s $rbytes "$(awk '{ print $1 + $2 }' "$tf")")"
				done
			done
		done
	fi

	tl_umount "$tmnt"
	for t in pt ptn pta floor; do
		fg_umount "${mnt[$t]}"
	done
	rm -rf --one-file-system "$back"
}

# ================= workload 4: the reaper (engine level) =================
run_reaper() {	# NAME PARENT
	local fs=$1 parent=$2 d r out
	log "$fs: workload 4, reaper wake-up ($WAKE_PARTS partitions, 10 due)"
	mktempdir "$parent"; d=$TMPD
	out=$("$TLBENCH" wakeup "$d/wake" $WAKE_PARTS 10 $REPS)
	echo "$out" >&2
	REAPER_WAKE[$fs]=$(echo "$out" | grep '^wakeup_10_due')
	REAPER_IDLE[$fs]=$(echo "$out" | grep '^wakeup_0_due')
	rm -rf "$d/wake"
	log "$fs: workload 4, drain of a $DRAIN_SEGS-segment backlog with appends"
	local dreps=$REPS
	# A backlog on disk takes ~30 s to write: three repetitions there.
	[ $fs = tmpfs ] || [ $dreps -le 3 ] || dreps=3
	for r in $(seq 1 $dreps); do
		ROUND=$r
		out=$("$TLBENCH" drain "$d/drain$r" $DRAIN_SEGS 100000)
		echo "$out" >&2
		record_from "$out" "4 backlog generation (s)" $fs engine 's/^drain_gen.*secs=\([0-9.]*\).*/\1/p'
		record_from "$out" "4 store open with backlog (s)" $fs engine 's/^drain_open secs=\([0-9.]*\).*/\1/p'
		record_from "$out" "4 deletion rate (segments/s)" $fs engine 's/^drain .*segments_per_s=\([0-9]*\).*/\1/p'
		record_from "$out" "4 append p50, idle (us)" $fs engine 's/^append_idle.*p50_us=\([0-9.]*\).*/\1/p'
		record_from "$out" "4 append p99, idle (us)" $fs engine 's/^append_idle.*p99_us=\([0-9.]*\).*/\1/p'
		record_from "$out" "4 append p50, during drain (us)" $fs engine 's/^append_drain.*p50_us=\([0-9.]*\).*/\1/p'
		record_from "$out" "4 append p99, during drain (us)" $fs engine 's/^append_drain.*p99_us=\([0-9.]*\).*/\1/p'
		rm -rf "$d/drain$r"
	done
	log "$fs: workload 4, retention.keep.free: a $DRAIN_SEGS-segment backlog on a full (fake) disk, then appends with and without pressure"
	for r in $(seq 1 $dreps); do
		ROUND=$r
		out=$("$TLBENCH" keepfree "$d/free$r" $DRAIN_SEGS $KEEPFREE_SECS)
		echo "$out" >&2
		record_from "$out" "4 keep.free deletion rate (segments/s)" $fs engine 's/^keepfree_backlog.*segments_per_s=\([0-9]*\).*/\1/p'
		record_from "$out" "4 keep.free append rate, off (appends/s)" $fs engine 's/^keepfree_off_rate appends_per_s=\([0-9]*\).*/\1/p'
		record_from "$out" "4 keep.free append rate, reclaiming (appends/s)" $fs engine 's/^keepfree_on_rate appends_per_s=\([0-9]*\).*/\1/p'
		record_from "$out" "4 keep.free append p99, off (us)" $fs engine 's/^keepfree_off .*p99_us=\([0-9.]*\).*/\1/p'
		record_from "$out" "4 keep.free append p99, reclaiming (us)" $fs engine 's/^keepfree_on .*p99_us=\([0-9.]*\).*/\1/p'
		record_from "$out" "4 keep.free segments reclaimed" $fs engine 's/^keepfree_reclaimed segments=\([0-9]*\).*/\1/p'
		rm -rf "$d/free$r"
	done
	rm -rf --one-file-system "$d"
}

# ================= workload 10: followers (a real mount) =================
# How soon a follower prints an append (1,000 at 100/s, one write each),
# its wake-ups while nothing is written (10 s), and what 100 followers
# cost the appends: tlogctl read --follow (poll(2) on the segment), GNU
# tail -F on current (it polls FUSE files by time), and the floor,
# tail -F on a native file (inotify), alone and with 100 more: what
# waking 101 followers per append costs this machine's cores whatever
# the filesystem. Targets rotated each round.
run_followers() {	# NAME PARENT
	local fs=$1 parent=$2 d mnt r t out w p
	mktempdir "$parent"; d=$TMPD
	mnt=$MNTROOT/follow-$fs
	mkdir -p "$d/native" "$d/store"
	tl_mount "$d/store" "$mnt"
	: >"$d/native/f.log"
	for r in $(seq 1 $REPS); do
		ROUND=$r
		for t in $(rotate "$r" native tlogctl tail native100 tlogctl100); do
			log "$fs: workload 10, round $r: $t"
			# A partition of its own: read --follow starts at
			# offset 0, and an earlier round's lines are no
			# latency.
			p=$mnt/f/r$r-$t
			mkdir -p "$p"
			case $t in
			native) out=$("$FOLLOWLAT" -i 10 "$d/native/f.log" -- \
			    tail -n 0 -F "$d/native/f.log") ;;
			native100) out=$("$FOLLOWLAT" -i 1 -q 100 \
			    "$d/native/f.log" -- \
			    tail -n 0 -F "$d/native/f.log") ;;
			tlogctl) out=$("$FOLLOWLAT" -i 10 "$p/current" -- \
			    "$TLOGCTL" read --follow "$p") ;;
			tail) out=$("$FOLLOWLAT" -i 10 "$p/current" -- \
			    tail -n 0 -F -s 0.2 --max-unchanged-stats=1 \
			    "$p/current") ;;
			tlogctl100) out=$("$FOLLOWLAT" -i 1 -q 100 \
			    "$p/current" -- "$TLOGCTL" read --follow "$p") ;;
			esac
			for w in p50 p99; do
				record_from "$out" "10 follow latency $w (ms)" $fs "$t" "/^follow /s/.* ${w}_ms=\([0-9.]*\).*/\1/p"
				record_from "$out" "10 append latency $w (us)" $fs "$t" "/^append /s/.* ${w}_us=\([0-9.]*\).*/\1/p"
			done
			record_from "$out" "10 follower wake-ups in 10 s idle" $fs "$t" 's/^idle seconds=10 switches=\([0-9]*\).*/\1/p'
			grep -q 'missing=0' <<<"$out" || note "$fs: follower $t missed lines: $(head -1 <<<"$out")"
		done
	done
	tl_umount "$mnt"
	rm -rf --one-file-system "$d"
}

# ================= workload 8: cursor commits (a real mount) =================
run_commits() {	# NAME PARENT
	local fs=$1 parent=$2 d r out
	log "$fs: workload 8, $COMMITS cursor commits (setxattr user.cursor.NAME)"
	mktempdir "$parent"; d=$TMPD
	mkdir -p "$d/store"
	tl_mount "$d/store" "$d/mnt"
	mkdir -p "$d/mnt/t/0"
	seq 1 1000 >>"$d/mnt/t/0/current"
	for r in $(seq 1 $REPS); do
		ROUND=$r
		out=$("$TLBENCH" commit "$d/mnt/t/0" $COMMITS)
		echo "$out" >&2
		record_from "$out" "8 cursor commits (commits/s)" $fs tlogfs 's/.*commits_per_s=\([0-9]*\).*/\1/p'
		record_from "$out" "8 cursor commit (us each)" $fs tlogfs 's/.*us_per_commit=\([0-9.]*\).*/\1/p'
	done
	tl_umount "$d/mnt"
	rm -rf --one-file-system "$d"
}

# ================= workload 9: tlogctl ship to JetStream =================
# Records/s of tlogctl ship --once of one partition of SHIP_LINES
# 100-byte lines (tmpfs) into a 1-node and a 3-node R3 JetStream cluster
# on loopback, against jsprobe pub: a plain libnats publisher of the same
# lines, asynchronous with the same window, without headers ("plain") and
# with every header tlogctl ship sets ("same headers"). Each repetition
# ships into a fresh stream.
run_ship() {	# NAME PARENT
	local fs=$1 parent=$2 d n r rep st t0 t1 out
	if [ ! -x "$JSPROBE" ] || ! command -v nats-server >/dev/null; then
		note "workload 9 skipped: no nats-server, or a build without libnats"
		return
	fi
	mktempdir "$parent"; d=$TMPD
	mkdir -p "$d/store"
	tl_mount "$d/store" "$d/mnt"
	mkdir -p "$d/mnt/t/0"
	yes "$(printf '%099d' 0)" | head -n $SHIP_LINES >"$d/lines" || true
	cat "$d/lines" >>"$d/mnt/t/0/current"
	# nats.sh wants TMP and JSPROBE; its nodes keep their stores on disk.
	TMP=$d
	NATS_DIR=$DISK_PARENT/tlbench-nats.$$
	DIRS+=("$NATS_DIR")
	. "$(dirname "$0")/../integration/nats.sh"
	for n in 1 3; do
		log "$fs: workload 9, ship $SHIP_LINES records to a $n-node cluster"
		nats_cluster $n || die "workload 9: nats-server did not start"
		for r in $(seq 1 $REPS); do
			ROUND=$n$r rep=$n$r
			for t in $(rotate $r ship plain headers); do
			case $t in
			ship)
			"$JSPROBE" stream "$NATS_URLS" S$rep "s$rep.>" $n ||
			    die "workload 9: stream"
			t0=$(now)
			"$TLOGCTL" ship --once --nats "$NATS_URLS" --stream S$rep \
			    --subject-prefix s$rep --cursor b$rep "$d/mnt/t/0" ||
			    die "workload 9: tlogctl ship"
			t1=$(now)
			st=$("$JSPROBE" msgs "$NATS_URLS" S$rep)
			[ "$st" = $SHIP_LINES ] ||
			    note "$n nodes: the stream holds $st records, expected $SHIP_LINES"
			record "9 ship, $n node(s) (records/s)" $fs "tlogctl ship" \
			    "$(awk -v n=$SHIP_LINES -v s="$(elapsed $t0 $t1)" 'BEGIN { printf "%.0f", n / s }')" ;;
			plain)
			"$JSPROBE" stream "$NATS_URLS" P$rep "p$rep.>" $n ||
			    die "workload 9: stream"
			out=$("$JSPROBE" pub "$NATS_URLS" P$rep p$rep.t.0 "$d/lines") ||
			    die "workload 9: jsprobe pub"
			record "9 ship, $n node(s) (records/s)" $fs "plain" "${out%% *}" ;;
			headers)
			"$JSPROBE" stream "$NATS_URLS" H$rep "h$rep.>" $n ||
			    die "workload 9: stream"
			out=$("$JSPROBE" pub "$NATS_URLS" H$rep h$rep.t.0 "$d/lines" all) ||
			    die "workload 9: jsprobe pub"
			record "9 ship, $n node(s) (records/s)" $fs "same headers" "${out%% *}" ;;
			esac
			done
		done
		nats_stop_all
		rm -rf "$NATS_DIR"
	done
	tl_umount "$d/mnt"
	rm -rf --one-file-system "$d"
}

# ================= workload 5: scale (disk) =================
run_scale() {	# NAME PARENT
	local fs=$1 parent=$2 d store mnt out r rss base nseg=$((SCALE_PARTS * SCALE_SEGS)) t0 t1
	mktempdir "$parent"; d=$TMPD
	mnt=$MNTROOT/scale-$fs
	# Baseline: the daemon's RSS on an empty store.
	mkdir -p "$d/empty"
	tl_mount "$d/empty" "$mnt"
	base=$(rss_kib $TL_PID)
	tl_umount "$mnt"
	# What a partition costs apart from its sealed segments: the same
	# partitions with their active segment only (mounted twice, the
	# second time from the checkpoint as below). The sealed segments'
	# own cost is then the difference over their count.
	log "$fs: workload 5, $SCALE_PARTS partitions x 1 segment (RSS of a partition)"
	"$TLBENCH" gen "$d/parts" scale $SCALE_PARTS 1 0 >/dev/null
	tl_mount "$d/parts" "$mnt"
	tl_umount "$mnt"
	tl_mount "$d/parts" "$mnt"
	SCALE_PART_KIB=$(rss_kib $TL_PID)
	tl_umount "$mnt"
	rm -rf --one-file-system "$d/parts"
	record "5 RSS per partition with its active segment, above empty-store baseline (bytes)" $fs tlogfs "$(awk -v k=$SCALE_PART_KIB -v b=$base -v n=$SCALE_PARTS 'BEGIN { printf "%.0f", (k - b) * 1024 / n }')"
	log "$fs: workload 5, generating $SCALE_PARTS partitions x $SCALE_SEGS segments"
	store=$d/store
	out=$("$TLBENCH" gen "$store" scale $SCALE_PARTS $SCALE_SEGS 0)
	log "$out"
	SCALE_GEN="$out"
	t0=$(now); tl_mount "$store" "$mnt"; t1=$(now)
	record "5 first mount of the generated store (s)" $fs tlogfs "$TL_MOUNT_SECS"
	ls "$mnt/scale/0" >/dev/null
	tl_umount "$mnt"
	for r in $(seq 1 $REPS); do
		ROUND=$r
		tl_mount "$store" "$mnt"
		record "5 mount after clean unmount, warm cache (s)" $fs tlogfs "$TL_MOUNT_SECS"
		rss=$(rss_kib $TL_PID)
		record "5 daemon RSS after clean mount (MiB)" $fs tlogfs "$(awk -v k=$rss 'BEGIN { printf "%.1f", k / 1024 }')"
		record "5 RSS per segment, above empty-store baseline (bytes)" $fs tlogfs "$(awk -v k=$rss -v b=$base -v n=$nseg 'BEGIN { printf "%.0f", (k - b) * 1024 / n }')"
		record "5 RSS per sealed segment, above the partitions' own (bytes)" $fs tlogfs "$(awk -v k=$rss -v b=$SCALE_PART_KIB -v n=$((nseg - SCALE_PARTS)) 'BEGIN { printf "%.0f", (k - b) * 1024 / n }')"
		tl_umount "$mnt"
		if [ $r -le 3 ]; then	# cold mounts are slow: three of them
			# Side by side: what listing the store costs cold,
			# the floor a clean mount (with its checkpoint,
			# doc/format.md) is measured against; which goes
			# first alternates round by round.
			if [ $((r % 2)) = 0 ]; then
				drop_caches
				tl_mount "$store" "$mnt"
				record "5 mount after clean unmount, cold cache (s)" $fs tlogfs "$TL_MOUNT_SECS"
				tl_umount "$mnt"
			fi
			drop_caches
			t0=$(now); ls -R "$store" >/dev/null; t1=$(now)
			record "5 ls -R of the store, cold cache (s)" $fs "ls -R" "$(elapsed $t0 $t1)"
			drop_caches
			tl_mount "$store" "$mnt"
			[ $((r % 2)) = 0 ] ||
				record "5 mount after clean unmount, cold cache (s)" $fs tlogfs "$TL_MOUNT_SECS"
		else
			tl_mount "$store" "$mnt"
		fi
		# crash: kill -9 once the daemon wrote its first periodic
		# checkpoint (at once after the mount; doc/format.md), as a
		# daemon that ran a while has; clear the dead mount, mount
		# again
		t0=$(now); wait_file "$store/.tlogfs/checkpoint"; t1=$(now)
		record "5 first periodic checkpoint on disk, after the mount returned (s)" $fs tlogfs "$(elapsed $t0 $t1)"
		kill -9 $TL_PID
		wait_gone $TL_PID
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
		tl_mount "$store" "$mnt"
		# After a cold clean mount the page cache holds no index
		# (the checkpoint spared them), so the crash's mount, which
		# reads every active segment's index, reads them from the
		# disk: apart.
		if [ $r -le 3 ]; then
			record "5 mount after kill -9, following a cold-cache mount (s)" $fs tlogfs "$TL_MOUNT_SECS"
		else
			record "5 mount after kill -9, warm cache (s)" $fs tlogfs "$TL_MOUNT_SECS"
		fi
		rss=$(rss_kib $TL_PID)
		record "5 daemon RSS after kill -9 mount (MiB)" $fs tlogfs "$(awk -v k=$rss 'BEGIN { printf "%.1f", k / 1024 }')"
		[ "$(cat "$mnt/scale/$((SCALE_PARTS - 1))/"* | wc -l)" = $SCALE_SEGS ] ||
			note "$fs: scale partition $((SCALE_PARTS - 1)) lost records after kill -9"
		tl_umount "$mnt"
	done
	RSS_BASE_KIB=$base
	log "$fs: removing the generated store"
	rm -rf --one-file-system "$d"
}

# ================= workload 6: against logrotate =================
count_lines() {	# files...: prints "unique total"
	cat "$@" | cut -c1-9 | sort | uniq -c |
		awk '{ u++; t += $1 } END { printf "%d %d\n", u, t }'
}

# One repetition of each side, in the order of the round: the same writer
# appending to a plain file that logrotate -f copytruncates three times
# (native), and to a tlogfs partition that seals on size (tlogfs).
lr_native() {	# FS DIR PERIOD
	local fs=$1 d=$2 period=$3 conf wpid ut i
	mkdir -p "$d"
	conf=$d/logrotate.conf
	printf '%s {\n\tcopytruncate\n\trotate 10\n\tmissingok\n\tnocompress\n}\n' \
	    "$d/app.log" >"$conf"
	"$APPENDER" -n $LR_LINES -r $LR_RATE "$d/app.log" >/dev/null &
	wpid=$!
	for i in 1 2 3; do
		sleep $period
		logrotate -f -s "$d/state" "$conf" || die "logrotate"
	done
	wait $wpid || die "appender (native, logrotate)"
	ut=$(count_lines "$d"/app.log*)
	record "6 lines lost, logrotate copytruncate" $fs native "$((LR_LINES - ${ut% *}))"
	record "6 lines duplicated, logrotate copytruncate" $fs native "$((${ut#* } - ${ut% *}))"
	rm -rf "$d"
}
lr_tlogfs() {	# FS PART
	local fs=$1 p=$2 ut
	mkdir "$p"
	"$APPENDER" -n $LR_LINES -r $LR_RATE "$p/current" >/dev/null ||
		die "appender (tlogfs)"
	ut=$(count_lines "$p"/*)
	record "6 lines lost, tlogfs sealing on size" $fs tlogfs "$((LR_LINES - ${ut% *}))"
	record "6 lines duplicated, tlogfs sealing on size" $fs tlogfs "$((${ut#* } - ${ut% *}))"
	record "6 tlogfs segments sealed" $fs tlogfs "$(($(ls "$p" | wc -l) - 1))"
	rm -f "$p"/*
}

run_logrotate() {	# NAME PARENT
	local fs=$1 parent=$2 d r t tmnt seg=$(( LR_LINES * 100 / 4 + 4096 ))
	if ! command -v logrotate >/dev/null; then
		note "workload 6 skipped: logrotate is not installed"
		return 0
	fi
	mktempdir "$parent"; d=$TMPD
	tmnt=$MNTROOT/lr-$fs
	log "$fs: workload 6, $LR_LINES lines at $LR_RATE lines/s, 3 rotations"
	# secs the writer needs; rotations at 1/4, 2/4, 3/4 of it
	local period
	period=$(awk -v n=$LR_LINES -v r=$LR_RATE 'BEGIN { printf "%.3f", n / r / 4 }')
	mkdir -p "$d/store"
	tl_mount "$d/store" "$tmnt"
	mkdir -p "$tmnt/lr"
	setfattr -n user.segment.bytes -v $seg "$tmnt/lr"
	for r in $(seq 1 $REPS); do
		ROUND=$r
		for t in $(rotate $r native tlogfs); do
			case $t in
			native) lr_native $fs "$d/lr$r" $period ;;
			tlogfs) lr_tlogfs $fs "$tmnt/lr/$r" ;;
			esac
		done
	done
	tl_umount "$tmnt"
	rm -rf --one-file-system "$d"
}

# ================= workload 7: pipe loggers =================
# The loggers a user would put behind `app |` instead, all writing to the
# same backing directory, each rotating at 16 MiB and keeping every file:
# rotatelogs (apache2-utils), multilog (daemontools), svlogd (runit),
# against tlogctl append and a plain cat >> current on a tlogfs partition
# with segment.bytes=16M. Two producers, the same for all loggers:
#   cat     cat of PIPE_LINES numbered 100-byte lines kept on tmpfs, as
#           fast as the pipe takes them: 128 KiB writes, the loggers'
#           best case;
#   write   appender writing PIPE_WLINES numbered 100-byte lines one
#           write(2) each, as an application logging line by line does.
# On disk and on tmpfs. Time: from the start of the pipeline to the
# logger's exit (everything written). A sync before each run (not timed)
# keeps one run's writeback out of the next. The machine's load moves
# single runs by a factor of 2 or more, so the report compares loggers
# round by round (per_round), each round starting with the next logger.
declare -A PRODUCER=([cat]="fed by cat (128 KiB writes)" [write]="fed one write(2) per line")
produce() {	# PRODUCER LINES SRC: the producer's lines on stdout
	case $1 in
	cat) cat "$3" ;;
	write) "$APPENDER" -n "$2" /dev/fd/3 3>&1 >/dev/null ;;
	esac
}
pipe_logger() {	# NAME PRODUCER LINES SRC OUT: runs one pipeline
	case $1 in
	rotatelogs) produce "$2" "$3" "$4" | rotatelogs "$5/app.log" 16M ;;
	multilog) produce "$2" "$3" "$4" | multilog s16777215 n1000 "$5" ;;
	svlogd) printf 's16777215\nn1000\n' >"$5/config"
		produce "$2" "$3" "$4" | svlogd "$5" ;;
	tlogctl) produce "$2" "$3" "$4" | "$TLOGCTL" append "$5" ;;
	cat) produce "$2" "$3" "$4" | cat >>"$5/current" ;;
	esac
}
pipe_lines() {	# NAME OUT: lines the logger stored
	case $1 in
	rotatelogs) cat "$2"/app.log* | wc -l ;;
	multilog|svlogd) cat "$2"/current "$2"/@* 2>/dev/null | wc -l ;;
	*) cat "$2"/* | wc -l ;;
	esac
}

ticks() {	# PID: its user + system clock ticks so far
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

run_pipe_loggers() {	# NAME PARENT
	local fs=$1 parent=$2 d tmnt src r l out t0 t1 c0 c1 n k p lines w
	local TIMEFORMAT='%R %U %S'
	local all=(rotatelogs multilog svlogd tlogctl cat) have=()
	declare -A pkg=([rotatelogs]=apache2-utils [multilog]=daemontools [svlogd]=runit)
	for l in "${all[@]}"; do
		if [ -n "${pkg[$l]:-}" ] && ! command -v $l >/dev/null; then
			note "workload 7: $l skipped, not installed (Debian package ${pkg[$l]})"
			continue
		fi
		have+=("$l")
	done
	mktempdir "$parent"; d=$TMPD
	tmnt=$MNTROOT/pipe-$fs
	src=$TMPFS_SRC/pipe.src
	awk -v n=$PIPE_LINES 'BEGIN { for (i = 0; i < n; i++) printf "%09d %089d\n", i, 0 }' >"$src"
	mkdir -p "$d/store"
	tl_mount "$d/store" "$tmnt"
	mkdir -p "$tmnt/pipe"
	setfattr -n user.segment.bytes -v 16M "$tmnt/pipe"
	for p in cat write; do
		lines=$PIPE_LINES
		[ $p = cat ] || lines=$PIPE_WLINES
		w="7 pipe loggers, $lines lines ${PRODUCER[$p]}"
		log "$fs: workload 7, $lines lines of 100 bytes ${PRODUCER[$p]} through ${have[*]}"
		for r in $(seq 1 $PIPE_REPS); do
			ROUND=$r
			for l in $(rotate $r "${have[@]}"); do
				case $l in
				tlogctl|cat) out=$tmnt/pipe/$l-$p-$r ;;
				*) out=$d/$l-$p-$r ;;
				esac
				mkdir -p "$out"
				sync
				c0=$(ticks $TL_PID)
				t0=$(now)
				{ time pipe_logger $l $p $lines "$src" "$out" 2>&3; } 3>&2 2>"$d/time" ||
				    die "workload 7: $l failed"
				t1=$(now)
				c1=$(ticks $TL_PID)
				record "$w (lines/s)" $fs $l \
				    "$(awk -v n=$lines -v s="$(elapsed $t0 $t1)" 'BEGIN { printf "%.0f", n / s }')"
				# CPU of the pipeline (producer included), and of
				# the daemon for the tlogfs ones (its clock ticks;
				# it serves nothing else here).
				case $l in tlogctl|cat) k=$((c1 - c0)) ;; *) k=0 ;; esac
				record "$w (CPU s per million lines)" $fs $l \
				    "$(awk -v k=$k -v hz=$(getconf CLK_TCK) -v n=$lines '{ printf "%.3f", ($2 + $3 + k / hz) / (n / 1e6) }' "$d/time")"
				n=$(pipe_lines $l "$out")
				[ "$n" = $lines ] || note "$fs: $l ${PRODUCER[$p]} stored $n lines, expected $lines"
				case $l in
				tlogctl|cat) rm -f "$out"/* ;;
				*) rm -rf "$out" ;;
				esac
			done
		done
	done
	tl_umount "$tmnt"
	rm -f "$src"
	rm -rf --one-file-system "$d"
}

# ================= workload 12: compressed history =================
# Corpora: /var/log/dpkg.log and /var/log/apt/history.log concatenated as
# they are ("system", never repeated), and Z_MIB MiB each of generated
# nginx combined access lines and JSON application lines. For each: the
# disk bytes of the compressed partition against zstd -3 of the same
# bytes as one frame (and logrotate's gzip -6), and the compression
# speed (the daemon's own seconds, from its metrics) against zstd -3
# -T1. Then, on the nginx corpus: sequential cat of the compressed
# partition against the same partition plain, warm and cold (a fresh
# daemon after drop_caches); tlogctl read --from N of random records;
# append latency (appender -L) idle and while a backlog compresses; the
# daemon's RSS against its frame cache (16 MiB).
gen_nginx() {	# FILE MIB
	awk -v n=$(($2 * 1048576)) 'BEGIN {
		srand(7); split("/ /index.html /api/v1/orders /static/app.js /static/style.css /login /img/logo.png /api/v1/items", p, " ")
		split("200 200 200 200 304 404 500", c, " ")
		ua[1] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0 Safari/537.36"
		ua[2] = "curl/7.88.1"; ua[3] = "Go-http-client/1.1"
		ua[4] = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 Version/17.1 Mobile/15E148 Safari/604.1"
		t = 1700000000; s = 0
		while (s < n) {
			t += rand() / 50
			u = p[int(rand() * 8) + 1]; if (u ~ /items/) u = u "?id=" int(rand() * 100000)
			l = sprintf("%d.%d.%d.%d - - [%s +0000] \"GET %s HTTP/1.1\" %s %d \"-\" \"%s\"", int(rand() * 223) + 1, int(rand() * 256), int(rand() * 256), int(rand() * 254) + 1, strftime("%d/%b/%Y:%H:%M:%S", int(t), 1), u, c[int(rand() * 7) + 1], int(rand() * 50000) + 100, ua[int(rand() * 4) + 1])
			print l; s += length(l) + 1
		}
	}' >"$1"
}
gen_json() {	# FILE MIB
	awk -v n=$(($2 * 1048576)) 'BEGIN {
		srand(11); split("info info info debug warn error", lv, " ")
		split("order created|payment ok|payment declined|item shipped|cache miss|retrying upstream", m, "|")
		t = 1700000000000; s = 0
		while (s < n) {
			t += int(rand() * 20)
			l = sprintf("{\"ts\":%d,\"level\":\"%s\",\"svc\":\"orders\",\"msg\":\"%s\",\"order_id\":%d,\"user\":%d,\"latency_ms\":%.2f}", t, lv[int(rand() * 6) + 1], m[int(rand() * 6) + 1], int(rand() * 1e7), int(rand() * 1e5), rand() * 300)
			print l; s += length(l) + 1
		}
	}' >"$1"
}
metric() { awk -v k="$2" '$1 == k { print $2 }' "$1/.tlogfs/metrics"; }
z_idle() {	# MNT: waits until nothing waits to be compressed
	local i
	for i in $(seq 1 36000); do
		[ "$(metric "$1" tlogfs_compress_backlog_segments)" = 0 ] && return 0
		sleep 0.05
	done
	die "compression did not finish"
}
pctl() {	# P: the P-th percentile of the numbers on stdin
	sort -n | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'
}
run_compress() {	# NAME PARENT
	local fs=$1 parent=$2 d mnt c src sz disk one gz t0 t1 s0 s1 i0 i1 r t
	local recs n k lat out
	mktempdir "$parent"; d=$TMPD
	mnt=$MNTROOT/z-$fs
	mkdir -p "$d/src" "$d/store"
	cat /var/log/dpkg.log /var/log/apt/history.log >"$d/src/system" \
	    2>/dev/null || true
	[ -s "$d/src/system" ] || note "$fs: no /var/log/dpkg.log or apt/history.log: corpus system skipped"
	log "$fs: workload 12: generating $Z_MIB MiB of nginx and JSON lines"
	gen_nginx "$d/src/nginx" "$Z_MIB"
	gen_json "$d/src/json" "$Z_MIB"
	tl_mount "$d/store" "$mnt"
	mkdir -p "$mnt/z" "$mnt/p"
	setfattr -n user.compression.type -v zstd "$mnt/z"
	for c in system nginx json; do
		src=$d/src/$c
		[ -s "$src" ] || continue
		sz=$(stat -c %s "$src")
		mkdir -p "$mnt/z/$c" "$mnt/p/$c"
		s0=$(metric "$mnt" tlogfs_compress_seconds_total)
		i0=$(metric "$mnt" tlogfs_compressed_in_bytes_total)
		"$TLOGCTL" append "$mnt/z/$c" <"$src"
		setfattr -n user.seal -v 1 "$mnt/z/$c"
		"$TLOGCTL" append "$mnt/p/$c" <"$src"
		setfattr -n user.seal -v 1 "$mnt/p/$c"
		z_idle "$mnt"
		log "$fs: workload 12: $c compressed"
		s1=$(metric "$mnt" tlogfs_compress_seconds_total)
		i1=$(metric "$mnt" tlogfs_compressed_in_bytes_total)
		disk=$(getfattr --absolute-names --only-values -n user.tlog.disk_bytes "$mnt/z/$c")
		one=$(zstd -3 -T1 -q -c "$src" | wc -c)
		gz=$(gzip -6 -c "$src" | wc -c)
		cmp -s "$src" <(cat "$mnt/z/$c"/*.log) || note "$fs: $c: cat of the compressed partition differs from what was written"
		record "12 $c ($sz bytes): disk / zstd -3 one frame" $fs tlogfs "$(awk -v a=$disk -v b=$one 'BEGIN { printf "%.3f", a / b }')"
		record "12 $c ($sz bytes): ratio plain / disk" $fs tlogfs "$(awk -v a=$sz -v b=$disk 'BEGIN { printf "%.2f", a / b }')"
		record "12 $c ($sz bytes): ratio plain / disk" $fs "zstd -3" "$(awk -v a=$sz -v b=$one 'BEGIN { printf "%.2f", a / b }')"
		record "12 $c ($sz bytes): ratio plain / disk" $fs "gzip -6" "$(awk -v a=$sz -v b=$gz 'BEGIN { printf "%.2f", a / b }')"
		for r in $(seq 1 $REPS); do
			ROUND=$r
			t0=$(now); zstd -3 -T1 -q -c "$src" >/dev/null; t1=$(now)
			record "12 $c: compression MB/s (one core)" $fs "zstd -3" "$(awk -v b=$sz -v s=$(elapsed $t0 $t1) 'BEGIN { printf "%.1f", b / 1e6 / s }')"
		done
		ROUND=0
		record "12 $c: compression MB/s (one core)" $fs tlogfs "$(awk -v b=$((i1 - i0)) -v s0=$s0 -v s1=$s1 'BEGIN { printf "%.1f", b / 1e6 / (s1 - s0) }')"
	done
	# Sequential cat, warm and cold, compressed against plain.
	for r in $(seq 1 $REPS); do
		ROUND=$r
		for t in $(rotate "$r" z p); do
			cat "$mnt/$t/nginx/"*.log >/dev/null
			t0=$(now); cat "$mnt/$t/nginx/"*.log >/dev/null; t1=$(now)
			record "12 cat of the nginx partition, warm (MiB/s)" $fs "$t" "$(mib_per_s $(stat -c %s "$d/src/nginx") $(elapsed $t0 $t1))"
			tl_umount "$mnt"; drop_caches; tl_mount "$d/store" "$mnt"
			t0=$(now); cat "$mnt/$t/nginx/"*.log >/dev/null; t1=$(now)
			record "12 cat of the nginx partition, cold (MiB/s)" $fs "$t" "$(mib_per_s $(stat -c %s "$d/src/nginx") $(elapsed $t0 $t1))"
		done
	done
	record "12 daemon RSS after the cats (KiB)" $fs z "$(rss_kib "$TL_PID")"
	# Random reads of one record by offset.
	recs=$(getfattr --absolute-names --only-values -n user.tlog.end_offset "$mnt/z/nginx")
	for t in z p; do
		lat=$d/lat.$t
		: >"$lat"
		for k in $(seq 1 $Z_READS); do
			n=$(( (RANDOM * 32768 + RANDOM) % recs ))
			t0=$(now)
			{ "$TLOGCTL" read --from "$n" "$mnt/$t/nginx" 2>/dev/null |
			    head -1 >/dev/null; } || true
			t1=$(now)
			awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >>"$lat"
		done
		record "12 tlogctl read --from N | head -1, p50 (ms)" $fs "$t" "$(pctl 50 <"$lat")"
		record "12 tlogctl read --from N | head -1, p99 (ms)" $fs "$t" "$(pctl 99 <"$lat")"
		# The same reads without a process each (tlbench seekread),
		# cold: a fresh daemon after drop_caches.
		tl_umount "$mnt"; drop_caches; tl_mount "$d/store" "$mnt"
		out=$("$TLBENCH" seekread "$mnt/$t/nginx" $Z_READS)
		record_from "$out" "12 read of one record by offset, in-process, cold, p50 (ms)" $fs "$t" 's/.* p50_ms=\([0-9.]*\).*/\1/p'
		record_from "$out" "12 read of one record by offset, in-process, cold, p99 (ms)" $fs "$t" 's/.* p99_ms=\([0-9.]*\).*/\1/p'
	done
	# Appends, idle and while a backlog compresses.
	mkdir -p "$mnt/a/0" "$mnt/z/backlog"
	setfattr -n user.segment.bytes -v 16M "$mnt/z/backlog"
	for r in $(seq 1 $REPS); do
		ROUND=$r
		out=$("$APPENDER" -L -n $Z_APPENDS -r 20000 "$mnt/a/0/current")
		record_from "$out" "12 append p99 (us)" $fs idle 's/.*p99_us=\([0-9.]*\).*/\1/p'
		for k in 1 2 3 4; do
			"$TLOGCTL" append "$mnt/z/backlog" <"$d/src/nginx"
		done
		out=$("$APPENDER" -L -n $Z_APPENDS -r 20000 "$mnt/a/0/current")
		[ "$(metric "$mnt" tlogfs_compress_backlog_segments)" != 0 ] ||
		    note "$fs: round $r: the backlog was gone before the appends ended"
		record_from "$out" "12 append p99 (us)" $fs "backlog" 's/.*p99_us=\([0-9.]*\).*/\1/p'
		z_idle "$mnt"
	done
	ROUND=0
	tl_umount "$mnt"
	rm -rf --one-file-system "$d"
}

# ================= run =================
START=$(now)
COMMIT=$(git -C "$BUILD" rev-parse --short HEAD 2>/dev/null || echo '?')
declare -A REAPER_WAKE REAPER_IDLE
SCALE_GEN=
RSS_BASE_KIB=
mktempdir "$TMPFS_PARENT"; TMPFS_SRC=$TMPD
if want 2 || want 3; then
	log "generating a $BULK_MIB MiB source file of 100-byte lines on tmpfs"
	mb=$BULK_MIB; [ $READ_MIB -gt $mb ] && mb=$READ_MIB
	src_lines "$TMPFS_SRC/bulk.src" $mb
fi
for pair in "${FS_LIST[@]}"; do
	fs=${pair%%:*} parent=${pair#*:}
	if want 1 || want 2 || want 3; then
		run_fs_workloads "$fs" "$parent"
	fi
done
rm -f "$TMPFS_SRC/bulk.src"
for pair in "${FS_LIST[@]}"; do
	fs=${pair%%:*} parent=${pair#*:}
	if want 4; then run_reaper "$fs" "$parent"; fi
	if want 6; then run_logrotate "$fs" "$parent"; fi
	if want 8; then run_commits "$fs" "$parent"; fi
	if want 10; then run_followers "$fs" "$parent"; fi
done
# Shipping from tmpfs: the network side is measured, not the disk.
if want 9; then run_ship tmpfs "$TMPFS_PARENT"; fi
if want 11; then run_ship_follow tmpfs "$TMPFS_PARENT"; fi
# Scale on disk only: 2M small files would take ~10 GiB of tmpfs.
if want 5; then run_scale disk "$DISK_PARENT"; fi
# The pipe loggers, on both file systems.
if want 7; then
	for pair in "${FS_LIST[@]}"; do
		run_pipe_loggers "${pair%%:*}" "${pair#*:}"
	done
fi
# Compressed history on disk, where its saving matters.
if want 12; then run_compress disk "$DISK_PARENT"; fi
END=$(now)

# ================= report =================
# shellcheck source=tests/bench/report.sh
. "$(dirname "$0")/report.sh"
report >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cp "$RES" "${OUT%.md}.tsv"
cat "$OUT"
log "report written to $OUT"
