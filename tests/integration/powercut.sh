#!/bin/bash
# powercut.sh - fsync(2) through tlogfs makes data durable: a simulated
# power cut loses nothing that an fsync acknowledged.
#
#   POWERCUT_CYCLES=50 make check TESTS=tests/integration/powercut.sh
#
# Each cycle makes a fresh ext4 file system on a loop device (a sparse
# 128 MiB image in $TMP), puts the store on it and mounts tlogfs. Writers
# (helpers/syncwriter, one thread per file) append 100-byte lines
# "wID SEQ PAD\n" to their own partition's `current` and fsync every 7
# lines (every third sync an fdatasync); after each sync returned 0 they
# log "MS SEQ" to a file outside the image. At the cut the daemon and
# the writers are frozen with SIGSTOP, the loop device is copied with dd
# iflag=direct, with no sync before it (dirty pages in the page cache
# are not in the copy, as after a power cut), and only then are they
# killed with kill -9. The copy is
# checked with e2fsck -fy (journal replay), loop-mounted, served by a new
# daemon, and checked:
#
#   every kind: per writer, every line up to the last acknowledged one
#       is there exactly once and in order, in its partition; no line is
#       torn; lines after it may be there, whole and in order; every
#       partition's user.tlog.end_offset is >= its acknowledged records
#       (offsets never go backwards).
#   harness: a plain file on the same ext4, written by the same helper
#       at the same cadence and cut with it, keeps every acknowledged
#       line. If it does not, the copy is not what the disk held and the
#       test itself is wrong: said loudly.
#
# The kinds of cycle rotate:
#
#   roll    4 partitions in 2 topics, segment.bytes=4K (40 lines a
#           segment: a roll every 40 lines, inside the fsync windows);
#           cut once the writers acknowledged a random 1500-3000 lines.
#   reaper  topic with segment.bytes=4K, segment.ms=1s, retention.ms=3s:
#           2 writers keep writing while the reaper deletes their
#           oldest segments, 2 write 300 lines and stop, so their
#           partitions drain to empty. Cut once deletions started in the
#           first two (start_offset > 0) and the other two are empty.
#           Retention deletes acknowledged lines legitimately, so for the
#           first two only the lines younger than retention.ms at the end
#           of the read must be there: if the writer logged line A as
#           acknowledged at time T >= (end of read - retention.ms), lines
#           A+1 .. last acknowledged were appended after T, and no
#           segment holding them can have expired. The drained ones must
#           keep their end offset.
#   config  writers write 300 lines each and stop; then setxattr of
#           retention.ms on the mount root, segment.bytes on a topic,
#           retention.ms and segment.ms on partitions, each with a value
#           drawn for the cycle; cut right after the last setfattr
#           returned. With no writer syncing meanwhile, nothing else
#           commits the file system's journal for the daemon. After
#           recovery getfattr returns each value set.
#   unmount 3 partitions with segment.bytes=4K; each writer appends
#           200-400 lines and never syncs (syncwriter -k 0: a line
#           counts once its write returned); then a clean unmount (the
#           daemon exits), and the cut right after. A clean unmount makes
#           everything durable, so every line written is there; the
#           mount of the copy is a clean one (the daemon says nothing);
#           each segment keeps the sealed_by it had before the unmount,
#           and keeps it after a kill -9 of that daemon, when the next
#           open reads every seal footer from the disk (a footer the
#           close left in the page cache would read "recovery").
#   compress  4 partitions of a topic with compression.type=zstd and
#           segment.bytes=16K: segments seal every 160 lines and the
#           daemon compresses them (.log.zst, then the .log unlinked)
#           all along; cut once the writers acknowledged a random
#           1500-3000 lines and some segment was compressed. Besides
#           every kind's verdicts (nothing lost, nothing twice), the
#           recovered store holds exactly one data file per segment
#           (never a .log beside its .log.zst) and no .log.zst.tmp.
#
# Figures are printed as TAP comments at the end. Needs root, /dev/fuse,
# loop devices, mkfs.ext4 and e2fsck (e2fsprogs); skips (77) only when
# one is missing.
# A durability test: the image lives on the disk, not on make check's
# tmpfs (DISK_TMPDIR, Makefile.am).
TMPDIR=${DISK_TMPDIR:-${TMPDIR:-/tmp}}
. "${srcdir:-.}/tests/integration/lib.sh"

