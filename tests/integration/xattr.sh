#!/bin/sh
# xattr.sh - configuration and statistics through extended attributes
# (doc/design.md §5): round trip, inheritance, bad values, unknown keys, read-only
# statistics, manual seal, and persistence across a remount.
. "${srcdir:-.}/tests/integration/lib.sh"

p() { "$PROBE" "$@"; }

tl_mount
mkdir -p "$MNT/t/0" "$MNT/t/1"
P=$MNT/t/0

# ---- round trip, units, canonical values ----
tl_is "set retention.ms on a partition" OK "$(p setxattr "$P" user.retention.ms 3d)"
tl_is "get returns the canonical integer" 259200000 "$(gx user.retention.ms "$P")"
tl_is "setfattr and getfattr round trip" 65536 \
    "$(setfattr -n user.segment.bytes -v 64K "$P" && getfattr --absolute-names --only-values -n user.segment.bytes "$P")"
tl_is "a value with echo's newline" OK "$(p setxattr "$P" user.segment.ms "30s
")"
tl_is "segment.ms in ms" 30000 "$(gx user.segment.ms "$P")"
tl_is "size query (size 0) gives the length" "OK 5" \
    "$(p getxattr "$P" user.segment.ms 0)"
tl_is "a too small buffer: ERANGE" ERANGE "$(p getxattr "$P" user.segment.ms 2)"

# ---- inheritance: partition, topic, store, built-in ----
tl_is "built-in default" 604800000 "$(gx user.retention.ms "$MNT/t/1")"
p setxattr "$MNT" user.retention.ms 2d >/dev/null
tl_is "the store default is inherited by a partition" 172800000 \
    "$(gx user.retention.ms "$MNT/t/1")"
p setxattr "$MNT/t" user.retention.ms 1d >/dev/null
tl_is "the topic's value wins over the store's" 86400000 \
    "$(gx user.retention.ms "$MNT/t/1")"
tl_is "the partition's own value wins over the topic's" 259200000 \
    "$(gx user.retention.ms "$P")"
tl_is "current shows its partition's effective value" 259200000 \
    "$(gx user.retention.ms "$P/current")"
tl_is "a level lists only what it sets" \
    "OK user.retention.ms" "$(p listxattr "$MNT/t")"
tl_is "removexattr drops the topic's override" OK \
    "$(p removexattr "$MNT/t" user.retention.ms)"
tl_is "the store's value shows through again" 172800000 \
    "$(gx user.retention.ms "$MNT/t/1")"
tl_is "removexattr of a key the level does not set: ENODATA" ENODATA \
    "$(p removexattr "$MNT/t" user.retention.ms)"
tl_is "XATTR_CREATE on a key the level sets: EEXIST" EEXIST \
    "$(p setxattr "$P" user.retention.ms 1d create)"
tl_is "XATTR_REPLACE on a key the level does not set: ENODATA" ENODATA \
    "$(p setxattr "$MNT/t" user.retention.ms 1d replace)"

# ---- bad values, unknown keys, other namespaces ----
tl_is "bad value: EINVAL" EINVAL "$(p setxattr "$P" user.segment.bytes lots)"
tl_is "out of range: EINVAL" EINVAL "$(p setxattr "$P" user.segment.bytes 10)"
tl_is "negative retention below -1: EINVAL" EINVAL \
    "$(p setxattr "$P" user.retention.ms -5)"
tl_is "a bad value changes nothing" 65536 "$(gx user.segment.bytes "$P")"
# Blanks around a value are accepted (design.md §5), as Kafka's ConfigDef
# and the kernel's sysctl files trim them; blanks inside it are not.
P1=$MNT/t/1
tl_is "a leading space is accepted" 259200000 \
    "$(setfattr -n user.retention.ms -v ' 3d' "$P1" && gx user.retention.ms "$P1")"
tl_is "a trailing space is accepted" 172800000 \
    "$(setfattr -n user.retention.ms -v '2d ' "$P1" && gx user.retention.ms "$P1")"
TAB=$(printf '\t')
tl_is "a tab, a space and echo's newline" "OK 86400000" \
    "$(p setxattr "$P1" user.retention.ms "${TAB}1d 
") $(gx user.retention.ms "$P1")"
tl_is "a blank inside a value: EINVAL" EINVAL \
    "$(p setxattr "$P1" user.retention.ms '3 d')"
p removexattr "$P1" user.retention.ms >/dev/null
tl_is "unknown user key (set): ENOTSUP" ENOTSUP "$(p setxattr "$P" user.nope 1)"
tl_is "unknown user key (get): ENOTSUP" ENOTSUP "$(p getxattr "$P" user.nope)"
tl_is "unknown user key (remove): ENOTSUP" ENOTSUP "$(p removexattr "$P" user.nope)"
tl_is "trusted namespace: ENOTSUP" ENOTSUP "$(p setxattr "$P" trusted.x 1)"
tl_is "security.capability: ENODATA" ENODATA \
    "$(p getxattr "$P/current" security.capability)"
