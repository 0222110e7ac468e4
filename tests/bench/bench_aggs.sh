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
# Environment: BUILD (default build), BENCH_QUICK=1 (400 k records, 3 pairs),
# BENCH_AGGS_RECORDS (default 4 M), BENCH_AGGS_PAIRS (default 5),
# BENCH_KEEP=1 (keep the temp dir).
set -u
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
RECORDS=${BENCH_AGGS_RECORDS:-$([ "$QUICK" = 1 ] && echo 400000 || echo 4000000)}
PAIRS=${BENCH_AGGS_PAIRS:-$([ "$QUICK" = 1 ] && echo 3 || echo 5)}
T=$(mktemp -d /tmp/d9bench-aggs.XXXXXX) || exit 1
trap '[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT INT TERM
D9="$BUILD/bin/d9"
"$BUILD/bench/bench_store" "$T/store" "$RECORDS" >"$T/store.out" || exit 1
N=$(awk '$1 == "store.records" { print $2 }' "$T/store.out")
TMIN=$(awk '$1 == "store.t_min" { print $2 }' "$T/store.out")
TMAX=$(awk '$1 == "store.t_max" { print $2 }' "$T/store.out")
NSEG=$(awk '$1 == "store.segments" { print $2 }' "$T/store.out")
FROM=$(python3 -c "print($TMIN + ($TMAX - $TMIN) * 37 // 100 + 123457)")
TO=$(python3 -c "print($TMIN + ($TMAX - $TMIN) * 91 // 100 + 7654321)")

cpu() { python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f" % (r.ru_utime + r.ru_stime))' "$@"; }
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f s [%.3f .. %.3f]", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

echo "== aggregates: rollups + edges vs --raw ($N records, $NSEG segments, $PAIRS pairs, CPU s)"
for W in whole edges; do
    if [ "$W" = whole ]; then WARGS=""; else WARGS="--from $FROM --to $TO"; fi
    for C in "sched --totals" "top-polls --by-location"; do
        # shellcheck disable=SC2086
        "$D9" --store "$T/store" $C $WARGS --format jsonl >"$T/ru" 2>/dev/null &&
            "$D9" --store "$T/store" $C --raw $WARGS --format jsonl >"$T/raw" 2>/dev/null || exit 1
        cmp -s "$T/ru" "$T/raw" || { echo "bench_aggs: $C ($W): rollups and --raw differ"; exit 1; }
        : >"$T/a.cpu"; : >"$T/b.cpu"
        i=0
        while [ "$i" -lt "$PAIRS" ]; do
            if [ $((i % 2)) = 0 ]; then
                cpu "$D9" --store "$T/store" $C $WARGS >>"$T/a.cpu" || exit 1
                cpu "$D9" --store "$T/store" $C --raw $WARGS >>"$T/b.cpu" || exit 1
            else
                cpu "$D9" --store "$T/store" $C --raw $WARGS >>"$T/b.cpu" || exit 1
                cpu "$D9" --store "$T/store" $C $WARGS >>"$T/a.cpu" || exit 1
            fi
            i=$((i + 1))
        done
        READ=$("$D9" --store "$T/store" $C $WARGS 2>/dev/null | tail -n 1)
        printf '%-24s %-6s rollups+edges %s   --raw %s   (%s)\n' "$C" "$W" "$(stats "$T/a.cpu")" \
            "$(stats "$T/b.cpu")" "$READ"
    done
done
