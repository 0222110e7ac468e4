#!/bin/sh
# Runs the test suites and prints one closing line "tests: N passed, N failed".
#
#   sh tests/run.sh [PATTERN]        (make test T=PATTERN)
#
# Suites: layout rules, cmocka unit binaries (ASan/UBSan), integration
# scripts, fuzz smoke. PATTERN (an extended regular expression) keeps the
# suites whose name matches it: "layout", "fuzz", a unit binary's name
# (test_idx) or an integration script's file name (test_ship.sh).
#
# How a suite counts (suite_tally):
#   - its closing line is its last line "NAME: N passed, N failed" (any NAME;
#     a cmocka binary's "[  PASSED  ] N tests" / "[  FAILED  ] N tests");
#   - a suite that exits non-zero counts as failed even when its closing line
#     said 0 failed, and one that prints no closing line counts as failed;
#   - a suite that runs past its time limit is killed (its whole process
#     group) and counts as failed.
# Exit status: 0 only when nothing failed; 2, before any suite runs, when
# the build is stale.
#
# A fresh build first (check_build): every unit binary it will run, and when
# an integration script is selected every program, library and helper those
# scripts use, must exist and be no older than its inputs. The list is the
# Makefile's (make test-bins-list, tests/testbins.mk); "older" is make's own
# answer (make -n --trace: sources, objects, and the headers of the -MMD
# dependency files). A stale or missing one stops the run with exit status 2,
# naming it and the changed sources, and the command that rebuilds them:
# `make unit integration` (make test builds before it runs this).
#
# Limits (seconds): D9_UNIT_TIMEOUT (300), D9_SUITE_TIMEOUT (600, each
# integration script). D9_SKIP_FUZZ=1 skips the fuzz smoke.
BUILD=${BUILD:-build}
export BUILD
PATTERN=${1:-}
UNIT_TIMEOUT=${D9_UNIT_TIMEOUT:-300}
SUITE_TIMEOUT=${D9_SUITE_TIMEOUT:-600}
KILL_AFTER=10       # seconds between the timeout's TERM and its KILL
passed=0
failed=0
bad=""              # suites that failed without saying so in their closing line
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# wanted NAME: the suite is selected by PATTERN (all of them without one)
wanted() { [ -z "$PATTERN" ] || printf '%s\n' "$1" | grep -Eq -- "$PATTERN"; }

# make_q ARGS...: make in this tree, on $BUILD, apart from any make that runs
# this script (its flags and jobserver are not ours)
make_q() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory BUILD="$BUILD" "$@"
}
# stale_exit WHAT...: say what is stale, how to rebuild it, and stop
stale_exit() {
    echo "tests/run.sh: the build is not fresh; nothing was run."
    printf '%s\n' "$@"
    echo "rebuild with: make unit integration   (or run make test, which builds first)"
    exit 2
}
# check_build: the unit binaries in $UNITS and, when $NEED_TOOLS is 1, the
# tools in $TOOLS exist and make would not remake them (stale_exit if not)
check_build() {
    _want=$UNITS
    [ "$NEED_TOOLS" -eq 1 ] && _want="$_want $TOOLS"
    [ -n "$(echo $_want)" ] || return 0
    _missing=""
    for _b in $_want; do
        [ -e "$_b" ] || _missing="$_missing $_b"
    done
    # "FILE:LINE: update target 'T' due to: P1 P2 ..." for each T make would remake
    _trace=$(make_q -n --trace $_want 2>&1) ||
        stale_exit "make -n $_want failed:" "$(printf '%s\n' "$_trace" | tail -n 5)"
    _trace=$(printf '%s\n' "$_trace" | grep -v ' due to: target does not exist$' |
        sed -n "s/^[^ ]*: update target '\(.*\)' due to: \(.*\)/\1 \2/p")
    _stale=""
    for _b in $_want; do
        case " $_missing " in *" $_b "*) continue ;; esac
        _why=$(printf '%s\n' "$_trace" | awk -v b="$_b" '$1 == b { for (i = 2; i <= NF && i <= 4; i++) printf " %s", $i; if (NF > 4) printf " (+%d more)", NF - 4 }')
        [ -n "$_why" ] && _stale="$_stale
  $_b (older than:$_why)"
    done
    [ -z "$_missing$_stale" ] && return 0
    # the changed inputs that are not build outputs: what was edited
    _src=$(printf '%s\n' "$_trace" | awk -v b="$BUILD/" '{ for (i = 2; i <= NF; i++) if (index($i, b) != 1) print $i }' | sort -u | head -n 20 | tr '\n' ' ' | sed 's/ $//')
    stale_exit ${_missing:+"missing:$(printf '\n  %s' $_missing)"} \
        ${_stale:+"stale:$_stale"} \
        ${_src:+"changed sources: $_src"}
}

