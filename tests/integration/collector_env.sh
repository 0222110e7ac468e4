# collector_env.sh — shared set-up for the integration scripts that run a
# d9collectd (sourced after lib.sh). Gives every script its own temp shm
# dir, store and endpoint, and helpers to run d9collectd and prog_workload
# and to read results. Every process started here is killed at d9_finish,
# and on any other exit too.
d9_setup
SHM=$T/shm
STORE=$T/store
EP=ipc://$T/c.sock
mkdir -p "$SHM"
DIAL9_SHM_DIR=$SHM
DIAL9_COLLECTOR=$EP
export DIAL9_SHM_DIR DIAL9_COLLECTOR
COLPID=""
# Also on an abnormal end (signal, broken pipe, shell error): kill what we
# started and remove $T. After a normal d9_finish this repeats harmlessly.
_col_cleanup() {
    eval "$_cleanup_cmds" >/dev/null 2>&1
    [ -n "${T:-}" ] && [ "${D9_KEEP:-0}" != 1 ] && rm -rf "$T"
}
trap '_col_cleanup' EXIT
trap '_col_cleanup; exit 1' INT TERM HUP PIPE

# start_collector [extra flags...]: starts d9collectd in the background, waits
# until it answers a status request.
start_collector() {
    "$BIN/d9collectd" --store "$STORE" --shm-dir "$SHM" --endpoint "$EP" --scan-ms 100 \
        "$@" >>"$T/col.log" 2>&1 &
    COLPID=$!
    at_exit kill -9 "$COLPID"
    wait_for 20 "$TBIN/tool_ctl" "$EP" status
}
# stop_collector: SIGTERM and wait; returns its exit status.
stop_collector() {
    kill -TERM "$COLPID" 2>/dev/null
    wait "$COLPID"
}
# workload NAME args...: starts prog_workload in the background with a done file
# $T/NAME.done; its pid goes to $T/NAME.pid.
workload() {
    _n=$1; shift
    "$TBIN/prog_workload" --done-file "$T/$_n.done" "$@" >"$T/$_n.out" 2>&1 &
    echo $! >"$T/$_n.pid"
    at_exit kill -9 "$!"
}
wl_pid() { cat "$T/$1.pid"; }
wl_done() { test -s "$T/$1.done"; }
# wl_field NAME KEY: a key=value field of the workload's done line
wl_field() { tr ' ' '\n' <"$T/$1.done" | sed -n "s/^$2=//p"; }
# wl_committed NAME: events the workload emitted minus those the agent dropped
wl_committed() { echo $(( $(wl_field "$1" emitted) - $(wl_field "$1" lost) )); }
# cli_runs: prog_cli twice under the running collector, to its end: clean
# (pid OKPID, schedstat at every park) and aborting (CRPID, schedstat once a
# minute); then waits (flushing) until d9 ps shows them exited and crashed.
cli_runs() {
    DIAL9_SCHED_SAMPLE_US=0 "$TBIN/prog_cli" >"$T/ok.out" 2>"$T/ok.err"
    OKPID=$(head -n 1 "$T/ok.out")
    DIAL9_SCHED_SAMPLE_US=60000000 "$TBIN/prog_cli" --crash >"$T/crash.out" 2>"$T/crash.err"
    CRPID=$(head -n 1 "$T/crash.out")
    wait_for 20 _cli_ended
}
_cli_ended() {
    "$BIN/d9" --store "$STORE" flush >/dev/null 2>&1
    "$BIN/d9" --store "$STORE" ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
        grep -q "\"pid\":$OKPID,.*\"state\":\"exited\"" "$T/ps.jsonl" &&
        grep -q "\"pid\":$CRPID,.*\"state\":\"crashed\"" "$T/ps.jsonl"
}
flush() { "$TBIN/tool_ctl" "$EP" flush "$@" >"$T/.flush.out" 2>&1; }
# seg KEY [PID]: a value from tool_segcheck over the store
seg() { "$TBIN/tool_segcheck" "$STORE" ${2:-} | sed -n "s/^$1=//p"; }
# st KEY: a value from the collector's status
st() { "$TBIN/tool_ctl" "$EP" status | sed -n "s/^$1=//p"; }
sql() { sqlite3 "$STORE/index.sqlite" "$1"; }
# eq A B: numeric equality with a readable failure
eq() { [ "$1" -eq "$2" ] || { echo "expected $2, got $1"; return 1; }; }
ge() { [ "$1" -ge "$2" ] || { echo "expected >= $2, got $1"; return 1; }; }
no_regions_left() { [ -z "$(ls "$SHM")" ]; }
