#!/bin/sh
# bench_uv_named.sh — what LD_PRELOAD=libd9preload.so costs a real libuv
# server: BIND's named (private config, one zone, 127.0.0.1) under dnsperf,
# with and without the shim, in paired runs whose order alternates (off/on,
# on/off, ...) so that drift of the machine falls on both sides alike.
#
# Each run starts named, then measures two loads for BENCH_UV_SECONDS each:
#   fixed  dnsperf at an offered BENCH_UV_RATE queries/s: p99 latency is the
#          figure (the throughput is the offered rate when nothing is lost);
#   flat   dnsperf flat out (4 clients, 100 queries in flight): throughput
#          and p99 latency.
# p99 comes from dnsperf -v (one latency per answered query). With the shim
# the collector runs, and its records per second of named are reported.
# Then bench_uv_idle, in the same pairs: the cost of one traced callback.
# Printed: every pair, then the medians off and on and the overhead beside
# the target (<= 1 %, printed, never enforced). Numbers of a run belong in
# tests/bench/RESULTS.md, not here.
#
# Environment: BUILD (default build), BENCH_QUICK=1 (2 pairs of 2 s),
# BENCH_UV_PAIRS (default 5), BENCH_UV_SECONDS (default 5),
# BENCH_UV_RATE (default 5000), BENCH_UV_PORT (default 53955),
# BENCH_KEEP=1 (keep the temp dir). Only processes started here are signalled.
set -u
. "$(dirname "$0")/../integration/named_env.sh"
BUILD=${BUILD:-build}
BIN=$(cd "$BUILD/bin" && pwd)
PRELOAD=$(cd "$BUILD/lib" && pwd)/libd9preload.so
NAMED=${NAMED:-/usr/sbin/named}
PAIRS=${BENCH_UV_PAIRS:-5}
SECS=${BENCH_UV_SECONDS:-5}
RATE=${BENCH_UV_RATE:-5000}
PORT=${BENCH_UV_PORT:-53955}
if [ "${BENCH_QUICK:-0}" = 1 ]; then PAIRS=2; SECS=2; fi
if [ ! -x "$NAMED" ] || ! command -v dnsperf >/dev/null || [ ! -f "$PRELOAD" ]; then
    echo "bench_uv_named: needs $NAMED, dnsperf and $PRELOAD (make all; install-deps)" >&2
    exit 2
fi

T=$(mktemp -d /tmp/d9bench-uv.XXXXXX)
COLPID=""
NPID=""
cleanup() {
    [ -n "$NPID" ] && kill -9 "$NPID" 2>/dev/null
    [ -n "$COLPID" ] && kill -TERM "$COLPID" 2>/dev/null && wait "$COLPID" 2>/dev/null
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

mkdir -p "$T/shm"
named_setup "$T/named" "$PORT"

EP=ipc://$T/c.sock
"$BIN/d9collectd" --store "$T/store" --shm-dir "$T/shm" --endpoint "$EP" >"$T/col.log" 2>&1 &
COLPID=$!
i=0
until "$BIN/d9" status --endpoint "$EP" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "bench_uv_named: collector did not start" >&2; exit 1; }
    sleep 0.1
done

# named_start off|on; named_stop
named_start() {
    : >"$T/named/log"
    if [ "$1" = on ]; then
        DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP LD_PRELOAD=$PRELOAD \
            "$NAMED" -g -4 -n 2 -c "$T/named/named.conf" >"$T/named/log" 2>&1 &
    else
        "$NAMED" -g -4 -n 2 -c "$T/named/named.conf" >"$T/named/log" 2>&1 &
    fi
    NPID=$!
    named_running "$T/named/log" ||
        { echo "bench_uv_named: named did not start" >&2; cat "$T/named/log" >&2; exit 1; }
}
named_stop() {
    kill -TERM "$NPID"
    wait "$NPID" 2>/dev/null
}
# perf FILE: "qps p99_us answered sent" of a dnsperf -v output
perf() {
    qps=$(sed -n 's/^ *Queries per second: *\([0-9.]*\).*/\1/p' "$1")
    sent=$(sed -n 's/^ *Queries sent: *\([0-9]*\).*/\1/p' "$1")
    done_=$(sed -n 's/^ *Queries completed: *\([0-9]*\).*/\1/p' "$1")
    p99=$(awk '/^> /{print $NF}' "$1" | sort -n |
          awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else {k=int(NR*0.99); if (k < 1) k=1; printf "%.1f", v[k]*1e6}}')
    echo "$qps $p99 $done_ $sent"
}

