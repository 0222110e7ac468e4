#!/bin/sh
# test_trig_sched.sh — the scheduling-delay trigger (--trigger-sched-ms)
# with the real collector in flight-recorder mode (--retain triggered):
#   - a program's worker is made to wait on the run queue: it unparks, runs
#     pinned to one CPU beside a busy thread pinned to the same CPU until its
#     own schedstat wait grew 200 ms, then parks (prog_trigseq q:200, with
#     DIAL9_SCHED_SAMPLE_US=0 so that park is sampled); 1.5 s of 10 ms polls
#     come before and after it;
#   - the park record's sampled wait fires a 'sched' trigger at the record's
#     stamp: a row of `d9 sql`'s triggers table, kept, reason 'sched wait of
#     N ms' with N >= 200, its window exactly [t - lookback, t + lookforward];
#     `d9 events` shows it as a d9_trigger row (source sched) at that stamp,
#     and the park record itself at the same stamp;
#   - the kept window is cut out as its own segment named for the trigger,
#     every record left lies in the window, the window is full of polls to
#     its edges, and the polls before it are dropped.
# No timing thresholds: the wait is measured by the program itself (bounded
# at 20 s), far over the 50 ms threshold; the polls are 10 ms apart, far
# under the 1 s lookback.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }
LB=1000
LF=500

check "collector starts with --retain triggered --trigger-sched-ms 50" start_collector \
    --perf-freq 0 --retain triggered --trigger-lookback-ms $LB --trigger-lookforward-ms $LF \
    --trigger-sched-ms 50
polls() { i=0; while [ $i -lt 150 ]; do printf ' p:10'; i=$((i + 1)); done; }
PS=$(polls)
# shellcheck disable=SC2086
DIAL9_SAMPLER=off DIAL9_SCHED_SAMPLE_US=0 "$TBIN/prog_trigseq" $PS q:200 $PS \
    >"$T/p.out" 2>"$T/p.err"
RC=$?
P=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "the worker waited 200 ms on the run queue" sh -c "[ $RC -eq 0 ] || { cat '$T/p.err'; exit 1; }"
sql() { sqlite3 "$STORE/index.sqlite" "$1"; }
# every segment of the run is decided once it is settled (lookback + 2 s
# after its newest record): nothing but the kept window is left
decided() {
    n=$(sql "SELECT count(*) FROM segments WHERE id NOT IN (SELECT segment_id FROM kept)") &&
    [ "$n" = 0 ] && [ "$(sql "SELECT count(*) FROM kept")" -ge 1 ]
}
check "every untriggered segment is dropped while the collector runs" wait_for 60 decided
check "the collector stops cleanly" stop_collector

d9 sql --format jsonl "select pid, t_ns, source, reason, verdict, win_t0, win_t1 from triggers
    order by t_ns" >"$T/trig.jsonl" 2>"$T/trig.err"
check "d9 sql: one trigger, sched, kept, its wait in the reason" python3 -c "
import json
r = [json.loads(l) for l in open('$T/trig.jsonl')]
assert [(x['pid'], x['source'], x['verdict']) for x in r] == [($P, 'sched', 'kept')], \
    (r, open('$T/trig.err').read())
ms = int(r[0]['reason'].split()[3])
assert r[0]['reason'] == 'sched wait of %d ms' % ms and ms >= 200, r
"
check "its window is exactly [t - lookback, t + lookforward]" python3 -c "
import json
r = json.loads(open('$T/trig.jsonl').readline())
assert (r['win_t0'], r['win_t1']) == (r['t_ns'] - $LB * 10**6, r['t_ns'] + $LF * 10**6), r
"
TNS=$(python3 -c "import json; print(json.loads(open('$T/trig.jsonl').readline())['t_ns'])")
d9 events --no-flush --pid "$P" --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
check "d9 events shows the trigger as a d9_trigger row at its stamp" python3 -c "
import json
ev = [json.loads(l) for l in open('$T/ev.jsonl')]
m = [e for e in ev if e['type'] == 'custom' and e['event'] == 'd9_trigger']
assert len(m) == 1 and m[0]['ts_ns'] == $TNS, (m, open('$T/ev.err').read())
assert m[0]['fields']['source'] == 'sched' and m[0]['fields']['verdict'] == 'kept', m
assert m[0]['fields']['reason'].startswith('sched wait of '), m
"
check "... and the worker's park record at the same stamp" python3 -c "
import json
ev = [json.loads(l) for l in open('$T/ev.jsonl')]
assert [e['ts_ns'] for e in ev if e['type'] == 'worker_park'] == [$TNS], \
    [e for e in ev if e['type'].startswith('worker')]
"
sql "SELECT t0_ns, t1_ns, trig_ns, trig_pid, reason FROM kept" >"$T/kept.txt"
check "the kept window is its own segment, named for the trigger" python3 -c "
import json
r = json.loads(open('$T/trig.jsonl').readline())
kept = [l.split('|', 4) for l in open('$T/kept.txt').read().splitlines()]
assert kept, 'no kept segment'
for t0, t1, tn, pid, reason in kept:
    assert (int(t0), int(t1), int(tn), int(pid)) == (r['win_t0'], r['win_t1'], r['t_ns'], $P), kept
    assert reason == 'sched: ' + r['reason'], (reason, r)
"
check "every record left lies in the window, and the window is full to its edges" python3 -c "
import json
r = json.loads(open('$T/trig.jsonl').readline())
t0, t1 = r['win_t0'], r['win_t1']
ev = [json.loads(l) for l in open('$T/ev.jsonl')]
ts = [e['ts_ns'] for e in ev if e.get('event') != 'd9_trigger']
assert len(ts) > 100, len(ts)
assert all(t0 <= t <= t1 for t in ts), ('outside the window', min(ts), max(ts), t0, t1)
edge = 200 * 1000000    # polls are 10 ms apart
assert min(ts) < t0 + edge and max(ts) > t1 - edge, (min(ts) - t0, t1 - max(ts))
"
check "the polls before the window are dropped" python3 -c "
n = sum(1 for l in open('$T/ev.jsonl') if 'poll_start' in l)
assert n < 300 * 0.8, n     # 300 polls made, 1.5 s of about 3.5 s kept
"
check "the store is consistent (fsck)" d9 fsck
d9_finish trig_sched
