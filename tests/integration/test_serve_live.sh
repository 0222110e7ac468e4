#!/bin/sh
# test_serve_live.sh — `d9 serve` on the store of a running collector, as the
# page's follow mode reads it (every second: /api/processes, then the newest
# window of the timeline): one server, started while a traced program is
# young, sees the program's newer data after each flush (last_ns and records
# grow, the newest window holds its polls), then sees it exit.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
start_collector
# polls with a 1 ms pause every 10 events until $T/stop exists (at most
# 600 s), so the program is alive for the checks however slow the machine
workload live --threads 1 --events 6000000 --polls --batch 10 --pace-us 1000 --exit clean \
    --stop-file "$T/stop"
WPID=$(wl_pid live)

check "serve prints its URL" d9_serve serve "$BIN/d9" --store "$STORE"
U=$(cat "$T/serve.url")

# proc FIELD: FIELD of the workload's row in /api/processes ("" when absent)
proc() {
    python3 - "$U" "$WPID" "$1" <<'PY'
import sys, json, urllib.request
u, pid, field = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(urllib.request.urlopen(u + 'api/processes', timeout=20))
row = [p for p in d['processes'] if p['pid'] == pid]
print(str(d['live']).lower() if field == 'live' else (row[0][field] if row else ''))
PY
}
listed() { flush; [ -n "$(proc records)" ] && [ "$(proc records)" -gt 0 ]; }
check "the running program appears once the collector has sealed some of it" wait_for 20 listed
check "the store is live" test "$(proc live)" = true
check "the program is listed as alive" test "$(proc state)" = alive
L1=$(proc last_ns); R1=$(proc records)
sleep 1.5
grew() {
    flush
    L2=$(proc last_ns); R2=$(proc records)
    [ "$L2" -gt "$L1" ] && [ "$R2" -gt "$R1" ]
}
check "the same server sees newer data after a flush (last_ns and records grow)" wait_for 20 grew
newest() {
    python3 - "$U" "$WPID" <<'PY'
import sys, json, urllib.request
u, pid = sys.argv[1], int(sys.argv[2])
p = [p for p in json.load(urllib.request.urlopen(u + 'api/processes', timeout=20))['processes'] if p['pid'] == pid][0]
to = p['last_ns']; frm = max(p['first_ns'], to - 1000000000)
d = json.load(urllib.request.urlopen(u + 'api/timeline?pid=%d&width=800&from=%d&to=%d' % (pid, frm, to), timeout=20))
assert d['polls'] > 0, d['polls']
PY
}
check "the newest second of the timeline (follow's window) holds polls" newest
touch "$T/stop"
exited() { flush; [ "$(proc state)" = exited ]; }
check "the program's exit is seen by the same server" wait_for 30 exited
check "the server is still running" kill -0 "$SPID"
d9_finish serve-live
