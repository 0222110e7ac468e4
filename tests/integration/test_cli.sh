#!/bin/sh
# test_cli.sh — the d9 CLI against a real d9collectd and a real traced
# program (prog_cli): decoded content, top-polls order, export JSON, ps
# states, a live store while the collector writes, and a copied store.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" "$@"; }
has() { grep -q -- "$1" "$2" || { echo "'$1' not in $2:"; head -n 20 "$2"; return 1; }; }

check "collector answers d9 status" start_collector

# the collector sees the exits within a scan or two; flush seals everything
# wait_for polls (never a fixed sleep): both processes must reach a final state
check "flush, then ps shows the clean exit as exited and the abort as crashed" cli_runs
check "traced program ran" test -s "$T/ok.out"

# ---- live store (collector still running: read-only WAL reader) ----------------
d9 events --pid "$OKPID" --type custom --event order >"$T/custom.txt" 2>"$T/custom.err"
check "events decodes the custom event name" has 'custom order' "$T/custom.txt"
check "events decodes the custom string field (escaped quotes)" has 'item="widget-3 \\"q\\""' "$T/custom.txt"
check "events decodes u64/f64/i64/bool fields by name" \
    has 'qty=6 price=2.5 delta=-5 ok=true' "$T/custom.txt"
check "events --type custom --event order prints only those events" \
    sh -c "[ \$(grep -c ' custom order ' '$T/custom.txt') -eq 10 ] && ! grep -v ' custom order ' '$T/custom.txt'"
check "events --event alone selects only those custom events" \
    sh -c "[ \$('$BIN/d9' --store '$STORE' events --pid $OKPID --event order | wc -l) -eq 10 ]"
check "events hides the collector's own d9.* events unless asked" \
    sh -c "'$BIN/d9' --store '$STORE' events --pid $OKPID --type custom >'$T/.neg50' && ! grep -q ' custom d9[.]' '$T/.neg50'"
check "events --limit stops after N records" \
    sh -c "[ \$('$BIN/d9' --store '$STORE' events --pid $OKPID --limit 7 | wc -l) -eq 7 ]"

d9 events --pid "$OKPID" --type custom --event order --format jsonl >"$T/custom.jsonl"
check "events jsonl lines are JSON with the custom fields by name" python3 -c "
import json, sys
rows = [json.loads(l) for l in open('$T/custom.jsonl')]
assert len(rows) == 10, len(rows)
items = sorted(r['fields']['item'] for r in rows)
assert items[0] == 'widget-0 \"q\"', items
assert all(r['event'] == 'order' and r['fields']['delta'] == -5 for r in rows)
assert all(r['pid'] == $OKPID for r in rows)
assert all(r['thread'] in ('cliw0', 'cliw1') for r in rows)
"
d9 events --pid "$OKPID" --format jsonl >"$T/all.jsonl"
check "events are in timestamp order" python3 -c "
import json
ts = [json.loads(l)['ts_ns'] for l in open('$T/all.jsonl')]
assert len(ts) > 800 and ts == sorted(ts), len(ts)
"
check "events shows runtime and spawn location by name" \
    sh -c "'$BIN/d9' --store '$STORE' events --pid $OKPID --type task_spawn --limit 1 |
           grep -q 'runtime=clirt loc=\".*prog_cli.c:[0-9]* spawn_short_task\"'"

d9 top-polls --pid "$OKPID" >"$T/top.txt"
check "top-polls lists the long poll first, with its spawn location" \
    sh -c "sed -n 2p '$T/top.txt' | grep -q 'prog_cli.c:[0-9]* spawn_long_task'"
check "top-polls shows runtime name, worker and task id" \
    sh -c "sed -n 2p '$T/top.txt' | grep -Eq ' clirt +0 +999 '"
check "top-polls --limit 3 lists three" \
    sh -c "[ \$('$BIN/d9' --store '$STORE' top-polls --pid $OKPID --limit 3 --format jsonl | wc -l) -eq 3 ]"
# filters: --location (substring of the shown location), --runtime (exact
# name), --tid (one thread), combined; the count line counts what matched
d9 top-polls --pid "$OKPID" --location spawn_long --format jsonl >"$T/top-loc.jsonl"
check "top-polls --location keeps the polls whose location contains the text" python3 -c "
import json
r = [json.loads(l) for l in open('$T/top-loc.jsonl')]
assert [x['task'] for x in r] == [999] and 'spawn_long_task' in r[0]['location'], r"
check "top-polls --location counts only the matching polls" sh -c \
    "'$BIN/d9' --store '$STORE' top-polls --pid $OKPID --location 'prog_cli.c:' --limit 1 |
     grep -q '^401 polls in the window (clirt 401; 0 unfinished), 1 longest shown'"