PATH=$PATH:/usr/sbin:/sbin
SYNCWRITER=$TL_BUILD/tests/integration/helpers/syncwriter
CYCLES=${POWERCUT_CYCLES:-10}
RETENTION_MS=3000
IMG=$TMP/disk.img
COPY=$TMP/copy.img
EXT=$TMP/ext
LOOP=
WPIDS=

for c in losetup mkfs.ext4 e2fsck dd; do
	command -v $c >/dev/null || tl_skip "no $c"
done
if [ ! -e /dev/loop-control ] && ! ls /dev/loop[0-9]* >/dev/null 2>&1; then
	tl_skip "no loop devices"
fi
mkdir -p "$EXT"

# Whatever state a cycle stopped in: no writer, no fuse mount, no ext4
# mount, no loop device on one of our images is left behind.
pc_teardown() {
	local p l
	for p in $WPIDS; do kill -9 "$p" 2>/dev/null; done
	for p in $WPIDS; do wait "$p" 2>/dev/null; done
	WPIDS=
	tl_cleanup_mount
	if mountpoint -q "$EXT"; then
		umount "$EXT" 2>/dev/null || umount -l "$EXT"
	fi
	for l in $(losetup -j "$IMG" -O NAME -n 2>/dev/null) \
	    $(losetup -j "$COPY" -O NAME -n 2>/dev/null); do
		losetup -d "$l"
	done
	LOOP=
}
pc_cleanup() {
	pc_teardown
	tl_cleanup
}
trap pc_cleanup EXIT
trap 'exit 1' INT TERM HUP

