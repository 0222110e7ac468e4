#!/bin/sh
# test_rel_bad_input.sh — bad input anywhere gives one clear line and no crash:
# DIAL9_* values (the application runs untraced and exits normally), an
# unwritable store (the collector exits non-zero with one line), bad
# command-line arguments to d9 and d9collectd (exit 2), and malformed or
# bogus control messages (counted, logged, the collector keeps answering).
#
#   BUILD=... sh tests/integration/test_rel_bad_input.sh      (root: mounts, setpriv)
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
d9_setup
rel_init
start=$(date +%s)
long300=$(printf '%0300d' 0)

# ---- DIAL9_* -------------------------------------------------------------------
# untraced VAR VALUE [PATTERN]: the app exits 0 untraced, exactly one stderr
# line naming VAR (or PATTERN)
untraced() {
    env "$1=$2" "$TBIN/prog_rel_workload" --threads 1 --events 1000 >"$T/app.out" 2>"$T/app.err"
    rc=$?
    echo "exit $rc; stderr:"; cat "$T/app.err"; cat "$T/app.out"
    [ $rc -eq 0 ] && [ "$(wc -l <"$T/app.err")" -eq 1 ] && grep -qF -- "${3:-$1}" "$T/app.err" &&
        grep -q 'traced=0' "$T/app.out" && grep -q 'emitted=1000' "$T/app.out"
}
for kv in DIAL9_ENABLED=maybe DIAL9_RING_KB=abc DIAL9_RING_KB=0 DIAL9_RING_KB=99999999 \
          DIAL9_RING_KB=-4 DIAL9_MAX_THREADS=0 DIAL9_MAX_THREADS=5000 DIAL9_MAX_THREADS=12x \
          "DIAL9_RUNTIME_NAME=$long300" "DIAL9_COLLECTOR=ipc://$long300" \
          "DIAL9_SHM_DIR=/$long300"; do
    var=${kv%%=*}
    val=${kv#*=}
    short=$(printf '%.20s' "$val")
    check "$var='$short': app runs untraced, one line, exit 0" untraced "$var" "$val"
done
check "no region was created by the misconfigured runs" rel_regions_gone
check "DIAL9_SHM_DIR that does not exist: app runs untraced, one line, exit 0" \
    untraced DIAL9_SHM_DIR "$T/does/not/exist" "$T/does/not/exist"

# ---- unwritable store ------------------------------------------------------------
# one_line_fail CMD...: exits 1..125 (not a signal), exactly one stderr line
one_line_fail() {
    timeout 20 "$@" >"$T/cmd.out" 2>"$T/cmd.err"
    rc=$?
    echo "exit $rc; stderr:"; cat "$T/cmd.err"
    [ $rc -ne 0 ] && [ $rc -lt 124 ] && [ "$(wc -l <"$T/cmd.err")" -eq 1 ]
}
mkdir -p "$T/ro"
if mount -t tmpfs -o ro,size=1m tmpfs "$T/ro" 2>/dev/null; then
    rel_on_exit umount -l "$T/ro"
    check "store on a read-only mount: collector exits non-zero with one line" \
        one_line_fail "$COLLECTD" --store "$T/ro/store" --shm-dir "$SHM" --endpoint "ipc://$T/ro.sock"
    check "... and the line names the store" grep -q "$T/ro" "$T/cmd.err"
fi
touch "$T/afile"
check "store path is a file: collector exits non-zero with one line" \
    one_line_fail "$COLLECTD" --store "$T/afile" --shm-dir "$SHM" --endpoint "ipc://$T/f.sock"
# a store that uid 65534 may not write (root-owned 0755)
chmod 0755 "$T"
mkdir -p "$T/rootstore" "$T/nobody"
chmod 0755 "$T/rootstore"
chown 65534:65534 "$T/nobody"
check "store not writable by the collector's user: exits non-zero with one line" \
    one_line_fail setpriv --reuid=65534 --regid=65534 --clear-groups "$COLLECTD" \
    --store "$T/rootstore" --shm-dir "$SHM" --endpoint "ipc://$T/nobody/c.sock"
check "... and the line says why (not writable / permission)" \
    grep -qiE 'writable|permission' "$T/cmd.err"

# ---- bad command-line arguments ------------------------------------------------------
# usage_err CMD...: exit 2, first stderr line is the error (a "Try ..." hint may follow)
usage_err() {
    timeout 20 "$@" >"$T/cmd.out" 2>"$T/cmd.err"
    rc=$?
    echo "exit $rc; stderr:"; cat "$T/cmd.err"
    n=$(wc -l <"$T/cmd.err")
    [ $rc -eq 2 ] && [ "$n" -ge 1 ] && [ "$n" -le 2 ] &&
        { [ "$n" -eq 1 ] || sed -n 2p "$T/cmd.err" | grep -q '^Try '; }
}
for args in "--bogus" "--scan-ms abc" "--scan-ms 1" "--store" "--segment-mb 0" \
            "--segment-mb 99999999999999999999" "--poll-min-us 100 --poll-max-us 10" \
            "--log-level loud" "--config $T/does-not-exist" "positional"; do
    check "d9collectd $args: one line, exit 2" usage_err "$COLLECTD" $args
done
for args in "bogus-command" "--bogus" "events --limit -5" "events --pid x" \
            "events --since yesterday" "events --type nosuchtype" "fsck extra" \
            "fsck --repair=yes" "status --endpoint" "top-polls --limit 0x"; do
    check "d9 $args: one line (+ hint), exit 2" usage_err "$BIN/d9" --store "$T/nostore" $args
done

# ---- malformed control messages ----------------------------------------------------------
check "collector starts" rel_start_collector
malformed_count() { rel_status malformed_messages; }
log_lines() { grep -c 'malformed' "$T/col.log"; }
first=1
for kind in random delim-random frames4 empty nonempty-delim truncated unknown-fields; do
    before=$(malformed_count)
    "$TBIN/tool_rel_zmq" "$EP" "$kind" >/dev/null 2>&1
    wait_for 10 sh -c "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^malformed_messages=//p')\" -gt ${before:-0} ]"
    after=$(malformed_count)
    check "control message '$kind': dropped and counted once (${before:-?} -> ${after:-?}), collector answers" \
        test "${after:-0}" -eq $(( ${before:-0} + 1 ))
    if [ $first = 1 ]; then
        check "control message '$kind': one clear log line" test "$(log_lines)" -eq 1
        first=0
    fi
done
check "malformed messages are logged one line each at most (rate-limited flood guard)" \
    test "$(log_lines)" -le 7
for kind in huge hello-traversal goodbye-bogus; do
    "$TBIN/tool_rel_zmq" "$EP" "$kind" >/dev/null 2>&1
    check "control message '$kind': collector alive and answering" \
        sh -c "kill -0 $CPID && '$TBIN/tool_ctl' '$EP' status >/dev/null"
done
check "status for a bogus pid: answered with an error" \
    sh -c "'$TBIN/tool_rel_zmq' '$EP' status-bogus-pid | grep -q 'error=-3'"
check "flush for a bogus pid: answered with an error" \
    sh -c "'$TBIN/tool_rel_zmq' '$EP' flush-bogus-pid | grep -q 'error=-3'"
check "hello with a path outside --shm-dir opened nothing" sh -c "! grep -q passwd '$T/col.log'"
check "collector still alive after every bad input" kill -0 "$CPID"
echo "bad-input: $(( $(date +%s) - start ))s"
d9_finish rel-bad-input
