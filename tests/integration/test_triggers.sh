#!/bin/sh
# test_triggers.sh — triggers through the real collector (trigd.h):
#   - d9_trigger() markers: each call is one custom event of the reserved
#     schema "d9_trigger" with its reason (NULL as "", long reasons cut to
#     255 bytes), shown by `d9 events`;
#   - each trigger is a row of the index's triggers table with its source,
#     reason, verdict and kept window, with known timings: the first keeps
#     exactly [t - lookback, t + lookforward]; a trigger of the same pid
#     within the debounce is debounced; one of another pid whose window
#     overlaps is merged and both rows get the merged window; past the rate
#     limit a trigger is rate-limited; far-apart triggers keep their own
#     windows;
#   - the sources: markers, `d9 trigger --pid` (and its refusal of a pid
#     that is not traced), a poll longer than --trigger-poll-ms, a crash
#     with --trigger-crash yes, a record lost by a ring with --trigger-lost
#     yes (--trigger-sched-ms: its config only; the unit test feeds waits);
#   - bad trigger config (an unknown trigger key, absurd windows, a rate of
#     0, in flags and config files) is refused with one clear line, exit 2.
# No timing thresholds: the debounce (1 h) and lookback (50 min) are far
# longer than the test, the sleeps far longer than the 1 ms windows. A
# window's start is clamped at the monotonic clock's 0, so on a host up for
# less than the lookback it starts at 0 (lo()).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }
LB_MS=3000000
LF_MS=1000

# ---- bad configuration ---------------------------------------------------------
refused() {     # refused PATTERN args...: exit 2 and one line matching PATTERN
    _pat=$1; shift
    # bounded: a collector that accepted the config would run until killed
    timeout 20 "$BIN/d9collectd" --store "$T/bad" --shm-dir "$SHM" --endpoint \
        "ipc://$T/bad.sock" "$@" >"$T/bad.out" 2>&1
    _rc=$?
    cat "$T/bad.out"
    [ "$_rc" -eq 2 ] && [ "$(wc -l <"$T/bad.out")" -eq 1 ] && grep -q -- "$_pat" "$T/bad.out"
}
check "an unknown trigger flag is refused, naming the known keys" \
    refused "unknown trigger key 'trigger-fancy'.*trigger-lookback-ms" --trigger-fancy 3
printf 'trigger-lookback-ms = 100\ntrigger-thresold = 5\n' >"$T/unknown.conf"
check "an unknown trigger key in a config file is refused with its line" \
    refused "unknown.conf:2: unknown trigger key 'trigger-thresold'" --config "$T/unknown.conf"
check "an absurd lookback (over 1 h) is refused" \
    refused "trigger-lookback-ms: '3600001' is not a number in 1..3600000" \
    --trigger-lookback-ms 3600001
printf 'trigger-lookforward-ms = 99999999999\n' >"$T/absurd.conf"
check "an absurd lookforward in a config file is refused" \
    refused "absurd.conf:1: trigger-lookforward-ms: .* is not a number in 0..3600000" \
    --config "$T/absurd.conf"
check "a zero lookback is refused" refused "trigger-lookback-ms: '0'" --trigger-lookback-ms 0
check "a rate of 0 is refused" refused "trigger-rate: '0' is not a number in 1..6000" \
    --trigger-rate 0
check "--trigger-lost takes yes or no" refused "trigger-lost: 'maybe' is not yes or no" \
    --trigger-lost maybe
check "an absurd --trigger-sched-ms is refused" \
    refused "trigger-sched-ms: '3600001' is not a number in 0..3600000" --trigger-sched-ms 3600001
check "retain takes all or triggered only" refused "retain: 'some' is not all or triggered" \
    --retain some
check "--print-config shows the trigger settings" sh -c "
    '$BIN/d9collectd' --print-config --store '$T/bad' --retain triggered --trigger-crash yes \
        --trigger-poll-ms 50 --trigger-sched-ms 20 --trigger-lost yes >'$T/pc.out' &&
    grep -qx 'trigger-sched-ms = 20' '$T/pc.out' && grep -qx 'trigger-lost = yes' '$T/pc.out' &&
    grep -qx 'retain = triggered' '$T/pc.out' && grep -qx 'trigger-crash = yes' '$T/pc.out' &&
    grep -qx 'trigger-poll-ms = 50' '$T/pc.out' && grep -qx 'trigger-lookback-ms = 10000' '$T/pc.out'"

# ---- collector A: long windows, long debounce -----------------------------------
check "collector starts" start_collector --trigger-lookback-ms $LB_MS \
    --trigger-lookforward-ms $LF_MS --trigger-debounce-ms 3600000 --trigger-rate 6000 \
    --trigger-poll-ms 50 --trigger-crash yes --trigger-lost yes
