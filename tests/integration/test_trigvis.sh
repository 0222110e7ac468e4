#!/bin/sh
# test_trigvis.sh — triggers made visible (issue 35 item 1), with the real
# collector and prog_trigseq: one program fires a d9_trigger marker, a long
# poll (--trigger-poll-ms), a shell trigger (d9 trigger --pid) and a crash
# (--trigger-crash yes), so the index's triggers table holds one row of
# each source. Then:
#   - d9 serve's /api/triggers lists exactly the index's rows (source,
#     reason, verdict, time, kept window), filtered by pid and window (a
#     trigger before the window whose kept window reaches in is listed), with
#     limit and total, a reversed window refused (400);
#   - the page draws a marker per trigger and shades the kept window;
#   - d9 events lists the index-only triggers (shell, poll, crash) as
#     d9_trigger rows with source and verdict, in time order.
# No timing thresholds: the debounce (1 h) and lookback (50 min) are far
# longer than the test.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }

check "collector starts" start_collector --trigger-lookback-ms 3000000 \
    --trigger-lookforward-ms 1000 --trigger-debounce-ms 3600000 --trigger-rate 6000 \
    --trigger-poll-ms 50 --trigger-crash yes
ended() {       # ended PID: the process is finished in the store
    d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
    grep -q "\"pid\":$1,.*\"state\":\"\(exited\|crashed\)\"" "$T/ps.jsonl"
}
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" t:first p:200 "w:$T/go" crash >"$T/p.out" 2>&1 &
at_exit kill -9 $!
wait_for 20 grep -q '^pid=' "$T/p.out"
P=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "the program runs" test -n "$P"
check "d9 trigger --pid fires a shell trigger" wait_for 20 sh -c "
    '$BIN/d9' --endpoint '$EP' trigger --pid '$P' --reason 'from the shell' >'$T/tr.out' 2>&1"
touch "$T/go"
check "the program crashed in the store" wait_for 20 ended "$P"
check "the collector stops cleanly" stop_collector

# the triggers table, read directly: the expected answer
python3 -c "
import json, sqlite3
db = sqlite3.connect('file:$STORE/index.sqlite?mode=ro', uri=True)
rows = [dict(zip(['pid','t','source','reason','verdict','win_t0','win_t1'], r)) for r in
        db.execute('SELECT pid, t_ns, source, reason, verdict, win_t0, win_t1 FROM triggers ORDER BY t_ns, id')]
json.dump(rows, open('$T/rows.json', 'w'))
"
check "the index holds one trigger of each source" python3 -c "
import json
rows = json.load(open('$T/rows.json'))
assert sorted(r['source'] for r in rows) == ['crash', 'marker', 'poll', 'shell'], rows
"

# ---- d9 events: the index-only triggers as marker rows ----------------------------
d9 events --pid "$P" --format jsonl >"$T/ev.jsonl" 2>"$T/ev.err"
check "d9 events lists every trigger as a d9_trigger row, markers and index rows alike" python3 -c "
import json
rows = json.load(open('$T/rows.json'))
ev = [json.loads(l) for l in open('$T/ev.jsonl')]
tr = [e for e in ev if e['type'] == 'custom' and e['event'] == 'd9_trigger']
assert [e['ts_ns'] for e in tr] == [r['t'] for r in rows], (tr, rows)
got = [(e['fields'].get('source', 'marker'), e['fields']['reason']) for e in tr]
assert got == [(r['source'], r['reason']) for r in rows], (got, rows)
assert all(e['fields']['verdict'] == r['verdict'] for e, r in zip(tr, rows) if r['source'] != 'marker'), tr
"
check "d9 events keeps time order with the trigger rows among the records" python3 -c "
import json
ev = [json.loads(l) for l in open('$T/ev.jsonl')]
ts = [e['ts_ns'] for e in ev]
assert ts == sorted(ts) and len(ev) > 4, ts
"
check "d9 events (text): a shell trigger is a custom d9_trigger row with its source" \
    sh -c "'$BIN/d9' --store '$STORE' events --pid '$P' 2>/dev/null |
        grep -q ' custom d9_trigger reason=\"from the shell\" source=shell verdict=debounced'"
check "--event d9_trigger selects them, --limit counts them" sh -c "
    n=\$('$BIN/d9' --store '$STORE' events --pid '$P' --event d9_trigger | wc -l) &&
    m=\$('$BIN/d9' --store '$STORE' events --pid '$P' --event d9_trigger --limit 2 | wc -l) &&
    [ \$n -eq 4 ] && [ \$m -eq 2 ]"
check "--tid (a thread) and --type poll_start leave them out" sh -c "
    ! '$BIN/d9' --store '$STORE' events --pid '$P' --tid '$P' 2>/dev/null | grep -q 'source=' &&
    ! '$BIN/d9' --store '$STORE' events --pid '$P' --type poll_start 2>/dev/null | grep -q d9_trigger"

