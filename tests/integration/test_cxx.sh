#!/bin/sh
# test_cxx.sh — agent/d9.h from C++: prog_cxx.cpp, built with g++ and with
# clang++ (-Wall -Wextra -Werror) against libd9agent.so, uses every macro and
# every function of the header against a real d9collectd; what it recorded
# must come out of the store decoded exactly as from C. The header must
# also compile as C++ with D9_DISABLE.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
N=300
d9() { "$BIN/d9" --store "$STORE" "$@"; }

check "collector starts" start_collector
for x in gxx clangxx; do
    # the sampler fallback would claim a second ring: prog_cxx checks it has one
    DIAL9_SAMPLER=off "$TBIN/prog_cxx_$x" $N >"$T/$x.out" 2>"$T/$x.err"
    check "prog_cxx_$x passes its own checks (ids, stats, region, shutdown)" \
        sh -c "test -s '$T/$x.out' || { cat '$T/$x.err'; exit 1; }"
done
GPID=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$T/gxx.out")
CPID=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$T/clangxx.out")
ended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
          grep -q "\"pid\":$GPID,.*\"state\":\"exited\"" "$T/ps.jsonl" &&
          grep -q "\"pid\":$CPID,.*\"state\":\"exited\"" "$T/ps.jsonl"; }
check "both programs end as exited in the store" wait_for 20 ended

for x in gxx clangxx; do
    pid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$T/$x.out")
    d9 events --pid "$pid" --format jsonl >"$T/$x.jsonl" 2>"$T/$x.events.err"
    check "$x: every record of every call is stored" python3 -c "
import json, collections
rows = [json.loads(l) for l in open('$T/$x.jsonl')]
n = collections.Counter(r['type'] for r in rows)
want = {t: $N for t in ('task_spawn', 'wake', 'poll_start', 'queue_depth', 'custom',
                        'poll_end', 'task_terminate')}
want.update(worker_park=1, worker_unpark=1)
got = {t: n[t] for t in want}
assert got == want, (got, want)
"
    check "$x: custom events decode with every field type" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/$x.jsonl') if json.loads(l)['type'] == 'custom']
got = sorted((r['fields']['n'], r['fields']) for r in rows if r['event'] == 'cxx_event')
assert len(got) == $N, len(got)
for i, (n, f) in enumerate(got):
    assert n == i, (n, i)
    assert f == {'name': 'item', 'n': i, 'delta': -i, 'half': i / 2.0, 'odd': bool(i % 2)}, f
"
    check "$x: runtime, D9_LOC and registered locations by name" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/$x.jsonl')]
spawn = [r for r in rows if r['type'] == 'task_spawn']
poll = [r for r in rows if r['type'] == 'poll_start']
assert all(r['runtime'] == 'cxxrt' for r in spawn + poll), spawn[0]
assert all('prog_cxx.cpp' in r['loc'] and 'loop_site' in r['loc'] for r in spawn), spawn[0]
assert all(r['loc'] == 'prog_cxx.cpp:4242 manual_site' for r in poll), poll[0]
"
    check "$x: D9_WORKER_NONE_ID is the runtime's global queue" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/$x.jsonl')]
q = [r for r in rows if r['type'] == 'queue_depth']
assert all(r['worker'] == 'global' for r in q), q[0]
assert sorted(r['depth'] for r in q) == list(range($N))
"
done
for c in g++ clang++; do
    check "d9.h compiles as C++ with D9_DISABLE ($c)" $c -std=c++11 -I. -Wall -Wextra -Werror \
        -DD9_DISABLE -fsyntax-only tests/integration/prog_cxx.cpp
done
check "the collector stops cleanly" stop_collector
d9_finish cxx
