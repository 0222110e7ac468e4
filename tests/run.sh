#!/bin/sh
# Runs every test suite and prints one closing line "tests: N passed, N failed".
# Suites: layout rules, cmocka unit binaries (ASan/UBSan), integration scripts, fuzz smoke.
# Exit status is non-zero when any test failed or any suite crashed.
BUILD=${BUILD:-build}
export BUILD
passed=0
failed=0
crashed=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

tally_cmocka() {   # $1 = output file
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | awk '{s+=$1} END {print s+0}')
    passed=$((passed + p)); failed=$((failed + f))
}
tally_plain() {    # "N passed, N failed" lines
    p=$(sed -n 's/^\([a-z-]*: \)\{0,1\}\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$1" | awk '{s+=$1} END {print s+0}')
    f=$(sed -n 's/^\([a-z-]*: \)\{0,1\}\([0-9]*\) passed, \([0-9]*\) failed.*/\3/p' "$1" | awk '{s+=$1} END {print s+0}')
    passed=$((passed + p)); failed=$((failed + f))
}

# The CPU profile samples on the scheduler tick through a tracepoint
# (collector/daemon/perf_tick.h), which needs tracefs. systemd mounts it at boot; a
# bare CI machine may not have it, and the tick's tests would only skip.
if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null &&
        echo "(mounted tracefs on /sys/kernel/tracing: the tick profile tests need it)"
fi

echo "== layout (folder rules, import circles)"
python3 tests/layout/check_layout.py "$BUILD" >"$log" 2>&1
rc=$?
cat "$log"
tally_plain "$log"
if [ $rc -ne 0 ] && ! grep -Eq '[0-9]+ passed, [1-9][0-9]* failed' "$log"; then crashed="$crashed layout"; fi

echo "== unit tests (ASan/UBSan)"
for t in "$BUILD"/tests/unit/test_*; do
    [ -x "$t" ] || continue
    # a hung test binary must not hang CI: kill it and report it as crashed
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        timeout -k 10 300 "$t" >"$log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "$(basename "$t"): timed out after 300 s" >>"$log"
    cat "$log"
    tally_cmocka "$log"
    if [ $rc -ne 0 ] && ! grep -q '^\[  FAILED  \]' "$log"; then crashed="$crashed $(basename "$t")"; fi
done

echo "== integration tests"
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] || continue
    echo "-- $t"
    timeout 600 sh "$t" >"$log" 2>&1
    rc=$?
    cat "$log"
    tally_plain "$log"
    if [ $rc -ne 0 ] && ! grep -Eq '[0-9]+ passed, [1-9][0-9]* failed' "$log"; then crashed="$crashed $t"; fi
done

if [ -f tests/fuzz/run.sh ] && [ "${D9_SKIP_FUZZ:-0}" != 1 ]; then
    echo "== fuzz smoke"
    FUZZ_SECONDS=${FUZZ_SECONDS:-10} sh tests/fuzz/run.sh >"$log" 2>&1
    rc=$?
    tail -n 40 "$log"
    tally_plain "$log"
    if [ $rc -ne 0 ] && ! grep -Eq '[0-9]+ passed, [1-9][0-9]* failed' "$log"; then crashed="$crashed fuzz"; fi
fi

if [ -n "$crashed" ]; then
    echo "suites that crashed or exited non-zero without reporting:$crashed"
    failed=$((failed + 1))
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
