# lib.sh - sourced by the torture tests (tests/torture/*.sh), on top of
# tests/integration/lib.sh (TAP, a fresh store and mountpoint, mounting).
# doc/reliability.md describes the suite; this file holds the pieces:
#
#   tt_run keep|delete                  the whole three-mount run
#   tt_writers SESSION SECONDS SPEC...  start a tt_writer per SPEC
#   tt_wait_writers LIMIT               wait for them (a hang fails)
#   tt_readers STRICT LENIENT           tail -F readers and a cat loop
#   tt_stop_readers                     stop them, check what they saw
#   tt_chaos SECONDS ARGS...            run tt_chaos, check its outcomes
#   tt_map FILE, tt_homes ...           which partition each epoch
#                                       opened, by name now
#   tt_ends FILE, tt_check_ends ...     end offsets never go back
#   tt_check_writers SESSION [CRASHED]  writers failed only as allowed
#   tt_check_view NAME mount|store ...  tt_check final on everything
#   tt_check_strays                     nothing stray in the store
#   tt_check_stderr NAME [EXTRA_ERE]    the daemon's output since the
#                                       last call
#   tt_freeze, tt_kill9                 stop deletions; kill -9 the daemon
#
# TORTURE_SECONDS sets each run's length (default per test: a few
# seconds in make check), TORTURE_SEED the random seed (default: the
# time; printed, so that a run can be repeated; the threads still race
# differently), TORTURE_KEEP=1 keeps the temporary directory (store,
# logs, acknowledgements) for a look after the run.

. "${srcdir:-.}/tests/integration/lib.sh"

TT_BIN=$TL_BUILD/tests/torture
TT_WRITER=$TT_BIN/tt_writer
TT_CHAOS=$TT_BIN/tt_chaos
TT_CHECK=$TT_BIN/tt_check
TT_SEED=${TORTURE_SEED:-$(date +%s)}
ACK=$TMP/ack
HOMES=$TMP/homes
mkdir -p "$ACK"
: >"$HOMES"
TT_WPIDS=
TT_RPIDS=
TT_ERRLINE=0
TT_ROUND=1

# A sanitizer report anywhere in the daemon's output fails the test.
TT_SANITIZER_ERE='(ERROR|WARNING): (Address|Thread|Leak|Memory|UndefinedBehavior)Sanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer'
# What the daemon may print during a torture run: the reaper's lines per
# cycle that deleted something (time rule, size rule), and a held partial
# line dropped because its partition was removed (a writer in pieces).
TT_ALLOWED_ERE='^tlogfs: reaper: [0-9]+ segments \([0-9]+ bytes\) (expired|over retention\.bytes removed) from [0-9]+ due partitions in [0-9.]+ ms$|^tlogfs: a held partial record is lost at close: No such file or directory$'
# What recovery may print after kill -9 (as in crashloop.sh).
TT_RECOVERY_ERE='^tlogfs: .*(torn or corrupt tail cut|bytes of an unfinished line cut|unsealed behind a newer segment; sealed|index without data removed|stray temporary file removed|\.idx: missing; rebuilding it from the data|\.idx: corrupt index; rebuilding it from the data)$'

# tt_writers SESSION SECONDS SPEC...: SPEC is ID:TOPIC/PART[:p|:pf]; p
# writes lines in pieces, pf also closes a dup after each piece (a
# FLUSH). Writers stop by themselves after SECONDS.
tt_writers() {
	local session=$1 secs=$2 spec id name opt
	shift 2
	for spec in "$@"; do
		id=${spec%%:*}
		name=${spec#*:}
		opt=
		case $name in
		*:p) opt=-p; name=${name%:p} ;;
		*:pf) opt=-pf; name=${name%:pf} ;;
		esac
		echo "$id $session" >>"$TMP/writers"
		# shellcheck disable=SC2086
		"$TT_WRITER" $opt -u "${TT_WRITER_USEC:-1000}" -S "$TT_SEED" \
		    "$MNT/$name" "$id" "$secs" "$ACK/ack.$id" \
		    2>>"$TMP/writer.err" &
		TT_WPIDS="$TT_WPIDS $!"
	done
}

