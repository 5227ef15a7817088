#!/bin/sh
# check-layers.sh - the engine's files call each other in one direction
# only (doc/architecture.md, "The engine's layers"). Reads the symbol
# tables of the objects of libtlog: a function or variable defined in
# one file and used by another is an edge. An edge from a file to one of a layer above (a
# cycle between layers needs one), or an object the layers file does not
# list, fails; files of one layer call each other freely. Output is TAP,
# for make check.
#
#   tests/check-layers.sh [OBJDIR [LAYERS_FILE]]
#
# OBJDIR defaults to src (make check runs in the build directory),
# LAYERS_FILE to tests/layers in the source directory. The layers file
# lists the layers from the top down, one line each, the files of a
# layer separated by blanks (without .o); '#' starts a comment.
set -eu
objdir=${1:-src}
layers=${2:-${srcdir:-.}/tests/layers}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "1..1"
# rank: 0 for the top layer, growing downwards.
awk '{ sub(/#.*/, "") } NF { for (i = 1; i <= NF; i++) print $i, n + 0; n++ }' \
    "$layers" >"$tmp/rank"
: >"$tmp/def"
: >"$tmp/use"
bad=0
for f in $(awk '{ print $1 }' "$tmp/rank"); do
	o=
	for c in "$objdir/.libs/libtlog_la-$f.o" "$objdir/libtlog_la-$f.o" \
	    "$objdir/.libs/$f.o" "$objdir/$f.o"; do
		if [ -f "$c" ]; then
			o=$c
			break
		fi
	done
	if [ -z "$o" ]; then
		echo "# no object for $f in $objdir"
		bad=1
		continue
	fi
	nm "$o" | awk -v f="$f" '$2 ~ /^[TDBRC]$/ { print $3, f }' >>"$tmp/def"
	nm "$o" | awk -v f="$f" '$1 == "U" { print $2, f }' >>"$tmp/use"
done
# Every source of the library is in some layer: make check names them
# (LIBTLOG_SOURCES, from Makefile.am); run by hand, the objects built.
if [ -n "${LIBTLOG_SOURCES:-}" ]; then
	srcs=$(for c in $LIBTLOG_SOURCES; do basename "$c" .c; done)
else
	srcs=$(for c in "$objdir"/*.lo; do
		[ -f "$c" ] || continue
		f=$(basename "$c" .lo)
		echo "${f#libtlog_la-}"
	done)
fi
for f in $srcs; do
	if ! awk -v f="$f" '$1 == f { found = 1 } END { exit !found }' \
	    "$tmp/rank"; then
		echo "# $f.c is in no layer of $layers"
		bad=1
	fi
done
# Edges caller -> callee (file level) with one symbol each, checked
# against the ranks.
awk 'FILENAME == ARGV[1] { rank[$1] = $2; next }
     FILENAME == ARGV[2] { def[$1] = $2; next }
     ($1 in def) && def[$1] != $2 { print $2, def[$1], $1,
         rank[$2], rank[def[$1]] }' \
    "$tmp/rank" "$tmp/def" "$tmp/use" | sort -u -k1,2 >"$tmp/edges"
while read -r from to sym rf rt; do
	if [ "$rf" -gt "$rt" ]; then
		echo "# $from.c calls $to.c ($sym): a layer above"
		bad=1
	fi
done <"$tmp/edges"
n=$(wc -l <"$tmp/edges")
if [ $bad -ne 0 ]; then
	echo "not ok 1 - the engine's call graph follows $layers"
	exit 1
fi
echo "ok 1 - $n call edges between the engine's files, none upwards"
