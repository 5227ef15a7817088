#!/bin/bash
# perms.sh - permissions on a mount with -o allow_other, checked as a
# throwaway system user (created with useradd, removed with userdel when
# the test ends) through setpriv:
#
#   * a user without write permission on a partition directory cannot
#     append to it (EACCES), and can once the directory allows it;
#   * a user who does not own a topic (0755, root's) cannot change its
#     xattrs: the kernel checks write permission on the directory
#     (default_permissions), so setxattr and removexattr fail with EACCES;
#     reading them works; the owner can change them. On a sticky
#     directory (1777) the kernel allows only the owner: EPERM. (On a
#     plain 0777 topic anyone may change them: mode bits are the policy.)
#   * .tlogfs/ (events, metrics) is readable by the mount root's owner
#     and group only: a user outside them gets EACCES, a chgrp of the
#     root lets its group read (never write) at once;
#   * chmod and chown on the root, a topic and a partition persist across
#     a remount, and never reach the store's directories (0700, the
#     daemon's); current and the segments take the partition's owner;
#   * a mountpoint reached through a directory or symbolic link the user
#     owns is refused, also through a link of root's that leads to it.
. "${srcdir:-.}/tests/integration/lib.sh"

tl_user tlt

tl_mount -o allow_other
mkdir -p "$MNT/t/root" "$MNT/t/open" "$MNT/t/mine"
tl_is "the user cannot append to a partition it may not write" EACCES \
    "$(as_user write "$MNT/t/root/current" "x
")"
tl_is "nor create a partition in a topic it may not write" EACCES \
    "$(as_user mkdir "$MNT/t/new")"
tl_is "it can read it" OK "$(as_user open "$MNT/t/root/current" rdonly)"
chmod 777 "$MNT/t/open"
tl_is "current takes the directory's read and write bits" 666 \
    "$(stat -c %a "$MNT/t/open/current")"
tl_is "the user can append to a partition open to all" OK \
    "$(as_user write "$MNT/t/open/current" "from the user
")"
tl_is "the record is there" "from the user" "$(cat "$MNT/t/open/current")"
chmod 755 "$MNT/t/open"
tl_is "not once the directory is 0755 again" EACCES \
    "$(as_user write "$MNT/t/open/current" "x
")"
chown "$U:$U" "$MNT/t/mine"
tl_is "current takes the partition's owner" "$UID_ $GID_ 644" \
    "$(stat -c '%u %g %a' "$MNT/t/mine/current")"
tl_is "the owner of a partition can append" OK \
    "$(as_user write "$MNT/t/mine/current" "mine
")"
setfattr -n user.seal -v 1 "$MNT/t/mine/current"
tl_is "a sealed segment takes the owner and read bits only" "$UID_ $GID_ 444" \
    "$(stat -c '%u %g %a' "$MNT/t/mine/00000000000000000000.log")"

# xattrs on a topic the user does not own (root's, 0755).
setfattr -n user.retention.ms -v 1d "$MNT/t"
tl_is "a non-owner cannot set a topic's xattr" EACCES \
    "$(as_user setxattr "$MNT/t" user.retention.ms 1h)"
tl_is "nor remove one" EACCES \
    "$(as_user removexattr "$MNT/t" user.retention.ms)"
tl_is "nor set one on a partition of that topic" EACCES \
    "$(as_user setxattr "$MNT/t/root" user.segment.bytes 1M)"
tl_is "nor seal its current" EACCES \
    "$(as_user setxattr "$MNT/t/root/current" user.seal 1)"
tl_is "the value is unchanged" 86400000 "$(gx user.retention.ms "$MNT/t")"
tl_is "the user can read it" "OK 86400000" \
    "$(as_user getxattr "$MNT/t" user.retention.ms)"
# A topic others may write: the kernel lets them set user.* xattrs,
# unless the sticky bit is set (then only the owner: EPERM).
mkdir -p "$MNT/s"
chmod 1777 "$MNT/s"
tl_is "a non-owner cannot set the xattrs of a sticky topic (EPERM)" EPERM \
    "$(as_user setxattr "$MNT/s" user.retention.ms 1s)"
tl_is "the owner of a partition can set its xattrs" OK \
    "$(as_user setxattr "$MNT/t/mine" user.segment.bytes 1M)"
tl_is "and the value is there" 1048576 \
    "$(gx user.segment.bytes "$MNT/t/mine")"

# .tlogfs/ names every topic (events, metric series): only the mount
# root's owner and group may read it (r-x, r--), and a chgrp of the
# root grants a group, at once.
mkdir -p "$MNT/secret/0"
chmod 700 "$MNT/secret"
echo hush >>"$MNT/secret/0/current"
setfattr -n user.seal -v 1 "$MNT/secret/0/current"
sealed_event() { grep -q '"topic":"secret"' "$MNT/.tlogfs/events/current"; }
tl_check "the seal in topic secret is an event" tl_wait_for 10 sealed_event
tl_is "the user may not read topic secret" EACCES \
    "$(as_user cat "$MNT/secret/0/current")"