# tt_wait_writers LIMIT: waits for the writers; not ok if one is still
# running LIMIT seconds later (a hung daemon), then kills them.
tt_wait_writers() {
	local p alive
	_tt_writers_done() {
		for p in $TT_WPIDS; do
			kill -0 "$p" 2>/dev/null && return 1
		done
		return 0
	}
	if tl_wait_for "$1" _tt_writers_done; then
		tl_ok "every writer finished"
	else
		alive=
		for p in $TT_WPIDS; do
			kill -0 "$p" 2>/dev/null && alive="$alive $p"
		done
		tl_not_ok "every writer finished" "still blocked:$alive" \
		    "$(cat /proc/$DPID/task/*/wchan 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
		for p in $alive; do kill -9 "$p" 2>/dev/null; done
	fi
	for p in $TT_WPIDS; do wait "$p" 2>/dev/null; done
	TT_WPIDS=
}

# tt_readers "STRICT" "LENIENT": a tail -F reader per TOPIC/PART named
# (STRICT: names no rename or rmdir touches, so each epoch's lines must
# come in order, none twice), and one loop of `cat DIR/*` and `ls -l DIR`
# over every partition, checked as it runs.
tt_readers() {
	local n kind names f
	rm -f "$TMP/readers.stop"
	for kind in strict lenient; do
		if [ $kind = strict ]; then names=$1; else names=$2; fi
		for n in $names; do
			f=$TMP/tail.$kind.$(echo "$n" | tr / _)
			echo "--- $kind tail $n" >"$f"
			tail -F -s 0.2 --max-unchanged-stats=1 -n +1 \
			    "$MNT/$n/current" >>"$f" 2>>"$f.err" &
			TT_RPIDS="$TT_RPIDS $!"
		done
	done
	(
		st=0 bad=0
		while [ ! -e "$TMP/readers.stop" ]; do
			for d in "$MNT"/*/*; do
				echo "--- strict cat $d" >"$TMP/cat.out"
				cat "$d"/* >>"$TMP/cat.out" 2>>"$TMP/cat.err"
				ls -l "$d" >/dev/null 2>>"$TMP/ls.err"
				"$TT_CHECK" stream -a "$ACK" <"$TMP/cat.out" \
				    >"$TMP/cat.check1" 2>&1 && continue
				st=1
				cat "$TMP/cat.check1" >>"$TMP/cat.check"
				# Keep the first few bad outputs for a look.
				bad=$((bad + 1))
				[ $bad -le 3 ] &&
				    mv "$TMP/cat.out" "$TMP/cat.bad.$TT_ROUND.$bad"
			done
		done
		rm -f "$TMP/cat.out" "$TMP/cat.check1"
		echo $st >"$TMP/cat.status"
	) &
	TT_CATPID=$!
}

tt_stop_readers() {
	local p f bad
	: >"$TMP/readers.stop"
	_tt_cat_done() { ! kill -0 "$TT_CATPID" 2>/dev/null; }
	if ! tl_wait_for 30 _tt_cat_done; then
		tl_not_ok "the cat reader finished" "a read hangs: $(cat \
		    /proc/"$DPID"/task/*/wchan 2>/dev/null | sort | uniq -c |
		    tr '\n' ' ')"
		pkill -9 -P "$TT_CATPID"
		echo 1 >"$TMP/cat.status"
	fi
	wait "$TT_CATPID"
	for p in $TT_RPIDS; do kill "$p" 2>/dev/null; done
	for p in $TT_RPIDS; do wait "$p" 2>/dev/null; done
	TT_RPIDS=
	if [ "$(cat "$TMP/cat.status")" = 0 ]; then
		tl_ok "cat DIR/* readers saw whole lines, each epoch's in order, none twice"
	else
		tl_not_ok "cat DIR/* readers saw whole lines, each epoch's in order, none twice" \
		    "$(grep -m 10 . "$TMP/cat.check")"
	fi
	rm -f "$TMP/cat.check"
	# ENOENT is a file deleted or a partition moved between the glob
	# and the open; anything else is an error.
	bad=$(cat "$TMP/cat.err" "$TMP/ls.err" 2>/dev/null |
	    grep -v 'No such file or directory$' | sort | uniq -c | head -5)
	tl_is "cat and ls readers got no error but ENOENT" "" "$bad"
	for f in "$TMP"/tail.*; do
		case $f in *.err|*.err.*|*.[0-9]) continue ;; esac
		# tail dies by SIGTERM: its last line may be cut (-k).
		if out=$("$TT_CHECK" stream -k -a "$ACK" <"$f" 2>&1); then
			tl_ok "$(head -n 1 "$f" | cut -c5-): $(echo "$out" | tail -n 1)"
		else
			tl_not_ok "$(head -n 1 "$f" | cut -c5-)" "$out"
		fi
		# tail's notes on files replaced, gone or back are expected.
		bad=$(grep -Ev "has been replaced|has become inaccessible|has appeared|file truncated|following new file|cannot open .* for reading: No such file or directory|No such file or directory$" \
		    "$f.err" | sort | uniq -c | head -5)
		tl_is "$(head -n 1 "$f" | cut -c5-): no error" "" "$bad"
		# A strict name is written throughout: a tail -F that follows
		# current prints some of it (it may miss segments that live
		# shorter than its polls, not all of them).
		case $f in
		*tail.strict.*)
			tl_check "$(head -n 1 "$f" | cut -c5-): follows current ($(($(wc -l <"$f") - 1)) lines)" \
			    test "$(wc -l <"$f")" -gt 1 ;;
		esac
		[ -n "${TORTURE_KEEP:-}" ] && mv "$f" "$f.$TT_ROUND" &&
		    mv "$f.err" "$f.err.$TT_ROUND"
		rm -f "$f" "$f.err"
	done
	rm -f "$TMP/cat.err" "$TMP/ls.err"
	TT_ROUND=$((TT_ROUND + 1))
}

