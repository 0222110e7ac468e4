#!/bin/sh
# Who sees what: a root collector traces a root process and one of uid
# 65534. The store is readable by root and the members of --store-group
# only (directory 2750, files 0640, the index's -wal and -shm too); on the
# control socket (0666) uid 65534 sees and flushes its own process only,
# and is told plainly when it asks about another user's; a member of the
# store group reads every process's traces. Needs root and setpriv.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
NOBODY=65534
READERS=65533       # the store group: a bare number, no /etc/group entry needed
AS_NOBODY="setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups"
AS_READER="setpriv --reuid=$NOBODY --regid=$NOBODY --groups=$READERS"

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "skipped: needs root and setpriv"
    d9_finish collector-access
    exit $?
fi
chmod 0755 "$T"
chmod 1777 "$SHM"
mkdir -m 0777 "$T/nobody"

# mode_of PATH: octal mode and group, e.g. "2750 65533"
mode_of() { stat -c '%a %g' "$1"; }
# fails_with OUT-FILE PATTERN cmd...: cmd exits 1 (an error, not a crash or
# a usage error) and says PATTERN
fails_with() {
    _out=$1 _pat=$2; shift 2
    "$@" >"$T/$_out" 2>&1
    _rc=$?
    cat "$T/$_out"
    [ $_rc -eq 1 ] && grep -q "$_pat" "$T/$_out"
}

check "collector starts with a store group" start_collector --store-group $READERS
check "the store directory is 2750, group $READERS" test "$(mode_of "$STORE")" = "2750 $READERS"
for f in index.sqlite index.sqlite-wal index.sqlite-shm .lock; do
    check "$f is 0640, group $READERS" test "$(mode_of "$STORE/$f")" = "640 $READERS"
done
check "the control socket is 0666, not executable" test "$(stat -c %a "$T/c.sock")" = 666

workload r --threads 1 --events 200 --exit hang
check "the root workload is set up" wait_for 20 wl_done r
R=$(wl_pid r)
$AS_NOBODY "$TBIN/prog_workload" --threads 1 --events 300 --exit hang \
    --done-file "$T/nobody/n.done" >"$T/n.out" 2>&1 &
N=$!
at_exit kill -9 $N
check "the uid $NOBODY workload is set up" wait_for 20 test -s "$T/nobody/n.done"
check "root sees both processes" wait_for 10 sh -c \
    "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc.$N.state=alive' &&
     '$TBIN/tool_ctl' '$EP' status | grep -q '^proc.$R.state=alive'"
check "root's view is not filtered" sh -c "'$TBIN/tool_ctl' '$EP' status | grep -qx own_only=0"

# ---- the control channel, as uid 65534 -------------------------------------------
$AS_NOBODY "$TBIN/tool_ctl" "$EP" status >"$T/n.status" 2>&1
check "uid $NOBODY gets a status" grep -qx "own_only=1" "$T/n.status"
check "it is told whose view it is" grep -qx "caller_uid=$NOBODY" "$T/n.status"
check "it sees its own process" grep -q "^proc.$N.state=alive" "$T/n.status"
check "it does not see root's process" sh -c "! grep -q '^proc.$R\.' '$T/n.status'"
check "it sees exactly one process" grep -qx "processes=1" "$T/n.status"
$AS_NOBODY "$BIN/d9" --endpoint "$EP" status >"$T/n.d9status" 2>&1
check "d9 status as uid $NOBODY says the view is its own" \
    grep -q "only the processes of uid $NOBODY" "$T/n.d9status"
check "d9 status as uid $NOBODY lists its process, not root's" sh -c \
    "grep -q '^$N ' '$T/n.d9status' && ! grep -q '^$R ' '$T/n.d9status'"
check "d9 status --pid of root's process: a clear refusal, exit 1" fails_with n.st_pid \
    "belongs to another user" $AS_NOBODY "$BIN/d9" --endpoint "$EP" status --pid "$R"
check "d9 flush --pid of root's process: a clear refusal, exit 1" fails_with n.fl_pid \
    "belongs to another user" $AS_NOBODY "$BIN/d9" --endpoint "$EP" flush --pid "$R"
