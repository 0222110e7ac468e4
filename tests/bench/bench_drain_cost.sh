#!/bin/sh
# bench_drain_cost.sh — `make bench-drain-cost`: the collector's CPU per
# record drained (issue #32 item 1: rollups must not raise it by more than
# 10 %), for four ways of getting a segment's rollups, in the same run:
#   off       no rollups at all (the baseline; D9_BENCH_ROLLUPS=off, a
#             bench-only switch of storedir.h)
#   readback  computed at the seal by reading the sealed file back
#             (rollup_file; the collector's way before live feeding)
#   inline    fed while the drain packs each block (seg_writer_rollup_*),
#             computed on the drain thread (the way before the rollup thread)
#   live      the same, computed on the store's rollup thread (ru_pipe.h):
#             the drain hands each chunk over; the collector's default
# Each run: a fresh d9collectd pinned to cpu BENCH_CONS_CPU (default 1,
# default settings: 64 MiB segments rotate inside a run), bench_drain
# --mix demo (d9demo's mix of record types) on cpu BENCH_PROD_CPU (0),
# flat out (--rate 0) and paced (BENCH_PACED_RATE, default 3 M records/s),
# for BENCH_DRAIN_MS (2000). The modes are interleaved, their order rotated
# each round, BENCH_ROUNDS rounds (default 6).
# ns a record = collector CPU (schedstat run time: all threads, and the
# drain thread = the main thread alone) / records it wrote (bench_colstat
# before and after a --flush): "load" up to the producer's exit (in-run
# seals included), "with seal" up to the end of the flush (every record's
# seal and rollups included). Printed: median (min-max) per mode and rate,
# and each mode against off.
set -u
BUILD=${BUILD:-build}
B=$BUILD/bench
BIN=$BUILD/bin
PCPU=${BENCH_PROD_CPU:-0}
CCPU=${BENCH_CONS_CPU:-1}
[ "$(getconf _NPROCESSORS_ONLN)" -lt 2 ] && CCPU=$PCPU
ROUNDS=${BENCH_ROUNDS:-6}
MS=${BENCH_DRAIN_MS:-2000}
PACED=${BENCH_PACED_RATE:-3000000}
MODES="off readback inline live"
RATES="0 $PACED"

for x in "$BIN/d9collectd" "$B/bench_drain" "$B/bench_colstat"; do
    [ -x "$x" ] || { echo "bench-drain-cost: $x missing (make bench-drain-cost builds it)" >&2; exit 1; }
