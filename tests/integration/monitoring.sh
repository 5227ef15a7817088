#!/bin/sh
# monitoring.sh - contrib/monitoring against a real mount:
#
#   * every metric the alerting rules and the Grafana dashboard name is
#     one the daemon's .tlogfs/metrics declares (python3 reads the YAML
#     and the JSON, and checks their shape: each alert with a severity,
#     a summary and a description; each panel with a query; the six
#     panels operators asked for);
#   * with promtool (Debian: prometheus): the rules load, fire as
#     tests/integration/monitoring_rules.yml says, the dashboard's
#     queries parse, and the metrics pass its lint;
#   * tlogfs-textfile writes one file per mount whose every sample
#     carries mount="MOUNTPOINT", says in one line which mount it cannot
#     read, and, listing the mounts itself, removes the files of mounts
#     that are gone.
. "${srcdir:-.}/tests/integration/lib.sh"

MON=${srcdir:-.}/contrib/monitoring
RULES=$MON/tlogfs.rules.yml
DASH=$MON/tlogfs.dashboard.json
TEXTFILE=$MON/tlogfs-textfile

command -v python3 >/dev/null || tl_skip "no python3"
python3 -c 'import yaml' 2>/dev/null ||
    tl_skip "no yaml module for python3 (Debian: python3-yaml)"

tl_mount
mkdir -p "$MNT/orders/0"
echo 'order 1' >>"$MNT/orders/0/current"
# A cursor, so that tlogfs_cursor_lag_records has a series.
setfattr -n user.cursor.billing -v 0 "$MNT/orders/0"
cat "$MNT/.tlogfs/metrics" >"$TMP/metrics"

# What the daemon declares (# TYPE), and the names of its samples.
awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$TMP/metrics" |
    LC_ALL=C sort -u >"$TMP/exported"
tl_is "every sample is of a declared metric" "" \
    "$(grep -v '^#' "$TMP/metrics" | sed 's/[{ ].*//' | LC_ALL=C sort -u |
    LC_ALL=C comm -23 - "$TMP/exported")"
tl_check "the cursor's lag is exported" \
    grep -q '^tlogfs_cursor_lag_records{topic="orders",partition="0",cursor="billing"} 1$' \
    "$TMP/metrics"

# names.py FILE...: checks the rules' and the dashboard's shape (one
# line on stderr per fault, status 1) and prints every metric name their
# queries use, one a line. A name is an identifier of a query once its
# strings, label matchers, ranges, grouping labels and Grafana
# variables are gone, that is not followed by "(" (a function or an
# aggregation) and is not a keyword.
cat >"$TMP/names.py" <<'EOF'
import json, re, sys, yaml

bad = []
def fault(msg):
    bad.append(msg)

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring",
            "group_left", "group_right", "offset", "bool", "inf", "nan"}

def names(expr):
    e = re.sub(r'"(\\.|[^"\\])*"', '""', expr)
    e = re.sub(r'\$\{?\w+\}?', '', e)
    e = re.sub(r'\{[^}]*\}', '', e)
    e = re.sub(r'\[[^\]]*\]', '', e)
    e = re.sub(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)',
               '', e)
    out = set()
    for m in re.finditer(r'\d[\w.]*|([A-Za-z_:][\w:]*)(\s*\()?', e):
        if m.group(1) and not m.group(2) and m.group(1).lower() not in KEYWORDS:
            out.add(m.group(1))
    return out

used = set()
rules = yaml.safe_load(open(sys.argv[1]))
alerts = []
for g in rules.get("groups") or fault("rules: no groups") or []:
    if not g.get("name"):
        fault("rules: a group without a name")
    for r in g.get("rules") or fault("rules: group without rules") or []:
        a = r.get("alert")
        if not isinstance(a, str) or not re.fullmatch(r"[A-Z][A-Za-z]+", a):
            fault("rules: not an alert name: %r" % a)
        alerts.append(a)
        if not isinstance(r.get("expr"), str):
            fault("%s: no expr" % a)
            continue
        if "for" in r and not re.fullmatch(r"\d+[smh]", str(r["for"])):
            fault("%s: bad for: %r" % (a, r["for"]))
        if (r.get("labels") or {}).get("severity") not in ("warning", "critical"):
            fault("%s: severity is not warning or critical" % a)
        ann = r.get("annotations") or {}
        for k in ("summary", "description"):
            if not ann.get(k):
                fault("%s: no %s" % (a, k))
        used |= names(r["expr"])
if len(set(alerts)) != len(alerts):
    fault("rules: an alert name twice")

dash = json.load(open(sys.argv[2]))
titles = []
for p in dash.get("panels") or fault("dashboard: no panels") or []:
    titles.append(p.get("title", ""))
    if not p.get("targets"):
        fault("dashboard: panel %r has no query" % p.get("title"))
    for t in p.get("targets", []):
        if not t.get("expr"):
            fault("dashboard: panel %r: a target without expr" % p.get("title"))
        else:
            used |= names(t["expr"])
    if not all(k in p.get("gridPos", {}) for k in "hwxy"):
        fault("dashboard: panel %r: no gridPos" % p.get("title"))
for want in ("Append rate", "Bytes", "Deletions by rule", "Cursor lag",
             "Free space", "Reaper cycle time"):
    if not any(t.startswith(want) for t in titles):
        fault("dashboard: no panel %r" % want)
