#!/bin/sh
# test_serve_loopwork.sh — loop work (collector/query/q_loopwork.h) in
# `d9 serve`: prog_uvloopwork (plain libuv under the preload shim) spends
# 8 x 50 ms of CPU outside its callbacks and its wait. The timeline API
# lists those 8 intervals on the loop thread's lane with the CPU samples
# inside, the same starts and durations as d9 sql's loop_work table; a
# window inside one interval, or cutting its start or its end, still gets
# it whole (look-back, look-ahead). /api/findings has the loop-work
# finding. In Debian's Chromium: the page draws them (legend, lane), a
# click on the finding selects the interval and the details panel shows
# its duration and samples; a click on the drawn interval does the same.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
ROOT=$(pwd)
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
ART=$ABS_BUILD/test-artifacts
mkdir -p "$ART" && rm -f "$ART"/serve-loopwork-*.png
PROG=$TBIN/prog_uvloopwork
ROUNDS=8
WORK_NS=50000000

start_collector
held_rounds "$PROG" "$ROUNDS"
check "the collector records the exit and seals the data" wait_for 20 ended "$PID"
$D9 sql --format csv "select start_ns, dur_ns, tid from loop_work where pid = $PID and dur_ns >= 40000000 order by start_ns" |
    tail -n +2 | tr -d '\r' >"$T/sql_iv"
check "sql: $ROUNDS loop-work intervals (the reference)" sh -c "[ \$(wc -l <'$T/sql_iv') -eq $ROUNDS ]"

check "serve prints its URL" d9_serve serve $D9
U=$(cat "$T/serve.url")

# lw FROM TO: the timeline of [FROM, TO] (0 0: the whole process); prints the
# loop-work intervals of >= 40 ms as "abs_start,dur,tid" and on stderr "samples N"
lw() { python3 - "$U" "$PID" "$1" "$2" <<'PY'
import json, sys, urllib.request
base, pid, a, b = sys.argv[1:5]
q = "/api/timeline?pid=%s&width=800" % pid + ("&from=%s&to=%s" % (a, b) if a != "0" else "")
d = json.load(urllib.request.urlopen(base.rstrip("/") + q, timeout=60))
n = 0
for lane, t, dur, smp in d["loopwork"]:
    if dur >= 40000000:
        print("%d,%d,%d" % (d["from"] + t, dur, d["lanes"][lane]["tid"]))
        n += smp
assert d["loopwork_total"] >= len(d["loopwork"])
print("samples", n, file=sys.stderr)
PY
}
lw 0 0 >"$T/api_iv" 2>"$T/api.err"
check "timeline: the $ROUNDS intervals of sql's loop_work (start, duration, lane)" sh -c \
    "cmp '$T/api_iv' '$T/sql_iv' || { cat '$T/api_iv' '$T/api.err'; false; }"
check "  with CPU samples inside" grep -q '^samples [1-9]' "$T/api.err"
IFS=, read -r S0 D0 TID0 <"$T/sql_iv"
check "  on the loop thread's lane, the process's main thread" test "$TID0" = "$PID"
inside() {
    lw "$1" "$2" >"$T/w_iv" 2>/dev/null
    grep -qx "$S0,$D0,$TID0" "$T/w_iv" || { echo "window $1..$2:"; cat "$T/w_iv"; return 1; }
}
check "a window inside the first interval gets it whole" \
    inside $((S0 + 10000000)) $((S0 + 20000000))
check "a window cutting its start gets it whole" inside $((S0 + 10000000)) $((S0 + D0 + 5000000))
check "a window cutting its end gets it whole" inside $((S0 - 5000000)) $((S0 + 10000000))
finding() { python3 - "$U" "$PID" <<'PY'
import json, sys, urllib.request
base, pid = sys.argv[1:3]
d = json.load(urllib.request.urlopen(base.rstrip("/") + "/api/findings?pid=" + pid, timeout=60))
f = [x for x in d["findings"] if x["kind"] == "loop-work"]
assert f and f[0]["count"] >= 8 and f[0]["samples"] > 0, d
print(f[0]["from_ns"], f[0]["max_ns"])
PY
}
finding >"$T/finding" 2>"$T/finding.err"
check "/api/findings: the loop-work finding, its longest interval" sh -c "test -s '$T/finding' || { cat '$T/finding.err'; false; }"

