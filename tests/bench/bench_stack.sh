#!/bin/sh
# bench_stack.sh — d9collectd --stack-mode fp vs dwarf (`make bench`,
# `make bench-stack`): the collector's CPU per on-CPU sample and the stack
# depth reached, on prog_nofp (built without frame pointers; main ->
# nofp_outer -> nofp_middle -> nofp_inner) and on Debian's named (no frame
# pointers; under the libuv shim, loaded by dnsperf), on Debian's nvim
# (headless, a Lua libuv timer busy in its callback; LuaJIT's traces have no
# CFI) and Debian's kresd (knot-resolver; dnsperf, every query stubbed to a
# plain named: its Lua policy runs per query), both under the shim. Prints
# per mode and workload: samples, collector CPU ms, us of collector CPU per
# sample, % of samples with main (or, in a stripped program such as kresd,
# the function __libc_start_call_main calls), with uv_run, and complete (root frame
# _start or the thread entry clone/clone3), and the collector's DWARF
# unwind time per sample (its log line at the process's end).
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

NVIM=${NVIM:-/usr/bin/nvim}
KRESD=${KRESD:-/usr/sbin/kresd}
KPORT=${BENCH_STACK_KPORT:-53957}

T=$(mktemp -d /tmp/d9bench-stack.XXXXXX)
COLPID=""
NPID=""
UPID=""
cleanup() {
    [ -n "$NPID" ] && kill -9 "$NPID" 2>/dev/null
    [ -n "$UPID" ] && kill -9 "$UPID" 2>/dev/null
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
          if (s ~ /(^|;)main(;|$)/ || s ~ /(^|;)__libc_start_call_main;[^;]/) m += n
          if (s ~ /(^|;)uv_run(;|$)/) u += n
          if (s ~ /^(_start|clone|clone3|__clone|__clone3)(;|$)/) c += n }
        END { ms = ns / 1e6
              printf "%-6s %-8s samples %6d  collector %7.0f ms  %7.1f us/sample  main %5.1f %%  uv_run %5.1f %%  complete %5.1f %%",
                     mode, name, t, ms, t ? ms * 1000 / t : 0, t ? 100 * m / t : 0,
                     t ? 100 * u / t : 0, t ? 100 * c / t : 0 }' "$T/f.folded"
    # the unwinder's time per sample: logged when the collector drops the process
    i=0
    while [ $i -lt 30 ] && ! grep -q "pid $3: .*samples unwound" "$T/col.log"; do
        i=$((i + 1)); sleep 0.1
    done
    sed -n "s/.*pid $3: [0-9]* samples unwound with DWARF CFI, \([0-9.]*\) us each.*/  unwind \1 us\/sample/p" \
        "$T/col.log" | head -n 1 | tr -d '\n'
    echo
}

# nvim: a Lua libuv timer whose callback keeps the CPU busy, $SECS s
cat >"$T/busy.lua" <<LUA
local uv = vim.loop
local t0, sink = uv.hrtime(), 0
local t = uv.new_timer()
t:start(0, 1, function()
  local s = uv.hrtime()
  while uv.hrtime() - s < 5e6 do
    for i = 1, 1000 do sink = (sink * 31 + i) % 1000003 end
    local x = {}
    for i = 1, 50 do x[i] = tostring(i) end
    table.sort(x)
  end
  if uv.hrtime() - t0 > $SECS * 1e9 then
    t:stop(); t:close()
    vim.schedule(function() vim.cmd("qa!") end)
  end
end)
LUA
# kresd: every query of d9.test stubbed to a named on $PORT, no cache
mkdir -p "$T/kresd"
cat >"$T/kresd.conf" <<LUA
net.listen('127.0.0.1', $KPORT, { kind = 'dns' })
trust_anchors.remove('.')
policy.add(policy.all(policy.FLAGS('NO_CACHE')))
policy.add(policy.suffix(policy.STUB('127.0.0.1@$PORT'), { todname('d9.test.') }))
LUA
# traced MODE NAME: runs NAME's workload under the shim and reports it
traced() {
    case $2 in
    nvim)
        DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP LD_PRELOAD=$PRELOAD \
            "$NVIM" --headless --clean -u NONE -i NONE -c "luafile $T/busy.lua" >"$T/nvim.out" 2>&1 &
        NPID=$!
        c0=$(cpu_ns "$COLPID")
        i=0     # bounded: the script quits after $SECS s
        while kill -0 "$NPID" 2>/dev/null && [ $i -lt $((SECS * 10 + 300)) ]; do
            i=$((i + 1)); sleep 0.1
        done
        kill -9 "$NPID" 2>/dev/null
        wait "$NPID" ;;
    kresd)
        : >"$T/named/ulog"
        "$NAMED" -g -4 -n 1 -c "$T/named/named.conf" >"$T/named/ulog" 2>&1 &
        UPID=$!
        named_running "$T/named/ulog" || { echo "bench_stack: named did not start" >&2; exit 1; }
        DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP LD_PRELOAD=$PRELOAD \
            "$KRESD" -n -c "$T/kresd.conf" "$T/kresd" >"$T/kresd.log" 2>&1 &
        NPID=$!
        i=0
        until grep -q ":$(printf %04X "$KPORT") " /proc/net/udp; do  # listening
            i=$((i + 1)); [ $i -gt 100 ] && { echo "bench_stack: kresd did not start" >&2; exit 1; }
            sleep 0.1
        done
        c0=$(cpu_ns "$COLPID")
        dnsperf -s 127.0.0.1 -p "$KPORT" -d "$T/named/queries" -l "$SECS" -Q 5000 >/dev/null 2>&1
        kill -TERM "$NPID"
        wait "$NPID"
        kill -TERM "$UPID"
        wait "$UPID"
        UPID="" ;;
    esac
    sealed "$NPID"
    c1=$(cpu_ns "$COLPID")
    report "$1" "$2" "$NPID" $((c1 - c0))
    NPID=""
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
    if [ -x "$NVIM" ] && [ -f "$PRELOAD" ]; then
        traced "$mode" nvim
    else
        echo "$mode nvim: skipped (needs $NVIM, $PRELOAD)"
    fi
    if [ -x "$KRESD" ] && [ -x "$NAMED" ] && command -v dnsperf >/dev/null && [ -f "$PRELOAD" ]; then
        traced "$mode" kresd
    else
        echo "$mode kresd: skipped (needs $KRESD (knot-resolver), $NAMED, dnsperf, $PRELOAD)"
    fi
    col_stop
    grep -o "samples unwound with DWARF CFI.*" "$T/col.log" | sed "s/^/$mode   collector log: /"
    : >"$T/col.log"
done