ended() {       # ended PID: the process is finished in the store
    d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
    grep -q "\"pid\":$1,.*\"state\":\"\(exited\|crashed\)\"" "$T/ps.jsonl"
}
# trig_rows: the triggers table as JSON lines (index read directly)
trig_rows() {
    python3 -c "
import json, sqlite3
db = sqlite3.connect('file:$STORE/index.sqlite?mode=ro', uri=True)
for r in db.execute('SELECT pid, t_ns, source, reason, verdict, win_t0, win_t1 FROM triggers ORDER BY id'):
    print(json.dumps(dict(zip(['pid','t','source','reason','verdict','w0','w1'], r))))
" >"$T/trig.jsonl"
}
# expect PY: a python assertion over rows (the triggers table as dicts)
expect() {
    trig_rows && python3 -c "
import json
rows = [json.loads(l) for l in open('$T/trig.jsonl')]
LB, LF = $LB_MS * 10**6, $LF_MS * 10**6
def lo(t):      # a window starts no earlier than the clock's 0 (boot): a host up for less than the lookback
    return max(0, t - LB)
$1
" || { cat "$T/trig.jsonl"; return 1; }
}

DIAL9_SAMPLER=off "$TBIN/prog_trigger" >"$T/p.out" 2>"$T/p.err"
P1=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "prog_trigger ran" test -n "$P1"
check "the program ends as exited in the store" wait_for 20 ended "$P1"
d9 events --pid "$P1" --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
check "each d9_trigger is a d9_trigger marker with its reason, in order" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/ev.jsonl')]
got = [r['fields']['reason'] for r in rows if r['type'] == 'custom' and r['event'] == 'd9_trigger']
assert got == ['first', '', 'r' * 255], (got, rows[:3], open('$T/ev.err').read())
"
check "markers are triggers: the first kept, the two within the debounce debounced" expect "
m = [r for r in rows if r['pid'] == $P1]
assert [(r['source'], r['reason'], r['verdict']) for r in m] == [
    ('marker', 'first', 'kept'), ('marker', '', 'debounced'), ('marker', 'r' * 255, 'debounced')], m
assert m[1]['w0'] is None and m[2]['w1'] is None, m
"
check "the kept window is exactly [t - lookback, t + lookforward]" expect "
r = rows[0]
assert (r['w0'], r['w1']) == (lo(r['t']), r['t'] + LF), r
"

DIAL9_SAMPLER=off "$TBIN/prog_trigseq" t:second >"$T/p2.out" 2>&1
P2=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p2.out")
check "a second program ran" wait_for 20 ended "$P2"
check "an overlapping trigger of another pid merges: both rows name the merged window" expect "
a = rows[0]; b = [r for r in rows if r['pid'] == $P2][0]
assert (b['source'], b['reason'], b['verdict']) == ('marker', 'second', 'merged'), b
assert (a['w0'], a['w1']) == (lo(a['t']), b['t'] + LF), (a, b)
assert (b['w0'], b['w1']) == (a['w0'], a['w1']), (a, b)
"

# d9 trigger --pid: a live traced process, then one that is not traced
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" "w:$T/go" >"$T/p3.out" 2>&1 &
at_exit kill -9 $!
wait_for 20 grep -q '^pid=' "$T/p3.out"
P3=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p3.out")
check "d9 trigger --pid fires a trigger of a live traced process" wait_for 20 sh -c "
    '$BIN/d9' --endpoint '$EP' trigger --pid '$P3' --reason 'from the shell' >'$T/tr.out' 2>&1"
check "d9 trigger says the verdict and the kept window" \
    grep -q "^trigger of pid $P3: merged, keeping [0-9]*\.\.[0-9]*$" "$T/tr.out"
check "d9 trigger refuses a pid the collector does not trace" sh -c "
    ! '$BIN/d9' --endpoint '$EP' trigger --pid 1 >'$T/tr1.out' 2>&1 &&
    grep -q 'pid 1 is not a live process traced by this collector' '$T/tr1.out'"
check "d9 trigger without --pid is a usage error" sh -c "
    '$BIN/d9' --endpoint '$EP' trigger >/dev/null 2>&1; test \$? -eq 2"
touch "$T/go"
check "the shell trigger is recorded with its reason" expect "
r = [r for r in rows if r['pid'] == $P3]
assert [(x['source'], x['reason'], x['verdict']) for x in r] == [('shell', 'from the shell', 'merged')], r
assert r[0]['w0'] == rows[0]['w0'] and r[0]['w1'] == r[0]['t'] + LF, r
"

# a poll of 200 ms, longer than --trigger-poll-ms 50
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" p:200 >"$T/p4.out" 2>&1
P4=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p4.out")
check "the long-poll program ran" wait_for 20 ended "$P4"
check "a poll longer than --trigger-poll-ms triggers at its end" expect "
r = [r for r in rows if r['pid'] == $P4]
assert len(r) == 1 and r[0]['source'] == 'poll' and r[0]['verdict'] == 'merged', r
ms = int(r[0]['reason'].split()[2])
assert r[0]['reason'] == 'poll of %d ms' % ms and ms >= 200, r
"

