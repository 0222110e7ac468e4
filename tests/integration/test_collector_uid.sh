#!/bin/sh
# Regions are adopted only when the file's owner is the owner of the traced
# process: a root process's region chowned to another user is rejected (and
# never touched), while an unprivileged user's own region is adopted.
# Needs root (chown, setpriv); without it there is nothing to check.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
NOBODY=65534

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "skipped: needs root and setpriv"
    d9_finish collector-uid
    exit $?
fi
chmod 0755 "$T"
chmod 1777 "$SHM"
mkdir -m 0777 "$T/nobody"

workload r --threads 1 --events 100 --exit hang
check "the root workload is set up" wait_for 20 wl_done r
R=$(wl_pid r)
RFILE=$(ls "$SHM" | grep "^d9\.0\.$R\.")
chown "$NOBODY" "$SHM/$RFILE"
check "collector starts" start_collector
check "the mis-owned region is rejected and counted" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^rejected_regions=1'"
check "the rejection is logged with the path" grep -q "rejected region $SHM/$RFILE" "$T/col.log"
check "the rejected process is not adopted" eq "$(sql "select count(*) from processes where pid=$R")" 0
check "the rejected region is left alone" test -e "$SHM/$RFILE"

setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
    "$TBIN/prog_workload" --threads 2 --events 3000 --exit hang --done-file "$T/nobody/n.done" \
    >"$T/n.out" 2>&1 &
N=$!
at_exit kill -9 $N
check "the unprivileged workload is set up" wait_for 20 test -s "$T/nobody/n.done"
owner_of_region() { stat -c %u "$SHM"/d9."$NOBODY"."$1".*; }
check "its region is owned by its user" eq "$(owner_of_region $N)" $NOBODY
check "flush succeeds" flush
committed=$(( $(tr ' ' '\n' <"$T/nobody/n.done" | sed -n 's/^emitted=//p') - $(tr ' ' '\n' <"$T/nobody/n.done" | sed -n 's/^lost=//p') ))
check "the unprivileged user's region is adopted and drained" eq "$(seg wl_unique $N)" "$committed"
check "the index records its uid" eq "$(sql "select uid from processes where pid=$N")" $NOBODY
check "still only one rejection" eq "$(st rejected_regions)" 1
kill -9 $N
check "its end is recorded" wait_for 20 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$N\")\" = crashed ]"
check "SIGTERM exits 0" stop_collector
d9_finish collector-uid
