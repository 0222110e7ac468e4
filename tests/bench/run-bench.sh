#!/bin/sh
# run-bench.sh — `make bench`: d9 side by side with LTTng-UST on this machine.
#
# Measures, in one run, and prints one table (every number with a ratio
# against a baseline measured in the same run, and the project's target
# beside it; targets are printed, never enforced):
#   1. hot path: ns/event for a 32-byte poll-start event: baseline (rdtsc +
#      store), d9 (ring reset between batches; and with d9collectd draining),
#      LTTng-UST (discard-mode session; and no session), d9 disabled at run
#      time (DIAL9_ENABLED=0) and compiled out (-DD9_DISABLE);
#   2. drain: events/s and MB/s d9collectd sustains from 1 and 2 producer
#      threads, its CPU use, and the offered rate where loss passes 0.1%,
#      next to lttng-consumerd at the same offered rates;
#   3. end to end: d9demo throughput with tracing off vs on, alternating runs,
#      and what one CPU-profile sample costs the CPU it is taken from
#      (bench_irq: the collector's per-CPU events, on cpu-clock timers and
#      on the scheduler tick, on and off in alternating 200 ms slices over
#      a compute loop on every CPU), for the bottom-up account of the
#      end-to-end overhead;
#   4. d9 sql: a GROUP BY over every poll of a 50 M-record synthetic store
#      and the same over a 1 % window, SQL beside the hand-written scan
#      (bench_sql).
#
# Isolation: everything lives in one mktemp -d directory: the d9 store, shm
# dir and control socket, and a private LTTNG_HOME for a session daemon
# started (as an unprivileged user when run as root, so that it never uses
# the system-wide /var/run/lttng) and torn down by this script, even on
# failure or ^C. Only processes this script started are ever signalled, by pid.
#
# Environment: BUILD (default build), BENCH_QUICK=1 (short runs),
# BENCH_KEEP=1 (keep the temp dir), BENCH_PROD_CPU / BENCH_CONS_CPU (CPUs for
# producers and for the collector/consumer daemons, default 0 and 1).
set -u
BUILD=${BUILD:-build}
B=$BUILD/bench
BIN=$BUILD/bin
QUICK=${BENCH_QUICK:-0}
PCPU=${BENCH_PROD_CPU:-0}
CCPU=${BENCH_CONS_CPU:-1}
NCPU=$(getconf _NPROCESSORS_ONLN)
[ "$NCPU" -lt 2 ] && CCPU=$PCPU

if [ "$QUICK" = 1 ]; then
    REPS=2; HOT_BATCHES=1000; PACED_BATCHES=400; SINGLES=50000
    DRAIN_MS=500; STEP_MS=300; E2E_RUNS=3; E2E_SECONDS=1; IRQ_SECONDS=2
else
    REPS=5; HOT_BATCHES=5000; PACED_BATCHES=2000; SINGLES=200000
    DRAIN_MS=2000; STEP_MS=1000; E2E_RUNS=16; E2E_SECONDS=3; IRQ_SECONDS=10
fi
IRQ_HZ_AMP=999              # bench_irq: the cost per sample, amplified 10x over the default
E2E_RUNS=${BENCH_E2E_PAIRS:-$E2E_RUNS}
case $E2E_RUNS in ''|*[!0-9]*|0) echo "run-bench: BENCH_E2E_PAIRS must be a positive integer, not '$E2E_RUNS'" >&2; exit 2;; esac
PACED_GAP_NS=500000        # 1000 events per 500 us = 2 M events/s offered
STEP_RATES="1000000 2000000 4000000 8000000 10000000 12000000 16000000 32000000 64000000 0"
BURST=1000; BURST_PAUSE_US=400   # the loss-onset section's burst row: 2.5 M events/s in bursts
LOAD_ARGS=""
LOSS_PPM=1000              # loss begins above 0.1 %
LT_HOT_SUBBUF=4M; LT_HOT_NSUB=8       # hot-path session: big enough to never discard
LT_LOAD_SUBBUF=256K; LT_LOAD_NSUB=4   # drain session: 1 MiB per CPU, like a d9 ring
D9_RING_KB=1024
# tmpfs store cap (oldest segments evicted beyond it): one flat-out drain run
# writes 3-4 GB here; a run whose segments are evicted before the flush
# cannot be counted from the index (the bench then warns). A third of the
# free memory, at most 8 GiB.
COL_STORE_MB=$(awk '/^MemAvailable:/ { m = int($2 / 1024 / 3); print (m > 8192 ? 8192 : m) }' /proc/meminfo)
LT_SETTLE_MS=200           # LTTng producer sleeps this long after registering (buffers set up)

T=$(mktemp -d /tmp/d9bench.XXXXXX) || { echo "bench: mktemp failed" >&2; exit 1; }
chmod 755 "$T"
# Regions, the d9 store and LTTng's trace output go to a memory-backed dir
# (tmpfs) so both daemons are measured, not this machine's disk; the LTTng
# home (sockets) and logs stay in $T.
M=$(mktemp -d /dev/shm/d9bench.XXXXXX 2>/dev/null) || M=$(mktemp -d "$T/mem.XXXXXX")
chmod 755 "$M"
R=$T/results          # key value lines
: >"$R"
COL_PID=""
LT_PIDS=""

say() { echo "bench: $*"; }
warn() { echo "bench: WARNING: $*" >&2; }
put() { echo "$1 $2" >>"$R"; }                     # put KEY VALUE
get() { awk -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? "n/a" : v) }' "$R"; }
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }   # kv FILE KEY
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
descendants() { for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }
# calc EXPR: awk arithmetic that prints n/a when any operand is n/a
calc() {
    case "$1" in *n/a*) echo n/a; return ;; esac
    v=$(awk "BEGIN { printf \"%.${2:-2}f\", ($1) }" 2>/dev/null) || v=n/a
    case "$v" in ""|*inf*|*nan*) v=n/a ;; esac
    echo "$v"
}

