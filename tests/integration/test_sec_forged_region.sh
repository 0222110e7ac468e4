#!/bin/sh
# test_sec_forged_region.sh — a region planted after a process died, under
# its pid and start time, never rewrites the process in the index: not as
# another user's (nobody forges d9.65534.<root's pid>.<start>: the owner, the
# exit status and the records of root's row stay), not as the same user's (a
# late region of a finished process). The planted files are rejected and
# counted; the other user's is left in place, the same user's removed.
# Needs root (setpriv to nobody); without it there is nothing to check.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
NOBODY=65534

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "skipped: needs root and setpriv"
    d9_finish sec-forged-region
    exit $?
fi
chmod 0755 "$T"
chmod 1777 "$SHM"
mkdir -m 0777 "$T/nobody"

check "collector starts" start_collector
workload r --threads 1 --events 300 --exit hang
check "the root workload is set up" wait_for 20 wl_done r
R=$(wl_pid r)
RFILE=$(ls "$SHM" | grep "^d9\.0\.$R\.")
START=${RFILE##*.}
check "its region is adopted" wait_for 20 sh -c "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc\.$R\.state=alive'"
kill -9 "$R"
row() { sql "select uid || ' ' || state || ' ' || coalesce(exit_code, '-') || ' ' || records from processes where pid = $R"; }
check "root's process is finished as crashed" wait_for 20 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$R\")\" = crashed ]"
BEFORE=$(row)
SEGS=$(sql "select count(*) from segments s join processes p on p.id = s.process_id where p.pid = $R")
REJ=$(st rejected_regions)

setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
    "$TBIN/tool_badregion" forge "$T/nobody/f.ready" "$R" "$START" "$T/nobody" >"$T/forge.out" 2>&1
check "nobody plants d9.$NOBODY.$R.$START" test -s "$T/nobody/f.ready"
check "the planted region is rejected and counted" wait_for 10 sh -c \
    "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^rejected_regions=//p')\" -gt $REJ ]"
check "the rejection says why" grep -q "rejected region $SHM/d9.$NOBODY.$R.$START.*another user's" "$T/col.log"
check "flush succeeds" flush
check "root's row is unchanged (uid, state, exit code, records): $BEFORE" \
    test "$(row)" = "$BEFORE"
check "no segment was added to root's process" \
    eq "$(sql "select count(*) from segments s join processes p on p.id = s.process_id where p.pid = $R")" "$SEGS"
check "one process row for (pid, start)" eq "$(sql "select count(*) from processes where pid = $R")" 1
check "the other user's file is left in place" test -e "$SHM/d9.$NOBODY.$R.$START"

# the same user's late region of its own finished process
REJ=$(st rejected_regions)
mkdir -m 0700 "$T/root"
"$TBIN/tool_badregion" forge "$T/root/f.ready" "$R" "$START" "$T/root" >"$T/forge0.out" 2>&1
check "root plants a late d9.0.$R.$START" test -s "$T/root/f.ready"
check "the late region is rejected and counted" wait_for 10 sh -c \
    "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^rejected_regions=//p')\" -gt $REJ ]"
check "the rejection says the process has ended" grep -q "rejected region $SHM/d9.0.$R.$START.*as ended" "$T/col.log"
check "flush succeeds" flush
check "root's row is still unchanged" test "$(row)" = "$BEFORE"
check "the late region of the finished process is removed" wait_for 10 sh -c "! test -e '$SHM/d9.0.$R.$START'"
check "the collector is still alive" kill -0 "$COLPID"
check "SIGTERM exits 0" stop_collector
d9_finish sec-forged-region
