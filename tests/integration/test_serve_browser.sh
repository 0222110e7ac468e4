#!/bin/sh
# test_serve_browser.sh — `d9 serve`'s page in a real browser: Debian's
# Chromium driven by playwright-core (pinned, playwright_install.sh) on a
# store whose findings are known (tool_store_findings). Loads the page,
# waits for the data, clicks the long-poll finding and checks the selected
# poll's details, zooms with W/S and fits with F, shift-drags a range and
# checks its flame graph and summary, searches a function, reloads the URL and gets the same view.
# Screenshots are kept in $BUILD/test-artifacts/; with D9_SCREENSHOT=PATH
# (`make screenshot`) the one of the finding is also written to PATH.
. tests/integration/lib.sh
d9_setup
ROOT=$(pwd)
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
ART=$ABS_BUILD/test-artifacts
mkdir -p "$ART" && rm -f "$ART"/serve-*.png
"$TBIN/tool_store_findings" "$T/store" || exit 1
browser_setup
check "serve prints its URL" d9_serve serve "$BIN/d9" --store "$T/store"
U=$(cat "$T/serve.url")

cat >"$T/drive.js" <<'JS'
// one line per check: "ok NAME" or "FAIL NAME: why"; the shell counts them
const { chromium } = require(process.env.PW + "/node_modules/playwright-core");
const [url, chrome, art, shot] = process.argv.slice(2);
let failed = 0;
function ok(name, cond, why) { console.log((cond ? "ok " : "FAIL ") + name + (cond ? "" : ": " + String(why).replace(/\n/g, " | "))); if (!cond) failed++; }
const json = (page, id) => page.$eval(id, e => JSON.parse(e.textContent));
// waits (bounded, re-evaluated every 50 ms) until cond() holds in node: the page's CSP forbids eval, so
// waitForFunction cannot poll
async function until(cond) { for (let i = 0; i < 200 && !(await cond()); i++) await new Promise(r => setTimeout(r, 50)); }
const span = u => { const q = new URL(u).searchParams; return +q.get("to") - +q.get("from"); };
(async () => {
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-state=ready]", { timeout: 20000 });
    await page.waitForSelector("#findings tr[data-i]", { timeout: 20000 });
    const rows = await page.$$eval("#findings tr[data-i]", t => t.map(r => r.textContent));
    ok("the findings panel lists the store's 8 findings", rows.length === 8, JSON.stringify(rows));
    await page.screenshot({ path: art + "/serve-load.png" });

    await page.click("#findings tr[data-i]:has-text('long-poll')");
    await until(async () => (await json(page, "#seldrawn")).location);
    const d = await json(page, "#seldrawn");
    ok("a finding selects its poll: location", d.location === "src/slow.c:7 slow_handler", JSON.stringify(d));
    ok("... task, worker and duration", d.task === 2000 && d.tid === 702 && d.dur === 20000000, JSON.stringify(d));
    ok("... its CPU samples", d.samples > 0, JSON.stringify(d));
    ok("the URL holds the view", /pid=7001/.test(page.url()) && /sel=7001%3A702%3A2000%3A1000000000/.test(page.url()), page.url());
    await page.screenshot({ path: art + "/serve-finding.png" });
    if (shot) await page.screenshot({ path: shot, clip: { x: 0, y: 0, width: 1300, height: 720 } });

    const s0 = span(page.url());
    await page.keyboard.press("w");
    await until(() => span(page.url()) < s0);
    ok("W zooms in (the window halves)", Math.abs(span(page.url()) - s0 / 2) <= 2, s0 + " -> " + span(page.url()));
    await page.keyboard.press("s"); await page.keyboard.press("s");
    await until(() => span(page.url()) > s0);
    ok("S zooms out", span(page.url()) > s0, s0 + " -> " + span(page.url()));
    await page.waitForSelector("body[data-state=ready]");
    await page.keyboard.press("f");
    await until(() => span(page.url()) === 22000000);
    ok("F fits the selected poll (20 ms + 5 % each side)", span(page.url()) === 22000000, span(page.url()));
    await until(async () => (await json(page, "#seldrawn")).location);

    const box = await page.locator("#cv").boundingBox();
    await page.mouse.move(box.x + 170, box.y + 40);
    await page.keyboard.down("Shift");
    await page.mouse.down();
    await page.mouse.move(box.x + 600, box.y + 40, { steps: 5 });
    await page.mouse.move(box.x + box.width - 20, box.y + 40, { steps: 5 });
    await page.mouse.up();
    await page.keyboard.up("Shift");
    await until(async () => (await json(page, "#flamedrawn")).range);
    const f = await json(page, "#flamedrawn");
    ok("shift-drag: the range's flame graph", f.samples > 0 && f.frames.find_hot > 0, JSON.stringify(f));
    const sum = await page.textContent("#rangesum");
    ok("shift-drag: the range's summary (polls, busy %, longest)", /polls [1-9][0-9]*, busy [0-9.]+% of 3 lanes/.test(sum) && /busy/.test(sum) && /longest 20\.00ms src\/slow\.c:7/.test(sum), sum);
    await page.screenshot({ path: art + "/serve-range.png" });

    await page.fill("#search", "fast_handler");
    await page.press("#search", "Enter");
    await until(async () => (await json(page, "#seldrawn")).location === "src/fast.c:3 fast_handler");
    const sr = await json(page, "#seldrawn");
    ok("search by function selects a matching poll", sr.location === "src/fast.c:3 fast_handler", JSON.stringify(sr));
    const before = { url: page.url(), sel: await json(page, "#seldrawn"), sum };
    await page.reload();
    await page.waitForSelector("body[data-state=ready]", { timeout: 20000 });
    await until(async () => (await json(page, "#flamedrawn")).range);
    await until(async () => (await json(page, "#seldrawn")).location);
    ok("reload: the same window", span(page.url()) === span(before.url) && page.url() === before.url, before.url + " vs " + page.url());
    ok("reload: the same selection", JSON.stringify(await json(page, "#seldrawn")) === JSON.stringify(before.sel), "");
    ok("reload: the same range", (await page.textContent("#rangesum")) === before.sum, await page.textContent("#rangesum"));
    await page.screenshot({ path: art + "/serve-reload.png" });
    ok("no script errors", errors.length === 0, errors.join("; "));
  } catch (e) { ok("the page drives", false, String(e)); await page.screenshot({ path: art + "/serve-error.png" }).catch(() => {}); }
  await browser.close();
  process.exit(failed ? 1 : 0);
})();
JS
PW=$ABS_BUILD/npm-playwright timeout 120 node "$T/drive.js" "$U" "$CHROME" "$ART" "${D9_SCREENSHOT:+$ROOT/$D9_SCREENSHOT}" >"$T/drive.out" 2>"$T/drive.err"
grep -q . "$T/drive.out" || { echo "node: $(tail -n 5 "$T/drive.err")"; }
check "the browser script ran" grep -q '^ok ' "$T/drive.out"
check_lines "$T/drive.out"
d9_finish serve-browser
