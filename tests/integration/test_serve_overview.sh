#!/bin/sh
# test_serve_overview.sh — `d9 serve` on a store too big to scan at the
# first view (tool_store_big: more than SERVE_API_SCAN_MAX records, sealed
# with rollups): the whole-store timeline is the index overview, its
# longest polls come from the rollups (known durations and locations, no
# segment file read: they still come with the files gone; a store without
# rollups gets no top rather than a scan), its lanes are
# the same, in the same order, as at a zoom that is scanned; the page shows
# those longest polls at its first view, and a click on one of them zooms
# to its second and selects the real poll there. A window of 1800 custom events
# gets markers sampled over the whole window (not its first ones at the
# left edge), and the event filter applies to them.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
MS=1000000
T0=1000000000
STORE=$T/store
check "the store is written" "$TBIN/tool_store_big" "$STORE"

# serve STORE NAME: a server on STORE; its URL in $T/NAME.url
serve() { d9_serve "$2" "$BIN/d9" --store "$1"; }
# get NAME QUERY OUT: GET api/QUERY of server NAME into $T/OUT.json
get() {
    python3 - "$(cat "$T/$1.url")" "$2" "$T/$3.json" <<'PY'
import sys, urllib.request
base, q, out = sys.argv[1:]
open(out, "wb").write(urllib.request.urlopen(base + "api/" + q, timeout=60).read())
PY
}
# jcheck FILE PYTHON: the assertions of PYTHON hold on the answer d
jcheck() {
    python3 - "$T/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
MS = 1000000
S = 1000 * MS
lanes = [(l["tid"], l["name"]) for l in d.get("lanes", [])]
exec(sys.argv[2])
PY
}
LANES='[(7272, "main"), (7273, "w1"), (7274, "w2"), (7275, "w3")]'

check "serve starts on the big store" serve "$STORE" s
check "the whole store: fetched" get s "timeline?pid=7272&width=800" whole
check "the whole store is the index overview" jcheck whole '
assert d["mode"] == "index" and d["records"] > 1000000, (d["mode"], d.get("records"))'
check "its longest polls are there at the first view, from the rollups: 300 ms slow_poll, 200 ms mid_poll" jcheck whole '
assert d["top_from"] == "rollups", d.get("top_from")
top = [(e["dur"], d["locs"][e["loc"]], e["t"], e["worker"]) for e in d["top"]]
assert top[0] == (300 * MS, "src/slow.c:3 slow_poll", 4 * S, 1), top[:3]
assert top[1] == (200 * MS, "src/mid.c:4 mid_poll", 6 * S, 2), top[:3]
assert all(e["approx"] and e["within_ns"] == S for e in d["top"]), d["top"]'
check "no segment was read for them (every segment has stored rollups)" jcheck whole '
assert d["rollup_segments"] == 2 and d["rollup_missing"] == 0, d'
check "the overview's lanes: every thread, main first, then by tid, named" jcheck whole "
assert lanes == $LANES, lanes"
check "a window around the slow poll: fetched" get s "timeline?pid=7272&width=800&from=$((T0 + 4000 * MS))&to=$((T0 + 4600 * MS))" zoom
check "the zoomed window is scanned, with the same lanes in the same order" jcheck zoom "
assert d['mode'] == 'detail', d['mode']
assert lanes == $LANES, lanes
assert d['top'][0]['dur'] == 300 * MS and d['top'][0]['task'] == 7, d['top']"
# requests whose client leaves at once (as the page aborts superseded zoom
# steps): dropped or stopped, without a line on stderr each
abandon() {
    python3 - "$(cat "$T/s.url")" <<'PY'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
for path in ["/api/events?pid=7272", "/api/flame?pid=7272&kind=cpu", "/api/events?pid=7272&event=x"] * 3:
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path, u.netloc)).encode())
    s.close()
time.sleep(1)
PY
}
check "requests abandoned by their client" abandon
check "the server is still answering" get s "processes" procs
check "the server printed nothing on stderr (abandoned requests are not worth a line)" \
    test ! -s "$T/s.err"

# the same overview with the segment files gone: only the index was read
cp -r "$STORE" "$T/nofiles"
rm -f "$T/nofiles"/*.d9seg "$T/nofiles"/*/*.d9seg 2>/dev/null
check "the copy has no segment file left" sh -c "! find '$T/nofiles' -name '*.d9seg' | grep -q ."
check "serve starts on the copy without segment files" serve "$T/nofiles" n
check "its whole store: fetched" get n "timeline?pid=7272&width=800" nofiles
check "its longest polls are the same (from the index's rollups alone; names need the files)" jcheck nofiles '
assert d["mode"] == "index", d["mode"]
top = [(e["dur"], e["t"], e["worker"]) for e in d["top"][:2]]
assert top == [(300 * MS, 4 * S, 1), (200 * MS, 6 * S, 2)], d["top"][:2]'

# without stored rollups (a store indexed before them): the overview reads no
# record for its top either, it leaves them out and says how many
cp -r "$STORE" "$T/norollups"
sqlite3 "$T/norollups/index.sqlite" "delete from rollups"
check "serve starts on a copy without rollups" serve "$T/norollups" r
check "its whole store: fetched" get r "timeline?pid=7272&width=800" norollups
check "its overview has no top, says 2 segments without rollups, read nothing" jcheck norollups '
assert d["mode"] == "index" and d["top"] == [] and d["rollup_missing"] == 2, (d["mode"], d["top"][:1], d.get("rollup_missing"))'
check "... and printed nothing on stderr" test ! -s "$T/r.err"