# attach IMAGE [mkfs]: loop-mounts IMAGE on $EXT (after making a file
# system on it with mkfs); the store is $EXT/store. A failure ends the
# test: the next cycle would only fail the same way.
attach() {
	if ! LOOP=$(losetup --find --show "$1" 2>"$TMP/attach.err"); then
		tl_not_ok "losetup --find --show $1" "$(cat "$TMP/attach.err")"
		tl_done
	fi
	if [ $# -gt 1 ] && ! mkfs.ext4 -q -F -E nodiscard "$LOOP" \
	    >"$TMP/attach.err" 2>&1; then
		tl_not_ok "mkfs.ext4 on $LOOP" "$(cat "$TMP/attach.err")"
		tl_done
	fi
	if ! mount -t ext4 "$LOOP" "$EXT" 2>"$TMP/attach.err"; then
		tl_not_ok "mount $LOOP ($1)" "$(cat "$TMP/attach.err")"
		tl_done
	fi
	STORE=$EXT/store
}

# acked ID: the last line acknowledged by writer ID, -1 for none. Only
# whole "MS SEQ" lines count (a poll may race the writer's append).
acked() {
	awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF == 2 { a = $2 }
	    END { print a == "" ? -1 : a }' "$ACK/w$1" 2>/dev/null
}
acked_sum() {
	local s=0 id
	for id in "$@"; do s=$((s + $(acked "$id") + 1)); done
	echo $s
}

# check FILE ID FROM TO: prints "torn=N order=N missing=N" for the lines
# of writer ID in FILE: torn, a line that is not "wID SEQ PAD" (99 bytes
# and a newline, PAD of letter 'a' + SEQ % 26); order, a SEQ not greater
# than the one before (a repeat included); missing, a SEQ in FROM..TO
# not there. Then " lines=N beyond=N": lines read, lines after TO.
check() {
	awk -v id="w$2" -v from="$3" -v to="$4" '
	BEGIN { letters = "abcdefghijklmnopqrstuvwxyz"; prev = -1 }
	{
		if (NF != 3 || length($0) != 99 || $1 != id ||
		    $2 !~ /^[0-9]+$/ ||
		    $3 !~ ("^" substr(letters, $2 % 26 + 1, 1) "+$")) {
			torn++
			next
		}
		s = $2 + 0
		if (s <= prev)
			order++
		prev = s
		have[s] = 1
		lines++
		if (s > to)
			beyond++
	}
	END {
		for (s = from; s <= to; s++)
			if (!(s in have))
				missing++
		printf "torn=%d order=%d missing=%d lines=%d beyond=%d\n",
		    torn, order, missing, lines, beyond
	}' "$1"
}

# The file must also end with a newline (a torn last line may not).
ends_nl() { [ ! -s "$1" ] || [ "$(tail -c 1 "$1" | od -An -tx1 | tr -d ' ')" = 0a ]; }

# start_writers [-n COUNT] ID=PATH ...: one syncwriter process.
start_writers() {
	"$SYNCWRITER" "$@" 2>>"$TMP/writers.err" &
	WPIDS="$WPIDS $!"
}

# writers_gone: no writer process is left (a poll then stops early).
writers_gone() {
	local p
	for p in $WPIDS; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}

# cut: the power cut. The daemon and every writer are frozen (SIGSTOP:
# a sync in flight completes in the kernel, its answer is never
# delivered, so nothing is acknowledged after this), the block device is
# copied bypassing the page cache with no sync before it, and only then
# are they killed: closing their files (which ext4 may answer by starting
# writeback) happens after the copy, as it never happens in a power cut.
cut() {
	local p
	kill -STOP "$DPID" $WPIDS 2>/dev/null
	T_CUT=$(now_ms)
	dd if="$LOOP" of="$COPY" bs=1M iflag=direct conv=sparse status=none \
	    2>"$TMP/dd.err"
	DD_ST=$?
	T_COPIED=$(now_ms)
	kill -9 "$DPID" $WPIDS 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
	for p in $WPIDS; do wait "$p" 2>/dev/null; done
	WPIDS=
	# The original goes; what the kernel still flushes to it is lost.
	"$FUSERMOUNT" -u -z "$MNT" 2>/dev/null
	umount "$EXT" 2>/dev/null || umount -l "$EXT"
	losetup -d "$LOOP"
	LOOP=
	rm -f "$IMG"
}

# recover: e2fsck the copy, mount it, serve the recovered store.
recover() {
	e2fsck -fy "$COPY" >"$TMP/fsck.out" 2>&1
	FSCK_ST=$?
	attach "$COPY"
	tl_no_sanitizer "$pre: the daemon cut off"
	: >"$ERR"
	# A power cut is a reboot: the recovering daemon must see another
	# boot id, as it would on real hardware, so that it checks the data
	# CRCs of everything not known durable (doc/format.md).
	TLOGFS_BOOT_ID=powercut-$$-$cycle tl_mount_hooked
}

# A cycle's verdicts, shared by every kind. $1: the kind's TAP prefix.
# PARTS: "ID:PARTITION ..." of the writers checked fully (every line up
# to the last acknowledged); PLAIN: "ID:FILE ..." of the plain files
# (FILE under $EXT); DRAINED, REAPED: partitions only offsets and the
# reaper verdict check.
verdicts() {
	local pre=$1 e id p a sum eo bad= acked_n=0 lost=0 torn=0 beyond=0
	# dd and e2fsck first: nothing after means anything if they failed.
	if [ "$DD_ST" != 0 ]; then
		tl_not_ok "$pre: dd of the loop device" "$(cat "$TMP/dd.err")"
	fi
	case $FSCK_ST in
	0|1) tl_ok "$pre: e2fsck -fy of the copy exits $FSCK_ST (copy took $((T_COPIED - T_CUT)) ms)" ;;
	*) tl_not_ok "$pre: e2fsck -fy of the copy exits $FSCK_ST" \
	    "$(tail -n 20 "$TMP/fsck.out")" ;;
	esac

	# The harness: a plain file keeps what was acknowledged. Only the
	# acknowledged lines at its start are checked: a plain file has no
	# recovery to cut a line the cut tore after them.
	for e in $PLAIN; do
		id=${e%%:*}
		p=${e#*:}
		a=$(acked "$id")
		head -n $((a + 1)) "$EXT/$p" 2>/dev/null >"$TMP/got.p$id"
		sum=$(check "$TMP/got.p$id" "$id" 0 "$a")
		case $sum in
		"torn=0 order=0 missing=0 "*) ;;
		*) bad="$bad w$id (acked 0-$a): $sum;" ;;
		esac
		P_ACKED=$((P_ACKED + a + 1))
	done
	if [ -z "$bad" ]; then
		tl_ok "$pre: harness: the plain files on the same ext4 kept every acknowledged line"
	else
		tl_not_ok "$pre: HARNESS BROKEN: a plain file lost acknowledged lines, so the copy is not what the disk held and the tlogfs verdicts mean nothing" \
		    "$bad"
		P_BROKEN=$((P_BROKEN + 1))
	fi

	bad=
	for e in $PARTS; do
		id=${e%%:*}
		p=${e#*:}
		a=$(acked "$id")
		cat "$MNT/$p"/* >"$TMP/got.$id" 2>>"$TMP/cat.err"
		sum=$(check "$TMP/got.$id" "$id" 0 "$a")
		set -- $sum
		acked_n=$((acked_n + a + 1))
		lost=$((lost + ${3#missing=}))
		torn=$((torn + ${1#torn=}))
		beyond=$((beyond + ${5#beyond=}))
		case $sum in
		"torn=0 order=0 missing=0 "*) ends_nl "$TMP/got.$id" ||
		    bad="$bad $p: no newline at the end;" ;;
		*) bad="$bad $p (w$id acked 0-$a): $sum;" ;;
		esac
	done
	if [ -n "$PARTS" ]; then
		tl_is "$pre: every fsync-acknowledged line once, in order, none torn ($acked_n acknowledged, $lost lost, $torn torn, $beyond unacknowledged there)" \
		    "" "$bad"
		ACKED[$KIND]=$((${ACKED[$KIND]:-0} + acked_n))
		LOST[$KIND]=$((${LOST[$KIND]:-0} + lost))
		[ "$lost" -gt 0 ] && LOSSY[$KIND]=$((${LOSSY[$KIND]:-0} + 1))
	fi

	# Offsets never go backwards: every partition's end offset counts at
	# least its acknowledged records (a writer's line n is record n).
	bad=
	for e in $PARTS $DRAINED $REAPED; do
		id=${e%%:*}
		p=${e#*:}
		a=$(acked "$id")
		eo=$(gx user.tlog.end_offset "$MNT/$p")
		[ -n "$eo" ] && [ "$eo" -ge $((a + 1)) ] ||
		    bad="$bad $p: end_offset ${eo:-?} < $((a + 1)) acknowledged;"
	done
	tl_is "$pre: every partition's end_offset >= its acknowledged records" \
	    "" "$bad"
}

# The end of a cycle: the recovered daemon stops cleanly, the copy goes.
finish() {
	local pre=$1
	tl_check "$pre: the recovered daemon unmounts cleanly" tl_umount
	grep -Eo 'torn or corrupt tail cut|unfinished line cut|unsealed behind a newer segment|index without data|stray temporary|missing; rebuilding|corrupt index|shorter than its seal|expired from|compression was cut short|the plain copy is kept' \
	    "$ERR" | sort | uniq -c | sed "s/^/# $pre: daemon: /"
	grep -v "expired from" "$ERR" | head -n 3 | sed "s/^/# $pre: daemon: /"
	pc_teardown
	rm -f "$COPY"
}

# ---- the kinds of cycle ----

# Each sets PARTS, PLAIN, DRAINED, REAPED and runs up to the cut.

cycle_roll() {
	local t=$((1500 + RANDOM % 1500))
	PARTS="1:r1/0 2:r1/1 3:r2/0 4:r2/1"
	PLAIN="9:plain/p9"
	DRAINED=
	REAPED=
	mkdir -p "$MNT/r1/0" "$MNT/r1/1" "$MNT/r2/0" "$MNT/r2/1"
	setfattr -n user.segment.bytes -v 4K "$MNT/r1"
	setfattr -n user.segment.bytes -v 4K "$MNT/r2"
	start_writers "$ACK" 1="$MNT/r1/0/current" 2="$MNT/r1/1/current" \
	    3="$MNT/r2/0/current" 4="$MNT/r2/1/current"
	start_writers -c "$ACK" 9="$EXT/plain/p9"
	_enough() { [ "$(acked_sum 1 2 3 4)" -ge "$t" ] || writers_gone; }
	tl_wait_for 60 _enough || tl_diag "roll: $t lines not acknowledged in 60 s"
	DESC="cut at $(acked_sum 1 2 3 4) acknowledged lines"
	cut
}

cycle_reaper() {
	local p
	PARTS=
	PLAIN="9:plain/p9"
	REAPED="1:rp/0 2:rp/1"
	DRAINED="3:rp/2 4:rp/3"
	mkdir -p "$MNT/rp/0" "$MNT/rp/1" "$MNT/rp/2" "$MNT/rp/3"
	setfattr -n user.segment.bytes -v 4K "$MNT/rp"
	setfattr -n user.segment.ms -v 1s "$MNT/rp"
	setfattr -n user.retention.ms -v $RETENTION_MS "$MNT/rp"
	start_writers "$ACK" 1="$MNT/rp/0/current" 2="$MNT/rp/1/current"
	start_writers -n 300 "$ACK" 3="$MNT/rp/2/current" 4="$MNT/rp/3/current"
	start_writers -c "$ACK" 9="$EXT/plain/p9"
	_draining() {
		local s
		writers_gone && return 0
		for p in rp/0 rp/1; do
			s=$(gx user.tlog.start_offset "$MNT/$p")
			[ "${s:-0}" -gt 0 ] || return 1
		done
		for p in rp/2 rp/3; do
			[ "$(gx user.tlog.segments "$MNT/$p")" = 0 ] &&
			    [ "$(gx user.tlog.end_offset "$MNT/$p")" = 300 ] ||
			    return 1
		done
	}
	tl_wait_for 60 _draining || tl_diag "reaper: no drain seen in 60 s"
	DESC="cut after deletions, start offsets $(gx user.tlog.start_offset "$MNT/rp/0")/$(gx user.tlog.start_offset "$MNT/rp/1")"
	cut
}

# Values drawn per cycle, all canonical (plain integers), so getfattr
# must return them as given.
cycle_config() {
	local p
	PARTS="1:cf/0 2:cf/1"
	PLAIN="9:plain/p9"
	DRAINED=
	REAPED=
	mkdir -p "$MNT/cf/0" "$MNT/cf/1"
	setfattr -n user.segment.bytes -v 4K "$MNT/cf"
	start_writers -n 300 "$ACK" 1="$MNT/cf/0/current" 2="$MNT/cf/1/current"
	start_writers -n 300 -c "$ACK" 9="$EXT/plain/p9"
	for p in $WPIDS; do
		wait "$p" || tl_diag "config: a writer failed: $(cat "$TMP/writers.err")"
	done
	WPIDS=
	CONF=". retention.ms $((86400000 + RANDOM * 1000))
cf segment.bytes $((8192 + RANDOM * 16))
cf/0 retention.ms $((3600000 + RANDOM * 1000))
cf/1 segment.ms $((60000 + RANDOM * 10))"
	echo "$CONF" | while read -r p k v; do
		setfattr -n "user.$k" -v "$v" "$MNT/$p" ||
		    echo "setfattr $k on $p failed" >>"$TMP/config.err"
	done
	cut
	DESC="cut right after 4 setxattrs"
}

config_verdict() {
	local pre=$1 p k v got bad=
	while read -r p k v; do
		got=$(gx "user.$k" "$MNT/$p")
		[ "$got" = "$v" ] || bad="$bad $p user.$k: set $v, got ${got:-nothing};"
	done <<EOF
$CONF
EOF
	[ -s "$TMP/config.err" ] && bad="$bad $(cat "$TMP/config.err")"
	tl_is "$pre: getfattr returns what each setxattr acknowledged before the cut" \
	    "" "$bad"
	[ -z "$bad" ] || CONF_BAD=$((CONF_BAD + 1))
}

# The sealed_by of each segment file of the unmount kind's partitions.
sealed_list() {
	local p f
	for p in um/0 um/1 um/2; do
		for f in "$MNT/$p"/*.log; do
			echo "$p/${f##*/} $(gx user.tlog.sealed_by "$f")"
		done
	done
}

