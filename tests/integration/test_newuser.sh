#!/bin/sh
# test_newuser.sh — what tripped a new user, against a real d9collectd and
# prog_newuser:
#   - d9 sched on a saturated pool (workers that never park after start-up):
#     every worker listed, BUSY near 100 %, CPU matching the thread's own
#     CPU time;
#   - drops counted by cause (ring full, type mismatch, too large) and
#     said so by d9 ps and d9 events; typed events (D9_EVENT) from C;
#   - exit codes and signals in d9 ps (exited(CODE), crashed(SIGNAL)), also
#     for processes that ended before the collector started;
#   - d9 ps SPAN from the records, not from when the collector noticed;
#   - the collector's per-process profiling line says what is in force;
#   - stacks of a process that died before the collector adopted it are
#     symbolized from the loaded objects the agent published in its metadata.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }

# ---- before any collector: these end before it starts (a late collector) --------
# DIAL9_COLLECTOR=none: with no channel to ask, an agent leaves its region at
# a clean exit for a collector that scans later (else, with nobody listening
# at the endpoint, it removes it: docs/collector.md, region files)
DIAL9_COLLECTOR=none DIAL9_RING_KB=4 "$TBIN/prog_newuser" drops >"$T/drops.out" 2>"$T/drops.err"
DROPPID=$(head -n 1 "$T/drops.out")
FULL=$(sed -n 's/^lost_full=//p' "$T/drops.out")
DIAL9_COLLECTOR=none "$TBIN/prog_newuser" exit 3 >"$T/exit.out" 2>&1
EXITPID=$(head -n 1 "$T/exit.out")
"$TBIN/prog_newuser" signal >"$T/sig.out" 2>&1
SIGRC=$?
SIGPID=$(head -n 1 "$T/sig.out")
check "a traced program still dies of its fatal signal" test "$SIGRC" -eq $((128 + 11))
check "the drops program filled its ring" sh -c "[ '${FULL:-0}' -gt 0 ]"
# CPU samples taken in-process, the process gone before any collector saw its maps
DIAL9_COLLECTOR=none DIAL9_SAMPLER=itimer DIAL9_SAMPLER_HZ=999 "$TBIN/prog_hot" --seconds 1 \
    --threads 1 >"$T/hot.out" 2>&1 &
HOTPID=$!
wait "$HOTPID"
sleep 1     # the collector starts a second after they ended
check "collector starts" start_collector
ended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
          grep -q "\"pid\":$1,.*\"state\":\"$2" "$T/ps.jsonl"; }
all_ended() { ended "$DROPPID" exited && ended "$EXITPID" exited && ended "$SIGPID" crashed &&
              ended "$HOTPID" exited; }
check "a late collector stores the four ended processes" wait_for 20 all_ended
d9 flame --pid "$HOTPID" >"$T/hot.folded" 2>"$T/hot.err"
check "stacks of a process that died before adoption symbolize (objects from its metadata)" \
    sh -c "grep -q 'd9test_hot_spin' '$T/hot.folded' && ! grep -q 'no memory maps recorded' '$T/hot.err'"
check "drops: ps counts each cause apart" python3 -c "
import json
r = [json.loads(l) for l in open('$T/ps.jsonl') if json.loads(l)['pid'] == $DROPPID][0]
want = dict(lost_mismatch=3, lost_too_big=2, lost_full=$FULL, lost_no_ring=0, lost=5 + $FULL)
assert {k: r[k] for k in want} == want, r
"
d9 ps --pid "$DROPPID" >"$T/ps-drops.txt" 2>&1
check "drops: ps says why records were lost" \
    grep -q "pid $DROPPID: lost $((FULL + 5)) ($FULL ring full, 3 type mismatch, 2 too large)" "$T/ps-drops.txt"
