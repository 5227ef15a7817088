#!/bin/bash
# keep.sh - the torture run (tests/torture/lib.sh, tt_run) with nothing
# deleted: writers, tail -F and cat readers against renames of partitions
# and topics (over empty ones too), rmdir+mkdir, manual seals, config
# changes at every level and the reaper's idle seals. Every acknowledged
# line must be there exactly once, in order, in the partition its writer
# opened, live, after a clean remount and after kill -9.
#
#   TORTURE_SECONDS=60 make check TESTS=tests/torture/keep.sh
. "${srcdir:-.}/tests/torture/lib.sh"
tt_run keep
