#!/bin/sh
# test_serve_follow.sh — `d9 serve`'s follow in a real browser (Debian's
# Chromium driven by playwright-core, as test_serve_browser.sh) on the store
# of a running collector with its default segments (sealed only at 64 MiB
# or 60 s: live data reaches the page through serve's own flush requests,
# the test never flushes): a page opened before any process is traced says
# so, then draws the first traced process once it runs; with follow on, it
# moves to a newer live process (selected alone, a window of at least 1 s
# at its newest data) and keeps drawing it.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
ROOT=$(pwd)
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
ART=$ABS_BUILD/test-artifacts
mkdir -p "$ART" && rm -f "$ART"/follow-*.png
browser_setup
start_collector
check "serve prints its URL" d9_serve serve "$BIN/d9" --store "$STORE"
U=$(cat "$T/serve.url")

# The driver prints "ok NAME" / "FAIL NAME: why" per check, and waits for
# $T/go-N files (N = 1, 2) before each step that needs the shell to start a
# program; the shell waits for the driver's $T/step-N files.
cat >"$T/drive.js" <<'JS'
const fs = require("fs");
const { chromium } = require(process.env.PW + "/node_modules/playwright-core");
const [url, chrome, art, dir] = process.argv.slice(2);
let failed = 0;
function ok(name, cond, why) { console.log((cond ? "ok " : "FAIL ") + name + (cond ? "" : ": " + String(why).replace(/\n/g, " | "))); if (!cond) failed++; }
const sleep = ms => new Promise(r => setTimeout(r, ms));
// bounded waits that re-evaluate their condition (the page's CSP forbids eval: polled from node)
async function until(cond, tries) { for (let i = 0; i < (tries || 1200) && !(await cond().catch(() => false)); i++) await sleep(50); return cond().catch(() => false); }
const drawn = page => page.$eval("#drawn", e => JSON.parse(e.textContent));
const q = page => new URL(page.url()).searchParams;
(async () => {
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1300, height: 800 } });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-state=ready]", { timeout: 30000 });
    const n0 = await page.textContent("#notice");
    ok("before any process: the page says the store has none", /no processes/.test(n0), n0);
    await page.screenshot({ path: art + "/follow-empty.png" });
    fs.writeFileSync(dir + "/step-1", "");
    while (!fs.existsSync(dir + "/go-1")) await sleep(50);
    const pidA = +fs.readFileSync(dir + "/go-1", "utf8");
    // the first process, drawn without a reload: its lanes and polls
    const firstDrawn = async () => { const d = await drawn(page); return q(page).get("pid") === String(pidA) && d.lanes > 0 && d.polls_drawn > 0; };
    ok("a page opened before any process draws the first one once it runs (lanes, polls)", await until(firstDrawn),
       page.url() + " " + JSON.stringify(await drawn(page)));
    await page.screenshot({ path: art + "/follow-first.png" });
    await page.check("#follow");
    fs.writeFileSync(dir + "/step-2", "");
    while (!fs.existsSync(dir + "/go-2")) await sleep(50);
    const pidB = +fs.readFileSync(dir + "/go-2", "utf8");
    const moved = async () => { const d = await drawn(page); return q(page).get("pid") === String(pidB) && d.lanes > 0 && d.polls_drawn > 0; };
    ok("follow moves to the newer live process, alone, and draws its polls", await until(moved),
       page.url() + " " + JSON.stringify(await drawn(page)));
    const p = q(page), span = +p.get("to") - +p.get("from");
    ok("... in a window of at least 1 s (never collapsed)", span >= 1e9, span);
    const procs = await page.$$eval("#procs input", els => els.map(e => [+e.dataset.pid, e.checked]));
    ok("... the older process is listed, not selected", procs.some(([pid, c]) => pid === pidA && !c) && procs.some(([pid, c]) => pid === pidB && c), JSON.stringify(procs));
    // the window keeps moving with the newest data
    const to0 = +q(page).get("to");
    ok("follow moves the window on with the process's newer data", await until(async () => +q(page).get("to") > to0), to0 + " " + page.url());
    await page.screenshot({ path: art + "/follow-newer.png" });
    ok("no script errors", errors.length === 0, errors.join("; "));
  } catch (e) { ok("the page drives", false, String(e)); await page.screenshot({ path: art + "/follow-error.png" }).catch(() => {}); }
  await browser.close();
  process.exit(failed ? 1 : 0);
})();
JS
PW=$ABS_BUILD/npm-playwright timeout 300 node "$T/drive.js" "$U" "$CHROME" "$ART" "$T" >"$T/drive.out" 2>"$T/drive.err" &
NPID=$!
at_exit kill "$NPID"
check "the page is up before any process" wait_for 60 test -e "$T/step-1"
# programs that poll with a 1 ms pause every 10 events until $T/stop exists
workload a --threads 1 --events 60000000 --polls --batch 10 --pace-us 1000 --exit clean --stop-file "$T/stop"
wl_pid a >"$T/go-1.tmp" && mv "$T/go-1.tmp" "$T/go-1"
check "the driver reached the second step" wait_for 120 test -e "$T/step-2"
workload b --threads 2 --events 60000000 --polls --batch 10 --pace-us 1000 --exit clean --stop-file "$T/stop"
wl_pid b >"$T/go-2.tmp" && mv "$T/go-2.tmp" "$T/go-2"
wait "$NPID"
touch "$T/stop"
grep -q . "$T/drive.out" || { echo "node: $(tail -n 5 "$T/drive.err")"; }
check "the browser script ran" grep -q '^ok ' "$T/drive.out"
check_lines "$T/drive.out"
d9_finish serve-follow
