#!/bin/sh
# ci.sh - the short fuzz run for CI: each libFuzzer target (config
# parser, index decoder, recovery) for FUZZ_SECONDS (default 30), all
# three at once, on a copy of its committed seed corpus, under ASan and
# UBSan. Run it from a configured build directory (after make), or pass
# one:
#
#   tests/fuzz/ci.sh [BUILD_DIR]
#
# Skips (exit 0, with a message) when clang is not installed. Fails if
# clang cannot link -fsanitize=fuzzer (on Debian 12 the runtime is in
# libclang-rt-14-dev, only recommended by clang), or if a target finds a
# crash, a leak or undefined behaviour: the reproducer is left in
# tests/fuzz/work/TARGET/ (crash-*, leak-*, ...) and its path printed.
set -eu

cd "${1:-.}"
if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz ci: clang not installed; skipped"
	# .ci/run installs clang: there, no fuzzing is a failure.
	[ -z "${CI:-}" ] || exit 1
	exit 0
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' |
    clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
	echo "fuzz ci: clang cannot link -fsanitize=fuzzer (install libclang-rt-dev)" >&2
	exit 1
fi
secs=${FUZZ_SECONDS:-30}
make -j"$(nproc)" fuzz >/dev/null
if make fuzz-run FUZZ_SECONDS="$secs"; then
	exit 0
fi
echo "fuzz ci: a target failed; reproducers:" >&2
ls tests/fuzz/work/*/crash-* tests/fuzz/work/*/leak-* \
    tests/fuzz/work/*/timeout-* tests/fuzz/work/*/oom-* 2>/dev/null >&2 || true
exit 1
