#!/bin/sh
# test_uv_tramp_names.sh — a CPU sample inside one of the preload shim's
# trampolines is named as the program's callback it calls: the shim
# publishes each trampoline with its callback's code location
# (D9_LOC_TRAMP_FILE, shm/d9_abi.h) before handing it to libuv, and the
# readers' frame naming (collector/query/q_sym.h) uses it. prog_uvtramp
# (plain libuv, one timer callback tramp_tick) runs under LD_PRELOAD and
# the real collector; tool_tramp_names names, for each trampoline the
# agent published: an address inside it (tramp_tick, not uvwrap_t_*), a
# sample whose leaf is there (one frame: tramp_tick, where it used to be
# dropped and the sample counted for libuv), and a sample inside
# tramp_tick called from it (the trampoline frame left out: tramp_tick
# once). Needs no perf: the stacks are built by the tool.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
PROG=$TBIN/prog_uvtramp

start_collector
LD_PRELOAD=$PRELOAD "$PROG" --seconds 1 >"$T/traced.out" 2>"$T/traced.err" &
PID=$!
wait "$PID"
check "the traced program exits 0, nothing on stderr" sh -c "[ $? -eq 0 ] && ! test -s '$T/traced.err'"
check "the collector records the exit and seals the data" wait_for 20 ended "$PID"
"$TBIN/tool_tramp_names" "$STORE" "$PID" >"$T/names" 2>"$T/names.err"
check "the agent published its trampoline" sh -c "grep -q '^tramp 0x' '$T/names' || { cat '$T/names.err'; false; }"
cb_line() { grep -E "^tramp 0x[0-9a-f]+ -> [^:]*tramp_tick: " "$T/names" || { cat "$T/names"; return 1; }; }
check "an address inside the timer's trampoline is named tramp_tick" cb_line
check "  no trampoline is left hidden or named uvwrap_t_*" lacks 'hidden|uvwrap_t_' cat "$T/names"
check "a sample whose leaf is in the trampoline: one frame, tramp_tick" sh -c \
    "cb_line() { grep -E ' -> [^:]*tramp_tick: ' '$T/names'; }; cb_line | grep -Eq ': [^;|]*tramp_tick \\|' || { cat '$T/names'; false; }"
check "a sample in tramp_tick under the trampoline: tramp_tick once" sh -c \
    "grep -E ' -> [^:]*tramp_tick: ' '$T/names' | grep -Eq '\\| [^;]*tramp_tick\$'"
check "no record was lost" no_lost "$PID"
d9_finish uv-tramp-names
