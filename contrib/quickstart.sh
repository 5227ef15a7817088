#!/usr/bin/env bash
# quickstart.sh - the README's two set-up commands, for a fresh Debian 12
# machine, as root (or with sudo available):
#
#   contrib/quickstart.sh demo   install, build, mount a demo store
#   contrib/quickstart.sh test   install, build with warnings as errors,
#                                run the whole test suite (make check),
#                                the whole suite again on an ASan+UBSan
#                                build, the tests whose threads race on a
#                                ThreadSanitizer build (make
#                                check-threads), then 30 s of every fuzz
#                                target
#
# Environment: DEMO_STORE, DEMO_MNT (demo), JOBS (parallel make),
# CONFIGURE_FLAGS (extra flags for ./configure).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Build and test dependencies, by Debian package name (clang and its
# runtime are for the fuzz targets; the runtime is only "recommended";
# e2fsprogs and mount, for mkfs.ext4, e2fsck and losetup, are for the
# power-cut test; nats-server and libnats-dev for tlogctl ship and its
# tests, iproute2's ss for their free ports; python3-yaml for the
# monitoring test, which reads the alerting rules; git, dpkg-dev,
# debhelper and lintian for the Debian package's test, which builds it
# from a clone; libzstd-dev for compressed history, zstd for its tests;
# man-db for the manual pages' `man -l` check, prometheus for its
# promtool, which checks the alerting rules and the metrics' syntax).
PACKAGES=(build-essential autoconf automake libtool pkg-config
	libfuse3-dev fuse3 libbsd-dev check attr psmisc procps mandoc
	clang libclang-rt-14-dev valgrind e2fsprogs mount util-linux
	nats-server libnats-dev iproute2 python3-yaml git dpkg-dev
	debhelper lintian libzstd-dev zstd man-db prometheus)

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_deps() {
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "quickstart: installing ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends "${missing[@]}" </dev/null
}

build() {
	./bootstrap >/dev/null
	# shellcheck disable=SC2086
	./configure --enable-werror ${CONFIGURE_FLAGS:-} >/dev/null
	make -j"${JOBS:-$(nproc)}" >/dev/null
}

# stage NAME: says which stage begins and how long the test command
# has run so far (seconds).
stage() {
	echo "quickstart: [$SECONDS s] $*"
}

cmd_test() {
	# The tests mostly wait (mounts, timers, other processes), so one
	# more job than cores keeps both cores busy.
	local jobs=${JOBS:-$(($(nproc) + 1))}
	install_deps
	stage "build"
	build
	stage "make check"
	make -j"$jobs" check VERBOSE=1
	# The same suite on an ASan + UBSan build, in a copy of the
	# distributed tree (which also proves the distribution complete).
	# It runs the unit suites too, so CI does not run them again under
	# valgrind (make check-valgrind, by hand).
	stage "make check with sanitizers"
	rm -rf _san
	make distdir distdir=_san >/dev/null
	(cd _san && ./configure --enable-werror --enable-sanitizers \
	    >/dev/null && make -j"$jobs" >/dev/null &&
	    make -j"$jobs" check VERBOSE=1)
	rm -rf _san
	# And on a ThreadSanitizer build (TSan excludes ASan): every test
	# whose threads race (make check-threads: the unit suites, the
	# torture, concurrency, retention and shipping tests). A report
	# makes the program exit 66 and the test fail; the one suppression
	# is explained in tests/tsan.supp.
	stage "make check-threads with ThreadSanitizer"
	rm -rf _tsan
	make distdir distdir=_tsan >/dev/null
	(cd _tsan && ./configure --enable-werror --enable-tsan \
	    >/dev/null && make -j"$jobs" >/dev/null &&
	    make -j"$jobs" check-threads VERBOSE=1)
	rm -rf _tsan
	stage "fuzz, ${FUZZ_SECONDS:-30} s per target"
	tests/fuzz/ci.sh
	stage "done"
}

cmd_demo() {
	local store=${DEMO_STORE:-/var/tmp/tlogfs-demo/store}
	local mnt=${DEMO_MNT:-/var/tmp/tlogfs-demo/mnt}
	install_deps
	build
	mkdir -p "$store" "$mnt"
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt"
	fi
	as_root ./mount/tlogfs "$store" "$mnt"
	mkdir -p "$mnt/demo/0"
	echo "hello from tlogfs, $(date -u +%FT%TZ)" >>"$mnt/demo/0/current"
	echo "\$ ls -l $mnt/demo/0"
	ls -l "$mnt/demo/0"
	echo "\$ cat $mnt/demo/0/current"
	cat "$mnt/demo/0/current"
	echo
	echo "tlogfs is mounted at $mnt (store: $store)."
	echo "Append with: echo line >> $mnt/demo/0/current"
	echo "Unmount with: fusermount3 -u $mnt"
}

case "${1:-}" in
test) cmd_test ;;
demo) cmd_demo ;;
*)
	echo "usage: $0 demo|test" >&2
	exit 2
	;;
esac