cycle_unmount() {
	local p n=$((200 + RANDOM % 200))
	PARTS="1:um/0 2:um/1 3:um/2"
	PLAIN="9:plain/p9"
	DRAINED=
	REAPED=
	mkdir -p "$MNT/um/0" "$MNT/um/1" "$MNT/um/2"
	setfattr -n user.segment.bytes -v 4K "$MNT/um"
	start_writers -k 0 -n $n "$ACK" 1="$MNT/um/0/current" \
	    2="$MNT/um/1/current" 3="$MNT/um/2/current"
	start_writers -n 300 -c "$ACK" 9="$EXT/plain/p9"
	for p in $WPIDS; do
		wait "$p" || tl_diag "unmount: a writer failed: $(cat "$TMP/writers.err")"
	done
	WPIDS=
	SEALED=$(sealed_list)
	tl_umount || tl_diag "unmount: the clean unmount failed"
	cut
	DESC="cut right after a clean unmount, $n unsynced lines a writer"
}

unmount_verdict() {
	local pre=$1
	tl_is "$pre: the mount of the copy is a clean one: the daemon says nothing" \
	    "" "$(cat "$ERR")"
	tl_is "$pre: every segment keeps its sealed_by" "$SEALED" "$(sealed_list)"
	# A crash of that daemon: the next open reads every seal footer.
	kill -9 "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	"$FUSERMOUNT" -u -z "$MNT" 2>/dev/null
	TLOGFS_BOOT_ID=powercut-$$-$cycle tl_mount_hooked
	tl_is "$pre: and after a crash, read from the seal footers" "$SEALED" \
	    "$(sealed_list)"
}

