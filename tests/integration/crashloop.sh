#!/bin/bash
# crashloop.sh - CYCLES (default 5; 50 for the long run, see
# doc/reliability.md) cycles of: 4 writers append numbered lines in pieces
# (linewriter -p -a), the daemon is killed with kill -9, the dead mount
# goes with fusermount3 -u -z, the store is mounted again and checked.
#
#   CYCLES=50 make check TESTS=tests/integration/crashloop.sh
#
# The kill moment rotates over three kinds of cycle:
#   random  topic keep: kill after a random delay (0.3-1.5 s);
#   seal    topic keep: kill right after the partition's segment count
#           moved. keep has segment.bytes=1K, so a segment seals about
#           every 15 lines and seals are continuous: any kill is close to
#           one, these land just behind one;
#   reaper  topic reap (segment.bytes=1K, segment.ms=1s, retention.ms=2s):
#           after 2.3 s of writing the reaper deletes continuously; kill
#           right after the partition's start offset moved (a segment was
#           just detached: its unlink and event are in flight).
#
# After each cycle:
#   keep: every acknowledged line of every writer so far is there exactly
#         once and in order, from line 0; only the line in flight at the
#         kill may be there unacknowledged; no torn line; the partition's
#         end offset counts the lines.
#   reap: retention legitimately deletes old lines, so only: no torn line,
#         no duplicate, each writer's surviving lines consecutive, and the
#         acknowledged lines younger than retention.ms (measured at the end
#         of the read) are all there. Writers' acknowledgements are sampled
#         every 50 ms with a timestamp; if line a was the last acknowledged
#         at time t, line a+2 was appended after t, so the first sample at
#         or after (end of read - retention.ms) bounds the window.
#   both: the daemon printed nothing but recovery notes.
. "${srcdir:-.}/tests/integration/lib.sh"

CYCLES=${CYCLES:-5}
RETENTION_MS=2000
KEEP=$MNT/keep/0
REAP=$MNT/reap/0

# What a recovery after kill -9 may print, and the reaper's one line per
# cycle that deleted something; anything else is a failure.
RECOVERY_ERE='tlogfs: .*(torn or corrupt tail cut|bytes of an unfinished line cut|unsealed behind a newer segment; sealed|index without data removed|stray temporary file removed|\.idx: missing; rebuilding it from the data|\.idx: corrupt index; rebuilding it from the data)$|^tlogfs: reaper: [0-9]+ segments \([0-9]+ bytes\) expired from [0-9]+ due partitions in [0-9.]+ ms$'

tl_mount
mkdir -p "$KEEP" "$REAP"
setfattr -n user.segment.bytes -v 1K "$MNT/keep"
setfattr -n user.segment.bytes -v 1K "$MNT/reap"
setfattr -n user.segment.ms -v 1s "$MNT/reap"
setfattr -n user.retention.ms -v $RETENTION_MS "$MNT/reap"
: >"$TMP/expect.keep"
wid=0

# ack_of FILE: the last acknowledged line number, -1 for none. Read twice
# and the smaller kept, so a read racing the writer's pwrite never
# overstates it.
ack_of() {
	local a b
	a=$(cat "$1" 2>/dev/null)
	b=$(cat "$1" 2>/dev/null)
	a=${a:--1}
	b=${b:--1}
	[ "$b" -lt "$a" ] && a=$b
	echo "$a"
}

sampler() {
	local t w line
	while :; do
		t=$(now_ms)
		line=$t
		for w in "$@"; do line="$line $(ack_of "$TMP/ack.$w")"; done
		echo "$line"
		sleep 0.05
	done
}

kill_daemon() {
	tl_kill 9 2>/dev/null
}

