#!/bin/sh
# test_wake_stats.sh — d9 sql's wake_stats and event_stats
# (collector/store/rollup.h, version 3: wakes per runtime and custom events
# per schema, per 1 s bucket, stored at the seal) on tool_store_aggs
# --busy's store: per bucket equal to a count of the raw wakes and req
# tables, the totals to the generator's, answered with the segment
# files moved away (rollups only), and a segment whose rollups are gone
# answered from its records with one line on stderr.
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_aggs" "$S" --busy >"$T/known.txt" || { echo "tool_store_aggs failed"; exit 1; }
WAKES=$(awk '$1 == "wakes" { print $2 }' "$T/known.txt")
EVENTS=$(awk '$1 == "events" { print $2 }' "$T/known.txt")

ru() { "$D9" --store "$S" sql --format csv "select bucket_ns as b, sum(wakes) as n from wake_stats group by b order by b" 2>"$T/ru.err"; }
raw() { "$D9" --store "$S" sql --format csv "select ts_ns - ts_ns % 1000000000 as b, count(*) as n from wakes group by b order by b" 2>/dev/null; }
per_bucket() {
    ru >"$T/a" && raw >"$T/b" && [ "$(wc -l <"$T/a")" -ge 3 ] && diff "$T/a" "$T/b"
}
total() {
    _n=$("$D9" --store "$S" sql --format csv "select sum(wakes) from wake_stats" | tail -n 1 | tr -d '\r')
    [ "$_n" = "$WAKES" ] || { echo "wake_stats total $_n, want $WAKES"; return 1; }
}
without_files() {
    ru >"$T/a" || return 1
    mkdir -p "$T/away" && mv "$S"/*.d9seg "$T/away/" || return 1
    ru >"$T/b"
    _rc=$?
    mv "$T/away"/*.d9seg "$S/"
    [ $_rc -eq 0 ] && [ ! -s "$T/ru.err" ] && diff "$T/a" "$T/b"
}
missing_rollups() { # the index's rollups of the segment deleted: its records answer
    ru >"$T/a" || return 1
    cp -r "$S" "$T/s2" && sqlite3 "$T/s2/index.sqlite" "DELETE FROM rollups" || return 1
    "$D9" --store "$T/s2" sql --format csv "select bucket_ns as b, sum(wakes) as n from wake_stats group by b order by b" >"$T/b" 2>"$T/b.err" || return 1
    diff "$T/a" "$T/b" && [ "$(wc -l <"$T/b.err")" -eq 1 ]
}

check "the generator wrote wakes" test "$WAKES" -gt 100
check "wake_stats per bucket = a count of the wakes table" per_bucket
check "wake_stats total = the generator's" total
check "wake_stats without the segment files (rollups only)" without_files
check "missing rollups: wake_stats from the records, one line on stderr" missing_rollups
pushed() {
    _n=$("$D9" --store "$S" sql --format csv "select count(*) from wake_stats where bucket_ns >= 11000000000" | tail -n 1 | tr -d '\r')
    [ "$_n" = 1 ] || { echo "rows $_n"; return 1; }
}
check "bucket_ns is pushed down" pushed
ev_per_bucket() {
    "$D9" --store "$S" sql --format csv "select event, bucket_ns as b, sum(count) as n from event_stats group by event, b order by b" >"$T/a" &&
        "$D9" --store "$S" sql --format csv "select 'req' as event, ts_ns - ts_ns % 1000000000 as b, count(*) as n from req group by b order by b" >"$T/b" &&
        [ "$(wc -l <"$T/a")" -ge 3 ] && diff "$T/a" "$T/b"
}
ev_total() {
    _n=$("$D9" --store "$S" sql --format csv "select sum(count) from event_stats where event = 'req'" | tail -n 1 | tr -d '\r')
    [ "$_n" = "$EVENTS" ] || { echo "event_stats total $_n, want $EVENTS"; return 1; }
}
v2_rollups() { # a store sealed by the version before (rollups version 2): its records answer
    ru >"$T/a" || return 1
    rm -rf "$T/s3" && cp -r "$S" "$T/s3" || return 1
    python3 - "$T/s3/index.sqlite" <<'PY' || return 1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for sid, d in db.execute("select segment_id, data from rollups").fetchall():
    db.execute("update rollups set data = ? where segment_id = ?", (d[:4] + b"\x02\x00" + d[6:], sid))
db.commit()
PY
    "$D9" --store "$T/s3" sql --format csv "select bucket_ns as b, sum(wakes) as n from wake_stats group by b order by b" >"$T/b" 2>"$T/b.err" || return 1
    diff "$T/a" "$T/b" && grep -q "version 2 is not supported" "$T/b.err"
}
check "version-2 rollups: answered from the records, said on stderr" v2_rollups
check "the generator wrote events" test "$EVENTS" -gt 10
check "event_stats per bucket = a count of the event's table" ev_per_bucket
check "event_stats total = the generator's" ev_total

d9_finish wake_stats
