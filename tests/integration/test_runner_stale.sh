#!/bin/sh
# test_runner_stale.sh — the test runner (tests/run.sh) runs only a fresh
# build: a test binary or tool that is missing, or older than a source or a
# header it was built from, stops the run (exit 2) with its name, the changed
# source and the command that rebuilds it.
#
#   RUNNER=path/to/run.sh sh tests/integration/test_runner_stale.sh   (default tests/run.sh)
#
# In a scratch tree with its own small Makefile (the runner's list comes from
# `make test-bins-list`): a unit binary that includes a header, a tool, and
# an integration script that runs the tool. Then, in this tree, without
# changing it: the Makefile lists every unit binary and helper program, and
# the -MMD dependency files make a header's change rebuild the binaries that
# include it (make -n -W: "what if this file changed").
. tests/integration/lib.sh
d9_setup
RUNNER=$(cd "$(dirname "${RUNNER:-tests/run.sh}")" && pwd)/$(basename "${RUNNER:-tests/run.sh}")
R=$T/repo
mkdir -p "$R/tests/layout" "$R/tests/integration" "$R/tests/unit" "$R/tools"
cat >"$R/tests/layout/check_layout.py" <<'EOF'
print("layout: 1 passed, 0 failed")
EOF
# a cmocka-like unit binary: its totals come from a header
printf '#define FAKE_PASSED 2\n' >"$R/tests/unit/fake.h"
cat >"$R/tests/unit/test_fake.c" <<'EOF'
#include <stdio.h>
#include "fake.h"
int main(void) { printf("[  PASSED  ] %d test(s).\n", FAKE_PASSED); return 0; }
EOF
cat >"$R/tools/faketool.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("ok"); return 0; }
EOF
cat >"$R/tests/integration/test_usetool.sh" <<'EOF'
"$BUILD/bin/faketool" | grep -q ok && echo "usetool: 3 passed, 0 failed"
EOF
cat >"$R/Makefile" <<'EOF'
BUILD ?= build
all: $(BUILD)/tests/unit/test_fake $(BUILD)/bin/faketool
test-bins-list:
	@echo 'unit $(BUILD)/tests/unit/test_fake'
	@echo 'tool $(BUILD)/bin/faketool'
$(BUILD)/tests/unit/test_fake: tests/unit/test_fake.c
	@mkdir -p $(dir $@)
	cc -MMD -MP -o $@ $<
$(BUILD)/bin/faketool: tools/faketool.c
	@mkdir -p $(dir $@)
	cc -o $@ $<
-include $(BUILD)/tests/unit/test_fake.d
EOF
# mk: build the scratch tree afresh, its sources two minutes old and what it
# built one minute old (so that a plain touch makes a source newer, whatever
# the file system's clock resolution); run [PATTERN]: the runner there,
# output in $T/out, status in $T/rc
ago() { echo "@$(( $(date +%s) - $1 ))"; }
mk() {
    find "$R/tests" "$R/tools" -type f -exec touch -d "$(ago 120)" {} +
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -B -s -C "$R" all >/dev/null
    find "$R/build" -type f -exec touch -d "$(ago 60)" {} +
}
run() {
    (cd "$R" && BUILD=build D9_SKIP_FUZZ=1 timeout 60 sh "$RUNNER" "$@") >"$T/out" 2>&1
    echo $? >"$T/rc"
}
# said TEXT: the runner's output has a line with TEXT
said() { grep -qF -- "$1" "$T/out" || { echo "no '$1' in:"; cat "$T/out"; return 1; }; }
status_is() { [ "$(cat "$T/rc")" -eq "$1" ] || { echo "exit $(cat "$T/rc"), not $1:"; cat "$T/out"; return 1; }; }
nothing_ran() { lacks '^tests: |^== ' cat "$T/out"; }
missing_is() { grep -A1 -x 'missing:' "$T/out" | grep -qxF "  $1" || { cat "$T/out"; return 1; }; }

mk
run
check "a fresh build: every suite runs" status_is 0
check "... and the closing line counts them" said "tests: 6 passed, 0 failed"

touch "$R/tests/unit/fake.h"
run
check "a header changed: the runner refuses (exit 2)" status_is 2
check "... names the stale binary" said "build/tests/unit/test_fake (older than: tests/unit/fake.h)"
check "... names the changed source" said "changed sources: tests/unit/fake.h"
check "... and the command to fix it" said "make unit integration"
check "... and runs nothing" nothing_ran
run layout
check "a stale unit binary not selected by PATTERN is not in the way" said "tests: 1 passed, 0 failed"
mk

touch "$R/tools/faketool.c"
run test_usetool.sh
check "a tool's source changed: the runner refuses (exit 2)" status_is 2
check "... naming the tool and its source" said "build/bin/faketool (older than: tools/faketool.c)"
run test_fake
check "... a unit binary alone still runs (the tool is for integration scripts)" \
    said "tests: 2 passed, 0 failed"
mk

rm "$R/build/tests/unit/test_fake"
run
check "a deleted binary: the runner refuses (exit 2)" status_is 2
check "... naming it missing" missing_is build/tests/unit/test_fake
check "... and runs nothing" nothing_ran

mk
run
check "rebuilt: the runner runs again" status_is 0
check "... and the closing line counts every suite" said "tests: 6 passed, 0 failed"

# This tree's Makefile, read only (make -n): its list and its header
# dependencies.
BUILD=${BUILD:-build}
mkq() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory BUILD="$BUILD" "$@"; }
mkq -s test-bins-list >"$T/list" 2>&1
lists_every() {   # lists_every KIND DIR GLOB: a line per source of DIR/GLOB
    for _s in $2/$3; do
        _b=$BUILD/$2/$(basename "$_s" .c)
        grep -qxF "$1 $_b" "$T/list" || { echo "no '$1 $_b' in make test-bins-list"; return 1; }
    done
}
check "test-bins-list: every unit test" lists_every unit tests/unit 'test_*.c'
check "test-bins-list: every helper program" lists_every tool tests/integration 'prog_*.c'
check "test-bins-list: every tool" lists_every tool tests/integration 'tool_*.c'
check "test-bins-list: d9 and d9collectd" sh -c "grep -qxF 'tool $BUILD/bin/d9' '$T/list' &&
    grep -qxF 'tool $BUILD/bin/d9collectd' '$T/list'"
# remade_by HEADER BINARY: make would rebuild BINARY were HEADER changed
remade_by() {
    mkq -n --trace -W "$1" "$2" 2>&1 | grep -q "update target '$2' due to: .*$1" ||
        { echo "$2 is not remade when $1 changes"; return 1; }
}
check "a unit test's header (-MMD): test_rollup <- tests/unit/tmpdir.h" \
    remade_by tests/unit/tmpdir.h "$BUILD/tests/unit/test_rollup"
check "a tool's header (-MMD): tool_store_known <- store_fix.h" \
    remade_by tests/integration/store_fix.h "$BUILD/tests/integration/tool_store_known"
check "a program's header (-MMD): prog_workload <- agent/d9.h" \
    remade_by agent/d9.h "$BUILD/tests/integration/prog_workload"
# agent/uv/uv.mk's own unit test rules (-MMD -MP like the top Makefile's)
for _tb in test_uv:d9uv.h test_ev:evwrap.h test_eploop:eploop.h test_loopcfg:loopcfg.h \
           test_cbslot:cbslot.h; do
    check "a unit test of uv.mk's header (-MMD): ${_tb%%:*} <- agent/uv/${_tb#*:}" \
        remade_by "agent/uv/${_tb#*:}" "$BUILD/tests/unit/${_tb%%:*}"
done
d9_finish runner_stale
