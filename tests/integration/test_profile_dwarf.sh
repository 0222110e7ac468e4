#!/bin/sh
# test_profile_dwarf.sh — d9collectd --stack-mode dwarf: CPU samples of a
# program built without frame pointers (prog_nofp, -O2
# -fomit-frame-pointer) are unwound with DWARF CFI out of process and reach
# main in >= 90 % of them; with --stack-mode fp they do not (the kernel's
# frame-pointer walk stops at the leaf). Also a stripped build whose CFI is
# only in .debug_frame of its debug file, found by build-id under
# D9_DEBUG_DIR. Skipped (with the reason) where perf is not permitted.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }

# ---- is perf allowed here? ------------------------------------------------------
perf_or_skip profile-dwarf

# share PROG FOLDED: "TOTAL WITH_MAIN" samples of a folded profile
share() { awk '{n = $NF; t += n; if ($0 ~ /(^|;)main;/) m += n} END {printf "%d %d\n", t, m}' "$1"; }
# most FOLDED: >= 20 samples and main in >= 90 % of them
most() { set -- $(share "$1"); echo "$2 of $1 samples reach main"; [ "$1" -ge 20 ] && [ $(($2 * 10)) -ge $(($1 * 9)) ]; }
# few FOLDED: >= 20 samples and main in < 50 % of them
few() { set -- $(share "$1"); echo "$2 of $1 samples reach main"; [ "$1" -ge 20 ] && [ $(($2 * 2)) -lt "$1" ]; }

# run NAME PROG: PROG for 2 s under the running collector, profile in $T/NAME.folded
run() {
    DIAL9_SAMPLER=perf "$2" --seconds 2 >"$T/$1.out" 2>&1 &
    _p=$!
    at_exit kill -9 "$_p"
    wait "$_p"
    _exited() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$_p,.*\"state\":\"exited\""; }
    wait_for 20 _exited
    d9 --debug-dir "$T/debug/.build-id" flame --pid "$_p" --no-kernel >"$T/$1.folded" 2>"$T/$1.err"
}

# the stripped build: its debug file under a private .build-id tree
mkdir -p "$T/debug"
BID=$(readelf -n "$TBIN/prog_nofp_dbg" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
D=$(echo "$BID" | cut -c1-2) F=$(echo "$BID" | cut -c3-)
mkdir -p "$T/debug/.build-id/$D"
objcopy --only-keep-debug "$TBIN/prog_nofp_dbg" "$T/debug/.build-id/$D/$F.debug"
strip -o "$T/prog_nofp_stripped" "$TBIN/prog_nofp_dbg"
check "the stripped build has neither .debug_frame nor symbols" \
    sh -c "readelf -S '$T/prog_nofp_stripped' >'$T/sections' && ! grep -Eq 'debug_frame|symtab' '$T/sections'"

# ---- dwarf ------------------------------------------------------------------------
D9_DEBUG_DIR="$T/debug/.build-id" check "collector starts with --stack-mode dwarf" start_collector --stack-mode dwarf
run dwarf "$TBIN/prog_nofp"
check "dwarf: the profile has the nested frames" grep -q 'main;nofp_outer;nofp_middle;nofp_inner' "$T/dwarf.folded"
check "dwarf: >= 90 % of the samples reach main" most "$T/dwarf.folded"
run stripped "$T/prog_nofp_stripped"
check "dwarf, stripped + .debug_frame in a build-id debug file: >= 90 % reach main" \
    most "$T/stripped.folded"
check "collector stops cleanly" stop_collector

# ---- fp: the same program, frame pointers only ------------------------------------
check "collector starts with --stack-mode fp" start_collector --stack-mode fp
run fp "$TBIN/prog_nofp"
check "fp: samples were taken" grep -q 'nofp_' "$T/fp.folded"
check "fp: without frame pointers most samples do not reach main" few "$T/fp.folded"
check "collector stops cleanly" stop_collector

# ---- per-thread rings scale with the stack copy ------------------------------------
# a dwarf sample carries --stack-bytes of stack: the thread's perf ring holds
# as many as the per-CPU rings do (x16 at 60 KiB: 2 MiB; 128 KiB without
# dwarf). As root no lock limit halves them.
if [ "$(id -u)" -eq 0 ]; then
    check "collector starts with per-thread events, dwarf, 60 KiB copies" \
        start_collector --perf-scope thread --stack-mode dwarf --stack-bytes 61440
    run big "$TBIN/prog_nofp"
    check "the threads' rings are 2048 KiB" \
        grep -q "pid $_p (prog_nofp): perf sampling at .* per thread, .*rings of 2048 KiB" "$T/col.log"
    check "dwarf 60 KiB: >= 90 % of the samples reach main" most "$T/big.folded"
    check "collector stops cleanly" stop_collector
fi

d9_finish profile-dwarf
