#!/bin/sh
# test_stack_jit.sh — d9collectd --stack-mode dwarf on code generated at run
# time (no object, no CFI: LuaJIT's traces in nvim and kresd): prog_jitstub
# spins in a stub of machine code in an anonymous mapping that moved the
# stack pointer and keeps a pointer to read-only data and a count on the
# stack. The collector scans the stack copy for the stub's return address
# (a word just after a call, in an object's code; unwind.h): >= 90 % of the
# samples read main;jit_outer;jit_caller;[anon]+0x... (jit_caller perhaps
# as a clone, jit_caller.constprop.0), and none takes the
# read-only data for a caller. Skipped where perf is not permitted, or off
# x86-64.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }

perf_or_skip stack-jit
"$TBIN/prog_jitstub" --seconds 0 >/dev/null 2>&1
if [ $? -eq 77 ]; then
    echo "skipped: prog_jitstub's stub is x86-64 code"
    d9_finish stack-jit
    exit $?
fi

# share FOLDED PATTERN: "TOTAL MATCHING" samples among those in the stub
share() { awk -v p="$2" '/\[anon\]/ {n = $NF; t += n; if ($0 ~ p) m += n} END {printf "%d %d\n", t, m}' "$1"; }
most() { set -- $(share "$1" "$2"); echo "$2 of $1 samples in the stub"; [ "$1" -ge 20 ] && [ $(($2 * 10)) -ge $(($1 * 9)) ]; }

check "collector starts with --stack-mode dwarf" start_collector --stack-mode dwarf
DIAL9_SAMPLER=perf "$TBIN/prog_jitstub" --seconds 2 >"$T/jit.out" 2>&1 &
P=$!
at_exit kill -9 "$P"
wait "$P"
check "the program ran" grep -q '^prog_jitstub: calls [1-9]' "$T/jit.out"
exited() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$P,.*\"state\":\"exited\""; }
check "the collector records its exit" wait_for 20 exited
d9 flame --pid "$P" --no-kernel >"$T/jit.folded" 2>"$T/jit.err"
check ">= 90 % of the samples in the stub reach main through its caller" \
    most "$T/jit.folded" '(^|;)main;jit_outer;jit_caller[^;]*;[[]anon[]][+]0x[0-9a-f]+ [0-9]+$'
check "the read-only data on the stub's stack is never a frame" \
    sh -c "! grep -q 'g_decoy\|prog_jitstub+0x[0-9a-f]*;\[anon\]' '$T/jit.folded'"
check "collector stops cleanly" stop_collector

d9_finish stack-jit