cycle_compress() {
	local t=$((1500 + RANDOM % 1500))
	PARTS="1:cz/0 2:cz/1 3:cz/2 4:cz/3"
	PLAIN="9:plain/p9"
	DRAINED=
	REAPED=
	mkdir -p "$MNT/cz/0" "$MNT/cz/1" "$MNT/cz/2" "$MNT/cz/3"
	setfattr -n user.segment.bytes -v 16K "$MNT/cz"
	setfattr -n user.compression.type -v zstd "$MNT/cz"
	start_writers "$ACK" 1="$MNT/cz/0/current" 2="$MNT/cz/1/current" \
	    3="$MNT/cz/2/current" 4="$MNT/cz/3/current"
	start_writers -c "$ACK" 9="$EXT/plain/p9"
	_compressing() {
		writers_gone && return 0
		[ "$(acked_sum 1 2 3 4)" -ge "$t" ] &&
		    ls "$STORE"/cz/*/ | grep -q '\.log\.zst$'
	}
	tl_wait_for 60 _compressing ||
	    tl_diag "compress: $t lines and a compressed segment not seen in 60 s"
	DESC="cut at $(acked_sum 1 2 3 4) acknowledged lines, $(ls "$STORE"/cz/*/ | grep -c '\.log\.zst$') segments compressed"
	cut
}

