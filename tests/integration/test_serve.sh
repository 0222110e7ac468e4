#!/bin/sh
# test_serve.sh — `d9 serve` on a demo store: the HTTP API (processes,
# timeline, events with a field filter; counts equal to top-polls), hostile
# requests get 4xx and never stop the server, and headless Chromium opens
# the page: the timeline draws the demo's long report polls (the ones that
# run slow_checksum) and a screenshot is saved as $BUILD/serve-screenshot.png.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
demo_store
STORE=$T/d9-demo-store
check "demo store made" test -f "$STORE/index.sqlite"

check "serve prints its URL" d9_serve serve "$BIN/d9" --store "$STORE"
U=$(cat "$T/serve.url")
# get PATH -> body in $T/body, status on stdout
get() { python3 - "$U" "$1" "${2:-GET}" <<'PY'
import sys, urllib.request, urllib.error
base, path, method = sys.argv[1], sys.argv[2], sys.argv[3]
req = urllib.request.Request(base.rstrip('/') + path, method=method, data=b'x' if method == 'POST' else None)
try:
    r = urllib.request.urlopen(req, timeout=20); code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
import os
open(os.environ['T'] + '/body', 'wb').write(body)
print(code)
PY
}
is() { c=$(get "$2" "${3:-GET}"); [ "$c" = "$1" ] || { echo "$2: HTTP $c, want $1"; head -c 300 "$T/body"; return 1; }; }

check "the page is served" is 200 /
check "the page is self-contained (no external script or style)" \
    sh -c "! grep -Eq '(src|href)=\"?(https?:)?//' '$T/body'"
check "/api/processes is 200" is 200 /api/processes
PID=$(python3 -c "import json; print([p for p in json.load(open('$T/body'))['processes'] if p['comm']=='d9demo'][0]['pid'])")
check "the demo is listed with its worker threads and runtimes" python3 -c "
import json
p = [p for p in json.load(open('$T/body'))['processes'] if p['pid'] == $PID][0]
names = [t['name'] for t in p['threads']]
assert 'demo-w0' in names and 'demo-w1' in names, names
assert {'demo', 'io'} <= {r['name'] for r in p['runtimes']}, p['runtimes']
"
check "a whole-store timeline is 200" is 200 "/api/timeline?pid=$PID&width=1200"
"$BIN/d9" --store "$STORE" top-polls --pid "$PID" --limit 100000 >"$T/top.txt" 2>/dev/null
NP=$(sed -n 's/^\([0-9]*\) polls in the window.*/\1/p' "$T/top.txt")
check "the timeline counts the polls top-polls counts ($NP)" python3 -c "
import json
d = json.load(open('$T/body'))
assert d['polls'] == $NP, (d['polls'], $NP)
n = sum(b[2] for l in d['lanes'] for b in l.get('buckets', [])) if d['mode'] == 'buckets' else \
    sum(1 for i in d['items'] if i[3] >= 0)
