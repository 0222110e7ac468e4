#!/bin/sh
# test_agent_nozmq.sh — the agent links no libzmq: libd9agent.so and the
# preload shim do not NEED it, a traced program that never opens the control
# channel never maps it, and one on a host without libzmq still records
# (the collector finds its region by scanning and drains it) where it once
# failed to start. With no collector listening a traced program never maps
# libzmq either (the agent opens the channel only once one answers), and a
# collector started later still gets its channel. With libzmq present the
# control channel still works: the hello reaches a collector that does not
# scan, which adopts the program.
#
# libzmq is made absent two ways: DIAL9_ZMQ_LIB naming a missing file (the
# agent's documented override of the library it loads, agent/zmqlib.h), and,
# where this runs as root with unshare(1), the real file hidden by a bind
# mount of /dev/null in a private mount namespace (the loader then finds a
# file too short to load, as on a broken install).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
AGENT_SO=$BUILD/lib/libd9agent.so
PROG=$TBIN/prog_uvtramp
lines() { grep -c . "$1" || true; }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

check "libd9agent.so does not NEED libzmq" lacks 'libzmq' needed "$AGENT_SO"
check "libd9preload.so does not NEED libzmq" lacks 'libzmq' needed "$PRELOAD"
check "libd9agent.so NEEDs protobuf-c and libc only" sh -c \
    "[ \"\$(readelf -d '$AGENT_SO' | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v -e '^libprotobuf-c' -e '^libc\.' -e '^libdl\.' -e '^libpthread\.' | wc -l)\" -eq 0 ]"

# A traced libuv program without a control channel: libzmq never mapped.
DIAL9_COLLECTOR=none LD_DEBUG=libs LD_PRELOAD=$PRELOAD "$PROG" --seconds 0.1 \
    >"$T/none.out" 2>"$T/none.libs"
check "DIAL9_COLLECTOR=none: the traced program runs" grep -q '^ticks=[1-9]' "$T/none.out"
check "... and the loader never looks for libzmq" lacks 'libzmq' cat "$T/none.libs"

# No collector listening at DIAL9_COLLECTOR (the default endpoint set, the
# usual case): the agent records but never opens the control channel, so
# libzmq is never mapped. The wait is on the agent's own clock: its
# housekeeping thread probes for a collector before its first heartbeat
# and at every heartbeat after, and each heartbeat touches the region
# file's mtime; two mtime changes after the first sight of the region mean
# the start probe and at least one heartbeat probe are done.
mkfifo "$T/late"
LD_PRELOAD=$PRELOAD "$TBIN/prog_uvmix" --hold <"$T/late" >"$T/late.out" 2>"$T/late.err" &
LATE=$!
at_exit kill -9 "$LATE"
exec 8>"$T/late"
region_of() { ls "$SHM" | grep -E "^d9\.[0-9]+\.$1\.[0-9]+\$"; }
mtime_of() { _r=$(region_of "$1") && stat -c %y "$SHM/$_r"; }
mtime_moved() { [ "$(mtime_of "$1")" != "$2" ]; }
check "no collector: the traced program makes its region" wait_for 20 region_of "$LATE"
M0=$(mtime_of "$LATE")
check "... its agent beats once" wait_for 20 mtime_moved "$LATE" "$M0"
M1=$(mtime_of "$LATE")
check "... and once more" wait_for 20 mtime_moved "$LATE" "$M1"
maps_of() { cat "/proc/$1/maps"; }
check "... and never maps libzmq (/proc/PID/maps)" lacks 'libzmq' maps_of "$LATE"
# A collector started now learns of the program, the agent opens its channel
# (libzmq mapped only then) and the collector adopts it. (The collector must
# not inherit the fifo's write end, or the program never sees EOF.)
check "a collector starts after the program" start_collector 8>&-
zmq_mapped() { grep -q 'libzmq' "/proc/$1/maps"; }
check "... the agent sees it and opens the control channel (libzmq mapped now)" \
    wait_for 20 zmq_mapped "$LATE"
