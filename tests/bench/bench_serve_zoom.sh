#!/bin/sh
# bench_serve_zoom.sh — a section of `make bench` (and `make bench-serve-zoom`):
# sustained zooming in `d9 serve`'s page, as a user does it, in a real
# browser (Debian's Chromium driven by playwright-core, as the browser
# tests): on a synthetic store (bench_serve's: 4 workers of back-to-back
# polls) the page opens on the whole store (the index overview), then W
# zooms in a notch (half the window, around the mouse) every STEP_MS ms,
# STEPS times. Each notch sends a timeline, and after it the events table
# and the flame graph of the window: reads of every record of a big window,
# which a newer notch supersedes. Reported: the redraws per second while
# zooming (a redraw = the page drew a new answer), the lag after the last
# input (its last notch until the page drew the answer of the final
# window) and the time of each notch's answer from its key press. Runs
# REPS times; median and range.
# Environment: BUILD (default build), BENCH_QUICK=1 (2 M records, 2 runs),
# BENCH_ZOOM_RECORDS (default 50 M, as the issue measured: builds in under a minute here, 1.5 GB),
# BENCH_ZOOM_STEPS (default 12), BENCH_ZOOM_STEP_MS (default 300),
# BENCH_ZOOM_REPS (default 3), BENCH_ZOOM_D9 (the d9 to serve with, default
# $BUILD/bin/d9: to compare builds), BENCH_ZOOM_STORE=DIR (build the store
# there, or reuse the one an earlier run built there), BENCH_KEEP=1 (keep
# the temp dir; with D9_SERVE_LOG=1 its serve.err is the server's request
# log: each request's status, queue and run ms and records read).
set -u
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
RECORDS=${BENCH_ZOOM_RECORDS:-$([ "$QUICK" = 1 ] && echo 2000000 || echo 50000000)}
STEPS=${BENCH_ZOOM_STEPS:-12}
STEP_MS=${BENCH_ZOOM_STEP_MS:-300}
REPS=${BENCH_ZOOM_REPS:-$([ "$QUICK" = 1 ] && echo 2 || echo 3)}
T=$(mktemp -d /tmp/d9bench-zoom.XXXXXX) || exit 1
SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT INT TERM
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$(pwd)/$BUILD ;; esac
CHROME=""
for c in /usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/chromium \
         "$(command -v chromium-headless-shell)" "$(command -v chromium)"; do
    [ -n "$c" ] && [ -x "$c" ] && { CHROME=$c; break; }
done
[ -n "$CHROME" ] || { echo "bench_serve_zoom: no Chromium (apt-get install chromium-headless-shell): skipped"; exit 0; }
BUILD=$BUILD sh tests/integration/playwright_install.sh || { echo "bench_serve_zoom: playwright-core did not install: skipped"; exit 0; }
if [ -n "${BENCH_ZOOM_STORE:-}" ] && [ -f "$BENCH_ZOOM_STORE/build.out" ]; then
    STORE=$BENCH_ZOOM_STORE             # built by an earlier run: kept, reused
else
    STORE=${BENCH_ZOOM_STORE:-$T/store}
    BENCH_SERVE_BUILD_ONLY=1 "$BUILD/bench/bench_serve" "$STORE" "$RECORDS" >"$T/build.out" || exit 1
    cp "$T/build.out" "$STORE/build.out"
