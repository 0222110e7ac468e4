#!/bin/sh
# test_serve_window.sh — `d9 serve`'s timeline on a store whose polls are
# known (tool_store_window): a poll longer than the window and a window
# inside a poll come back whole on their own lane with their name; a poll
# whose start and end are in two segments is one poll; the lanes are the
# same, in the same order, with their names, at every zoom; the whole-store
# buckets count a poll over every column it covers; a corrupt block between
# a start and its end is reported and never paired into a phantom poll (by
# the timeline, d9 top-polls and d9 sql alike); the page draws the long
# poll in a window inside it and says in words what it cannot draw (a
# corrupt or truncated segment, a store without processes).
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
MS=1000000
T0=1000000000
STORE=$T/store
check "the store is written" "$TBIN/tool_store_window" "$STORE"

# serve STORE NAME: a server on STORE; its URL in $T/NAME.url
serve() { d9_serve "$2" "$BIN/d9" --store "$1"; }
check "serve starts on the store" serve "$STORE" s
# tl NAME FROM TO WIDTH OUT: the timeline of pid 7171 (offsets in ms from T0) into $T/OUT.json
tl() {
    python3 - "$(cat "$T/$1.url")" "$2" "$3" "$4" "$T/$5.json" <<'PY'
import sys, urllib.request
base, a, b, w, out = sys.argv[1:]
T0, MS = 1000000000, 1000000
q = "api/timeline?pid=7171&width=%s" % w
if a != "-":
    q += "&from=%d&to=%d" % (T0 + int(a) * MS, T0 + int(b) * MS)
body = urllib.request.urlopen(base + q, timeout=20).read()
open(out, "wb").write(body)
PY
}
# jcheck FILE PYTHON: the assertions of PYTHON hold on the answer d (and its helpers)
jcheck() {
    python3 - "$T/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
MS = 1000000
def lane(name): return [i for i, l in enumerate(d["lanes"]) if l["name"] == name][0]
def items(name): return [it for it in d["items"] if it[0] == lane(name)]
def loc(i): return d["locs"][i]
exec(sys.argv[2])
PY
}

check "a window inside the long poll: fetched" tl s 300 400 500 inside
check "a window inside the long poll: the poll is there whole, on its lane, named" jcheck inside '
its = items("lp")
assert len(its) == 1, its
_, t, dur, l, task = its[0]
assert (t, dur, task) == (-290 * MS, 600 * MS, 11), its[0]
assert loc(l).endswith(" long_poll"), loc(l)
assert d["lanes"][lane("lp")]["polls"] == 1, d["lanes"]
top = [e for e in d["top"] if e["task"] == 11]
assert top and top[0]["dur"] == 600 * MS and not top[0].get("unfinished"), d["top"]'

check "a window with the long poll's start only: fetched" tl s 5 300 500 start
check "a window with the start only: true end, not unfinished" jcheck start '
its = [it for it in items("lp") if it[4] == 11]
assert len(its) == 1 and its[0][1] == 5 * MS and its[0][2] == 600 * MS, its
top = [e for e in d["top"] if e["task"] == 11]
assert top and not top[0].get("unfinished") and top[0]["dur"] == 600 * MS, d["top"]'

check "a window with the long poll's end only (its start in the first segment): fetched" tl s 300 650 500 end
check "a window with the end only: true start, from the segment before" jcheck end '
its = [it for it in items("lp") if it[4] == 11]
assert len(its) == 1 and its[0][1] == -290 * MS and its[0][2] == 600 * MS, its
assert loc(its[0][3]).endswith(" long_poll"), loc(its[0][3])'

check "the whole store: fetched" tl s - - 200 whole
check "the whole store is in buckets, and a column inside the long poll counts it" jcheck whole '
assert d["mode"] == "buckets", d["mode"]
col = (d["to"] - d["from"]) / d["width"] * d["bucket_px"]
px = int((1300 * MS - d["from"]) * d["width"] / (d["to"] - d["from"]))
px -= px % d["bucket_px"]
b = [x for x in d["lanes"][lane("lp")]["buckets"] if x[0] == px]
assert b, (px, d["lanes"][lane("lp")]["buckets"][:5])
_, busy, count, mx, l, carried = b[0]
assert count + carried >= 1, b
assert mx == 600 * MS and d["locs"][l].endswith(" long_poll"), b
assert abs(busy - col) <= d["bucket_px"], (busy, col)'

check "a window of the busy worker only: fetched" tl s 720 730 500 busy
check "the same lanes, in the same order, with their names, at every zoom" python3 - "$T" <<'PY'
import json, sys
want = [(7171, "main"), (7172, "lp"), (7173, "gap"), (7174, "busy")]
for n in ("inside", "start", "end", "whole", "busy"):
    d = json.load(open(sys.argv[1] + "/" + n + ".json"))
    got = [(l["tid"], l["name"]) for l in d["lanes"]]
    assert got == want, (n, got)
PY
check "the long poll's location has one name in every answer" python3 - "$T" <<'PY'
import json, sys
names = set()
for n in ("inside", "start", "end", "whole"):
    d = json.load(open(sys.argv[1] + "/" + n + ".json"))
    names |= {x for x in d["locs"] if x.endswith("long_poll")}
assert names == {"src/long.c:3 long_poll"}, names
PY

