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

# coarser levels: bucket_width_ns = W merges the 1 s rows at query time
level_same() { # level_same STORE TABLE KEYS SUMS: W-wide rows = the 1 s rows grouped by W
    _s=$1 _t=$2 _k=$3 _c=$4
    _sums=$(echo "$_c" | sed 's/\([a-z_0-9][a-z_0-9]*\)/sum(\1)/g')
    for _w in 2000000000 60000000000 3600000000000; do
        q "$_s" "select bucket_ns, $_k, $_c from $_t where bucket_width_ns = $_w order by 1, 2, 3" | tail -n +2 >"$T/lv_a" &&
            q "$_s" "select bucket_ns - bucket_ns % $_w as b, $_k, $_sums from $_t group by b, $_k order by 1, 2, 3" | tail -n +2 >"$T/lv_b" || return 1
        [ -s "$T/lv_a" ] && diff "$T/lv_a" "$T/lv_b" || { echo "width $_w"; return 1; }
    done
}
check "poll_stats at 2 s, 1 min, 1 h: counts and sums = the 1 s rows'" level_same "$A" poll_stats "worker, loc" "count, unfinished, sum_ns"
check "worker_stats at 2 s, 1 min, 1 h: counts and sums = the 1 s rows'" level_same "$A" worker_stats "runtime, worker" "polls, busy_ns, parks, parked_ns, waits, wait_sum_ns"
check "wake_stats at 2 s, 1 min, 1 h: wakes and delays = the 1 s rows'" level_same "$S" wake_stats "pid, runtime" "wakes, delay_count, delay_sum_ns"
check "event_stats at 2 s, 1 min, 1 h = the 1 s rows'" level_same "$S" event_stats "pid, event" "count"
level_max() {
    q "$A" "select bucket_ns, worker, wait_max_ns, cpu_ns from worker_stats where bucket_width_ns = 2e9 order by 1, 2" | tail -n +2 >"$T/m1" &&
        q "$A" "select bucket_ns - bucket_ns % 2000000000 as b, worker, max(wait_max_ns), max(cpu_last_ns) - min(cpu_first_ns) from worker_stats group by b, worker order by 1, 2" | tail -n +2 >"$T/m2" &&
        [ "$(wc -l <"$T/m1")" -ge 5 ] && diff "$T/m1" "$T/m2"
}
check "worker_stats at 2 s: wait_max_ns = MAX, cpu_ns = MAX(last) - MIN(first) of the 1 s rows" level_max
level_fields() {
    q "$S" "select bucket_ns, count, sum, min, max from event_field_stats where field = 'delta' and bucket_width_ns = 2e9 order by 1" | tail -n +2 >"$T/f1" &&
        q "$S" "select ts_ns - ts_ns % 2000000000 as b, count(delta), sum(delta), min(delta), max(delta) from req group by b order by b" | tail -n +2 >"$T/f2" &&
        [ "$(wc -l <"$T/f1")" -eq 2 ] && diff "$T/f1" "$T/f2"
}
check "event_field_stats at 2 s = count/sum/min/max of the event's table per 2 s" level_fields
level_quantile() { # the merged histogram's p50 at 1 h within 6.25 % of the exact median delay
    _p=$(q "$S" "select delay_p50_ns from wake_stats where bucket_width_ns = 3600e9 and runtime = 'web'" | tail -n 1 | tr -d '\r')
    _n=$(q "$S" "select count(*) from wake_stats where bucket_width_ns = 3600e9" | tail -n 1 | tr -d '\r')
    [ "$_n" = 2 ] && [ -n "$_p" ] && [ "$_p" -gt 1500000 ] && [ "$_p" -lt 3500000 ]
}
check "wake_stats at 1 h: one row per runtime, p50 from the merged histogram" level_quantile
level_default() {
    _a=$(q "$A" "select count(*) from poll_stats where bucket_width_ns = 1000000000" | tail -n 1 | tr -d '\r')
    _b=$(q "$A" "select count(*) from poll_stats where bucket_width_ns = 1500000000" | tail -n 1 | tr -d '\r')
    _c=$(q "$A" "select min(bucket_width_ns) from poll_stats" | tail -n 1 | tr -d '\r')
    [ "$_a" -gt 5 ] && [ "$_b" = 0 ] && [ "$_c" = 1000000000 ]
}
check "bucket_width_ns: 1e9 in the 1 s rows; a width not a whole second gives no rows" level_default

d9_finish rollup4_stats