adopted() { "$TBIN/tool_ctl" "$EP" status | grep -q "^proc\.$1\.state="; }
check "... and the collector adopts the program" wait_for 20 adopted "$LATE"
exec 8>&-
wait "$LATE"
check "... the program exits 0" eq "$?" 0
check "... with nothing on stderr" eq "$(lines "$T/late.err")" 0
check "... and d9 ps lists it exited" wait_for 20 ended "$LATE"
check "that collector stops cleanly" stop_collector

check "a scanning collector starts" start_collector

# absent ZMQ_ENV: run PROG under the shim with libzmq unloadable; TAG names the files
absent() {
    _tag=$1; shift
    env "$@" DIAL9_LOG=1 LD_PRELOAD="$PRELOAD" "$PROG" --seconds 0.3 \
        >"$T/$_tag.out" 2>"$T/$_tag.err" &
    _p=$!
    at_exit kill -9 "$_p"
    wait "$_p"
    echo "$?" >"$T/$_tag.rc"
    echo "$_p" >"$T/$_tag.pid"
}
# recorded TAG: the program exited 0, said once why, and the collector drained it
said_why() {
    [ "$(lines "$T/$1.err")" -eq 1 ] && grep -q 'libzmq.*without the control channel' "$T/$1.err" ||
        { cat "$T/$1.err"; return 1; }
}
drained() {
    _p=$(cat "$T/$1.pid")
    wait_for 20 ended "$_p" || { echo "pid $_p not exited in d9 ps"; return 1; }
    grep -q "\"pid\":$_p,.*\"records\":[1-9][0-9]*,\"lost\":0," "$T/ps.jsonl" ||
        { grep "\"pid\":$_p," "$T/ps.jsonl"; return 1; }
}

absent hook DIAL9_ZMQ_LIB="$T/missing/libzmq.so.5"
check "DIAL9_ZMQ_LIB missing: the program exits 0" eq "$(cat "$T/hook.rc")" 0
check "... and runs its loop" grep -q '^ticks=[1-9]' "$T/hook.out"
check "... DIAL9_LOG: one line says libzmq could not be loaded" said_why hook
check "... the collector drains its records by scanning, none lost" drained hook

Z=$(ldconfig -p | awk '/libzmq\.so\.5 .*x86-64|libzmq\.so\.5 /{ print $NF; exit }')
if [ "$(id -u)" -eq 0 ] && [ -n "$Z" ] && unshare -m true 2>/dev/null; then
    absent hidden unshare -m sh -c "mount --bind /dev/null '$Z' && exec \"\$0\" \"\$@\"" env
    check "libzmq hidden (bind mount): the program exits 0" eq "$(cat "$T/hidden.rc")" 0
    check "... and runs its loop" grep -q '^ticks=[1-9]' "$T/hidden.out"
    check "... DIAL9_LOG: one line says libzmq could not be loaded" said_why hidden
    check "... the collector drains its records by scanning, none lost" drained hidden
else
    echo "skipped: hiding libzmq needs root and unshare -m"
fi
check "the scanning collector stops cleanly" stop_collector

# libzmq present: a collector that scans only at start (--scan-ms at its
# maximum) learns of a program started later from its hello alone.
check "a collector that does not scan starts" start_collector --scan-ms 600000
mkfifo "$T/hold"
DIAL9_LOG=1 LD_PRELOAD=$PRELOAD "$TBIN/prog_uvmix" --hold <"$T/hold" >"$T/mix.out" 2>"$T/mix.err" &
MIX=$!
at_exit kill -9 "$MIX"
exec 7>"$T/hold"
check "with libzmq: the hello reaches the collector, which adopts the program" wait_for 20 adopted "$MIX"
exec 7>&-
wait "$MIX"
check "... the program exits 0" eq "$?" 0
check "... with nothing on stderr about libzmq or the control channel" \
    lacks 'libzmq|control channel' cat "$T/mix.err"
check "... and d9 ps lists it exited" wait_for 20 ended "$MIX"
check "the collector stops cleanly" stop_collector

d9_finish agent-nozmq