for cycle in $(seq 1 "$CYCLES"); do
	case $((cycle % 3)) in
	1) kind=random; D=$KEEP ;;
	2) kind=seal; D=$KEEP ;;
	0) kind=reaper; D=$REAP ;;
	esac
	ids=
	wpids=
	for k in 1 2 3 4; do
		wid=$((wid + 1))
		ids="$ids $wid"
		rm -f "$TMP/ack.$wid"
		"$LINEWRITER" -p -d 200 -a "$TMP/ack.$wid" "$D/current" \
		    "$wid" 0 2>"$TMP/writer.$wid.err" &
		wpids="$wpids $!"
	done
	t_cycle=$(now_ms)
	sampler $ids >"$TMP/samples" &
	spid=$!
	case $kind in
	random)
		ms=$((300 + RANDOM % 1200))
		sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
		;;
	seal)
		sleep 0.$((RANDOM % 5 + 2))
		n0=$(gx user.tlog.segments "$D")
		moved() { [ "$(gx user.tlog.segments "$D")" != "$n0" ]; }
		tl_wait_for 10 moved || tl_diag "cycle $cycle: no seal seen"
		;;
	reaper)
		sleep 2.$((RANDOM % 3 + 3))
		s0=$(gx user.tlog.start_offset "$D")
		moved() { [ "$(gx user.tlog.start_offset "$D")" != "$s0" ]; }
		tl_wait_for 10 moved || tl_diag "cycle $cycle: no deletion seen"
		;;
	esac
	kill_daemon
	t_kill=$(now_ms)
	for p in $wpids; do wait "$p"; done
	kill "$spid"
	wait "$spid" 2>/dev/null
	bad=
	for w in $ids; do
		grep -Eq '^linewriter: write: (ENOTCONN|ECONNABORTED)$' \
		    "$TMP/writer.$w.err" || bad="$bad w$w: $(cat "$TMP/writer.$w.err")"
	done
	[ -z "$bad" ] || tl_not_ok "cycle $cycle: writers end on the dead mount" "$bad"
	if ! "$FUSERMOUNT" -u -z "$MNT"; then
		tl_not_ok "cycle $cycle: the dead mount goes"
		break
	fi
	# Index files with no whole header: a kill between creating a
	# segment's index and writing its header. Recovery rebuilds them
	# ("corrupt index"); any other index it calls corrupt is a failure.
	(cd "$STORE" && find . -name '*.idx' -size -24c | sed 's|^\./||') \
	    >"$TMP/short"
	tl_no_sanitizer "cycle $cycle: the killed daemon"
	: >"$ERR"
	tl_mount

	if [ $kind = reaper ]; then
		# The reaper deletes while the partition is read, oldest
		# first (only the time rule runs here): a segment deleted
		# between the listing and its open was older than every
		# segment after it, and every segment read before it is
		# gone too. Its gap is the read's, not the store's: the read
		# goes on from the next segment, as a listing taken then
		# would have. The active segment is read as `current`: if
		# it seals during the read (idle, segment.ms), it is listed
		# under its number from then on and `current` names a new,
		# empty one: read again. (Reading everything again until no
		# deletion overlapped failed under ThreadSanitizer, where a
		# read of the partition outlasts the reaper's period.)
		for try in 1 2 3 4 5; do
			segs=("$REAP"/*)
			: >"$TMP/got.reap"
			for f in "${segs[@]}"; do
				cat "$f" >>"$TMP/got.reap" 2>/dev/null && continue
				if [ -e "$f" ]; then
					tl_diag "cycle $cycle: cannot read $f"
				else
					: >"$TMP/got.reap"
				fi
			done
			sealed=
			for f in "$REAP"/[0-9]*; do
				[ -e "$f" ] || continue
				[[ " ${segs[*]} " == *" $f "* ]] || sealed=$f
			done
			[ -n "$sealed" ] || break
		done
		t_read=$(now_ms)
		# Lines appended after lim = t_read - retention.ms (+10 ms of
		# slack) cannot have expired by the end of the read. If at
		# sample time t >= lim writer w had acknowledged line a, line
		# a+2 was appended after t: the first such sample gives the
		# window's start. No sample that late: nothing is required.
		lo=$(awk -v lim=$((t_read - RETENTION_MS + 10)) '
		    $1 >= lim { print; exit }' "$TMP/samples")
		sum=$(tl_lines "$TMP/got.reap")
		i=1
		win=
		for w in $ids; do
			i=$((i + 1))
			a=$(ack_of "$TMP/ack.$w")
			if [ -n "$lo" ]; then
				from=$(($(echo "$lo" | cut -d' ' -f$i) + 2))
			else
				from=$((a + 1))
			fi
			win="$win w$w:$from-$a"
			echo "$sum" | awk -v w="w$w" -v from=$from -v a=$a '
			    NR > 1 && $1 == w { f = 1; first = $3; last = $4 }
			    END {
				if (from > a) { ok = !f || last <= a + 1 }
				else ok = f && first <= from && last >= a &&
				    last <= a + 1
				if (!ok) printf "w %s want %d-%d got %s\n", w,
				    from, a, f ? first "-" last : "none"
			    }'
		done >"$TMP/reap.bad"
		tl_is "cycle $cycle ($kind, killed after $((t_kill - t_cycle)) ms): no torn or repeated line, order kept" \
		    "torn=0 order=0" "$(echo "$sum" | sed -n 1p)"
		tl_is "cycle $cycle: acknowledged lines younger than retention.ms are there ($((t_read - t_kill)) ms after the kill;$win)" \
		    "" "$(cat "$TMP/reap.bad")"
	else
		for w in $ids; do
			echo "w$w $(ack_of "$TMP/ack.$w")" >>"$TMP/expect.keep"
		done
		cat "$KEEP"/* >"$TMP/got.keep"
		sum=$(tl_lines "$TMP/got.keep")
		# Per writer: lines 0..last, last = acked or acked + 1.
		bad=$(echo "$sum" | awk '
		    NR == FNR { ack[$1] = $2; next }
		    FNR == 1 { if ($0 != "torn=0 order=0") print; next }
		    { got[$1] = 1
		      if (!($1 in ack)) { print "unknown writer " $1; next }
		      if ($3 != 0 || $4 < ack[$1] || $4 > ack[$1] + 1)
			print $1 " acked 0-" ack[$1] " got " $3 "-" $4 }
		    END { for (w in ack) if (!(w in got) && ack[w] >= 0)
			print w " acked 0-" ack[w] " got none" }' \
		    "$TMP/expect.keep" -)
		tl_is "cycle $cycle ($kind, killed after $((t_kill - t_cycle)) ms): every acknowledged line once, in order, none torn ($(wc -l <"$TMP/got.keep") lines)" \
		    "" "$bad"
		tl_is "cycle $cycle: the end offset counts the lines" \
		    "$(wc -l <"$TMP/got.keep")" "$(gx user.tlog.end_offset "$KEEP")"
	fi
	tl_stderr_clean "cycle $cycle: the daemon printed only recovery notes" \
	    "$RECOVERY_ERE"
	bad=$(sed -n 's/^tlogfs: \(.*\.idx\): corrupt index; rebuilding it from the data$/\1/p' "$ERR" |
	    grep -vxF -f "$TMP/short")
	tl_is "cycle $cycle: only indexes without a whole header were corrupt ($(wc -l <"$TMP/short") short)" \
	    "" "$bad"
	grep -Eo 'torn or corrupt tail cut|unfinished line cut|unsealed behind|index without data|stray temporary|missing; rebuilding|corrupt index' \
	    "$ERR" | sort | uniq -c | sed "s/^/# cycle $cycle recovery: /"
	[ $TL_FAILED = 0 ] || sed 's/^/# daemon: /' "$ERR" | head -40
done

echo end >>"$KEEP/current"
tl_is "the recovered partition takes appends" end "$(tail -n 1 "$KEEP/current")"
tl_check "unmount" tl_umount
tl_done
