#!/bin/sh
# test_uv_noloop.sh — a program the preload shim finds no loop in says so
# when DIAL9_LOG asks for it: one line on stderr at exit ("preloaded, no
# supported loop found"), nothing without DIAL9_LOG, none from a program
# whose libuv loop was traced; Node.js with its own copy of libuv linked in
# (no libuv.so.1, as NodeSource's and the official builds) gets the line in
# the default mode and not with DIAL9_LOOP=epoll, which traces its loop.
. tests/integration/lib.sh
d9_setup
PRELOAD=$(cd "$BUILD/lib" 2>/dev/null && pwd)/libd9preload.so
mkdir -p "$T/shm"
DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=none
export DIAL9_SHM_DIR DIAL9_COLLECTOR
NOTE='preloaded, no supported loop found'
lines() { grep -c "$NOTE" "$1"; }
eq() { [ "$1" -eq "$2" ] || { echo "expected $2, got $1"; return 1; }; }

DIAL9_LOG=1 LD_PRELOAD=$PRELOAD /bin/true 2>"$T/true.err"
check "a program without a loop runs as usual" eq "$?" 0
check "DIAL9_LOG=1: exactly one line says no supported loop was found" eq "$(lines "$T/true.err")" 1
check "the line names the program" grep -q '^d9: true: ' "$T/true.err"
check "no region was made" sh -c "[ -z \"\$(ls '$T/shm')\" ]"
LD_PRELOAD=$PRELOAD /bin/true 2>"$T/quiet.err"
check "without DIAL9_LOG nothing is printed" sh -c "! test -s '$T/quiet.err'"
DIAL9_LOG=0 LD_PRELOAD=$PRELOAD /bin/true 2>"$T/zero.err"
check "DIAL9_LOG=0 prints nothing" sh -c "! test -s '$T/zero.err'"
DIAL9_LOG=1 DIAL9_LOOP=none LD_PRELOAD=$PRELOAD /bin/true 2>"$T/none.err"
check "DIAL9_LOOP=none (nothing asked for) prints nothing" sh -c "! test -s '$T/none.err'"
DIAL9_LOG=1 LD_PRELOAD=$PRELOAD "$TBIN/prog_uvtramp" --seconds 0.1 >"$T/uv.out" 2>"$T/uv.err"
check "a traced libuv program prints no such line" eq "$(lines "$T/uv.err")" 0

NODE=$(command -v node || true)
if [ -n "$NODE" ] && ! ldd "$NODE" | grep -q 'libuv\.so\.1'; then
    DIAL9_LOG=1 LD_PRELOAD=$PRELOAD "$NODE" -e 'setTimeout(() => {}, 10)' 2>"$T/node.err"
    check "node with libuv linked in: the line says it is not traced" eq "$(lines "$T/node.err")" 1
    DIAL9_LOG=1 DIAL9_LOOP=epoll LD_PRELOAD=$PRELOAD "$NODE" -e 'setTimeout(() => {}, 10)' \
        2>"$T/node_epoll.err"
    check "with DIAL9_LOOP=epoll its loop is traced: no line" eq "$(lines "$T/node_epoll.err")" 0
else
    echo "skipped: the node checks need a node without libuv.so.1 (${NODE:-none installed})"
fi
d9_finish uv-noloop
