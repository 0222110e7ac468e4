#!/bin/sh
# Segments rotate by size and by age, and the store is capped: the oldest
# segments are evicted first, index rows before files.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

check "collector starts with 1 MiB segments and a 3 MiB store" start_collector \
    --segment-mb 1 --store-mb 3
# ~12 MB of records (4 x 75000 x 40 B), paced so the rings do not overflow
workload big --threads 4 --events 400000 --pace-us 500 --batch 500
check "the workload finishes" wait_for 60 wl_done big
wait "$(wl_pid big)" 2>/dev/null
check "flush succeeds" flush
nseg=$(sql 'select count(*) from segments')
check "size rotation sealed several segments" ge "$(sql 'select max(id) from segments')" 3
check "segments overshoot the size limit by one drain buffer at most" \
    eq "$(sql "select count(*) from segments where bytes > 2*1048576")" 0
check "the indexed store fits the cap" sh -c "[ \$(sqlite3 '$STORE/index.sqlite' 'select sum(bytes) from segments') -le $((3 * 1048576)) ]"
check "the oldest segments were evicted" ge "$(sql 'select min(id) from segments')" 2
check "every index row has its file and every file its row" \
    eq "$(ls "$STORE" | grep -c 'd9seg$')" "$nseg"
check "evicted files are gone from the disk" sh -c "[ \$(du -sk '$STORE' | cut -f1) -lt $((5 * 1024)) ]"
check "SIGTERM exits 0" stop_collector

rm -rf "$STORE"
check "collector starts with 1 s segments" start_collector --segment-seconds 1
workload slow --threads 1 --events 4000 --pace-us 100000 --batch 100 --exit hang
check "age rotation seals a segment while the process runs" wait_for 30 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' 'select count(*) from segments' 2>/dev/null)\" -ge 2 ]"
check "the process is still alive meanwhile" kill -0 "$(wl_pid slow)"
kill -9 "$(wl_pid slow)"
check "SIGTERM exits 0" stop_collector
d9_finish collector-rotation
