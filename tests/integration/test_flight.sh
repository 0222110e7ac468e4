#!/bin/sh
# test_flight.sh — the flight recorder (d9collectd --retain triggered) with
# the real collector: triggers at known times (d9_trigger markers, a crash)
# keep their windows [t - lookback, t + lookforward] and nothing else, record
# by record; the kept windows are their own segments in the index's kept
# table, named for their trigger; --ship uploads only them, each manifest
# naming its trigger, and a store pulled from them counts their records in
# d9 ps; --store-mb retention deletes untriggered data before a
# kept window.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/lib_s3.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }
URL=s3://d9-flight/fr
LB=1000
LF=500

if ! s3_start d9-flight; then
    check "s3rver starts" false
    d9_finish flight; exit
fi
check "collector starts with --retain triggered and --ship" start_collector \
    --perf-freq 0 --retain triggered --trigger-lookback-ms $LB --trigger-lookforward-ms $LF \
    --trigger-crash yes --ship $URL --s3-endpoint "$S3_ENDPOINT"

# 1.5 s of 10 ms polls, a trigger, 1.5 s more, a second trigger, 1.5 s more
polls() { i=0; while [ $i -lt 150 ]; do printf ' p:10'; i=$((i + 1)); done; }
P=$(polls)
# shellcheck disable=SC2086
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" $P t:first $P t:second $P >"$T/a.out" 2>"$T/a.err"
APID=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/a.out")
check "the marker program ran" test -n "$APID"
# then a program that crashes after 1.5 s of polls (no perf samples: --perf-freq 0,
# so its last record is its last poll, where the crash trigger fires)
# shellcheck disable=SC2086
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" $P crash >"$T/b.out" 2>"$T/b.err"
BPID=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/b.out")
check "the crashing program ran" test -n "$BPID"