for m in sorted(used):
    print(m)
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
st=0
python3 "$TMP/names.py" "$RULES" "$DASH" >"$TMP/used" 2>"$TMP/faults" || st=$?
tl_is "the rules and the dashboard have their shape" "0 " \
    "$st $(cat "$TMP/faults")"
tl_check "they name at least 15 metrics" test "$(wc -l <"$TMP/used")" -ge 15
tl_is "every metric they name is one the daemon exports" "" \
    "$(LC_ALL=C sort -u "$TMP/used" | LC_ALL=C comm -23 - "$TMP/exported")"

# promtool_ok NAME ARG...: ok if promtool ARG... succeeds, else not ok
# with what it said.
promtool_ok() {
	local name=$1 out
	shift
	if out=$(promtool "$@" 2>&1); then
		tl_ok "$name"
	else
		tl_not_ok "$name" "promtool $*:"
		printf '%s\n' "$out" | sed 's/^/#   /'
	fi
}

if command -v promtool >/dev/null; then
	promtool_ok "promtool check rules" check rules "$RULES"
	promtool_ok "promtool test rules: each alert fires where it should" \
	    test rules "${srcdir:-.}/tests/integration/monitoring_rules.yml"
	# The dashboard's queries as recording rules, its variables given
	# values, for promtool to parse.
	python3 - "$DASH" >"$TMP/dash.rules.yml" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("groups:\n  - name: dashboard\n    rules:")
for i, p in enumerate(d["panels"]):
    for t in p["targets"]:
        e = (t["expr"].replace("$__rate_interval", "5m")
             .replace("$instance", ".*").replace("$mount", ".*"))
        print("      - record: dashboard:q%d\n        expr: %s"
              % (i, json.dumps(e)))
EOF
	promtool_ok "the dashboard's queries parse" check rules \
	    "$TMP/dash.rules.yml"
	tl_is "promtool check metrics: no complaint" "" \
	    "$(promtool check metrics <"$TMP/metrics" 2>&1)"
else
	for c in "check rules" "test rules" "dashboard queries" "check metrics"; do
		tl_ok "promtool $c # SKIP no promtool"
	done
fi

# tlogfs-textfile, for this mount.
TF=$TMP/textfile
PROM=$TF/tlogfs_$(printf '%s' "${MNT#/}" | tr -c 'A-Za-z0-9_-' '_').prom
mkdir "$TF"
st=0
"$TEXTFILE" "$TF" "$MNT" 2>"$TMP/tf.err" || st=$?
tl_is "tlogfs-textfile DIR MOUNT: status 0, nothing said" "0 " \
    "$st $(cat "$TMP/tf.err")"
tl_is "one file, named after the mount" "$PROM" "$(ls -d "$TF"/*)"
tl_is "every sample labelled with the mount, first" "" \
    "$(grep -v '^#' "$PROM" | grep -v "^[a-z_]*{mount=\"$MNT\"[,}]")"
# Samples without their values, which move between two reads.
series() { awk '/^#/ { print; next } { $NF = ""; print }' "$@"; }
tl_is "the daemon's comments and series, the mount label aside" \
    "$(series "$TMP/metrics")" \
    "$(series "$PROM" | sed -e "s|{mount=\"$MNT\"}||" \
    -e "s|{mount=\"$MNT\",|{|")"
tl_check "readable by node_exporter's user" \
    test "$(stat -c %a "$PROM")" = 644
if command -v promtool >/dev/null; then
	tl_is "promtool check metrics: no complaint" "" \
	    "$(promtool check metrics <"$PROM" 2>&1)"
else
	tl_ok "promtool check metrics # SKIP no promtool"
fi
st=0
"$TEXTFILE" "$TF" "$TMP" 2>"$TMP/tf.err" || st=$?
tl_is "a directory that is not a mount: status 1" 1 "$st"
tl_is "said in one line" 1 "$(wc -l <"$TMP/tf.err")"
tl_is "and no file for it" "$PROM" "$(ls -d "$TF"/*)"
tl_is "no temporary file left" "" "$(ls -A "$TF" | grep '^\.')"

# Listing the mounts itself: in a mount namespace of its own where the
# other tests' tlogfs mounts are detached (one of them may be a daemon
# stopped on purpose, whose metrics no read would return), so it sees
# this one only. The file of a mount that is gone goes.
: >"$TF/tlogfs_gone.prom"
: >"$TF/other.prom"
rm -f "$PROM"
cat >"$TMP/alone.sh" <<'EOF'
awk '$3 == "fuse.tlogfs" { print $2 }' /proc/self/mounts |
while IFS= read -r m; do
	[ "$m" = "$1" ] || umount -l "$m"
done
exec "$2" "$3"
EOF
st=0
unshare --mount --propagation private sh "$TMP/alone.sh" "$MNT" "$TEXTFILE" \
    "$TF" 2>"$TMP/tf.err" || st=$?
tl_is "tlogfs-textfile DIR: status 0, nothing said" "0 " \
    "$st $(cat "$TMP/tf.err")"
tl_is "it wrote this mount's file, removed the gone one's, kept others" \
    "$TF/other.prom
$PROM" "$(ls -d "$TF"/* | LC_ALL=C sort)"

tl_check "unmount" tl_umount
tl_stderr_clean "the daemon printed nothing"
tl_done
