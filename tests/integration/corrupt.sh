#!/bin/bash
# corrupt.sh - offline damage to a store (unmounted while it is damaged),
# one partition per kind of damage (doc/format.md, "Recovery"):
#
#   tail_log   random bytes appended to the active segment's data
#   tail_idx   random bytes appended to the active segment's index
#   tail_both  both
#   trunc      a sealed segment in the middle cut to half its length
#   noidx      the index of a sealed segment and of the active one deleted
#   footer     a byte flipped in a sealed segment's seal footer
#   magic      a byte flipped in a seal footer's magic
#   tmp        stray *.tmp files in the partition (and one in the topic)
#
# Each time the store must still mount, the daemon (in -f mode) must log
# what it repaired, naming the file, every intact record must be served,
# in order and untorn, and the partition must take new appends. A second
# mount afterwards must find nothing left to repair.
. "${srcdir:-.}/tests/integration/lib.sh"

CASES="tail_log tail_idx tail_both trunc noidx footer magic tmp"

tl_mount
id=0
for c in $CASES; do
	id=$((id + 1))
	mkdir -p "$MNT/t/$c"
	setfattr -n user.segment.bytes -v 4K "$MNT/t/$c"
	"$LINEWRITER" "$MNT/t/$c/current" "$id" 300 ||
	    tl_not_ok "300 lines appended to $c"
done
tl_check "unmount before the damage" tl_umount
: >"$ERR"
# A clean unmount leaves the checkpoint (doc/format.md), which a clean
# mount trusts instead of the seal footers. This test is about what the
# mount finds in the files themselves: without it, every sealed
# segment's footer is read (the checkpoint's own cases, a cut data file
# among them, are test_recover's).
tl_check "a clean unmount leaves a checkpoint" \
    test -s "$STORE/.tlogfs/checkpoint"
rm "$STORE/.tlogfs/checkpoint"