fi
N=$(awk '$1 == "serve.records" { print $2 }' "$STORE/build.out")
BS=$(awk '$1 == "serve.build_s" { print $2 }' "$STORE/build.out")
"${BENCH_ZOOM_D9:-$BUILD/bin/d9}" --store "$STORE" serve --listen 127.0.0.1:0 --no-flush >"$T/serve.out" 2>"$T/serve.err" &
SPID=$!
i=0
while ! grep -q '^d9 serve: http://' "$T/serve.out" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
U=$(sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/serve.out")
[ -n "$U" ] || { echo "bench_serve_zoom: d9 serve did not start: $(cat "$T/serve.err")"; exit 1; }

cat >"$T/zoom.js" <<'JS'
// prints one line per run: "run REDRAWS_PER_S LAG_MS MEAN_STEP_MS REDRAWS DURATION_MS"
const { chromium } = require(process.env.PW + "/node_modules/playwright-core");
const [url, chrome, steps, stepMs, reps] = process.argv.slice(2).map((v, i) => i < 2 ? v : +v);
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const browser = await chromium.launch({ executablePath: chrome, args: ["--no-sandbox", "--disable-gpu"] });
  for (let rep = 0; rep < reps; rep++) {
    const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
    await page.goto(url);
    await page.waitForSelector("body[data-state=ready]", { timeout: 120000 });
    const drawn = async () => JSON.parse(await page.$eval("#drawn", e => e.textContent));
    for (let i = 0; i < 2400 && !((await drawn()).lanes > 0); i++) await sleep(50);
    await sleep(1000);              // the first load's events and flame requests are on their way
    const box = await page.locator("#cv").boundingBox();
    // the mouse at 37 % of the plot: zooms around a point that is not a block boundary
    await page.mouse.move(box.x + 150 + (box.width - 150) * 0.37, box.y + 40);
    const log = [];                 // [ms, draws, data window of the pid]
    let stop = false;
    const t0 = Date.now();
    const watch = (async () => {
      let last = (await drawn()).draws;
      while (!stop) {
        const d = await drawn();
        if (d.draws !== last) { last = d.draws; log.push([Date.now() - t0, d.draws, Object.values(d.data)[0]]); }
        await sleep(10);
      }
    })();
    const keys = [];
    for (let s = 0; s < steps; s++) {
      const t = Date.now() - t0;
      await page.keyboard.press("w");
      keys.push(t);
      const next = t0 + (s + 1) * stepMs;
      await sleep(Math.max(0, next - Date.now()));
    }
    // the final window: the view after the last notch (the page rewrites the URL at each draw: read the view instead)
    const lastKey = keys[keys.length - 1];
    let caught = null;
    for (let i = 0; i < 6000 && caught === null; i++) {
      await sleep(10);
      const q = new URL(page.url()).searchParams, a = +q.get("from"), b = +q.get("to");
      const hit = log.find(([t, , w]) => t >= lastKey && w && w[0] === a && w[1] === b);
      const d = await drawn();
      if (hit && Object.values(d.data)[0][0] === a) caught = hit[0];
    }
    stop = true; await watch;
    const during = log.filter(([t]) => t >= keys[0] && t <= (caught === null ? Infinity : caught));
    const dur = (caught === null ? Date.now() - t0 : caught) - keys[0];
    console.log("run " + (during.length / (dur / 1000)).toFixed(2) + " " + (caught === null ? "nan" : caught - lastKey) + " " +
      (dur / steps).toFixed(0) + " " + during.length + " " + dur);
    await page.close();
  }
  await browser.close();
})().catch(e => { console.error(String(e)); process.exit(1); });
JS
echo "== d9 serve: sustained zoom in the page ($N records built in $BS s; a notch every $STEP_MS ms, $STEPS notches from the whole store; $REPS runs; Chromium headless)"
PW=$ABS_BUILD/npm-playwright timeout 900 node "$T/zoom.js" "$U" "$CHROME" "$STEPS" "$STEP_MS" "$REPS" >"$T/zoom.out" 2>"$T/zoom.err" ||
    { echo "bench_serve_zoom: the browser run failed: $(tail -n 3 "$T/zoom.err")"; exit 1; }
med() { awk -v k="$1" '$1 == "run" { print $k }' "$T/zoom.out" | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) printf "%s [%s .. %s]", v[int((NR + 1) / 2)], v[1], v[NR] }'; }
printf '%-44s %s\n' "redraws per second while zooming" "$(med 2)"
printf '%-44s %s\n' "lag after the last notch (ms)" "$(med 3)"
printf '%-44s %s\n' "redraws during the zoom (of $STEPS notches)" "$(med 5)"
awk '$1 == "run" { print "serve_zoom.run " $2 " redraws/s, lag " $3 " ms, " $5 " redraws in " $6 " ms" }' "$T/zoom.out"
