#!/bin/sh
# test_aggs.sh — `d9 sched --totals` and `d9 top-polls --by-location`
# (collector/query/q_agg.h: the rollups of the buckets a window covers
# whole plus the records of its two edges) on a store with known contents
# (tool_store_aggs: 3 segments, 2 workers, nested polls, long polls across
# bucket edges and rotations): for windows whose edges cut polls, buckets
# and rotations, the answer equals the same from every record (--raw)
# exactly, and the counts equal plain `d9 sched` (a scan of the records);
# the whole store reads no segment file, a window's edges do.
. tests/integration/lib.sh
. tests/integration/aggs_env.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_aggs" "$S" >"$T/known.txt" || { echo "tool_store_aggs failed"; exit 1; }
T0=$(awk '$1 == "t0" { print $2 }' "$T/known.txt")
LMID=$(awk '$1 == "long" { print $2, $3 }' "$T/known.txt" | { read -r a b; echo $(( (a + b) / 2 )); })
S1=1000000000

# the counts of sched --totals against plain d9 sched's (its own scan)
vs_sched() { # vs_sched [window args...]
    totals tot "$@" && "$D9" --store "$S" sched --format jsonl "$@" >"$T/plain" 2>&1 || return 1
    python3 - "$T/tot" "$T/plain" <<'PY'
import json, sys
keys = ("polls", "parks", "waits", "sched_wait_sum_ns", "sched_wait_max_ns")
def load(p):
    out = {}
    for line in open(p):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            out[(r["pid"], r["runtime"], r["worker"])] = tuple(r[k] for k in keys)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
zero = (0,) * len(keys)
bad = [(k, a.get(k, zero), b.get(k, zero)) for k in set(a) | set(b) if a.get(k, zero) != b.get(k, zero)]
if not a or bad:
    print("totals vs sched:", bad or "no rows")
    sys.exit(1)
PY
}
# the whole store's totals are the generator's own counts
known_totals() {
    totals tot || return 1
    python3 - "$T/tot" "$T/known.txt" <<'PY'
import json, sys
got = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    got[r["worker"]] = (r["polls"], r["parks"], r["waits"], r["sched_wait_sum_ns"], r["sched_wait_max_ns"])
want = {}
for line in open(sys.argv[2]):
    f = line.split()
    if f[0] == "worker":
        want[int(f[1])] = tuple(int(f[i]) for i in (3, 5, 7, 9, 11))
if got != want:
    print("got", got, "want", want)
    sys.exit(1)
PY
}
# a window split in two at a point inside a bucket adds up to the window
additive() { # additive FROM MID TO: [FROM, MID] + [MID+1, TO] = [FROM, TO]
    locs l1 --from "$1" --to "$2" && locs l2 --from $(($2 + 1)) --to "$3" &&
        locs l3 --from "$1" --to "$3" || return 1
    python3 - "$T/l1" "$T/l2" "$T/l3" <<'PY'
import json, sys
def load(p):
    return {(r["pid"], r["location"]): r for r in map(json.loads, open(p))}
a, b, c = (load(p) for p in sys.argv[1:4])
for k, r in c.items():
    for f in ("polls", "unfinished", "total_ns"):
        s = a.get(k, {}).get(f, 0) + b.get(k, {}).get(f, 0)
        if s != r[f]:
            print(k, f, s, r[f])
            sys.exit(1)
PY
}
edges_read() { # edges_read N [args...]: the text names N segments read for the edges
    _n=$1; shift
    "$D9" --store "$S" sched --totals "$@" >"$T/txt" 2>&1 || return 1
    grep -q "and the records of $_n (the window's edges" "$T/txt" || { cat "$T/txt"; return 1; }
}
edges_some() {
    "$D9" --store "$S" sched --totals "$@" >"$T/txt" 2>&1 || return 1
    grep -Eq "and the records of [1-9][0-9]* \(the window's edges" "$T/txt" || { cat "$T/txt"; return 1; }
}
# an edge reads only some blocks of its segments (q_edge.h): B of M, 0 < B < M
edges_part() { # edges_part CMD... (its text output)
    "$D9" --store "$S" "$@" >"$T/txt" 2>&1 || return 1
    sed -n "s/.*the window's edges: \([0-9]*\) of their \([0-9]*\) blocks read.*/\1 \2/p" "$T/txt" |
        { read -r b m && [ "$b" -gt 0 ] && [ "$b" -lt "$m" ]; } || { cat "$T/txt"; return 1; }
}
both_paths() { # both_paths NAME [window args...]: rollups+edges = raw, for both commands
    _w=$1; shift
    totals a "$@"; totals b --raw "$@"
    check "$_w: sched --totals = --raw" same_nonempty a b
    locs c "$@" && locs d --raw "$@"
    check "$_w: top-polls --by-location = --raw" same_nonempty c d
    check "$_w: sched --totals counts = plain d9 sched" vs_sched "$@"
}

