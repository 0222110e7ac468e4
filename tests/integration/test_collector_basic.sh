#!/bin/sh
# d9collectd basics: usage and errors, then several multi-threaded processes
# drained while they run, exiting cleanly, and a clean shutdown.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

help_lists_every_option() {
    "$BIN/d9collectd" --help >"$T/help" || return 1
    for o in --config --store --endpoint --shm-dir --segment-mb --segment-seconds --store-mb \
             --poll-min-us --poll-max-us --scan-ms --log-level --pidfile --help --version \
             FILES SIGNALS "EXIT STATUS" SIGTERM; do
        grep -q -- "$o" "$T/help" || { echo "missing $o"; return 1; }
    done
}
check "--help documents every option, files, signals and exit codes" help_lists_every_option
check "--version prints the version" sh -c "'$BIN/d9collectd' --version | grep -q '^d9collectd [0-9]'"

exit_code_and_one_line() {   # expected-rc args...
    _want=$1; shift
    "$BIN/d9collectd" "$@" >"$T/err.out" 2>&1
    _rc=$?
    cat "$T/err.out"
    [ "$_rc" -eq "$_want" ] && [ "$(wc -l <"$T/err.out")" -eq 1 ]
}
check "an unknown flag is one line and exit 2" exit_code_and_one_line 2 --frob 1
check "a bad value is one line and exit 2" exit_code_and_one_line 2 --segment-mb lots
printf 'store = %s\nsegmnet-mb = 4\n' "$T/x" >"$T/bad.conf"
check "an unknown config key is one line and exit 2" exit_code_and_one_line 2 --config "$T/bad.conf"
check "the example config in deploy/ is valid" "$BIN/d9collectd" --print-config --config deploy/d9collectd.conf
check "--print-config shows flags overriding the file" sh -c \
    "'$BIN/d9collectd' --print-config --config deploy/d9collectd.conf --segment-mb 7 | grep -qx 'segment-mb = 7'"
touch "$T/notadir"
check "an unusable store is one line and exit 1" exit_code_and_one_line 1 --store "$T/notadir/s" \
    --shm-dir "$SHM" --endpoint "ipc://$T/never.sock"

printf '# test config\nsegment-seconds = 30\nlog-level = info\n' >"$T/good.conf"
check "collector starts with a config file and flags" start_collector --config "$T/good.conf" --pidfile "$T/col.pid"
check "a second collector on the same endpoint refuses to start" exit_code_and_one_line 1 \
    --store "$T/store2" --shm-dir "$SHM" --endpoint "$EP"
check "the first collector still answers" "$TBIN/tool_ctl" "$EP" status
check "flushing a pid that is not traced is an error" sh -c "! '$TBIN/tool_ctl' '$EP' flush 999999999"
check "pidfile holds the collector pid" sh -c "[ \"\$(cat '$T/col.pid')\" = '$COLPID' ]"
# its sleeps let the kernel fire the wake-up at an interrupt in their second
# half (pace_sleep_window): idle, that is a slack far above the 50 us default
slack_set() { [ "$(cat /proc/$COLPID/timerslack_ns 2>/dev/null || echo 0)" -gt 1000000 ]; }
if [ -r /proc/self/timerslack_ns ]; then
    check "the idle collector sleeps with a wide timer slack" wait_for 10 slack_set
fi

THREADS=4
EVENTS=20000
for w in a b c; do workload "$w" --threads $THREADS --events $EVENTS --pace-us 200 --batch 500; done
check "three workloads finish" wait_for 50 sh -c "test -s '$T/a.done' && test -s '$T/b.done' && test -s '$T/c.done'"
for w in a b c; do wait "$(wl_pid $w)" 2>/dev/null; done
check "flush succeeds" flush
committed=$(( $(wl_committed a) + $(wl_committed b) + $(wl_committed c) ))
check "every committed event is in a segment exactly once" eq "$(seg wl_unique)" "$committed"
check "no event is stored twice" eq "$(seg wl_dups)" 0
check "events of three processes" eq "$(seg pids)" 3
check "each process ends with a clean EXIT block" eq "$(seg exit_clean)" 3
check "each thread ends with a THREAD_END block" eq "$(seg thread_ends)" $((3 * THREADS))
check "index lists three exited processes" eq "$(sql "select count(*) from processes where state='exited'")" 3
check "index lists every thread as ended with its name" \
    eq "$(sql "select count(*) from threads where ended=1 and name like 'wl-%'")" $((3 * THREADS))
# (minus the collector's own "d9.map" records of pseudo ring 0xfffffffe, see collector/store/sym.h)
check "index counts the custom events per segment" eq "$(sql 'select sum(n_custom) - (select coalesce(sum(nrec), 0) from blocks where ring = 4294967294) from segments')" "$committed"
check "index has the runtime registered by the workload" \
    eq "$(sql "select count(*) from runtimes where name='workload'")" 3
check "the region files are removed" no_regions_left
check "status totals match the stored records" ge "$(st records)" "$committed"
check "SIGTERM exits 0" stop_collector
check "no temp segment is left after shutdown" sh -c "ls -a '$STORE' >'$T/.neg72' && ! grep -q '^\.tmp\.' '$T/.neg72'"
check "the pidfile is removed at exit" sh -c "! test -e '$T/col.pid'"

# the ipc socket's directory is created and every local user can connect
"$BIN/d9collectd" --store "$STORE" --shm-dir "$SHM" --endpoint "ipc://$T/run/dial9/c.sock" \
    >>"$T/col.log" 2>&1 &
COLPID=$!
at_exit kill -9 $COLPID
check "a collector with an endpoint in a missing directory starts" wait_for 20 \
    "$TBIN/tool_ctl" "ipc://$T/run/dial9/c.sock" status
check "the endpoint directory is created 0755" sh -c "[ \"\$(stat -c %a '$T/run/dial9')\" = 755 ]"
check "the socket is connectable by every user (0666: requests are filtered by caller)" sh -c "[ \"\$(stat -c %a '$T/run/dial9/c.sock')\" = 666 ]"
check "SIGTERM exits 0" stop_collector

# the operator's nice value and scheduling policy stand (nice(1), systemd Nice=, chrt)
main_sched() { awk '{ print $41 "/" $19 }' "/proc/$COLPID/stat"; }  # policy/nice of the main thread
start_under() {  # WRAPPER...: the collector started through nice(1) or chrt(1)
    "$@" "$BIN/d9collectd" --store "$STORE" --shm-dir "$SHM" --endpoint "$EP" >>"$T/col.log" 2>&1 &
    COLPID=$!
    at_exit kill -9 $COLPID
    wait_for 20 "$TBIN/tool_ctl" "$EP" status
}
check "a collector started under nice 5 starts" start_under nice -n 5
check "its main thread keeps nice 5 (SCHED_OTHER)" test "$(main_sched)" = 0/5
check "SIGTERM exits 0" stop_collector
check "a collector started under SCHED_BATCH starts" start_under chrt -b 0
check "its main thread stays SCHED_BATCH" test "$(main_sched)" = 3/0
check "SIGTERM exits 0" stop_collector
d9_finish collector-basic
