#!/bin/sh
# test_sched_busy.sh — a worker's busy time is the union of its finished
# polls (collector/query/q_sched.h, collector/store/rollup.h): a poll that
# never ends adds nothing itself and stops no later poll from counting. On
# tool_store_aggs --busy's store (one never-ending poll, then 100 plain,
# nested and replaced polls; the generator prints their union), plain
# `d9 sched`, sql's workers, the rollups (worker_stats, sched --totals) and
# a window's rollups+edges (= --raw) all give that busy time.
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_aggs" "$S" --busy >"$T/known.txt" || { echo "tool_store_aggs failed"; exit 1; }
BUSY=$(awk '$1 == "busy" { print $2 }' "$T/known.txt")
T0=$(awk '$1 == "t0" { print $2 }' "$T/known.txt")

busy_is() { # busy_is WANT CMD...: the first busy_ns (or busy) number CMD prints
    _want=$1; shift
    _got=$("$@" 2>"$T/err" | grep -Eo '"busy_ns":[0-9]+' | head -n 1 | cut -d: -f2)
    [ "$_got" = "$_want" ] || { echo "busy_ns $_got, want $_want"; cat "$T/err"; return 1; }
}
window_same() { # rollups + edges = every record, for a window cutting polls
    "$D9" --store "$S" sched --totals --format jsonl "$@" >"$T/a" 2>&1 &&
        "$D9" --store "$S" sched --totals --raw --format jsonl "$@" >"$T/b" 2>&1 &&
        [ -s "$T/a" ] && diff "$T/a" "$T/b"
}

check "the generator's busy time is about a third of the span" test "$BUSY" -gt 500000000
check "plain sched: busy = the finished polls' union" busy_is "$BUSY" "$D9" --store "$S" sched --format jsonl
check "sql workers: busy_ns = the union" busy_is "$BUSY" "$D9" --store "$S" sql --format jsonl "select busy_ns from workers"
check "sql worker_stats (rollups): busy_ns = the union" busy_is "$BUSY" "$D9" --store "$S" sql --format jsonl "select sum(busy_ns) as busy_ns from worker_stats"
check "sched --totals (rollups): busy_ns = the union" busy_is "$BUSY" "$D9" --store "$S" sched --totals --format jsonl
check "sched BUSY is not ~0 %" sh -c '"$1" --store "$2" sched | awk "NR == 2 { exit !(\$NF + 0 >= 30) }"' _ "$D9" "$S"
check "a window cutting polls: rollups+edges = --raw" window_same --from $((T0 + 505000000)) --to $((T0 + 1504000000))

d9_finish sched_busy
