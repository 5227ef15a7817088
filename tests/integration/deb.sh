#!/bin/sh
# deb.sh - the Debian package (debian/), built as a user would: a clean
# git clone of this source tree (its HEAD: what is committed, not what
# is only in the work tree), dpkg-buildpackage -us -uc -b, then the .deb
# unpacked with dpkg -x into a throwaway root:
#
#   * its version is configure.ac's (AC_INIT) and debian/changelog's, and
#     the packaged tlogfs and tlogctl print it with --version;
#   * it holds both binaries, both manual pages, the design notes, the
#     systemd unit (its ExecStart the packaged daemon), tlogctl's bash
#     completion and the monitoring files as contrib/ has them;
#   * nothing enables or starts the unit (no .wants link, no enable or
#     start in the maintainer scripts);
#   * it depends on fuse3 and on the libraries it links;
#   * lintian, where installed, reports no error.
#
# The unit suites do not run in this build (DEB_BUILD_OPTIONS=nocheck):
# make check runs them already. Everything it makes is under $TMP.
TL_NO_MOUNT=1
. "${srcdir:-.}/tests/integration/lib.sh"

SRC=${srcdir:-.}

# A sanitizer build runs the suite a second time; the package is built
# without sanitizers, so that run would only build it again.
if grep -q '^SAN_CFLAGS = .*-fsanitize' "$TL_BUILD/Makefile"; then
	echo "1..0 # SKIP a sanitizer build (the plain build's make check builds the package)"
	exit 0
fi
for t in git dpkg-buildpackage dh dpkg-deb dpkg-checkbuilddeps; do
	command -v "$t" >/dev/null ||
	    tl_skip "no $t (Debian: git, dpkg-dev, debhelper)"
done
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 ||
    tl_skip "$SRC is not a git checkout"

B=$TMP/build
mkdir "$B"
git clone -q "$SRC" "$B/tlogfs" 2>"$TMP/clone.err" ||
    { tl_not_ok "git clone" "$(cat "$TMP/clone.err")"; tl_done; }
C=$B/tlogfs	# what is packaged, to compare the package with
tl_diag "building commit $(git -C "$C" rev-parse --short HEAD)"
(cd "$C" && dpkg-checkbuilddeps) >"$TMP/deps.err" 2>&1 ||
    tl_skip "$(tail -n 1 "$TMP/deps.err")"

st=0
(cd "$C" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
    dpkg-buildpackage -us -uc -b) >"$TMP/build.log" 2>&1 || st=$?
if [ "$st" -ne 0 ]; then
	tl_not_ok "dpkg-buildpackage -us -uc -b (status $st)"
	tail -n 30 "$TMP/build.log" | sed 's/^/#   /'
	tl_done
fi
tl_ok "dpkg-buildpackage -us -uc -b"
DEB=$(ls "$B"/tlogfs_*.deb)
tl_check "one package" test "$(printf '%s\n' "$DEB" | wc -l)" -eq 1

# The version: configure.ac's, debian/changelog's, the package's.
V=$(sed -n 's/^AC_INIT(\[tlogfs\], \[\([^]]*\)\].*/\1/p' "$C/configure.ac")
tl_check "configure.ac names a version" test -n "$V"
tl_is "debian/changelog names it" "$V" \
    "$(cd "$C" && dpkg-parsechangelog -S Version)"
tl_is "the package is of it" "$V" "$(dpkg-deb -f "$DEB" Version)"

R=$TMP/root
dpkg -x "$DEB" "$R"
tl_is "tlogfs --version says it" "tlogfs version $V" \
    "$("$R/usr/bin/tlogfs" --version 2>&1 | head -n 1)"
tl_is "tlogctl --version says it" "tlogctl version $V" \
    "$("$R/usr/bin/tlogctl" --version 2>&1)"
tl_check "tlogctl has ship (built with libnats)" \
    sh -c "'$R/usr/bin/tlogctl' --help | grep -q 'tlogctl ship'"

# present FILE...: the files of the package that are missing, one a line
# (a document may be compressed).
present() {
	for f in "$@"; do
		[ -f "$R/$f" ] || [ -f "$R/$f.gz" ] || echo "$f"
	done
}
tl_is "manual pages" "" "$(present usr/share/man/man8/tlogfs.8 \
    usr/share/man/man1/tlogctl.1)"
docs=
for f in "$C"/doc/*.md README.md; do
	docs="$docs usr/share/doc/tlogfs/${f##*/}"
done
# shellcheck disable=SC2086
tl_is "the design notes and README" "" "$(present $docs \
    usr/share/doc/tlogfs/copyright usr/share/doc/tlogfs/changelog)"
U=$R/lib/systemd/system/tlogfs@.service
tl_check "the systemd unit" test -f "$U"
X=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$U")
tl_is "its ExecStart is the packaged daemon" "/usr/bin/tlogfs" "$X"
tl_check "which is there" test -x "$R$X"
tl_is "and nothing else changed in it" "" \
    "$(sed 's|/usr/local/bin/tlogfs|/usr/bin/tlogfs|g' \
    "$C/contrib/tlogfs@.service" | diff - "$U")"
tl_is "no unit is enabled by the package" "" \
    "$(find "$R" -path '*.wants*' -o -path '*.requires*')"
dpkg-deb -e "$DEB" "$TMP/control"
tl_is "the maintainer scripts enable and start nothing" "" \
    "$(cat "$TMP"/control/postinst "$TMP"/control/preinst 2>/dev/null |
    grep -E 'deb-systemd-helper (enable|reenable)|deb-systemd-invoke (start|restart)|systemctl (enable|start)')"
tl_check "tlogctl's bash completion" cmp \
    "$C/contrib/bash-completion/tlogctl" \
    "$R/usr/share/bash-completion/completions/tlogctl"
M=usr/share/tlogfs/monitoring
for f in tlogfs.rules.yml tlogfs.dashboard.json tlogfs-textfile README.md; do
	tl_check "monitoring: $f" cmp "$C/contrib/monitoring/$f" "$R/$M/$f"
done
tl_check "tlogfs-textfile is executable" test -x "$R/$M/tlogfs-textfile"
DEPS=$(dpkg-deb -f "$DEB" Depends)
for d in fuse3 libfuse3 libbsd libnats; do
	tl_check "it depends on $d" sh -c "printf '%s' '$DEPS' | grep -q '$d'"
done

if command -v lintian >/dev/null; then
	st=0
	# lintian leaves files in TMPDIR (mldbm-elf-*): in $TMP, they go.
	mkdir "$TMP/lintian"
	TMPDIR=$TMP/lintian lintian --fail-on error "$DEB" \
	    >"$TMP/lintian.out" 2>&1 || st=$?
	tl_is "lintian: no error" 0 "$st"
	sed 's/^/# lintian: /' "$TMP/lintian.out"
else
	tl_ok "lintian # SKIP no lintian"
fi
tl_done
