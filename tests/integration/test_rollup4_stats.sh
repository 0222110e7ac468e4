#!/bin/sh
# test_rollup4_stats.sh — what rollups version 4 (collector/store/rollup.h)
# answer in d9 sql and d9 sched --totals, on stores with known contents:
#   - wake_stats' delay_* columns per (bucket, runtime) equal to
#     tool_store_rollup4's own pairing (q_wake.h's rule: the wakee's next
#     poll, a later wake replacing an earlier one, threads whose blocks
#     overlap in file order): counts, sums and maxima exact, p50/p99 within
#     the histogram's 6.25 %;
#   - event_field_stats per (field, bucket) equal to a raw aggregate of the
#     event's table (count, sum, min, max), no row for a str field;
#   - version-3 rollups answered from the records with the reason on
#     stderr, found by fsck and rebuilt by fsck --repair;
#   - worker_stats' CPU columns and d9 sched --totals' cpu_ns equal to
#     plain d9 sched's CPU (its own scan) on tool_store_aggs' store, for
#     the whole store and windows with edges inside buckets.
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_rollup4" "$S" >"$T/known.txt" || { echo "tool_store_rollup4 failed"; exit 1; }
q() { "$D9" --store "$1" sql --format csv "$2"; }

delays() { # the delay columns of wake_stats in the generator's format
    q "$1" "select 'delay', bucket_ns, runtime, delay_count, delay_sum_ns, delay_max_ns, delay_p50_ns, delay_p99_ns from wake_stats where delay_count > 0 order by bucket_ns, runtime desc" | tail -n +2 | tr ',' ' ' | tr -d '\r'
}
delays_exact() {
    delays "$S" >"$T/got" 2>"$T/got.err" || return 1
    awk '$1 == "delay"' "$T/known.txt" >"$T/want"
    [ "$(wc -l <"$T/want")" -ge 6 ] || { echo "the generator wrote too few delays"; return 1; }
    cut -d' ' -f1-6 "$T/got" >"$T/g6" && cut -d' ' -f1-6 "$T/want" >"$T/w6" && diff "$T/g6" "$T/w6"
}
check "wake_stats delay count, sum, max per bucket and runtime = the generator's pairing" delays_exact
quantiles() {
    paste -d' ' "$T/got" "$T/want" | awk '{
        for (k = 7; k <= 8; k++) { g = $k; w = $(k + 8); if (g > w * 1.0625 || g < w * 0.9375) { print "bad", $0; bad = 1 } }
    } END { exit bad }'
}
check "wake_stats delay_p50_ns/delay_p99_ns within 6.25 % of the exact quantiles" quantiles
total_delays() {
    _got=$(q "$S" "select sum(delay_count) || ' ' || sum(delay_sum_ns) from wake_stats" | tail -n 1 | tr -d '\r')
    _want=$(awk '$1 == "delays" { print $2, $3 }' "$T/known.txt")
    [ "$_got" = "$_want" ] || { echo "got $_got want $_want"; return 1; }
}
check "wake_stats delay totals = the generator's" total_delays
fields_raw() {
    q "$S" "select field, bucket_ns as b, count, sum, min, max from event_field_stats where field != 'ok' order by field, b" >"$T/ef" || return 1
    for f in bytes delta ratio; do
        q "$S" "select '$f' as field, ts_ns - ts_ns % 1000000000 as b, count($f), sum($f), min($f), max($f) from req group by b order by b" | tail -n +2
    done >"$T/raw"
    tail -n +2 "$T/ef" >"$T/ef2"
    [ "$(wc -l <"$T/raw")" -ge 9 ] && diff "$T/ef2" "$T/raw"
}
check "event_field_stats (u64, i64, f64) per bucket = count/sum/min/max of the event's table" fields_raw
bool_raw() {
    q "$S" "select bucket_ns, count, sum, min, max from event_field_stats where field = 'ok' order by bucket_ns" | tail -n +2 >"$T/a" &&
        q "$S" "select ts_ns - ts_ns % 1000000000 as b, count(ok), sum(ok), min(ok), max(ok) from req group by b order by b" | tail -n +2 >"$T/b" &&
        [ -s "$T/a" ] && diff "$T/a" "$T/b"
}
check "event_field_stats of a bool field = the event's table" bool_raw
no_str() {
    _n=$(q "$S" "select count(*) from event_field_stats where field = 'name'" | tail -n 1 | tr -d '\r')
    [ "$_n" = 0 ]
}
check "event_field_stats: no row for a str field" no_str
ev_total() {
    _n=$(q "$S" "select sum(count) from event_field_stats where field = 'bytes'" | tail -n 1 | tr -d '\r')
    [ "$_n" = "$(awk '$1 == "events" { print $2 }' "$T/known.txt")" ]
}
check "event_field_stats count = the generator's events" ev_total

