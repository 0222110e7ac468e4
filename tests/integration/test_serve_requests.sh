#!/bin/sh
# test_serve_requests.sh — what `d9 serve` reads for a request, from its
# request log (D9_SERVE_LOG=1: one line per request, with the records its
# scans read), on tool_store_big (w3: 560 000 back-to-back polls that never
# park, from 0 s to 2.8 s):
#   - a window a little after the one before (a zoom in, a pan right) does
#     not look back over the worker's polls again: it starts from the state
#     the first window found (collector/serve/serve_edge.h) and reads the
#     records between the two starts only, and its answer is byte for byte
#     the answer of a server that looked back afresh;
#   - a request whose client goes away while its scan runs is cancelled
#     there (D9_TEST_SERVE_SCAN_HOLD=1 holds the scan at its first block
#     until the client has gone): its log line says "gone, cancelled" with
#     no record read, where the same request answered reads the window's;
#     but its look-back (before the scan) runs to its end, and the next
#     window 2 ms later starts from it.
# No timing: every wait re-evaluates its condition, within a bound.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
STORE=$T/store
check "the store is written" "$TBIN/tool_store_big" "$STORE"

# serve NAME [ENV=V...]: a server on the store with the request log; its URL in $T/NAME.url
serve() {
    _n=$1; shift
    env D9_SERVE_LOG=1 "$@" "$BIN/d9" --store "$STORE" serve --listen 127.0.0.1:0 \
        >"$T/$_n.out" 2>"$T/$_n.err" &
    at_exit kill "$!"
    wait_for 10 sh -c "grep -q '^d9 serve: http://127.0.0.1:' '$T/$_n.out'" &&
        sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/$_n.out" >"$T/$_n.url"
}
# get NAME QUERY OUT: GET api/QUERY of server NAME into $T/OUT.json
get() {
    python3 - "$(cat "$T/$1.url")" "$2" "$T/$3.json" <<'PY'
import sys, urllib.request
base, q, out = sys.argv[1:]
open(out, "wb").write(urllib.request.urlopen(base + "api/" + q, timeout=60).read())
PY
}
# records NAME FROM: the records read by server NAME's answered timeline of the window at FROM
records() {
    sed -n "s|^d9 serve: request /api/timeline pid=7272 from=$2 .*: 200, .*ran [0-9.]* ms, \([0-9]*\) records read\$|\1|p" \
        "$T/$1.err" | tail -n 1
}
A=2000000000            # 1.0 s after the store's start: 200 000 of w3's polls before it
B=2002000000            # 2 ms later
W=1000000               # 1 ms windows
check "server s starts" serve s
check "server f starts (a fresh one: nothing kept)" serve f
check "s: the window at 1.0 s" get s "timeline?pid=7272&from=$A&to=$((A + W))&width=400" a
check "s: then the window 2 ms later" get s "timeline?pid=7272&from=$B&to=$((B + W))&width=400" b_kept
check "f: the window 2 ms later, first" get f "timeline?pid=7272&from=$B&to=$((B + W))&width=400" b_fresh
check "the later window is a detail with w3's polls, whole at the edges, not partial" python3 - "$T/b_kept.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "detail" and d["polls"] > 100, (d["mode"], d.get("polls"))
assert not d.get("edge_partial"), d.get("edge_partial")
PY
check "its answer is the fresh server's, byte for byte" cmp "$T/b_kept.json" "$T/b_fresh.json"
# read_more NAME FROM MIN: server NAME's answered timeline at FROM read more than MIN records
read_more() {
    _r=$(records "$1" "$2")
    echo "records: ${_r:-none}"
    [ -n "$_r" ] && [ "$_r" -gt "$3" ]
}
check "the fresh server looked back over w3's polls (> 100 000 records)" read_more f $B 100000
KEPT=$(records s $B)
FRESH=$(records f $B)
echo "# records read for the later window: $KEPT after the one before, $FRESH afresh"
check "after the window before, it read the 2 ms between the starts, not the look-back again (< 1/10)" \
    test -n "$KEPT" -a -n "$FRESH" -a "$((${KEPT:-0} * 10))" -lt "${FRESH:-0}"

# ---- a request whose client leaves while its scan runs ---------------------------------
check "server h starts (scans held until their client leaves)" serve h D9_TEST_SERVE_SCAN_HOLD=1
# leave NAME QUERY: a client asks server NAME for api/QUERY, waits for its log's "started", and leaves
leave() {
    python3 - "$(cat "$T/$1.url")" "$T/$1.err" "$2" <<'PY'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
q = sys.argv[3]
s = socket.create_connection((u.hostname, u.port), timeout=30)
s.sendall(b"GET /api/%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (q.encode(), u.hostname.encode(), u.port))
want = "request /api/" + q.split("?")[0] + " " + q.split("?")[1].replace("&", " ") + ": started"
end = time.monotonic() + 30
while want not in open(sys.argv[2]).read():
    assert time.monotonic() < end, "the request never started: " + want
    time.sleep(0.05)
s.close()
PY
}
WHOLE="timeline?pid=7272&from=1000000000&to=1500000000&width=400"
check "a client asks for 0.5 s of w3's polls (no look-back), sees its request start, and leaves" leave h "$WHOLE"
check "its log line says it was cancelled, with no record read" wait_for 30 \
    grep -q "request /api/timeline pid=7272 from=1000000000 to=1500000000 width=400: gone, cancelled, .*, 0 records read" "$T/h.err"
check "the same request answered (server s) reads records" get s "$WHOLE" whole
check "... and its log line says so" read_more s 1000000000 0
check "a client asks for the window at 1.0 s (a look-back over w3), and leaves" \
    leave h "timeline?pid=7272&from=$A&to=$((A + W))&width=400"
check "its look-back ran to its end all the same (not cancelled: kept for the next step), its scan did not" wait_for 30 \
    grep -q "request /api/timeline pid=7272 from=$A to=$((A + W)) width=400: gone, cancelled, .*, [1-9][0-9][0-9][0-9][0-9][0-9] records read" "$T/h.err"
check "h: then the window 2 ms later" get h "timeline?pid=7272&from=$B&to=$((B + W))&width=400" b_after_gone
check "its answer is the fresh server's, byte for byte" cmp "$T/b_after_gone.json" "$T/b_fresh.json"
AFTER=$(records h $B)
echo "# records read for the later window after a cancelled one: $AFTER"
check "it started from the cancelled request's look-back (< 1/10 of the records afresh)" \
    test -n "$AFTER" -a -n "$FRESH" -a "$((${AFTER:-0} * 10))" -lt "${FRESH:-0}"
d9_finish serve-requests
