#!/bin/sh
# tail.sh - `tail -F current` while segments seal about once a second
# prints every line once: a read handle keeps reading its own segment to
# the end, then tail notices `current` is a new file and follows it.
. "${srcdir:-.}/tests/integration/lib.sh"

N=${TAIL_LINES:-60}
tl_mount
D=$MNT/f/0
mkdir -p "$D"
setfattr -n user.segment.ms -v 1s "$D"
: >"$TMP/want"
"$LINEWRITER" "$TMP/want" 7 "$N"

# tail polls a FUSE file system (coreutils treats it as remote) and
# looks for a replaced file only after --max-unchanged-stats polls that
# saw no growth: tlogfs(8) (FOLLOWERS AND WRITERS) documents this form,
# which loses nothing; with -s 0.2 alone this test loses whole segments.
# TAIL_OPTS overrides it.
tail ${TAIL_OPTS:--s 0.2 --max-unchanged-stats=1} -n +1 -F "$D/current" \
    >"$TMP/got" 2>"$TMP/tail.err" &
TPID=$!
tl_check "a writer appends $N lines over about $((N / 10)) s" \
    "$LINEWRITER" -d 100000 "$D/current" 7 "$N"
lines() { [ "$(wc -l <"$TMP/got")" -ge "$N" ]; }
tl_wait_for 20 lines
kill "$TPID"
wait "$TPID" 2>/dev/null
tl_check "the segments rolled at least 4 times" \
    test "$(ls "$D" | grep -c '\.log$')" -ge 4
tl_check "tail -F printed every line once, in order" \
    cmp -s "$TMP/want" "$TMP/got"
[ -s "$TMP/got" ] && diff "$TMP/want" "$TMP/got" | head -5 | sed 's/^/# /'
sed 's/^/# tail: /' "$TMP/tail.err" | head -3
# A follower that opened `current` while the partition was empty holds
# the empty node. tail -F moves on to the new file only after a poll in
# which the file it holds looked unchanged, so the empty node's stat must
# not change while appends make segment files (it took the directory's
# mtime, which does: tail then printed nothing while a fast writer ran;
# found by tests/torture).
E=$MNT/f/empty
mkdir -p "$E"
setfattr -n user.segment.bytes -v 1K "$E"
exec 4<"$E/current"
before=$(stat -L -c '%i %s %y %z' /dev/fd/4)
"$LINEWRITER" "$E/current" 3 200
tl_is "the empty current a follower holds looks unchanged while segments appear" \
    "$before" "$(stat -L -c '%i %s %y %z' /dev/fd/4)"
exec 4<&-
tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
