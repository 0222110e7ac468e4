# rel_lib.sh — shared helpers of the reliability tests (test_rel_*.sh,
# stress_*.sh); sourced after tests/integration/lib.sh and d9_setup.
#
#   rel_init                     traps, $SHM $STORE $EP, agent env exported
#   rel_rand LO HI               a random integer in [LO, HI]
#   rel_start_collector [args]   start d9collectd ($REL_COLLECTD or $BIN/d9collectd)
#                                on $STORE/$SHM/$EP, log appended to $T/col.log;
#                                sets $CPID; waits until it answers status
#   rel_stop PID                 SIGTERM, wait up to 10 s, then SIGKILL
#   rel_status KEY               one value of the collector status (tool_ctl)
#   rel_bg CMD...                start CMD in the background, remember it for
#                                cleanup; sets $BGPID
# Every process started through these helpers is killed at exit (normal end,
# failure or signal); rel_on_exit adds more cleanup (e.g. umount).
# Not a test itself (tests/run.sh runs test_*.sh only).

_rel_pids=""
_rel_extra=""

rel_on_exit() { _rel_extra="$_rel_extra
$*"; }

_rel_cleanup() {
    for _p in $_rel_pids; do kill -9 "$_p" 2>/dev/null; done
    for _p in $_rel_pids; do wait "$_p" 2>/dev/null; done
    eval "$_rel_extra" >/dev/null 2>&1
    _rel_pids=""
    _rel_extra=""
}

rel_init() {
    SHM=$T/shm
    STORE=$T/store
    EP=ipc://$T/c.sock
    mkdir -p "$SHM"
    DIAL9_SHM_DIR=$SHM
    DIAL9_COLLECTOR=$EP
    export SHM STORE EP DIAL9_SHM_DIR DIAL9_COLLECTOR
    COLLECTD=${REL_COLLECTD:-$BIN/d9collectd}
    at_exit _rel_cleanup
    # d9_finish runs the cleanup on a normal end; these cover errors and signals
    trap '_rel_cleanup; [ -n "${T:-}" ] && [ "${D9_KEEP:-0}" != 1 ] && rm -rf "$T"' EXIT
    trap 'echo "interrupted"; exit 1' INT TERM HUP
}

rel_rand() {
    _r=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    echo $(($1 + _r % ($2 - $1 + 1)))
}

rel_bg() {
    "$@" &
    BGPID=$!
    _rel_pids="$_rel_pids $BGPID"
}

rel_status() {
    "$TBIN/tool_ctl" "$EP" status 2>/dev/null | sed -n "s/^$1=//p" | head -n 1
}

rel_start_collector() {
    "$COLLECTD" --store "$STORE" --shm-dir "$SHM" --endpoint "$EP" --scan-ms 50 \
        --poll-max-us 2000 "$@" >>"$T/col.log" 2>&1 &
    CPID=$!
    _rel_pids="$_rel_pids $CPID"
    wait_for 20 "$TBIN/tool_ctl" "$EP" status
}

rel_stop() {
    kill "$1" 2>/dev/null || return 0
    _n=100
    while [ $_n -gt 0 ] && kill -0 "$1" 2>/dev/null; do sleep 0.1; _n=$((_n - 1)); done
    kill -9 "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    return 0
}

# rel_regions_gone: no region file is left in $SHM (the collector finished them)
rel_regions_gone() { ! ls "$SHM"/d9.* >/dev/null 2>&1; }
