#!/bin/sh
# Start order does not matter: regions of processes started before the
# collector (still running, or already exited) are adopted by scanning the
# shm dir, and their records are drained from where they are.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

# running before the collector starts (events fit in the ring: 2 x 5000 x 40 B)
workload early --threads 2 --events 5000 --exit hang
# finished cleanly before the collector starts: only its region file is left
# (DIAL9_COLLECTOR=none: with no channel to ask, the agent leaves its region
# for a collector that scans later)
DIAL9_COLLECTOR=none
workload gone --threads 3 --events 2000 --exit clean
DIAL9_COLLECTOR=$EP
check "both workloads committed their events" wait_for 30 sh -c "test -s '$T/early.done' && test -s '$T/gone.done'"
G=$(wl_pid gone)
wait "$G" 2>/dev/null
E=$(wl_pid early)
check "two regions wait in the shm dir" eq "$(ls "$SHM" | wc -l)" 2

check "collector starts" start_collector
check "flush succeeds" flush
check "the running process was adopted" sh -c "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc\.$E\.state=alive'"
check "its events are all stored" eq "$(seg wl_unique "$E")" "$(wl_committed early)"
check "the exited process is finished as exited" eq "$(sql "select count(*) from processes where pid=$G and state='exited'")" 1
check "its events are all stored" eq "$(seg wl_unique "$G")" "$(wl_committed gone)"
check "its region is removed" sh -c "ls '$SHM' >'$T/.neg24' && ! grep -q '\.$G\.' '$T/.neg24'"
kill -9 "$E"
check "the adopted process's death is noticed" wait_for 20 no_regions_left
check "SIGTERM exits 0" stop_collector
d9_finish collector-adopt
