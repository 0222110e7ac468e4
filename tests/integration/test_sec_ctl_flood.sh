#!/bin/sh
# test_sec_ctl_flood.sh — any local user may connect to the control socket
# (0666): one holding more connections than the collector has descriptors
# must not kill it (libzmq's listener aborted at EMFILE). The collector runs
# under `ulimit -n 256`; four processes of nobody hold 300 connections each
# (bare ones and handshaken idle ones) for 15 seconds. The collector
# survives, keeps draining a traced program (no record lost to the flood),
# answers root's and nobody's own `d9 status` during the flood, shows the
# refusals there, and holds no more connections than its table.
# Needs root (setpriv to nobody); without it there is nothing to check.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
NOBODY=65534
NOFILE=256
FLOODERS=4
PER=300
HOLD=15

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "skipped: needs root and setpriv"
    d9_finish sec-ctl-flood
    exit $?
fi
chmod 0755 "$T"
chmod 1777 "$SHM"

# the collector, under a low descriptor limit
(ulimit -n $NOFILE && exec "$BIN/d9collectd" --store "$STORE" --shm-dir "$SHM" --endpoint "$EP" \
    --scan-ms 100 >>"$T/col.log" 2>&1) &
COLPID=$!
at_exit kill -9 "$COLPID"
check "collector starts under ulimit -n $NOFILE" wait_for 20 "$TBIN/tool_ctl" "$EP" status

workload w --threads 1 --events 3000 --batch 5 --pace-us 10000 --exit clean
check "the traced workload is adopted" wait_for 20 sh -c "'$TBIN/tool_ctl' '$EP' status | grep -q '^proc\.[0-9]*\.state=alive'"
W=$(wl_pid w)
before=$(st "proc.$W.records")

i=0
while [ $i -lt $FLOODERS ]; do
    kind=bare
    [ $((i % 2)) -eq 1 ] && kind=dealer
    setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        "$TBIN/tool_ctlflood" "$EP" $kind $PER $HOLD >"$T/flood.$i" 2>&1 &
    at_exit kill -9 $!
    i=$((i + 1))
done
check "the flooders made their connections" wait_for 10 sh -c "cat '$T'/flood.* | grep -c connected= | grep -qx $FLOODERS"
check "the collector survives the flood" kill -0 "$COLPID"
check "root's d9 status answers during the flood and shows refusals" sh -c \
    "timeout 10 '$BIN/d9' --endpoint '$EP' status >'$T/status.root' &&
     grep -Eq '^control +[0-9]+ connections, [1-9][0-9]* refused' '$T/status.root'"
# a user's own connections may fill its share until the handshake deadline
# closes the bare ones: its d9 status gets in within that (retried)
# nobody_status: up to 6 tries of at most 3 s each
nobody_status() {
    _i=0
    while [ $_i -lt 6 ]; do
        timeout 3 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$BIN/d9" \
            --endpoint "$EP" status >/dev/null 2>&1 && return 0
        _i=$((_i + 1))
    done
    echo "no answer in 6 tries"
    return 1
}
check "nobody's own d9 status answers during the flood" nobody_status
check "the collector holds no more connections than its table ($((NOFILE / 4)))" \
    sh -c "[ \$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ctl_connections=//p') -le $((NOFILE / 4)) ]"
# at_least VALUE MIN: VALUE is a number >= MIN (an empty answer is a
# failure, not a shell error)
at_least() {
    case $1 in ''|*[!0-9]*) echo "not a number: '$1'"; return 1 ;; esac
    [ "$1" -ge "$2" ] || { echo "expected >= $2, got $1"; return 1; }
}
drained() { at_least "$(st "proc.$W.records")" $((before + 1)); }
check "the traced program keeps being drained during the flood (from $before records)" \
    wait_for 10 drained
check "refusals are counted in the status" at_least "$(st ctl_refused)" 1
check "the workload finishes" wait_for 30 wl_done w
check "the flood's connections are gone once the flooders are" wait_for 30 sh -c \
    "[ \$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^ctl_connections=//p') -le 2 ]"
check "flush succeeds" flush
stored_all() {
    wl_done w || { echo "the workload did not finish"; return 1; }
    _got=$(seg wl_unique "$W") _want=$(wl_committed w)
    [ "$_got" = "$_want" ] || { echo "stored $_got, committed $_want"; return 1; }
}
check "every record of the traced program is stored" stored_all
check "the collector is still alive" kill -0 "$COLPID"
check "nothing aborted" sh -c "! grep -q 'Too many open files (src/' '$T/col.log'"
check "SIGTERM exits 0" stop_collector
d9_finish sec-ctl-flood
