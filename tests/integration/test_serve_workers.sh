#!/bin/sh
# test_serve_workers.sh — d9 serve's /api/workers answered from the rollups
# plus the window's edges (collector/serve/serve_workers.h), on
# tool_store_aggs's store (3 segments, 2 workers, nested polls, long polls
# across bucket edges and rotations): for the whole store and for windows
# whose edges cut polls, buckets and rotations, its polls, parks, waits,
# wait sum and max, parked and busy time equal `d9 sched --totals --raw`'s
# (every record of the window) exactly; a window of few records also
# carries the fields the rollups do not hold (tid, unparks, wait p50/p99,
# cpu, span: plain d9 sched's), flagged "scanned".
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_aggs" "$S" >"$T/known.txt" || { echo "tool_store_aggs failed"; exit 1; }
T0=$(awk '$1 == "t0" { print $2 }' "$T/known.txt")
LMID=$(awk '$1 == "long" { print $2, $3 }' "$T/known.txt" | { read -r a b; echo $(( (a + b) / 2 )); })
PID=6161

"$D9" --store "$S" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SPID=$!
at_exit kill "$SPID"
check "serve prints its URL" wait_for 10 sh -c "grep -q '^d9 serve: http://127.0.0.1:' '$T/serve.out'"
U=$(sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/serve.out")
get() { python3 - "$U" "$1" "$2" <<'PY'
import sys, urllib.request
open(sys.argv[3], 'wb').write(urllib.request.urlopen(sys.argv[1].rstrip('/') + sys.argv[2], timeout=30).read())
PY
}
# same_as_raw NAME [FROM TO]: /api/workers' rollup facts = d9 sched --totals --raw
same_as_raw() {
    if [ $# -gt 1 ]; then
        q="&from=$2&to=$3"
        set -- --from "$2" --to "$3"
    else
        q=""
        set --
    fi
    get "/api/workers?pid=$PID$q" "$T/api.json" &&
        "$D9" --store "$S" sched --totals --raw --format jsonl "$@" >"$T/raw.jsonl" 2>"$T/raw.err" &&
        "$D9" --store "$S" sched --format jsonl "$@" >"$T/plain.jsonl" 2>/dev/null || return 1
    python3 - "$T/api.json" "$T/raw.jsonl" "$T/plain.jsonl" <<'PY'
import json, sys
api = json.load(open(sys.argv[1]))
raw = {(r["runtime"], r["worker"]): r for r in map(json.loads, open(sys.argv[2]))}
plain = {(r["runtime"], r["worker"]): r for r in map(json.loads, open(sys.argv[3]))}
got = {(w["runtime"], w["worker"]): w for w in api["workers"]}
keys = ("polls", "parks", "waits", "sched_wait_sum_ns", "sched_wait_max_ns", "parked_ns", "busy_ns")
if not raw or set(got) != set(raw):
    sys.exit("workers: api %s, raw %s" % (sorted(got), sorted(raw)))
for k, r in raw.items():
    for f in keys:
        if got[k][f] != r[f]:
            sys.exit("%s %s: api %s, sched --totals --raw %s" % (k, f, got[k][f], r[f]))
    # the fields the rollups lack: plain d9 sched's when scanned, null when not
    for f in ("tid", "unparks", "sched_wait_p50_ns", "sched_wait_p99_ns", "cpu_ns", "span_ns"):
        want = plain[k][f] if api["scanned"] and k in plain else None
        if api["scanned"] and got[k][f] != want:
            sys.exit("%s %s: api %s, d9 sched %s" % (k, f, got[k][f], want))
        if not api["scanned"] and got[k][f] is not None:
            sys.exit("%s %s: %s, want null (not scanned)" % (k, f, got[k][f]))
PY
}
scanned() { # scanned [FROM TO]: the answer is flagged scanned
    get "/api/workers?pid=$PID${1:+&from=$1&to=$2}" "$T/api.json" || return 1
    python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["scanned"] is True else 1)' "$T/api.json"
}
check "whole store: /api/workers = sched --totals --raw" same_as_raw whole
check "edges inside polls: /api/workers = sched --totals --raw" same_as_raw edges $((T0 + 300000017)) "$LMID"
check "edges mid-bucket: /api/workers = sched --totals --raw" same_as_raw mid $((T0 + 1250000000)) $((T0 + 4750000000))
check "inside one bucket: /api/workers = sched --totals --raw" same_as_raw one $((T0 + 2100000000)) $((T0 + 2900000000))
check "across both rotations: /api/workers = sched --totals --raw" same_as_raw rot $((T0 + 500000001)) $((T0 + 8500000000 - 1))
check "a small window is scanned (tid, unparks, p50/p99, cpu, span)" scanned $((T0 + 2100000000)) $((T0 + 2900000000))
check "no pid is a 400" sh -c "! python3 -c 'import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + \"api/workers\", timeout=10)' '$U' 2>/dev/null"

d9_finish serve_workers