browser_setup
cat >"$T/drive.js" <<'JS'
// one line per check: "ok NAME" or "FAIL NAME: why"; the shell counts them
const { chromium } = require(process.env.PW + "/node_modules/playwright-core");
const [url, chrome, art, rounds, lwFrom, lwDur] = process.argv.slice(2);
let failed = 0;
function ok(name, cond, why) { console.log((cond ? "ok " : "FAIL ") + name + (cond ? "" : ": " + String(why).replace(/\n/g, " | "))); if (!cond) failed++; }
const json = (page, id) => page.$eval(id, e => JSON.parse(e.textContent));
async function until(cond) { for (let i = 0; i < 200 && !(await cond()); i++) await new Promise(r => setTimeout(r, 50)); }
(async () => {
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  try {
    await page.goto(url);
    await page.waitForSelector("body[data-state=ready]", { timeout: 20000 });
    const s = await json(page, "#drawn");
    ok("the timeline draws the " + rounds + " loop-work intervals", s.loopwork_drawn >= +rounds, JSON.stringify(s));
    ok("  with CPU samples inside", s.loopwork_samples > 0, JSON.stringify(s));
    ok("the legend names loop work", /loop work/.test(await page.textContent("#legend")), "");
    await page.screenshot({ path: art + "/serve-loopwork-load.png" });

    await page.waitForSelector("#findings tr[data-i]", { timeout: 20000 });
    await page.click("#findings tr[data-i]:has-text('loop-work')");
    await until(async () => (await json(page, "#seldrawn")).loop_work);
    const d = await json(page, "#seldrawn");
    ok("the loop-work finding selects its longest interval", d.loop_work === true && d.start_ns === +lwFrom && d.dur === +lwDur, JSON.stringify(d) + " want " + lwFrom + "/" + lwDur);
    ok("  details: its CPU samples", d.samples > 0, JSON.stringify(d));
    const txt = await page.textContent("#details");
    ok("  details: named loop work, with its duration", /loop work/.test(txt) && /duration\s+\d/.test(txt), txt);
    await page.screenshot({ path: art + "/serve-loopwork-finding.png" });

    // the finding's window is the interval with 25 % either side: its middle is the interval,
    // on the first lane (the loop thread, the main thread)
    await page.waitForSelector("body[data-state=ready]");
    const box = await page.locator("#cv").boundingBox();
    await page.mouse.click(box.x + 151, box.y + 18 + 15);          /* first away from it */
    await page.mouse.click(box.x + 150 + (box.width - 150) / 2, box.y + 18 + 15);
    await until(async () => (await json(page, "#seldrawn")).loop_work);
    const c = await json(page, "#seldrawn");
    ok("a click on the drawn interval selects it", c.loop_work === true && c.start_ns === +lwFrom && c.samples > 0, JSON.stringify(c));
    ok("no script errors", errors.length === 0, errors.join("; "));
  } catch (e) { ok("the page drives", false, String(e)); await page.screenshot({ path: art + "/serve-loopwork-error.png" }).catch(() => {}); }
  await browser.close();
  process.exit(failed ? 1 : 0);
})();
JS
read -r LW_FROM LW_DUR <"$T/finding" || true
PW=$ABS_BUILD/npm-playwright timeout 120 node "$T/drive.js" "${U}?pid=$PID" "$CHROME" "$ART" "$ROUNDS" \
    "${LW_FROM:-0}" "${LW_DUR:-0}" >"$T/drive.out" 2>"$T/drive.err"
grep -q . "$T/drive.out" || { echo "node: $(tail -n 5 "$T/drive.err")"; }
check "the browser script ran" grep -q '^ok ' "$T/drive.out"
check_lines "$T/drive.out"
d9_finish serve-loopwork
