#!/bin/sh
# test_trig_field.sh — custom-event-field triggers through the real collector
# (--trigger-field, trig.h and trigd.h):
#   - bad rule syntax (no '.', no operator, '=', a value that is not a
#     number, more than 8 rules) is refused with one clear line, exit 2, in
#     flags and config files; --print-config shows the rules;
#   - a program emits events of schema "req" with known latency_ms values:
#     exactly those over the threshold fire, source "field", reason
#     "req.latency_ms=V > N", at the event's stamp; with a long debounce the
#     second one over it is debounced, and the ones at or under it have no row;
#   - a rule whose schema lacks the field, or has it as a string, is logged
#     once for the process and fires nothing.
# No timing thresholds: the debounce (1 h) is far longer than the test.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }

# ---- bad configuration ---------------------------------------------------------
refused() {     # refused PATTERN args...: exit 2 and one line matching PATTERN
    _pat=$1; shift
    timeout 20 "$BIN/d9collectd" --store "$T/bad" --shm-dir "$SHM" --endpoint \
        "ipc://$T/bad.sock" "$@" >"$T/bad.out" 2>&1
    _rc=$?
    cat "$T/bad.out"
    [ "$_rc" -eq 2 ] && [ "$(wc -l <"$T/bad.out")" -eq 1 ] && grep -q -- "$_pat" "$T/bad.out"
}
SYNTAX='expected SCHEMA.FIELD>N (or >=, <, <=; N a number)'
check "a rule without SCHEMA. is refused" \
    refused "--trigger-field: trigger-field: 'latency_ms>200': $SYNTAX" --trigger-field 'latency_ms>200'
check "a rule with = is refused" refused "trigger-field: 'req.ms=200': $SYNTAX" \
    --trigger-field 'req.ms=200'
check "a rule whose value is not a number is refused" \
    refused "trigger-field: 'req.ms>200ms': $SYNTAX" --trigger-field 'req.ms>200ms'
printf 'trigger-field = req.ms > 1\ntrigger-field = req.ms >\n' >"$T/bad.conf"
check "a bad rule in a config file is refused with its line" \
    refused "bad.conf:2: trigger-field: 'req.ms >': $SYNTAX" --config "$T/bad.conf"
check "more than 8 rules are refused" refused "trigger-field: at most 8 rules" \
    --trigger-field a.b\>1 --trigger-field a.b\>2 --trigger-field a.b\>3 --trigger-field a.b\>4 \
    --trigger-field a.b\>5 --trigger-field a.b\>6 --trigger-field a.b\>7 --trigger-field a.b\>8 \
    --trigger-field a.b\>9
printf 'trigger-field = req.latency_ms > 200\n' >"$T/ok.conf"
check "--print-config shows the rules, the file's and the flags'" sh -c "
    '$BIN/d9collectd' --print-config --store '$T/bad' --config '$T/ok.conf' \
        --trigger-field 'x.y<=-1.5' >'$T/pc.out' &&
    grep -qx 'trigger-field = req.latency_ms>200' '$T/pc.out' &&
    grep -qx 'trigger-field = x.y<=-1.5' '$T/pc.out'"
check "the printed config is accepted again" sh -c "
    '$BIN/d9collectd' --print-config --config '$T/pc.out' >'$T/pc2.out' &&
    cmp '$T/pc.out' '$T/pc2.out'"

# ---- the collector -----------------------------------------------------------------
check "collector starts" start_collector --trigger-debounce-ms 3600000 --trigger-rate 6000 \
    --trigger-field 'req.latency_ms>200' --trigger-field 'req.path>1' \
    --trigger-field 'req.nope>=1' --trigger-field 'nosuch.x<5'
ended() {       # ended PID: the process is finished in the store
    d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
    grep -q "\"pid\":$1,.*\"state\":\"\(exited\|crashed\)\"" "$T/ps.jsonl"
}
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" f:150 f:250 f:200 f:201 f:7 >"$T/p.out" 2>&1
P=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "the program ran" wait_for 20 ended "$P"
d9 sql --format jsonl "select source, reason, verdict, t_ns from triggers where pid = $P
    order by t_ns" >"$T/trig.jsonl" 2>"$T/trig.err"
d9 events --pid "$P" --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
check "exactly the events over the threshold fire, the second one debounced" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/trig.jsonl')]
got = [(r['source'], r['reason'], r['verdict']) for r in rows]
assert got == [('field', 'req.latency_ms=250 > 200', 'kept'),
               ('field', 'req.latency_ms=201 > 200', 'debounced')], (got, open('$T/trig.err').read())
"
check "each fires at its event's stamp" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/trig.jsonl')]
ev = [json.loads(l) for l in open('$T/ev.jsonl')]
ts = {e['fields']['latency_ms']: e['ts_ns'] for e in ev if e.get('event') == 'req'}
assert [r['t_ns'] for r in rows] == [ts[250], ts[201]], (rows, ts)
"
check "a rule on a string field is logged once and ignored" sh -c "
    test \$(grep -c \"pid $P: --trigger-field req.path>1: field 'path' of schema 'req' (id [0-9]*) is not numeric\" '$T/col.log') -eq 1"
check "a rule on a missing field is logged once and ignored" sh -c "
    test \$(grep -c \"pid $P: --trigger-field req.nope>=1: schema 'req' (id [0-9]*) has no field 'nope'\" '$T/col.log') -eq 1"
check "the collector stops cleanly" stop_collector
d9_finish trig_field
