#!/bin/sh
# The collector survives hostile peers: malformed control messages, a region
# with a corrupt ring, a region truncated under it (SIGBUS), a region of
# the wrong owner.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

check "collector starts" start_collector
check "malformed control messages are sent" "$TBIN/tool_ctl" "$EP" garbage
check "the collector still answers after malformed messages" "$TBIN/tool_ctl" "$EP" status
check "malformed messages are counted" ge "$(st malformed_messages)" 6
check "a rate-limited warning names the problem" grep -q "dropped a malformed message" "$T/col.log"
check "a hello pointing outside the shm dir adopts nothing" eq "$(st processes)" 0

"$TBIN/tool_badregion" corrupt "$T/bad.ready" >"$T/bad.out" 2>&1 &
BADPID=$!
at_exit kill -9 $BADPID
check "the corrupt-ring process is set up" wait_for 10 test -s "$T/bad.ready"
check "it is adopted" wait_for 10 sh -c "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^processes=//p')\" = 1 ]"
check "the corrupt ring is quarantined and reported" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^quarantined_rings=1'"
check "the quarantined ring is flagged in the ring list" sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^ring\.$BADPID\.[0-9]*\.quarantined=1'"
check "flush succeeds" flush
check "the good ring of the same process is stored" eq "$(seg type.poll_end $BADPID)" 50
kill -9 $BADPID
check "the killed process is finished as crashed" wait_for 10 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$BADPID\")\" = crashed ]"

"$TBIN/tool_badregion" truncate "$T/trunc.ready" >"$T/trunc.out" 2>&1 &
TRPID=$!
at_exit kill -9 $TRPID
check "the truncating process is set up" wait_for 10 test -s "$T/trunc.ready"
check "the collector survives the truncation (SIGBUS)" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc\.$TRPID\.state=quarantined'"
check "the quarantine is logged" grep -q "region quarantined" "$T/col.log"
kill -9 $TRPID
check "the quarantined process is finished" wait_for 10 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$TRPID\")\" = quarantined ]"
# A few impossible stamps among 500 good ones, and drop counters no ring can
# have: the good records keep their own times (distinct, increasing), the bad
# ones are counted and take their neighbour's, the causes never exceed lost.
"$TBIN/tool_badregion" stamps "$T/stamps.ready" >"$T/stamps.out" 2>&1 &
SPID=$!
at_exit kill -9 $SPID
check "the bad-stamps process is set up and drained" wait_for 10 test -s "$T/stamps.ready"
check "flush succeeds" flush
check "its 4 bad stamps are counted in the status" \
    eq "$(st "proc.$SPID.bad_stamps")" 4
check "its impossible drop counters are counted once" eq "$(st "proc.$SPID.bad_counters")" 1
check "the collector's totals count them" ge "$(st bad_stamps)" 4
check "d9 status shows them" sh -c \
    "'$BIN/d9' --endpoint '$EP' status | grep -q ' 4 bad timestamps, 1 rings with impossible drop counters'"
kill -9 $SPID
check "the bad-stamps process is finished" wait_for 10 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$SPID\")\" = crashed ]"
"$BIN/d9" --store "$STORE" events --pid $SPID --format jsonl >"$T/stamps.jsonl" 2>"$T/stamps.err"
check "the good records keep their own distinct, increasing times; the bad take their neighbour's" \
    python3 - "$T/stamps.jsonl" "$T/stamps.ready" <<'PY'
import json, sys
t0, step, n = map(int, open(sys.argv[2]).read().split())
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
good = [r for r in recs if r["task"] < 1000000]
assert len(good) == n, (len(good), n)
assert [r["ts_ns"] for r in good] == [t0 + i * step for i in range(n)], "good stamps moved"
bad = [i for i, r in enumerate(recs) if r["task"] >= 1000000]
assert len(bad) == 4, bad
for i in bad:
    assert i > 0 and recs[i]["ts_ns"] == recs[i - 1]["ts_ns"], (i, recs[i], recs[i - 1])
PY
check "the index holds the bad stamps and no cause above the total" sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select d.bad_stamps || ' ' || (d.mismatch <= p.lost) || ' ' || (p.lost > 0) from drops d join processes p on p.id = d.process_id where p.pid = $SPID\")\" = '4 1 1' ]"
check "d9 ps shows no cause above the total" python3 -c "
import json, subprocess
out = subprocess.run(['$BIN/d9', '--store', '$STORE', 'ps', '--format', 'jsonl'],
                     capture_output=True, text=True, check=True).stdout
p = [json.loads(l) for l in out.splitlines() if json.loads(l)['pid'] == $SPID][0]
assert p['lost_mismatch'] + p['lost_too_big'] <= p['lost'] and p['lost'] > 0, p
"
check "the collector is still alive" kill -0 "$COLPID"
check "SIGTERM exits 0" stop_collector
d9_finish collector-hostile
