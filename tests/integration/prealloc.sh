#!/bin/bash
# prealloc.sh - segment.preallocate through a mount:
#
#   * the reserved space shows in st_blocks of current (du sees it) while
#     st_size is the data, and goes at the seal;
#   * only the mount's owner (the daemon's uid) may set or remove
#     segment.preallocate, at any level: another user gets EPERM even on
#     a partition it owns (checked as a throwaway system user, created
#     with useradd and removed with userdel, on a mount with allow_other),
#     and the refusal is logged.
. "${srcdir:-.}/tests/integration/lib.sh"

tl_user tlp

tl_mount -o allow_other

# ---- the reservation shows in st_blocks ----
D=$MNT/pre/0
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1M "$D"
setfattr -n user.segment.preallocate -v 1 "$D"
printf 'x\n' >>"$D/current"
tl_is "st_size of current is the data" 2 "$(stat -c %s "$D/current")"
tl_is "st_blocks of current counts the reservation" 2048 \
    "$(stat -c %b "$D/current")"
tl_is "du sees it" 1024 "$(du -k "$D/current" | cut -f1)"
setfattr -n user.seal -v 1 "$D/current"
tl_is "the sealed segment takes only its data" 1 \
    "$(stat -c %b "$D/00000000000000000000.log")"

# ---- only the mount's owner changes segment.preallocate ----
mkdir -p "$MNT/pre/mine"
chown "$U:$U" "$MNT/pre/mine"
tl_is "another user cannot set it, even on a partition it owns" EPERM \
    "$(as_user setxattr "$MNT/pre/mine" user.segment.preallocate 1)"
tl_is "nor to 0" EPERM \
    "$(as_user setxattr "$MNT/pre/mine" user.segment.preallocate 0)"
tl_is "the value is unchanged" 0 \
    "$(gx user.segment.preallocate "$MNT/pre/mine")"
tl_is "it may set other keys there" OK \
    "$(as_user setxattr "$MNT/pre/mine" user.segment.bytes 2G)"
setfattr -n user.segment.preallocate -v 0 "$MNT/pre/mine"
tl_is "nor remove the owner's override" EPERM \
    "$(as_user removexattr "$MNT/pre/mine" user.segment.preallocate)"
tl_is "it may read it" "OK 0" \
    "$(as_user getxattr "$MNT/pre/mine" user.segment.preallocate)"
tl_is "the mount's owner can remove it" OK \
    "$("$PROBE" removexattr "$MNT/pre/mine" user.segment.preallocate)"
tl_is "each refusal is logged, naming the uid" 3 \
    "$(grep -c "segment.preallocate: refused for uid $UID_" "$ERR")"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed only the refusals" \
    "segment.preallocate: refused for uid $UID_"
tl_done