$AS_NOBODY "$BIN/d9" --endpoint "$EP" flush >"$T/n.flush" 2>&1
check "d9 flush as uid $NOBODY flushes its own process only" \
    grep -q "flushed 1 process of uid $NOBODY" "$T/n.flush"
check "its records are in the store" wait_for 10 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' 'select count(*) from segments s join processes p on p.id = s.process_id where p.pid = $N')\" -ge 1 ]"
check "root's process was not flushed by it" eq \
    "$(sql "select count(*) from segments s join processes p on p.id = s.process_id where p.pid = $R")" 0
check "uid $NOBODY may flush its own pid" $AS_NOBODY "$BIN/d9" --endpoint "$EP" flush --pid "$N"

# ---- the store, as uid 65534 outside and inside the store group ------------------
check "root flushes everything" flush
check "uid $NOBODY cannot list the store" sh -c "! $AS_NOBODY ls '$STORE' >/dev/null 2>&1"
check "uid $NOBODY cannot read the index" sh -c \
    "! $AS_NOBODY cat '$STORE/index.sqlite' >/dev/null 2>&1"
seg1=$(ls "$STORE" | grep '\.d9seg$' | head -n 1)
check "uid $NOBODY cannot read a segment" sh -c \
    "! $AS_NOBODY cat '$STORE/$seg1' >/dev/null 2>&1"
check "d9 ps as uid $NOBODY: permission denied, naming the store group, exit 1" \
    fails_with n.ps "permission denied.*group $READERS" $AS_NOBODY "$BIN/d9" --store "$STORE" ps
check "d9 events as uid $NOBODY: the same refusal" fails_with n.ev "permission denied" \
    $AS_NOBODY "$BIN/d9" --store "$STORE" events --pid "$N"
check "no crash report in any refusal" sh -c "! grep -qi 'sanitizer\|segmentation\|abort' '$T'/n.*"
$AS_READER "$BIN/d9" --store "$STORE" ps --format jsonl >"$T/g.ps" 2>"$T/g.err"
check "a member of the store group reads the live store (d9 ps)" sh -c \
    "grep -q '\"pid\":$N,' '$T/g.ps' && grep -q '\"pid\":$R,' '$T/g.ps'"
ls -la "$STORE" >"$T/g.ls"
check "the group member's read left the files' modes alone" sh -c \
    "[ -z \"\$(find '$STORE' -type f ! -perm 0640)\" ]"

# ---- a store created before the rule is made private at start-up -----------------
check "SIGTERM exits 0" stop_collector
chmod 0755 "$STORE"
chmod 0644 "$STORE"/*.d9seg "$STORE/index.sqlite"
chgrp 0 "$STORE" "$STORE/index.sqlite"
check "collector restarts on the old store" start_collector --store-group $READERS
check "the old store's directory is 2750 again" test "$(mode_of "$STORE")" = "2750 $READERS"
check "the old store's index is 0640 again" test "$(mode_of "$STORE/index.sqlite")" = \
    "640 $READERS"
check "the old store's segments are 0640 again" sh -c \
    "[ -z \"\$(find '$STORE' -name '*.d9seg' ! -perm 0640)\" ]"
check "SIGTERM exits 0 again" stop_collector
ln -s /etc/passwd "$STORE/index.sqlite-wal.x"
ln -s /etc/passwd "$STORE/99-1-99.d9seg"
before=$(stat -c '%a %g' /etc/passwd)
check "collector restarts with links in the store" start_collector --store-group $READERS
check "a link in the store is never followed to change its target" \
    test "$(stat -c '%a %g' /etc/passwd)" = "$before"
check "SIGTERM exits 0 the third time" stop_collector
rm -f "$STORE/index.sqlite-wal.x" "$STORE/99-1-99.d9seg"
"$BIN/d9collectd" --store "$STORE" --shm-dir "$SHM" --endpoint "$EP" \
    --store-group no-such-group-d9 >"$T/badgroup.log" 2>&1
rc=$?
check "an unknown --store-group: exit 1, 'no such group'" sh -c \
    "[ $rc -eq 1 ] && grep -q 'no such group' '$T/badgroup.log'"
d9_finish collector-access
