#!/bin/sh
# held.sh - the held bytes of an unfinished line belong to the open file
# (tlogfs(8), DESCRIPTION): the close of one of several descriptors
# sharing it (a dup, a forked child's exit: each sends FLUSH) appends
# nothing; the last close (RELEASE) and fsync append them; every way the
# daemon stops appends those of files still open:
#
#   * write "start", close(dup(fd)) or a child exits, another writer
#     appends "OTHER\n", then "done\n": the records are OTHER, startdone;
#   * fsync appends held bytes before it returns;
#   * `printf x >> current`: the record shows once the asynchronous
#     RELEASE is served; the delay's distribution is printed;
#   * SIGTERM, a lazy unmount (fusermount3 -u -z) and an aborted
#     connection (umount -f) with a writer still holding bytes: appended.
. "${srcdir:-.}/tests/integration/lib.sh"

tl_mount
D=$MNT/h/0
mkdir -p "$D"

tl_is "close of a dup holds the partial line" OK "$("$HELD" dup "$D/current")"
tl_is "records: the other writer's, then start+done" "OTHER
startdone" "$(cat "$D/current")"

mkdir "$MNT/h/1"
tl_is "a forked child's exit holds the partial line" OK \
    "$("$HELD" fork "$MNT/h/1/current")"
tl_is "records: the other writer's, then start+done" "OTHER
startdone" "$(cat "$MNT/h/1/current")"

# The shell's own way: a dup'd descriptor for one command (>&3).
mkdir "$MNT/h/2"
exec 3>>"$MNT/h/2/current"
printf 'sh-' >&3
/bin/echo -n 'start' >&3	# a child with a dup of fd 3 exits
echo 'OTHER' >>"$MNT/h/2/current"
echo '-done' >&3
exec 3>&-
tl_is "the shell's >&3 in a child holds it too" "OTHER
sh-start-done" "$(cat "$MNT/h/2/current")"

mkdir "$MNT/h/3"
tl_is "fsync appends the held bytes before it returns" OK \
    "$("$HELD" fsync "$MNT/h/3/current")"
tl_is "as a record without newline" "synced" "$(cat "$MNT/h/3/current")"

# printf x >> current: RELEASE is asynchronous, the record follows.
mkdir "$MNT/h/4"
printf x >>"$MNT/h/4/current"
shows() { [ "$(cat "$MNT/h/4/current")" = x ]; }
tl_check "after printf x >> current the record shows" tl_wait_for 10 shows
lat=$("$HELD" latency "$MNT/h/4/current" "${HELD_SAMPLES:-300}")
tl_is "each of ${HELD_SAMPLES:-300} closes' record shows" OK "${lat%% *}"
tl_diag "close to record visible, us: min p50 p90 p99 max, shown at the first stat:${lat#OK}"

# A stop with a writer still open: SIGTERM.
mkdir "$MNT/h/5" "$MNT/h/6" "$MNT/h/7"
exec 3>>"$MNT/h/5/current"
printf 'whole\nheld by SIGTERM' >&3
st=0
tl_kill TERM || st=$?
exec 3>&-
tl_is "SIGTERM with an open writer: status 0" 0 "$st"

# A lazy unmount: the kernel keeps the connection until the last close,
# whose RELEASE appends; then the daemon stops.
tl_mount
exec 3>>"$MNT/h/6/current"
printf 'held by fusermount3 -u -z' >&3
tl_check "fusermount3 -u -z with an open writer" "$FUSERMOUNT" -u -z "$MNT"
exec 3>&-
st=0
tl_wait_daemon || st=$?
tl_is "the daemon stops at the last close, status 0" 0 "$st"

# umount -f aborts the connection: no RELEASE comes; the daemon appends
# what its open handles hold as it stops (and leaves a dead mount).
tl_mount
exec 3>>"$MNT/h/7/current"
printf 'held by an abort' >&3
umount -f "$MNT" 2>/dev/null
st=0
tl_wait_daemon || st=$?
exec 3>&-
tl_is "an aborted connection stops the daemon, status 0" 0 "$st"
umount -l "$MNT" 2>/dev/null

tl_mount
tl_is "SIGTERM appended the held bytes" "whole
held by SIGTERM" "$(cat "$MNT/h/5/current")"
tl_is "the lazy unmount's last close appended them" \
    "held by fusermount3 -u -z" "$(cat "$MNT/h/6/current")"
tl_is "the abort's stop appended them" "held by an abort" \
    "$(cat "$MNT/h/7/current")"
tl_check "unmount" tl_umount
# libfuse's own line when a read races the connection's end at an
# unmount (the kernel answers ECONNABORTED; mount/main.c): a stop.
tl_stderr_clean "the daemon printed nothing" \
    '^fuse: reading device: Software caused connection abort$'

tl_done