# ---- process control (only our own pids) ----------------------------------
stop_pids() {   # stop_pids PID...: TERM, wait up to 5 s, then KILL
    [ $# -eq 0 ] && return 0
    kill -TERM "$@" 2>/dev/null
    n=50
    while [ $n -gt 0 ]; do
        alive=""
        for p in "$@"; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [ -z "$alive" ] && return 0
        sleep 0.1; n=$((n - 1))
    done
    warn "killing stuck processes:$alive"
    kill -KILL $alive 2>/dev/null
}

# The collector samples its CPU profile on the scheduler tick where it can
# (a tracepoint: tracefs). systemd mounts tracefs at boot; a bare machine
# may not have it, and the bench would measure the cpu-clock fallback.
if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null &&
        say "mounted tracefs on /sys/kernel/tracing (the collector's tick profile needs it)"
fi

LT_HOME=$T/lttng
LT_OUT=$M/lttng
if [ "$(id -u)" -eq 0 ]; then
    LT_USER=65534
    mkdir -p "$LT_HOME" "$LT_OUT" && chown "$LT_USER:$LT_USER" "$LT_HOME" "$LT_OUT"
    AS_LT() { setpriv --reuid=$LT_USER --regid=$LT_USER --clear-groups \
        env HOME="$LT_HOME" LTTNG_HOME="$LT_HOME" "$@"; }
else
    mkdir -p "$LT_HOME" "$LT_OUT"
    AS_LT() { env HOME="$LT_HOME" LTTNG_HOME="$LT_HOME" "$@"; }
fi
LT_PIDFILE=$LT_HOME/.lttng/lttng-sessiond.pid

lttng_up() {
    command -v lttng-sessiond >/dev/null 2>&1 || { warn "lttng-sessiond not found"; return 1; }
    # consumerd inherits the affinity: it drains on the collector's CPU
    if ! AS_LT taskset -c "$CCPU" lttng-sessiond --background --no-kernel \
            >"$T/sessiond.log" 2>&1; then
        warn "lttng-sessiond did not start:"; tail -n 5 "$T/sessiond.log" >&2; return 1
    fi
    [ -f "$LT_PIDFILE" ] || { warn "no lttng-sessiond pid file at $LT_PIDFILE"; return 1; }
    LT_PIDS=$(cat "$LT_PIDFILE")
    say "lttng-sessiond pid $LT_PIDS (LTTNG_HOME=$LT_HOME, cpu $CCPU)"
}
lttng_down() {
    [ -z "$LT_PIDS" ] && return 0
    AS_LT timeout 20 lttng destroy -a >/dev/null 2>&1
    spid=$LT_PIDS
    pids="$spid $(descendants "$spid")"
    stop_pids $pids
    LT_PIDS=""
}
lt() { AS_LT timeout 60 lttng "$@" >>"$T/lttng.log" 2>&1 || { warn "lttng $* failed (see below)"; tail -n 5 "$T/lttng.log" >&2; return 1; }; }
lt_session() {  # lt_session NAME SUBBUF NSUB
    lt create "$1" --output="$LT_OUT/trace-$1" &&
    lt enable-channel -u ch0 --session="$1" --discard --subbuf-size="$2" --num-subbuf="$3" &&
    lt enable-event -u -c ch0 --session="$1" 'd9bench:*'
}
# LTTng 2.13 sometimes reports a discarded count with bit 63 set (seen with
# two producers on one CPU); the low 63 bits are the count: strip and note it.
strip63() {
    v=$1
    if [ -n "$v" ] && [ ${#v} -ge 19 ]; then   # python3 is a base dependency; sh cannot do u64
        w=$(python3 -c "import sys; v = int(sys.argv[1]); print(v - (1 << 63) if v >= 1 << 63 else v)" "$v")
        [ "$w" != "$v" ] && put lt.bit63 1
        v=$w
    fi
    echo "$v"
}
lt_discarded() { strip63 "$(AS_LT lttng list "$1" 2>/dev/null | sed -n 's/.*Discarded events: *\([0-9]*\).*/\1/p' | head -n 1)"; }
# lt_stop SESSION: stop (waits for the consumer) and print the discarded count
# `lttng stop` warns about (0 when it does not warn)
lt_stop() {
    AS_LT timeout 60 lttng stop "$1" >"$T/stop.out" 2>&1 || { warn "lttng stop $1 failed: $(tail -n 2 "$T/stop.out" | tr '\n' ' ')"; return 1; }
    n=$(sed -n 's/.*Warning: \([0-9]*\) events were discarded.*/\1/p' "$T/stop.out" | head -n 1)
    strip63 "${n:-0}"
}
lt_consumer_ticks() {   # utime+stime of every lttng-consumerd of our session daemon
    s=0
    [ -n "$LT_PIDS" ] || { echo 0; return; }
    for p in $(descendants "$LT_PIDS"); do
        case "$(cat /proc/$p/comm 2>/dev/null)" in
        lttng-consumerd) t=$(awk '{ print $14 + $15 }' /proc/$p/stat 2>/dev/null); s=$((s + ${t:-0})) ;;
        esac
    done
    echo $s
}

cleanup() {
    trap - EXIT INT TERM HUP
    lttng_down
    [ -n "$COL_PID" ] && stop_pids $COL_PID
    if [ "${BENCH_KEEP:-0}" = 1 ]; then say "kept $T and $M"; else rm -rf "$T" "$M"; fi
}
trap cleanup EXIT
trap 'echo "bench: interrupted" >&2; exit 130' INT TERM HUP

for b in bench_hot bench_hot_off bench_lttng bench_drain; do
    [ -x "$B/$b" ] || warn "$B/$b missing (run 'make bench'): its rows will read n/a"
done
CLK_TCK=$(getconf CLK_TCK)
say "machine: $NCPU CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1), producers on cpu $PCPU, daemons on cpu $CCPU"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
say "temp dirs $T and $M (tmpfs); quick=$QUICK; load average $LOAD0"

# ---- d9 collector ----------------------------------------------------------
# hot path and drain: the agent's in-process sampler off (its timer signals
# would land inside timed batches); the end-to-end runs keep the defaults.
D9ENV_E2E="DIAL9_SHM_DIR=$M/shm DIAL9_COLLECTOR=ipc://$T/c.sock DIAL9_RING_KB=$D9_RING_KB"
D9ENV="$D9ENV_E2E DIAL9_SAMPLER=off"
mkdir -p "$M/shm" "$M/shm-solo"
col_up() {     # col_up [extra d9collectd flags]: a fresh store each time
    [ -x "$BIN/d9collectd" ] || { warn "$BIN/d9collectd missing"; return 1; }
    COL_N=$((${COL_N:-0} + 1))
    rm -f "$T/c.sock"
    taskset -c "$CCPU" "$BIN/d9collectd" --store "$M/store$COL_N" --shm-dir "$M/shm" \
        --endpoint "ipc://$T/c.sock" --store-mb $COL_STORE_MB "$@" >"$T/collector.log" 2>&1 &
    COL_PID=$!
    n=50
    while [ $n -gt 0 ] && [ ! -S "$T/c.sock" ]; do
        kill -0 "$COL_PID" 2>/dev/null || break
        sleep 0.1; n=$((n - 1))
    done
    if [ ! -S "$T/c.sock" ] || ! kill -0 "$COL_PID" 2>/dev/null; then
        warn "d9collectd did not come up:"; tail -n 5 "$T/collector.log" >&2
        stop_pids $COL_PID; COL_PID=""; return 1
    fi
    say "d9collectd pid $COL_PID (store $M/store$COL_N, cpu $CCPU${1:+, $*})"
}
col_ticks() { [ -n "$COL_PID" ] && awk '{ print $14 + $15 }' "/proc/$COL_PID/stat" 2>/dev/null || echo 0; }
colstat() { "$B/bench_colstat" "ipc://$T/c.sock" "$@" 2>>"$T/colstat.err"; }

# ---- 1. hot path -----------------------------------------------------------
HOT_OPTS="--cpu $PCPU --batches $HOT_BATCHES --singles $SINGLES"
PACED_OPTS="--cpu $PCPU --batches $PACED_BATCHES --singles 0 --gap-ns $PACED_GAP_NS"
# hot_once NAME CMD...: one run; appends its numbers under NAME
hot_once() {
    name=$1; shift
    out=$T/hot.out
    if ! "$@" --name "$name" >"$out" 2>"$T/hot.err"; then
        warn "$name failed: $(tail -n 3 "$T/hot.err" | tr '\n' ' ')"; return 1
    fi
    for k in batch_med batch_p99 single_med single_p99; do
        echo "$(kv "$out" "$k")" >>"$T/hot.$name.$k"
    done
    echo "$(kv "$out" lost)" >>"$T/hot.$name.lost"
    echo "$(kv "$out" events)" >>"$T/hot.$name.events"
    npt=$(kv "$out" ns_per_tick); [ -n "$npt" ] && put tsc.ns_per_tick "$npt"
    e=$(kv "$out" empty_pair_ticks); [ -n "$e" ] && put tsc.empty_pair "$e"
    return 0
}
hot_reduce() {  # medians over the repetitions -> results
    for f in "$T"/hot.*.batch_med; do
        [ -f "$f" ] || continue
        name=$(basename "$f" .batch_med); name=${name#hot.}
        for k in batch_med batch_p99 single_med single_p99; do
            put "hot.$name.$k" "$(median <"$T/hot.$name.$k")"
        done
        put "hot.$name.lost" "$(awk '{ s += $1 } END { print s + 0 }' "$T/hot.$name.lost")"
        put "hot.$name.events" "$(awk '{ s += $1 } END { print s + 0 }' "$T/hot.$name.events")"
        put "hot.$name.reps" "$(wc -l <"$T/hot.$name.batch_med" | tr -d ' ')"
    done
}

say "[1/3] hot path: $REPS rounds of every variant, $HOT_BATCHES batches x 1000 events each"
i=1
while [ $i -le $REPS ]; do
    say "  round $i/$REPS: baseline, ring primitives, d9 (reset), d9 disabled, compiled out, LTTng without session"
    hot_once baseline "$B/bench_hot_off" --variant baseline $HOT_OPTS
    hot_once baseline_call "$B/bench_hot_off" --variant baseline-call $HOT_OPTS
    hot_once ring_inline "$B/bench_hot" --variant ring-inline --shm-dir "$M/shm-solo" $HOT_OPTS
    hot_once d9_reset env DIAL9_SAMPLER=off DIAL9_SHM_DIR="$M/shm-solo" DIAL9_COLLECTOR="ipc://$T/none.sock" \
        DIAL9_RING_KB=$D9_RING_KB "$B/bench_hot" --variant d9 --reset $HOT_OPTS
    hot_once d9_disabled env DIAL9_ENABLED=0 DIAL9_SHM_DIR="$M/shm-solo" \
        DIAL9_COLLECTOR="ipc://$T/none.sock" "$B/bench_hot" --variant d9 $HOT_OPTS
    hot_once d9_compiled_out "$B/bench_hot_off" --variant compiled-out $HOT_OPTS
    hot_once lttng_nosession env LTTNG_UST_REGISTER_TIMEOUT=0 LTTNG_HOME="$T/nolttng" \
        "$B/bench_lttng" hot $HOT_OPTS
    i=$((i + 1))
done
rm -f "$M"/shm-solo/* 2>/dev/null

col_up && HAVE_COL=1 || HAVE_COL=0
lttng_up && lt_session hot $LT_HOT_SUBBUF $LT_HOT_NSUB && lt start hot && HAVE_LT=1 || HAVE_LT=0
say "[1/3] paced variants (2 M events/s offered, daemons draining on cpu $CCPU): d9 + d9collectd, LTTng-UST session"
i=1
while [ $i -le $REPS ]; do
    say "  round $i/$REPS"
    # same buffer memory as the LTTng hot session (8 x 4 MiB per CPU)
    [ $HAVE_COL = 1 ] && hot_once d9_live env $D9ENV DIAL9_RING_KB=32768 "$B/bench_hot" --variant d9 $PACED_OPTS
    # the tracing user must be able to read the binary: it is run from the build tree
    [ $HAVE_LT = 1 ] && hot_once lttng AS_LT "$B/bench_lttng" hot $PACED_OPTS
    i=$((i + 1))
done
if [ $HAVE_LT = 1 ]; then
    lt_stop hot >/dev/null
    put lt.hot.discarded "$(lt_discarded hot)"
    lt destroy hot
    rm -rf "$LT_OUT/trace-hot"
fi
hot_reduce

# ---- 2. drain ----------------------------------------------------------------
# d9_load KEY THREADS RATE MS: one bench_drain run against d9collectd.
# kept/bytes come from the collector's own cumulative counters (records and
# bytes it wrote to segments), read before the run and after a flush.
d9_load() {
    colstat >"$T/cs0" || { warn "collector status failed: $(tail -n 1 "$T/colstat.err")"; return 1; }
    c0=$(col_ticks)
    if ! env $D9ENV "$B/bench_drain" --threads "$2" --rate "$3" --seconds-ms "$4" \
            --cpu "$PCPU" $LOAD_ARGS >"$T/load.out" 2>"$T/load.err"; then
        warn "bench_drain $2 threads at $3/s failed: $(tail -n 2 "$T/load.err" | tr '\n' ' ')"
        return 1
    fi
    c1=$(col_ticks)     # CPU over the producing window (plus the exit); flush not included
    colstat --flush >"$T/cs1" || { warn "collector flush failed: $(tail -n 1 "$T/colstat.err")"; return 1; }
    off=$(kv "$T/load.out" offered); lost=$(kv "$T/load.out" lost); el=$(kv "$T/load.out" elapsed)
    pid=$(kv "$T/load.out" pid)
    # our poll-start records as indexed (the flush sealed the segments); the
    # collector also writes its perf samples of the process: counted apart
    q=$(sqlite3 -readonly "$M/store$COL_N/index.sqlite" "SELECT coalesce(sum(s.n_poll_start),0), coalesce(sum(s.records),0) FROM segments s JOIN processes p ON p.id = s.process_id WHERE p.pid = $pid;" 2>>"$T/sqlite.err")
    kept=$(echo "$q" | cut -d'|' -f1); allrec=$(echo "$q" | cut -d'|' -f2)
    [ -n "$kept" ] || { warn "$1: index query failed: $(tail -n 1 "$T/sqlite.err")"; kept=n/a; allrec=n/a; }
    put "$1.offered" "$off"; put "$1.lost" "$lost"; put "$1.elapsed" "$el"
    put "$1.kept" "$kept"
    put "$1.other_records" "$(calc "$allrec - $kept" 0)"
    put "$1.col_records" "$(( $(kv "$T/cs1" records) - $(kv "$T/cs0" records) ))"
    put "$1.attach_ms" "$(kv "$T/load.out" attach_ms)"
    put "$1.bells" "$(kv "$T/load.out" bells)"   # doorbell rings = FUTEX_WAKE calls of the producer
    put "$1.col_lost" "$(( $(kv "$T/cs1" lost) - $(kv "$T/cs0" lost) ))"
    put "$1.cpu_s" "$(calc "($c1 - $c0) / $CLK_TCK" 3)"
    put "$1.bytes" "$(( $(kv "$T/cs1" bytes) - $(kv "$T/cs0" bytes) ))"
    # +1: the adoption probe event recorded before the timed load (a mix of
    # record types is not all poll starts: not checked)
    case "$LOAD_ARGS" in *--mix*) kept=n/a ;; esac
    if [ "$kept" != n/a ] && [ "$kept" -ne $((off - lost + 1)) ]; then
        warn "$1: the index holds $kept poll-start records, the agent recorded $((off - lost + 1))"
    fi
}
# lt_load KEY THREADS RATE MS: the same offered load through LTTng-UST, in a
# fresh discard-mode session per run (so the discarded counter starts at 0)
LT_SEQ=0
lt_load() {
    LT_SEQ=$((LT_SEQ + 1)); sess=load$LT_SEQ
    lt_session $sess $LT_LOAD_SUBBUF $LT_LOAD_NSUB || return 1
    c0=$(lt_consumer_ticks)
    lt start $sess || return 1
    if ! AS_LT "$B/bench_lttng" load --threads "$2" --rate "$3" --seconds-ms "$4" \
            --cpu "$PCPU" --settle-ms $LT_SETTLE_MS $LOAD_ARGS >"$T/load.out" 2>"$T/load.err"; then
        warn "bench_lttng load $2 threads at $3/s failed: $(tail -n 2 "$T/load.err" | tr '\n' ' ')"
        lt destroy $sess; return 1
    fi
    ds=$(lt_stop $sess)             # waits until the consumer has the data
    c1=$(lt_consumer_ticks)
    d=$(lt_discarded $sess)
    [ "$ds" = "$d" ] || warn "$1: lttng stop says $ds discarded, lttng list says $d"
    off=$(kv "$T/load.out" offered); el=$(kv "$T/load.out" elapsed)
    put "$1.offered" "$off"; put "$1.lost" "${d:-n/a}"; put "$1.elapsed" "$el"
    put "$1.kept" "$(calc "$off - ${d:-n/a}" 0)"
    put "$1.cpu_s" "$(calc "($c1 - $c0) / $CLK_TCK" 3)"
    put "$1.bytes" "$(du -sb "$LT_OUT/trace-$sess" 2>/dev/null | awk '{ print $1 }')"
    lt destroy $sess
    rm -rf "$LT_OUT/trace-$sess"
}

# ---- the machine's floor for writing into tmpfs ---------------------------------
# Both daemons write their output to tmpfs. A VM whose memory the hypervisor
# backs lazily makes the first write to every guest page expensive (a fault
# in the host): seen on the development VM as 0.4-0.5 GB/s against 3-4 GB/s
# for pages the guest has touched before, and the kernel hands out untouched
# pages for a long time after boot (freed pages are not preferred). That is
# the machine, not the daemon: dd first touches most of the free memory once
# (WARM_MB, the "first touch" rate; fast on a machine that is warm already),
# frees it, then measures the warm rate into a new file with 1 MiB writes,
# what d9collectd does. The warm rate is the floor any writer meets.
AVAIL_MB=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
WARM_MB=$((AVAIL_MB * 6 / 10)); [ "$WARM_MB" -gt 16384 ] && WARM_MB=16384
[ "$WARM_MB" -lt "$COL_STORE_MB" ] && WARM_MB=$COL_STORE_MB
FLOOR_MB=2048; [ "$FLOOR_MB" -gt "$WARM_MB" ] && FLOOR_MB=$WARM_MB
if [ "$QUICK" = 1 ]; then WARM_MB=512; FLOOR_MB=512; fi
dd_mbs() {      # dd_mbs FILE MIB: MB/s of writing MIB MiB into the new FILE, on the daemons' CPU
    t0=$(date +%s%N)
    taskset -c "$CCPU" dd if=/dev/zero of="$1" bs=1M count="$2" 2>/dev/null || { echo n/a; return; }
    t1=$(date +%s%N)
    calc "$2 * 1048576 / (($t1 - $t0) / 1e9) / 1e6" 0
}
say "[2/3] tmpfs: first touch of $WARM_MB MiB of guest memory, then the write floor on warm pages ($FLOOR_MB MiB)"
put floor.warm_mb "$WARM_MB"; put floor.mb "$FLOOR_MB"
put floor.cold "$(dd_mbs "$M/floor" $WARM_MB)"; rm -f "$M/floor"
put floor.warm "$(dd_mbs "$M/floor" $FLOOR_MB)"; rm -f "$M/floor"

HAVE_LTL=$HAVE_LT
say "[2/3] drain: flat out from 1 and 2 producer threads for $DRAIN_MS ms each (d9 ring ${D9_RING_KB} KiB/thread, LTTng $LT_LOAD_NSUB x $LT_LOAD_SUBBUF/CPU)"
for n in 1 2; do
    if [ $HAVE_COL = 1 ]; then say "  d9, $n thread(s)"; d9_load "drain.d9.$n" $n 0 $DRAIN_MS; fi
    if [ $HAVE_LTL = 1 ]; then say "  LTTng, $n thread(s)"; lt_load "drain.lt.$n" $n 0 $DRAIN_MS; fi
done
# the same drain for d9demo's mix of record types (the end-to-end records):
# the flat-out cost the collector's cost at the demo's rate compares with
if [ $HAVE_COL = 1 ]; then
    say "  d9, 1 thread, d9demo's mix of records"
    LOAD_ARGS="--mix demo"; d9_load drain.d9mix 1 0 $DRAIN_MS; LOAD_ARGS=""
fi
# the machine's floor under every drain deadline: how long the daemons' CPU
# goes away from a thread that never yields (SCHED_FIFO: no guest task
# preempts it; what is left is interrupts and the host taking the vCPU)
GAPS_MS=5000; [ "$QUICK" = 1 ] && GAPS_MS=1000
say "[2/3] cpu $CCPU's own stalls: a SCHED_FIFO spinner for $GAPS_MS ms"
if "$B/bench_cpu_gaps" --cpu "$CCPU" --ms $GAPS_MS >"$T/gaps.out" 2>&1; then
    for k in policy over_1ms over_limit limit_us max_us; do put "gaps.$k" "$(kv "$T/gaps.out" $k)"; done
else
    warn "bench_cpu_gaps failed: $(tail -n 1 "$T/gaps.out")"
fi
say "[2/3] loss onset: 1 thread, offered rate stepped up ($STEP_MS ms per step)"
for r in $STEP_RATES; do
    label=$r; [ "$r" = 0 ] && label="flat-out"
    say "  offered $label events/s"
    [ $HAVE_COL = 1 ] && d9_load "step.d9.$r" 1 "$r" $STEP_MS
    [ $HAVE_LTL = 1 ] && lt_load "step.lt.$r" 1 "$r" $STEP_MS
done
# bursts: BURST events at once, then a BURST_PAUSE_US sleep (what a
# pacing timer misses: the doorbell's case)
LOAD_ARGS="--burst $BURST --pause-us $BURST_PAUSE_US"
say "  bursts of $BURST events every $BURST_PAUSE_US us"
[ $HAVE_COL = 1 ] && d9_load step.d9.burst 1 0 $DRAIN_MS
[ $HAVE_LTL = 1 ] && lt_load step.lt.burst 1 0 $DRAIN_MS
LOAD_ARGS=""

# ---- 3. end to end ------------------------------------------------------------
# d9demo with tracing off (DIAL9_ENABLED=0) and on (traced, a fresh
# d9collectd with default settings draining on the same 2 CPUs), in pairs
# whose order alternates (off,on),(on,off),... so slow drift hits both
# sides equally. The collector runs through the whole series: in the off
# runs it is idle (nothing traced: its per-CPU sampling events are off, it
# wakes for its scans only), so the on runs carry all of tracing's cost,
# the profile's interrupts included; its CPU in the off runs is reported.
# Every run does the same work (--work-calibration fixed once
# for the whole bench: polls are fixed amounts of computation). Per run:
# tasks/s, the demo's CPU (its own rusage, printed on its last line) and the
# collector's CPU (schedstat, ns) over the run and its end.
lttng_down          # LTTng is done: its daemons must not steal CPU from the demo
col_ns() { [ -n "$COL_PID" ] && cut -d' ' -f1 "/proc/$COL_PID/schedstat" 2>/dev/null || echo 0; }
E2E_CAL=$("$BIN/d9demo" --seconds 0.2 --tasks 10 --no-trace 2>/dev/null | sed -n 's/.*work calibration \([0-9.]*\).*/\1/p')
E2E_ARGS="--tasks 1000 --work-calibration ${E2E_CAL:-1000}"
# Two series: the demo with a worker per CPU (the target's workload: every
# collector wake-up takes a CPU from a busy worker), and, on 2 CPUs or more,
# with one CPU left to spare (a sidecar on a host with a core to spare).
E2E_SPARE_WORKERS=$((NCPU - 1))
e2e_once() {    # e2e_once off|on PREFIX DEMO_ARGS...
    mode=$1; pfx=$2; shift 2
    k0=$(col_ns)
    if [ "$mode" = off ]; then
        env DIAL9_ENABLED=0 "$BIN/d9demo" --seconds $E2E_SECONDS $E2E_ARGS "$@" >"$T/demo.out" 2>"$T/demo.err"
    else
        env $D9ENV_E2E "$BIN/d9demo" --seconds $E2E_SECONDS $E2E_ARGS "$@" >"$T/demo.out" 2>"$T/demo.err"
    fi || { warn "d9demo ($mode) failed: $(tail -n 2 "$T/demo.err" | tr '\n' ' ')"; return 1; }
    sleep 0.5           # the collector finishes the process (final drain, seal, index)
    k1=$(col_ns)
    line=$(sed -n 's/^d9demo: \([0-9]*\) tasks in \([0-9.]*\) s .*, \([0-9]*\) events lost.*, cpu \([0-9.]*\) s$/\1 \2 \3 \4/p' "$T/demo.out")
    [ -n "$line" ] || { warn "d9demo ($1): no result line in: $(cat "$T/demo.out")"; return 1; }
    # mode tasks seconds lost demo_cpu_s collector_cpu_s
    echo "$mode $line $(calc "($k1 - $k0) / 1e9" 6)" >>"$T/$pfx.runs"
}
e2e_series() {  # e2e_series PREFIX LABEL DEMO_ARGS...: the pairs, then their statistics
    pfx=$1; label=$2; shift 2
    say "[3/3] end to end ($label): d9demo $E2E_ARGS $*, $E2E_RUNS pairs of ${E2E_SECONDS}s runs, tracing off and on, alternating"
    colstat >"$T/cs0" 2>/dev/null
    i=1
    while [ $i -le $E2E_RUNS ]; do
        if [ $((i % 2)) = 1 ]; then first=off; second=on; else first=on; second=off; fi
        say "  pair $i/$E2E_RUNS: $first, $second"
        e2e_once $first "$pfx" "$@" && e2e_once $second "$pfx" "$@"
        i=$((i + 1))
    done
    colstat --flush >"$T/cs1" 2>/dev/null
    put $pfx.recorded "$(( $(kv "$T/cs1" records) - $(kv "$T/cs0" records) ))"
    put $pfx.calibration "${E2E_CAL:-n/a}"
    e2e_stats "$T/$pfx.runs" "$pfx" >>"$R"
}
# The profile's share, measured with no collector running: the cost of one
# sample on a cpu-clock timer at IRQ_HZ_AMP and on the tick at the tick rate
# (enough samples to see them above the noise), and the default frequency
# on the collector's default clock directly (a small signal: long runs).
irq_run() {     # irq_run KEY CLOCK HZ SECONDS
    if [ -x "$B/bench_irq" ]; then
        "$B/bench_irq" --clock "$2" --hz "$3" --seconds "$4" >"$T/irq.$1" 2>"$T/irq.err" ||
            warn "bench_irq --clock $2 --hz $3 failed: $(tail -n 1 "$T/irq.err")"
        for k in clock rate samples overhead_pct us_per_sample skipped; do
            v=$(kv "$T/irq.$1" $k); [ -n "$v" ] && put irq.$1.$k "$v"
        done
    fi
}
stop_pids $COL_PID; COL_PID=""
IRQ_HZ_DEF=$("$BIN/d9collectd" --print-config 2>/dev/null | sed -n 's/^perf-freq[ =]*\([0-9]*\).*/\1/p')
IRQ_HZ_DEF=${IRQ_HZ_DEF:-99}
say "[3/3] profiler: one sample's cost, per-CPU events on/off in 200 ms slices: cpu-clock at $IRQ_HZ_AMP Hz, the tick at its rate, the default ($IRQ_HZ_DEF Hz)"
irq_run cc cpu-clock $IRQ_HZ_AMP $IRQ_SECONDS
irq_run tk tick $IRQ_HZ_AMP $((2 * IRQ_SECONDS))
# the default clock: the tick where it can be sampled (bench_irq says
# skipped otherwise), as the collector chooses
if [ "$(get irq.tk.skipped)" = n/a ]; then IRQ_DEF_CLOCK=tick; else IRQ_DEF_CLOCK=cpu-clock; fi
irq_run def $IRQ_DEF_CLOCK $IRQ_HZ_DEF $((2 * IRQ_SECONDS))
put irq.def.hz $IRQ_HZ_DEF
if [ -x "$BIN/d9demo" ] && [ $HAVE_COL = 1 ]; then
    rm -rf "$M"/store*
    col_up || HAVE_COL=0
    # what the end-to-end collector samples on (its start-up log line,
    # written after the socket appears: the tick is checked first)
    n=20
    while [ $n -gt 0 ] && ! grep -q 'perf: sampling\|perf: per-CPU events not' "$T/collector.log"; do
        sleep 0.1; n=$((n - 1))
    done
    sed -n 's/.*perf: sampling \(.*\)/\1/p' "$T/collector.log" | head -n 1 >"$T/col.perf"
fi
e2e_stats() {   # e2e_stats RUNS_FILE PREFIX: pairs in run order -> mean, 95 % t interval
    python3 - "$1" "$2" <<'PY'
import statistics as st, sys
runs = [l.split() for l in open(sys.argv[1])]
prefix = sys.argv[2]
off = [r for r in runs if r[0] == "off"]; on = [r for r in runs if r[0] == "on"]
n = min(len(off), len(on))
if n < 2:
    sys.exit(0)
# two-sided 95 % Student t for n - 1 degrees of freedom: the table up to 30
# (BENCH_E2E_PAIRS may be anything), the Cornish-Fisher expansion beyond
# (within 0.001 there)
T95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14,
       2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05,
       2.05, 2.04]
df, z = n - 1, 1.959964
t = T95[df - 1] if df <= len(T95) else \
    z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
def put(k, v): print(f"{prefix}.{k} {v}")
tput = lambda r: int(r[1]) / float(r[2])
cpu_off = lambda r: float(r[4]) * 1e6 / int(r[1])                 # us per task
cpu_on = lambda r: (float(r[4]) + float(r[5])) * 1e6 / int(r[1])
ratios = [tput(on[k]) / tput(off[k]) for k in range(n)]
cratios = [cpu_on(on[k]) / cpu_off(off[k]) for k in range(n)]
for name, v in (("tput", ratios), ("cpu", cratios)):
    m = st.mean(v); h = t * st.stdev(v) / n ** 0.5
    sign = 1 if name == "cpu" else -1       # overhead: throughput lost, CPU gained
    put(f"{name}.overhead", f"{100 * sign * (m - 1):.2f}")
    put(f"{name}.ci", f"{100 * h:.2f}")
    put(f"{name}.median_overhead", f"{100 * sign * (st.median(v) - 1):.2f}")
put("pairs", n)
for mode, rs in (("off", off), ("on", on)):
    put(f"{mode}.median", f"{st.median([tput(r) for r in rs]):.0f}")
    put(f"{mode}.min", f"{min(tput(r) for r in rs):.0f}")
    put(f"{mode}.max", f"{max(tput(r) for r in rs):.0f}")
    put(f"{mode}.lost", sum(int(r[3]) for r in rs))
    tasks = sum(int(r[1]) for r in rs)
    put(f"{mode}.us_task", f"{sum(float(r[4]) for r in rs) * 1e6 / tasks:.2f}")
    put(f"{mode}.col_us_task", f"{sum(float(r[5]) for r in rs) * 1e6 / tasks:.3f}")
    put(f"{mode}.tasks", tasks)
PY
}
# The collector's cost per record at the demo's rate in steady state: one
# traced d9demo (a worker per CPU) for STEADY_S seconds; the collector's CPU
# (all its threads) and records counted from 2 s in to 1 s before the end,
# so the process's start and end (adoption, first maps reads, the final
# drain and seal), which the per-task figures of the short runs carry, are
# out.
col_all_ns() { cat /proc/"$COL_PID"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
e2e_steady() {
    STEADY_S=$((3 * E2E_SECONDS + 3))
    say "[3/3] the collector at the demo's rate, steady state: one ${STEADY_S}s traced run, counted from 2 s to $((STEADY_S - 1)) s"
    env $D9ENV_E2E "$BIN/d9demo" --seconds $STEADY_S $E2E_ARGS >"$T/steady.out" 2>&1 &
    dp=$!
    sleep 2
    colstat >"$T/st0" 2>/dev/null; a0=$(col_all_ns); w0=$(date +%s.%N)
    sleep $((STEADY_S - 3))
    colstat >"$T/st1" 2>/dev/null; a1=$(col_all_ns); w1=$(date +%s.%N)
    wait $dp
    n=$(( $(kv "$T/st1" records) - $(kv "$T/st0" records) ))
    put steady.records "$n"
    put steady.seconds "$(calc "$w1 - $w0" 3)"
    put steady.col_ns "$((a1 - a0))"
}
if [ -x "$BIN/d9demo" ] && [ $HAVE_COL = 1 ]; then
    e2e_series e2e "a worker per CPU"
    [ "$E2E_SPARE_WORKERS" -ge 1 ] && e2e_series e2e_spare "a CPU to spare" --workers $E2E_SPARE_WORKERS
    e2e_steady
else
    warn "no d9demo or no collector: end-to-end rows will read n/a"
fi

# ---- report ----------------------------------------------------------------
hot_row() {     # hot_row KEY LABEL
    m=$(calc "$(get "hot.$1.batch_med")" 2); p=$(calc "$(get "hot.$1.batch_p99")" 2)
    sm=$(calc "$(get "hot.$1.single_med")" 1); sp=$(calc "$(get "hot.$1.single_p99")" 1)
    case "$sm" in -*) sm="-"; sp="-" ;; esac
    base=$(get hot.baseline.batch_med)
    x=$(calc "$m / $base" 2)
    case "$m" in n/a) x=n/a ;; esac
    printf '  %-44s %8s %8s %8s %8s %7sx  %s\n' "$2" "$m" "$p" "$sm" "$sp" "$x" "${3:-}"
}
report_hot() {
    base=$(get hot.baseline.batch_med)
    d9r=$(get hot.d9_reset.batch_med); d9l=$(get hot.d9_live.batch_med); ltm=$(get hot.lttng.batch_med)
    echo
    echo "HOT PATH — ns per 32-byte poll-start event (16 B header incl. TSC stamp + task u64, loc u32,"
    echo "runtime u16, worker u16), pinned to cpu $PCPU, 1000 events per rdtsc-timed batch; median of"
    echo "$REPS runs of each variant (median / p99 over $HOT_BATCHES batch means per run; paced runs $PACED_BATCHES)."
    echo "single = one event between lfence;rdtsc and rdtscp;lfence, minus the empty pair"
    echo "($(calc "$(get tsc.empty_pair) * $(get tsc.ns_per_tick)" 1) ns); on this VM back-to-back TSC reads differ by ~26 ticks (10 ns), so single"
    echo "samples come in ~5-10 ns steps: a distribution shape, not a precise cost."
    printf '  %-44s %8s %8s %8s %8s %8s  %s\n' "variant" "median" "p99" "single" "sgl p99" "x base" "target / note"
    hot_row baseline "(a) baseline: rdtsc + store to plain buffer" "baseline"
    hot_row baseline_call "(a') baseline behind a non-inlined call" ""
    hot_row ring_inline "(a'') shm ring reserve/commit inlined" "the ring ABI's floor"
    hot_row d9_reset "(b) d9_poll_start, ring reset per batch" \
        "d9-base = $(calc "$d9r - $base" 2) ns (target <= +3 ns)"
    hot_row d9_live "(b') d9_poll_start, d9collectd draining" \
        "d9-base = $(calc "$d9l - $base" 2) ns (target <= +3 ns); paced 2 M ev/s, 32 MiB ring, lost $(get hot.d9_live.lost)"
    hot_row lttng "(c) LTTng-UST tracepoint, discard session" \
        "paced 2 M ev/s; discarded $(get lt.hot.discarded) of $(get hot.lttng.events) timed"
    hot_row lttng_nosession "(c') LTTng-UST tracepoint, no session" ""
    hot_row d9_disabled "(d) d9, DIAL9_ENABLED=0" ""
    hot_row d9_compiled_out "(e) d9, compiled with -DD9_DISABLE" ""
    echo "  LTTng-UST / d9 (same pacing, both daemons draining): $(calc "$ltm / $d9l" 1)x   (target >= 8x)"
    echo "  LTTng-UST / d9 (d9 ring reset, no consumer):          $(calc "$ltm / $d9r" 1)x"
}
drain_row() {   # drain_row KEY LABEL
    off=$(get "$1.offered"); lost=$(get "$1.lost"); el=$(get "$1.elapsed"); cpu=$(get "$1.cpu_s"); by=$(get "$1.bytes")
    kept=$(get "$1.kept")
    printf '  %-30s %10s %10s %8s %7s %8s %10s\n' "$2" \
        "$(calc "$off / $el / 1e6" 2)" "$(calc "$kept / $el / 1e6" 2)" "$(calc "$by / $el / 1e6" 1)" \
        "$(calc "100 * $lost / $off" 3)" "$(calc "100 * $cpu / $el" 0)" "$(calc "$kept / $cpu / 1e6" 1)"
}
# the collector's ns a record draining d9demo's mix flat out (DRAIN)
mix_flat_ns() { calc "$(get drain.d9mix.cpu_s) * 1e9 / $(get drain.d9mix.col_records)" 1; }
report_steady() {
    flat=$(mix_flat_ns)
    at=$(calc "$(get steady.col_ns) / $(get steady.records)" 1)
    echo
    echo "THE COLLECTOR AT THE DEMO'S RATE, steady state — one traced d9demo run (a worker per CPU),"
    echo "counted from 2 s in to 1 s before its end (its start and end, which the per-task figures above carry, left out):"
    echo "  $(calc "$(get steady.records) / $(get steady.seconds) / 1e3" 0) k records/s; the collector (all threads) $at ns a record;"
    echo "  flat out, the same mix: $flat ns a record (DRAIN above): $(calc "$at / $flat" 2)x (target <= 2x)"
}
report_drain() {
    echo
    echo "DRAIN — producers flat out on cpu $PCPU for $DRAIN_MS ms; d9collectd / lttng-consumerd on cpu $CCPU."
    echo "kept: d9 = poll-start records in the sealed, indexed segments of the producer (after a flush;"
    echo "the collector's own perf samples of the process are not counted);"
    echo "LTTng = offered - the channel's 'Discarded events'. written = segment / trace bytes."
    echo "Both write to tmpfs (this VM's disk is slower than either daemon). tmpfs floor, dd with 1 MiB"
    echo "writes into a new file: $(get floor.cold) MB/s at the first touch of $(get floor.warm_mb) MiB of guest memory,"
    echo "$(get floor.warm) MB/s on pages touched before; the runs below find touched pages (see run-bench.sh)."
    echo "per core = kept events / daemon CPU seconds (utime+stime over the run)."
    printf '  %-30s %10s %10s %8s %7s %8s %10s\n' "" "offered" "kept" "written" "lost" "daemon" "per core"
    printf '  %-30s %10s %10s %8s %7s %8s %10s\n' "" "Mev/s" "Mev/s" "MB/s" "%" "CPU %" "Mev/s"
    for n in 1 2; do
        drain_row "drain.d9.$n" "d9collectd, $n producer(s)"
        drain_row "drain.lt.$n" "lttng-consumerd, $n producer(s)"
    done
    echo "  d9, 1 producer of d9demo's mix of records (bench_drain --mix demo): $(calc "$(get drain.d9mix.col_records) / $(get drain.d9mix.cpu_s) / 1e6" 1) M records"
    echo "  per collector CPU-second, $(mix_flat_ns) ns a record (all record types, perf samples included)"
    for n in 1 2; do
        echo "  $n producer(s): d9 kept / LTTng kept = $(calc "$(get drain.d9.$n.kept) / $(get drain.lt.$n.kept)" 2)x;" \
             "d9 per collector core $(calc "$(get drain.d9.$n.kept) / $(get drain.d9.$n.cpu_s) / 1e6" 1) Mev/s (target >= 50);" \
             "wrote $(calc "100 * $(get drain.d9.$n.bytes) / $(get drain.d9.$n.elapsed) / 1e6 / $(get floor.warm)" 0) % of the dd floor"
    done
    att=$(awk '$1 ~ /\.d9\..*\.attach_ms$/ && $2 >= 0 { print $2 }' "$R" | median)
    echo "  Steady state: each producer first waits until the collector drained its first event"
    echo "  (d9 adoption delay, median: $att ms); LTTng producers sleep $LT_SETTLE_MS ms after registering."
    [ "$(get lt.bit63)" = 1 ] && echo "  note: LTTng reported a discarded count with bit 63 set; the low 63 bits are shown."
    echo
    echo "LOSS ONSET — 1 producer, offered rate stepped up; loss begins where lost > 0.1 %"
    printf '  %-12s %12s %10s %12s %10s %10s\n' "target" "d9 offered" "d9 lost %" "LTTng offer" "LTTng %" "d9 rings/s"
    on_d9=""; on_lt=""; ok_d9=""; ok_lt=""
    for r in $STEP_RATES; do
        label=$(calc "$r / 1e6" 0)M; [ "$r" = 0 ] && label="flat-out"
        do_=$(get "step.d9.$r.offered"); dl=$(get "step.d9.$r.lost"); de=$(get "step.d9.$r.elapsed")
        lo=$(get "step.lt.$r.offered"); ll=$(get "step.lt.$r.lost"); le=$(get "step.lt.$r.elapsed")
        dp=$(calc "100 * $dl / $do_" 3); lp=$(calc "100 * $ll / $lo" 3)
        dr=$(calc "$do_ / $de / 1e6" 2); lr=$(calc "$lo / $le / 1e6" 2)
        printf '  %-12s %10s M %10s %10s M %10s %10s\n' "$label" "$dr" "$dp" "$lr" "$lp" \
            "$(calc "$(get "step.d9.$r.bells") / $de" 0)"
        if [ "$dp" != n/a ]; then
            if [ -z "$on_d9" ] && [ "$(calc "$dl * 1e6 > $LOSS_PPM * $do_" 0)" = 1 ]; then on_d9=$dr; fi
            [ -z "$on_d9" ] && ok_d9=$dr
        fi
        if [ "$lp" != n/a ]; then
            if [ -z "$on_lt" ] && [ "$(calc "$ll * 1e6 > $LOSS_PPM * $lo" 0)" = 1 ]; then on_lt=$lr; fi
            [ -z "$on_lt" ] && ok_lt=$lr
        fi
    done
    do_=$(get step.d9.burst.offered); dl=$(get step.d9.burst.lost); de=$(get step.d9.burst.elapsed)
    lo=$(get step.lt.burst.offered); ll=$(get step.lt.burst.lost); le=$(get step.lt.burst.elapsed)
    printf '  %-12s %10s M %10s %10s M %10s %10s\n' "bursts" "$(calc "$do_ / $de / 1e6" 2)" \
        "$(calc "100 * $dl / $do_" 3)" "$(calc "$lo / $le / 1e6" 2)" "$(calc "100 * $ll / $lo" 3)" \
        "$(calc "$(get step.d9.burst.bells) / $de" 0)"
    echo "  (bursts: $BURST events at once, then a $BURST_PAUSE_US us sleep; d9 rings/s: the producer's"
    echo "  doorbell rings, each one FUTEX_WAKE call, see shm/bell.h)"
    echo "  d9:    loss-free up to ${ok_d9:-n/a} Mev/s, loss > 0.1 % from ${on_d9:-never (up to flat out)} Mev/s"
    echo "  LTTng: loss-free up to ${ok_lt:-n/a} Mev/s, loss > 0.1 % from ${on_lt:-never (up to flat out)} Mev/s"
    [ -n "$ok_d9" ] && [ -n "$ok_lt" ] && echo "  loss-free rate d9 / LTTng = $(calc "$ok_d9 / $ok_lt" 1)x"
    echo "  the daemons' cpu $CCPU itself, spun on for $GAPS_MS ms before these steps ($(get gaps.policy)):"
    echo "  away > 1 ms $(get gaps.over_1ms) times, > $(calc "$(get gaps.limit_us) / 1000" 1) ms (a 1 MiB ring at 10 M ev/s) $(get gaps.over_limit) times,"
    echo "  longest $(calc "$(get gaps.max_us) / 1000" 1) ms: a stall that long overflows any ring that holds less, whatever the collector does"
}

report_e2e() {  # report_e2e PREFIX TITLE DEMO_ARGS
    p=$1
    off=$(get $p.off.median); on=$(get $p.on.median)
    echo
    echo "END TO END, $2 — d9demo $3, the same fixed work per task in every"
    echo "run (work calibration $(get $p.calibration) units/us), $E2E_SECONDS s per run, $(get $p.pairs) pairs, order alternating; off ="
    echo "DIAL9_ENABLED=0, on = traced, a default d9collectd draining on the same $NCPU CPUs (its CPU counts)."
    echo "The collector runs through both: idle in the off runs ($(get $p.off.col_us_task) us of its CPU per task; nothing traced,"
    echo "so its per-CPU sampling is off), so the on runs carry the profile's interrupts too."
    printf '  %-30s %12s %12s %12s\n' "tasks/s" "median" "min" "max"
    printf '  %-30s %12s %12s %12s\n' "tracing off" "$off" "$(get $p.off.min)" "$(get $p.off.max)"
    printf '  %-30s %12s %12s %12s\n' "tracing on" "$on" "$(get $p.on.min)" "$(get $p.on.max)"
    echo "  throughput overhead = 1 - on/off per pair: mean $(get $p.tput.overhead) % +- $(get $p.tput.ci) (95 %), median $(get $p.tput.median_overhead) %   (target <= 1 %)"
    echo "  noise floor: the off runs alone spread $(calc "100 * ($(get $p.off.max) - $(get $p.off.min)) / $off" 1) % (min to max): the VM's CPU speed drifts"
    uo=$(get $p.off.us_task); un=$(get $p.on.us_task); uc=$(get $p.on.col_us_task)
    echo "  CPU per task: off $uo us; on $un us in the demo + $uc us in d9collectd;"
    echo "  CPU overhead per pair: mean $(get $p.cpu.overhead) % +- $(get $p.cpu.ci) (95 %), median $(get $p.cpu.median_overhead) %"
    ev=$(calc "$(get $p.recorded) / $(get $p.on.tasks)" 1)
    hot=$(calc "$(get hot.d9_live.batch_med)" 2)
    echo "  bottom-up: $(get $p.recorded) events recorded while on ($ev per task, $(get $p.on.lost) lost);"
    echo "  d9collectd $uc us/task = $(calc "100 * $uc / $uo" 2) % of a task's CPU; the record calls ~$ev x $hot ns"
    echo "  = $(calc "$ev * $hot / 1000" 2) us/task = $(calc "100 * $ev * $hot / 1000 / $uo" 2) % (hot path (b') above);"
    # the profile's price per sample on the clock the collector used
    case "$(cat "$T/col.perf" 2>/dev/null)" in *"scheduler tick"*) ik=tk ;; *) ik=cc ;; esac
    if [ "$(get irq.$ik.us_per_sample)" != n/a ] && [ "$(get irq.def.rate)" != n/a ]; then
        rate=$(get irq.def.rate)
        echo "  the profile ($(get irq.def.clock), $rate samples/s per busy CPU): x $(get irq.$ik.us_per_sample) us per sample (PROFILER below)"
        echo "  = $(calc "$rate * $(get irq.$ik.us_per_sample) / 1e4" 2) % of every busy CPU (measured directly at $(get irq.def.hz) Hz: $(get irq.def.overhead_pct) %, a signal near the noise of its slices);"
        echo "  the rest (schedstat reads, collector wake-ups displacing a worker, cache interference) is inside the noise of the rows above."
    else
        echo "  the rest is the kernel's share (perf sampling, schedstat reads) and interference, inside the noise of the rows above."
    fi
}