# every segment of the run is decided once it is settled (lookback + 2 s
# after its newest record): nothing but kept windows is left
undecided() { sql "SELECT count(*) FROM segments WHERE id NOT IN (SELECT segment_id FROM kept)"; }
decided() { n=$(undecided) && [ "$n" = 0 ] && [ "$(sql "SELECT count(*) FROM triggers WHERE source = 'crash'")" = 1 ]; }
check "every untriggered segment is dropped while the collector runs" wait_for 60 decided
unshipped() { sql "SELECT count(*) FROM segments s LEFT JOIN uploads u ON u.segment_id = s.id
                   WHERE u.state IS NOT 'shipped'"; }
all_shipped() { n=$(unshipped) && [ "$n" = 0 ]; }
check "every kept window is shipped" wait_for 60 all_shipped
check "the collector stops cleanly" stop_collector

sql "SELECT t_ns, win_t0, win_t1, source, reason FROM triggers WHERE verdict = 'kept' ORDER BY t_ns" \
    >"$T/wins.txt"
sql "SELECT segment_id, t0_ns, t1_ns, trig_ns, trig_pid, reason FROM kept ORDER BY segment_id" \
    >"$T/kept.txt"
d9 events --no-flush --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
check "three kept triggers: two markers and the crash" sh -c "
    [ \$(wc -l <'$T/wins.txt') -eq 3 ] && grep -q '|marker|first$' '$T/wins.txt' &&
    grep -q '|marker|second$' '$T/wins.txt' && grep -q '|crash|crashed (signal 6)$' '$T/wins.txt'"
check "each kept segment names its trigger: window, time, pid, source and reason" python3 -c "
wins = [l.split('|') for l in open('$T/wins.txt').read().splitlines()]
kept = [l.split('|', 5) for l in open('$T/kept.txt').read().splitlines()]
assert kept, 'no kept segments'
for seg, t0, t1, tn, pid, reason in kept:
    w = [x for x in wins if int(x[0]) == int(tn)]
    assert w, (seg, tn, wins)
    w = w[0]
    assert (int(t0), int(t1)) == (int(w[1]), int(w[2])), (seg, t0, t1, w)
    assert reason == w[3] + ': ' + w[4], (reason, w)
    assert int(pid) in ($APID, $BPID), pid
    assert int(t1) - int(t0) == ($LB + $LF) * 1000000, (t0, t1)
reasons = set(k[5] for k in kept)
assert reasons == {'marker: first', 'marker: second', 'crash: crashed (signal 6)'}, reasons
"
check "every record left lies in a kept window, and each window is there to its bounds" python3 -c "
import json
wins = [tuple(int(v) for v in l.split('|')[:3]) for l in open('$T/wins.txt').read().splitlines()]
rows = [json.loads(l) for l in open('$T/ev.jsonl')]
assert len(rows) > 100, (len(rows), open('$T/ev.err').read())
for r in rows:
    assert any(t0 <= r['ts_ns'] <= t1 for _, t0, t1 in wins), ('outside every window', r, wins)
edge = 200 * 1000000    # polls are 10 ms apart: each window is full of them to its edges
for t, t0, t1 in wins[:2]:
    inside = [r['ts_ns'] for r in rows if r['pid'] == $APID and t0 <= r['ts_ns'] <= t1]
    assert inside and min(inside) < t0 + edge and max(inside) > t1 - edge, (t0, t1, inside[:3])
"
check "untriggered data is dropped: the polls before the first window are gone" python3 -c "
import json
wins = [tuple(int(v) for v in l.split('|')[:3]) for l in open('$T/wins.txt').read().splitlines()]
a = [json.loads(l)['ts_ns'] for l in open('$T/ev.jsonl') if '\"pid\":$APID,' in l]
polls = sum(1 for l in open('$T/ev.jsonl') if '\"pid\":$APID,' in l and 'poll_start' in l)
assert polls < 450 * 0.8, polls            # 450 polls made, 2 x 1.5 s of 4.5 s kept
assert min(a) >= wins[0][1], (min(a), wins[0])
"
check "the crash keeps the window before it, to the last record" python3 -c "
import json
crash = [l.split('|') for l in open('$T/wins.txt').read().splitlines() if '|crash|' in l][0]
t, t0, t1 = int(crash[0]), int(crash[1]), int(crash[2])
b = [json.loads(l)['ts_ns'] for l in open('$T/ev.jsonl') if '\"pid\":$BPID,' in l]
assert b and max(b) == t, (max(b) if b else None, t)    # the crash fires at its last record
assert min(b) >= t0 and min(b) < t0 + 200 * 1000000, (min(b), t0)
"
check "d9 ps still shows the crash" sh -c "'$BIN/d9' --store '$STORE' ps --no-flush --format jsonl | grep -q '\"pid\":$BPID,.*\"state\":\"crashed\"'"
check "the store is consistent (fsck)" d9 fsck

"$TBIN/tool_s3" "$URL" list >"$T/up.out"
NKEPT=$(wc -l <"$T/kept.txt")
check "the bucket holds the kept windows and nothing else" sh -c "
    [ \$(grep -c '\\.d9seg ' '$T/up.out') -eq $NKEPT ] &&
    [ \$(grep -c '\\.manifest\\.json ' '$T/up.out') -eq $NKEPT ]"
man_ok() {
    for k in $(sed -n 's/^\([^ ]*\.manifest\.json\) .*/\1/p' "$T/up.out"); do
        "$TBIN/tool_s3" "$URL" get "$k" "$T/m.json" >/dev/null || return 1
        python3 -c "
import json
m = json.load(open('$T/m.json'))
kept = {int(l.split('|')[0]): l.split('|') for l in open('$T/kept.txt').read().splitlines()}
k = kept[m['segment_id']]
assert m['trigger_reason'] == k[5] and m['trigger_t_ns'] == int(k[3]), (m, k)
assert (m['trigger_t0_ns'], m['trigger_t1_ns']) == (int(k[1]), int(k[2])), (m, k)
assert m['trigger_pid'] == int(k[4]) and m['trigger_count'] >= 1, m
" || return 1
    done
}
check "each manifest names its trigger (reason, time, window, pid)" man_ok
# a store pulled from the bucket holds only the kept windows: d9 ps counts
# their records (the sources they were cut from are not there)
check "d9 pull of the kept windows" sh -c "
    '$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' '$URL' '$T/pulled' >'$T/pull.out' 2>&1 ||
    { cat '$T/pull.out'; exit 1; }"
check "the pulled store's d9 ps record counts are the records it holds" \
    python3 tests/integration/ps_records.py "$BIN/d9" "$T/pulled"

# ---- retention: --store-mb deletes untriggered data before a kept window --------
s3_stop
STORE=$T/store2
check "collector starts with --retain triggered --store-mb 1" start_collector \
    --perf-freq 0 --retain triggered --trigger-lookback-ms $LB --trigger-lookforward-ms 0 \
    --store-mb 1 --segment-mb 1 --log-level debug
# shellcheck disable=SC2086
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" p:10 p:10 p:10 t:keep p:10 >"$T/c.out" 2>"$T/c.err"
CPID=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/c.out")
kept_one() { n=$(sql "SELECT count(*) FROM kept k JOIN segments s ON s.id = k.segment_id
                       JOIN processes p ON p.id = s.process_id WHERE p.pid = $CPID") &&
             [ "$n" -ge 1 ] && n=$(undecided) && [ "$n" = 0 ]; }
check "the trigger's window is cut out and kept" wait_for 30 kept_one
KEPT=$(sql "SELECT path FROM segments WHERE id IN (SELECT segment_id FROM kept)")
# untriggered data, more than the cap, faster than it settles
workload w --threads 2 --events 400000 --polls --batch 50 --pace-us 1000 --exit clean
evicted() { grep -q 'retention: evicted segment' "$T/col.log"; }
check "the cap evicts segments" wait_for 60 evicted
check "the workload finishes" wait_for 60 wl_done w
check "the kept window survives retention, its row and its file" sh -c "
    [ -n '$KEPT' ] && for f in $KEPT; do
        [ \"\$(sqlite3 '$STORE/index.sqlite' \"SELECT count(*) FROM segments WHERE path = '\$f'\")\" = 1 ] &&
        test -s '$STORE/'\$f || exit 1; done"
check "the collector stops cleanly" stop_collector
d9_finish flight
