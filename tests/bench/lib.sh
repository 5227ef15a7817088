#!/bin/bash
# lib.sh - what the benchmark scripts share (sourced by run.sh and
# compare.sh): logging, cleanup of every mount, daemon and directory they
# made, tlogfs mounts, and median [min-max] statistics. tl_mount runs
# $TLOGFS.
log() { printf '%s [bench] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

# ---- cleanup: every mount, daemon and directory we made ----
MOUNTS=()	# mountpoints
PIDS=()		# daemons started in the foreground
DIRS=()		# temporary directories
cleanup() {
	local rc=$? m p d
	set +e
	for m in "${MOUNTS[@]}"; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null ||
				fusermount3 -uz "$m" 2>/dev/null
		fi
	done
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	sleep 0.2
	for d in "${DIRS[@]}"; do
		# Never descend into a mount that is still there.
		if grep -q " $d" /proc/mounts; then
			log "not removing $d: something is still mounted in it"
		else
			rm -rf --one-file-system "$d"
		fi
	done
	[ $rc = 0 ] || log "exit status $rc (mounts and temporary files removed)"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

TMPD=
mktempdir() {	# PARENT: sets TMPD (no subshell, so cleanup knows it)
	TMPD=$(mktemp -d "$1/tlbench.XXXXXX") || die "mktemp in $1"
	DIRS+=("$TMPD")
}

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# ---- mounts ----
wait_mounted() {
	local i
	for i in $(seq 1 3000); do
		mountpoint -q "$1" && return 0
		sleep 0.01
	done
	die "$1 did not mount"
}

wait_gone() {	# pid
	local i
	for i in $(seq 1 6000); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.01
	done
	die "daemon $1 did not exit"
}

wait_file() {	# PATH: until it exists (10 minutes at most)
	local i
	for i in $(seq 1 60000); do
		[ -e "$1" ] && return 0
		sleep 0.01
	done
	die "$1 did not appear"
}

TL_PID=
TL_MOUNT_SECS=
tl_mount() {	# STORE MNT [opts]
	local t0 t1
	mkdir -p "$2"
	MOUNTS+=("$2")
	t0=$(now)
	"$TLOGFS" "$1" "$2" ${3:+-o "$3"} || die "tlogfs $1 $2"
	t1=$(now)
	TL_MOUNT_SECS=$(elapsed "$t0" "$t1")
	wait_mounted "$2"
	TL_PID=$(tr -dc 0-9 <"$1/.tlogfs/lock")
	PIDS+=("$TL_PID")
}
tl_umount() {	# MNT
	fusermount3 -u "$1"
	wait_gone "$TL_PID"
}

# rotate ROUND ITEM...: the items, rotated by ROUND - 1 places, so that
# each comes first in turn, round after round.
rotate() {
	local r=$1 n i
	shift
	n=$#
	for i in $(seq 0 $((n - 1))); do
		eval "echo \${$(( (i + r - 1) % n + 1 ))}"
	done
}

stats() {	# values on stdin -> "median min max"
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "- - -"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		print m, v[1], v[NR] }'
}
# per_round A B: on stdin lines "ROUND<TAB>TARGET<TAB>VALUE"; prints A's
# value over B's for every round that measured both, one a line (for
# stats). Targets run side by side in each round, so a round's ratio is
# taken under the same load: the median of these, with their min-max, is
# what the reports compare, never a ratio of medians from different
# rounds.
per_round() {
	awk -F'\t' -v a="$1" -v b="$2" '$2 == a { x[$1] = $3 } $2 == b { y[$1] = $3 }
		END { for (r in x) if ((r in y) && y[r] > 0) print x[r] / y[r] }'
}
fmt() {	# median min max -> "m [min-max]"
	awk -v m="$1" -v a="$2" -v b="$3" 'function f(x) {
		if (x == "-") return x
		if (x + 0 >= 1000) return sprintf("%.0f", x)
		if (x + 0 >= 10) return sprintf("%.1f", x)
		return sprintf("%.3g", x) }
		BEGIN { if (m == "-") print "-"; else printf "%s [%s-%s]\n", f(m), f(a), f(b) }'
}
fmtr() {	# median min max of ratios -> "m [min-max]": two decimals, two
	# significant digits below 0.1, none from 100
	awk -v m="$1" -v a="$2" -v b="$3" 'function f(x) {
		if (x + 0 >= 100) return sprintf("%.0f", x)
		return x + 0 < 0.095 ? sprintf("%.2g", x) : sprintf("%.2f", x) }
		BEGIN { if (m == "-") print "-"; else printf "%s [%s-%s]\n", f(m), f(a), f(b) }'
}
