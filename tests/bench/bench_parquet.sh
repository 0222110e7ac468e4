#!/bin/sh
# bench_parquet.sh — `make bench-parquet` (and the last section of `make
# bench`): what `d9 export --format parquet` costs and saves, on a synthetic
# store (bench_store: every kind of record, 8 threads, packed segments).
#
# Prints, in one run:
#   - bytes a record: the segment files (packed DATA blocks, the store's own
#     format) against all Parquet files of the export, and the analysis
#     tables alone (polls, parks, wakes, cpu_samples, stacks) against the
#     records they come from;
#   - CPU (user + sys of the d9 process) of the export against a baseline of
#     the same rows in the same run: `d9 sql --format csv "SELECT * FROM t"`
#     for every table into /dev/null (the same virtual tables, the same
#     scan and pairing; only the writer differs). PAIRS interleaved pairs,
#     median and range, per record of the store.
# Environment: BUILD (default build), BENCH_QUICK=1 (200 k records, 3 pairs),
# BENCH_PARQUET_RECORDS (default 2 M), BENCH_PARQUET_PAIRS (default 5),
# BENCH_KEEP=1 (keep the temp dir).
set -u
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
RECORDS=${BENCH_PARQUET_RECORDS:-$([ "$QUICK" = 1 ] && echo 200000 || echo 2000000)}
PAIRS=${BENCH_PARQUET_PAIRS:-$([ "$QUICK" = 1 ] && echo 3 || echo 5)}
T=$(mktemp -d /tmp/d9bench-parquet.XXXXXX) || exit 1
trap '[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT INT TERM
D9="$BUILD/bin/d9"
"$BUILD/bench/bench_store" "$T/store" "$RECORDS" >"$T/store.out" || exit 1
N=$(awk '$1 == "store.records" { print $2 }' "$T/store.out")
SEG=$(cat "$T"/store/*.d9seg | wc -c)

# cpu CMD...: CPU seconds (user + sys) of CMD, its output to /dev/null
cpu() { python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f" % (r.ru_utime + r.ru_stime))' "$@"; }

TABLES=$("$D9" --store "$T/store" sql --format csv \
         "select name from sqlite_schema where type = 'table' order by name" | tail -n +2 | tr -d '\r"')
CSV_SQL=""
for t in $TABLES; do CSV_SQL="$CSV_SQL SELECT * FROM \"$t\";"; done

: >"$T/pq.cpu"
: >"$T/csv.cpu"
i=0
while [ "$i" -lt "$PAIRS" ]; do
    rm -rf "$T/pq"
    if [ $((i % 2)) = 0 ]; then
        cpu "$D9" --store "$T/store" export --format parquet --last -o "$T/pq" >>"$T/pq.cpu" || exit 1
        cpu "$D9" --store "$T/store" sql --format csv "$CSV_SQL" >>"$T/csv.cpu" || exit 1
    else
        cpu "$D9" --store "$T/store" sql --format csv "$CSV_SQL" >>"$T/csv.cpu" || exit 1
        cpu "$D9" --store "$T/store" export --format parquet --last -o "$T/pq" >>"$T/pq.cpu" || exit 1
    fi
    i=$((i + 1))
done
PQ=$(cat "$T"/pq/*.parquet | wc -c)
ANALYSIS=$(cat "$T/pq/polls.parquet" "$T/pq/parks.parquet" "$T/pq/wakes.parquet" \
               "$T/pq/cpu_samples.parquet" "$T/pq/stacks.parquet" | wc -c)
# records behind the analysis tables: 2 a poll or park, 1 a wake or sample
AREC=$("$D9" --store "$T/store" sql --format csv "select 2 * (select count(*) from polls) +
        2 * (select count(*) from parks) + (select count(*) from wakes) +
        (select count(*) from cpu_samples)" | tail -n 1 | tr -d '\r')
POLLS=$("$D9" --store "$T/store" sql --format csv "select count(*) from polls" | tail -n 1 | tr -d '\r')
stats() { sort -n "$1" | awk -v n="$N" '{ v[NR] = $1 } END {
    printf "%.0f ns (%.0f-%.0f)", v[int((NR + 1) / 2)] * 1e9 / n, v[1] * 1e9 / n, v[NR] * 1e9 / n }'; }
echo "parquet: $N records of a synthetic store (bench_store), $PAIRS interleaved pairs"
echo "| | value |"
echo "|---|---|"
awk -v s="$SEG" -v n="$N" 'BEGIN { printf "| segment files (packed blocks), bytes a record | %.2f |\n", s / n }'
awk -v s="$PQ" -v n="$N" 'BEGIN { printf "| Parquet, all %s tables, bytes a record of the store | %.2f |\n", "'"$(echo $TABLES | wc -w)"'", s / n }'
awk -v s="$ANALYSIS" -v n="$AREC" 'BEGIN { printf "| Parquet, polls+parks+wakes+cpu_samples+stacks, bytes a record they come from | %.2f |\n", s / n }'
awk -v s="$(wc -c <"$T/pq/polls.parquet")" -v n="$POLLS" 'BEGIN { printf "| Parquet polls, bytes a poll (2 records) | %.2f |\n", s / n }'
echo "| CPU a store record: export --format parquet, median (range) | $(stats "$T/pq.cpu") |"
echo "| CPU a store record: the same rows as d9 sql CSV (baseline), median (range) | $(stats "$T/csv.cpu") |"
