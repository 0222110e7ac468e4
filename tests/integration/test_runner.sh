#!/bin/sh
# test_runner.sh — the test runner (tests/run.sh) counts every suite: fake
# suites in a scratch tree, run by the real runner, must be tallied exactly.
#
#   RUNNER=path/to/run.sh sh tests/integration/test_runner.sh   (default tests/run.sh)
#
# The fake suites: closing lines under names with digits, underscores and
# dots; one that reports a failure and exits 1; one that says "0 failed" but
# exits 1; one that prints nothing; one that hangs (killed by the runner's
# time limit, D9_SUITE_TIMEOUT). The runner's closing line and exit status
# must count each one, and name the ones that failed without saying so.
# Also: `run.sh PATTERN` runs only the matching suites.
. tests/integration/lib.sh
d9_setup
RUNNER=$(cd "$(dirname "${RUNNER:-tests/run.sh}")" && pwd)/$(basename "${RUNNER:-tests/run.sh}")
R=$T/repo
mkdir -p "$R/tests/layout" "$R/tests/integration" "$R/build/tests/unit"
cat >"$R/tests/layout/check_layout.py" <<'EOF'
print("layout: 1 passed, 0 failed")
EOF
# the runner takes the binaries it runs from the Makefile: none here
printf 'test-bins-list:\n\t@true\n' >"$R/Makefile"
suite() {   # suite FILE BODY: a fake integration script
    printf '%s\n' "$2" >"$R/tests/integration/$1"
}
suite test_a.sh 'echo "ok   - a"; echo "s3-client_2.x: 3 passed, 0 failed"'
suite test_b.sh 'echo "FAIL - b"; echo "suite9: 2 passed, 1 failed"; exit 1'
suite test_c.sh 'echo "export_perfetto: 5 passed, 0 failed"; exit 1'
suite test_d.sh 'exit 0'
suite test_e.sh 'echo "ok   - e started"; sleep 600; echo "e: 1 passed, 0 failed"'
suite test_f.sh 'echo "x.y-z_1: 4 passed, 0 failed"'
# run [PATTERN]: the runner in the scratch tree; output in $T/out, status in $T/rc
run() {
    (cd "$R" && BUILD=build D9_SKIP_FUZZ=1 D9_SUITE_TIMEOUT=3 timeout 60 sh "$RUNNER" "$@") \
        >"$T/out" 2>&1
    echo $? >"$T/rc"
}
closing() { tail -n 1 "$T/out"; }
# said TEXT: the runner's output has the line TEXT
said() { grep -qxF -- "$1" "$T/out" || { echo "no line '$1' in:"; cat "$T/out"; return 1; }; }

run
# passed: 1 (layout) + 3 + 2 + 5 + 4; failed: b's own 1, c (exit 1), d (no line), e (hung)
check "closing line counts every suite" said "tests: 15 passed, 4 failed"
check "the run fails (exit status non-zero)" sh -c "[ \$(cat '$T/rc') -ne 0 ] && [ \$(cat '$T/rc') -ne 124 ]"
check "a suite that exits 1 after '0 failed' is named" said "  tests/integration/test_c.sh (reported 0 failed, exit 1)"
check "a suite that prints nothing is named" said "  tests/integration/test_d.sh (printed no closing line)"
check "a suite that hangs is killed and named" \
    said "  tests/integration/test_e.sh (printed no closing line, timed out)"
check "a suite that counted its own failure is not counted twice" \
    sh -c "! grep -q 'test_b.sh (' '$T/out'"

run 'test_[af]'
check "PATTERN runs only the matching suites" said "tests: 7 passed, 0 failed"
check "PATTERN: the others did not run" sh -c "! grep -q 'test_[bcde].sh\|^layout' '$T/out'"
check "PATTERN: a clean selection exits 0" test "$(cat "$T/rc")" -eq 0
run layout
check "PATTERN layout: the layout check alone" said "tests: 1 passed, 0 failed"
d9_finish runner
