#!/bin/sh
# Killing the collector with SIGKILL in the middle of a run and starting it
# again loses nothing that was committed: the temp segment it was writing is
# salvaged at start-up and draining resumes from the ring tails.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

check "collector starts" start_collector --segment-seconds 1
# several seconds of steady traffic: 2 threads x 60000 events, <= 20 events per ms each
workload w --threads 2 --events 60000 --pace-us 1000 --batch 20 --exit hang
W=$(wl_pid w)
check "the collector is writing segments" wait_for 30 sh -c "ls '$STORE' | grep -q 'd9seg'"
check "a temp segment is being written" wait_for 30 sh -c "ls -a '$STORE' | grep -q '^\.tmp\.'"
# kill -9 while a temp segment with data is open: a rotation between the
# look and the kill can seal it, or leave a new one with no data block yet
# (start-up removes that one: nothing to salvage), so look again after the
# kill and retry (bounded)
tmp_with_data() {
    for _f in "$STORE"/.tmp.*; do
        [ -f "$_f" ] && [ "$(stat -c %s "$_f")" -gt 8192 ] && return 0
    done
    return 1
}
wait_for 30 tmp_with_data
tries=0
while :; do
    kill -9 "$COLPID"
    wait "$COLPID" 2>/dev/null
    tries=$((tries + 1))
    tmp_with_data && break
    [ $tries -ge 5 ] && break
    start_collector --segment-seconds 1
    wait_for 30 tmp_with_data
done
check "a temp segment with data was left by the kill ($tries tries)" tmp_with_data
check "the workload keeps running while the collector is down" kill -0 "$W"
check "the collector restarts" start_collector --segment-seconds 1
check "the crashed collector's temp segment is salvaged" grep -q "salvaged" "$T/col.log"
check "the workload finishes" wait_for 60 wl_done w
check "flush succeeds" flush
check "every committed event is stored" eq "$(seg wl_unique "$W")" "$(wl_committed w)"
echo "duplicates after the restart: $(seg wl_dups "$W"); custom records $(seg custom "$W"), wl_seq events $(seg wl_events "$W")"
check "no segment is unreadable" eq "$(seg bad_segments)" 0
check "sealed files and index rows agree" eq "$(sql 'select count(*) from segments')" "$(ls "$STORE" | grep -c 'd9seg$')"
kill -9 "$W"
check "the process end is recorded" wait_for 20 no_regions_left
check "SIGTERM exits 0" stop_collector

# an index that lost its rows: sealed files are re-indexed at start-up
nseg=$(ls "$STORE" | grep -c 'd9seg$')
rm -f "$STORE/index.sqlite" "$STORE/index.sqlite-wal" "$STORE/index.sqlite-shm"
check "the collector starts without an index" start_collector
check "every sealed file is indexed again" eq "$(sql 'select count(*) from segments')" "$nseg"
check "the re-indexed rows count what the files hold" \
    eq "$(sql 'select sum(records) from segments')" "$(seg records)"
check "SIGTERM exits 0" stop_collector
d9_finish collector-restart
