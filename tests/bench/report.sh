#!/bin/bash
# shellcheck disable=SC2046 # cell and rounds print three words: fmt's arguments
# report.sh - the Markdown report of run.sh (sourced by it once every
# workload ran): report prints it from RES, the measurements, one TSV
# line each: workload, fs, target, value, round.
#
# A cell is a target's median [min-max] over the rounds. A comparison is
# A/B round by round, A and B measured side by side in the same round
# (the order rotated round after round), given as the median [min-max]
# of those ratios (per_round, lib.sh); never a ratio of medians, which
# pairs numbers from different rounds and different loads. Every
# comparison line says what it compares and whether it is like for like.

cell() {	# workload fs target -> median min max
	awk -F'\t' -v w="$1" -v f="$2" -v t="$3" '$1 == w && $2 == f && $3 == t { print $4 }' "$RES" | stats
}
# rounds WORKLOAD FS A B -> "median min max" of A/B, round by round
rounds() {
	awk -F'\t' -v w="$1" -v f="$2" -v OFS='\t' '$1 == w && $2 == f { print $5, $3, $4 }' "$RES" |
		per_round "$3" "$4" | stats
}
rows() {	# REGEX: the workloads (first column) matching it, in run order
	cut -f1 "$RES" | { grep -E "$1" || true; } | awk '!seen[$0]++'
}

# Workloads 1-3: the targets (run.sh, "workloads 1-3"), and what is
# compared. COMPARE: "WORKLOADS|A|B|LIKE FOR LIKE|WHAT", WORKLOADS the
# numbers it applies to.
TARGETS=(native pt ptn pta floor tlogfs)
declare -A TARGET_NAME=([native]=native [pt]="passthrough_ll (cache=auto)"
	[ptn]="passthrough_ll -o cache=never" [pta]="passthrough_ll -o cache=always"
	[floor]="floorfs" [tlogfs]=tlogfs)
COMPARE=(
	"12|tlogfs|floor|the floor|tlogfs / floorfs (write only replies: a round trip per write(2), the limit)"
	"12|tlogfs|ptn|yes|tlogfs / passthrough_ll -o cache=never (both direct_io)"
	"12|tlogfs|pt|no|tlogfs / passthrough_ll cache=auto (its writes go through its page cache)"
	"12|ptn|floor|the floor|passthrough_ll -o cache=never / floorfs"
	"12|tlogfs|native|no|tlogfs / native"
	"3|tlogfs|pta|yes|tlogfs / passthrough_ll -o cache=always (both keep their page cache)"
	"3|tlogfs|pt|cold: yes, warm: no|tlogfs / passthrough_ll cache=auto (it drops its page cache at open: warm reads go to its daemon)"
	"3|tlogfs|native|no|tlogfs / native"
)

report_fs_workloads() {
	local w fs pair t e line
	[ -n "$(rows '^[123] ')" ] || return 0
	line="| workload | fs"
	for t in "${TARGETS[@]}"; do line="$line | ${TARGET_NAME[$t]}"; done
	echo "$line |"
	echo "|---|---|---|---|---|---|---|---|"
	rows '^[123] ' | while read -r w; do
		for pair in "${FS_LIST[@]}"; do
			fs=${pair%%:*}
			line="| $w | $fs"
			for t in "${TARGETS[@]}"; do
				line="$line | $(fmt $(cell "$w" $fs $t))"
			done
			echo "$line |"
		done
	done
	echo
	echo "| workload | fs | compares | like for like | per round: median [min-max] |"
	echo "|---|---|---|---|---|"
	rows '^[123] ' | while read -r w; do
		for pair in "${FS_LIST[@]}"; do
			fs=${pair%%:*}
			for e in "${COMPARE[@]}"; do
				IFS='|' read -r ws a b alike what <<<"$e"
				case $ws in *"${w%% *}"*) ;; *) continue ;; esac
				line=$(fmtr $(rounds "$w" $fs $a $b))
				[ "$line" = - ] && continue
				echo "| $w | $fs | $what | $alike | $line |"
			done
		done
	done
}