serve() {       # serve NAME: a server on the store; its URL in $T/NAME.url
    "$BIN/d9" --store "$STORE" serve --listen 127.0.0.1:0 >"$T/$1.out" 2>"$T/$1.err" &
    at_exit kill $!
    wait_for 10 sh -c "grep -q '^d9 serve: http://127.0.0.1:' '$T/$1.out'" &&
        sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/$1.out" >"$T/$1.url"
}
check "serve starts on the store" serve s
api() {         # api QUERY OUT: GET /api/triggers?QUERY into $T/OUT.json, its status in $T/OUT.code
    curl -s -o "$T/$2.json" -w '%{http_code}' "$(cat "$T/s.url")api/triggers?$1" >"$T/$2.code"
}
# same JSON assertion helper: rows (expected), a (the answer)
same() {
    python3 -c "
import json
rows = json.load(open('$T/rows.json'))
a = json.load(open('$T/$1.json'))
$2
" || { cat "$T/$1.json"; return 1; }
}
api "pid=$P" all
check "/api/triggers answers 200" grep -qx 200 "$T/all.code"
check "/api/triggers lists every trigger of the pid as the index has it, by time" same all "
got = [{k: r[k] for k in ['pid','t','source','reason','verdict','win_t0','win_t1']} for r in a['triggers']]
assert got == rows and a['total'] == len(rows) == 4, (got, rows)
"
check "the kept trigger names its window, the debounced ones none" same all "
v = {r['source']: r for r in a['triggers']}
assert v['marker']['verdict'] == 'kept' and v['marker']['win_t1'] == v['marker']['t'] + 1000 * 10**6, v
assert all(r['win_t0'] is None for r in a['triggers'] if r['verdict'] == 'debounced'), v
"
T1=$(python3 -c "import json; r = json.load(open('$T/rows.json')); print(r[0]['t'] + 1)")
T2=$(python3 -c "import json; r = json.load(open('$T/rows.json')); print(r[-1]['t'] - 1)")
api "pid=$P&from=$T1&to=$T2" win
# by overlap: the triggers inside, and those whose kept window reaches in
# (the first's, which keeps the window around every later one)
inside() { cat <<PY
inside = lambda r, t0, t1: t0 <= r['t'] <= t1 or (r['win_t0'] is not None and r['win_t0'] <= t1 and r['win_t1'] >= t0)
PY
}
check "a window lists the triggers inside it and the kept windows reaching in" same win "
$(inside)
want = [r['t'] for r in rows if inside(r, $T1, $T2)]
assert [r['t'] for r in a['triggers']] == want and a['total'] == len(want) and 0 < len(want) < 4, (a, want)
assert rows[0]['t'] in want and rows[-1]['t'] not in want, (a, want)
"
api "from=$T1" nopid
check "without a pid, every pid's triggers from 'from' on, and the window reaching in" same nopid "
assert [r['t'] for r in a['triggers']] == [r['t'] for r in rows], a
"
api "pid=$P&limit=1" lim
check "limit lists that many, total counts them all" same lim "
assert len(a['triggers']) == 1 and a['total'] == 4 and a['triggers'][0]['t'] == rows[0]['t'], a
"
api "pid=$P&from=$T2&to=$T1" rev
check "a reversed window is 400 with a reason" sh -c "
    grep -qx 400 '$T/rev.code' && grep -q 'reversed window' '$T/rev.json'"
api "pid=$P&bogus=1" bad
check "an unknown argument is 400" grep -qx 400 "$T/bad.code"

# ---- the page -------------------------------------------------------------------
CHROME=$(command -v chromium-headless-shell || command -v chromium || true)
check "headless Chromium is installed" test -n "$CHROME"
page() {        # page QUERY OUT: the page, drawn, into $T/OUT.html
    rm -rf "$T/chrome-profile"
    timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run \
        --user-data-dir="$T/chrome-profile" --window-size=1400,900 --hide-scrollbars \
        --virtual-time-budget=10000 --dump-dom "$(cat "$T/s.url")$1" >"$T/$2.html" 2>>"$T/chrome.err" &&
        grep -q 'data-state="ready"' "$T/$2.html"
}
drawn() {
    python3 - "$T/$1.html" "$T/rows.json" "$2" <<'PY'
import html, json, re, sys
s = open(sys.argv[1]).read()
rows = json.load(open(sys.argv[2]))
m = re.search(r'<pre id="drawn">(.*?)</pre>', s, re.S)
d = json.loads(html.unescape(m.group(1)))
exec(sys.argv[3])
PY
}
W0=$(python3 -c "import json; r = json.load(open('$T/rows.json')); print(r[0]['t'] - 10**6)")
W1=$(python3 -c "import json; r = json.load(open('$T/rows.json')); print(r[-1]['t'] + 10**6)")
check "the page draws the process's window" page "?pid=$P&from=$W0&to=$W1" pg
check "the page draws a marker per trigger, with source, reason and verdict" drawn pg '
got = [tuple(x) for x in d["triggers_drawn"]]
assert got == [(r["source"], r["reason"], r["verdict"]) for r in rows], (got, rows)'
check "the page shades the kept window" drawn pg '
assert d["kept_drawn"] == 1, d["kept_drawn"]'
d9_finish trigvis
