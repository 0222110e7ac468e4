#!/bin/sh
# test_sec_crashed_poll.sh — a poll whose process crashed inside it (prog_cli
# --crash-in-poll: about 1 ms into the poll, one custom event, abort) ends at
# the process's last record, not when the collector saw the death (up to a
# scan later): top-polls, d9 sql, d9 export and d9 serve give it the same
# lower bound, the last record's time minus the poll's start, and say why
# it is unfinished ("process crashed"). The custom event emitted inside
# that poll records its task: d9 events shows it, the event's sql table has it
# as its task column, and one join answers "which poll was this event in".
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" "$@"; }
# a slow scan: the collector sees the death well after it
check "collector starts" start_collector --scan-ms 400
"$TBIN/prog_cli" --crash-in-poll >"$T/crash.out" 2>"$T/crash.err"
CR=$(head -n 1 "$T/crash.out")
check "the program printed its pid" test -n "$CR"
crashed() { d9 flush >/dev/null 2>&1 && d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
            grep -q "\"pid\":$CR,.*\"state\":\"crashed\"" "$T/ps.jsonl"; }
check "the process is indexed as crashed" wait_for 20 crashed

# the poll's start and the process's last record, from the records themselves
d9 events --pid "$CR" --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
START=$(python3 -c "
import json
for l in open('$T/ev.jsonl'):
    r = json.loads(l)
    if r.get('type') == 'poll_start' and r.get('task') == 4343: print(r['ts_ns'])")
LAST=$(python3 -c "
import json
print(max(json.loads(l)['ts_ns'] for l in open('$T/ev.jsonl')))")
DEATH=$(sqlite3 "$STORE/index.sqlite" "select last_ns from processes where pid = $CR")
WANT=$((LAST - START))
echo "# poll start $START, last record $LAST (+$WANT ns), collector saw the end at $DEATH"
check "the crashed poll's start and the last record are known" \
    sh -c "[ -n '$START' ] && [ '$LAST' -gt '$START' ]"
check "the collector saw the end after the last record (what must not be shown)" \
    test "$DEATH" -gt "$LAST"

d9 top-polls --pid "$CR" --format jsonl >"$T/top.jsonl" 2>"$T/top.err"
check "top-polls: the poll lasts until the last record, unfinished because the process crashed" \
    python3 -c "
import json
r = [json.loads(l) for l in open('$T/top.jsonl')]
p = [x for x in r if x['task'] == 4343]
assert len(p) == 1, r
p = p[0]
assert p['unfinished'] is True and p['unfinished_why'] == 'process crashed', p
assert p['start_ns'] == $START and p['duration_ns'] == $WANT, (p, $WANT)"
d9 top-polls --pid "$CR" >"$T/top.txt" 2>&1
check "top-polls text: '>DURATION' and '(unfinished, process crashed)'" \
    grep -Eq '^[0-9]+ +>[0-9.]+[mun]?s .*4343 .*\(unfinished, process crashed\)$' "$T/top.txt"

d9 sql --format jsonl "select dur_ns, end_ns, unfinished from polls where pid = $CR and task = 4343" \
    >"$T/sql.jsonl" 2>"$T/sql.err"
check "sql: dur_ns is the same bound, end_ns NULL, unfinished says why" python3 -c "
import json
r = [json.loads(l) for l in open('$T/sql.jsonl')]
assert r == [{'dur_ns': $WANT, 'end_ns': None, 'unfinished': 'process crashed'}], (r, $WANT)"
check "sql: finished polls have no reason" python3 -c "
import json, subprocess
out = subprocess.run(['$BIN/d9', '--store', '$STORE', 'sql', '--format', 'jsonl',
    'select count(*) n, sum(unfinished is null) f from polls where pid = $CR and end_ns is not null'],
    capture_output=True, text=True, check=True).stdout
r = json.loads(out)
assert r['n'] > 0 and r['n'] == r['f'], r"

d9 export --pid "$CR" -o "$T/x.json" 2>"$T/x.err"
check "export: the slice ends at the last record, flagged with why" python3 -c "
import json
d = json.load(open('$T/x.json'))
e = [x for x in d['traceEvents'] if x.get('cat') == 'poll' and x.get('args', {}).get('task') == 4343]
assert len(e) == 1, e
e = e[0]
assert e['args']['unfinished'] is True and e['args']['unfinished_why'] == 'process crashed', e
assert abs(e['dur'] * 1000 - $WANT) < 1, (e['dur'], $WANT)"

d9 events --pid "$CR" --type custom --event order --format jsonl >"$T/orders.jsonl" 2>"$T/orders.err"
check "events: the order emitted inside poll 4343 carries task 4343, the others none" python3 -c "
import json
r = [json.loads(l) for l in open('$T/orders.jsonl')]
inp = [x for x in r if x['fields']['item'] == 'in-poll']
assert len(r) == 11 and len(inp) == 1 and inp[0].get('task') == 4343, r
assert all('task' not in x for x in r if x['fields']['item'] != 'in-poll'), r"
check "events text shows task=4343 on it" sh -c \
    "'$BIN/d9' --store '$STORE' events --pid $CR --type custom --event order | grep 'in-poll' | grep -q 'task=4343'"
d9 sql --format jsonl "select task, item from \"order\" where pid = $CR order by task is null, ts_ns" \
    >"$T/order-sql.jsonl" 2>"$T/order-sql.err"
check "sql: the event's table has a task column (NULL outside polls)" python3 -c "
import json
r = [json.loads(l) for l in open('$T/order-sql.jsonl')]
assert r[0] == {'task': 4343, 'item': 'in-poll'} and len(r) == 11, r
assert all(x['task'] is None for x in r[1:]), r"
d9 sql --format csv "select p.unfinished, o.item from polls p join \"order\" o
    on o.pid = p.pid and o.tid = p.tid and o.task = p.task where p.pid = $CR" >"$T/join.csv" 2>"$T/join.err"
check "sql: one join names the event a poll was serving" \
    sh -c "[ \"\$(tail -n +2 '$T/join.csv' | tr -d '\r')\" = 'process crashed,in-poll' ]"

"$BIN/d9" --store "$STORE" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SPID=$!
at_exit kill -9 "$SPID"
check "serve prints its URL" wait_for 10 grep -q '^d9 serve: http://127.0.0.1:' "$T/serve.out"
U=$(sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/serve.out")
check "serve: the timeline's top poll has the same duration and reason" sh -c "
    curl -s --max-time 20 -o '$T/tl.json' '${U}api/timeline?pid=$CR&width=100' && python3 -c \"
import json
d = json.load(open('$T/tl.json'))
t = [x for x in d['top'] if x['task'] == 4343]
assert len(t) == 1, d['top']
assert t[0]['dur'] == $WANT and t[0].get('unfinished_why') == 'process crashed', (t, $WANT)\""
kill -TERM "$SPID"
check "serve stops on SIGTERM" wait_for 10 sh -c "! kill -0 $SPID"
check "collector stops" stop_collector
d9_finish sec-crashed-poll
