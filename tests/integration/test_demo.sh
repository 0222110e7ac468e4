#!/bin/sh
# test_demo.sh — `make demo`'s script end to end: run-demo.sh starts the
# collector, runs d9demo, queries, writes a trace and stops cleanly.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP

# run in a temp dir so ./d9-demo-store and the trace land there
demo_store
rc=$?
check "run-demo.sh exits 0" test $rc -eq 0
has() { grep -q -- "$1" "$T/demo.out" || { echo "'$1' missing"; tail -n 40 "$T/demo.out"; cat "$T/demo.err"; return 1; }; }
check "the demo prints its throughput" has 'd9demo: [0-9]* tasks in .* tasks/s'
check "ps lists the demo as exited" has 'd9demo  *exited'
check "top-polls shows the long report polls" has 'demo.c:[0-9]* spawn_report_task'
check "the custom event is decoded with its fields" has 'custom request_done path=/.* status=[0-9]* latency_ms='
# the demo's own count of its polls, per runtime, is top-polls' count of the
# whole store (its last line), poll for poll: nothing is lost at this load,
# and when something is, top-polls misses at most that many
check "the demo's poll counts (demo, io) are top-polls' counts" python3 -c "
import re
out = open('$T/demo.out').read()
d = re.search(r'd9demo: .* (\d+) polls \(demo (\d+), io (\d+)\), .* (\d+) events lost', out)
t = re.search(r'^(\d+) polls in the window \(demo (\d+), io (\d+); (\d+) unfinished\)', out, re.M)
assert d and t, (d, t)
dn, tn, lost = [int(x) for x in d.groups()[:3]], [int(x) for x in t.groups()[:3]], int(d.group(4))
assert dn[0] == dn[1] + dn[2] and tn[0] == tn[1] + tn[2], (dn, tn)
assert int(t.group(4)) == 0, t.group(0)
if lost == 0:
    assert dn == tn, (d.group(0), t.group(0))
else:
    assert all(0 <= a - b <= lost for a, b in zip(dn, tn)), (d.group(0), t.group(0))
"
check "sched shows both runtimes" sh -c "grep -q ' demo  ' '$T/demo.out' && grep -q ' io  ' '$T/demo.out'"
check "the trace is valid JSON with poll slices" python3 -c "
import json
ev = json.load(open('$T/d9-demo-trace.json'))['traceEvents']
assert any(e['ph'] == 'X' and e.get('cat') == 'poll' for e in ev)
"
# The demo is built with frame pointers: the CPU samples taken while a report
# task (spawned at spawn_report_task) was polled hold the whole chain from
# the worker thread down to slow_checksum and its loop.
deep_report_stacks() {
    S=$T/d9-demo-store
    "$BIN/d9" --store "$S" top-polls --limit 1000 --format jsonl >"$T/polls.jsonl" || return 1
    tasks=$(python3 -c "
import json, sys
for l in open(sys.argv[1]):
    p = json.loads(l)
    if p['location'].endswith(' spawn_report_task'):
        print(p['task'])" "$T/polls.jsonl" | sort -u)
    [ -n "$tasks" ] || { echo "no poll of a report task"; return 1; }
    for t in $tasks; do "$BIN/d9" --store "$S" flame --task "$t" 2>/dev/null; done >"$T/report.folded"
    grep -q 'worker_main;slow_checksum;work_iters [0-9]*$' "$T/report.folded" ||
        { echo "no worker_main;slow_checksum;work_iters stack in:"; cat "$T/report.folded"; return 1; }
}
check "the trace carries CPU samples with stacks and wake flows to the wakee's poll" python3 -c "
import json
ev = json.load(open('$T/d9-demo-trace.json'))['traceEvents']
cpu = [e for e in ev if e.get('cat') == 'cpu']
assert cpu and all(e['ph'] == 'i' and e['args']['stack'] for e in cpu), 'no CPU samples'
assert any('slow_checksum' in e['args']['stack'] for e in cpu), 'slow_checksum never sampled'
starts = {e['id'] for e in ev if e['ph'] == 's' and e.get('cat') == 'wake'}
ends = [e for e in ev if e['ph'] == 'f' and e.get('cat') == 'wake']
assert ends and all(e['id'] in starts and e['bp'] == 'e' for e in ends), 'no wake flows'
"
check "flame shows the report task's deep stack: worker_main;slow_checksum;work_iters" deep_report_stacks
check "the store is left for exploring" test -f "$T/d9-demo-store/index.sqlite"
check "no temp dir is left behind by the script" \
    sh -c "! grep -o '/tmp/d9demo\.[A-Za-z0-9]*' '$T/demo.out' | head -n 1 | xargs -r test -e"
d9_finish demo