assert n == $NP, (n, $NP)
assert len(d['items']) + sum(len(l.get('buckets', [])) for l in d['lanes']) <= 4000
assert any('spawn_report_task' in x for x in d['locs'])
"
check "events filtered by name and field value" sh -c "
  '$BIN/d9' --store '$STORE' events --pid $PID --event request_done --format jsonl >'$T/ev.jsonl' &&
  st=\$(python3 -c \"import json; print(json.loads(open('$T/ev.jsonl').readline())['fields']['status'])\") &&
  n=\$(grep -c '\"status\":'\$st'[,}]' '$T/ev.jsonl') &&
  c=\$(python3 - '$U' $PID \$st <<'PY'
import sys, json, urllib.request
u, pid, st = sys.argv[1:]
d = json.load(urllib.request.urlopen(u + 'api/events?pid=%s&event=request_done&field=status&value=%s' % (pid, st)))
assert all(e['name'] == 'request_done' and str(e['fields']['status']) == st for e in d['events'])
print(d['events_total'])
PY
) && [ \"\$c\" -eq \"\$n\" ] || { echo \"api \$c, d9 events \$n\"; exit 1; }"

"$BIN/d9" --store "$STORE" flame --pid "$PID" >"$T/flame.folded" 2>/dev/null
FS=$(awk '{ s += $NF } END { print s + 0 }' "$T/flame.folded")
check "/api/flame is 200" is 200 "/api/flame?pid=$PID&kind=cpu"
check "the flame API has d9 flame's stacks and samples ($FS)" python3 -c "
import json
d = json.load(open('$T/body'))
assert d['samples'] == $FS, (d['samples'], $FS)
assert sum(n for _, n in d['stacks']) == $FS
folded = dict((l.rsplit(' ', 1)[0], int(l.rsplit(' ', 1)[1])) for l in open('$T/flame.folded'))
assert dict(d['stacks']) == folded
"
check "flame kind other than cpu/off is 400" is 400 "/api/flame?pid=$PID&kind=gpu"
check "unknown pid is 404" is 404 "/api/timeline?pid=4000000000&width=100"
check "reversed window is 400" is 400 "/api/timeline?pid=$PID&width=100&from=20&to=10"
check "huge width is 400" is 400 "/api/timeline?pid=$PID&width=1000000000"
check "garbage numbers are 400" is 400 "/api/timeline?pid=12abc&width=%ff%00"
check "unknown argument is 400" is 400 "/api/timeline?pid=$PID&width=10&drop=table"
check "an argument without a value is 400" is 400 "/api/timeline?pid&width=10"
check "too many arguments are 400" is 400 "/api/timeline?pid=$PID&width=10$(printf '&_=%s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)"
check "unknown path is 404" is 404 /etc/passwd
check "dot-dot path is 404" is 404 /api/../../etc/passwd
check "POST is 405" is 405 /api/processes POST
LONG=$(python3 -c "print('a' * 100000)")
check "a 100 kB query string is refused with a 4xx" sh -c "c=\$(T='$T' python3 - '$U' <<'PY'
import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1] + 'api/timeline?pid=1&width=1&event=' + 'a' * 100000, timeout=20); print(200)
except urllib.error.HTTPError as e: print(e.code)
except Exception as e: print('closed')
PY
); case \$c in 4*|closed) exit 0;; *) echo \$c; exit 1;; esac"
check "the server is still running after all that" kill -0 "$SPID"
check "and still answers" is 200 /api/processes

# ---- the page in a headless browser ------------------------------------------
CHROME=$(command -v chromium-headless-shell || command -v chromium || true)
check "headless Chromium is installed" test -n "$CHROME"
run_chrome() {
    rm -rf "$T/chrome-profile"
    timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run \
        --user-data-dir="$T/chrome-profile" --window-size=1400,900 --hide-scrollbars \
        --virtual-time-budget=15000 "$@" 2>>"$T/chrome.err"
}
run_chrome --dump-dom "${U}?pid=$PID" >"$T/dom.html"
check "the page finished drawing" grep -q 'data-state="ready"' "$T/dom.html"
python3 -c "
import html, re
m = re.search(r'<pre id=\"drawn\">(.*?)</pre>', open('$T/dom.html').read(), re.S)
open('$T/drawn.json', 'w').write(html.unescape(m.group(1)))
"
check "the timeline drew the demo's polls in every worker lane" python3 -c "
import json
d = json.load(open('$T/drawn.json'))
assert d['polls_drawn'] == $NP, (d['polls_drawn'], $NP)
assert d['lanes'] >= 3, d
"
check "the long report polls (slow_checksum, >= 80 ms) are drawn" python3 -c "
import json
d = json.load(open('$T/drawn.json'))
longs = [p for p in d['long_polls'] if p['name'].endswith(' spawn_report_task')]
assert longs and all(p['dur'] >= 80e6 for p in longs), d['long_polls']
"
check "custom events are drawn as markers" python3 -c "
import json; assert json.load(open('$T/drawn.json'))['events_drawn'] > 0"
check "the flame graph of the window is drawn with every sample" python3 -c "
import html, json, re
m = re.search(r'<pre id=\"flamedrawn\">(.*?)</pre>', open('$T/dom.html').read(), re.S)
d = json.loads(html.unescape(m.group(1)))
assert d['samples'] == $FS and d['frames']['all'] == $FS, d
"
run_chrome --screenshot="$ABS_BUILD/serve-screenshot.png" "${U}?pid=$PID" >/dev/null
check "a screenshot is saved under the build directory" test -s "$ABS_BUILD/serve-screenshot.png"
check "the server is still running after the browser" kill -0 "$SPID"
kill "$SPID"
check "serve stops on SIGTERM" wait_for 10 sh -c "! kill -0 $SPID"
check "serve --listen garbage is a usage error" sh -c "'$BIN/d9' --store '$STORE' serve --listen nowhere >/dev/null 2>&1; [ \$? -eq 2 ]"
check "serve --help says what binding elsewhere exposes" sh -c "'$BIN/d9' serve --help | grep -q 'without authentication'"
d9_finish serve
