#!/bin/sh
# test_rel_restart_stamp.sh — an impossible timestamp in the first records a
# restarted collector reads takes the time of the last record the store
# holds, not the process's start: time never goes back in a thread's
# sequence across a collector restart (issue #30: a ~48 s step back after a
# collector crash).
#
# prog_rel_stamp writes a record every millisecond; it pauses until the
# collector has read everything, the collector is killed (kill -9), the
# program writes one record stamped a minute in the future first and goes
# on, and a collector restarts on the same store. tool_rel_seqcheck then
# reads the store record by record: no duplicate, no gap, no step back.
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
d9_setup
rel_init
segments() {
    n=$(sqlite3 "file:$STORE/index.sqlite?mode=ro" "SELECT count(*) FROM segments" 2>/dev/null)
    [ -n "$n" ] && [ "$n" -ge "$1" ]
}

check "collector starts" rel_start_collector --segment-seconds 1
rel_bg "$TBIN/prog_rel_stamp" --dir "$SHM" --pause-file "$T/pause" --drained-file "$T/drained" \
    --bad-file "$T/bad" --ready-file "$T/ready" --stop-file "$T/stop"
ppid=$BGPID
check "the program's records reach a sealed segment" wait_for 30 segments 1
touch "$T/pause"
check "the collector reads everything the program wrote" wait_for 30 test -e "$T/drained"
kill -9 "$CPID"
wait "$CPID" 2>/dev/null
touch "$T/bad"
check "the program writes a record stamped in the future" wait_for 10 test -e "$T/ready"
check "a collector restarts on the same store" rel_start_collector --segment-seconds 1
check "the restarted collector gives the bad stamp the time before it" \
    wait_for 30 grep -q "given the time of the record before them" "$T/col.log"
touch "$T/stop"
wait "$ppid"
prc=$?
check "the program exits normally (exit $prc)" test "$prc" -eq 0
check "the collector finishes the program" wait_for 30 rel_regions_gone
rel_stop "$CPID"
"$TBIN/tool_rel_seqcheck" "$STORE" >"$T/seq" 2>&1
check "exactly once, no step back in time: $(tail -n 1 "$T/seq")" \
    sh -c "! grep '^FAIL' '$T/seq' && grep -q ' backsteps=0 ' '$T/seq' && grep -q ' dups=0 ' '$T/seq'"
grep '^FAIL' "$T/seq" | head -n 4
d9_finish rel-restart-stamp
