#!/bin/sh
# test_trig_lost.sh — records lost by threads that have no ring fire the
# lost-records trigger (--trigger-lost yes), through the real collector:
#   - a program run with DIAL9_MAX_THREADS=1 whose main thread holds the one
#     ring starts a thread that emits 3 events: the agent counts them lost
#     per process (no ring to count them in); when the drain sees that count
#     grow, a 'lost' trigger is a row of the triggers table, reason
#     'threads without a ring lost 3 records', kept, its window exactly
#     [t - lookback, t + lookforward];
#   - --metrics counts it (d9_triggers_total{source="lost",verdict="kept"})
#     and shows the loss by cause while the process runs
#     (d9_lost_records_total{cause="no_ring"} 3);
#   - a second such loss of the same process, within the debounce, is a
#     'lost' row debounced, with no window, as any trigger is;
#   - a collector restarted while the process runs counts from what the
#     earlier run indexed: the next loss (4 events) fires as 'lost 4', not
#     as the whole count since the process started;
#   - a ring's own loss (a type mismatch) still fires as 'ring N lost M'.
# No timing thresholds: the program waits on files the test creates once the
# collector has seen each step; the debounce (1 h) is far longer than the test.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }
LB_MS=3000000
LF_MS=1000

check "collector starts" start_collector --trigger-lookback-ms $LB_MS \
    --trigger-lookforward-ms $LF_MS --trigger-debounce-ms 3600000 --trigger-rate 6000 \
    --trigger-lost yes --metrics 127.0.0.1:0
MPORT=$(sed -n 's|.*metrics: http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/col.log")
check "the log names the metrics port" test -n "$MPORT"
# rows SQL: the triggers table (index read directly) as lines a|b|c
rows() { sqlite3 "$STORE/index.sqlite" "$1" >"$T/rows.txt" 2>/dev/null; }
# nrows SQL N: the query has N lines
nrows() { rows "$1" && [ "$(wc -l <"$T/rows.txt")" -eq "$2" ]; }

# f:1 gives the main thread the one ring; r:3 is a thread without one
DIAL9_SAMPLER=off DIAL9_MAX_THREADS=1 "$TBIN/prog_trigseq" f:1 r:3 "w:$T/go1" r:2 "w:$T/go2" \
    r:4 "w:$T/go3" >"$T/p.out" 2>"$T/p.err" &
at_exit kill -9 $!
wait_for 20 grep -q '^pid=' "$T/p.out"
P=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "the program runs" test -n "$P"
Q="SELECT source, reason, verdict, t_ns, win_t0, win_t1 FROM triggers WHERE pid = $P ORDER BY id"
# the agent publishes its count about once a second: wait for the row
check "records lost by a thread without a ring are a lost trigger" wait_for 20 nrows "$Q" 1
check "... with the loss in its reason, kept" \
    grep -q "^lost|threads without a ring lost 3 records|kept|" "$T/rows.txt"
check "... its window exactly [t - lookback, t + lookforward]" python3 -c "
t, w0, w1 = (int(x) for x in open('$T/rows.txt').read().split('|')[3:6])
# clamped at the monotonic clock's 0 on a host up for less than the lookback
assert (w0, w1) == (max(0, t - $LB_MS * 10**6), t + $LF_MS * 10**6), (t, w0, w1)
"
# the text is rendered every 250 ms: wait for the count to show
scraped() {
    curl -s "http://127.0.0.1:$MPORT/metrics" >"$T/m.txt" &&
    grep -qx 'd9_triggers_total{source="lost",verdict="kept"} 1' "$T/m.txt" &&
    grep -q "^d9_lost_records_total{pid=\"$P\",.*cause=\"no_ring\"} 3$" "$T/m.txt"
}
check "--metrics counts the trigger and the loss by cause while the process runs" \
    wait_for 20 scraped
check "--metrics: no loss of another cause" sh -c "
    grep -q '^d9_lost_records_total{pid=\"$P\",.*cause=\"ring_full\"} 0$' '$T/m.txt' &&
    grep -q '^d9_lost_records_total{pid=\"$P\",.*cause=\"mismatch\"} 0$' '$T/m.txt'"
touch "$T/go1"
check "a second loss within the debounce is a lost trigger, debounced" wait_for 20 nrows "$Q" 2
check "... with its own count and no window" \
    sh -c "sed -n 2p '$T/rows.txt' | grep -qx 'lost|threads without a ring lost 2 records|debounced|[0-9]*||'"
# a restart: the new collector adopts the live process again
check "the collector stops cleanly while the program runs" stop_collector
check "a collector starts again on the same store" start_collector --trigger-lookback-ms \
    $LB_MS --trigger-lookforward-ms $LF_MS --trigger-debounce-ms 3600000 --trigger-rate 6000 \
    --trigger-lost yes
readopted() { [ "$(grep -c "adopted pid $P " "$T/col.log")" -ge 2 ]; }
check "... and adopts the program again" wait_for 20 readopted
touch "$T/go2"
check "a loss after the restart is a lost trigger" wait_for 20 nrows "$Q" 3
check "... counting from what the earlier run indexed" \
    sh -c "sed -n 3p '$T/rows.txt' | grep -q '^lost|threads without a ring lost 4 records|kept|'"
touch "$T/go3"
ended() {       # ended PID: the process is finished in the store
    d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
    grep -q "\"pid\":$1,.*\"state\":\"exited\"" "$T/ps.jsonl"
}
check "the program ends" wait_for 20 ended "$P"
check "d9 ps counts the 9 records lost without a ring" \
    grep -q "\"pid\":$P,.*\"lost_no_ring\":9" "$T/ps.jsonl"

# a ring's own loss still names its ring
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" lose >"$T/p2.out" 2>&1
P2=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p2.out")
check "the losing program ran" wait_for 20 ended "$P2"
check "records lost by a ring are still a lost trigger naming the ring" wait_for 20 nrows \
    "SELECT reason FROM triggers WHERE pid = $P2 AND source = 'lost'
     AND reason GLOB 'ring [0-9]* lost 1 records'" 1
check "the collector stops cleanly" stop_collector
d9_finish trig_lost
