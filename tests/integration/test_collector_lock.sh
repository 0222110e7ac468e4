#!/bin/sh
# One store, one collector: d9collectd holds the store lock (<store>/.lock)
# for its whole run. A second collector on the same store exits 1 with one
# clear error line and touches nothing (no recovery of the first one's temp
# segment); once the first is gone the lock is free again, even after a
# SIGKILL.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

check "collector starts" start_collector
FIRST=$COLPID
workload w --threads 1 --events 1000 --exit hang
check "the workload committed its events" wait_for 30 wl_done w
# (no flush: that seals; the drain alone writes the open temp segment)
check "the first collector has a temp segment open" \
    wait_for 20 sh -c "ls -a '$STORE' | grep -q '^\.tmp\.'"
TMPSEG=$(ls -a "$STORE" | grep '^\.tmp\.' | head -n 1)

"$BIN/d9collectd" --store "$STORE" --shm-dir "$SHM" --endpoint "ipc://$T/c2.sock" \
    --scan-ms 100 >"$T/second.out" 2>"$T/second.err" &
SECOND=$!
at_exit kill -9 "$SECOND"
# bounded: a collector that wrongly keeps running is killed, not waited for
wait_for 20 sh -c "! kill -0 $SECOND 2>/dev/null" || kill -9 "$SECOND" 2>/dev/null
wait "$SECOND"
RC=$?
check "a second collector on the same store exits 1" eq "$RC" 1
check "with one error line" eq "$(wc -l <"$T/second.err")" 1
check "that names the store and the other collector" \
    grep -q "store .*store is in use by another collector" "$T/second.err"
check "and prints nothing on stdout" test ! -s "$T/second.out"
check "it left the first collector's temp segment alone" test -f "$STORE/$TMPSEG"
check "the first collector still answers" sh -c "'$TBIN/tool_ctl' '$EP' status >/dev/null"
check "and still drains" flush

kill -9 "$(wl_pid w)"
check "SIGTERM exits 0" stop_collector
check "after a clean stop a new collector can take the store" start_collector
kill -9 "$COLPID"
wait "$COLPID" 2>/dev/null
check "after a SIGKILL the lock is free again too" start_collector
check "SIGTERM exits 0" stop_collector
d9_finish collector-lock
