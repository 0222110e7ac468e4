#!/bin/sh
# bench_ship.sh — `make bench-ship` (and the last section of `make bench`):
# what shipping segments to S3 (d9collectd --ship) costs, against a local
# S3-compatible server (s3rver, tests/integration/lib_s3.sh) on 127.0.0.1.
#
#   1. drain with and without --ship, in the same run, alternating: one
#      bench_drain producer flat out for SHIP_BENCH_MS against a fresh
#      collector, which with --ship uploads each segment as it is sealed
#      (--segment-mb 8) while it drains. Reported per run: records kept per
#      second, the agent's losses, and the collector's CPU (all its threads).
#      The flat-out pairs run twice: with the whole collector (drain and
#      upload threads) on one CPU, then with only the drain thread pinned
#      there. Then the same pairs at a fixed offered rate (SHIP_BENCH_RATE, default
#      5 M events/s): whether shipping costs the drain any record at a rate
#      the drain keeps up with, first with the whole collector (drain and
#      upload threads) on one CPU, then with only the drain thread pinned
#      there and the upload threads free to run where there is room, as on a
#      host where nothing pins the collector.
#      Each pair is a triple when SHIP_BENCH_MODES has pq (the default):
#      the third run ships with --ship-parquet on as well, so the drain's
#      rate with and without the Parquet companions is side by side; the
#      companions' exports run as child processes (d9 export), whose CPU is
#      the "children CPU s" column.
#   2. upload throughput: a collector started with --ship on the store the
#      runs without --ship left behind (a backlog of sealed segments) and no
#      load: MiB shipped per second until the backlog is empty, and the
#      collector's CPU seconds per shipped MiB (its upload threads: reading,
#      SHA-256, MD5, CRC-32C, HTTP through libcurl).
# The numbers depend on the machine and on s3rver (node, writing to disk),
# which bounds the upload rate; they are printed, not checked.
# s3rver stands in for a remote server: in production its CPU is on another
# machine, so by default (SHIP_BENCH_SERVER_IDLE=1) its threads run under
# SCHED_IDLE and take only CPU time nothing here wants; =0 lets it compete,
# which measures this machine's CPU shared three ways, not shipping's cost.
# After each run with --ship the collector keeps running until the backlog
# it built while the load ran is shipped: "drained after" is that time.
#
# Environment: BUILD (default build), SHIP_BENCH_MS (default 3000),
# SHIP_BENCH_ROUNDS (off/on pairs, default 2), BENCH_PROD_CPU and
# BENCH_CONS_CPU (default 0 and 1). Needs make all, bench_drain and tool_ctl.
BUILD=${BUILD:-build}
. tests/integration/lib.sh
. tests/integration/lib_s3.sh
d9_setup
B=$BUILD/bench
MS=${SHIP_BENCH_MS:-3000}
ROUNDS=${SHIP_BENCH_ROUNDS:-2}
RATE=${SHIP_BENCH_RATE:-5000000}
PCPU=${BENCH_PROD_CPU:-0}
CCPU=${BENCH_CONS_CPU:-1}
[ "$(getconf _NPROCESSORS_ONLN)" -lt 2 ] && CCPU=$PCPU
TCK=$(getconf CLK_TCK)
for f in "$B/bench_drain" "$BIN/d9collectd" "$TBIN/tool_ctl"; do
    [ -x "$f" ] || { echo "bench-ship: $f missing (make all bench-bins build/tests/integration/tool_ctl)"; exit 1; }
done
s3_start d9-bench || exit 1
SERVER=competing
if [ "${SHIP_BENCH_SERVER_IDLE:-1}" = 1 ]; then
    for t in /proc/$S3_PID/task/*; do chrt -i -p 0 "${t##*/}" >/dev/null 2>&1; done
    SERVER="SCHED_IDLE (stands in for a remote server)"
fi
EP=ipc://$T/c.sock
mkdir -p "$T/shm"

col_ticks() { awk '{ print $14 + $15 }' "/proc/$COL_PID/stat" 2>/dev/null || echo 0; }
kid_ticks() { awk '{ print $16 + $17 }' "/proc/$COL_PID/stat" 2>/dev/null || echo 0; }
stat_of() { "$TBIN/tool_ctl" "$EP" status | sed -n "s/^$1=//p"; }
# col_start STORE [flags]: PIN=all puts the whole collector on $CCPU; PIN=drain
# only its main thread (the drain), once the upload threads have started
col_start() {
    _s=$1; shift
    rm -f "$T/c.sock"
    if [ "$PIN" = all ]; then
        taskset -c "$CCPU" "$BIN/d9collectd" --store "$_s" --shm-dir "$T/shm" --endpoint "$EP" \
            --segment-mb 8 --store-mb 65536 "$@" >>"$T/col.log" 2>&1 &
    else
        "$BIN/d9collectd" --store "$_s" --shm-dir "$T/shm" --endpoint "$EP" \
            --segment-mb 8 --store-mb 65536 "$@" >>"$T/col.log" 2>&1 &
    fi
    COL_PID=$!
    at_exit kill -9 "$COL_PID"
    wait_for 20 "$TBIN/tool_ctl" "$EP" status || return 1
    [ "$PIN" = all ] || taskset -pc "$CCPU" "$COL_PID" >/dev/null
}
col_stop() { kill -TERM "$COL_PID"; wait "$COL_PID"; }

