#!/bin/sh
# test_export_parquet.sh — `d9 export --format parquet` read by two
# independent Parquet readers (DuckDB via @duckdb/node-api, and hyparquet;
# pinned npm packages in the build directory): a real collector and traced
# program (prog_cli, known counts), every table of d9 sql written as a file,
# every file read back by both readers row for row equal to d9 sql's rows,
# known counts through DuckDB, a window and --pid, statistics pruning in
# DuckDB's EXPLAIN ANALYZE, and the usage errors.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" "$@"; }
NPM=$(BUILD=$BUILD sh tests/integration/parquet_readers_install.sh) ||
    { echo "FAIL - the Parquet readers could not be installed"; _fail=1; d9_finish export_parquet; exit 1; }
NPM=$(cd "$NPM" && pwd)
cp tests/integration/parquet_read.mjs "$NPM/parquet_read.mjs"
pq() { (cd "$NPM" && node parquet_read.mjs "$@"); }

check "collector answers d9 status" start_collector

check "flush, then both processes reached their final state" cli_runs
stop_collector

# ---- every table, both readers, row for row --------------------------------------
d9 sql --format csv "select name from sqlite_schema where type = 'table' order by name" |
    tail -n +2 | tr -d '\r"' >"$T/tables"
check "d9 sql lists the tables of the store (polls, stacks, a custom table among them)" \
    sh -c "grep -qx polls '$T/tables' && grep -qx stacks '$T/tables' && grep -qx order '$T/tables'"
check "export --format parquet writes the store" \
    sh -c "'$BIN/d9' --store '$STORE' export --format parquet --last -o '$T/pq' 2>'$T/exp.err'"
cat "$T/exp.err"
mkdir -p "$T/jsonl"
for t in $(cat "$T/tables"); do
    d9 sql --format jsonl "select * from \"$t\"" >"$T/jsonl/$t.jsonl" 2>/dev/null
done
pq compare "$T/pq" "$T/jsonl" $(cat "$T/tables") >"$T/cmp.out" 2>&1
cat "$T/cmp.out"
for t in $(cat "$T/tables"); do
    check "$t.parquet: DuckDB and hyparquet read d9 sql's rows" grep -q "^ok $t " "$T/cmp.out"
done
nonempty() { awk '$1 == "ok" && $3 > 0' "$T/cmp.out" | wc -l; }
check "most tables hold rows (the comparison is not of empty tables)" test "$(nonempty)" -ge 10

# ---- known counts through DuckDB ------------------------------------------------------
duck() { pq sql "$T/pq/$1.parquet" "$2" | tr -d '"' ; }
check "polls: 401 for the clean run, task 4242 unfinished in the crashed one" sh -c "
    test \"\$(cd '$NPM' && node parquet_read.mjs sql '$T/pq/polls.parquet' \
        'select count(*) filter (where pid = $OKPID) a, count(*) filter (where pid = $CRPID and task = 4242 and end_ns is null) b from {f}')\" \
        = '{\"a\":\"401\",\"b\":\"1\"}'"
check "custom table 'order': typed columns (qty INT64, price DOUBLE, item string)" sh -c "
    test \"\$(cd '$NPM' && node parquet_read.mjs sql '$T/pq/order.parquet' \
        'select count(*) n, sum(qty) q, min(price) p, any_value(typeof(qty)) tq, any_value(typeof(price)) tp, any_value(typeof(item)) ti from {f} where pid = $OKPID')\" \
        = '{\"n\":\"10\",\"q\":\"50\",\"p\":2.5,\"tq\":\"BIGINT\",\"tp\":\"DOUBLE\",\"ti\":\"VARCHAR\"}'"
check "cpu_samples' stack ids all have frames in stacks" sh -c "
    test \"\$(cd '$NPM' && node parquet_read.mjs sql '$T/pq/cpu_samples.parquet' \
        \"select count(*) n from {f} s where stack_id is not null and stack_id not in (select stack_id from read_parquet('$T/pq/stacks.parquet'))\")\" \
        = '{\"n\":\"0\"}'"

# ---- a window and a pid -----------------------------------------------------------------
# one value of a query (csv without its header and CR)
val() { d9 sql --format csv "$1" | tail -n 1 | tr -d '\r'; }
MID=$(val "select start_ns from polls where pid = $OKPID order by start_ns limit 1 offset 200")
END=$(val "select max(ts_ns) from events")
check "export of a window and one pid" \
    sh -c "'$BIN/d9' --store '$STORE' export --format parquet --pid $OKPID --from $MID --to $END -o '$T/pqw' 2>/dev/null"
WANT=$(val "select count(*) from polls where pid = $OKPID and start_ns >= $MID and start_ns <= $END")
check "the window's polls are d9 sql's polls of that window ($WANT)" sh -c "
    test \"\$(cd '$NPM' && node parquet_read.mjs sql '$T/pqw/polls.parquet' 'select count(*) n, count(distinct pid) p, min(start_ns) >= $MID m from {f}')\" \
        = '{\"n\":\"$WANT\",\"p\":\"1\",\"m\":true}'"

# ---- statistics pruning -------------------------------------------------------------------
check "export with small row groups" \
    sh -c "'$BIN/d9' --store '$STORE' export --format parquet --row-group-rows 50 --last -o '$T/pqs' 2>/dev/null"
pq prune "$T/pqs/polls.parquet" start_ns "$MID" >"$T/prune.out" 2>&1
cat "$T/prune.out"
WANT=$(val "select count(*) from polls where start_ns > $MID")
pruned() {
    set -- $(cat "$T/prune.out")
    [ "$1" = groups ] && [ "$2" -ge 8 ] && [ "$4" -ge 2 ] && [ "$6" -lt "$8" ] && [ "${10}" = "$WANT" ]
}
check "DuckDB's EXPLAIN ANALYZE: a start_ns filter reads fewer bytes (row groups skipped by min/max), same count as d9 sql" pruned

# ---- usage --------------------------------------------------------------------------------
check "--format parquet without -o DIR is a usage error (exit 2)" \
    sh -c "'$BIN/d9' --store '$STORE' export --format parquet --last 2>'$T/u.err'; test \$? -eq 2 && grep -q 'o DIR' '$T/u.err'"
: >"$T/afile"
check "-o naming a file that is not a directory fails with one line" \
    sh -c "'$BIN/d9' --store '$STORE' export --format parquet --last -o '$T/afile' 2>'$T/f.err'; test \$? -eq 1 && test \$(wc -l <'$T/f.err') -eq 1 && grep -q 'not a directory' '$T/f.err'"
check "--row-group-rows 0 is a usage error" \
    sh -c "'$BIN/d9' --store '$STORE' export --format parquet --row-group-rows 0 -o '$T/x' 2>/dev/null; test \$? -eq 2"
files() { find "$T/pq" "$T/pqw" "$T/pqs" -type f "$@" | wc -l; }
check "no temporary files are left in the output directories (only *.parquet)" \
    sh -c "test $(files) -gt 0 && test $(files) -eq $(files -name '*.parquet')"

d9_finish export_parquet