report_irq() {
    echo
    echo "PROFILER — what one CPU-profile sample costs the CPU it takes it from: d9collectd's per-CPU"
    echo "events (perf_host_open, the collector's own code) switched on and off in alternating 200 ms"
    echo "slices over a compute loop on each of the $NCPU CPUs; baseline = the off slices of the same run."
    echo "cpu-clock: a timer per CPU, each sample an interrupt of its own; tick: the scheduler tick's"
    echo "tracepoint, 1 tick in N, no interrupt of its own (the collector's choice where it works)."
    if [ "$(get irq.cc.skipped)" != n/a ]; then
        echo "  skipped: $(get irq.cc.skipped) (needs CAP_PERFMON or perf_event_paranoid <= 0)"
        return
    fi
    printf '  %-34s %10s %10s %14s %16s\n' "sampling" "rate/CPU" "samples" "loop slower" "per sample"
    irq_row() {     # irq_row KEY LABEL
        if [ "$(get irq.$1.skipped)" != n/a ]; then
            printf '  %-34s skipped: %s\n' "$2" "$(get irq.$1.skipped)"
        else
            printf '  %-34s %10s %10s %12s %% %13s us\n' "$2" "$(get irq.$1.rate)" "$(get irq.$1.samples)" "$(get irq.$1.overhead_pct)" "$(get irq.$1.us_per_sample)"
        fi
    }
    irq_row cc "cpu-clock, $IRQ_HZ_AMP Hz (amplified)"
    irq_row tk "tick, every tick (amplified)"
    irq_row def "$(get irq.def.clock), --perf-freq $(get irq.def.hz) (the default)"
    cc=$(get irq.cc.us_per_sample); tk=$(get irq.tk.us_per_sample)
    if [ "$cc" != n/a ] && [ "$tk" != n/a ] && [ "$(calc "($cc > 0) * ($tk > 0)" 0)" = 1 ]; then
        echo "  a sample on the tick costs $(calc "$tk / $cc" 2)x one on a cpu-clock timer"
    elif [ "$cc" != n/a ] && [ "$tk" != n/a ]; then
        echo "  tick against cpu-clock: one of the two is inside the noise of its slices (no ratio)"
    fi
    [ -s "$T/col.perf" ] && echo "  the end-to-end collector sampled $(cat "$T/col.perf")"
    echo "  --perf-freq trades it against profile resolution; 0 turns the profile off."
}