# ---- markers over the whole window ----------------------------------------------
W="from=$((T0 + 3500 * MS))&to=$((T0 + 9500 * MS))"
check "a window with 1800 custom events: fetched" get s "timeline?pid=7272&width=4000&$W" ev
check "its markers are sampled over the whole window, not its first 500" jcheck ev '
span = d["to"] - d["from"]
ts = [e["t"] for e in d["events"]]
assert d["mode"] == "detail" and d["events_total"] == 1800, (d["mode"], d["events_total"])
assert 100 <= len(ts) <= 500, len(ts)
assert min(ts) < span * 0.05 and max(ts) > span * 0.85, (min(ts) / span, max(ts) / span)
gaps = [b - a for a, b in zip(ts, ts[1:])]
assert max(gaps) < span * 0.05, max(gaps) / span'
check "the event filter: fetched" get s "timeline?pid=7272&width=4000&$W&event=tock" tock
check "the filter applies to the markers (180 tocks, over the whole window)" jcheck tock '
span = d["to"] - d["from"]
ts = [e["t"] for e in d["events"]]
assert d["events_total"] == 180 and len(ts) == 180, (d["events_total"], len(ts))
assert {e["name"] for e in d["events"]} == {"tock"}, {e["name"] for e in d["events"]}
assert max(ts) > span * 0.85, max(ts) / span'

# ---- the page at its first view ------------------------------------------------------
CHROME=$(command -v chromium-headless-shell || command -v chromium || true)
[ -x /usr/lib/chromium/chromium-headless-shell ] && CHROME=/usr/lib/chromium/chromium-headless-shell
check "headless Chromium is installed" test -n "$CHROME"
rm -rf "$T/chrome-profile"
timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$T/chrome-profile" \
    --window-size=1400,900 --virtual-time-budget=10000 --dump-dom "$(cat "$T/s.url")" \
    >"$T/page.html" 2>"$T/chrome.err"
check "the page loads the big store" grep -q 'data-state="ready"' "$T/page.html"
check "the page's Longest polls table shows the rollups' 300 ms slow_poll first, at the first view" \
    python3 - "$T/page.html" <<'PY'
import html, re, sys
s = open(sys.argv[1]).read()
m = re.search(r'<table id="top">(.*?)</table>', s, re.S)
rows = re.findall(r'<tr[^>]*>(.*?)</tr>', m.group(1), re.S)
cells = [[html.unescape(re.sub('<[^>]*>', '', c)) for c in re.findall(r'<td[^>]*>(.*?)</td>', r, re.S)] for r in rows]
cells = [c for c in cells if c]
assert cells and cells[0][0] == "300.00ms" and cells[0][3] == "src/slow.c:3 slow_poll", cells[:2]
assert "worker 1" in cells[0][2], cells[0]
PY
# ---- a row of the index overview's longest polls, clicked (playwright) ---------------
browser_setup
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$(pwd)/$BUILD ;; esac
cat >"$T/click.js" <<'JS'
// prints "ok NAME" / "FAIL NAME: why" lines
const { chromium } = require(process.env.PW + "/node_modules/playwright-core");
const [url, chrome] = process.argv.slice(2);
const sleep = ms => new Promise(r => setTimeout(r, ms));
const J = JSON.stringify;
let failed = 0;
const ok = (name, cond, why) => { console.log(cond ? "ok " + name : "FAIL " + name + ": " + why); if (!cond) failed++; };
(async () => {
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-state=ready]", { timeout: 60000 });
    await page.waitForSelector("#top tr[data-i='0']", { timeout: 60000 });
    const row = await page.$eval("#top tr[data-i='0']", e => e.textContent);
    ok("the first row is the rollups' 300 ms slow_poll", /300\.00ms/.test(row) && /slow_poll/.test(row), row);
    await page.click("#top tr[data-i='0']");
    let s = {};
    for (let i = 0; i < 1200; i++) {
      s = JSON.parse(await page.$eval("#seldrawn", e => e.textContent || "{}"));
      if (s.location) break;
      await sleep(50);
    }
    ok("the click selects the real poll: slow_poll, 300 ms, on w1, at 4.2 s", s.location === "src/slow.c:3 slow_poll" &&
       s.dur === 300e6 && s.worker === "w1" && s.start_ns === 5200000000, J(s));
    const q = new URL(page.url()).searchParams;
    ok("... in a window of its second and its length: [4 s, 5.3 s]", +q.get("from") === 5000000000 && +q.get("to") === 6300000000,
       q.get("from") + " .. " + q.get("to"));
    const d = JSON.parse(await page.$eval("#drawn", e => e.textContent));
    ok("... drawn in detail", Object.values(d.mode)[0] === "detail", J(d.mode));
    ok("no script errors", errors.length === 0, errors.join("; "));
  } catch (e) { ok("the page drives", false, String(e)); }
  await browser.close();
  process.exit(failed ? 1 : 0);
})();
JS
PW=$ABS_BUILD/npm-playwright timeout 180 node "$T/click.js" "$(cat "$T/s.url")" "$CHROME" >"$T/click.out" 2>"$T/click.err"
grep -q . "$T/click.out" || { echo "node: $(tail -n 5 "$T/click.err")"; }
check "the browser script ran" grep -q '^ok ' "$T/click.out"
check_lines "$T/click.out"
d9_finish serve-overview