# tt_chaos SECONDS ARGS...: runs tt_chaos in the foreground.
tt_chaos() {
	local secs=$1 st=0
	shift
	"$TT_CHAOS" -S "$TT_SEED" -u "${TT_CHAOS_USEC:-1000}" "$@" \
	    >"$TMP/chaos.out" 2>&1 || st=$?
	# The op mix, for the log.
	tl_diag "chaos: $(awk '{ printf "%s %s %s; ", $1, $2, $3 }' "$TMP/chaos.out")"
	if [ $st -eq 0 ]; then
		tl_ok "chaos: every operation's outcome is one a race explains"
	else
		tl_not_ok "chaos: every operation's outcome is one a race explains" \
		    "$(grep UNEXPECTED "$TMP/chaos.out" "$TMP/chaos.log" | head -10)"
	fi
}

# tt_map FILE: "INODE TOPIC/PART" for every partition now.
tt_map() {
	local d
	for d in "$MNT"/*/*; do
		[ -d "$d" ] && stat -c "%i ${d#"$MNT"/}" "$d"
	done >"$1"
}

# tt_homes SESSION MAPSTART MAPEND: moves the homes of earlier sessions'
# epochs along (by the path -> inode map taken when this session started
# and the inode -> path map at its end) and adds this session's epochs.
tt_homes() {
	local session=$1 start=$2 end=$3 id s
	awk 'FILENAME == ARGV[1] { ino[$2] = $1; next }
	    FILENAME == ARGV[2] { path[$1] = $2; next }
	    { h = $3
	      if (h != "-") h = (h in ino) && (ino[h] in path) ? path[ino[h]] : "-"
	      print $1, $2, h }' "$start" "$end" "$HOMES" >"$HOMES.new"
	while read -r id s; do
		[ "$s" = "$session" ] || continue
		awk 'FILENAME == ARGV[1] { path[$1] = $2; next }
		    $1 == "S" { print $2, $3, ($4 in path) ? path[$4] : "-" }' \
		    "$end" "$ACK/ack.$id"
	done <"$TMP/writers" >>"$HOMES.new"
	mv "$HOMES.new" "$HOMES"
}

# tt_check_writers SESSION [CRASHED]: every epoch of the session ended by
# choice, at the deadline or with ENOENT (its partition was removed or
# replaced: the contract), every failed open with ENOENT; with CRASHED
# also ENOTCONN and ECONNABORTED, from a write, an open or a close.
tt_check_writers() {
	local session=$1 ok='^(-|ENOENT)$' id s bad=
	[ -n "${2:-}" ] &&
	    ok='^(-|ENOENT|(close:)?ENOTCONN|(close:)?ECONNABORTED)$'
	while read -r id s; do
		[ "$s" = "$session" ] || continue
		bad="$bad$(awk -v ok="$ok" '
		    $1 == "E" && $5 !~ ok { n[$5]++ }
		    $1 == "O" && $3 !~ ok { n["open:" $3] += $4 }
		    END { for (e in n) printf " w%s %s x%d", id, e, n[e] }' \
		    id="$id" "$ACK/ack.$id")"
	done <"$TMP/writers"
	tl_is "session $session: writes and opens failed only with errors the contract allows" \
	    "" "$bad$(cat "$TMP/writer.err" 2>/dev/null)"
	awk -v s="$session" 'FILENAME == ARGV[1] { if ($2 == s) w[$1] = 1; next }
	    ($1 == "S") && ($2 in w) { ep++ }
	    ($1 == "E") && ($2 in w) { if ($4 >= 0) last[$2] = $4 }
	    END { for (i in last) n += last[i] + 1
	          printf "# session %s: %d epochs, about %d lines written\n", s, ep, n }' \
	    "$TMP/writers" "$ACK"/ack.*
}

# tt_partitions ROOT: every TOPIC/PART directory under ROOT.
tt_partitions() {
	local d
	for d in "$1"/*/*; do
		[ -d "$d" ] && echo "${d#"$1"/}"
	done
}