check "the store has polls across a rotation" grep -Eq '^crossing [1-9]' "$T/known.txt"
check "whole store: totals = the generator's counts" known_totals
check "whole store: no segment file read" edges_read 0
both_paths "whole store"
both_paths "edges inside polls (to)" --from $((T0 + 300000017)) --to "$LMID"
both_paths "edges inside polls (from)" --from "$LMID" --to $((T0 + 5500123457))
both_paths "edges mid-bucket" --from $((T0 + 1250000000)) --to $((T0 + 4750000000))
check "edges mid-bucket: the edges' segments are read" edges_some --from $((T0 + 1250000000)) --to $((T0 + 4750000000))
both_paths "inside one bucket" --from $((T0 + 2100000000)) --to $((T0 + 2900000000))
both_paths "bucket-aligned" --from $((T0 + 2 * S1)) --to $((T0 + 5 * S1 - 1))
check "bucket-aligned: no segment file read" edges_read 0 --from $((T0 + 2 * S1)) --to $((T0 + 5 * S1 - 1))
both_paths "across a rotation" --from $((T0 + 3200000000)) --to $((T0 + 3600000000))
both_paths "across both rotations" --from $((T0 + 500000001)) --to $((T0 + 8500000000 - 1))
# a window inside one segment and bucket: its edge reads part of the blocks
check "locations of a small window: part of the blocks read" edges_part top-polls --by-location \
    --from $((T0 + 1100000000)) --to $((T0 + 1300000000))
check "workers of a small window: part of the blocks read" edges_part sched --totals \
    --from $((T0 + 1100000000)) --to $((T0 + 1300000000))
both_paths "small window, edges inside polls" --from $((T0 + 1100000007)) --to $((T0 + 1300000009))
both_paths "small window from inside the long poll" --from "$LMID" --to $((LMID + 600000001))
check "a window split inside a bucket adds up" additive "$T0" $((T0 + 4750000000)) $((T0 + 9 * S1 + 2 * S1))
# busy_ns needs the look-back (q_edge.h): on tool_store_aggs --busy's store
# (a poll open from T0 to the end, 100 finished ones inside it) a window
# that starts after T0 has busy 0 (every finished poll's time is the open
# one's, in T0's bucket), not the time of the finished polls it holds
"$TBIN/tool_store_aggs" "$T/busy" --busy >"$T/busy.txt" || { echo "tool_store_aggs --busy failed"; exit 1; }
S_ALL=$S
S=$T/busy
both_paths "a window inside an open poll" --from $((T0 + 500000000)) --to $((T0 + 900000000))
both_paths "a window from inside an open poll to its end" --from $((T0 + 500000000)) --to $((T0 + 5 * S1))
S=$S_ALL
check "--raw alone is a usage error (sched)" sh -c '"$1" --store "$2" sched --raw; [ $? -eq 2 ]' _ "$D9" "$S"
check "--raw alone is a usage error (top-polls)" sh -c '"$1" --store "$2" top-polls --raw; [ $? -eq 2 ]' _ "$D9" "$S"
check "--tid with --by-location is a usage error" sh -c '"$1" --store "$2" top-polls --by-location --tid 701; [ $? -eq 2 ]' _ "$D9" "$S"

d9_finish aggs