echo "bench-ship: $(getconf _NPROCESSORS_ONLN) CPUs, producer on cpu $PCPU, collector on cpu $CCPU, ${MS} ms per run, s3rver $S3_ENDPOINT, server $SERVER"
MODES=${SHIP_BENCH_MODES:-off on pq}
echo "run        kept/s        lost      collector CPU s   children CPU s   shipped MiB (during the run)   drained after"
for series in "0 all" "0 drain" "$RATE all" "$RATE drain"; do
rate=${series% *}; PIN=${series#* }
where="$( [ "$PIN" = all ] && echo "the whole collector" || echo "the drain thread only") on cpu $CCPU"
[ "$rate" = 0 ] && echo "-- flat out (the ring overflows: kept/s is the drain's capacity), $where" ||
    echo "-- offered $rate events/s, $where"
i=1
while [ $i -le "$ROUNDS" ]; do
    for mode in $MODES; do
        if [ $mode = on ]; then
            col_start "$T/store-on-$i-$rate-$PIN" --ship s3://d9-bench/drain-$i-$rate-$PIN \
                --s3-endpoint "$S3_ENDPOINT" || exit 1
        elif [ $mode = pq ]; then
            col_start "$T/store-pq-$i-$rate-$PIN" --ship s3://d9-bench/pq-$i-$rate-$PIN \
                --ship-parquet on --s3-endpoint "$S3_ENDPOINT" || exit 1
        else
            col_start "$T/store-off" || exit 1
        fi
        r0=$(stat_of records); c0=$(col_ticks); k0=$(kid_ticks)
        DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP DIAL9_SAMPLER=off "$B/bench_drain" --threads 1 \
            --rate "$rate" --seconds-ms "$MS" --cpu "$PCPU" >"$T/load.out" 2>"$T/load.err" ||
            { echo "bench-ship: bench_drain failed: $(tail -n 2 "$T/load.err")"; exit 1; }
        c1=$(col_ticks)
        "$TBIN/tool_ctl" "$EP" flush >/dev/null 2>&1
        r1=$(stat_of records)
        shipped=$( [ $mode != off ] && stat_of ship.shipped || echo 0)
        sb=$(sqlite3 "$T/store-$mode$( [ $mode != off ] && echo "-$i-$rate-$PIN")/index.sqlite" \
            "select coalesce(sum(s.bytes),0) from segments s join uploads u on u.segment_id = s.id where u.state = 'shipped'" 2>/dev/null || echo 0)
        el=$(sed -n 's/.* elapsed=\([^ ]*\).*/\1/p' "$T/load.out")
        lost=$(sed -n 's/.* lost=\([^ ]*\).*/\1/p' "$T/load.out")
        drained=-
        if [ $mode != off ]; then   # the backlog the run left: how long until it is shipped
            d0=$(date +%s.%N)
            wait_for 300 sh -c "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ship.backlog=//p')\" = 0 ]"
            drained="$(echo "$(date +%s.%N) - $d0" | bc | awk '{ printf "%.1f s", $1 }') ($(stat_of ship.shipped) segments)"
        fi
        k1=$(kid_ticks)
        printf '%-10s %-13s %-9s %-17s %-16s %-30s %s\n' "$mode.$i" \
            "$(awk "BEGIN { printf \"%.0f\", ($r1 - $r0) / $el }")" "$lost" \
            "$(awk "BEGIN { printf \"%.2f\", ($c1 - $c0) / $TCK }")" \
            "$(awk "BEGIN { printf \"%.2f\", ($k1 - $k0) / $TCK }")" \
            "$(awk "BEGIN { printf \"%.1f\", ${sb:-0} / 1048576 }") ($shipped segments)" "$drained"
        col_stop
    done
    i=$((i + 1))
done
done

# ---- 2. upload throughput of a backlog
PIN=all
backlog_mib=$(sqlite3 "$T/store-off/index.sqlite" "select sum(bytes) / 1048576.0 from segments")
nseg=$(sqlite3 "$T/store-off/index.sqlite" "select count(*) from segments")
t0=$(date +%s.%N)
col_start "$T/store-off" --ship s3://d9-bench/backlog --s3-endpoint "$S3_ENDPOINT" || exit 1
c0=$(col_ticks)
wait_for 600 sh -c "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ship.backlog=//p')\" = 0 ]"
c1=$(col_ticks)
t1=$(date +%s.%N)
col_stop
printf 'upload     %s segments, %.1f MiB in %.2f s: %.1f MiB/s, collector %.3f CPU s per shipped MiB (%.2f CPU s)\n' \
    "$nseg" "$backlog_mib" "$(echo "$t1 - $t0" | bc)" \
    "$(echo "$backlog_mib / ($t1 - $t0)" | bc -l)" "$(echo "($c1 - $c0) / $TCK / $backlog_mib" | bc -l)" \
    "$(echo "($c1 - $c0) / $TCK" | bc -l)"
grep -i 'ship.*warn\|error' "$T/col.log" | head -n 5
d9_finish bench-ship >/dev/null   # cleanup; no checks here to count