# tt_check_view NAME mount|store [tt_check options]: checks every
# partition against the acknowledgements (tt_check final). A mount is
# checked with every partition sealed first: the reaper's idle seal
# could otherwise move the active segment from `current` to its own
# name between the listing and the read, and the check would miss it.
tt_check_view() {
	local name=$1 view=$2 root out d
	shift 2
	if [ "$view" = mount ]; then
		root=$MNT
		for d in $(tt_partitions "$MNT"); do
			setfattr -n user.seal -v 1 "$MNT/$d"
		done
		set -- -m "$@"
	else
		root=$STORE
	fi
	# shellcheck disable=SC2046
	if out=$("$TT_CHECK" final -a "$ACK" -H "$HOMES" "$@" "$root" \
	    $(tt_partitions "$root") 2>&1); then
		tl_ok "$name: $(echo "$out" | tail -n 1)"
	else
		tl_not_ok "$name" "$(echo "$out" | head -n 30)"
	fi
}

# tt_ends FILE: "TOPIC/PART END_OFFSET" for every partition now.
tt_ends() {
	local d
	for d in $(tt_partitions "$MNT"); do
		echo "$d $(getfattr --absolute-names --only-values \
		    -n user.tlog.end_offset "$MNT/$d" 2>/dev/null)"
	done >"$1"
}

