# shipfollow.sh - sourced by run.sh: workload 11, tlogctl ship following
# (doc/shipping.md, Following; doc/performance.md). Needs what run.sh
# and lib.sh define (record, note, tl_mount, mktempdir, $JSPROBE...).
#
# One tlogctl ship follows the whole mount: BENCH_SHIP_PARTS (default
# 10,000) idle partitions of one record each, and one live partition,
# into a 1-node JetStream on loopback. Once every idle partition's record
# is in the stream (the start), each repetition measures, over
# SHIPF_IDLE_S seconds with nothing written, the CPU time of the shipper
# and of the daemon (utime + stime, /proc/PID/stat) and the shipper's
# voluntary context switches (all its threads); then followlat appends
# 1,000 lines at 100/s to the live partition, one write each, and reads
# them back from the stream (jsprobe follow: an ordered push consumer,
# to which JetStream delivers a message once stored, as it acknowledges
# it): append to stored latency, p50 and p99. Each partition followed
# holds two descriptors (its directory, its open segment): with a lower
# RLIMIT_NOFILE the partitions are as many as it allows, and a note says
# so. BENCH_SHIP_TLOGCTL runs another build's tlogctl (a before/after).

SHIPF_PARTS=${BENCH_SHIP_PARTS:-10000}
SHIPF_IDLE_S=20

# The shipper's voluntary context switches, all threads.
shipf_switches() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
	    awk '/^voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }'
}

run_ship_follow() {	# NAME PARENT
	local fs=$1 parent=$2 d mnt n max i r out spid c0 c1 t0 t1 v0 v1 st
	local hz tlogctl=${BENCH_SHIP_TLOGCTL:-$TLOGCTL}
	if [ ! -x "$JSPROBE" ] || ! command -v nats-server >/dev/null; then
		note "workload 11 skipped: no nats-server, or a build without libnats"
		return
	fi
	hz=$(getconf CLK_TCK)
	mktempdir "$parent"; d=$TMPD
	mnt=$MNTROOT/shipf-$fs
	mkdir -p "$d/store"
	tl_mount "$d/store" "$mnt"
	max=$((($(ulimit -n) - 100) / 2))
	n=$SHIPF_PARTS
	if [ "$n" -gt "$max" ]; then
		note "workload 11: $n partitions need 2 descriptors each; ulimit -n $(ulimit -n) allows $max, so $max idle partitions"
		n=$max
	fi
	log "$fs: workload 11, ship following $n idle partitions and one live one"
	mkdir -p "$mnt/idle" "$mnt/live/0"
	(cd "$mnt/idle" && seq 1 "$n" | xargs mkdir) || die "workload 11: mkdir"
	for i in $(seq 1 "$n"); do
		echo x >>"$mnt/idle/$i/current"
	done
	TMP=$d
	NATS_DIR=$DISK_PARENT/tlbench-natsf.$$
	DIRS+=("$NATS_DIR")
	. "$(dirname "$0")/../integration/nats.sh"
	nats_cluster 1 || die "workload 11: nats-server did not start"
	"$tlogctl" ship --nats "$NATS_URLS" --stream F "$mnt" 2>"$d/ship.err" &
	spid=$!
	PIDS+=("$spid")
	t0=$(now)
	for i in $(seq 1 600); do
		st=$("$JSPROBE" msgs "$NATS_URLS" F 2>/dev/null || echo 0)
		[ "$st" -ge "$n" ] && break
		sleep 1
	done
	[ "$st" -ge "$n" ] || die "workload 11: the stream holds $st records of $n"
	record "11 ship start, $n partitions (s)" $fs "tlogctl ship" "$(elapsed "$t0" "$(now)")"
	sleep 2		# the last answers and commits
	for r in $(seq 1 "$REPS"); do
		log "$fs: workload 11, round $r: ${SHIPF_IDLE_S} s idle"
		c0=$(ticks "$spid") t0=$(ticks "$TL_PID") v0=$(shipf_switches "$spid")
		sleep "$SHIPF_IDLE_S"
		c1=$(ticks "$spid") t1=$(ticks "$TL_PID") v1=$(shipf_switches "$spid")
		record "11 ship idle: CPU (% of a core)" $fs "tlogctl ship" \
		    "$(awk -v t=$((c1 - c0)) -v hz="$hz" -v s=$SHIPF_IDLE_S 'BEGIN { printf "%.3f", t / hz / s * 100 }')"
		record "11 ship idle: CPU (% of a core)" $fs "tlogfs daemon" \
		    "$(awk -v t=$((t1 - t0)) -v hz="$hz" -v s=$SHIPF_IDLE_S 'BEGIN { printf "%.3f", t / hz / s * 100 }')"
		record "11 ship idle: voluntary context switches per s" $fs "tlogctl ship" \
		    "$(awk -v v=$((v1 - v0)) -v s=$SHIPF_IDLE_S 'BEGIN { printf "%.2f", v / s }')"
		log "$fs: workload 11, round $r: 1000 appends at 100/s to the live partition"
		out=$("$FOLLOWLAT" -n 1000 -r 100 -i 1 "$mnt/live/0/current" -- \
		    "$JSPROBE" follow "$NATS_URLS" F tlog.live.0)
		record_from "$out" "11 append to stored p50 (ms)" $fs "tlogctl ship" '/^follow /s/.* p50_ms=\([0-9.]*\).*/\1/p'
		record_from "$out" "11 append to stored p99 (ms)" $fs "tlogctl ship" '/^follow /s/.* p99_ms=\([0-9.]*\).*/\1/p'
		grep -q 'missing=0' <<<"$out" || note "$fs: workload 11 missed records: $(head -1 <<<"$out")"
		sleep 2
	done
	kill "$spid"
	wait "$spid" || note "workload 11: tlogctl ship exited $?: $(tail -1 "$d/ship.err")"
	nats_stop_all
	rm -rf "$NATS_DIR"
	tl_umount "$mnt"
	rm -rf --one-file-system "$d"
}

report_ship_follow() {	# the rows of workload 11, if it ran
	local w t m a b
	grep -q '^11 ' "$RES" || return 0
	echo
	echo "| workload 11, tmpfs | what | median [min-max] |"
	echo "|---|---|---|"
	cut -f1 "$RES" | grep '^11 ' | awk '!seen[$0]++' | while read -r w; do
		for t in "tlogctl ship" "tlogfs daemon"; do
			read -r m a b <<<"$(cell "$w" tmpfs "$t")"
			[ "$m" = - ] || echo "| ${w#11 } | $t | $(fmt $m $a $b) |"
		done
	done
}
