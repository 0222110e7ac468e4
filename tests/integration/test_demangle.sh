#!/bin/sh
# test_demangle.sh — C++ names demangled in every output (q_demangle.h):
# prog_demangle (g++ and clang++) polls at a code location that is a C++
# static member function and spends its CPU in a C++ function; d9 flame,
# d9 sql's stacks table and d9 top-polls' locations must name them as
# written ("app::Server::on_read(int)"), never mangled ("_ZN...").
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }
has() { grep -qF -- "$1" "$2" || { echo "'$1' not in $2:"; head -n 10 "$2"; return 1; }; }
hasnt() { ! grep -q -- "$1" "$2" || { echo "'$1' in $2:"; grep -- "$1" "$2" | head -n 5; return 1; }; }
exited() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$1,.*\"state\":\"exited\""; }

# the agent's own sampler: CPU samples without perf permissions
check "collector starts" start_collector --perf-freq 0 --switch-period 0
for x in gxx clangxx; do
    DIAL9_SAMPLER=itimer DIAL9_SAMPLER_HZ=999 "$TBIN/prog_demangle_$x" 2 >"$T/$x.out" 2>"$T/$x.err"
    pid=$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$T/$x.out")
    check "$x: program ran" test -n "$pid"
    check "$x: process sealed as exited" wait_for 20 exited "$pid"
    d9 flame --pid "$pid" >"$T/$x.folded" 2>"$T/$x.flame.err"
    check "$x: flame names the C++ frames, caller first" \
        has 'app::Server::on_read(int);app::detail::hot_spin(unsigned long)' "$T/$x.folded"
    check "$x: flame has no mangled name" hasnt '_Z' "$T/$x.folded"
    d9 sql "select distinct frame from stacks" >"$T/$x.stacks" 2>"$T/$x.sql.err"
    check "$x: sql stacks name the C++ frames" has 'app::detail::hot_spin(unsigned long)' "$T/$x.stacks"
    check "$x: sql stacks have no mangled name" hasnt '_Z' "$T/$x.stacks"
    d9 top-polls --pid "$pid" --limit 3 --format jsonl >"$T/$x.top" 2>"$T/$x.top.err"
    check "$x: top-polls names the callback location" has 'app::Server::on_read(int)' "$T/$x.top"
    check "$x: top-polls has no mangled name" hasnt '_Z' "$T/$x.top"
done
check "the collector stops cleanly" stop_collector
d9_finish demangle
