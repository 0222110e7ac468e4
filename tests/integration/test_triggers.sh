#!/bin/sh
# test_triggers.sh — d9_trigger() markers through the real collector: each
# call is one custom event of the reserved schema "d9_trigger" with its
# reason (NULL as "", long reasons cut to 255 bytes), shown by `d9 events`.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }

check "collector starts" start_collector
DIAL9_SAMPLER=off "$TBIN/prog_trigger" >"$T/p.out" 2>"$T/p.err"
PID=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "prog_trigger ran" test -n "$PID"
ended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
          grep -q "\"pid\":$PID,.*\"state\":\"exited\"" "$T/ps.jsonl"; }
check "the program ends as exited in the store" wait_for 20 ended
d9 events --pid "$PID" --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
check "each d9_trigger is a d9_trigger marker with its reason, in order" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/ev.jsonl')]
got = [r['fields']['reason'] for r in rows if r['type'] == 'custom' and r['event'] == 'd9_trigger']
assert got == ['first', '', 'r' * 255], (got, rows[:3], open('$T/ev.err').read())
"
check "the collector stops cleanly" stop_collector
d9_finish triggers
