#!/bin/sh
# test_location_stats.sh — d9 sql's location_stats (collector/sql/sql_rollup.h:
# per process, runtime and location over the whole store or a start_ns
# window, merged from the rollups' histograms) on tool_store_aggs's store of
# known contents: counts and sums equal the polls table's (a scan of the
# records) for the locations whose polls all end in their segment, and each
# quantile (p50, p90, p99, p999) is within the histogram's 6.25 % of the
# same quantile computed from the raw polls (rank ceil(q * n)); the whole
# store is answered with its segment files gone (rollups only).
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_aggs" "$S" >"$T/known.txt" || { echo "tool_store_aggs failed"; exit 1; }
T0=$(awk '$1 == "t0" { print $2 }' "$T/known.txt")

q() { # q OUT SQL: d9 sql as jsonl
    "$D9" --store "$S" sql --format jsonl "$2" >"$T/$1" 2>"$T/$1.err"
}
# location_stats against the raw polls of the same window: counts, sums, quantiles
vs_raw() { # vs_raw [FROM TO]
    _w=""
    [ $# -eq 2 ] && _w="where start_ns >= $1 and start_ns <= $2"
    q ls "select location, count, unfinished, sum_ns, max_ns, p50_ns, p90_ns, p99_ns, p999_ns from location_stats $_w" &&
        q raw "select location, dur_ns, end_ns is null as open from polls $_w" || return 1
    python3 - "$T/ls" "$T/raw" <<'PY'
import json, math, sys
ls = {r["location"]: r for r in map(json.loads, open(sys.argv[1]))}
durs, opened = {}, {}
for r in map(json.loads, open(sys.argv[2])):
    if r["open"]:
        opened[r["location"]] = opened.get(r["location"], 0) + 1
    else:
        durs.setdefault(r["location"], []).append(r["dur_ns"])
checked = 0
for loc, r in ls.items():
    d = sorted(durs.get(loc, []))
    if len(d) != r["count"] - r["unfinished"] or sum(d) != r["sum_ns"]:
        continue        # polls paired across a rotation in the polls table: not comparable
    if len(d) + opened.get(loc, 0) != r["count"] or (d and max(d) != r["max_ns"]):
        print(loc, "count/max", r, len(d), opened.get(loc, 0)); sys.exit(1)
    for q, k in ((0.5, "p50_ns"), (0.9, "p90_ns"), (0.99, "p99_ns"), (0.999, "p999_ns")):
        want = d[max(1, math.ceil(q * len(d))) - 1]
        if abs(r[k] - want) > want * 0.0625:
            print(loc, k, "got", r[k], "raw", want); sys.exit(1)
    checked += 1
if checked < 2:
    print("fewer than 2 comparable locations:", ls); sys.exit(1)
PY
}
same_without_files() { # the whole store from the rollups alone
    _c="pid, loc, start_ns, count, unfinished, sum_ns, max_ns, p50_ns, p90_ns, p99_ns, p999_ns"
    q a "select $_c from location_stats order by loc" || return 1
    mkdir -p "$T/away" && mv "$S"/*.d9seg "$T/away/" || return 1
    q b "select $_c from location_stats order by loc"
    _rc=$?
    mv "$T/away"/*.d9seg "$S/"
    [ $_rc -eq 0 ] && [ -s "$T/a" ] && [ ! -s "$T/b.err" ] && diff "$T/a" "$T/b"
}
window_start() {
    q w "select distinct start_ns from location_stats where start_ns >= 12345" && grep -qx '{"start_ns":12345}' "$T/w"
}
pid_filter() {
    q p "select count(*) as n from location_stats where pid = 6161" && grep -q '"n":3' "$T/p" &&
        q p "select count(*) as n from location_stats where pid = 6162" && grep -q '"n":0' "$T/p"
}

check "whole store: quantiles within 6.25 % of the raw polls'" vs_raw
check "a window cutting buckets: within 6.25 % of the raw polls'" vs_raw $((T0 + 1250000000)) $((T0 + 7750000000))
check "whole store: answered without the segment files" same_without_files
check "pid is pushed down" pid_filter
check "start_ns holds the window's first ns" window_start

d9_finish location_stats