compress_verdict() {
	local pre=$1 p f b bad=
	for p in cz/0 cz/1 cz/2 cz/3; do
		for f in "$STORE/$p"/*.log.zst "$STORE/$p"/*.tmp; do
			[ -e "$f" ] || continue
			case $f in
			*.tmp) bad="$bad $p: ${f##*/} left;" ;;
			*) b=${f%.zst}
			   [ -e "$b" ] && bad="$bad $p: ${b##*/} beside its .zst;" ;;
			esac
		done
	done
	tl_is "$pre: one data file per segment, no compression left half done" \
	    "" "$bad"
}

# Retention deleted old lines of the partitions still written; the lines
# younger than retention.ms at the end of the read must be there.
reaper_verdict() {
	local pre=$1 e id p a from lim sum bad= win= t_read
	for e in $REAPED $DRAINED; do
		p=${e#*:}
		# Seal first: an idle seal between the glob and the read would
		# move current's records under a name the glob did not see.
		setfattr -n user.seal -v 1 "$MNT/$p/current" 2>>"$TMP/cat.err"
		cat "$MNT/$p"/* >"$TMP/got.${e%%:*}" 2>>"$TMP/cat.err"
	done
	t_read=$(now_ms)
	lim=$((t_read - RETENTION_MS + 10))
	for e in $REAPED $DRAINED; do
		id=${e%%:*}
		p=${e#*:}
		a=$(acked "$id")
		from=$(awk -v lim=$lim 'NF == 2 && $1 >= lim { print $2 + 1; f = 1; exit }
		    END { if (!f) print "none" }' "$ACK/w$id")
		[ "$from" = none ] && from=$((a + 1))
		sum=$(check "$TMP/got.$id" "$id" "$from" "$a")
		win="$win w$id:$from-$a"
		ACKED[reaper]=$((${ACKED[reaper]:-0} + (a >= from ? a - from + 1 : 0)))
		LOST[reaper]=$((${LOST[reaper]:-0} + $(echo "$sum" | sed 's/.*missing=\([0-9]*\).*/\1/')))
		case $sum in
		"torn=0 order=0 missing=0 "*) ends_nl "$TMP/got.$id" ||
		    bad="$bad $p: no newline at the end;" ;;
		*) bad="$bad $p (w$id must have $from-$a): $sum;" ;;
		esac
	done
	tl_is "$pre: no torn or repeated line; acknowledged lines younger than retention.ms are there (read $((t_read - T_CUT)) ms after the cut;$win)" \
	    "" "$bad"
	case $bad in *missing=[1-9]*) LOSSY[reaper]=$((${LOSSY[reaper]:-0} + 1)) ;; esac
}

