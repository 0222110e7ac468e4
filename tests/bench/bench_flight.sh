#!/bin/sh
# bench_flight.sh — disk written and kept per hour by the flight recorder
# (d9collectd --retain triggered) against --retain all, for a steady
# workload (bench_drain --mix demo at RATE events/s) with one trigger a
# minute (`d9 trigger --pid`, mid-minute) and the default window (10 s
# before, 2 s after: a fifth of the time).
#
# Time is scaled down by SCALE: a "minute" lasts 60/SCALE s and the window
# 10/SCALE s + 2/SCALE s, so the kept fraction (window / minute) is the
# real one. The per-hour figures are the run's bytes per second of real
# time x 3600: the workload's rate is real, and the kept fraction is the
# configuration's. Each kept window costs a few fixed bytes (a segment
# header, its metadata block, one piece per source segment); the scaled run
# pays them SCALE times a real minute, so its triggered figures are an upper
# bound.
#
#   written = bytes of every segment file sealed (all: every segment; triggered:
#             the segments later dropped + the kept windows cut out of them;
#             the index's own writes are not counted in either)
#   kept    = bytes of the segments left in the store after the run (what
#             --ship would upload)
#
#   BUILD=build sh tests/bench/bench_flight.sh [SCALE] [MINUTES] [RATE]
# Needs make all, build/bench/bench_drain and tool_ctl. Never part of make test.
set -u
BUILD=${BUILD:-build}
SCALE=${1:-6}
MINUTES=${2:-6}
RATE=${3:-50000}
B=$BUILD/bench
BIN=$BUILD/bin
TBIN=$BUILD/tests/integration
for f in "$B/bench_drain" "$BIN/d9collectd" "$BIN/d9" "$TBIN/tool_ctl"; do
    [ -x "$f" ] || { echo "bench-flight: $f missing (make all bench-bins)"; exit 1; }
done
T=$(mktemp -d /tmp/d9bench-flight.XXXXXX)
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT INT TERM
MIN_MS=$((60000 / SCALE))
LB=$((10000 / SCALE))
LF=$((2000 / SCALE))
RUN_MS=$((MINUTES * MIN_MS))
ms_sleep() { sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"; }

one() {     # one MODE: prints "MODE written kept segments elapsed_ms"
    m=$1
    d=$T/$m
    mkdir -p "$d/shm"
    ep=ipc://$d/c.sock
    "$BIN/d9collectd" --store "$d/store" --shm-dir "$d/shm" --endpoint "$ep" --scan-ms 100 \
        --perf-freq 0 --retain "$m" --trigger-lookback-ms $LB --trigger-lookforward-ms $LF \
        --store-mb 100000 >"$d/col.log" 2>&1 &
    cpid=$!
    PIDS="$PIDS $cpid"
    n=0
    until "$TBIN/tool_ctl" "$ep" status >/dev/null 2>&1; do
        n=$((n + 1)); [ $n -lt 100 ] || { echo "bench-flight: collector did not start"; exit 1; }
        sleep 0.1
    done
    t0=$(date +%s%N)
    DIAL9_SHM_DIR=$d/shm DIAL9_COLLECTOR=$ep DIAL9_SAMPLER=off "$B/bench_drain" --threads 2 \
        --rate "$RATE" --seconds-ms "$RUN_MS" --mix demo >"$d/load.out" 2>&1 &
    lpid=$!
    PIDS="$PIDS $lpid"
    i=0
    while [ $i -lt "$MINUTES" ]; do
        ms_sleep $((MIN_MS / 2))
        "$BIN/d9" --endpoint "$ep" trigger --pid "$lpid" --reason "minute $i" >>"$d/trig.out" 2>&1
        ms_sleep $((MIN_MS / 2))
        i=$((i + 1))
    done
    wait "$lpid"
    t1=$(date +%s%N)
    kill -TERM "$cpid"
    wait "$cpid"
    kept=$(sqlite3 "$d/store/index.sqlite" "SELECT coalesce(sum(bytes), 0) FROM segments")
    nseg=$(sqlite3 "$d/store/index.sqlite" "SELECT count(*) FROM segments")
    if [ "$m" = all ]; then
        written=$kept
    else    # "flight recorder: N kept windows written (B bytes), M segments dropped (B bytes), ..."
        written=$(sed -n 's/.*flight recorder: [0-9]* kept windows written (\([0-9]*\) bytes), [0-9]* segments dropped (\([0-9]*\) bytes).*/\1 \2/p' \
                  "$d/col.log" | awk '{ print $1 + $2 }')
    fi
    echo "$m ${written:-0} $kept $nseg $(( (t1 - t0) / 1000000 )) $(grep -c kept "$d/trig.out")"
    rm -rf "$d/store"
}

echo "bench-flight: bench_drain --mix demo, 2 threads, $RATE events/s; one trigger a minute, window" \
     "10 s before + 2 s after; time scaled 1:$SCALE ($MINUTES minutes of $MIN_MS ms, window $LB + $LF ms)"
one all >"$T/all.res"
one triggered >"$T/trig.res"
awk '
function mbh(b, ms) { return b / 1048576 * 3600000 / ms }
{ m[NR] = $1; w[NR] = $2; k[NR] = $3; s[NR] = $4; ms[NR] = $5; t[NR] = $6 }
END {
    printf "%-10s %14s %14s %10s %10s %9s\n", "retain", "written MB/h", "kept MB/h", "segments", "run ms", "triggers"
    for (i = 1; i <= NR; i++)
        printf "%-10s %14.1f %14.1f %10d %10d %9d\n", m[i], mbh(w[i], ms[i]), mbh(k[i], ms[i]), s[i], ms[i], t[i]
    if (NR == 2 && k[1] > 0)
        printf "triggered keeps %.1f%% of what all keeps and writes %.1f%% as much\n", 100 * k[2] / k[1] * ms[1] / ms[2], 100 * w[2] / w[1] * ms[1] / ms[2]
}' "$T/all.res" "$T/trig.res"
