#!/bin/sh
# test_trig_typed.sh — typed triggers (agent/d9.h's D9_TRIGGER_EVENT)
# through the real collector:
#   - each call is a trigger like d9_trigger(reason): a row of the triggers
#     table with source "marker", its reason and verdict (the second one,
#     within the debounce, debounced);
#   - its fields round-trip: `d9 events` shows the d9_trigger event with
#     reason, latency_ms and path, and `d9 sql`'s d9_trigger table has them
#     as columns, next to a plain d9_trigger(reason) marker (NULL fields);
#   - the index keeps them with the trigger: `d9 sql`'s triggers table has
#     a fields column, the JSON object of the fields after the reason
#     ({"latency_ms":250,"path":"/k/250"}), NULL for a plain marker and for
#     a trigger of another source (d9 trigger --pid).
# No timing thresholds: the debounce (1 h) is far longer than the test.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }

check "collector starts" start_collector --trigger-debounce-ms 3600000 --trigger-rate 6000
ended() {       # ended PID: the process is finished in the store
    d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
    grep -q "\"pid\":$1,.*\"state\":\"\(exited\|crashed\)\"" "$T/ps.jsonl"
}
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" 'k:250:slow request' t:plain 'k:7:' \
    >"$T/p.out" 2>&1
P=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "the program ran" wait_for 20 ended "$P"
d9 sql --format jsonl "select source, reason, verdict from triggers where pid = $P
    order by t_ns" >"$T/trig.jsonl" 2>"$T/trig.err"
check "each typed trigger is a marker trigger with its reason" python3 -c "
import json
got = [tuple(json.loads(l).values()) for l in open('$T/trig.jsonl')]
assert got == [('marker', 'slow request', 'kept'), ('marker', 'plain', 'debounced'),
               ('marker', '', 'debounced')], (got, open('$T/trig.err').read())
"
d9 events --pid "$P" --event d9_trigger --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
check "d9 events shows each marker with its fields" python3 -c "
import json
ev = [json.loads(l) for l in open('$T/ev.jsonl')]
got = [e['fields'] for e in ev if e['type'] == 'custom']
assert got == [{'reason': 'slow request', 'latency_ms': 250, 'path': '/k/250'},
               {'reason': 'plain'},
               {'reason': '', 'latency_ms': 7, 'path': '/k/7'}], \
    (got, open('$T/ev.err').read())
"
d9 sql --format jsonl "select reason, latency_ms, path from d9_trigger where pid = $P
    order by ts_ns" >"$T/sql.jsonl" 2>"$T/sql.err"
check "d9 sql's d9_trigger table has the fields as columns" python3 -c "
import json
got = [json.loads(l) for l in open('$T/sql.jsonl')]
assert got == [{'reason': 'slow request', 'latency_ms': 250, 'path': '/k/250'},
               {'reason': 'plain', 'latency_ms': None, 'path': None},
               {'reason': '', 'latency_ms': 7,
                'path': '/k/7'}], (got, open('$T/sql.err').read())
"
d9 sql --format jsonl "select reason, fields from triggers where pid = $P order by t_ns" \
    >"$T/tf.jsonl" 2>"$T/tf.err"
check "d9 sql's triggers table has each typed trigger's fields as JSON" python3 -c "
import json
got = [json.loads(l) for l in open('$T/tf.jsonl')]
assert [g['reason'] for g in got] == ['slow request', 'plain', ''], (got, open('$T/tf.err').read())
assert json.loads(got[0]['fields']) == {'latency_ms': 250, 'path': '/k/250'}, got
assert got[0]['fields'] == '{\"latency_ms\":250,\"path\":\"/k/250\"}', got   # the schema's order
assert got[1]['fields'] is None, got
assert json.loads(got[2]['fields']) == {'latency_ms': 7, 'path': '/k/7'}, got
"
# a trigger from the shell has no fields
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" "w:$T/go" >"$T/p2.out" 2>&1 &
at_exit kill -9 $!
wait_for 20 grep -q '^pid=' "$T/p2.out"
P2=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p2.out")
check "d9 trigger --pid fires" wait_for 20 sh -c "
    '$BIN/d9' --endpoint '$EP' trigger --pid '$P2' --reason shell >/dev/null 2>&1"
touch "$T/go"
d9 sql --format csv "select source, fields is null as none from triggers where pid = $P2" \
    2>&1 | tr -d '\r' >"$T/sh.csv"     # CSV lines end in CRLF
check "... and its row has no fields" grep -qx 'shell,1' "$T/sh.csv"
check "the collector stops cleanly" stop_collector
d9_finish trig_typed
