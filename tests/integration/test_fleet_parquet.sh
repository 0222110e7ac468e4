#!/bin/sh
# test_fleet_parquet.sh — d9collectd --ship --ship-parquet on: two hosts
# (two collectors, --host host-a and host-b, each its own store) ship to one
# s3rver bucket; each sealed segment's d9 sql tables go up as Parquet under
# PREFIX/parquet/table=NAME/date=YYYY-MM-DD/host=HOST/ID.parquet, each key
# exactly once through server errors and a collector killed in the middle of
# uploads (s3proxy.py in front logs every request). Then DuckDB (the node
# binding of tests/integration/parquet_readers_install.sh) answers a
# cross-host question over the bucket's Parquet tree, hive_partitioning=1,
# with the same rows as d9 sql on each host's store pulled back (d9 pull),
# and its EXPLAIN ANALYZE shows the partitions of the other host and the
# other tables were not read.
# DuckDB's httpfs extension is not bundled with the node binding and cannot
# be installed without network access, so DuckDB reads a copy of the
# bucket's parquet/ tree fetched key for key with the project's S3 client
# (tool_s3), in the same layout; the glob and the partition pruning are
# the same as over s3://.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/lib_s3.sh
URL=s3://d9-test/fleet
TOOL="$TBIN/tool_s3"

NPM=$(BUILD=$BUILD sh tests/integration/parquet_readers_install.sh) ||
    { check "the Parquet readers are installed" false; d9_finish fleet_parquet; exit 1; }
NPM=$(cd "$NPM" && pwd)
cp tests/integration/fleet_duck.mjs "$NPM/fleet_duck.mjs"
duck() { (cd "$NPM" && node fleet_duck.mjs "$@"); }

if ! s3_start d9-test || ! s3_proxy_start; then
    check "s3rver and the proxy start" false
    d9_finish fleet_parquet; exit 1
fi

backlog_empty() { [ "$(sql "select count(*) from segments")" -ge 1 ] &&
                  [ "$(sql "select count(*) from uploads where state = 'shipped'")" = \
                    "$(sql "select count(*) from segments")" ]; }
staged_none() { [ -d "$STORE/parquet" ] && [ -z "$(ls -A "$STORE/parquet")" ]; }
all_done() { backlog_empty && staged_none; }
# no Parquet key got two successful PUTs
each_parquet_put_once() {
    grep '^PUT .*\.parquet 200$' "$PROXY_LOG" | sort | uniq -d >"$T/dups"
    [ ! -s "$T/dups" ] || { echo "uploaded twice:"; cat "$T/dups"; return 1; }
}
run_polls() {  # NAME: ~2 s of polls on 2 threads, two or more 1 s segments
    workload "$1" --threads 2 --events 20000 --pace-us 10000 --batch 100 --polls
    wait_for 60 wl_done "$1"
    wait "$(wl_pid "$1")" 2>/dev/null
    flush
}
bucket_list() { "$TOOL" $URL list >"$T/bucket.list" 2>"$T/bucket.err"; }
pq_keys() { bucket_list && awk '{print $1}' "$T/bucket.list" | grep '^parquet/' | sort; }

# ---- host A: companions, through 503s and a kill -9 in the middle of uploads
STORE=$T/store-a
check "--ship-parquet without --ship is refused" sh -c \
    "! '$BIN/d9collectd' --store '$STORE' --ship-parquet on --print-config >'$T/e1' 2>&1 &&
     grep -q 'ship-parquet needs ship' '$T/e1'"
check "a host name outside [A-Za-z0-9._-] is refused" sh -c \
    "! '$BIN/d9collectd' --store '$STORE' --host 'a/b' --print-config >'$T/e2' 2>&1 &&
     grep -q \"bad host 'a/b'\" '$T/e2'"
check "host A starts with --ship --ship-parquet on" start_collector --segment-seconds 1 \
    --ship $URL --ship-parquet on --host host-a --s3-endpoint "$S3_PROXY" --log-level debug
check "the log names the d9 program that writes the companions" wait_for 5 \
    grep -q "with Parquet companions written by $BIN/d9\$" "$T/col.log"
run_polls a1
check "host A: every segment and its companions are shipped" wait_for 60 all_done
check "companions are in Hive partitions table=/date=/host=host-a" sh -c \
    "pq_keys() { '$TOOL' $URL list | awk '{print \$1}' | grep '^parquet/'; };
     pq_keys | grep -q '^parquet/table=polls/date=[0-9-]*/host=host-a/[0-9]*\.parquet\$' &&
     ! pq_keys | grep -v '^parquet/table=[a-z_]*/date=[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]/host=host-a/[0-9]*\.parquet\$'"
