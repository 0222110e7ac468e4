#!/bin/sh
# test_trigvis_kept.sh — the flight recorder made visible (issue 35), with
# the real collector (--retain triggered) and prog_trigseq: one marker in
# 2 s of polls keeps one window, cut out of the settled segments. Then:
#   - d9 sql's kept table lists the index's kept rows (window, trigger,
#     segment: its path, bytes, records, the segment it was cut from);
#   - --metrics has the flight recorder's counters (segments settled,
#     windows cut, bytes kept, bytes dropped; counters with units), equal
#     to the index (a window cut = a kept row; bytes kept = their bytes);
#   - d9 status says the same (text line and jsonl object).
# No timing thresholds: waits re-evaluate the index until every segment is
# decided.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }

check "collector starts with --retain triggered and --metrics" start_collector \
    --perf-freq 0 --retain triggered --trigger-lookback-ms 1000 --trigger-lookforward-ms 500 \
    --metrics 127.0.0.1:0
polls() { i=0; while [ $i -lt 100 ]; do printf ' p:10'; i=$((i + 1)); done; }
PS=$(polls)
# shellcheck disable=SC2086
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" $PS t:visible $PS >"$T/a.out" 2>"$T/a.err"
P=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/a.out")
check "the marker program ran" test -n "$P"
decided() {
    n=$(sql "SELECT count(*) FROM segments WHERE id NOT IN (SELECT segment_id FROM kept)") &&
    k=$(sql "SELECT count(*) FROM kept") && [ "$n" = 0 ] && [ "$k" -ge 1 ]
}
check "the window is cut out and everything else dropped" wait_for 60 decided

NKEPT=$(sql "SELECT count(*) FROM kept")
KBYTES=$(sql "SELECT sum(s.bytes) FROM kept k JOIN segments s ON s.id = k.segment_id")
MPORT=$(sed -n 's|.*metrics: http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/col.log")
check "the log names the metrics port" test -n "$MPORT"
scraped() {     # the text is rendered every 250 ms: wait for the cut to show
    curl -s "http://127.0.0.1:$MPORT/metrics" >"$T/m.txt" &&
    grep -qx "d9_flight_windows_cut_total $NKEPT" "$T/m.txt"
}
check "--metrics counts the windows cut: one per kept segment" wait_for 20 scraped
check "--metrics: the flight counters are typed counters" sh -c "
    for m in settled_segments windows_cut kept_bytes dropped_bytes; do
        grep -qx \"# TYPE d9_flight_\${m}_total counter\" '$T/m.txt' || exit 1; done"
check "--metrics: bytes kept are the kept segments' bytes" \
    grep -qx "d9_flight_kept_bytes_total $KBYTES" "$T/m.txt"
check "--metrics: segments were settled and bytes dropped" python3 -c "
v = dict(l.split() for l in open('$T/m.txt') if l.startswith('d9_flight_'))
assert int(v['d9_flight_settled_segments_total']) >= 1, v
assert int(v['d9_flight_dropped_bytes_total']) > 0, v
"
"$BIN/d9" --endpoint "$EP" status >"$T/st.txt" 2>&1
# The collector keeps settling segments while it runs, and --metrics is
# rendered every 250 ms: compare a status with a scrape made at least 300 ms
# later, accepted only when a second status equals the first (nothing
# changed in between), re-tried until that holds.
status_eq_metrics() {
    "$BIN/d9" --endpoint "$EP" status --format jsonl >"$T/st.json" 2>"$T/st.err" &&
    sleep 0.3 && curl -s "http://127.0.0.1:$MPORT/metrics" >"$T/m2.txt" &&
    "$BIN/d9" --endpoint "$EP" status --format jsonl >"$T/st2.json" 2>>"$T/st.err" &&
    python3 -c "
import json
s = json.loads(open('$T/st.json').read())['flight']
s2 = json.loads(open('$T/st2.json').read())['flight']
v = dict(l.split() for l in open('$T/m2.txt') if l.startswith('d9_flight_'))
assert s == s2, ('changed while compared', s, s2)
assert s['windows_cut'] == $NKEPT and s['kept_bytes'] == $KBYTES, s
assert s['settled_segments'] == int(v['d9_flight_settled_segments_total']), (s, v)
assert s['dropped_bytes'] == int(v['d9_flight_dropped_bytes_total']), (s, v)
"
}
check "d9 status (jsonl) has the flight counters, equal to --metrics" wait_for 20 status_eq_metrics
check "d9 status (text) has a flight line" \
    grep -q "^flight     --retain triggered: [0-9]* segments settled, $NKEPT windows cut (" "$T/st.txt"
check "the collector stops cleanly" stop_collector

sql "SELECT k.trig_pid, k.t0_ns, k.t1_ns, k.trig_ns, k.ntrig, k.reason, k.segment_id, s.path,
     s.bytes, s.records, k.source_segment FROM kept k JOIN segments s ON s.id = k.segment_id
     ORDER BY k.t0_ns, k.segment_id" >"$T/kept.txt"
check "d9 sql's kept table lists the index's kept windows with their segments" sh -c "
    '$BIN/d9' --store '$STORE' sql --format csv 'select pid, t0_ns, t1_ns, trig_ns, ntrig, reason,
        segment_id, path, bytes, records, source_segment from kept' >'$T/kept.csv' 2>&1 && python3 -c \"
import csv
got = [r for r in csv.reader(open('$T/kept.csv'))][1:]
want = [l.split('|') for l in open('$T/kept.txt').read().splitlines()]
assert got == want and len(got) == $NKEPT, (got, want)
assert all(r[5] == 'marker: visible' and int(r[0]) == $P for r in got), got
assert all(int(r[2]) - int(r[1]) == 1500 * 10**6 for r in got), got
\""
check "d9 sql: kept joins segments and triggers" sh -c "
    n=\$('$BIN/d9' --store '$STORE' sql --format csv 'select count(*) from kept k join triggers t
        on t.t_ns = k.trig_ns and t.pid = k.pid where t.verdict = \"kept\"' | tail -n 1 | tr -d '\r') &&
    [ \"\$n\" = $NKEPT ]"
d9_finish trigvis_kept
