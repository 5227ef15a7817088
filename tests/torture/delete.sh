#!/bin/bash
# delete.sh - the torture run (tests/torture/lib.sh, tt_run) with
# deletions: as keep.sh, plus rm of sealed segments and of current,
# rm -rf of topics, retention of seconds and kilobytes and the reaper
# deleting throughout. Lines may go, but only with their offsets; never
# twice, torn, out of order or in another partition.
#
#   TORTURE_SECONDS=60 make check TESTS=tests/torture/delete.sh
. "${srcdir:-.}/tests/torture/lib.sh"
tt_run delete
