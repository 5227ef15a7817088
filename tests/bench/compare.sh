#!/bin/bash
# compare.sh BASE NEW - two builds of tlogfs side by side: does NEW run
# slower than BASE? The workloads the engine's core decides (small
# appends through a mount, the reaper's wake-up, the drain of a backlog
# with appends, a cold mount), both builds in every round, the order
# rotated each round; each row gives both medians and the median of the
# per-round ratios NEW/BASE with their min-max, and the physical floor
# beside it (the native file system, a cold ls -R). BASE and NEW are
# build directories with mount/tlogfs, tests/bench/appender and
# tests/bench/tlbench built (make bench builds them; for an older commit:
# git worktree add DIR COMMIT, then ./bootstrap && ./configure && make
# && make tests/bench/appender tests/bench/tlbench in DIR).
#
# Environment:
#   CMP_ROUNDS   rounds (default 5)
#   CMP_PARENT   where the stores go (default /var/tmp: the disk)
#   CMP_LINES    lines per small-append run (default 100000)
#   CMP_PARTS    partitions for the wake-up (default 100000, 10 due)
#   CMP_SEGS     segments in the drain's backlog (default 20000)
#   CMP_SCALE    partitions x 10 segments for the cold mount (default 5000)
#   CMP_OUT      the report (default NEW/tests/bench/compare.md)
#
# Needs root (FUSE mounts, drop_caches).
set -eu
set -o pipefail

BASE=$(cd "${1:?usage: compare.sh BASE NEW}" && pwd)
NEW=$(cd "${2:?usage: compare.sh BASE NEW}" && pwd)
ROUNDS=${CMP_ROUNDS:-5}
PARENT=${CMP_PARENT:-/var/tmp}
LINES=${CMP_LINES:-100000}
PARTS=${CMP_PARTS:-100000}
SEGS=${CMP_SEGS:-20000}
SCALE=${CMP_SCALE:-5000}
OUT=${CMP_OUT:-$NEW/tests/bench/compare.md}

# shellcheck source=tests/bench/lib.sh
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || die "needs root (FUSE mounts, drop_caches)"
for b in "$BASE" "$NEW"; do
	for f in mount/tlogfs tests/bench/appender tests/bench/tlbench; do
		[ -x "$b/$f" ] || die "$b/$f not built"
	done
done

mktempdir "$PARENT"; D=$TMPD
mktempdir /tmp; MNTROOT=$TMPD
RES=$D/results.tsv
: >"$RES"
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RES"; }	# ROW WHO ROUND VALUE
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | head -1; }	# KEY < tlbench line

# The builds of a round, in this round's order: BASE first in odd
# rounds, NEW first in even ones (rotate, lib.sh).
order() { rotate "$1" base new | xargs; }
dir_of() { if [ "$1" = base ]; then echo "$BASE"; else echo "$NEW"; fi; }

# ---- a tlogfs mount per build, kept for the small appends ----
declare -A MNT PID
for who in base new; do
	TLOGFS=$(dir_of $who)/mount/tlogfs
	mkdir -p "$D/store-$who"
	tl_mount "$D/store-$who" "$MNTROOT/$who"
	MNT[$who]=$MNTROOT/$who PID[$who]=$TL_PID
done
mkdir -p "$D/native"

