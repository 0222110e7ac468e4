#!/bin/sh
# test_newuser.sh — what tripped a new user, against a real d9collectd and
# prog_newuser:
#   - d9 sched on a saturated pool (workers that never park after start-up):
#     every worker listed, BUSY near 100 %, CPU matching the thread's own
#     CPU time;
#   - exit codes and signals in d9 ps (exited(CODE), crashed(SIG)).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }

check "collector starts" start_collector
# ---- saturated pool ----------------------------------------------------------------
"$TBIN/prog_newuser" saturated 2 >"$T/sat.out" 2>"$T/sat.err"
SATPID=$(head -n 1 "$T/sat.out")
ended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
          grep -q "\"pid\":$1,.*\"state\":\"$2" "$T/ps.jsonl"; }
check "the saturated pool ran and ended" wait_for 20 ended "$SATPID" exited
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
