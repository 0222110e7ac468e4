#!/bin/sh
# test_serve_pages.sh — `d9 serve`'s page in a real browser (Debian's
# Chromium driven by playwright-core, as test_serve_browser.sh): its first
# load fetches the timeline, the events and the flame graph once each (not
# several times); the custom-events table of a window of 1800 events
# (tool_store_big) pages through all of them, 200 a page, and the filter
# applies to the pages; the error states are said on the page itself: a
# corrupt segment, a store without processes; a store that does not exist
# is refused by `d9 serve` with its reason.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
ROOT=$(pwd)
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
ART=$ABS_BUILD/test-artifacts
mkdir -p "$ART" && rm -f "$ART"/pages-*.png
MS=1000000
T0=1000000000
browser_setup
check "the big store is written" "$TBIN/tool_store_big" "$T/big"
check "the window store is written" "$TBIN/tool_store_window" "$T/win"
# a block of the window store's second segment corrupted (as test_serve_window.sh)
cp -r "$T/win" "$T/bad"
SEG=$(sqlite3 "$T/bad/index.sqlite" "select path from segments where id = 2")
OFF=$(sqlite3 "$T/bad/index.sqlite" "select offset from blocks where kind = 2 and tid = 7173
                                     order by t_first limit 1 offset 1")
check "the block to corrupt is found" test -n "$OFF"
printf 'ZZZZ' | dd of="$T/bad/$SEG" bs=1 seek=$((OFF + 60)) conv=notrunc 2>/dev/null
cp -r "$T/win" "$T/empty"
sqlite3 "$T/empty/index.sqlite" "delete from blocks; delete from segments; delete from threads; delete from runtimes; delete from processes"

# serve STORE NAME: a server on STORE; its URL in $T/NAME.url
serve() { d9_serve "$2" "$BIN/d9" --store "$1"; }
check "serve starts on the big store" serve "$T/big" big
check "serve starts on the corrupted store" serve "$T/bad" bad
check "serve starts on the store without processes" serve "$T/empty" empty
check "serve refuses a store that does not exist, with its reason" sh -c \
    "! '$BIN/d9' --store '$T/none' serve --listen 127.0.0.1:0 >'$T/none.out' 2>&1 &&
     grep -q 'No such file or directory' '$T/none.out'"

cat >"$T/drive.js" <<'JS'
// one line per check: "ok NAME" or "FAIL NAME: why"; the shell counts them
const { chromium } = require(process.env.PW + "/node_modules/playwright-core");
const [big, bad, empty, chrome, art, t0, ms] = process.argv.slice(2);
const T0 = +t0, MS = +ms;
let failed = 0;
function ok(name, cond, why) { console.log((cond ? "ok " : "FAIL ") + name + (cond ? "" : ": " + String(why).replace(/\n/g, " | "))); if (!cond) failed++; }
const sleep = ms => new Promise(r => setTimeout(r, ms));
async function until(cond) { for (let i = 0; i < 400 && !(await cond().catch(() => false)); i++) await sleep(50); return cond().catch(() => false); }
const json = (page, id) => page.$eval(id, e => JSON.parse(e.textContent));
const firstN = async page => { const f = await page.$eval("#events tr:nth-child(2) td:nth-child(5)", e => e.textContent); return +f.replace(/^n=/, ""); };
const rows = page => page.$$eval("#events tr", t => t.length - 1);
(async () => {
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  const asked = {};
  page.on("request", r => { const p = new URL(r.url()).pathname; asked[p] = (asked[p] || 0) + 1; });
  try {
    // the first load of a window: one request of each kind
    await page.goto(big + "?pid=7272&from=" + (T0 + 3500 * MS) + "&to=" + (T0 + 9500 * MS));
    await page.waitForSelector("body[data-state=ready]", { timeout: 30000 });
    await until(async () => (await json(page, "#flamedrawn")).ready && /events in the window/.test(await page.textContent("#evinfo")));
    await sleep(1500);      /* anything the first load still sends has been sent: counted below */
    ok("the first load fetches the timeline once", asked["/api/timeline"] === 1, JSON.stringify(asked));
    ok("... the events once", asked["/api/events"] === 1, JSON.stringify(asked));
    ok("... the flame graph once", asked["/api/flame"] === 1, JSON.stringify(asked));
    ok("... the processes once", asked["/api/processes"] === 1, JSON.stringify(asked));
    // the events table's pages
    const info = () => page.textContent("#evinfo");
    ok("the events table says 1800 events, 1-200 shown, page 1/9", /^1800 events in the window, 1–200 shown \(page 1\/9\)/.test(await info()), await info());
    ok("... its first page is events 0..199", (await firstN(page)) === 0 && (await rows(page)) === 200, (await firstN(page)) + " " + (await rows(page)));
    await page.click("#evnext");
    await until(async () => /201–400/.test(await info()));
    ok("next: events 200..399", (await firstN(page)) === 200 && (await rows(page)) === 200 && /page 2\/9/.test(await info()), await info());
    await page.click("#evlast");
    await until(async () => /1601–1800/.test(await info()));
    ok("last: events 1600..1799", (await firstN(page)) === 1600 && (await rows(page)) === 200, await info());
    await page.click("#evprev");
    await until(async () => /1401–1600/.test(await info()));
    ok("prev: events 1400..1599", (await firstN(page)) === 1400, await info());
    await page.screenshot({ path: art + "/pages-events.png" });
    await page.fill("#evname", "tock");
    await page.click("#evgo");
    await until(async () => /^180 events/.test(await info()));
    ok("the filter: 180 tocks on one page, from the first", /^180 events in the window$/.test(await info()) && (await rows(page)) === 180 && (await firstN(page)) === 9, await info());

    // the whole store at the first view: one timeline request too
    for (const k in asked) delete asked[k];
    await page.goto(big);
    await page.waitForSelector("body[data-state=ready]", { timeout: 30000 });
    await until(async () => (await json(page, "#flamedrawn")).ready);
    await sleep(1500);
    ok("the whole store's first load fetches the timeline once", asked["/api/timeline"] === 1, JSON.stringify(asked));

    // error states, on the page itself
    await page.goto(bad + "?pid=7171");
    await page.waitForSelector("body[data-state=ready]", { timeout: 30000 });
    const nb = page.locator("#notice");
    ok("a corrupt segment: the page says a block could not be read", (await nb.isVisible()) && /could not be read/.test(await nb.textContent()), await nb.textContent());
    ok("... and hatches it on its lane", ((await json(page, "#drawn")).gaps_drawn || 0) >= 1, JSON.stringify(await json(page, "#drawn")));
    await page.screenshot({ path: art + "/pages-corrupt.png" });
    await page.goto(empty);
    await page.waitForSelector("body[data-state=ready]", { timeout: 30000 });
    ok("a store without processes: the page says so", (await nb.isVisible()) && /no processes/.test(await nb.textContent()), await nb.textContent());
    await page.screenshot({ path: art + "/pages-empty.png" });
    ok("no script errors", errors.length === 0, errors.join("; "));
  } catch (e) { ok("the page drives", false, String(e)); await page.screenshot({ path: art + "/pages-error.png" }).catch(() => {}); }
  await browser.close();
  process.exit(failed ? 1 : 0);
})();
JS
PW=$ABS_BUILD/npm-playwright timeout 200 node "$T/drive.js" "$(cat "$T/big.url")" "$(cat "$T/bad.url")" \
    "$(cat "$T/empty.url")" "$CHROME" "$ART" "$T0" "$MS" >"$T/drive.out" 2>"$T/drive.err"
grep -q . "$T/drive.out" || { echo "node: $(tail -n 5 "$T/drive.err")"; }
check "the browser script ran" grep -q '^ok ' "$T/drive.out"
check_lines "$T/drive.out"
d9_finish serve-pages