report_engine() {	# workloads 4, 5, 6, 8: one target each, or a floor
	local w fs t m a b label
	[ -n "$(rows '^[4568] ')${REAPER_WAKE[*]}" ] || return 0
	echo
	echo "| measurement | fs | value |"
	echo "|---|---|---|"
	for fs in tmpfs disk; do
		[ -n "${REAPER_WAKE[$fs]:-}" ] || continue
		echo "| 4 reaper wake-up, $WAKE_PARTS partitions, 10 due (ms) | $fs | $(echo "${REAPER_WAKE[$fs]}" | awk '{ split($2, a, "="); split($3, b, "="); split($4, c, "="); printf "%s [%s-%s]", a[2], b[2], c[2] }') |"
		echo "| 4 reaper wake-up, $WAKE_PARTS partitions, 0 due (ms) | $fs | $(echo "${REAPER_IDLE[$fs]}" | awk '{ split($2, a, "="); split($3, b, "="); split($4, c, "="); printf "%s [%s-%s]", a[2], b[2], c[2] }') |"
	done
	rows '^[4568] ' | while read -r w; do
		for fs in tmpfs disk; do
			for t in engine native tlogfs "ls -R"; do
				read -r m a b <<<"$(cell "$w" $fs "$t")"
				[ "$m" = - ] && continue
				label=$w
				[ "$t" = engine ] || case $w in 6*) label="$w ($t)";; esac
				echo "| $label | $fs | $(fmt $m $a $b) |"
			done
		done
	done
	for fs in tmpfs disk; do
		m=$(awk -F'\t' -v f=$fs -v OFS='\t' '$2 == f && $1 == "5 mount after clean unmount, cold cache (s)" { print $5, "mount", $4 }
			$2 == f && $1 == "5 ls -R of the store, cold cache (s)" { print $5, "ls", $4 }' "$RES" |
			per_round mount ls | stats)
		[ "$(fmtr $m)" = - ] ||
			echo "| 5 cold mount / cold ls -R of the store, per round: median [min-max] | $fs | $(fmtr $m) |"
		# The target is each round's: the largest ratio, said apart.
		m=$(awk -F'\t' -v f=$fs -v OFS='\t' '$2 == f && $1 == "5 mount after kill -9, warm cache (s)" { print $5, "crash", $4 }
			$2 == f && $1 == "5 mount after clean unmount, warm cache (s)" { print $5, "clean", $4 }' "$RES" |
			per_round crash clean | stats)
		[ "$(fmtr $m)" = - ] ||
			echo "| 5 mount after kill -9 (periodic checkpoint on disk) / clean mount, warm, per round: median [min-max] | $fs | $(fmtr $m) |"
	done
}

report_pipe_loggers() {	# workload 7
	local w fs pair t label
	rows '^7 .*lines/s' | while read -r w; do
		for pair in "${FS_LIST[@]}"; do
			fs=${pair%%:*}
			[ "$(fmt $(cell "$w" $fs tlogctl))" = - ] && continue
			echo
			echo "| $w, $fs | lines/s | tlogctl append / this, per round: median [min-max] | CPU s per million lines (pipeline + daemon) |"
			echo "|---|---|---|---|"
			for t in rotatelogs multilog svlogd tlogctl cat; do
				[ "$(fmt $(cell "$w" $fs $t))" = - ] && continue
				case $t in
				tlogctl) label="tlogctl append PART" ;;
				cat) label="cat >> PART/current" ;;
				*) label=$t ;;
				esac
				echo "| $label | $(fmt $(cell "$w" $fs $t)) | $(fmtr $(rounds "$w" $fs tlogctl $t)) | $(fmt $(cell "${w% (lines/s)} (CPU s per million lines)" $fs $t)) |"
			done
		done
	done
}

