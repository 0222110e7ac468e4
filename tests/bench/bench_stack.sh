#!/bin/sh
# bench_stack.sh — d9collectd --stack-mode fp vs dwarf (`make bench`,
# `make bench-stack`): the collector's CPU per on-CPU sample and the stack
# depth reached, on prog_nofp (built without frame pointers; main ->
# nofp_outer -> nofp_middle -> nofp_inner) and on Debian's named (no frame
# pointers; under the libuv shim, loaded by dnsperf). Prints per mode and
# workload: samples, collector CPU ms, us of collector CPU per sample, % of
# samples with main, with uv_run, and complete (root frame _start or the
# thread entry clone/clone3).
# Usage: BUILD=build sh tests/bench/bench_stack.sh   (BENCH_QUICK=1: shorter)
set -u
. "$(dirname "$0")/../integration/named_env.sh"
BUILD=${BUILD:-build}
BIN=$(cd "$BUILD/bin" && pwd)
TBIN=$(cd "$BUILD/tests/integration" && pwd)
PRELOAD=$(cd "$BUILD/lib" && pwd)/libd9preload.so
NAMED=${NAMED:-/usr/sbin/named}
SECS=${BENCH_STACK_SECONDS:-5}
PORT=${BENCH_STACK_PORT:-53956}
[ "${BENCH_QUICK:-0}" = 1 ] && SECS=2

T=$(mktemp -d /tmp/d9bench-stack.XXXXXX)
COLPID=""
NPID=""
cleanup() {
    [ -n "$NPID" ] && kill -9 "$NPID" 2>/dev/null
    [ -n "$COLPID" ] && kill -TERM "$COLPID" 2>/dev/null && wait "$COLPID" 2>/dev/null
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
EP=ipc://$T/c.sock
d9() { "$BIN/d9" --store "$T/store" --endpoint "$EP" "$@"; }
cpu_ns() { awk '{print $1}' "/proc/$1/schedstat"; }   # CPU time in ns

col_start() {
    mkdir -p "$T/shm"
    "$BIN/d9collectd" --store "$T/store" --shm-dir "$T/shm" --endpoint "$EP" --scan-ms 100 \
        --stack-mode "$1" >>"$T/col.log" 2>&1 &
    COLPID=$!
    i=0
    until d9 status >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -gt 100 ] && { echo "bench_stack: collector did not start" >&2; exit 1; }
        sleep 0.1
    done
}
col_stop() { kill -TERM "$COLPID"; wait "$COLPID"; COLPID=""; }
sealed() {
    i=0
    while [ $i -lt 200 ]; do
        d9 flush >/dev/null 2>&1
        d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$1,.*\"state\":\"exited\"" && return 0
        i=$((i + 1)); sleep 0.1
    done
    return 1
}
# report MODE NAME PID CPU_NS
report() {
    d9 flame --pid "$3" --no-kernel >"$T/f.folded" 2>/dev/null
    awk -v mode="$1" -v name="$2" -v ns="$4" '
        { n = $NF; t += n; s = $0; sub(/ [0-9]+$/, "", s)
          if (s ~ /(^|;)main(;|$)/) m += n
          if (s ~ /(^|;)uv_run(;|$)/) u += n
          if (s ~ /^(_start|clone|clone3|__clone|__clone3)(;|$)/) c += n }
        END { ms = ns / 1e6
              printf "%-6s %-8s samples %6d  collector %7.0f ms  %7.1f us/sample  main %5.1f %%  uv_run %5.1f %%  complete %5.1f %%\n",
                     mode, name, t, ms, t ? ms * 1000 / t : 0, t ? 100 * m / t : 0,
                     t ? 100 * u / t : 0, t ? 100 * c / t : 0 }' "$T/f.folded"
}

named_setup "$T/named" "$PORT"

echo "bench_stack: collector CPU per on-CPU sample and stack depth, --stack-mode fp vs dwarf ($SECS s each)"
for mode in fp dwarf; do
    col_start "$mode"
    # prog_nofp: CPU-bound, no frame pointers
    c0=$(cpu_ns "$COLPID")
    DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP DIAL9_SAMPLER=perf \
        "$TBIN/prog_nofp" --seconds "$SECS" >/dev/null 2>&1 &
    P=$!
    wait "$P"
    sealed "$P"
    c1=$(cpu_ns "$COLPID")
    report "$mode" prog_nofp "$P" $((c1 - c0))
    # named under the shim, loaded by dnsperf
    if [ -x "$NAMED" ] && command -v dnsperf >/dev/null && [ -f "$PRELOAD" ]; then
        : >"$T/named/log"
        DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP LD_PRELOAD=$PRELOAD \
            "$NAMED" -g -4 -n 2 -c "$T/named/named.conf" >"$T/named/log" 2>&1 &
        NPID=$!
        named_running "$T/named/log" || { echo "bench_stack: named did not start" >&2; exit 1; }
        c0=$(cpu_ns "$COLPID")
        dnsperf -s 127.0.0.1 -p "$PORT" -d "$T/named/queries" -l "$SECS" -Q 20000 >/dev/null 2>&1
        kill -TERM "$NPID"
        wait "$NPID"
        sealed "$NPID"
        c1=$(cpu_ns "$COLPID")
        report "$mode" named "$NPID" $((c1 - c0))
        NPID=""
    else
        echo "$mode named: skipped (needs $NAMED, dnsperf, $PRELOAD)"
    fi
    col_stop
    grep -o "samples unwound with DWARF CFI.*" "$T/col.log" | sed "s/^/$mode   collector log: /"
    : >"$T/col.log"
done