# tt_check_ends NAME FILE: no partition's end offset went back since
# FILE was taken (offsets are never reused, even after a restart, even
# when the newest segments were deleted).
tt_check_ends() {
	local bad
	tt_ends "$TMP/ends.now"
	bad=$(awk 'FILENAME == ARGV[1] { old[$1] = $2; next }
	    ($1 in old) && $2 + 0 < old[$1] + 0 {
		printf "%s: %d, was %d; ", $1, $2, old[$1] }' \
	    "$2" "$TMP/ends.now")
	tl_is "$1: no end offset went back" "" "$bad"
}

# tt_check_strays: after a clean unmount the store holds only what
# doc/format.md lists, and every segment has both its files.
tt_check_strays() {
	local bad d20=[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]
	d20=$d20$d20
	bad=$(cd "$STORE" && find . -mindepth 1 | awk -v seg="$d20" '
	    /^\.\/\.tlogfs$/ || /^\.\/\.tlogfs\/(format|lock|config|clean|checkpoint|boot|id|attr|events)$/ { next }
	    /^\.\/\.tlogfs\/events\/\.(config|next)$/ { next }
	    /^\.\/[A-Za-z0-9_][A-Za-z0-9._-]*(\/\.config)?$/ { next }
	    /^\.\/[A-Za-z0-9_][A-Za-z0-9._-]*\/[A-Za-z0-9_][A-Za-z0-9._-]*(\/(\.config|\.next))?$/ { next }
	    $0 ~ ("/" seg "\\.(log|idx)$") {
		k = substr($0, 1, length($0) - 4)
		have[k] = have[k] substr($0, length($0) - 2)
		next
	    }
	    { print "stray: " $0 }
	    END {
		for (k in have)
			if (have[k] != "logidx" && have[k] != "idxlog")
				print "half a segment: " k " has only " have[k]
	    }' | sort | head -20)
	tl_is "the store holds no stray file (*.orphan-*, *.tmp, half a segment)" "" "$bad"
}

# tt_check_stderr NAME [EXTRA_ERE]: the daemon's output since the last
# call has no sanitizer report and nothing but allowed lines.
tt_check_stderr() {
	local name=$1 ere=$TT_ALLOWED_ERE new san bad
	[ -n "${2:-}" ] && ere="$ere|$2"
	new=$(tail -n +"$((TT_ERRLINE + 1))" "$ERR")
	TT_ERRLINE=$(wc -l <"$ERR")
	san=$(printf '%s\n' "$new" | grep -E -A12 "$TT_SANITIZER_ERE" | head -40)
	if [ -n "$san" ]; then
		tl_not_ok "$name: no sanitizer report" "$san"
	else
		tl_ok "$name: no sanitizer report"
	fi
	bad=$(printf '%s\n' "$new" | grep -Ev "$ere" | grep . | sort | uniq -c |
	    sort -rn | head -10)
	tl_is "$name: the daemon printed nothing unexpected" "" "$bad"
}

# tt_freeze: no more deletions: every level's retention override goes,
# and the store default keeps everything (the reaper still seals idle
# segments, which moves nothing in the store).
tt_freeze() {
	local d
	for d in "$MNT" "$MNT"/* "$MNT"/*/*; do
		setfattr -x user.retention.ms "$d" 2>/dev/null
		setfattr -x user.retention.bytes "$d" 2>/dev/null
	done
	setfattr -n user.retention.ms -v -1 "$MNT"
	setfattr -n user.retention.bytes -v -1 "$MNT"
}

# tt_kill9: kills the daemon, removes the dead mount.
tt_kill9() {
	tl_kill 9 2>/dev/null
	"$FUSERMOUNT" -u -z "$MNT" 2>/dev/null
}

tt_cleanup() {
	local p
	for p in $TT_WPIDS $TT_RPIDS ${TT_CATPID:-}; do
		kill "$p" 2>/dev/null
	done
	: >"$TMP/readers.stop"
	tl_cleanup_mount	# before wait: the daemon is a child too
	wait 2>/dev/null
	if [ -n "${TORTURE_KEEP:-}" ]; then
		echo "# kept $TMP (TORTURE_KEEP)"
		return
	fi
	tl_cleanup
}
trap tt_cleanup EXIT

# tt_run keep|delete: the whole torture run, three mounts of one store.
#
#   1. writers, readers and tt_chaos for TORTURE_SECONDS; then, with
#      everything stopped, the mount, the clean unmount and the store
#      are checked;
#   2. mounted again (a clean remount): checked; then a second round of
#      writers, readers and chaos; the chaos stops, the writers go on,
#      and the daemon is killed with kill -9;
#   3. mounted again (recovery): checked; unmounted; the store checked.
#
# keep: no operation deletes data (no rm, retention of hours), so every
# acknowledged line must be there, exactly once. delete: rm of segments
# and of current, rm -rf of topics, retention of seconds and kilobytes:
# lines may go, but only where offsets went (tt_check's loss rule), and
# never twice, torn, out of order or in another partition.
tt_run() {
	local variant=$1 secs=${TORTURE_SECONDS:-4} nflag= dflag= crash
	local topics="a b c x y" parts="0 1 2 3 4 5" stable=s t p w
	# Writer 9 alone closes dups between pieces (FLUSH), on a partition
	# of its own, so what a FLUSH does shows there and nowhere else.
	local writers="1:a/0 2:a/1:p 3:a/2 4:b/0 5:b/1:p 6:c/0 7:s/0 8:s/1:p 9:s/2:pf"
	[ "$variant" = keep ] && nflag=-n
	[ "$variant" = delete ] && dflag=-D
	crash=ENOTCONN,ECONNABORTED
	tl_diag "variant $variant, $secs s a round, seed $TT_SEED (TORTURE_SEED=$TT_SEED repeats it)"

	tl_mount
	for t in a b c s; do
		for p in 0 1 2 3; do mkdir -p "$MNT/$t/$p"; done
	done
	setfattr -n user.segment.bytes -v 4K "$MNT"
	setfattr -n user.segment.ms -v 1s "$MNT"
	if [ "$variant" = keep ]; then
		setfattr -n user.retention.ms -v -1 "$MNT"
	else
		setfattr -n user.retention.ms -v 2s "$MNT"
		setfattr -n user.retention.bytes -v 32K "$MNT/s/1"
	fi

	# ---- round 1 ----
	tt_map "$TMP/map1.start"
	tt_readers "s/0 s/1" "a/0 b/1"
	tt_writers 1 "$secs" $writers
	tt_chaos "$secs" $dflag "$MNT" "$secs" "$TMP/chaos.log" \
	    "$topics" "$parts" "$stable"
	tt_wait_writers 30
	tt_stop_readers
	[ "$variant" = delete ] && tt_freeze
	tt_map "$TMP/map1.end"
	tt_homes 1 "$TMP/map1.start" "$TMP/map1.end"
	tt_check_writers 1
	tt_check_view "round 1, live mount" mount $nflag
	tt_ends "$TMP/ends1"
	tl_check "round 1: the daemon is alive" tl_daemon_alive
	tl_check "round 1: clean unmount, daemon exits 0" tl_umount
	tt_check_stderr "round 1"
	tt_check_strays
	tt_check_view "round 1, store after unmount" store $nflag -E "$TMP/ends1"

	# ---- round 2 ----
	tl_mount
	tt_check_view "round 2, after a clean remount" mount $nflag -E "$TMP/ends1"
	tt_check_ends "round 2, after a clean remount" "$TMP/ends1"
	tt_check_stderr "clean remount"
	tt_map "$TMP/map2.start"
	tt_readers "s/0 s/1" "a/0 b/1"
	tt_writers 2 "$((secs + 30))" $(for w in $writers; do
		echo "1$w"; done)
	tt_chaos "$secs" $dflag "$MNT" "$secs" "$TMP/chaos.log" \
	    "$topics" "$parts" "$stable"
	tt_map "$TMP/map2.end"
	tt_ends "$TMP/ends2"
	# The chaos is over (so the map holds); the writers are still
	# writing when the daemon dies.
	tt_stop_readers
	tl_check "round 2: the daemon is alive before kill -9" tl_daemon_alive
	tt_kill9
	tt_wait_writers 30
	tt_homes 2 "$TMP/map2.start" "$TMP/map2.end"
	tt_check_writers 2 crashed
	tt_check_stderr "round 2"

	# ---- round 3: recovery ----
	tl_mount
	[ "$variant" = delete ] && tt_freeze
	tt_check_view "round 3, after kill -9 and remount" mount $nflag \
	    -x $crash -E "$TMP/ends2"
	tt_check_ends "round 3, after kill -9 and remount" "$TMP/ends2"
	tt_check_stderr "recovery" "$TT_RECOVERY_ERE"
	tl_check "round 3: clean unmount, daemon exits 0" tl_umount
	tt_check_stderr "round 3"
	tt_check_strays
	tt_check_view "round 3, store after unmount" store $nflag -x $crash \
	    -E "$TMP/ends2"
	tl_done
}
