#!/bin/sh
# tlogctl_lag.sh - `tlogctl lag MOUNT` without cursors: the header alone,
# on an empty mount and on one with topics and partitions; usage errors
# exit 2 with one line on stderr (what is wrong; the usage of lag), a
# directory that is no mount's root 1 with one line; --help on stdout,
# exit 0. Every row satisfies LAG = END - max(OFFSET, START) while
# writers append, consumers commit and retention deletes; a partition
# whose cursors cannot be listed (E2BIG) is named on stderr, the other
# rows are printed, exit 1 (where the mount caps cursors, by a topic and
# a partition a user may not read); lag works for any user. (The table
# with cursors is in tlogctl_cursor.sh.)
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
HEADER='TOPIC  PARTITION  CURSOR  OFFSET  START  END  LAG'

# A throwaway user runs lag where root's permissions would hide what it
# cannot read.
tl_user tlg
cp "$TLOGCTL" "$TMP/tlogctl"
chmod 755 "$TMP/tlogctl"
tl_mount -o allow_other

# usage_err NAME ARGS...: exit 2, nothing on stdout, one line on stderr
# naming the usage of lag.
usage_err() {
	local name=$1
	shift
	"$TLOGCTL" "$@" >"$TMP/u.out" 2>"$TMP/u.err"
	tl_is "$name: exit 2" 2 $?
	tl_is "$name: one line on stderr, with the usage of lag" \
	    "1 1" "$(wc -l <"$TMP/u.err") $(grep -c '^tlogctl: .*; usage: tlogctl lag MOUNT$' "$TMP/u.err")"
	tl_is "$name: nothing on stdout" "" "$(cat "$TMP/u.out")"
}
usage_err "lag without MOUNT" lag
usage_err "lag with two arguments" lag "$MNT" "$MNT"
usage_err "lag with an unknown option" lag --frob "$MNT"
usage_err "lag --help with an argument" lag --help "$MNT"
out=$("$TLOGCTL" lag --help 2>"$TMP/u.err")
tl_is "lag --help: exit 0" 0 $?
tl_check "lag --help: the usage on stdout" sh -c "echo '$out' | grep -q '^ *tlogctl lag MOUNT'"
tl_is "lag --help: nothing on stderr" "" "$(cat "$TMP/u.err")"

"$TLOGCTL" lag "$TMP" >/dev/null 2>"$TMP/e.err"
tl_is "a directory that is no mount: exit 1" 1 $?
tl_is "a directory that is no mount: one line on stderr" 1 "$(wc -l <"$TMP/e.err")"
"$TLOGCTL" lag "$TMP/nope" >/dev/null 2>"$TMP/e.err"
tl_is "a missing directory: exit 1" 1 $?
tl_is "a missing directory: one line on stderr" 1 "$(wc -l <"$TMP/e.err")"
mkdir -p "$MNT/t/0"
"$TLOGCTL" lag "$MNT/t" >/dev/null 2>"$TMP/e.err"
tl_is "a topic instead of the mount: exit 1" 1 $?

tl_is "no cursors: the header alone" "$HEADER" "$("$TLOGCTL" lag "$MNT")"
rmdir "$MNT/t/0" "$MNT/t"
tl_is "an empty mount: the header alone" "$HEADER" "$("$TLOGCTL" lag "$MNT")"

# ---- every row holds together while everything moves ----
# Writers append to three partitions, consumers commit to the end, the
# reaper deletes behind them: rows read piecemeal showed LAG of another
# moment than OFFSET, START and END.
for p in 0 1 2; do
	mkdir -p "$MNT/w/$p"
	setfattr -n user.segment.bytes -v 4K "$MNT/w/$p"
	setfattr -n user.retention.ms -v 1s "$MNT/w/$p"
	"$LINEWRITER" "$MNT/w/$p/current" $p 0 -d 200 >/dev/null 2>&1 &
	eval "W$p=\$!"
done
# committer P: moves the cursors of partition P to its end, over and over.
committer() {
	while :; do
		for c in a b c d e f g h; do
			e=$(gx user.tlog.end_offset "$MNT/w/$1") || exit
			setfattr -n user.cursor.$c -v "$e" "$MNT/w/$1" || exit
		done
	done
}
committer 0 2>/dev/null &
C0=$!
committer 1 2>/dev/null &
C1=$!
for c in a b c d e f g h; do setfattr -n user.cursor.$c -v 0 "$MNT/w/2"; done
: >"$TMP/rows"
# distinct COLUMN: how many values the rows collected show in COLUMN.
distinct() { awk -v c="$1" '{ print $c }' "$TMP/rows" | sort -un | wc -l; }
# rows N: runs lag once more; true once N rows of w are collected and
# they saw the end and the start move.
rows() {
	"$TLOGCTL" lag "$MNT" >"$TMP/one" 2>>"$TMP/lagerr" || echo "exit $?" >>"$TMP/lagerr"
	awk '$1 == "w"' "$TMP/one" >>"$TMP/rows"
	[ "$(wc -l <"$TMP/rows")" -ge "$1" ] && [ "$(distinct 6)" -ge 10 ] &&
	    [ "$(distinct 5)" -ge 3 ]
}
tl_check "lag runs while 3 partitions move: 600 rows or more" \
    tl_wait_for 120 rows 600
