#!/bin/sh
# test_rel_preload.sh — the reliability suites' ideas under the LD_PRELOAD
# shim with a real libuv program (prog_uvcrash: a repeating timer, no d9 in
# it):
#   - a crash inside a callback (SIGSEGV): the program still dies of it
#     (exit 139), the polls before it are stored, d9 ps says
#     crashed(SIGSEGV) and top-polls shows the poll the crash left open;
#   - kill -9 of the traced program: its polls are stored, it is crashed;
#   - kill -9 of the collector (twice) while the program runs, restarted on
#     the same store: no tick is lost (some may be stored twice, as the
#     kill-collector suite accepts) and the program is unaffected.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
PROG=$TBIN/prog_uvcrash
TICKS=200
start=$(date +%s)
state_of() {    # state_of PID: its state in d9 ps (text)
    $D9 ps 2>/dev/null | awk -v p="$1" '$1 == p { print $4 }'
}
is_state() { [ "$(state_of "$1")" = "$2" ]; }
ticks_of() { sed -n 's/^0*\([0-9]\)/\1/p' "$1"; }

check "collector starts" start_collector

# 1. SIGSEGV inside a callback
LD_PRELOAD=$PRELOAD "$PROG" --ticks $TICKS --crash --count-file "$T/crash.count" \
    >"$T/crash.out" 2>"$T/crash.err"
rc=$?
CP=$(sed -n 's/^pid=//p' "$T/crash.out")
check "the traced program still dies of its SIGSEGV (exit $rc)" test "$rc" -eq $((128 + 11))
check "d9 ps says crashed(SIGSEGV)" wait_for 20 is_state "$CP" "crashed(SIGSEGV)"
check "the $TICKS polls before the crash are stored" has_polls_at "$CP" "prog_uvcrash+0x[0-9a-f]* on_tick\"" $TICKS
check "exactly $TICKS of them" test "$(polls_at "$CP" "prog_uvcrash+0x[0-9a-f]* on_tick\"")" -eq $TICKS
# the crash came right after the poll started: it ends at the process's last
# record, so it is short; --location picks it among the ticks
$D9 top-polls --pid "$CP" --location crash_cb --format jsonl >"$T/top.jsonl" 2>&1
check "top-polls shows the poll the crash left open, in crash_cb" \
    grep -q '"location":"prog_uvcrash+0x[0-9a-f]* crash_cb".*"unfinished":true' "$T/top.jsonl"

# 2. kill -9 of the traced program
LD_PRELOAD=$PRELOAD "$PROG" --stop-file "$T/never" --count-file "$T/k.count" >"$T/k.out" 2>&1 &
KP=$!
at_exit kill -9 "$KP"
has_ticks() { [ "$(ticks_of "$1")" -ge "$2" ] 2>/dev/null; }
check "the traced program ticks" wait_for 20 has_ticks "$T/k.count" 100
kill -9 "$KP"
wait "$KP" 2>/dev/null
KT=$(ticks_of "$T/k.count")
check "kill -9: d9 ps says crashed" wait_for 20 is_state "$KP" "crashed"
check "kill -9: its $KT ticks are stored (the one in flight may be open)" \
    has_polls_at "$KP" "prog_uvcrash+0x[0-9a-f]* on_tick\"" "$KT"

# 3. kill -9 of the collector while the preloaded program runs
LD_PRELOAD=$PRELOAD "$PROG" --stop-file "$T/stop" --count-file "$T/c.count" >"$T/c.out" 2>"$T/c.err" &
RP=$!
at_exit kill -9 "$RP"
check "the program ticks under the collector" wait_for 20 has_ticks "$T/c.count" 100
for k in 1 2; do
    sleep 0.5
    kill -9 "$COLPID"
    wait "$COLPID" 2>/dev/null
    n=$(ticks_of "$T/c.count")
    check "collector kill $k: the program keeps ticking" wait_for 20 has_ticks "$T/c.count" $((n + 100))
    check "collector kill $k: a collector restarts on the same store" start_collector
done
touch "$T/stop"
wait "$RP"
rrc=$?
RT=$(ticks_of "$T/c.count")
check "the program exits 0 after $RT ticks" sh -c "[ $rrc -eq 0 ] && grep -q '^ticks=$RT rc=0' '$T/c.out'"
check "nothing on its stderr" test ! -s "$T/c.err"
check "the collector records its exit" wait_for 20 ended "$RP"
got=$(polls_at "$RP" "prog_uvcrash+0x[0-9a-f]* on_tick\"")
check "no tick lost across the collector kills ($got polls stored for $RT ticks)" test "${got:-0}" -ge "$RT"
check "no record counted lost" no_lost "$RP"
check "SIGTERM exits 0" stop_collector
echo "rel-preload: $((got - RT)) ticks stored twice after 2 collector kills, $(( $(date +%s) - start ))s"
d9_finish rel-preload
