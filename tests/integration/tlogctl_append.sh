#!/bin/sh
# tlogctl_append.sh - `tlogctl append PART`: a slow producer's line shows
# while the producer is still open, and a line written in pieces stays
# one record; SIGTERM stops it cleanly; a fast producer's lines go in
# batches (one FUSE write per MiB, counted by tlogfs_appends_total),
# every line once, in order; a refused record is dropped and reported
# once while the rest goes in; --sync fsyncs before the exit and
# --sync-interval while running (counted by tlogfs_fsyncs_total); usage
# errors exit 2 with one line on
# stderr, a missing partition 1; tlogctl(1) is clean mdoc.
. "${srcdir:-.}/tests/integration/lib.sh"

TLOGCTL=$TL_BUILD/cli/tlogctl
appends() { awk '$1 == "tlogfs_appends_total" { print $2 }' "$MNT/.tlogfs/metrics"; }

tl_mount

# ---- usage ----
# usage_err NAME LINE ARGS...: `tlogctl ARGS` exits 2 with one line on
# stderr, what is wrong and the usage LINE, and nothing on stdout.
usage_err() {
	local name=$1 line=$2
	shift 2
	"$TLOGCTL" "$@" </dev/null >"$TMP/u.out" 2>"$TMP/u.err"
	tl_is "$name: exit 2" 2 $?
	tl_is "$name: one line on stderr, with the usage" "1 1" \
	    "$(wc -l <"$TMP/u.err") $(grep -c "^tlogctl: .*; usage: $line\$" "$TMP/u.err")"
	tl_is "$name: nothing on stdout" "" "$(cat "$TMP/u.out")"
}
ALL='tlogctl append|read|lag .*'
usage_err "no command" "$ALL"
usage_err "an unknown command" "$ALL" frobnicate
usage_err "--help with an argument" "$ALL" --help append
usage_err "append without PART" 'tlogctl append \[--sync\] \[--sync-interval DURATION\] PART' append
usage_err "append with two PARTs" 'tlogctl append \[--sync\] \[--sync-interval DURATION\] PART' append "$MNT/a/0" "$MNT/a/1"
usage_err "append with an unknown option" 'tlogctl append \[--sync\] \[--sync-interval DURATION\] PART' append -x "$MNT/a/0"
usage_err "append --help with an argument" 'tlogctl append \[--sync\] \[--sync-interval DURATION\] PART' append --help "$MNT/a/0"
out=$("$TLOGCTL" --help 2>"$TMP/u.err")
tl_is "--help: exit 0" 0 $?
tl_is "--help: the usage on stdout" "usage: tlogctl append [--sync] [--sync-interval DURATION] PART" "$(echo "$out" | head -1)"
tl_is "--help: every command" 4 "$(echo "$out" | grep -c 'tlogctl \(append\|read\|lag\|--help\)')"
tl_is "--help: nothing on stderr" "" "$(cat "$TMP/u.err")"
"$TLOGCTL" append "$MNT/nope/0" </dev/null 2>"$TMP/e.err"
tl_is "a missing partition: exit 1" 1 $?
tl_is "a missing partition: one line on stderr" 1 "$(wc -l <"$TMP/e.err")"

# ---- the manual page ----
PAGE=${srcdir:-.}/doc/tlogctl.1
if command -v mandoc >/dev/null; then
	tl_is "tlogctl(1): mandoc -T lint -W warning: nothing" "" \
	    "$(mandoc -T lint -W warning "$PAGE" 2>&1)"
else
	tl_ok "tlogctl(1) lint # SKIP no mandoc"
fi
if command -v man >/dev/null; then
	tl_is "tlogctl(1): man -l renders it without a warning" "" \
	    "$(MANWIDTH=80 man -l "$PAGE" 2>&1 >/dev/null)"
else
	tl_ok "tlogctl(1) man -l # SKIP no man"
fi

# ---- a slow producer, through a FIFO the test holds open ----
D=$MNT/slow/0
mkdir -p "$D"
mkfifo "$TMP/fifo"
"$TLOGCTL" append "$D" <"$TMP/fifo" 2>"$TMP/slow.err" &
APID=$!
exec 3>"$TMP/fifo"
recs() { [ "$(gx user.tlog.end_offset "$D")" -ge "$1" ]; }
printf 'first ' >&3
printf 'half\n' >&3
t0=$(now_ms)
tl_check "a line shows while its producer is still open" tl_wait_for 5 recs 1
tl_diag "it showed after $(($(now_ms) - t0)) ms (flush after 100 ms)"
printf 'second line\nthird ' >&3
printf 'in pieces\n' >&3
t0=$(now_ms)
tl_check "the next lines show too" tl_wait_for 5 recs 3
tl_diag "they showed after $(($(now_ms) - t0)) ms"
printf 'no newline at the end' >&3
exec 3>&-
wait $APID
tl_is "end of input: exit 0" 0 $?
tl_is "each line is one record, the last one without newline" \
    "4 first half|second line|third in pieces|no newline at the end" \
    "$(gx user.tlog.end_offset "$D") $(cat "$D/current" | paste -sd'|')"
tl_is "nothing on stderr" "" "$(cat "$TMP/slow.err")"

# ---- SIGTERM while the producer is still open: a clean stop ----
D=$MNT/term/0
mkdir -p "$D"
rm -f "$TMP/fifo"
mkfifo "$TMP/fifo"
"$TLOGCTL" append "$D" <"$TMP/fifo" 2>"$TMP/term.err" &
APID=$!
exec 3>"$TMP/fifo"
printf 'one\ntwo\n' >&3
tl_wait_for 5 recs 2
kill -TERM $APID
wait $APID
tl_is "SIGTERM: exit 0" 0 $?
exec 3>&-
tl_is "SIGTERM: the lines are there" "one|two" "$(cat "$D/current" | paste -sd'|')"

