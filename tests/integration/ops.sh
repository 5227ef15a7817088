#!/bin/sh
# ops.sh - every row of doc/design.md §6 through a real mount, each with
# its exact errno, plus the view of §1 and the permissions.
. "${srcdir:-.}/tests/integration/lib.sh"

p() { "$PROBE" "$@"; }
seal() { setfattr -n user.seal -v 1 "$1"; }

tl_mount
D=$MNT/t/0

# ---- mkdir: topic / partition / EPERM; bad names ----
tl_is "mkdir at root makes a topic" OK "$(p mkdir "$MNT/t")"
tl_is "mkdir in a topic makes a partition" OK "$(p mkdir "$D")"
tl_is "mkdir in a partition: EPERM" EPERM "$(p mkdir "$D/x")"
tl_is "mkdir of an existing topic: EEXIST" EEXIST "$(p mkdir "$MNT/t")"
tl_is "mkdir with a leading dot: EINVAL" EINVAL "$(p mkdir "$MNT/.hidden")"
tl_is "mkdir with a bad character: EINVAL" EINVAL "$(p mkdir "$MNT/a b")"
tl_is "mkdir of a bad partition name: EINVAL" EINVAL "$(p mkdir "$MNT/t/x:y")"
long=$(printf 'n%.0s' $(seq 250))
tl_is "mkdir of a 250-byte name: ENAMETOOLONG" ENAMETOOLONG \
    "$(p mkdir "$MNT/$long")"
tl_is "mkdir -m 750 keeps the mode" 750 \
    "$(mkdir -m 750 "$MNT/t/m" && stat -c %a "$MNT/t/m")"

# ---- the view: an empty partition has an empty current ----
tl_is "a new partition lists only current" current "$(ls "$D")"
tl_is "empty current has size 0" 0 "$(stat -c %s "$D/current")"
tl_is "empty current reads nothing" "" "$(cat "$D/current")"
tl_is "unlink of current with no active segment: ENOENT" ENOENT \
    "$(p unlink "$D/current")"

# ---- appends ----
echo one >>"$D/current"
tl_is ">> appends to current" one "$(cat "$D/current")"
tl_is "O_WRONLY|O_APPEND write" OK "$(p write "$D/current" "two
")"
tl_is "O_RDWR|O_APPEND open" OK "$(p open "$D/current" rdwr,append)"
tl_is "current holds both records" "one
two" "$(cat "$D/current")"
tl_is "current is not listed under its number" current "$(ls "$D")"
tl_is "the active segment's number does not resolve" ENOENT \
    "$(p open "$D/00000000000000000000.log" rdonly)"
tl_is "fsync on current" OK "$(p fsync "$D/current")"

# ---- writes that are not appends ----
tl_is "O_WRONLY without O_APPEND: EPERM" EPERM "$(p open "$D/current" wronly)"
tl_is "O_RDWR without O_APPEND: EPERM" EPERM "$(p open "$D/current" rdwr)"
tl_is "O_TRUNC: EPERM" EPERM "$(p open "$D/current" wronly,append,trunc)"
tl_is "> (O_CREAT|O_TRUNC): EPERM" EPERM "$(p open "$D/current" wronly,creat,trunc)"
tl_is "truncate: EPERM" EPERM "$(p truncate "$D/current" 0)"
tl_is "utimens on a segment: EPERM" EPERM "$(p utimens "$D/current")"
tl_is "chmod on a segment: EPERM" EPERM "$(p chmod "$D/current" 600)"
tl_is "records unchanged by refused writes" "one
two" "$(cat "$D/current")"

# ---- a write handle across a seal; a read handle across a roll ----
exec 3>>"$D/current"
exec 4<"$D/current"
echo three >&3
seal "$D/current"
echo four >&3
exec 3>&-
tl_is "a write handle keeps appending after its segment sealed" \
    "00000000000000000000.log current" "$(ls "$D" | tr '\n' ' ' | sed 's/ $//')"