# ---- a corrupt block between a poll's start and its end ----------------------
cp -r "$STORE" "$T/bad"
SEG=$(sqlite3 "$T/bad/index.sqlite" "select path from segments where id = 2")
OFF=$(sqlite3 "$T/bad/index.sqlite" "select offset from blocks where kind = 2 and tid = 7173
                                     order by t_first limit 1 offset 1")
check "the block to corrupt is found" test -n "$OFF"
printf 'ZZZZ' | dd of="$T/bad/$SEG" bs=1 seek=$((OFF + 60)) conv=notrunc 2>/dev/null
check "serve starts on the corrupted store" serve "$T/bad" b
check "the corrupted store's timeline (before the busy worker): fetched" tl b 0 715 500 bad
check "the corrupt block is reported in the answer, on its lane" jcheck bad '
assert d["skipped_blocks"] == 1, d["skipped_blocks"]
assert [g[0] for g in d["gaps"]] == [lane("gap")], d["gaps"]
assert d["broken"] >= 1, d["broken"]'
check "no phantom poll across the corrupt block in the timeline" jcheck bad '
assert d["mode"] == "detail", d["mode"]
its = items("gap")
assert all(it[2] < 100 * MS for it in its), its
assert any(it[4] == 21 for it in its), its'
check "no phantom poll across the corrupt block in d9 top-polls" lacks '^[0-9]+ +[0-9.]+ms .* 20 +src/gap' \
    "$BIN/d9" --store "$T/bad" top-polls --limit 50
check "d9 top-polls still lists the long poll" sh -c \
    "'$BIN/d9' --store '$T/bad' top-polls --limit 3 2>/dev/null | grep -q '600.00ms.* long_poll'"
check "no phantom poll across the corrupt block in d9 sql's polls" sh -c "
    n=\$('$BIN/d9' --store '$T/bad' sql --format csv 'select count(*) from polls where tid = 7173 and dur_ns > 100000000' 2>/dev/null | tail -n 1 | tr -d '\r');
    [ \"\$n\" = 0 ] || { echo \"\$n phantom polls\"; exit 1; }"
# json_long_is STORE N: the JSON export of STORE has N poll slices of the
# gap thread (tid 7173) longer than 100 ms
json_long_is() {
    "$BIN/d9" --store "$1" export --format json -o "$T/exp.json" 2>/dev/null || return 1
    python3 - "$T/exp.json" "$2" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
n = sum(1 for e in ev if e.get('ph') == 'X' and e.get('tid') == 7173 and
        e.get('cat') != 'park' and e.get('dur', 0) > 100000)
assert n == int(sys.argv[2]), '%d poll slices over 100 ms' % n
PY
}
check "no phantom poll across the corrupt block in the JSON export" json_long_is "$T/bad" 0
check "the JSON export of the intact store has the real 500 ms poll (the check above can fail)" \
    json_long_is "$STORE" 1
check "d9 sql's polls on the intact store has the real 500 ms poll (the check above can fail)" sh -c "
    n=\$('$BIN/d9' --store '$STORE' sql --format csv 'select count(*) from polls where tid = 7173 and dur_ns > 100000000' | tail -n 1 | tr -d '\r');
    [ \"\$n\" = 1 ] || { echo \"\$n\"; exit 1; }"

# ---- the page ----------------------------------------------------------------
CHROME=$(command -v chromium-headless-shell || command -v chromium || true)
check "headless Chromium is installed" test -n "$CHROME"
# page NAME QUERY OUT: the page of server NAME, drawn, into $T/OUT.html
page() {
    rm -rf "$T/chrome-profile"
    timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run \
        --user-data-dir="$T/chrome-profile" --window-size=1400,900 --hide-scrollbars \
        --virtual-time-budget=10000 --dump-dom "$(cat "$T/$1.url")$2" >"$T/$3.html" 2>>"$T/chrome.err" &&
        grep -q 'data-state="ready"' "$T/$3.html"
}
drawn() {
    python3 - "$T/$1.html" "$2" <<'PY'
import html, json, re, sys
s = open(sys.argv[1]).read()
m = re.search(r'<pre id="drawn">(.*?)</pre>', s, re.S)
d = json.loads(html.unescape(m.group(1)))
n = re.search(r'<div id="notice"[^>]*>(.*?)</div>', s, re.S)
notice = html.unescape(n.group(1)) if n else ""
exec(sys.argv[2])
PY
}
check "the page draws a window inside the long poll" page s "?pid=7171&from=$((T0 + 300 * MS))&to=$((T0 + 400 * MS))" pinside
check "the page: the long poll is drawn whole on the lp lane, named, every lane there" drawn pinside '
lp = [p for p in d["long_polls"] if p["name"].endswith(" long_poll")]
assert lp and lp[0]["dur"] == 600e6 and lp[0]["tid"] == 7172 and lp[0]["lane"] == "lp", d["long_polls"]
assert d["lane_names"] == ["main 7171", "lp 7172", "gap 7173", "busy 7174"], d["lane_names"]'
check "the page on the corrupted store" page b "?pid=7171" pbad
check "the page says that a block could not be read" drawn pbad '
assert "could not be read" in notice, notice
assert d.get("gaps_drawn", 0) >= 1, d'
cp -r "$STORE" "$T/trunc"
truncate -s 1000 "$T/trunc/$SEG"
check "serve starts on a store with a truncated segment" serve "$T/trunc" t
check "the page on a truncated segment" page t "?pid=7171" ptrunc
check "the page says that the segment's records are missing" drawn ptrunc '
assert "could not be" in notice, notice'
cp -r "$STORE" "$T/empty"
sqlite3 "$T/empty/index.sqlite" "delete from blocks; delete from segments; delete from threads; delete from runtimes; delete from processes"
check "serve starts on a store without processes" serve "$T/empty" e
check "the page on a store without processes" page e "" pempty
check "the page says the store has no processes" drawn pempty '
assert "no processes" in notice, notice'
d9_finish serve-window
