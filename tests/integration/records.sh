#!/bin/sh
# records.sh - the record size rules and failed writes, through a mount:
#
#   * record.max.bytes is independent of segment.bytes: a line longer
#     than segment.bytes is one record in a segment of its own, and cat
#     gives it back whole; getxattr shows the limit in force;
#   * a line longer than record.max.bytes is cut into records of that size;
#   * a write that fails refuses its record once, with one log line, and
#     the descriptor keeps working: the held bytes of a line too big for
#     retention.bytes are dropped when the write completing them, or an
#     fsync, fails with EFBIG; the next line lands and close succeeds.
. "${srcdir:-.}/tests/integration/lib.sh"

FDSEQ=$TL_BUILD/tests/integration/helpers/fdseq

seg() { printf '%s/%020d.log' "$1" "$2"; }

tl_mount

# ---- a line longer than segment.bytes ----
D=$MNT/rec/long
mkdir -p "$D"
setfattr -n user.segment.bytes -v 1K "$D"
tl_is "record.max.bytes shows the limit in force" 1048576 \
    "$(gx user.record.max.bytes "$D")"
line=$(head -c 3071 /dev/zero | tr '\0' L)
printf 'before\n' >>"$D/current"
printf '%s\n' "$line" >>"$D/current"
printf 'after\n' >>"$D/current"
tl_is "three records" 3 "$(gx user.tlog.end_offset "$D")"
tl_is "the long line is alone in its segment" "1 3072" \
    "$(gx user.tlog.records "$(seg "$D" 1)") $(stat -c %s "$(seg "$D" 1)")"
tl_is "the segment before it is normal" "1 7" \
    "$(gx user.tlog.records "$(seg "$D" 0)") $(stat -c %s "$(seg "$D" 0)")"
tl_is "so is the one after it" "2 6" \
    "$(gx user.tlog.base_offset "$D/current") $(stat -c %s "$D/current")"
tl_is "cat of its segment gives the line whole" "$line" \
    "$(cat "$(seg "$D" 1)")"
tl_is "cat of the partition gives every line whole" "before
$line
after" "$(cat "$D"/*)"

# ---- record.max.bytes above segment.bytes, and below a line ----
setfattr -n user.record.max.bytes -v 4K "$D"
tl_is "record.max.bytes may exceed segment.bytes" 4096 \
    "$(gx user.record.max.bytes "$D")"
setfattr -n user.record.max.bytes -v 100 "$D"
printf '%s\n' "$(head -c 249 /dev/zero | tr '\0' c)" >>"$D/current"
tl_is "a line over record.max.bytes is cut into records of that size" 6 \
    "$(gx user.tlog.end_offset "$D")"
tl_is "and reads back whole" "$(head -c 249 /dev/zero | tr '\0' c)" \
    "$(tail -n 1 "$D/current")"

# ---- a write that fails, on one descriptor ----
E=$MNT/rec/efbig
mkdir -p "$E"
setfattr -n user.retention.bytes -v 2K "$E"
tl_is "EFBIG once, then the descriptor works again" \
    "OK EFBIG OK OK OK EFBIG OK OK OK" \
    "$("$FDSEQ" "$E/current" hold:2500 nl line:normal fsync hold:2100 \
    fsync line:second fsync close)"
tl_is "only the later lines are stored" "normal
second" "$(cat "$E"/*)"
tl_is "one log line names the partition and the size" 1 \
    "$(grep -c 'rec/efbig: a record of 2501 bytes is refused' "$ERR")"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed only the refusal" \
    'rec/efbig: a record of [0-9]+ bytes is refused'
tl_done