tl_is ".tlogfs/, events/: the root's owner and group, r-x" "550 0 0
550 0 0" "$(stat -c '%a %u %g' "$MNT/.tlogfs" "$MNT/.tlogfs/events")"
tl_is "events/current and metrics: r--" "440 0 0
440 0 0" "$(stat -c '%a %u %g' "$MNT/.tlogfs/events/current" \
    "$MNT/.tlogfs/metrics")"
tl_is "a user outside the root's group cannot list .tlogfs/" EACCES \
    "$(as_user ls "$MNT/.tlogfs")"
tl_is "nor read the events" EACCES \
    "$(as_user cat "$MNT/.tlogfs/events/current")"
tl_is "nor the metrics" EACCES "$(as_user cat "$MNT/.tlogfs/metrics")"
# A sealed event segment, its attributes cached by the kernel.
setfattr -n user.seal -v 1 "$MNT/.tlogfs/events/current"
evseg=$MNT/.tlogfs/events/$(ls "$MNT/.tlogfs/events" | grep -m1 '\.log$')
tl_is "a sealed event segment: r--" "440 0 0" "$(stat -c '%a %u %g' "$evseg")"
chgrp "$U" "$MNT"
tl_is "chgrp of the mount root gives .tlogfs/ to the group at once" \
    "550 0 $GID_
440 0 $GID_
440 0 $GID_" "$(stat -c '%a %u %g' "$MNT/.tlogfs" "$evseg" \
    "$MNT/.tlogfs/events/current")"
tl_is "a member of the root's group lists .tlogfs/" "events
metrics" "$(as_user ls "$MNT/.tlogfs" | sort)"
tl_is "and reads the events" yes \
    "$(as_user cat "$evseg" | grep -q '"topic":"secret"' && echo yes)"
tl_is "and the metrics" yes \
    "$(as_user cat "$MNT/.tlogfs/metrics" | grep -q '^tlogfs_' && echo yes)"
tl_is "but cannot write there" EACCES \
    "$(as_user write "$MNT/.tlogfs/events/current" "x
")"
chgrp 0 "$MNT"

# chmod and chown persist across a remount.
mkdir -p "$MNT/u/0"
chmod 750 "$MNT/u"
chown "$U:$U" "$MNT/u"
chmod 700 "$MNT/u/0"
chown "$UID_:0" "$MNT/u/0"
chmod 775 "$MNT"
want="$(stat -c '%n %a %u %g' "$MNT" "$MNT/u" "$MNT/u/0" "$MNT/t/mine" \
    "$MNT/t/open")"
# None of it reaches the store: its directories stay the daemon's alone.
chmod 1777 "$MNT/t/open"
tl_is "the store's directories stay 0700 and the daemon's" \
    "700 0 0
700 0 0
700 0 0" "$(stat -c '%a %u %g' "$STORE/u" "$STORE/u/0" "$STORE/t/open")"
chmod 755 "$MNT/t/open"
tl_check "unmount" tl_umount
tl_mount -o allow_other
tl_is "modes and owners persist across a remount" "$want" \
    "$(stat -c '%n %a %u %g' "$MNT" "$MNT/u" "$MNT/u/0" "$MNT/t/mine" \
    "$MNT/t/open")"
tl_is "current still takes the partition's owner" "$UID_ 0 600" \
    "$(stat -c '%u %g %a' "$MNT/u/0/current")"
tl_is "and the owner can still append" OK \
    "$(as_user write "$MNT/t/mine/current" "mine again
")"
tl_is "others still cannot" EACCES \
    "$(as_user write "$MNT/t/open/current" "x
")"
tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"

# A mountpoint reached through the user's directory (here, the user's
# symbolic link in it) is refused, as given (libfuse resolves its own
# copy) and through a link of ours that leads there: the user could put
# a link to any directory in its place between the check and the mount.
mkdir -p "$TMP/evil" "$TMP/real"
chown "$UID_" "$TMP/evil"
setpriv --reuid="$UID_" --regid="$GID_" --clear-groups \
    ln -s "$TMP/real" "$TMP/evil/mnt"
ln -s "$TMP/evil/mnt" "$TMP/ours"
for m in "$TMP/evil/mnt" "$TMP/ours"; do
	"$TLOGFS" "$STORE" "$m" -f 2>"$TMP/sym.err"
	tl_is "a mountpoint through the user's link ($m): exit 1" 1 $?
	tl_check "and one line naming the user's directory" \
	    grep -q "mountpoint $m: $TMP/evil belongs to uid $UID_.*refused" \
	    "$TMP/sym.err"
done
tl_check "nothing was mounted" sh -c "! grep -q '$TMP/real' /proc/mounts"
tl_done
