#!/bin/sh
# test_cli_live.sh — d9 against a live collector and a running traced
# program (d9demo): status shows it alive with its rings, flush makes its
# data visible while it runs, and after kill -9 it is shown as crashed.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }

check "collector answers d9 status" start_collector

"$BIN/d9demo" --seconds 600 --workers 2 >"$T/demo.out" 2>&1 &
DP=$!
at_exit kill -9 "$DP"

alive_in_status() { "$BIN/d9" status --format jsonl | python3 -c "
import json, sys
s = json.load(sys.stdin)
p = [p for p in s['processes'] if p['pid'] == $DP]
assert p and p[0]['state'] == 'alive' and p[0]['rings_in_use'] >= 3, s
"; }
check "status shows the running demo as alive with its rings" wait_for 20 alive_in_status
check "status --rings names the worker threads" \
    sh -c "'$BIN/d9' status --pid $DP --rings | grep -q 'demo-w0'"
check "flush --pid seals the running process's segment" \
    sh -c "'$BIN/d9' flush --pid $DP | grep -q 'flushed 1 process'"
check "after flush its records are visible while it runs" \
    sh -c "[ \$('$BIN/d9' --store '$STORE' events --pid $DP --limit 5 | wc -l) -eq 5 ]"
check "ps shows it alive" sh -c "'$BIN/d9' --store '$STORE' ps --pid $DP | grep -q ' alive '"
check "top-polls works on the live store" \
    sh -c "'$BIN/d9' --store '$STORE' top-polls --pid $DP --limit 3 --format jsonl | grep -q '\"task\":'"
check "events --since on a live store counts back from now" \
    sh -c "'$BIN/d9' flush >/dev/null && [ \$('$BIN/d9' --store '$STORE' events --pid $DP --since 10m --limit 3 | wc -l) -eq 3 ]"

kill -9 "$DP"
crashed() { "$BIN/d9" flush >/dev/null 2>&1; d9 ps --pid "$DP" --format jsonl | grep -q '"state":"crashed"'; }
check "after kill -9 ps shows it crashed" wait_for 20 crashed
"$BIN/d9" --store "$STORE" export --pid "$DP" -o "$T/crash.json" 2>"$T/export.err"
check "export of the crashed process is JSON with poll slices" python3 -c "
import json
ev = json.load(open('$T/crash.json'))['traceEvents']
assert sum(1 for e in ev if e['ph'] == 'X' and e.get('cat') == 'poll') > 100
"
d9_finish cli-live