# a store sealed by the version before (rollups version 3)
v3() {
    rm -rf "$T/s3" && cp -r "$S" "$T/s3" || return 1
    python3 - "$T/s3/index.sqlite" <<'PY' || return 1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for sid, d in db.execute("select segment_id, data from rollups").fetchall():
    db.execute("update rollups set data = ? where segment_id = ?", (d[:4] + b"\x03\x00" + d[6:], sid))
db.commit()
PY
}
v3_from_records() {
    v3 && delays "$S" >"$T/a" 2>/dev/null && delays "$T/s3" >"$T/b" 2>"$T/b.err" || return 1
    diff "$T/a" "$T/b" && grep -q "version 3 is not supported" "$T/b.err"
}
check "version-3 rollups: delays answered from the records, said on stderr" v3_from_records
v3_fields() {
    q "$T/s3" "select * from event_field_stats order by bucket_ns, field" >"$T/b" 2>"$T/b.err" &&
        q "$S" "select * from event_field_stats order by bucket_ns, field" >"$T/a" 2>/dev/null &&
        diff "$T/a" "$T/b" && grep -q "version 3 is not supported" "$T/b.err"
}
check "version-3 rollups: event_field_stats from the records" v3_fields
v3_fsck() {
    ! "$D9" --store "$T/s3" fsck >"$T/fsck.out" 2>&1 && grep -q "version 3" "$T/fsck.out" || { cat "$T/fsck.out"; return 1; }
}
check "fsck reports version-3 rollups" v3_fsck
check "fsck --repair rebuilds them" "$D9" --store "$T/s3" fsck --repair
v3_repaired() {
    delays "$T/s3" >"$T/b" 2>"$T/b.err" && delays "$S" >"$T/a" && diff "$T/a" "$T/b" && [ ! -s "$T/b.err" ]
}
check "... then the rollups answer again (nothing on stderr)" v3_repaired

# CPU per worker: tool_store_aggs' store (sampled park/unpark records with cpu_ns)
A=$T/aggs
"$TBIN/tool_store_aggs" "$A" >"$T/aggs.txt" || { echo "tool_store_aggs failed"; exit 1; }
T0=$(awk '$1 == "t0" { print $2 }' "$T/aggs.txt")
cpu_of() { # cpu_of FILE: "worker cpu_ns" lines of d9 sched jsonl
    python3 -c '
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{"):
        r = json.loads(l); print(r["worker"], r["cpu_ns"])' "$1"
}
cpu_sql() {
    q "$A" "select worker, max(cpu_last_ns) - min(cpu_first_ns) from worker_stats group by worker order by worker" | tail -n +2 | tr ',' ' ' | tr -d '\r' >"$T/c1" &&
        "$D9" --store "$A" sched --format jsonl >"$T/plain" 2>/dev/null && cpu_of "$T/plain" >"$T/c2" &&
        [ "$(wc -l <"$T/c2")" -eq 2 ] && diff "$T/c1" "$T/c2"
}
check "worker_stats: MAX(cpu_last_ns) - MIN(cpu_first_ns) = d9 sched's CPU" cpu_sql
cpu_rows() {
    _n=$(q "$A" "select count(*) from worker_stats where cpu_ns != cpu_last_ns - cpu_first_ns or (cpu_ns is null) != (cpu_first_ns is null)" | tail -n 1 | tr -d '\r')
    _m=$(q "$A" "select count(*) from worker_stats where cpu_ns > 0" | tail -n 1 | tr -d '\r')
    [ "$_n" = 0 ] && [ "$_m" -gt 5 ]
}
check "worker_stats: cpu_ns = cpu_last_ns - cpu_first_ns per row" cpu_rows
cpu_totals() { # cpu_totals [window args]: --totals = --raw = plain d9 sched
    "$D9" --store "$A" sched --totals --format jsonl "$@" >"$T/t1" 2>/dev/null &&
        "$D9" --store "$A" sched --totals --raw --format jsonl "$@" >"$T/t2" 2>/dev/null &&
        "$D9" --store "$A" sched --format jsonl "$@" >"$T/t3" 2>/dev/null || return 1
    cpu_of "$T/t1" >"$T/u1" && cpu_of "$T/t2" >"$T/u2" && cpu_of "$T/t3" >"$T/u3" &&
        [ -s "$T/u1" ] && diff "$T/u1" "$T/u2" && diff "$T/u1" "$T/u3" && grep -qv " 0$" "$T/u1"
}
check "sched --totals cpu_ns = --raw = plain d9 sched (whole store)" cpu_totals
check "sched --totals cpu_ns = --raw = plain d9 sched (edges mid-bucket)" cpu_totals --from $((T0 + 1250000000)) --to $((T0 + 4750000000))
check "sched --totals cpu_ns = --raw = plain d9 sched (across a rotation)" cpu_totals --from $((T0 + 3200000000)) --to $((T0 + 3600000000))

d9_finish rollup4_stats