tl_is "a config key on a file: EPERM" EPERM \
    "$(p setxattr "$P/current" user.retention.ms 1d)"
tl_is "removing a config key on a file: EPERM" EPERM \
    "$(p removexattr "$P/current" user.retention.ms)"
tl_is "trusted namespace (get): ENOTSUP" ENOTSUP "$(p getxattr "$P" trusted.x)"
tl_is "trusted namespace (remove): ENOTSUP" ENOTSUP \
    "$(p removexattr "$P" trusted.x)"

# ---- statistics ----
printf 'a\nbb\n' >>"$P/current"
tl_is "partition statistics are listed" \
    "OK user.retention.ms user.segment.bytes user.segment.ms user.tlog.start_offset user.tlog.end_offset user.tlog.bytes user.tlog.segments user.tlog.oldest_ts user.tlog.newest_ts user.tlog.next_expiry user.tlog.disk_bytes user.tlog.partition_id" \
    "$(p listxattr "$P")"
tl_is "segment statistics are listed" \
    "OK user.tlog.base_offset user.tlog.records user.tlog.first_ts user.tlog.max_ts user.tlog.sealed user.tlog.sealed_by user.tlog.expires_at user.tlog.compression user.tlog.disk_bytes" \
    "$(p listxattr "$P/current")"
tl_is "end_offset, bytes, segments" "2 5 1" \
    "$(gx user.tlog.end_offset "$P") $(gx user.tlog.bytes "$P") $(gx user.tlog.segments "$P")"
tl_is "current: records, sealed, sealed_by" "2 0 none" \
    "$(gx user.tlog.records "$P/current") $(gx user.tlog.sealed "$P/current") $(gx user.tlog.sealed_by "$P/current")"
tl_is "expires_at = max_ts + retention.ms + 1 (first expired ms)" \
    "$(($(gx user.tlog.max_ts "$P/current") + 259200000 + 1))" \
    "$(gx user.tlog.expires_at "$P/current")"
tl_is "setting a statistic: EPERM" EPERM "$(p setxattr "$P" user.tlog.bytes 1)"
tl_is "setting a segment statistic: EPERM" EPERM \
    "$(p setxattr "$P/current" user.tlog.records 1)"
tl_is "removing a statistic: EPERM" EPERM "$(p removexattr "$P" user.tlog.bytes)"
tl_is "a partition statistic on a topic: ENODATA" ENODATA \
    "$(p getxattr "$MNT/t" user.tlog.bytes)"
# The partition's identity (format.md, .id): 32 hex digits, the same at
# every read, kept in the partition's directory; read-only; none on a
# topic or a segment.
id=$(gx user.tlog.partition_id "$P")
tl_check "partition_id: 32 hex digits" \
    sh -c "echo '$id' | grep -Eqx '[0-9a-f]{32}'"
tl_is "partition_id: the same at the next read, kept in .id" "$id $id" \
    "$(gx user.tlog.partition_id "$P") $(cut -d' ' -f1 "$STORE/t/0/.id")"
tl_is "setting partition_id: EPERM" EPERM \
    "$(p setxattr "$P" user.tlog.partition_id 0)"
tl_is "partition_id on a topic: ENODATA" ENODATA \
    "$(p getxattr "$MNT/t" user.tlog.partition_id)"
tl_is "partition_id on current: ENODATA" ENODATA \
    "$(p getxattr "$P/current" user.tlog.partition_id)"

# ---- manual seal ----
tl_is "user.seal with a bad value: EINVAL" EINVAL "$(p setxattr "$P/current" user.seal 2)"
tl_is "user.seal with an empty value (setfattr -v ''): EINVAL" 1 \
    "$(setfattr -n user.seal -v '' "$P" 2>&1 | grep -c 'Invalid argument')"
tl_is "user.seal with a bad value on a topic: EINVAL" EINVAL \
    "$(p setxattr "$MNT/t" user.seal yes)"
tl_is "user.seal on a topic: EPERM" EPERM "$(p setxattr "$MNT/t" user.seal 1)"
tl_is "user.seal reads ENODATA (a command, not a value)" ENODATA \
    "$(p getxattr "$P" user.seal)"
tl_is "removing user.seal: ENODATA" ENODATA "$(p removexattr "$P" user.seal)"
tl_is "user.seal=1 on current" OK "$(p setxattr "$P/current" user.seal 1)"
S=$P/00000000000000000000.log
tl_is "the sealed segment: sealed, sealed_by manual" "1 manual 0 2" \
    "$(gx user.tlog.sealed "$S") $(gx user.tlog.sealed_by "$S") $(gx user.tlog.base_offset "$S") $(gx user.tlog.records "$S")"