# ---- --sync and --sync-interval: fsyncs the daemon counts ----
fsyncs() { awk '$1 == "tlogfs_fsyncs_total" { print $2 }' "$MNT/.tlogfs/metrics"; }
fsyncs_over() { [ "$(fsyncs)" -gt "$1" ]; }
D=$MNT/sync/0
mkdir -p "$D"
usage_err "append --sync-interval 0" 'tlogctl append \[--sync\] \[--sync-interval DURATION\] PART' \
    append --sync-interval 0 "$D"
usage_err "append --sync-interval soon" 'tlogctl append \[--sync\] \[--sync-interval DURATION\] PART' \
    append --sync-interval soon "$D"
usage_err "append --sync-interval past a year" 'tlogctl append \[--sync\] \[--sync-interval DURATION\] PART' \
    append --sync-interval 9223372036854775807ms "$D"
f0=$(fsyncs)
printf 'a\nb' | "$TLOGCTL" append "$D"
f1=$(fsyncs)
tl_is "without --sync: no fsync" "$f0" "$f1"
printf 'c\nd' | "$TLOGCTL" append --sync "$D"
tl_is "--sync: exit 0" 0 $?
tl_is "--sync: one fsync before the exit" $((f1 + 1)) "$(fsyncs)"
tl_is "--sync: the held last line was in it (4 records, two without newline)" \
    "4 a|bc|d" "$(gx user.tlog.end_offset "$D") $(cat "$D"/* | paste -sd'|')"
rm -f "$TMP/fifo"
mkfifo "$TMP/fifo"
"$TLOGCTL" append --sync-interval 50ms "$D" <"$TMP/fifo" 2>"$TMP/sync.err" &
APID=$!
exec 3>"$TMP/fifo"
f0=$(fsyncs)
printf 'e\n' >&3
tl_check "--sync-interval: an fsync while the producer is still open" \
    tl_wait_for 5 fsyncs_over "$f0"
f1=$(fsyncs)
printf 'f\n' >&3
tl_check "--sync-interval: another after the next line" \
    tl_wait_for 5 fsyncs_over "$f1"
exec 3>&-
wait $APID
tl_is "--sync-interval: exit 0, nothing on stderr" "0 " "$? $(cat "$TMP/sync.err")"

# ---- fast producers ----
# 2,621,440 lines of 8 bytes from a file: exactly 20 MiB, and every read
# fills the 1 MiB buffer at once, so exactly 20 writes of exactly 1 MiB,
# each one FUSE request only if the buffer is page-aligned (a write a
# line would be 2.6 million).
D=$MNT/fast8/0
mkdir -p "$D"
N8=2621440
seq -f '%07.0f' 0 $((N8 - 1)) >"$TMP/fast8.want"
a0=$(appends)
"$TLOGCTL" append "$D" <"$TMP/fast8.want" 2>"$TMP/fast.err"
tl_is "from a file: exit 0" 0 $?
a1=$(appends)
tl_is "from a file: every line is a record" $N8 "$(gx user.tlog.end_offset "$D")"
tl_check "from a file: every line once, in order" \
    sh -c "cat '$D'/* | cmp -s - '$TMP/fast8.want'"
tl_is "from a file: one FUSE write per MiB" 20 $((a1 - a0))

# 200,000 lines of 100 bytes through a here-document and a pipe: reads
# are smaller, and a stall of 100 ms on a loaded machine flushes early,
# so a loose bound.
N=200000
D=$MNT/fast/0
mkdir -p "$D"
awk -v n=$N 'BEGIN { for (i = 0; i < n; i++) printf "%09d %089d\n", i, 0 }' >"$TMP/fast.want"
a0=$(appends)
"$TLOGCTL" append "$D" 2>>"$TMP/fast.err" <<EOF
$(cat "$TMP/fast.want")
EOF
st=$?
cat "$TMP/fast.want" | "$TLOGCTL" append "$D" 2>>"$TMP/fast.err"
st=$((st + $?))
a1=$(appends)
tl_is "from a pipe: exit 0" 0 $st
tl_is "from a pipe: every line is a record" $((2 * N)) "$(gx user.tlog.end_offset "$D")"
cat "$TMP/fast.want" "$TMP/fast.want" >"$TMP/fast.want2"
cat "$D"/* >"$TMP/fast.got"
tl_check "from a pipe: every line once, in order" \
    cmp -s "$TMP/fast.want2" "$TMP/fast.got"
tl_diag "FUSE writes for $((2 * N)) lines from a pipe: $((a1 - a0))"
tl_check "from a pipe: few FUSE writes (at least 100 lines a write)" \
    test $((a1 - a0)) -le $((2 * N / 100))
tl_is "nothing on stderr" "" "$(cat "$TMP/fast.err")"

# ---- refused records ----
D=$MNT/big/0
mkdir -p "$D"
setfattr -n user.retention.bytes -v 4K "$D"
big=$(head -c 5000 /dev/zero | tr '\0' x)
printf 'one\n%s\ntwo\n%s\nthree\n' "$big" "$big" | "$TLOGCTL" append "$D" 2>"$TMP/big.err"
tl_is "a refused record: exit 1" 1 $?
tl_is "the other records go in" "one two three" "$(cat "$D"/* | paste -sd' ')"
tl_is "the error is reported once" 1 "$(wc -l <"$TMP/big.err")"
tl_check "it names the error" grep -q 'File too large' "$TMP/big.err"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing but the refusals" \
    'a record of [0-9]+ bytes is refused and dropped: larger than retention.bytes'
tl_done