tl_is "the sealed segment holds the records before the seal" "one
two
three" "$(cat "$D/00000000000000000000.log")"
tl_is "current holds the record after the seal" four "$(cat "$D/current")"
tl_is "a read handle keeps reading its own segment after the roll" "one
two
three" "$(cat <&4)"
exec 4<&-
tl_is "cat dir/* prints every record once, in order" "one
two
three
four" "$(cat "$D"/*)"
tl_is "segment names are base offsets" 00000000000000000003.log \
    "$(echo five >>"$D/current"; seal "$D/current"; ls "$D" | sed -n 2p)"
tl_is "the sealed segment's mtime is its newest record's" \
    "$(getfattr --absolute-names --only-values -n user.tlog.max_ts "$D/00000000000000000000.log" | cut -c1-10)" \
    "$(stat -c %Y "$D/00000000000000000000.log")"

# ---- sealed segments ----
S0=$D/00000000000000000000.log
# A write open of a segment that was `current` a moment ago appends (an
# open that lost a race with the roll); one that never was, or long
# enough ago, is refused. This segment is made by a handle opened before
# it existed and sealed through the directory, so it never was `current`.
mkdir "$MNT/t/w"
exec 5>>"$MNT/t/w/current"
echo six >&5
seal "$MNT/t/w"
exec 5>&-
S5=$MNT/t/w/00000000000000000000.log
tl_is "the segment holds what was written while it was active" six \
    "$(cat "$S5")"
tl_is "open a sealed segment O_WRONLY|O_APPEND: EPERM" EPERM \
    "$(p open "$S5" wronly,append)"
tl_is "open a sealed segment O_RDWR|O_APPEND: EPERM" EPERM \
    "$(p open "$S5" rdwr,append)"
tl_is "truncate a sealed segment: EPERM" EPERM "$(p truncate "$S0" 0)"
tl_is "open current O_RDONLY|O_TRUNC: EPERM" EPERM \
    "$(p open "$D/current" rdonly,trunc)"
tl_is "open a sealed segment O_RDONLY|O_TRUNC: EPERM" EPERM \
    "$(p open "$S0" rdonly,trunc)"
tl_is "open .tlogfs/metrics O_RDONLY|O_TRUNC: EPERM" EPERM \
    "$(p open "$MNT/.tlogfs/metrics" rdonly,trunc)"
tl_is "the sealed segment's size and data are unchanged" "14 one" \
    "$(stat -c %s "$S0") $(head -1 "$S0")"
tl_is "sealed segment mode: read bits only" "-r--r--r--" "$(stat -c %A "$S0")"
tl_is "current mode: read and write bits" "-rw-r--r--" "$(stat -c %A "$D/current")"
tl_is "stat shows the true size" 14 "$(stat -c %s "$S0")"

# ---- mmap (tlogfs(8), CAVEATS): current uses direct I/O, which the
# kernel maps only privately; sealed segments map either way ----
mkdir "$MNT/t/mm"
echo mapped >>"$MNT/t/mm/current"
tl_is "a MAP_SHARED mapping of current, even read-only: ENODEV" ENODEV \
    "$(p mmap "$MNT/t/mm/current" shared)"
tl_is "a MAP_PRIVATE mapping of current reads it" "OK mapped" \
    "$(p mmap "$MNT/t/mm/current" private)"
seal "$MNT/t/mm/current"
tl_is "a MAP_SHARED mapping of a sealed segment reads it" "OK mapped" \
    "$(p mmap "$MNT/t/mm/00000000000000000000.log" shared)"

# ---- other files ----
tl_is "create a file in a partition: EPERM" EPERM "$(p open "$D/new" wronly,creat,append)"
tl_is "create a file at the root: EPERM" EPERM "$(p open "$MNT/new" wronly,creat)"
tl_is "create a file in a topic: EPERM" EPERM "$(p open "$MNT/t/new" wronly,creat)"
tl_is "mknod: EPERM" EPERM "$(p mknod "$D/fifo")"
tl_is "symlink: EPERM" EPERM "$(p symlink current "$D/sl")"
tl_is "link: EPERM" EPERM "$(p link "$S0" "$D/hl")"

# ---- rename ----
mkdir "$MNT/u"
tl_is "rename a topic" OK "$(p rename "$MNT/t" "$MNT/t2")"
tl_is "a renamed topic keeps its data" "one
two
three
four
five" "$(cat "$MNT/t2/0"/*)"
tl_is "rename a partition within its topic" OK "$(p rename "$MNT/t2/0" "$MNT/t2/1")"
tl_is "rename a partition to another topic: EPERM" EPERM \
    "$(p rename "$MNT/t2/1" "$MNT/u/1")"
tl_is "rename a topic into a topic: EPERM" EPERM "$(p rename "$MNT/u" "$MNT/t2/u")"
tl_is "rename a segment: EPERM" EPERM \
    "$(p rename "$MNT/t2/1/00000000000000000000.log" "$MNT/t2/1/x.log")"
tl_is "rename current: EPERM" EPERM "$(p rename "$MNT/t2/1/current" "$MNT/t2/1/c")"
tl_is "rename to a bad name: EINVAL" EINVAL "$(p rename "$MNT/u" "$MNT/.u")"
tl_is "rename .tlogfs: EPERM" EPERM "$(p rename "$MNT/.tlogfs" "$MNT/x")"
tl_is "rename a topic to .tlogfs: EPERM" EPERM \
    "$(p rename "$MNT/u" "$MNT/.tlogfs")"
tl_is "rename .tlogfs/events out: EPERM" EPERM \
    "$(p rename "$MNT/.tlogfs/events" "$MNT/x")"
tl_is "RENAME_EXCHANGE: EINVAL" EINVAL "$(p rename "$MNT/u" "$MNT/t2" exchange)"
tl_is "RENAME_NOREPLACE onto an existing topic: EEXIST" EEXIST \
    "$(p rename "$MNT/u" "$MNT/t2" noreplace)"
tl_is "rename onto a non-empty topic: ENOTEMPTY" ENOTEMPTY \
    "$(p rename "$MNT/u" "$MNT/t2")"
mv "$MNT/t2/1" "$MNT/t2/0"
mv "$MNT/t2" "$MNT/t"

# ---- rmdir ----
tl_is "rmdir of a partition with segments: ENOTEMPTY" ENOTEMPTY "$(p rmdir "$D")"
tl_is "rmdir of a topic with partitions: ENOTEMPTY" ENOTEMPTY "$(p rmdir "$MNT/t")"
tl_is "rmdir of an empty partition" OK "$(p rmdir "$MNT/t/m")"
tl_is "rmdir of an empty topic" OK "$(p rmdir "$MNT/u")"
tl_is "rmdir of current: ENOTDIR" ENOTDIR "$(p rmdir "$D/current")"

# ---- unlink: manual deletion ----
tl_is "rm of a sealed segment" OK "$(p unlink "$S0")"
tl_is "the deleted segment is gone from the listing" \
    "00000000000000000003.log current" "$(ls "$D" | tr '\n' ' ' | sed 's/ $//')"
tl_is "stat of the deleted segment: ENOENT" ENOENT "$(p open "$S0" rdonly)"
echo six >>"$D/current"
tl_is "rm of current deletes the active segment" OK "$(p unlink "$D/current")"
tl_is "after rm current, current is empty" "0" "$(stat -c %s "$D/current")"
echo seven >>"$D/current"
tl_is "offsets go on after a deletion (a gap is legal)" \
    "00000000000000000003.log current" "$(ls "$D" | tr '\n' ' ' | sed 's/ $//')"
tl_is "current starts at the partition's end offset" 6 \
    "$(getfattr --absolute-names --only-values -n user.tlog.base_offset "$D/current")"
tl_is "rm of a segment that does not exist: ENOENT" ENOENT \
    "$(p unlink "$D/00000000000000000999.log")"
tl_is "rm of a topic directory: EISDIR" EISDIR "$(p unlink "$MNT/t")"

# ---- permissions ----
chmod 750 "$D"
tl_is "chmod on a partition" 750 "$(stat -c %a "$D")"
tl_is "current takes the partition's r and w bits" 640 "$(stat -c %a "$D/current")"
tl_is "a sealed segment takes its r bits" 440 \
    "$(stat -c %a "$D/00000000000000000003.log")"
chown 65534:65534 "$D"
tl_is "chown on a partition" "65534:65534" "$(stat -c %u:%g "$D")"
tl_is "segments take the partition's owner" "65534:65534 65534:65534" \
    "$(stat -c %u:%g "$D/current" "$D/00000000000000000003.log" | tr '\n' ' ' | sed 's/ $//')"
chmod 700 "$MNT/t"
tl_is "chmod on a topic" 700 "$(stat -c %a "$MNT/t")"
tl_is "utimens on a directory: EPERM" EPERM "$(p utimens "$MNT/t")"
tl_is "statfs" OK "$(stat -f "$MNT" >/dev/null && echo OK)"
tl_is "security.capability: ENODATA" ENODATA \
    "$(p getxattr "$D/current" security.capability)"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"

# ---- after a remount: permissions persist; other users ----
chmod 755 "$TMP"
tl_mount -o allow_other
tl_is "chmod and chown persist across a remount" "700 750 65534:65534" \
    "$(stat -c %a "$MNT/t") $(stat -c %a "$D") $(stat -c %u:%g "$D")"
chmod 755 "$MNT/t"
chown 0:0 "$D"
chmod 755 "$D"
nob() { setpriv --reuid=65534 --regid=65534 --clear-groups "$PROBE" "$@"; }
tl_is "another user cannot append to a 0644 current (EACCES)" EACCES \
    "$(nob write "$D/current" "x
")"
tl_is "another user cannot mkdir in a 0755 root (EACCES)" EACCES \
    "$(nob mkdir "$MNT/nob")"
chmod 777 "$D"
tl_is "another user appends once the partition is 0777" OK \
    "$(nob write "$D/current" "by nobody
")"
tl_is "another user reads" OK "$(nob open "$D/current" rdonly)"
chmod 1777 "$MNT"
tl_is "another user's new topic is theirs" "65534" \
    "$(nob mkdir "$MNT/nob" >/dev/null; stat -c %u "$MNT/nob")"
# A long-lived writer keeps the inode `current` had when it opened; the
# kernel grows that inode's size with each of its appends, wherever they
# land. Readers of the sealed name must get another inode, or they read
# NUL bytes past the segment's end (found by tests/torture).
W=$MNT/w/0
mkdir -p "$W"
setfattr -n user.segment.bytes -v 1K "$W"
printf '%099d\n' 0 >>"$W/current"	# so that current is segment 0
exec 3>>"$W/current"
i=1
while [ $i -lt 25 ]; do
	printf '%099d\n' $i >&3
	i=$((i + 1))
done
first=$W/00000000000000000000.log
tl_is "the writer's inode is not its sealed segment's name's" different \
    "$([ "$(stat -L -c %i /dev/fd/3)" != "$(stat -c %i "$first")" ] &&
    echo different)"
tl_is "the sealed segment keeps its size while the writer appends" \
    "1000 0" "$(stat -c %s "$first") $(tr -cd '\000' <"$first" | wc -c)"
exec 3>&-
tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing after the remount"

# A directory planted where .next's temporary file goes: the unlinker
# cannot save the end offset, so it keeps the segment (it never unlinks
# without it) and tries again each second, not in a busy loop; once the
# stray is gone the removal completes.
: >"$ERR"
tl_mount
mkdir -p "$MNT/spin/0"
echo a >>"$MNT/spin/0/current"
setfattr -n user.seal -v 1 "$MNT/spin/0"
mkdir "$STORE/spin/0/.next.tmp"
rm "$MNT/spin/0/00000000000000000000.log"
refused() { grep -q 'end offset' "$ERR"; }
tl_check "the unlinker says why it cannot go on" tl_wait_for 10 refused
ticks() { awk '{ print $14 + $15 }' "/proc/$DPID/stat"; }
t0=$(ticks)
sleep 2	# the window over which the daemon's CPU time is measured
t1=$(ticks)
tl_check "and does not spin meanwhile ($((t1 - t0)) ticks in 2 s)" \
    test $((t1 - t0)) -lt 50
tl_check "the segment stays while its end offset cannot be saved" \
    test -e "$STORE/spin/0/00000000000000000000.log"
rmdir "$STORE/spin/0/.next.tmp"
gone() { ! test -e "$STORE/spin/0/00000000000000000000.log"; }
tl_check "with the stray gone, the removal completes" tl_wait_for 10 gone
tl_is "and the end offset is kept" 1 "$(gx user.tlog.end_offset "$MNT/spin/0")"
tl_check "unmount" tl_umount
tl_done