done
T=$(mktemp -d /tmp/d9drcost.XXXXXX) || exit 1
M=$(mktemp -d /dev/shm/d9drcost.XXXXXX 2>/dev/null) || M=$(mktemp -d "$T/mem.XXXXXX")
mkdir -p "$M/shm"
R=$T/results
: >"$R"
COL_PID=""
cleanup() {
    [ -n "$COL_PID" ] && kill -TERM "$COL_PID" 2>/dev/null && wait "$COL_PID" 2>/dev/null
    rm -rf "$T" "$M"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
say() { echo "bench-drain-cost: $*"; }
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | head -n 1; }
colstat() { "$B/bench_colstat" "ipc://$T/c.sock" "$@" 2>>"$T/colstat.err"; }
# run time in ns of the collector: all its threads, and its main (drain) thread
cpu_all() { awk '{ s += $1 } END { printf "%d\n", s }' /proc/"$COL_PID"/task/*/schedstat 2>/dev/null; }
cpu_main() { awk '{ print $1 }' /proc/"$COL_PID"/schedstat 2>/dev/null; }

col_up() {      # col_up MODE
    rm -rf "$M/store" "$T/c.sock"
    D9_BENCH_ROLLUPS=$1 taskset -c "$CCPU" "$BIN/d9collectd" --store "$M/store" --shm-dir "$M/shm" \
        --endpoint "ipc://$T/c.sock" >"$T/collector.log" 2>&1 &
    COL_PID=$!
    n=50
    while [ $n -gt 0 ] && [ ! -S "$T/c.sock" ]; do
        kill -0 "$COL_PID" 2>/dev/null || break
        sleep 0.1; n=$((n - 1))
    done
    [ -S "$T/c.sock" ] || { say "d9collectd did not come up: $(tail -n 2 "$T/collector.log")"; return 1; }
}
col_down() {
    kill -TERM "$COL_PID" 2>/dev/null
    wait "$COL_PID" 2>/dev/null
    COL_PID=""
}

one() {         # one MODE RATE ROUND
    col_up "$1" || return 1
    colstat >"$T/cs0" || { say "status failed"; col_down; return 1; }
    a0=$(cpu_all); m0=$(cpu_main)
    if ! env DIAL9_SHM_DIR="$M/shm" DIAL9_COLLECTOR="ipc://$T/c.sock" DIAL9_RING_KB=1024 \
            DIAL9_SAMPLER=off "$B/bench_drain" --threads 1 --rate "$2" --seconds-ms "$MS" \
            --cpu "$PCPU" --mix demo >"$T/load.out" 2>"$T/load.err"; then
        say "bench_drain failed: $(tail -n 1 "$T/load.err")"; col_down; return 1
    fi
    a1=$(cpu_all); m1=$(cpu_main)
    colstat --flush >"$T/cs1" || { say "flush failed"; col_down; return 1; }
    a2=$(cpu_all); m2=$(cpu_main)
    recs=$(( $(kv "$T/cs1" records) - $(kv "$T/cs0" records) ))
    col_down
    [ "$recs" -gt 0 ] || { say "$1 rate $2: no records"; return 1; }
    awk -v m="$1" -v r="$2" -v n="$recs" -v a0="$a0" -v a1="$a1" -v a2="$a2" \
        -v m0="$m0" -v m1="$m1" -v m2="$m2" 'BEGIN {
        printf "%s %s %.2f %.2f %.2f %.2f %d\n", m, r, (a1 - a0) / n, (a2 - a0) / n,
               (m1 - m0) / n, (m2 - m0) / n, n }' >>"$R"
    say "round $3 $1 rate $2: $(tail -n 1 "$R" | cut -d' ' -f3-) (load, with seal, drain thread load, with seal; records)"
}

say "$ROUNDS rounds x {$MODES} x rates {flat out, $PACED/s}, ${MS} ms each; collector on cpu $CCPU, producer on cpu $PCPU; load average $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    # rotate the order each round: off readback inline live, readback inline live off, ...
    set -- $MODES
    k=$(( (r - 1) % $# ))
    while [ "$k" -gt 0 ]; do x=$1; shift; set -- "$@" "$x"; k=$((k - 1)); done
    for rate in $RATES; do
        for mode in "$@"; do one "$mode" "$rate" "$r"; done
    done
    r=$((r + 1))
done

# median (min-max) of column C for MODE RATE
stat() {
    awk -v m="$1" -v r="$2" -v c="$3" '$1 == m && $2 == r { print $c }' "$R" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print "n/a"; exit }
             med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
             printf "%.1f (%.1f-%.1f)\n", med, v[1], v[NR] }'
}
med() { stat "$@" | cut -d' ' -f1; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "n/a") print "n/a"; else printf "%+.0f %%\n", 100 * (a - b) / b }'; }

echo
echo "DRAIN COST — collector ns a record, median (min-max) of $ROUNDS interleaved rounds, bench_drain --mix demo"
for rate in $RATES; do
    [ "$rate" = 0 ] && echo "flat out:" || echo "paced, $rate records/s offered:"
    printf "  %-9s %-20s %-20s %-20s %-20s %s\n" mode "all, load" "all, with seal" "drain thr, load" "drain thr, w/ seal" "records/run"
    for mode in $MODES; do
        printf "  %-9s %-20s %-20s %-20s %-20s %s\n" "$mode" "$(stat "$mode" "$rate" 3)" \
            "$(stat "$mode" "$rate" 4)" "$(stat "$mode" "$rate" 5)" "$(stat "$mode" "$rate" 6)" \
            "$(med "$mode" "$rate" 7)"
    done
    for mode in readback inline live; do
        echo "  $mode vs off (medians): all threads: load $(pct "$(med $mode "$rate" 3)" "$(med off "$rate" 3)")," \
             "with seal $(pct "$(med $mode "$rate" 4)" "$(med off "$rate" 4)");" \
             "drain thread: load $(pct "$(med $mode "$rate" 5)" "$(med off "$rate" 5)")," \
             "with seal $(pct "$(med $mode "$rate" 6)" "$(med off "$rate" 6)")"
    done
done
