#!/bin/sh
# bench_aggs.sh — the last section of `make bench` (and `make bench-aggs`):
# what the rollups save an aggregate question (collector/query/q_agg.h):
# `d9 sched --totals` and `d9 top-polls --by-location` answered from the
# rollups of the buckets a window covers whole plus the records of its two
# edges, against the same with --raw (every record of the window), on a
# synthetic store (bench_store). Two windows: the whole store, and one whose
# edges cut buckets (from 37 % to 91 % of the store's time range).
# PAIRS interleaved pairs (the order alternates), CPU seconds (user + sys of
# the d9 process), median and range; the answers of both paths are checked
# equal first.
# A third window, "1%": 1 % of the store's time range from its middle, the
# issue's latency question (with a 30 s store it covers no bucket whole:
# all of it is edge, read block by block, collector/query/q_edge.h).
# Environment: BUILD (default build), BENCH_QUICK=1 (400 k records, 3 pairs),
# BENCH_AGGS_RECORDS (default 4 M), BENCH_AGGS_PAIRS (default 5),
# BENCH_KEEP=1 (keep the temp dir), BENCH_AGGS_STORE=DIR (an existing
# bench_store store instead of a new one; its bench_store output in
# DIR.out), BENCH_AGGS_BEFORE=D9 (another d9 binary, e.g. one built before
# a change: a third column, timed in the same pairs).
set -u
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
RECORDS=${BENCH_AGGS_RECORDS:-$([ "$QUICK" = 1 ] && echo 400000 || echo 4000000)}
PAIRS=${BENCH_AGGS_PAIRS:-$([ "$QUICK" = 1 ] && echo 3 || echo 5)}
T=$(mktemp -d /tmp/d9bench-aggs.XXXXXX) || exit 1
trap '[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT INT TERM
D9="$BUILD/bin/d9"
BEFORE=${BENCH_AGGS_BEFORE:-}
if [ -n "${BENCH_AGGS_STORE:-}" ]; then
    STORE=$BENCH_AGGS_STORE
    OUT=$STORE.out
else
    STORE=$T/store
    OUT=$T/store.out
    "$BUILD/bench/bench_store" "$STORE" "$RECORDS" >"$OUT" || exit 1
fi
N=$(awk '$1 == "store.records" { print $2 }' "$OUT")
TMIN=$(awk '$1 == "store.t_min" { print $2 }' "$OUT")
TMAX=$(awk '$1 == "store.t_max" { print $2 }' "$OUT")
NSEG=$(awk '$1 == "store.segments" { print $2 }' "$OUT")
P1FROM=$(python3 -c "print($TMIN + ($TMAX - $TMIN) * 50 // 100 + 123457)")
P1TO=$(python3 -c "print($P1FROM + ($TMAX - $TMIN) // 100)")
FROM=$(python3 -c "print($TMIN + ($TMAX - $TMIN) * 37 // 100 + 123457)")
TO=$(python3 -c "print($TMIN + ($TMAX - $TMIN) * 91 // 100 + 7654321)")

cpu() { python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f" % (r.ru_utime + r.ru_stime))' "$@"; }
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f s [%.3f .. %.3f]", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

echo "== aggregates: rollups + edges vs --raw ($N records, $NSEG segments, $PAIRS pairs, CPU s)"
: >"$T/c.cpu"
i=0
while [ "$i" -lt "$PAIRS" ]; do     # d9's start-up and index open: an empty window
    cpu "$D9" --store "$STORE" sched --totals --from 1 --to 2 >>"$T/c.cpu" 2>/dev/null || true
    i=$((i + 1))
done
echo "d9 start-up (an empty window): $(stats "$T/c.cpu")"
for W in whole edges 1%; do
    case $W in
    whole) WARGS="" ;;
    edges) WARGS="--from $FROM --to $TO" ;;
    *) WARGS="--from $P1FROM --to $P1TO" ;;
    esac
    for C in "sched --totals" "top-polls --by-location"; do
        # shellcheck disable=SC2086
        "$D9" --store "$STORE" $C $WARGS --format jsonl >"$T/ru" 2>/dev/null &&
            "$D9" --store "$STORE" $C --raw $WARGS --format jsonl >"$T/raw" 2>/dev/null || exit 1
        cmp -s "$T/ru" "$T/raw" || { echo "bench_aggs: $C ($W): rollups and --raw differ"; exit 1; }
        : >"$T/a.cpu"; : >"$T/b.cpu"; : >"$T/c.cpu"
        i=0
        while [ "$i" -lt "$PAIRS" ]; do
            if [ $((i % 2)) = 0 ]; then
                cpu "$D9" --store "$STORE" $C $WARGS >>"$T/a.cpu" || exit 1
                cpu "$D9" --store "$STORE" $C --raw $WARGS >>"$T/b.cpu" || exit 1
            else
                cpu "$D9" --store "$STORE" $C --raw $WARGS >>"$T/b.cpu" || exit 1
                cpu "$D9" --store "$STORE" $C $WARGS >>"$T/a.cpu" || exit 1
            fi
            [ -z "$BEFORE" ] || cpu "$BEFORE" --store "$STORE" $C $WARGS >>"$T/c.cpu" || exit 1
            i=$((i + 1))
        done
        [ -z "$BEFORE" ] || printf '%-24s %-6s before: rollups+edges %s\n' "$C" "$W" "$(stats "$T/c.cpu")"
        READ=$("$D9" --store "$STORE" $C $WARGS 2>/dev/null | tail -n 1)
        printf '%-24s %-6s rollups+edges %s   --raw %s   (%s)\n' "$C" "$W" "$(stats "$T/a.cpu")" \
            "$(stats "$T/b.cpu")" "$READ"
    done
done
# the 1 % window in process (no d9 start-up): tests/bench/bench_aggs_time.c
PID=$(awk '$1 == "store.pid" { print $2 }' "$OUT")
if [ -x "$BUILD/bench/bench_aggs_time" ]; then
    echo "== the 1 % window in process ($P1FROM .. $P1TO), CPU and wall ms, $PAIRS rounds"
    "$BUILD/bench/bench_aggs_time" "$STORE" "$PID" "$P1FROM" "$P1TO" "$PAIRS"
fi
