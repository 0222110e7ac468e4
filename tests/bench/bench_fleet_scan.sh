#!/bin/sh
# bench_fleet_scan.sh — `make bench-fleet` (and a section of `make bench`):
# the fleet question "polls per location: count and longest" over a whole
# store, answered three ways in one run, PAIRS interleaved rounds (the
# order rotates within each round):
#   - DuckDB (@duckdb/node-api, the pinned reader of the Parquet tests) over
#     the store's `polls` table exported as Parquet (`d9 export --format
#     parquet`), query time inside DuckDB (its process start excluded);
#   - `d9 sql` over the raw records (the `polls` virtual table), whole process;
#   - `d9 sql` over the rollups (`poll_stats`), whole process.
# All three answers must be equal (count per location exactly; the longest
# poll per location too), else the bench fails. Prints wall ms median
# (min..max) and polls answered per second.
# Environment: BUILD (default build), BENCH_QUICK=1 (1 M records, 3 rounds),
# BENCH_FLEET_RECORDS (default 50 M), BENCH_FLEET_PAIRS (default 5),
# BENCH_FLEET_STORE=DIR (reuse a store made by bench_store; its Parquet
# export is kept in DIR.parquet), BENCH_KEEP=1.
set -u
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
RECORDS=${BENCH_FLEET_RECORDS:-$([ "$QUICK" = 1 ] && echo 1000000 || echo 50000000)}
PAIRS=${BENCH_FLEET_PAIRS:-$([ "$QUICK" = 1 ] && echo 3 || echo 5)}
T=$(mktemp -d /tmp/d9bench-fleet.XXXXXX) || exit 1
trap '[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT INT TERM
D9="$BUILD/bin/d9"
NPM=$(BUILD=$BUILD sh tests/integration/parquet_readers_install.sh) || exit 1
NPM=$(cd "$NPM" && pwd)
cp tests/bench/duck_scan.mjs "$NPM/duck_scan.mjs" || exit 1

STORE=${BENCH_FLEET_STORE:-$T/store}
if [ ! -f "$STORE/index.sqlite" ]; then
    echo "fleet-scan: making a $RECORDS-record store (bench_store)" >&2
    "$BUILD/bench/bench_store" "$STORE" "$RECORDS" >"$T/store.out" || exit 1
fi
PQ=$STORE.parquet
if [ ! -f "$PQ/polls.parquet" ]; then
    echo "fleet-scan: exporting it as Parquet" >&2
    rm -rf "$PQ"
    "$D9" --store "$STORE" export --format parquet --last -o "$PQ" >"$T/export.out" 2>&1 ||
        { cat "$T/export.out"; exit 1; }
fi
RAW_SQL="select location, count(*), max(dur_ns) from polls group by location order by location"
ROLL_SQL="select location, sum(count), max(max_ns) from poll_stats group by location order by location"

python3 - "$D9" "$STORE" "$PQ/polls.parquet" "$NPM" "$PAIRS" "$RAW_SQL" "$ROLL_SQL" <<'PY'
import csv, io, json, statistics, subprocess, sys, time
d9, store, pq, npm, pairs, raw_sql, roll_sql = sys.argv[1:8]
pairs = int(pairs)

def d9sql(q):
    t = time.monotonic()
    r = subprocess.run([d9, '--store', store, 'sql', '--format', 'csv', q],
                       capture_output=True, text=True)
    ms = (time.monotonic() - t) * 1e3
    if r.returncode:
        sys.exit('d9 sql failed: ' + r.stderr)
    rows = list(csv.reader(io.StringIO(r.stdout)))[1:]
    return ms, [[x[0], int(x[1]), int(float(x[2]))] for x in rows]

def duck():
    r = subprocess.run(['node', 'duck_scan.mjs', pq], cwd=npm, capture_output=True, text=True)
    if r.returncode:
        sys.exit('duckdb failed: ' + r.stderr)
    o = json.loads(r.stdout)
    return o['ms'], [[x[0], int(x[1]), int(x[2])] for x in o['rows']]

ways = [('DuckDB over Parquet polls (query only)', duck),
        ('d9 sql, raw records (whole command)', lambda: d9sql(raw_sql)),
        ('d9 sql, rollups poll_stats (whole command)', lambda: d9sql(roll_sql))]
ms = {w[0]: [] for w in ways}
answers = {}
for i in range(pairs):
    k = i % len(ways)
    for name, f in ways[k:] + ways[:k]:
        t, rows = f()
        ms[name].append(t)
        answers.setdefault(name, rows)
        if rows != answers[name]:
            sys.exit('%s: answers differ between rounds' % name)
ref = answers[ways[1][0]]
for name, rows in answers.items():
    if rows != ref:
        sys.exit('%s answers differently from d9 sql over raw records:\n%s\nvs\n%s' % (name, rows[:5], ref[:5]))
polls = sum(r[1] for r in ref)
print('fleet-scan: %d polls in %d locations, %d interleaved rounds; all three answers equal' %
      (polls, len(ref), pairs))
print('| way | wall ms median (min..max) | polls answered / s |')
print('|---|---|---|')
for name, _ in ways:
    v = sorted(ms[name]); m = statistics.median(v)
    print('| %s | %.0f (%.0f..%.0f) | %.3g |' % (name, m, v[0], v[-1], polls / (m / 1e3)))
PY