# a crash (SIGABRT)
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" crash >"$T/p5.out" 2>&1
P5=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p5.out")
check "the crashing program crashed in the store" wait_for 20 ended "$P5"
check "a crash is a trigger (--trigger-crash yes), keeping the window before it" expect "
r = [r for r in rows if r['pid'] == $P5]
assert [x['source'] for x in r] == ['crash'] and r[0]['reason'] in ('crashed', 'crashed (signal 6)'), r
assert r[0]['verdict'] == 'merged' and r[0]['w0'] <= lo(r[0]['t']), r
"

# a record lost by its ring (a type mismatch: deterministic, no full ring)
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" lose >"$T/p7.out" 2>&1
P7=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p7.out")
check "the losing program ran" wait_for 20 ended "$P7"
# the drain fires it when it sees the ring's lost count grow: wait for the row
check "records lost by a ring are a trigger (--trigger-lost yes)" wait_for 20 expect "
r = [r for r in rows if r['pid'] == $P7]
assert [(x['source'], x['verdict']) for x in r] == [('lost', 'merged')], r
assert r[0]['reason'].startswith('ring ') and r[0]['reason'].endswith(' lost 1 records'), r
"
check "the collector stops cleanly" stop_collector
check "d9 findings: a trigger finding per kept trigger, its range the kept window" sh -c "
    '$BIN/d9' --store '$STORE' findings --format jsonl >'$T/find.jsonl' 2>'$T/find.err' && python3 -c \"
import json
f = [json.loads(l) for l in open('$T/find.jsonl')]
t = [x for x in f if x['kind'] == 'trigger']
assert [x['where'] for x in t] == ['marker: first', 'marker: second', 'shell: from the shell',
    'poll: ' + t[3]['where'][6:], 'crash: ' + t[4]['where'][7:], 'lost: ' + t[5]['where'][6:]], t
assert len({(x['from_ns'], x['to_ns']) for x in t}) == 1, t
assert f[-1]['kind'] == 'trigger', f
\""
check "d9 sql's triggers table lists them by source and verdict" sh -c "
    '$BIN/d9' --store '$STORE' sql --format jsonl 'select source, verdict, count(*) as n from triggers
        group by 1, 2 order by 1, 2' >'$T/sql.jsonl' 2>&1 && python3 -c \"
import json
got = [tuple(json.loads(l).values()) for l in open('$T/sql.jsonl')]
assert got == [('crash', 'merged', 1), ('lost', 'merged', 1), ('marker', 'debounced', 2),
               ('marker', 'kept', 1), ('marker', 'merged', 1), ('poll', 'merged', 1),
               ('shell', 'merged', 1)], got
\""

# ---- collector B: 1 ms windows, no debounce, two triggers a minute ---------------
STORE=$T/store2
LB_MS=1
LF_MS=0
: >"$T/col.log"
check "collector B starts" start_collector --trigger-lookback-ms 1 --trigger-lookforward-ms 0 \
    --trigger-debounce-ms 0 --trigger-rate 2 --metrics 127.0.0.1:0
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" t:a s:100 t:b s:100 t:c >"$T/p6.out" 2>&1
P6=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p6.out")
check "the three-trigger program ran" wait_for 20 ended "$P6"
check "far-apart triggers keep their own windows; past the rate limit, rate-limited" expect "
assert [(r['reason'], r['verdict']) for r in rows] == [
    ('a', 'kept'), ('b', 'kept'), ('c', 'rate-limited')], rows
for r in rows[:2]:
    assert (r['w0'], r['w1']) == (lo(r['t']), r['t']), r
assert rows[2]['w0'] is None, rows
"
MPORT=$(sed -n 's|.*metrics: http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/col.log")
# the text is rendered every 250 ms: wait for the count to show
scraped() {
    curl -s "http://127.0.0.1:$MPORT/metrics" >"$T/m.txt" &&
    grep -qx 'd9_triggers_total{source="marker",verdict="rate-limited"} 1' "$T/m.txt"
}
check "the log names the metrics port" test -n "$MPORT"
check "--metrics counts the rate-limited trigger" wait_for 20 scraped
check "--metrics counts the kept ones, and zeros for the others" sh -c "
    grep -qx 'd9_triggers_total{source=\"marker\",verdict=\"kept\"} 2' '$T/m.txt' &&
    grep -qx 'd9_triggers_total{source=\"crash\",verdict=\"merged\"} 0' '$T/m.txt' &&
    grep -qx 'd9_triggers_total{source=\"sched\",verdict=\"kept\"} 0' '$T/m.txt' &&
    grep -qx 'd9_triggers_total{source=\"lost\",verdict=\"debounced\"} 0' '$T/m.txt' &&
    grep -qx '# TYPE d9_triggers_total counter' '$T/m.txt'"
check "the collector B stops cleanly" stop_collector
d9_finish triggers
