#!/bin/sh
# bench_metrics.sh — what --metrics costs the drain: two collectors, one
# without and one with --metrics (and a scraper reading it every 100 ms),
# each fed by bench_drain flat out (--mix demo: polls, wakes, queue depths,
# spawns, custom events; then --mix polls), in interleaved pairs of runs.
# The cost is the drain thread's CPU time (/proc/PID/schedstat of the main
# thread, ns) per record the collector drained (its status counter). Prints
# one line per run and, per mix, the medians and the spread (min..max) of
# both and the median of the paired ratios on/off.
#
#   BUILD=build sh tests/bench/bench_metrics.sh [RUNS] [MS]
# Needs make all, build/bench/bench_drain and tool_ctl. Never part of make test.
set -u
BUILD=${BUILD:-build}
RUNS=${1:-5}
MS=${2:-1500}
B=$BUILD/bench
BIN=$BUILD/bin
TBIN=$BUILD/tests/integration
for f in "$B/bench_drain" "$BIN/d9collectd" "$TBIN/tool_ctl"; do
    [ -x "$f" ] || { echo "bench-metrics: $f missing (make all bench-bins)"; exit 1; }
done
T=$(mktemp -d /tmp/d9bench-metrics.XXXXXX)
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT INT TERM
start() {   # start NAME [flags]: a collector of its own
    nm=$1; shift
    mkdir -p "$T/$nm/shm"
    "$BIN/d9collectd" --store "$T/$nm/store" --shm-dir "$T/$nm/shm" --endpoint "ipc://$T/$nm/c.sock" \
        --scan-ms 100 --perf-freq 0 "$@" >"$T/$nm.log" 2>&1 &
    eval "PID_$nm=$!"
    PIDS="$PIDS $!"
    n=0
    until "$TBIN/tool_ctl" "ipc://$T/$nm/c.sock" status >/dev/null 2>&1; do
        n=$((n + 1)); [ $n -lt 100 ] || { echo "bench-metrics: $nm did not start"; exit 1; }
        sleep 0.1
    done
}
cpu_ns() { cut -d' ' -f1 "/proc/$1/schedstat"; }
records() { "$TBIN/tool_ctl" "ipc://$T/$1/c.sock" status | sed -n 's/^records=//p'; }
start off
start on --metrics 127.0.0.1:0
MPORT=$(sed -n 's|.*metrics: http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/on.log")
( i=0; while [ $i -lt 100000 ]; do curl -s -o /dev/null "http://127.0.0.1:$MPORT/metrics"; sleep 0.1; i=$((i + 1)); done ) &
PIDS="$PIDS $!"
one() {     # one NAME MIX: ns of drain CPU per record
    eval "pid=\$PID_$1"
    c0=$(cpu_ns "$pid"); r0=$(records "$1")
    DIAL9_SHM_DIR="$T/$1/shm" DIAL9_COLLECTOR="ipc://$T/$1/c.sock" DIAL9_SAMPLER=off \
        "$B/bench_drain" --threads 1 --rate 0 --seconds-ms "$MS" --mix "$2" >"$T/load.out" 2>&1 ||
        { echo "bench-metrics: bench_drain failed: $(tail -n 1 "$T/load.out")"; exit 1; }
    "$TBIN/tool_ctl" "ipc://$T/$1/c.sock" flush >/dev/null 2>&1
    sleep 0.3
    c1=$(cpu_ns "$pid"); r1=$(records "$1")
    echo "$(( (c1 - c0) / (r1 - r0 > 0 ? r1 - r0 : 1) ))"
}
for mix in demo polls; do
    : >"$T/off.$mix"; : >"$T/on.$mix"; : >"$T/ratio.$mix"
    i=0
    while [ $i -lt "$RUNS" ]; do
        if [ $((i % 2)) -eq 0 ]; then a=$(one off $mix); b=$(one on $mix)
        else b=$(one on $mix); a=$(one off $mix); fi
        echo "$a" >>"$T/off.$mix"; echo "$b" >>"$T/on.$mix"
        echo "$b $a" | awk '{ printf "%.4f\n", $1 / $2 }' >>"$T/ratio.$mix"
        echo "mix=$mix run=$i off_ns_per_record=$a on_ns_per_record=$b"
        i=$((i + 1))
    done
    med() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%s (%s..%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
    echo "mix=$mix drain ns/record: off $(med "$T/off.$mix"), on $(med "$T/on.$mix"); paired on/off $(med "$T/ratio.$mix")"
done
