#!/bin/sh
# manpage.sh - doc/tlogfs.8 is clean mdoc and says what the tests check:
#
#   * mandoc -T lint reports no warning or error;
#   * the rendered page has no quote inside a quote (an mdoc enclosure
#     such as Ql runs to the end of its line, so `.Pq Ql a No or Ql b`
#     renders as "(`a or `b'')");
#   * man -l renders it without complaint;
#   * every `tail -F` it and the README show is the form that follows
#     fast rolls (tail.sh runs it).
TL_NO_MOUNT=1
. "${srcdir:-.}/tests/integration/lib.sh"

PAGE=${srcdir:-.}/doc/tlogfs.8
README=${srcdir:-.}/README.md

if command -v mandoc >/dev/null; then
	tl_is "mandoc -T lint -W warning: nothing" "" \
	    "$(mandoc -T lint -W warning "$PAGE" 2>&1)"
	tl_is "no nested quotes in the rendered page" "" \
	    "$(mandoc -T ascii "$PAGE" | sed 's/.\x08//g' | grep "\`[^']*\`")"
else
	tl_ok "mandoc lint # SKIP no mandoc"
	tl_ok "nested quotes # SKIP no mandoc"
fi
if command -v man >/dev/null; then
	tl_is "man -l renders it without a warning" "" \
	    "$(MANWIDTH=80 man -l "$PAGE" 2>&1 >/dev/null)"
else
	tl_ok "man -l # SKIP no man"
fi
# Lines that show a tail -F command line (in a display, "# " prompt or
# not; not prose about it).
tails() { grep -Eh '^ *(# )?tail -F' "$PAGE" "$README"; }
tl_check "tlogfs(8) and the README show tail -F command lines" \
    test "$(tails | wc -l)" -ge 3
tl_is "each with -s 0.2 --max-unchanged-stats=1" "" \
    "$(tails | grep -v -- '-F -s 0.2 --max-unchanged-stats=1 ')"
tl_done