printf 'bench_uv_named: named -n 2 on 127.0.0.1, %d pairs of %d s per load, fixed rate %d q/s\n' \
    "$PAIRS" "$SECS" "$RATE"
printf '%-5s %-4s %12s %10s %12s %10s %12s\n' pair mode fixed_qps fixed_p99 flat_qps flat_p99 records/s
: >"$T/results"
p=1
while [ $p -le "$PAIRS" ]; do
    if [ $((p % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
    for mode in $order; do
        named_start "$mode"
        dnsperf -s 127.0.0.1 -p "$PORT" -d "$T/named/queries" -l "$SECS" -Q "$RATE" -v >"$T/fixed.out" 2>&1
        dnsperf -s 127.0.0.1 -p "$PORT" -d "$T/named/queries" -l "$SECS" -c 4 -q 100 -v >"$T/flat.out" 2>&1
        named_stop
        set -- $(perf "$T/fixed.out")
        fq=$1 fp=$2 fdone=$3 fsent=$4
        set -- $(perf "$T/flat.out")
        lq=$1 lp=$2
        rps=-
        if [ "$mode" = on ]; then
            "$BIN/d9" --store "$T/store" flush --endpoint "$EP" >/dev/null 2>&1
            rps=$("$BIN/d9" --store "$T/store" ps --format jsonl 2>/dev/null | grep "\"pid\":$NPID," |
                  sed 's/.*"first_ns":\([0-9]*\),"last_ns":\([0-9]*\),"records":\([0-9]*\).*/\1 \2 \3/' |
                  awk '{ if ($2 > $1) printf "%.0f", $3 / (($2 - $1) / 1e9); else print "-" }')
            [ -n "$rps" ] || rps=-
        fi
        [ "$fdone" = "$fsent" ] || echo "bench_uv_named: pair $p $mode: $fdone of $fsent queries answered at the fixed rate" >&2
        printf '%-5s %-4s %12.0f %8sus %12.0f %8sus %12s\n' "$p" "$mode" "$fq" "$fp" "$lq" "$lp" "$rps"
        echo "$mode $fq $fp $lq $lp $rps" >>"$T/results"
    done
    p=$((p + 1))
done

# median MODE COLUMN
median() {
    awk -v m="$1" -v c="$2" '$1 == m && $c != "-" && $c != "nan" {print $c}' "$T/results" | sort -n |
        awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) printf "%.1f\n", v[(NR+1)/2]; else printf "%.1f\n", (v[NR/2]+v[NR/2+1])/2}'
}
echo
echo "medians over $PAIRS pairs (overhead: throughput lost, latency added; target <= 1 %)"
printf '%-22s %12s %12s %10s\n' metric off on overhead
row() {     # row NAME COLUMN higher_is_better
    off=$(median off "$2"); on=$(median on "$2")
    ovh=$(awk -v a="$off" -v b="$on" -v h="$3" 'BEGIN { if (a + 0 == 0) print "nan";
          else printf "%+.2f %%", (h ? (a - b) / a : (b - a) / a) * 100 }')
    printf '%-22s %12s %12s %10s\n' "$1" "$off" "$on" "$ovh"
}
row "fixed-rate qps" 2 1
row "fixed-rate p99 (us)" 3 0
row "flat-out qps" 4 1
row "flat-out p99 (us)" 5 0
printf '%-22s %12s %12s\n' "records/s (on)" - "$(median on 6)"

# ---- per callback: bench_uv_idle, the same pairs -------------------------------
IDLE=$BUILD/bench/bench_uv_idle
if [ -x "$IDLE" ]; then
    N=2000000
    [ "${BENCH_QUICK:-0}" = 1 ] && N=300000
    : >"$T/idle"
    p=1
    while [ $p -le "$PAIRS" ]; do
        if [ $((p % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
        for mode in $order; do
            if [ "$mode" = on ]; then
                v=$(DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP LD_PRELOAD=$PRELOAD "$IDLE" $N | awk '{print $1}')
            else
                v=$("$IDLE" $N | awk '{print $1}')
            fi
            echo "$mode $v" >>"$T/idle"
        done
        p=$((p + 1))
    done
    off=$(awk '$1 == "off" {print $2}' "$T/idle" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    on=$(awk '$1 == "on" {print $2}' "$T/idle" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    echo
    echo "per callback (bench_uv_idle: an idle callback $N times; medians of $PAIRS pairs, CPU ns of the loop's thread per iteration)"
    printf '%-22s %12s %12s %10s\n' "idle iteration (CPU ns)" "$off" "$on" \
        "$(awk -v a="$off" -v b="$on" 'BEGIN { printf "%+.1f ns", b - a }')"
fi