check "top-polls --runtime clirt keeps them all, --runtime clir none (exact name)" sh -c \
    "'$BIN/d9' --store '$STORE' top-polls --pid $OKPID --runtime clirt | grep -q '^401 polls' &&
     '$BIN/d9' --store '$STORE' top-polls --pid $OKPID --runtime clir >'$T/rt.out' 2>'$T/rt.err' &&
     [ ! -s '$T/rt.out' ] && grep -q 'no polls matching' '$T/rt.err'"
TID1=$(d9 events --pid "$OKPID" --type poll_start --format jsonl | python3 -c "
import json, sys
print(next(r['tid'] for r in map(json.loads, sys.stdin) if r['thread'] == 'cliw1'))")
d9 top-polls --pid "$OKPID" --tid "$TID1" --limit 1000 --format jsonl >"$T/top-tid.jsonl"
check "top-polls --tid keeps the polls of that thread only" python3 -c "
import json
r = [json.loads(l) for l in open('$T/top-tid.jsonl')]
assert len(r) == 200 and all(x['tid'] == $TID1 and x['thread'] == 'cliw1' for x in r), len(r)"
check "top-polls --tid with --location: both must match" sh -c \
    "'$BIN/d9' --store '$STORE' top-polls --pid $OKPID --tid $TID1 --location spawn_long 2>&1 |
     grep -q 'no polls matching'"
check "top-polls --location '' is a usage error" sh -c \
    "'$BIN/d9' --store '$STORE' top-polls --location '' 2>/dev/null; [ \$? -eq 2 ]"
# the crash came right after its poll_start: the poll is short, not in the top 20
d9 top-polls --pid "$CRPID" --limit 1000 --format jsonl >"$T/top-crash.jsonl"
check "top-polls reports the poll left open by the crash as unfinished" \
    grep -q '"task":4242,.*"unfinished":true,"unfinished_why":"process crashed"' "$T/top-crash.jsonl"
d9 findings --pid "$CRPID" --format jsonl >"$T/find-crash.jsonl"
check "findings ranks the crash first: the poll the crash left open" \
    sh -c "head -n 1 '$T/find-crash.jsonl' | grep -q '^{\"rank\":1,\"kind\":\"crash\",.*\"task\":4242,'"

d9 sched --pid "$OKPID" --format jsonl >"$T/sched.jsonl"
check "sched has one row per worker with parks counted" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/sched.jsonl')]
assert sorted(r['worker'] for r in rows) == [0, 1], rows
assert all(r['runtime'] == 'clirt' and r['parks'] == 3 and r['waits'] == 6 for r in rows), rows
assert all(r['parked_ns'] > 0 for r in rows), rows
"
d9 sched --pid "$CRPID" --format jsonl >"$T/sched-sampled.jsonl"
check "sched counts only the sampled park/unpark records as waits" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/sched-sampled.jsonl')]
assert sorted(r['worker'] for r in rows) == [0, 1], rows
assert all(r['parks'] == 3 and r['waits'] == 1 for r in rows), rows
"
d9 events --pid "$CRPID" --type worker_unpark >"$T/unpark-sampled.txt"
check "unsampled unpark records carry no cpu_ns or sched_wait_ns" \
    sh -c "[ \$(grep -c worker_unpark '$T/unpark-sampled.txt') -eq 6 ] && ! grep -q cpu_ns '$T/unpark-sampled.txt'"

d9 export --pid "$OKPID" -o "$T/trace.json" 2>"$T/export.err"
check "export writes well-formed JSON" python3 -m json.tool "$T/trace.json"
check "export has X events for polls, M names, C counters and custom instants" python3 -c "
import json
ev = json.load(open('$T/trace.json'))['traceEvents']
x = [e for e in ev if e['ph'] == 'X' and e.get('cat') == 'poll']
assert len(x) == 401, len(x)
long = [e for e in x if e['args']['task'] == 999][0]
assert long['name'] == 'spawn_long_task' and long['dur'] > 1000, long
names = {e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
assert any(n.startswith('cliw0') for n in names), names
assert any(e['ph'] == 'M' and e['name'] == 'process_name' and e['args']['name'] == 'prog_cli' for e in ev)
assert any(e['ph'] == 'C' for e in ev)
orders = [e for e in ev if e['ph'] == 'i' and e['name'] == 'order']
assert len(orders) == 10 and orders[0]['args']['qty'] >= 3, orders[:1]
assert all(e['pid'] == $OKPID for e in ev)
"
check "export to stdout is the same document" \
    sh -c "'$BIN/d9' --store '$STORE' export --pid $OKPID 2>/dev/null | python3 -m json.tool >/dev/null"

d9 segments --pid "$OKPID" >"$T/segs.txt"
check "segments lists the process's segment files" has "$OKPID" "$T/segs.txt"
check "status lists the collector's totals" sh -c "'$BIN/d9' status | grep -q '^written'"
# prog_cli emits 10 "order" custom events; the collector adds its own d9.map
# records (the memory maps) to every segment: they are not the program's events
d9 segments --pid "$OKPID" --format jsonl >"$T/segs.jsonl"
check "segments jsonl counts the program's 10 custom events, the maps apart" python3 -c "
import json
rows = [json.loads(l) for l in open('$T/segs.jsonl')]
assert rows, 'no segments'
assert sum(r['counts']['custom'] for r in rows) == 10, [r['counts'] for r in rows]
assert all(r['maps'] > 0 for r in rows), [r['maps'] for r in rows]
assert all(r['records'] == sum(r['counts'].values()) + r['maps'] for r in rows), rows
"
"$BIN/d9" --store "$STORE" sql --schema >"$T/schema.txt" 2>&1
check "sql --schema has the program's custom-event table and none for d9.map" \
    sh -c "grep -q '^order -- ' '$T/schema.txt' && ! grep -q 'd9[.]map' '$T/schema.txt'"
"$BIN/d9" --store "$STORE" sql --format csv \
    "select event, count(*) from events where pid = $OKPID and type = 'custom' group by event" \
    >"$T/sqlev.csv" 2>&1
check "sql events holds the program's 10 custom events, not the collector's maps" \
    sh -c "[ \"\$(tail -n +2 '$T/sqlev.csv' | tr -d '\\r')\" = 'order,10' ] || { cat '$T/sqlev.csv'; false; }"

# ---- stop the collector; query a copy of the store elsewhere ----------------------
stop_collector
check "collector stopped cleanly" test $? -eq 0
cp -r "$STORE" "$T/copy"
# ---- d9 ps on stored times no process can have (an older collector's
# segments, a damaged or forged index): '?' (null in jsonl), never a date
# near boot, in the year 2096 or a span of decades
cp -r "$STORE" "$T/bad"
sqlite3 "$T/bad/index.sqlite" \
    "UPDATE threads SET first_ns = 1, last_ns = 4000000000000000000
       WHERE process_id IN (SELECT id FROM processes WHERE pid = $OKPID);
     UPDATE threads SET last_ns = first_ns - 1000000000
       WHERE process_id IN (SELECT id FROM processes WHERE pid = $CRPID);"
"$BIN/d9" --store "$T/bad" ps >"$T/bad.ps" 2>&1
"$BIN/d9" --store "$T/bad" ps --format jsonl >"$T/bad.jsonl" 2>&1
check "ps: a first record at boot and a last one in 2096 show as '?', span '?'" \
    grep -Eq "^$OKPID .* \?  +\?  +\? " "$T/bad.ps"
check "ps: a process whose last record precedes its first has span '?'" \
    grep -Eq "^$CRPID .* \? " "$T/bad.ps"
check "ps jsonl: impossible times and spans are null" sh -c \
    "grep '\"pid\":$OKPID,' '$T/bad.jsonl' | grep -q '\"first_ns\":null,\"last_ns\":null,\"span_ns\":null' &&
     grep '\"pid\":$CRPID,' '$T/bad.jsonl' | grep -q '\"span_ns\":null'"
check "ps: the same processes' real times show as times" sh -c \
    "'$BIN/d9' --store '$T/copy' ps | grep '^$OKPID ' | grep -vq '?'"
check "status without a collector fails with exit 1" \
    sh -c "'$BIN/d9' status >/dev/null 2>'$T/st.err'; [ \$? -eq 1 ] && grep -q 'cannot reach the collector' '$T/st.err'"

C() { "$BIN/d9" --store "$T/copy" "$@"; }
check "copied store: ps works" sh -c "'$BIN/d9' --store '$T/copy' ps | grep -q \"^$OKPID \""
check "copied store: custom events decode" \
    sh -c "'$BIN/d9' --store '$T/copy' events --type custom --event order --pid $OKPID | grep -q 'item=\"widget-0'"
# pretend the copy comes from another boot: --since then counts back from its newest record
sqlite3 "$T/copy/index.sqlite" \
    "UPDATE meta SET value = CAST(value AS INTEGER) - 1000000000000000 WHERE key = 'boot_realtime_ns';
     UPDATE meta SET value = '00000000-0000-0000-0000-000000000000' WHERE key = 'boot_id';"
check "copied store from another boot: --since counts back from the newest record" \
    sh -c "[ \$('$BIN/d9' --store '$T/copy' events --pid $OKPID --since 1s | wc -l) -gt 800 ]"
chmod -R a-w "$T/copy"
check "read-only copy can be queried" \
    sh -c "'$BIN/d9' --store '$T/copy' top-polls --pid $OKPID --limit 1 | grep -q spawn_long_task"
chmod -R u+w "$T/copy"

# ---- usage errors and empty results ------------------------------------------------
usage2() { "$@" >/dev/null 2>"$T/u.err"; rc=$?; [ $rc -eq 2 ] && [ "$(wc -l <"$T/u.err")" -eq 2 ] &&
           grep -q "^Try 'd9" "$T/u.err" || { echo "rc=$rc"; cat "$T/u.err"; return 1; }; }
check "bad --limit: one error line + hint, exit 2" usage2 "$BIN/d9" events --limit abc
check "bad --since: exit 2" usage2 "$BIN/d9" events --since 5x
check "unknown type: exit 2" usage2 "$BIN/d9" events --type nope
check "unknown option: exit 2" usage2 "$BIN/d9" ps --frob
check "unknown command: exit 2" usage2 "$BIN/d9" frobnicate
check "stray argument: exit 2" usage2 "$BIN/d9" ps extra
check "missing store: exit 1 naming the path" \
    sh -c "'$BIN/d9' --store '$T/nope' ps 2>'$T/m.err'; [ \$? -eq 1 ] && grep -q '$T/nope' '$T/m.err'"
check "empty result says so and exits 0" \
    sh -c "'$BIN/d9' --store '$T/copy' events --pid 4000000 >'$T/e.out' 2>'$T/e.err' &&
           [ ! -s '$T/e.out' ] && grep -q 'no records' '$T/e.err'"
check "ps and events show the owner uid of each process" \
    sh -c "'$BIN/d9' --store '$T/copy' ps | grep -q \"^$OKPID  *$(id -u) \" &&
           '$BIN/d9' --store '$T/copy' events --pid $OKPID --limit 1 | grep -q ' uid=$(id -u) ' &&
           '$BIN/d9' --store '$T/copy' events --pid $OKPID --limit 1 --format jsonl |
           grep -q '\"uid\":$(id -u),'"
mkdir -p "$T/notastore" && echo data >"$T/notastore/keep"
check "fsck --repair refuses a directory that is not a store and creates nothing there" \
    sh -c "! '$BIN/d9' --store '$T/notastore' fsck --repair 2>'$T/ns.err' &&
           grep -q 'not a d9 store' '$T/ns.err' && [ \"\$(ls -A '$T/notastore')\" = keep ]"
# segment files without a d9 index: still not a store, nothing created (no
# index.sqlite, no .lock) and the segment files untouched
mkdir -p "$T/segsonly" && cp "$(ls "$T/copy"/*.d9seg | head -n 1)" "$T/segsonly/"
(cd "$T/segsonly" && ls -A && md5sum -- *) >"$T/segsonly.before"
check "fsck --repair refuses segment files without an index and leaves them as they were" \
    sh -c "! '$BIN/d9' --store '$T/segsonly' fsck --repair 2>'$T/so.err' &&
           grep -q 'not a d9 store' '$T/so.err' &&
           (cd '$T/segsonly' && ls -A && md5sum -- *) | cmp -s - '$T/segsonly.before'"
# an index of another schema version: refused before anything is taken (no
# .lock left behind), the files as they were
mkdir -p "$T/badver" && cp "$(ls "$T/copy"/*.d9seg | head -n 1)" "$T/badver/"
sqlite3 "$T/copy/index.sqlite" ".backup '$T/badver/index.sqlite'"
sqlite3 "$T/badver/index.sqlite" "update meta set value = '99' where key = 'schema_version'"
(cd "$T/badver" && md5sum -- *) >"$T/badver.before"
check "fsck --repair refuses an index of another version and leaves no .lock" \
    sh -c "! '$BIN/d9' --store '$T/badver' fsck --repair 2>'$T/bv.err' >'$T/bv.out' &&
           grep -q 'version 99' '$T/bv.err' '$T/bv.out' && [ ! -e '$T/badver/.lock' ] &&
           (cd '$T/badver' && md5sum -- *.d9seg index.sqlite) | cmp - '$T/badver.before'"
for c in status flush ps segments events top-polls sched findings export flame fsck; do
    check "d9 $c --help is a manual page" \
        sh -c "'$BIN/d9' $c --help | grep -q SYNOPSIS && '$BIN/d9' $c --help | grep -q 'EXIT STATUS'"
done
check "d9 --help lists every command" sh -c "'$BIN/d9' --help | grep -q top-polls"

d9_finish cli
