#!/bin/sh
# test_serve_whole.sh — issue 37's cases checked on `d9 serve`'s page in a
# real browser (Debian's Chromium driven by playwright-core, as
# test_serve_pages.sh), on the store of known polls that tool_store_window
# writes (test_serve_window.sh checks the same on the API): a window inside
# the 600 ms long poll and a window holding its start only draw it on its
# lane, named, whole (true start and duration; not unfinished in the
# longest-polls table); the poll whose start and end are in two segments is
# drawn once; a corrupt block between a start and its end draws no phantom
# poll and the page says a block could not be read; three zoom steps (W)
# keep the lanes, their order and names, and the long poll's colour.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
ROOT=$(pwd)
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
ART=$ABS_BUILD/test-artifacts
mkdir -p "$ART" && rm -f "$ART"/whole-*.png
MS=1000000
T0=1000000000
browser_setup
check "the window store is written" "$TBIN/tool_store_window" "$T/win"
# a block of the second segment corrupted, between the gap thread's start
# at 100 ms and its end at 700 ms (as test_serve_window.sh)
cp -r "$T/win" "$T/bad"
SEG=$(sqlite3 "$T/bad/index.sqlite" "select path from segments where id = 2")
OFF=$(sqlite3 "$T/bad/index.sqlite" "select offset from blocks where kind = 2 and tid = 7173
                                     order by t_first limit 1 offset 1")
check "the block to corrupt is found" test -n "$OFF"
printf 'ZZZZ' | dd of="$T/bad/$SEG" bs=1 seek=$((OFF + 60)) conv=notrunc 2>/dev/null

# serve STORE NAME: a server on STORE; its URL in $T/NAME.url
serve() { d9_serve "$2" "$BIN/d9" --store "$1"; }
check "serve starts on the store" serve "$T/win" win
check "serve starts on the corrupted store" serve "$T/bad" bad

cat >"$T/drive.js" <<'JS'
// one line per check: "ok NAME" or "FAIL NAME: why"; the shell counts them
const { chromium } = require(process.env.PW + "/node_modules/playwright-core");
const [win, bad, chrome, art, t0, ms] = process.argv.slice(2);
const T0 = +t0, MS = +ms, LONG = 600 * MS, LONG_T = T0 + 10 * MS;
const LANES = ["main 7171", "lp 7172", "gap 7173", "busy 7174"];
let failed = 0;
function ok(name, cond, why) { console.log((cond ? "ok " : "FAIL ") + name + (cond ? "" : ": " + String(why).replace(/\n/g, " | "))); if (!cond) failed++; }
const sleep = ms => new Promise(r => setTimeout(r, ms));
async function until(cond) { for (let i = 0; i < 400 && !(await cond().catch(() => false)); i++) await sleep(50); return cond().catch(() => false); }
const drawn = page => page.$eval("#drawn", e => JSON.parse(e.textContent));
const J = x => JSON.stringify(x);
/* the long poll (task 11 at long_poll) as drawn: the entries of #drawn's long_polls */
const longs = d => d.long_polls.filter(p => / long_poll$/.test(p.name));
/* the longest-polls table's rows: { dur (its text), unfinished, thread, loc, task, start } */
const top = page => page.$$eval("#top tr", rs => rs.slice(1).map(r => { const c = [...r.children];
  return { dur: c[0].textContent, unfinished: c[0].hasAttribute("title"), thread: c[2].textContent, loc: c[3].textContent,
           task: c[4].textContent, start: c[5].textContent }; }));
const pid = 7171;
/* open the page on a window (ms offsets from T0) and wait for a draw of it */
async function open(page, base, a, b) {
  const q = "?pid=" + pid + (a === undefined ? "" : "&from=" + (T0 + a * MS) + "&to=" + (T0 + b * MS));
  await page.goto(base + q);
  await page.waitForSelector("body[data-state=ready]", { timeout: 30000 });
  await until(async () => { const d = await drawn(page); return d.data && d.data[pid] && (a === undefined ||
    Math.abs(d.data[pid][0] - (T0 + a * MS)) < MS && Math.abs(d.data[pid][1] - (T0 + b * MS)) < MS); });
  await until(async () => (await top(page)).length > 0);
  return drawn(page);
}
/* the long poll drawn once, on the lp lane, named, whole; its table row whole too */
async function whole(page, what, d) {
  const l = longs(d);
  ok(what + ": the long poll is drawn once, on the lp lane", l.length === 1 && l[0].tid === 7172 && l[0].lane === "lp", J(d.long_polls));
  if (l.length !== 1) return;
  ok(what + ": ... with its name (not #N, not 'poll')", l[0].name === "src/long.c:3 long_poll", l[0].name);
  ok(what + ": ... its whole duration, 600 ms (not clipped at the window)", l[0].dur === LONG, l[0].dur);
  ok(what + ": ... from its true start (10 ms), task 11", l[0].t === LONG_T && l[0].task === 11, J(l[0]));
  const r = (await top(page)).filter(x => / long_poll$/.test(x.loc));
  ok(what + ": the longest-polls table: the long poll once, 600.00ms, not unfinished, task 11, its true start",
     r.length === 1 && r[0].dur === "600.00ms" && !r[0].unfinished && r[0].task === "11" && r[0].thread === "lp" &&
     r[0].start === String(LONG_T), J(r));
}
(async () => {
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  try {
    // (1) a window inside the long poll [10, 610]
    let d = await open(page, win, 300, 400);
    await whole(page, "a window inside the long poll", d);
    ok("a window inside the long poll: every lane, in order, named", J(d.lane_names) === J(LANES), J(d.lane_names));
    await page.screenshot({ path: art + "/whole-inside.png" });
    // (2) a window with its start (in segment 1) but not its end
    d = await open(page, win, 5, 300);
    await whole(page, "a window with the long poll's start only", d);
    // (3) a window with its end only: its start is in the segment before
    d = await open(page, win, 300, 650);
    await whole(page, "a window with the long poll's end only (start in segment 1)", d);
    // ... and a window with both: across the segment boundary, one poll
    d = await open(page, win, 0, 700);
    await whole(page, "a window with the whole long poll, across the segment boundary", d);

    // (5) three zoom levels from [0, 1200] ms: W, W; the same lanes and colour
    d = await open(page, win, 0, 1200);
    const seen = [[d.lane_names, longs(d).map(p => p.colour), d.mode[pid]]];
    for (const [a, b] of [[300, 900], [450, 750]]) {
      const n = d.draws;
      await page.mouse.move(1, 1);                 /* off the canvas: W zooms around the centre */
      await page.keyboard.press("w");
      await until(async () => { const e = await drawn(page); return e.draws > n && e.data[pid] &&
        Math.abs(e.data[pid][0] - (T0 + a * MS)) < MS && Math.abs(e.data[pid][1] - (T0 + b * MS)) < MS; });
      d = await drawn(page);
      ok("W zooms to [" + a + ", " + b + "] ms", d.data[pid] && Math.abs(d.data[pid][0] - (T0 + a * MS)) < MS &&
         Math.abs(d.data[pid][1] - (T0 + b * MS)) < MS, J(d.data));
      seen.push([d.lane_names, longs(d).map(p => p.colour), d.mode[pid]]);
    }
    seen.forEach(([names, cols, mode], i) => {
      ok("zoom level " + i + " (" + mode + "): every lane, in order, named", J(names) === J(LANES), J(names));
      ok("zoom level " + i + " (" + mode + "): the long poll drawn, in one colour", cols.length >= 1 && cols.every(c => c === seen[0][1][0]),
         J(cols) + " vs " + J(seen[0][1]));
    });
    await page.screenshot({ path: art + "/whole-zoom.png" });

    // (4) the corrupt block between the gap thread's start (100 ms) and end (700 ms)
    for (const [what, a, b] of [["a window over the corrupt block", 0, 715], ["the whole store", undefined, undefined]]) {
      d = await open(page, bad, a, b);
      const nb = page.locator("#notice");
      ok(what + ": the page says a block could not be read", (await nb.isVisible()) && /could not be read/.test(await nb.textContent()),
         await nb.textContent());
      ok(what + ": ... and hatches it on its lane", (d.gaps_drawn || 0) >= 1, J(d));
      ok(what + ": no poll drawn longer than the longest there is (600 ms)", d.long_polls.every(p => p.dur <= LONG), J(d.long_polls));
      ok(what + ": no phantom poll on the gap thread's lane (its polls are under 100 ms)",
         d.long_polls.every(p => p.tid !== 7173), J(d.long_polls));
      const r = await top(page);
      ok(what + ": the longest-polls table: no phantom poll on the gap thread, the long poll first",
         r.length > 0 && / long_poll$/.test(r[0].loc) && r[0].dur === "600.00ms" &&
         r.every(x => x.thread !== "gap" || !/^[0-9.]+(ms|s)$/.test(x.dur) || (/ms$/.test(x.dur) && parseFloat(x.dur) < 100)), J(r));
      await page.screenshot({ path: art + "/whole-corrupt-" + (a === undefined ? "store" : "window") + ".png" });
    }
    ok("no script errors", errors.length === 0, errors.join("; "));
  } catch (e) { ok("the page drives", false, String(e)); await page.screenshot({ path: art + "/whole-error.png" }).catch(() => {}); }
  await browser.close();
  process.exit(failed ? 1 : 0);
})();
JS
PW=$ABS_BUILD/npm-playwright timeout 240 node "$T/drive.js" "$(cat "$T/win.url")" "$(cat "$T/bad.url")" \
    "$CHROME" "$ART" "$T0" "$MS" >"$T/drive.out" 2>"$T/drive.err"
grep -q . "$T/drive.out" || { echo "node: $(tail -n 5 "$T/drive.err")"; }
check "the browser script ran" grep -q '^ok ' "$T/drive.out"
check_lines "$T/drive.out"
d9_finish serve-whole