segs() { (cd "$STORE/t/$1" && ls -1 ./*.log | sed 's|^\./||; s|\.log$||'); }
# Sealed and active segments, by base: the 3rd (a sealed one in the
# middle) and the last one.
nth() { segs "$1" | sed -n "${2}p"; }
last() { segs "$1" | tail -n 1; }
P=$STORE/t

# What each partition must serve: the intact records, as they are now.
for c in $CASES; do
	cat "$P/$c"/*.log >"$TMP/want.$c"
done

# Random bytes, ending in something other than a newline.
junk() { head -c "$1" /dev/urandom; printf x; }

junk 100 >>"$P/tail_log/$(last tail_log).log"
junk 36 >>"$P/tail_idx/$(last tail_idx).idx"
junk 100 >>"$P/tail_both/$(last tail_both).log"
junk 36 >>"$P/tail_both/$(last tail_both).idx"

s=$(nth trunc 3)
size=$(stat -c %s "$P/trunc/$s.log")
truncate -s $((size / 2)) "$P/trunc/$s.log"
# Intact: everything but the lines of that segment past the cut.
head -c $((size / 2)) "$P/trunc/$s.log" >"$TMP/part"
{
	for f in "$P"/trunc/*.log; do
		if [ "$f" != "$P/trunc/$s.log" ]; then
			cat "$f"
		elif [ "$(tail -c 1 "$TMP/part" | od -An -tx1 | tr -d ' ')" = 0a ]; then
			cat "$TMP/part"
		else
			head -n -1 "$TMP/part"	# the cut line goes
		fi
	done
} >"$TMP/want.trunc"

rm "$P/noidx/$(nth noidx 3).idx" "$P/noidx/$(last noidx).idx"

# The footer is the last 48 bytes of a sealed index; byte 10 is in its
# record count, byte 2 in its magic.
flip() {
	local f=$1 off=$2 b
	b=$(od -An -tu1 -j "$off" -N 1 "$f" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 0x5a)))" |
	    dd of="$f" bs=1 seek="$off" conv=notrunc status=none
}
f=$P/footer/$(nth footer 3).idx
flip "$f" $(($(stat -c %s "$f") - 48 + 10))
f=$P/magic/$(nth magic 3).idx
flip "$f" $(($(stat -c %s "$f") - 48 + 2))

junk 50 >"$P/tmp/$(nth tmp 2).idx.tmp"
junk 50 >"$P/tmp/$(last tmp).idx.tmp"
junk 50 >"$P/tmp/.config.tmp"
junk 50 >"$P/tmp/.next.tmp"
junk 50 >"$P/.config.tmp"

tl_mount
for c in $CASES; do
	D=$MNT/t/$c
	cat "$D"/* >"$TMP/got.$c"
	case $c in
	tail_log | tail_both)
		# The random bytes may hold newlines: what stands before the
		# last one is taken as records. The intact ones come first.
		n=$(wc -c <"$TMP/want.$c")
		tl_is "$c: every intact record is served" \
		    "$(md5sum <"$TMP/want.$c")" \
		    "$(head -c "$n" "$TMP/got.$c" | md5sum)"
		tl_is "$c: the bytes after the last newline are cut" 0a \
		    "$(tail -c 1 "$TMP/got.$c" | od -An -tx1 | tr -d ' ')"
		;;
	*)
		tl_is "$c: every intact record is served, nothing else" \
		    "$(md5sum <"$TMP/want.$c")" "$(md5sum <"$TMP/got.$c")"
		;;
	esac
	# trunc: the lines cut with the data leave one gap in the order.
	want="torn=0 order=0"
	[ $c = trunc ] && want="torn=0 order=1"
	tl_is "$c: no torn line, order kept" "$want" \
	    "$(head -c "$(wc -c <"$TMP/want.$c")" "$TMP/got.$c" |
	    tl_lines /dev/stdin | sed -n 1p)"
	e0=$(gx user.tlog.end_offset "$D")
	echo "after $c" >>"$D/current"
	tl_is "$c: the partition takes appends" "after $c" \
	    "$(tail -n 1 "$D/current")"
	tl_is "$c: the end offset counts the new record" \
	    "$((e0 + 1))" "$(gx user.tlog.end_offset "$D")"
done

# What the daemon logged, per case.
logged() { grep -Eq -- "t/$1/$2: .*$3" "$ERR"; }
tl_check "tail_log: the cut is logged" \
    logged tail_log "$(last tail_log).log" 'unfinished line cut'
tl_check "tail_idx: the torn index is logged" \
    logged tail_idx "$(last tail_idx).idx" 'torn or corrupt tail cut'
tl_check "tail_both: the torn index is logged" \
    logged tail_both "$(last tail_both).idx" 'torn or corrupt tail cut'
tl_check "tail_both: the cut is logged" \
    logged tail_both "$(last tail_both).log" 'unfinished line cut'
tl_check "trunc: the short segment is logged" \
    logged trunc "$s.log" 'data shorter than its seal'
tl_check "noidx: the rebuilt sealed index is logged" \
    logged noidx "$(nth noidx 3).idx" 'missing; rebuilding'
tl_check "noidx: the rebuilt active index is logged" \
    logged noidx "$(last noidx).idx" 'missing; rebuilding'
tl_check "footer: the bad footer is logged" \
    logged footer "$(nth footer 3).idx" 'corrupt'
tl_check "magic: the bad footer is logged" \
    logged magic "$(nth magic 3).idx" 'corrupt'
tl_check "tmp: the stray files are logged" \
    test "$(grep -c 't/tmp/.*stray temporary file removed' "$ERR")" -eq 4
tl_is "tmp: and removed" "" "$(ls -a "$P/tmp" | grep '\.tmp$')"
tl_is "the footer's segment is sealed again" recovery \
    "$(gx user.tlog.sealed_by "$MNT/t/footer/$(nth footer 3).log")"
tl_check "unmount" tl_umount
sed 's/^/# daemon: /' "$ERR"
tl_stderr_clean "the daemon printed only repairs" \
    'unfinished line cut|torn or corrupt tail cut|data shorter than its seal|missing; rebuilding|corrupt index; rebuilding|stray temporary file removed|unsealed behind a newer segment'

: >"$ERR"
tl_mount
for c in $CASES; do
	cat "$MNT/t/$c"/* >"$TMP/again.$c"
	tl_is "$c: the same records after a second mount" \
	    "$(md5sum <"$TMP/got.$c")" "$(head -n -1 "$TMP/again.$c" | md5sum)"
done
tl_check "unmount" tl_umount
tl_stderr_clean "the second mount repaired nothing"
tl_done
