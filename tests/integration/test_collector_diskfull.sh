#!/bin/sh
# Disk full: the collector keeps running, counts the failed writes, leaves
# unwritten records in the rings (the agents count their own drops when the
# rings fill), and resumes when space returns; the index stays intact and
# nothing it took from a ring is lost. Needs root (mounts a small tmpfs).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
SMALL=$T/small
mkdir -p "$SMALL"
if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=1m,mode=0755 d9test "$SMALL" 2>/dev/null; then
    echo "skipped: needs root and tmpfs mounts"
    d9_finish collector-diskfull
    exit $?
fi
at_exit umount -l "$SMALL"
STORE=$SMALL/store

check "collector starts on a 1 MiB file system" start_collector
# ~8 MB of records: far more than fits
workload full --threads 4 --events 200000 --pace-us 500 --batch 250 --exit hang
check "the collector reports failed writes" wait_for 60 sh -c \
    "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^write_errors=//p')\" -ge 1 ]"
check "the failure is logged once with the cause" grep -q "No space left on device" "$T/col.log"
check "the workload finishes (dropping what does not fit)" wait_for 60 wl_done full
check "the collector still runs and answers" "$TBIN/tool_ctl" "$EP" status
check "a flush while the disk is full reports the failure" sh -c "! '$TBIN/tool_ctl' '$EP' flush"
# status while the store cannot be written: live ring counters, not the last pass's
check "status says writes are failing" eq "$(st writes_failing)" 1
check "d9 status says so too" sh -c "'$BIN/d9' --endpoint '$EP' status | grep -q 'WRITES *FAILING'"
check "status lost counts every drop the agent counted (read live from the rings)" \
    eq "$(st lost)" "$(wl_field full lost)"
check "status lag shows the data waiting in the rings" \
    ge "$(st "proc.$(wl_pid full).lag_bytes")" 65536
mount -o remount,size=64m "$SMALL"
check "once space returns a flush succeeds" wait_for 30 flush
F=$(wl_pid full)
check "every event the agent committed is stored" eq "$(seg wl_unique "$F")" "$(wl_committed full)"
check "none is stored twice" eq "$(seg wl_dups "$F")" 0
check "the rings overflowed meanwhile (agent-side drops)" ge "$(wl_field full lost)" 1
check "the collector dropped nothing it had taken" eq "$(st dropped_records)" 0
check "the index is intact" sh -c "[ \"\$(sqlite3 '$STORE/index.sqlite' 'pragma integrity_check')\" = ok ]"
kill -9 "$F"
check "the process end is recorded" wait_for 20 no_regions_left
check "SIGTERM exits 0" stop_collector
d9_finish collector-diskfull
