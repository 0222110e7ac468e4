#!/bin/sh
# A traced process killed with SIGKILL (or crashing with abort) loses nothing
# it committed: its rings are drained after its death, its exit is recorded
# as a crash, its segment sealed and its region removed.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

check "collector starts" start_collector
workload k --threads 4 --events 30000 --exit hang
check "the workload committed its events" wait_for 30 wl_done k
K=$(wl_pid k)
kill -9 "$K"
check "the collector notices the death and removes the region" wait_for 20 no_regions_left
check "flush succeeds" flush
check "every event committed before the kill is stored" eq "$(seg wl_unique "$K")" "$(wl_committed k)"
check "nothing is stored twice" eq "$(seg wl_dups "$K")" 0
check "the segment ends with a crash EXIT block" eq "$(seg exit_crashed "$K")" 1
check "the index says crashed" eq "$(sql "select count(*) from processes where pid=$K and state='crashed'")" 1
check "threads are closed in the index" eq "$(sql "select count(*) from threads t join processes p on p.id=t.process_id where p.pid=$K and t.ended=1")" 4

workload a --threads 2 --events 10000 --exit abort
check "the aborting workload committed its events" wait_for 30 wl_done a
A=$(wl_pid a)
check "the collector finishes the aborted process" wait_for 20 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$A\")\" = crashed ]"
check "every event of the aborted process is stored" eq "$(seg wl_unique "$A")" "$(wl_committed a)"
# a crashed process whose parent never reaps it stays a zombie: still gone
sh -c "'$TBIN/prog_workload' --threads 1 --events 1000 --exit abort --done-file '$T/z.done' \
       >/dev/null 2>&1 & echo \$! >'$T/z.pid'; exec sleep 600" &
ZPARENT=$!
at_exit kill -9 $ZPARENT
check "the orphaned crash committed its events" wait_for 30 test -s "$T/z.done"
Z=$(cat "$T/z.pid")
check "the unreaped process is a zombie" wait_for 10 sh -c "grep -q '^State:.*Z' /proc/$Z/status"
check "the zombie is finished as crashed" wait_for 20 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$Z\")\" = crashed ]"
check "SIGTERM exits 0" stop_collector
d9_finish collector-crash