# ---- 4. d9 sql against the hand-written scan ---------------------------------
SQL_RECORDS=50000000
[ "$QUICK" = 1 ] && SQL_RECORDS=2000000
say "d9 sql: a store of $SQL_RECORDS records, queried both ways"
mkdir -p "$T/sqlstore"
"$B/bench_sql" --records "$SQL_RECORDS" --dir "$T/sqlstore" >"$T/sql.out" 2>&1 ||
    warn "bench_sql failed: $(tail -n 1 "$T/sql.out")"
rm -rf "$T/sqlstore"
report_sql() {
    echo
    echo "4. d9 sql (bench_sql: synthetic store, 8 threads, packed blocks; CPU time per record;"
    echo "   targets: >= 50 M records/s per core, 1 % window <= 50 ms)"
    sed -n '/^$/,$p' "$T/sql.out" | sed 1d
}

{
    echo "================================================================================"
    echo "d9 bench, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $NCPU CPUs: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
    echo "TSC $(calc "1 / $(get tsc.ns_per_tick)" 3) GHz (calibrated against CLOCK_MONOTONIC); quick=$QUICK"
    echo "load average at start: $LOAD0, at end: $(cut -d' ' -f1-3 /proc/loadavg) (other tenants add noise to every row)"
    echo "targets are printed beside the measurements, never enforced"
    report_hot
    report_drain
    report_e2e e2e "a worker per CPU (the target)" "$E2E_ARGS"
    [ -n "$(awk '$1 == "e2e_spare.pairs"' "$R")" ] &&
        report_e2e e2e_spare "one CPU to spare" "$E2E_ARGS --workers $E2E_SPARE_WORKERS"
    report_steady
    report_irq
    report_sql
    echo "================================================================================"
} >"$T/table"
cat "$T/table"
mkdir -p "$B" && cp "$T/table" "$B/results.txt" && cp "$R" "$B/results.raw"
say "table saved to $B/results.txt (raw numbers: $B/results.raw)"

# ---- d9 serve on a large store (its own lines, not in the table above) -------------
SERVE_RECS=50000000
[ "$QUICK" = 1 ] && SERVE_RECS=5000000
say "[serve] a $SERVE_RECS-record store built on disk, then d9 serve's first paint and zooms"
"$B/bench_serve" "$T/serve-store" "$SERVE_RECS" | tee "$B/serve.txt"
rm -rf "$T/serve-store"
