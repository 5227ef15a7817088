#!/bin/sh
# completion.sh - contrib/bash-completion/tlogctl, sourced in bash and
# called as readline would (COMP_WORDS, COMP_CWORD): commands, each
# command's options as tlogctl --help lists them, nothing for an
# option's value, directories (never files) for operands, and no operand
# past the one append, read and lag take (status and ship take many).
TL_NO_MOUNT=1
. "${srcdir:-.}/tests/integration/lib.sh"

SCRIPT=${srcdir:-.}/contrib/bash-completion/tlogctl
CTL=$TL_BUILD/cli/tlogctl

command -v bash >/dev/null || tl_skip "no bash"

# comp WORD...: what completing the last WORD offers, sorted, one a line.
comp() {
	bash -c '. "$1" || exit 1; shift
	    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
	    _tlogctl && printf "%s\n" "${COMPREPLY[@]}"' _ "$SCRIPT" "$@" |
	    LC_ALL=C sort
}

# help_opts CMD: the options tlogctl --help shows for CMD (a command's
# usage runs on over the lines that do not name tlogctl).
help_opts() {
	"$CTL" --help | awk -v c="$1" '
	    /tlogctl / { on = ($0 ~ "tlogctl " c " ") }
	    on' | grep -o -- '--[a-z-]*' | LC_ALL=C sort -u
}

D=$TMP/c
mkdir -p "$D/a dir" "$D/b" "$D/b2"
: >"$D/bfile"

tl_is "bash registers it for tlogctl" "complete -F _tlogctl tlogctl" \
    "$(bash -c '. "$1"; complete -p tlogctl' _ "$SCRIPT")"
tl_is "the commands" "append
lag
read
ship
status" "$(comp tlogctl '')"
tl_is "the commands by prefix" "read" "$(comp tlogctl r)"
tl_is "tlogctl's own options" "--help
--version" "$(comp tlogctl -)"
for c in append read lag status ship; do
	tl_is "$c: the options tlogctl --help shows, and no other" \
	    "$(help_opts "$c")" \
	    "$( (comp tlogctl "$c" --; comp tlogctl "$c" --cursor x --) |
	    grep -vx -- --help | LC_ALL=C sort -u)"
done
tl_is "read: --help alone, --commit only after --cursor" "--cursor
--follow
--from
--help
--since
--skip-lost" "$(comp tlogctl read --)"
tl_is "read: one starting point, then --commit with --cursor" "--commit
--follow
--skip-lost" "$(comp tlogctl read --cursor billing --)"
tl_is "read: --since=TIME, split at = as bash does, is used" "--follow
--skip-lost" "$(comp tlogctl read --since = -15m --)"
tl_is "an option's value: nothing" "" "$(comp tlogctl read --from '')"
tl_is "a value after =: nothing" "" "$(comp tlogctl ship --stream = '')"
tl_is "ship: options not used yet" "--cursor
--once
--replicas
--skip-lost
--stream" "$(comp tlogctl ship --nats nats://h:4222 --subject-prefix p --)"
tl_is "ship: --skip-lost once" "--cursor
--nats
--once
--replicas
--stream
--subject-prefix" "$(comp tlogctl ship --skip-lost --)"
tl_is "a partition: directories only, spaces kept" "$D/a dir
$D/b
$D/b2" "$(comp tlogctl append "$D/")"
tl_is "by prefix" "$D/b
$D/b2" "$(comp tlogctl read --follow "$D/b")"
tl_is "append takes one partition" "" "$(comp tlogctl append "$D/b" "$D/")"
tl_is "lag takes one mount" "" "$(comp tlogctl lag "$D/b" "$D/")"
tl_is "status: options not used yet" "--bytes
--json" "$(comp tlogctl status --topics --)"
tl_is "status takes many paths" "$D/a dir
$D/b
$D/b2" "$(comp tlogctl status --json "$D/b" "$D/")"
tl_is "ship takes many paths" "$D/a dir
$D/b
$D/b2" "$(comp tlogctl ship --once "$D/b" "$D/")"
tl_is "an unknown command: nothing" "" "$(comp tlogctl frob '')"
tl_done