tl_is "current after the seal is empty" "0 2" \
    "$(stat -c %s "$P/current") $(gx user.tlog.base_offset "$P/current")"
echo ccc >>"$P/current"
tl_is "user.seal=1 on the partition directory" OK "$(p setxattr "$P" user.seal 1)"
tl_is "two sealed segments" 2 "$(ls "$P" | grep -c '\.log$')"
tl_is "user.seal on an empty current is a no-op" OK "$(p setxattr "$P/current" user.seal 1)"

# ---- .tlogfs is not a level; .tlogfs/events is ----
tl_is ".tlogfs: a config key reads ENODATA, not the store's value" ENODATA \
    "$(p getxattr "$MNT/.tlogfs" user.retention.ms)"
tl_is ".tlogfs/metrics: ENODATA" ENODATA \
    "$(p getxattr "$MNT/.tlogfs/metrics" user.segment.bytes)"
tl_is ".tlogfs: setting a config key: EPERM" EPERM \
    "$(p setxattr "$MNT/.tlogfs" user.retention.ms 1h)"
tl_is ".tlogfs: removing one: EPERM" EPERM \
    "$(p removexattr "$MNT/.tlogfs" user.retention.ms)"
tl_is ".tlogfs lists nothing" OK "$(p listxattr "$MNT/.tlogfs")"
tl_is ".tlogfs/events inherits the store's value" 172800000 \
    "$(gx user.retention.ms "$MNT/.tlogfs/events")"
tl_is ".tlogfs/events takes its own" OK \
    "$(p setxattr "$MNT/.tlogfs/events" user.retention.ms 1h)"
tl_is "and reads it back" 3600000 "$(gx user.retention.ms "$MNT/.tlogfs/events")"

tl_check "unmount" tl_umount

# ---- persistence ----
tl_mount
tl_is "partition config persists" "259200000 65536 30000" \
    "$(gx user.retention.ms "$P") $(gx user.segment.bytes "$P") $(gx user.segment.ms "$P")"
tl_is "store config persists" 172800000 "$(gx user.retention.ms "$MNT")"
tl_is "a removed override stays removed" "OK" "$(p listxattr "$MNT/t")"
tl_is "statistics survive: end_offset, sealed_by" "3 manual" \
    "$(gx user.tlog.end_offset "$P") $(gx user.tlog.sealed_by "$S")"

# ---- the store's identity: .tlogfs/id, read-only on the mount root ----
ID=$(gx user.tlog.store_id "$MNT")
tl_check "user.tlog.store_id is .tlogfs/id's 32 hex digits" \
    test -n "$(echo "$ID" | grep -xE '[0-9a-f]{32}')" -a \
    "$ID" = "$(cat "$STORE/.tlogfs/id")"
tl_is "the root lists it" "user.tlog.store_id" \
    "$(p listxattr "$MNT" | tr ' ' '\n' | grep -x user.tlog.store_id)"
tl_is "it is read-only (EPERM)" EPERM "$(p setxattr "$MNT" user.tlog.store_id x)"
tl_is "removing it: EPERM" EPERM "$(p removexattr "$MNT" user.tlog.store_id)"
tl_is "a topic has none (ENODATA)" ENODATA "$(p getxattr "$MNT/t" user.tlog.store_id)"
tl_is "a partition has none (ENODATA)" ENODATA "$(p getxattr "$P" user.tlog.store_id)"
tl_check "unmount" tl_umount

# A store of before identities gets one at its next read-write mount.
rm "$STORE/.tlogfs/id"
tl_mount
ID2=$(gx user.tlog.store_id "$MNT")
tl_check "a store without .tlogfs/id gets a new identity" \
    test -n "$ID2" -a "$ID2" != "$ID" -a "$ID2" = "$(cat "$STORE/.tlogfs/id")"
tl_check "unmount" tl_umount
# The engine logs one line per bad value, naming the level; nothing else
# may appear. user.seal's are logged the same way (with its partition for
# current, its own level for a topic).
tl_stderr_clean "the daemon printed only the bad-value lines" \
    '^tlogfs: t(/[01])?: (segment\.bytes|retention\.ms|seal): bad value '
tl_is "seven bad-value lines" 7 "$(grep -c . "$ERR")"
tl_is "user.seal's lines name the level, the key and the value" \
    'tlogfs: t/0: seal: bad value "2": accepted 1
tlogfs: t/0: seal: bad value "": accepted 1
tlogfs: t: seal: bad value "yes": accepted 1' "$(grep ': seal: ' "$ERR")"
tl_done