report_followers() {	# workload 10
	local w fs pair line t
	[ -n "$(rows '^10 ')" ] || return 0
	echo
	echo "| workload 10 | fs | tail -F, native (inotify) | tlogctl read --follow | tail -F on current | native tail -F, 100 more | tlogctl, 100 more | tlogctl / native tail -F, per round: median [min-max] | 100 more / alone: tlogctl (issue target: append p99 at most 1.5) | 100 more / alone: native tail -F (the cores' share) |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	rows '^10 ' | while read -r w; do
		for pair in "${FS_LIST[@]}"; do
			fs=${pair%%:*}
			line="| ${w#10 } | $fs"
			for t in native tlogctl tail native100 tlogctl100; do
				line="$line | $(fmt $(cell "$w" $fs $t))"
			done
			echo "$line | $(fmtr $(rounds "$w" $fs tlogctl native)) | $(fmtr $(rounds "$w" $fs tlogctl100 tlogctl)) | $(fmtr $(rounds "$w" $fs native100 native)) |"
		done
	done
}

report_ship() {	# workload 9
	local w
	[ -n "$(rows '^9 ')" ] || return 0
	echo
	echo "| workload 9, tmpfs | tlogctl ship | plain libnats | ship / plain, per round | same headers | ship / same headers (like for like), per round |"
	echo "|---|---|---|---|---|---|"
	rows '^9 ' | while read -r w; do
		echo "| ${w#9 } | $(fmt $(cell "$w" tmpfs "tlogctl ship")) | $(fmt $(cell "$w" tmpfs plain)) | $(fmtr $(rounds "$w" tmpfs "tlogctl ship" plain)) | $(fmt $(cell "$w" tmpfs "same headers")) | $(fmtr $(rounds "$w" tmpfs "tlogctl ship" "same headers")) |"
	done
}

report_compress() {	# workload 12
	local w t
	[ -n "$(rows '^12 ')" ] || return 0
	echo
	echo "| workload 12, disk | target | value |"
	echo "|---|---|---|"
	cut -f1,3 "$RES" | grep '^12 ' | awk '!seen[$0]++' | while IFS=$'\t' read -r w t; do
		echo "| ${w#12 } | $t | $(fmt $(cell "$w" disk "$t")) |"
	done
	for w in "12 cat of the nginx partition, warm (MiB/s)" \
	    "12 cat of the nginx partition, cold (MiB/s)"; do
		cut -f1 "$RES" | grep -qxF "$w" &&
		    echo "| ${w#12 }: compressed / plain, per round | | $(fmtr $(rounds "$w" disk z p)) |"
	done
	w="12 append p99 (us)"
	cut -f1 "$RES" | grep -qxF "$w" &&
	    echo "| append p99: with a backlog / idle, per round | | $(fmtr $(rounds "$w" disk backlog idle)) |"
	return 0
}

report() {
	local n
	echo "# tlogfs benchmark results"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) cores," \
		"$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM," \
		"libfuse $(pkg-config --modversion fuse3), commit $COMMIT at the start," \
		"BENCH_QUICK=$QUICK, $REPS repetitions, total $(awk -v a=$START -v b=$END 'BEGIN { printf "%.0f", b - a }') s."
	echo
	echo "Cells: median [min-max] over the rounds. In each round every target runs once, the order rotated round after round; a comparison A / B is taken round by round and given as the median [min-max] of those ratios."
	echo
	report_fs_workloads
	report_engine
	report_pipe_loggers
	report_followers
	report_ship
	report_ship_follow
	report_compress
	echo
	[ -z "$SCALE_GEN" ] || echo "Workload 5 store: $SCALE_GEN (written directly in the on-disk format by tlbench gen); empty-store daemon RSS ${RSS_BASE_KIB} KiB."
	for n in "${NOTES[@]}"; do
		echo
		echo "Note: $n"
	done
}
