# lib.sh — tiny harness for integration scripts (sourced, POSIX sh).
#   . tests/integration/lib.sh
#   d9_setup                  # makes and exports $T, a fresh temp dir for this script
#   at_exit cmd...            # run at d9_finish (e.g. kill the collector)
#   check "name" cmd args...  # runs cmd; passes if it exits 0
#   lacks ERE cmd args...     # cmd exits 0 and prints no line matching ERE
#   d9_finish                 # prints "NAME: N passed, N failed", cleans up, sets exit code
#   uvmix_traced D9 PRELOAD STORE  # prog_uvmix under an LD_PRELOAD shim is traced
#   perf_or_skip NAME         # ends the script as skipped where perf is not permitted
#   d9_serve NAME D9 ARGS...  # d9 serve in the background, its URL in $T/NAME.url
#   demo_store                # make demo's script run in $T: $T/d9-demo-store
# Binaries are in $BIN (build/bin), helper programs in $TBIN.
BUILD=${BUILD:-build}
BIN=$(cd "$BUILD/bin" 2>/dev/null && pwd)
TBIN=$(cd "$BUILD/tests/integration" 2>/dev/null && pwd)
_pass=0
_fail=0
_cleanup_cmds=""

d9_setup() {
    T=$(mktemp -d /tmp/d9test.XXXXXX)
    export T
}
at_exit() { _cleanup_cmds="$_cleanup_cmds
$*"; }
check() {
    _name=$1; shift
    if "$@" >"$T/.check.out" 2>&1; then
        _pass=$((_pass + 1)); echo "ok   - $_name"
    else
        _fail=$((_fail + 1)); echo "FAIL - $_name"; sed 's/^/    | /' "$T/.check.out" | tail -n 30
    fi
}
# lacks ERE cmd args...: cmd succeeds and no line of its output matches ERE.
# The negative of a grep: `! cmd | grep -q X` also passes when cmd fails and
# prints nothing, which says nothing about X.
lacks() {
    _re=$1; shift
    _out=$("$@") || { echo "lacks: '$*' failed"; return 1; }
    if printf '%s\n' "$_out" | grep -E -- "$_re"; then return 1; fi
    return 0
}
# wait_for SECONDS cmd args...: runs cmd every 0.1 s until it succeeds, for
# at most SECONDS of wall-clock time (a slow cmd does not stretch the bound:
# the deadline is a time, not a count of tries); cmd runs at least once.
wait_for() {
    _wf_end=$(( $(date +%s) + $1 )); shift
    while :; do
        "$@" >/dev/null 2>&1 && return 0
        [ "$(date +%s)" -lt "$_wf_end" ] || return 1
        sleep 0.1
    done
}
# uvmix_traced D9 PRELOAD STORE: prog_uvmix (a plain libuv program) run with
# LD_PRELOAD=PRELOAD against the collector at $EP (shm dir $T/shm), held
# until the collector adopted it, is in STORE once it exits, with its polls;
# D9 is the d9 binary to ask. For the installed copies (test_install.sh,
# test_deb.sh).
uvmix_traced() {
    _d9=$1 _pre=$2 _st=$3
    mkfifo "$T/hold"
    DIAL9_SHM_DIR="$T/shm" DIAL9_COLLECTOR="$EP" LD_PRELOAD="$_pre" \
        "$TBIN/prog_uvmix" --hold <"$T/hold" >"$T/uvmix.out" 2>"$T/uvmix.err" &
    _p=$!
    exec 7>"$T/hold"
    wait_for 20 sh -c "'$_d9' --endpoint '$EP' status | grep -q '^ *$_p '" ||
        { exec 7>&-; wait $_p; cat "$T/uvmix.err"; return 1; }
    exec 7>&-
    wait $_p || { cat "$T/uvmix.err"; return 1; }
    wait_for 20 sh -c "'$_d9' --endpoint '$EP' flush >/dev/null &&
        '$_d9' --store '$_st' ps | grep -q 'prog_uvmix .*exited'" || return 1
    _n=$("$_d9" --store "$_st" events --pid $_p --type poll_start --format jsonl | grep -c .)
    [ "$_n" -ge 10 ] || { echo "poll_start events of prog_uvmix: $_n"; return 1; }
}
# demo_store: make demo's script (agent/demo/run-demo.sh, 2 s of d9demo)
# run in $T, its output in $T/demo.out and $T/demo.err, its store in
# $T/d9-demo-store; sets ROOT (this tree) and ABS_BUILD (BUILD, absolute);
# returns the script's exit status.
demo_store() {
    ROOT=$(pwd)
    case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
    (cd "$T" && BUILD="$ABS_BUILD" DEMO_SECONDS=2 sh "$ROOT/agent/demo/run-demo.sh") \
        >"$T/demo.out" 2>"$T/demo.err"
}
# d9_serve NAME D9 [ARGS...]: `D9 ARGS... serve --listen 127.0.0.1:0` in the
# background (its pid in SPID, killed at d9_finish), output in $T/NAME.out
# and $T/NAME.err; waits until it prints its URL, then writes that to
# $T/NAME.url.
d9_serve() {
    _sv=$1; shift
    "$@" serve --listen 127.0.0.1:0 >"$T/$_sv.out" 2>"$T/$_sv.err" &
    SPID=$!
    at_exit kill "$SPID"
    wait_for 10 sh -c "grep -q '^d9 serve: http://127.0.0.1:' '$T/$_sv.out'" &&
        sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/$_sv.out" >"$T/$_sv.url"
}
# perf_or_skip NAME [SECONDS [FOLDED]]: the CPU profiler may use perf here
# (a probe: tool_profile samples prog_hot for SECONDS, default 0.2, its
# folded profile into FOLDED); where it may not (exit 77), prints
# "skipped: REASON", ends the script as NAME (d9_finish) and exits.
perf_or_skip() {
    "$TBIN/prog_hot" --no-d9 --seconds 1 >/dev/null 2>&1 &
    _probe=$!
    at_exit kill -9 "$_probe"
    # profile the program, not the shell that forked it: its maps are snapshotted at attach
    wait_for 5 sh -c "[ \"\$(readlink /proc/$_probe/exe)\" = '$TBIN/prog_hot' ]"
    "$TBIN/tool_profile" --pid "$_probe" --seconds "${2:-0.2}" >"${3:-/dev/null}" 2>"$T/probe.err"
    _probe_rc=$?
    wait "$_probe"
    [ "$_probe_rc" -eq 77 ] || return 0
    echo "skipped: $(cat "$T/probe.err") (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null), uid $(id -u))"
    d9_finish "$1"
    exit $?
}
d9_finish() {
    eval "$_cleanup_cmds" >/dev/null 2>&1
    [ -n "${T:-}" ] && [ "${D9_KEEP:-0}" != 1 ] && rm -rf "$T"
    echo "${1:-integration}: $_pass passed, $_fail failed"
    [ $_fail -eq 0 ]
}

# browser_setup: CHROME := Debian's Chromium (the headless shell first), and
# the pinned playwright-core installed (build/npm-playwright); two checks.
browser_setup() {
    CHROME=""
    for _bc in /usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/chromium \
               "$(command -v chromium-headless-shell)" "$(command -v chromium)"; do
        [ -n "$_bc" ] && [ -x "$_bc" ] && { CHROME=$_bc; break; }
    done
    check "Debian's Chromium is installed" test -n "$CHROME"
    check "playwright-core installs (pinned)" sh tests/integration/playwright_install.sh
}
# check_lines FILE: one check per line "ok NAME" or "FAIL NAME: why" of FILE
# (what a browser script prints); other lines are ignored.
check_lines() {
    while IFS= read -r _cl; do
        case $_cl in
            "ok "*) check "${_cl#ok }" true ;;
            "FAIL "*) check "${_cl#FAIL }" false ;;
        esac
    done <"$1"
}