for r in $(seq 1 "$ROUNDS"); do
	log "round $r of $ROUNDS ($(order "$r"))"
	for w in 1 2; do
		out=$("$NEW/tests/bench/appender" -n "$LINES" -w $w "$D/native/small.log")
		record "small appends, $w writer(s) (lines/s, higher is better)" native "$r" "$(echo "$out" | field lines_per_s)"
		rm -f "$D/native/small.log"
		for who in $(order "$r"); do
			mkdir -p "${MNT[$who]}/small/w$w-r$r"
			out=$("$(dir_of $who)/tests/bench/appender" -n "$LINES" -w $w "${MNT[$who]}/small/w$w-r$r/current")
			record "small appends, $w writer(s) (lines/s, higher is better)" $who "$r" "$(echo "$out" | field lines_per_s)"
			rm -rf "${MNT[$who]}/small/w$w-r$r"
		done
	done
	for who in $(order "$r"); do
		out=$("$(dir_of $who)/tests/bench/tlbench" wakeup "$D/wake-$who" "$PARTS" 10 1)
		record "reaper wake-up, $PARTS partitions, 10 due (ms, lower is better)" $who "$r" "$(echo "$out" | grep '^wakeup_10_due' | field median_ms)"
		rm -rf "$D/wake-$who"
	done
	for who in $(order "$r"); do
		out=$("$(dir_of $who)/tests/bench/tlbench" drain "$D/drain-$who" "$SEGS" 100000)
		record "drain of $SEGS segments (segments/s, higher is better)" $who "$r" "$(echo "$out" | grep '^drain ' | field segments_per_s)"
		record "append p99 during the drain (us, lower is better)" $who "$r" "$(echo "$out" | grep '^append_drain' | field p99_us)"
		rm -rf "$D/drain-$who"
	done
done

for who in base new; do
	TL_PID=${PID[$who]}
	tl_umount "${MNT[$who]}"
done

# ---- cold mounts: one generated store per build, its own checkpoint ----
log "generating two stores of $SCALE partitions x 10 segments"
for who in base new; do
	"$NEW/tests/bench/tlbench" gen "$D/scale-$who" scale "$SCALE" 10 0 >/dev/null
	TLOGFS=$(dir_of $who)/mount/tlogfs
	tl_mount "$D/scale-$who" "$MNTROOT/$who"
	tl_umount "$MNTROOT/$who"
done
for r in $(seq 1 "$ROUNDS"); do
	log "cold mounts, round $r of $ROUNDS"
	drop_caches
	t0=$(now); ls -R "$D/scale-new" >/dev/null; t1=$(now)
	record "cold mount after a clean unmount (s, lower is better)" native "$r" "$(elapsed "$t0" "$t1")"
	for who in $(order "$r"); do
		TLOGFS=$(dir_of $who)/mount/tlogfs
		drop_caches
		tl_mount "$D/scale-$who" "$MNTROOT/$who"
		record "cold mount after a clean unmount (s, lower is better)" $who "$r" "$TL_MOUNT_SECS"
		tl_umount "$MNTROOT/$who"
	done
done

# ---- the report ----
cell() { awk -F'\t' -v w="$1" -v t="$2" '$1 == w && $2 == t { print $4 }' "$RES" | stats; }
ratios() {	# ROW: NEW/BASE of each round
	awk -F'\t' -v w="$1" -v OFS='\t' '$1 == w { print $3, $2, $4 }' "$RES" |
		per_round new base | stats
}
{
	echo "# tlogfs: $(git -C "$NEW" log -1 --format=%h 2>/dev/null || echo NEW) against $(git -C "$BASE" log -1 --format=%h 2>/dev/null || echo BASE)"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) cores, $ROUNDS rounds, order rotated each round, stores in $PARENT."
	echo "Cells: median [min-max] over the rounds; the ratio is NEW/BASE per round, its median [min-max]."
	echo "The floor: the native file system (appends), a cold ls -R of the store (mount)."
	echo
	echo "| workload | base | new | new/base per round | floor |"
	echo "|---|---|---|---|---|"
	cut -f1 "$RES" | awk '!seen[$0]++' | while read -r w; do
		# shellcheck disable=SC2046
		printf '| %s | %s | %s | %s | %s |\n' "$w" \
			"$(fmt $(cell "$w" base))" "$(fmt $(cell "$w" new))" \
			"$(fmtr $(ratios "$w"))" "$(fmt $(cell "$w" native))"
	done
} >"$OUT"
cat "$OUT"