# suite_tally NAME RC KIND: count the suite whose output is in $log.
# KIND plain: the last "NAME: N passed, N failed" line; cmocka: the sums of
# cmocka's PASSED and FAILED lines.
suite_tally() {
    _name=$1 _rc=$2
    if [ "$3" = cmocka ]; then
        _p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
        _f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
        _closed=$(grep -c '^\[  \(PASSED\|FAILED\)  \] [0-9]* test' "$log")
    else
        _line=$(grep -E '^(.*: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
        _p=$(printf '%s\n' "$_line" | sed -n 's/^\(.*: \)\{0,1\}\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
        _f=$(printf '%s\n' "$_line" | sed -n 's/^\(.*: \)\{0,1\}\([0-9]*\) passed, \([0-9]*\) failed.*/\3/p')
        _closed=$([ -n "$_line" ] && echo 1 || echo 0)
    fi
    passed=$((passed + ${_p:-0}))
    failed=$((failed + ${_f:-0}))
    _why=""
    if [ "$_closed" -eq 0 ]; then
        _why="printed no closing line"
    elif [ "$_rc" -ne 0 ] && [ "${_f:-0}" -eq 0 ]; then
        _why="reported 0 failed"
    fi
    case $_rc in
    0) ;;
    124|137) _why="${_why:+$_why, }timed out" ;;
    *) _why="${_why:+$_why, }exit $_rc" ;;
    esac
    # a failure it counted itself is counted already; anything else is one more
    if [ "$_closed" -eq 0 ] || { [ "$_rc" -ne 0 ] && [ "${_f:-0}" -eq 0 ]; }; then
        failed=$((failed + 1))
        bad="$bad
  $_name ($_why)"
    fi
}

# The CPU profile samples on the scheduler tick through a tracepoint
# (collector/daemon/perf_tick.h), which needs tracefs. systemd mounts it at boot; a
# bare CI machine may not have it, and the tick's tests would only skip.
if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null &&
        echo "(mounted tracefs on /sys/kernel/tracing: the tick profile tests need it)"
fi

LIST=$(make_q -s test-bins-list 2>&1) ||
    stale_exit "make test-bins-list failed (the runner takes its list from the Makefile):" "$LIST"
UNITS=""
for t in $(printf '%s\n' "$LIST" | sed -n 's/^unit //p'); do
    wanted "$(basename "$t")" && UNITS="$UNITS $t"
done
TOOLS=$(printf '%s\n' "$LIST" | sed -n 's/^tool //p')
NEED_TOOLS=0
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] && wanted "$(basename "$t")" && { NEED_TOOLS=1; break; }
done
check_build

if wanted layout; then
    echo "== layout (folder rules, import circles)"
    python3 tests/layout/check_layout.py "$BUILD" >"$log" 2>&1
    rc=$?
    cat "$log"
    suite_tally layout $rc plain
fi

echo "== unit tests (ASan/UBSan)"
for t in $UNITS; do
    # a hung test binary must not hang CI: kill it and report it as failed
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        timeout -k $KILL_AFTER "$UNIT_TIMEOUT" "$t" >"$log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "$(basename "$t"): timed out after $UNIT_TIMEOUT s" >>"$log"
    cat "$log"
    suite_tally "$(basename "$t")" $rc cmocka
done

echo "== integration tests"
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] || continue
    wanted "$(basename "$t")" || continue
    echo "-- $t"
    _t0=$(date +%s)
    # timeout signals the script's whole process group (its daemons too)
    timeout -k $KILL_AFTER "$SUITE_TIMEOUT" sh "$t" >"$log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "$t: timed out after $SUITE_TIMEOUT s" >>"$log"
    cat "$log"
    echo "($(basename "$t"): $(( $(date +%s) - _t0 )) s)"
    suite_tally "$t" $rc plain
done

if [ -f tests/fuzz/run.sh ] && [ "${D9_SKIP_FUZZ:-0}" != 1 ] && wanted fuzz; then
    echo "== fuzz smoke"
    FUZZ_SECONDS=${FUZZ_SECONDS:-10} sh tests/fuzz/run.sh >"$log" 2>&1
    rc=$?
    tail -n 40 "$log"
    suite_tally fuzz $rc plain
fi

if [ -n "$bad" ]; then
    echo "suites counted as failed although their closing line did not say so:$bad"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
