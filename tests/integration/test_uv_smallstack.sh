#!/bin/sh
# test_uv_smallstack.sh — a libuv loop on a thread of a small stack runs
# under the preload shim as it runs without it (prog_uvtramp --small-stack
# KB: the loop thread's stack is KB KiB; its timer callback sorts). libuv's
# uv__io_poll keeps a 12 KiB epoll array on the stack: what the shim does
# under it (epoll_wait's wrapper, the thread's first event, which claims a
# ring) had once several KiB of dlsym and of the lazy binder's frames to
# spare and crashed (SIGSEGV) at 20-23 KiB. Now: the real functions are
# looked up at load (uvreal.h) and libd9agent.so is bound at load (-z now).
# Each size without a collector (the agent records into its region) and
# with one (the collector adopts the region). The agent links no libzmq
# (agent/zmqlib.h dlopens it for the control channel), whose dependencies
# brought static TLS that glibc takes from every thread's stack (about 600
# bytes, libsodium's the most): 19 KiB now runs, where the program alone
# needs 18. A program that close to its stack's end is not covered.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
PROG=$TBIN/prog_uvtramp
SIZES="19 20 21 22 23 24 28"

# runs KB TAG: exit status 0 and its ticks line, without and under the shim
runs() {
    "$PROG" --small-stack "$1" --seconds 0.3 >"$T/plain$1.out" 2>&1 || {
        echo "the program itself fails on a $1 KiB stack"; return 1; }
    LD_PRELOAD=$PRELOAD "$PROG" --small-stack "$1" --seconds 0.3 >"$T/$2$1.out" 2>&1 &
    _p=$!
    echo "$_p" >"$T/$2$1.pid"
    at_exit kill -9 "$_p"
    wait "$_p"
    _rc=$?
    [ "$_rc" -eq 0 ] || { echo "exit status $_rc under the shim"; return 1; }
    grep -q '^ticks=[1-9]' "$T/$2$1.out" || { echo "no ticks:"; cat "$T/$2$1.out"; return 1; }
}

DIAL9_COLLECTOR=none
for kb in $SIZES; do
    check "a loop thread of $kb KiB of stack runs under the shim (no collector)" runs "$kb" bare
done
DIAL9_COLLECTOR=$EP
check "collector starts" start_collector
for kb in 19 22; do
    check "a loop thread of $kb KiB of stack runs under the shim (a collector)" runs "$kb" col
done
for kb in 19 22; do
    _p=$(cat "$T/col$kb.pid")
    check "the $kb KiB program's exit is recorded" wait_for 20 ended "$_p"
    check "and its records, none lost (its loop thread had a ring)" \
        sh -c "grep -q '\"pid\":$_p,.*\"records\":[1-9][0-9]*,\"lost\":0,' '$T/ps.jsonl'"
done
check "collector stops cleanly" stop_collector

d9_finish uv-smallstack
