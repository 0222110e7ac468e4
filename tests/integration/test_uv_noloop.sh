#!/bin/sh
# test_uv_noloop.sh — a program the preload shim finds no loop in says so
# when DIAL9_LOG asks for it: one line on stderr at exit ("preloaded, no
# supported loop found"), nothing without DIAL9_LOG, none from a program
# whose libuv loop was traced; Node.js with its own copy of libuv linked in
# (no libuv.so.1, as NodeSource's and the official builds) gets the line in
# the default mode and not with DIAL9_LOOP=epoll, which traces its loop.
# With a collector listening, the note is also a record: `d9 ps` lists the
# program as "preloaded, no supported loop found" (state noloop), its
# region removed; not a traced libuv program, nor one run without DIAL9_LOG,
# nor a forged region that claims no loop but holds records.
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

# With a collector listening: the preload leaves a minimal region at exit.
CSHM=$T/cshm STORE=$T/store EP=ipc://$T/c.sock
mkdir -p "$CSHM"
"$BIN/d9collectd" --store "$STORE" --shm-dir "$CSHM" --endpoint "$EP" --scan-ms 100 \
    >"$T/col.log" 2>&1 &
COLPID=$!
at_exit kill -9 "$COLPID"
check "the collector starts" wait_for 20 "$TBIN/tool_ctl" "$EP" status
DIAL9_SHM_DIR=$CSHM DIAL9_COLLECTOR=$EP DIAL9_LOG=1 LD_PRELOAD=$PRELOAD /bin/true 2>"$T/c.err" &
NPID=$!
wait $NPID
check "with a collector: the program still exits 0" eq "$?" 0
check "with a collector: still one line on stderr" eq "$(lines "$T/c.err")" 1
DIAL9_SHM_DIR=$CSHM DIAL9_COLLECTOR=$EP LD_PRELOAD=$PRELOAD /bin/true 2>/dev/null &
QPID=$!
wait $QPID
DIAL9_SHM_DIR=$CSHM DIAL9_COLLECTOR=$EP DIAL9_LOG=1 LD_PRELOAD=$PRELOAD \
    "$TBIN/prog_uvtramp" --seconds 0.1 >/dev/null 2>&1 &
UPID=$!
wait $UPID
# the process as d9 ps lists it, once the collector indexed its end
ps_of() {
    "$TBIN/tool_ctl" "$EP" flush >/dev/null 2>&1
    "$BIN/d9" --store "$STORE" ps --pid "$1" >"$T/ps.$1" 2>&1 && grep -q "$2" "$T/ps.$1"
}
check "d9 ps lists the program: preloaded, no supported loop found" wait_for 20 ps_of "$NPID" "$NOTE"
check "d9 ps --format jsonl: state noloop" sh -c \
    "'$BIN/d9' --store '$STORE' ps --pid $NPID --format jsonl | grep -q '\"state\":\"noloop\"'"
check "d9 sql: the processes table says noloop" sh -c \
    "'$BIN/d9' --store '$STORE' sql \"SELECT state FROM processes WHERE pid = $NPID\" | grep -q noloop"
check "the traced libuv program is listed as exited" wait_for 20 ps_of "$UPID" ' exited'
check "... and not as without a loop" sh -c "! grep -q '$NOTE' '$T/ps.$UPID'"
check "without DIAL9_LOG the program is not listed" lacks "^$QPID " "$BIN/d9" --store "$STORE" ps
# a region is untrusted: the flag on one that recorded something is not believed
DIAL9_SHM_DIR=$CSHM "$TBIN/tool_badregion" noloop "$T/bad.ready" >"$T/bad.out" 2>&1 &
BPID=$!
wait $BPID
check "a region that claims no loop but holds records is listed as exited" \
    wait_for 20 ps_of "$BPID" ' exited'
check "... with its records, not as without a loop" sh -c \
    "! grep -q '$NOTE' '$T/ps.$BPID' && grep -q ' 50 ' '$T/ps.$BPID'"
check "the collector removed the regions" wait_for 20 sh -c "[ -z \"\$(ls '$CSHM')\" ]"
d9_finish uv-noloop