declare -A ACKED LOST LOSSY
P_ACKED=0
P_BROKEN=0
CONF_BAD=0
KINDS="roll reaper config unmount compress"
t_start=$(now_ms)
for cycle in $(seq 1 "$CYCLES"); do
	set -- $KINDS
	shift $(((cycle - 1) % $#))
	KIND=$1
	pre="cycle $cycle ($KIND)"
	ACK=$TMP/ack.$cycle
	mkdir -p "$ACK"
	: >"$TMP/writers.err"
	: >"$TMP/config.err"
	rm -f "$IMG" "$COPY"
	truncate -s 128M "$IMG"
	attach "$IMG" mkfs
	mkdir -p "$STORE" "$EXT/plain"
	tl_no_sanitizer "before cycle $cycle"
	: >"$ERR"
	tl_mount
	t0=$(now_ms)
	cycle_$KIND
	[ -s "$TMP/writers.err" ] &&
	    sed "s/^/# $pre: /" "$TMP/writers.err" | sort | uniq -c | head -5
	recover
	# The cut was a reboot to the daemon (the test build took the boot
	# id), so it checked what was not known durable; after a clean
	# unmount it has nothing to check and says nothing.
	[ "$KIND" = unmount ] ||
	    tl_check "$pre: the daemon recovered as after a reboot" \
	    grep -q 'was not closed cleanly before a reboot' "$ERR"
	pre="$pre, $DESC $((T_CUT - t0)) ms in"
	verdicts "$pre"
	case $KIND in
	reaper) reaper_verdict "$pre" ;;
	config) config_verdict "$pre" ;;
	unmount) unmount_verdict "$pre" ;;
	compress) compress_verdict "$pre" ;;
	esac
	finish "cycle $cycle"
done

tl_diag "figures: $CYCLES cycles in $((($(now_ms) - t_start) / 1000)) s"
for k in $KINDS; do
	tl_diag "  $k: ${ACKED[$k]:-0} acknowledged lines checked, ${LOST[$k]:-0} lost, in ${LOSSY[$k]:-0} cycles"
done
tl_diag "  config: $CONF_BAD cycles lost an acknowledged setxattr"
tl_diag "  harness: $P_ACKED acknowledged plain-file lines; $P_BROKEN cycles where the plain file lost some"
tl_done