kill $W0 $W1 $W2 $C0 $C1
wait $W0 $W1 $W2 $C0 $C1 2>/dev/null
tl_is "every run: exit 0, nothing on stderr" "" "$(cat "$TMP/lagerr")"
awk '{ m = $4 > $5 ? $4 : $5 } $7 != $6 - m || $4 > $6 || $5 > $6' \
    "$TMP/rows" >"$TMP/bad"
tl_is "every row: LAG = END - max(OFFSET, START), OFFSET <= END, START <= END" \
    "" "$(head -3 "$TMP/bad")"
tl_diag "$(wc -l <"$TMP/rows") rows, $(wc -l <"$TMP/bad") bad;" \
    "distinct values of START $(distinct 5), END $(distinct 6)"

# ---- the most cursors a partition keeps ----
# 256 cursors of 64-byte names: their listxattr (20 KiB) stays within
# the kernel's 64 KiB, so every partition's cursors can be listed; the
# 257th is refused (ENOSPC) and lag still lists the partition.
mkdir -p "$MNT/x/0" "$MNT/x/1" "$MNT/y/0"
echo one >>"$MNT/x/1/current"
setfattr -n user.cursor.k -v 1 "$MNT/x/1"
setfattr -n user.cursor.k -v 0 "$MNT/y/0"
{
	echo "# file: $MNT/x/0"
	for i in $(seq 1 256); do printf 'user.cursor.%064d="0"\n' "$i"; done
} >"$TMP/c256"
setfattr --restore="$TMP/c256"
tl_is "256 cursors of 64-byte names" 0 $?
setfattr -n user.cursor.$(printf %064d 257) -v 0 "$MNT/x/0" 2>"$TMP/c.err"
tl_check "the 257th cursor is refused: ENOSPC" \
    grep -q 'No space left on device' "$TMP/c.err"
tl_check "listxattr of 256 cursors works" getfattr -m - "$MNT/x/0"
"$TLOGCTL" lag "$MNT" >"$TMP/lag" 2>"$TMP/lagerr"
tl_is "lag: exit 0" 0 $?
tl_is "lag: 256 rows of x/0, and the other partitions" "256|x 1 k 1 0 1 0|y 0 k 0 0 0 0" \
    "$(awk '$1 == "x" && $2 == 0' "$TMP/lag" | wc -l)|$(awk '$1 != "w" && !($1 == "x" && $2 == 0) { $1 = $1; print }' "$TMP/lag" | sed 1d | paste -sd '|')"
rm -rf "$MNT/x/0"

# ---- what the user cannot read ----
# A topic it may not list, a partition whose cursors it may not read:
# each is named in one line, the rows it can read are printed, exit 1.
mkdir -p "$MNT/p/0" "$MNT/q/0" "$MNT/r/0"
for p in p/0 q/0 r/0; do
	echo one >>"$MNT/$p/current"
	setfattr -n user.cursor.k -v 0 "$MNT/$p"
done
lag_user() {
	setpriv --reuid="$UID_" --regid="$GID_" --clear-groups \
	    "$TMP/tlogctl" lag "$MNT" >"$TMP/lag" 2>"$TMP/lagerr"
}
lag_user
tl_is "lag as a user: exit 0" 0 $?
tl_is "lag as a user: every row" "p 0 k 0 0 1 1|q 0 k 0 0 1 1|r 0 k 0 0 1 1" \
    "$(awk '$1 ~ /^[pqr]$/ { $1 = $1; print }' "$TMP/lag" | paste -sd '|')"
chmod 700 "$MNT/p"
chmod 000 "$MNT/q/0"
lag_user
tl_is "a topic and a partition it cannot read: exit 1" 1 $?
tl_is "the header and the rows it can read" "TOPIC|r 0 k 0 0 1 1" \
    "$(awk '$1 ~ /^(TOPIC|[pqr])$/ { $1 = $1; print }' "$TMP/lag" |
    sed 's/^TOPIC .*/TOPIC/' | paste -sd '|')"
tl_is "a line on stderr for each" \
    "tlogctl: $MNT/p: Permission denied|tlogctl: $MNT/q/0: Permission denied" \
    "$(paste -sd '|' "$TMP/lagerr")"
chmod 755 "$MNT/p" "$MNT/q/0"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing but the reaper's lines" \
    '^tlogfs: (reaper: [0-9]+ segments .* expired from|x/0: cursor [0-9]+ refused: the partition has 256 cursors)'
tl_done
