#!/bin/sh
# test_uv_stacks.sh — what a user reads back of a libuv program traced by
# the preload shim (prog_uvtramp: a timer callback, 40 KiB of stack under
# it, libc's qsort at the leaf):
#   - --stack-mode dwarf with --stack-bytes 61440: the samples reach
#     main;uv_run, through the callback, and no frame is a trampoline of the
#     shim (uvwrap_t_*); with the default 32 KiB copy they stop at the 40 KiB;
#   - a loop on a fresh thread whose callback sits under 12 KiB of stack
#     nothing touched (--hole, as libuv's uv__io_poll's epoll array): the
#     samples still reach uv_run (perf copies present pages only; the shim
#     makes the stack under uv_run present); a loop thread on a 28 KiB stack
#     runs as without the shim (no room: the shim touches nothing);
#   - d9 --debug-dir adds a directory: libc's static merge sort is still
#     named from /usr/lib/debug/.build-id (libc6-dbg) with --debug-dir
#     pointing elsewhere;
#   - a process the collector never saw alive (killed before a collector
#     started): its callback's code location is named from the objects its
#     agent published (prog_uvtramp+0x... tramp_tick), as its stacks are.
# Skipped (with the reason) where perf is not permitted.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
PROG=$TBIN/prog_uvtramp
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }

perf_or_skip uv-stacks

# share FOLDED PATTERN: "TOTAL MATCHING" samples
share() { awk -v p="$2" '{n = $NF; t += n; if ($0 ~ p) m += n} END {printf "%d %d\n", t, m}' "$1"; }
most() { set -- $(share "$1" "$2"); echo "$2 of $1 samples"; [ "$1" -ge 20 ] && [ $(($2 * 10)) -ge $(($1 * 9)) ]; }
few() { set -- $(share "$1" "$2"); echo "$2 of $1 samples"; [ "$1" -ge 20 ] && [ $(($2 * 2)) -lt "$1" ]; }

# run NAME [ARGS]: prog_uvtramp for 2 s under the preload and the running collector
run() {
    DIAL9_SAMPLER=perf LD_PRELOAD=$PRELOAD "$PROG" --seconds 2 $2 >"$T/$1.out" 2>&1 &
    _p=$!
    at_exit kill -9 "$_p"
    wait "$_p"
    wait_for 20 ended "$_p"
    d9 flame --pid "$_p" --no-kernel >"$T/$1.folded" 2>"$T/$1.err"
    d9 --debug-dir "$T/nowhere" flame --pid "$_p" --no-kernel >"$T/$1.nodir.folded" 2>/dev/null
}

check "collector starts with --stack-mode dwarf --stack-bytes 61440" \
    start_collector --stack-mode dwarf --stack-bytes 61440
run big
check "the program ran under the preload" grep -q '^ticks=' "$T/big.out"
check "--stack-bytes 61440: >= 90 % of the samples reach main;uv_run" most "$T/big.folded" '(^|;)main;(loop_run;)?uv_run;'
check "the callback and the frames under it are in the stacks" \
    most "$T/big.folded" ';tramp_tick;tramp_deep[^;]*;tramp_spin'
check "no frame is a trampoline of the shim" sh -c "! grep -q 'uvwrap_t_\|d9_tramp' '$T/big.folded'"
LIBC=$(ldd "$PROG" | sed -n 's/.*libc\.so\.6 => \([^ ]*\).*/\1/p')
LBID=$(readelf -n "$LIBC" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
if [ -f "/usr/lib/debug/.build-id/$(echo "$LBID" | cut -c1-2)/$(echo "$LBID" | cut -c3-).debug" ]; then
    check "--debug-dir adds to /usr/lib/debug: libc's static msort_with_tmp is named" \
        grep -q 'qsort_r;msort_with_tmp' "$T/big.nodir.folded"
else
    echo "skipped: the --debug-dir check needs libc's debug file (libc6-dbg)"
fi
check "collector stops cleanly" stop_collector

check "collector starts with --stack-mode dwarf (default stack copy)" start_collector --stack-mode dwarf
run small
check "the default 32 KiB copy does not reach past the 40 KiB: most samples miss main" \
    few "$T/small.folded" '(^|;)main;(loop_run;)?uv_run;'
run hole --hole
check "12 KiB never touched under the callback, on a fresh thread: >= 90 % reach uv_run" \
    most "$T/hole.folded" ';loop_run;uv_run;.*;tramp_tick;tramp_hole[^;]*;tramp_spin'
check "collector stops cleanly" stop_collector

# ---- never seen alive --------------------------------------------------------------
LD_PRELOAD=$PRELOAD "$PROG" --seconds 60 >"$T/dead.out" 2>&1 &
DPID=$!
at_exit kill -9 "$DPID"
has_region() { ls "$SHM" | grep -q "\.$DPID\."; }
check "the traced program made its region with no collector" wait_for 20 has_region
sleep 1     # a few ticks: polls in its ring
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
check "a collector started afterwards" start_collector --stack-mode dwarf
seen_dead() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$DPID,.*\"state\":\"crashed"; }
check "the collector drains the killed program's region" wait_for 20 seen_dead
check "its callback is named from the objects its agent published" \
    has_polls_at "$DPID" 'prog_uvtramp+0x[0-9a-f]* tramp_tick"' 1
check "collector stops cleanly" stop_collector

# ---- a small stack -----------------------------------------------------------------
"$PROG" --small-stack 28 --seconds 0.3 >"$T/small_plain.out" 2>&1
check "a loop on a 28 KiB thread stack runs without the shim" eq "$?" 0
LD_PRELOAD=$PRELOAD "$PROG" --small-stack 28 --seconds 0.3 >"$T/small_pre.out" 2>&1
check "and under it (no stack touched where there is no room)" eq "$?" 0
check "its output is the same kind" grep -q '^ticks=' "$T/small_pre.out"

d9_finish uv-stacks
