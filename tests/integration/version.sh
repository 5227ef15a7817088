#!/bin/sh
# version.sh - tlogfs and tlogctl say the package's version (configure's,
# AC_INIT) in the same first line, and take nothing after the flag.
TL_NO_MOUNT=1
. "${srcdir:-.}/tests/integration/lib.sh"

VERSION=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' \
    "$TL_BUILD/config.h")
CTL=$TL_BUILD/cli/tlogctl

tl_check "config.h names the version" test -n "$VERSION"
for f in --version -V; do
	tl_is "tlogfs $f: the version first" "tlogfs version $VERSION" \
	    "$("$TLOGFS" $f | head -n 1)"
	tl_is "tlogctl $f: the version alone" "tlogctl version $VERSION" \
	    "$("$CTL" $f)"
done
st=0
"$CTL" --version extra >/dev/null 2>"$TMP/err" || st=$?
tl_is "tlogctl --version with an operand is a usage error" 2 "$st"
tl_is "said in one line" 1 "$(wc -l <"$TMP/err")"
tl_done