same() { [ "$1" = "$2" ] || { echo "expected '$2', got '$1'"; return 1; }; }
# d9 status counts the companions: every file in the bucket was uploaded by this run
pq_status() { "$BIN/d9" --endpoint "$EP" status --format jsonl | python3 -c '
import json, sys; p = json.load(sys.stdin)["ship"]["parquet"]
print(p["uploaded"], p["segments"], p["staged"], p["skipped"] + p["failed"])'; }
check "d9 status: Parquet files uploaded = keys in the bucket, none staged or skipped" \
    same "$(pq_status)" "$(pq_keys | wc -l) $(sql "select count(*) from segments") 0 0"
check "d9 status prints a parquet line" sh -c \
    "'$BIN/d9' --endpoint '$EP' status | grep -q '^parquet .* files uploaded for'"
check "one polls file per segment that has polls" eq "$(pq_keys | grep -c '^parquet/table=polls/')" \
    "$(sql "select count(*) from segments where n_poll_start > 0")"
check "the segments keep their own keys (host-a/DATE/PID-START/ID.d9seg)" sh -c \
    "'$TOOL' $URL list | grep -q '^host-a/[0-9-]*/[0-9]*-[0-9]*/[0-9]*\.d9seg '"

s3_proxy_mode 503
run_polls a2
check "503: companion or segment attempts fail and are logged" wait_for 30 \
    grep -q 'ship: segment .*HTTP 503' "$T/col.log"
s3_proxy_mode slow 3
check "slow server: a Parquet upload is in flight" wait_for 30 grep -q '\.parquet' "$T/proxy.log"
sleep 1
kill -9 "$COLPID"
wait "$COLPID" 2>/dev/null
sleep 4                                   # the proxy's delayed requests land meanwhile
s3_proxy_mode ok
check "after kill -9 host A restarts on its store" start_collector --segment-seconds 1 \
    --ship $URL --ship-parquet on --host host-a --s3-endpoint "$S3_PROXY" --log-level debug
check "after the restart everything is shipped" wait_for 60 all_done
check "no Parquet key was uploaded twice across the errors and the kill" each_parquet_put_once
check "no temporary export directory is left" sh -c "[ -z \"\$(ls -A '$STORE/parquet')\" ]"
check "SIGTERM exits 0" stop_collector

# ---- host B: another store, another name, the same bucket
STORE=$T/store-b
check "host B starts" start_collector --segment-seconds 1 --ship $URL --ship-parquet on \
    --host host-b --s3-endpoint "$S3_PROXY"
run_polls b1
check "host B: every segment and its companions are shipped" wait_for 60 all_done
check "SIGTERM exits 0" stop_collector
check "no Parquet key was uploaded twice" each_parquet_put_once

# ---- each host's store pulled back; the bucket's Parquet tree copied
for h in a b; do
    check "d9 pull host-$h" sh -c "'$BIN/d9' pull $URL --host host-$h --s3-endpoint '$S3_ENDPOINT' \
        --quiet '$T/pulled-$h' >'$T/pull-$h.out' 2>&1"
done
mirror() {
    pq_keys >"$T/pq.keys" || return 1
    [ -s "$T/pq.keys" ] || return 1
    while read -r k; do
        mkdir -p "$T/mirror/$(dirname "$k")" &&
            "$TOOL" $URL get "$k" "$T/mirror/$k" || return 1
    done <"$T/pq.keys"
}
check "every Parquet object of the bucket is fetched" mirror

# the question: polls over the median duration per host and location
THR=$("$BIN/d9" --store "$T/pulled-a" sql --format csv \
    "select dur_ns from polls where dur_ns is not null order by dur_ns
     limit 1 offset (select count(dur_ns) / 2 from polls)" | tail -n 1)
Q="select location, count(*) as n, sum(dur_ns) as total_ns, max(dur_ns) as max_ns from polls
   where dur_ns > $THR group by location order by location"
: >"$T/want"
for h in a b; do
    "$BIN/d9" --store "$T/pulled-$h" sql --format csv "$Q" | tail -n +2 | tr -d '"\r' |
        sed "s/^/host-$h,/" >>"$T/want"
done
cat "$T/want"
duck query "$T/mirror/parquet" "$THR" >"$T/got" 2>"$T/duck.err"
cat "$T/got" "$T/duck.err"
check "d9 sql on the pulled stores: both hosts have polls over $THR ns" sh -c \
    "grep -q '^host-a,' '$T/want' && grep -q '^host-b,' '$T/want'"
check "DuckDB over the bucket's Parquet answers as d9 sql on each host's store" cmp "$T/want" "$T/got"
duck prune "$T/mirror/parquet" >"$T/prune" 2>&1
cat "$T/prune"
np_a=$(grep -c '^parquet/table=polls/.*/host=host-a/' "$T/pq.keys")
check "EXPLAIN ANALYZE of table = 'polls' AND host = 'host-a' over every file: only host-a's $np_a polls files of $(grep -c . "$T/pq.keys") are read" \
    grep -qx "scanning $np_a/$(grep -c . "$T/pq.keys") files_read $np_a" "$T/prune"
d9_finish fleet_parquet