d9 events --pid "$DROPPID" >"$T/ev-drops.txt" 2>"$T/ev-drops.err"
check "drops: events does not blame full rings for every drop" sh -c "
    grep -q '$FULL ring full, 3 type mismatch, 2 too large' '$T/ev-drops.err' &&
    ! grep -q 'dropped by full rings' '$T/ev-drops.err'"
d9 events --pid "$DROPPID" --event shipment --format jsonl >"$T/ship.jsonl" 2>/dev/null
check "typed events (D9_EVENT, C) decode with their fields" python3 -c "
import json
rows = sorted((json.loads(l)['fields'] for l in open('$T/ship.jsonl')), key=lambda f: f['qty'])
want = [dict(item='crate', qty=i, delta=-i, price=2.5, ok=bool(i % 2)) for i in range(5)]
assert rows == want, rows
"
check "exit code: ps shows exited(3)" python3 -c "
import json
r = [json.loads(l) for l in open('$T/ps.jsonl') if json.loads(l)['pid'] == $EXITPID][0]
assert r['state'] == 'exited' and r['exit_code'] == 3, r
"
check "fatal signal: ps shows crashed(SIGSEGV)" python3 -c "
import json
r = [json.loads(l) for l in open('$T/ps.jsonl') if json.loads(l)['pid'] == $SIGPID][0]
assert r['state'] == 'crashed' and r['exit_code'] == 11, r
"
d9 ps >"$T/ps.txt"
check "ps text: exited(3) and crashed(SIGSEGV)" sh -c "
    grep -q '^$EXITPID .* exited(3) ' '$T/ps.txt' && grep -q '^$SIGPID .* crashed(SIGSEGV) ' '$T/ps.txt'"
check "ps SPAN is the records' range, not when a late collector noticed the end" python3 -c "
import json
r = [json.loads(l) for l in open('$T/ps.jsonl') if json.loads(l)['pid'] == $EXITPID][0]
assert r['span_ns'] < 500000000, r        # ended a second before the collector started
"

# ---- saturated pool ----------------------------------------------------------------
"$TBIN/prog_newuser" saturated 2 >"$T/sat.out" 2>"$T/sat.err"
SATPID=$(head -n 1 "$T/sat.out")
check "the saturated pool ran and ended" wait_for 20 ended "$SATPID" exited
check "the per-process profiling line says what is in force (no '1 in 0')" sh -c "
    ! grep -q '1 in 0 context switches' '$T/col.log' &&
    grep -q 'pid $SATPID (prog_newuser): \(on-CPU samples from the per-CPU events\|perf sampling at\|the agent samples\).*' '$T/col.log' ||
    grep -q 'pid $SATPID .*perf_event_open not permitted' '$T/col.log'"

d9 sched --pid "$SATPID" --format jsonl >"$T/sched.jsonl" 2>"$T/sched.err"
check "sched lists every worker of a pool that never parks" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/sched.jsonl')]
assert sorted(r['worker'] for r in rows) == [0, 1, 2], rows
assert all(r['runtime'] == 'pool' and r['polls'] > 0 for r in rows), rows
"
check "sched shows a saturated worker as busy" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/sched.jsonl')]
assert all(r['busy_pct'] >= 90 for r in rows), [(r['worker'], r['busy_pct']) for r in rows]
"
check "sched's CPU of a worker that never parks matches its thread's CPU time" python3 -c "
import json, re
own = {}
for l in open('$T/sat.out'):
    m = re.match(r'worker=(\d+) tid=(\d+) cpu_ns=(\d+)', l)
    if m:
        own[int(m.group(1))] = int(m.group(3))
rows = {r['worker']: r for r in map(json.loads, open('$T/sched.jsonl'))}
assert sorted(own) == [0, 1, 2], own
for w, cpu in own.items():
    got = rows[w]['cpu_ns']
    # profile samples on a loaded host: tick sampling, a few dozen samples per thread
    assert 0.4 * cpu <= got <= 1.6 * cpu, (w, got, cpu)
"
d9_finish newuser
