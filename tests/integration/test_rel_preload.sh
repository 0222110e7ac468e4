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
#     kill-collector suite accepts) and the program is unaffected;
#   - a hostile same-uid process scribbles random bytes over a preloaded
#     program's live region for a second, then truncates it (the program
#     itself may die of that: whoever can write its region can kill it): the
#     collector keeps running, reports the damage, and a second preloaded
#     program beside it is stored whole, nothing lost;
#   - isolation: a preloaded program run as uid 65534 has a 0600 region of
#     its own uid, is adopted and stored under that uid, and cannot open a
#     root program's region.
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
check "kill -9: d9 ps says crashed(SIGKILL)" wait_for 20 is_state "$KP" "crashed(SIGKILL)"
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
# 4. a hostile scribbler on one preloaded program's region, another beside it
LD_PRELOAD=$PRELOAD "$PROG" --stop-file "$T/stop4" --count-file "$T/v.count" >"$T/v.out" 2>&1 &
VP=$!
at_exit kill -9 "$VP"
LD_PRELOAD=$PRELOAD "$PROG" --stop-file "$T/stop4" --count-file "$T/b.count" >"$T/b.out" 2>"$T/b.err" &
BP=$!
at_exit kill -9 "$BP"
# region_of UID_RE PID_RE: the name of the region in $SHM of that uid and pid
region_of() { ls "$SHM" | grep "^d9\.$1\.$2\." | head -n 1; }
has_region() { [ -n "$(region_of "$1" "$2")" ]; }
both_tick() { has_ticks "$1" "$3" && has_ticks "$2" "$3"; }
check "the victim's region exists" wait_for 20 has_region '[0-9]*' "$VP"
check "the programs tick under the collector" wait_for 20 both_tick "$T/v.count" "$T/b.count" 100
VREG=$SHM/$(region_of '[0-9]*' "$VP")
python3 - "$VREG" >"$T/scribble.out" 2>&1 <<'PY'
import os, random, sys, time
path = sys.argv[1]
seed = int.from_bytes(os.urandom(4), "little")
rnd = random.Random(seed)
fd = os.open(path, os.O_RDWR)
size = os.fstat(fd).st_size
nasty = [0, 1, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 1 << 63, size, size * 2]
writes, end = 0, time.time() + 1.0
while time.time() < end and writes < 200000:
    off = rnd.randrange(0, max(8, min(size, 1 << 20)) - 8) & ~7   # headers and the first rings
    v = rnd.choice(nasty) if rnd.random() < 0.3 else rnd.getrandbits(64)
    os.pwrite(fd, v.to_bytes(8, "little"), off)
    writes += 1
    if writes % 64 == 0:
        time.sleep(0.0005)
os.ftruncate(fd, 4096)
os.close(fd)
print("scribble seed=%d writes=%d size=%d" % (seed, writes, size))
PY
sed 's/^/    /' "$T/scribble.out"
sleep 1
answers() { "$BIN/d9" --endpoint "$EP" status --format json >"$T/st4.json" 2>/dev/null; }
check "the collector survives the scribbled region" kill -0 "$COLPID"
check "and answers d9 status" wait_for 10 answers
damage() {
    answers || return 1
    q=$(sed -n 's/.*"quarantined_rings":\([0-9]*\).*/\1/p' "$T/st4.json")
    [ "${q:-0}" -ge 1 ] || grep -qi 'quarantin' "$T/col.log"
}
check "the damage is reported (quarantined rings or a quarantined region in the log)" wait_for 10 damage
touch "$T/stop4"
wait "$BP"
brc=$?
wait "$VP" 2>/dev/null
BT=$(ticks_of "$T/b.count")
check "the program beside it exits 0 after $BT ticks" sh -c "[ $brc -eq 0 ] && grep -q '^ticks=$BT rc=0' '$T/b.out'"
check "the collector records its exit" wait_for 20 ended "$BP"
bgot=$(polls_at "$BP" "prog_uvcrash+0x[0-9a-f]* on_tick\"")
check "every tick of the program beside it is stored ($bgot polls for $BT ticks)" test "${bgot:-0}" -eq "$BT"
check "no record of it counted lost" no_lost "$BP"
# 5. isolation: a preloaded program of another uid
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
chmod 0755 "$T"
chmod 1777 "$SHM"
mkdir -p "$T/nob" && chmod 0777 "$T/nob"
LD_PRELOAD=$PRELOAD "$PROG" --stop-file "$T/stop5" --count-file "$T/r.count" >"$T/r.out" 2>&1 &
RP5=$!
at_exit kill -9 "$RP5"
$NOBODY env LD_PRELOAD="$PRELOAD" "$PROG" --stop-file "$T/stop5" --count-file "$T/nob/n.count" \
    >"$T/nob/n.out" 2>"$T/nob/n.err" &
NP=$!
at_exit kill -9 "$NP"
both_regions() { has_region 0 "$RP5" && has_region 65534 '[0-9]*'; }
check "both regions exist" wait_for 20 both_regions
NREG=$SHM/$(region_of 65534 '[0-9]*')
RREG=$SHM/$(region_of 0 "$RP5")
check "the uid 65534 program's region is its own, mode 0600" \
    test "$(stat -c '%u %a' "$NREG")" = "65534 600"
check "the root program's region is mode 0600" test "$(stat -c '%u %a' "$RREG")" = "0 600"
check "uid 65534 cannot read the root program's region" sh -c "! $NOBODY cat '$RREG' >/dev/null 2>&1"
check "uid 65534 cannot write it" sh -c "! $NOBODY sh -c 'printf x >>\"$RREG\"' 2>/dev/null"
check "both programs tick" wait_for 20 both_tick "$T/r.count" "$T/nob/n.count" 50
touch "$T/stop5"
wait "$RP5"
wait "$NP"
nrc=$?
NT=$(ticks_of "$T/nob/n.count")
check "the uid 65534 program exits 0 after $NT ticks" sh -c "[ $nrc -eq 0 ] && grep -q '^ticks=$NT rc=0' '$T/nob/n.out'"
NPID=$(sed -n 's/^pid=//p' "$T/nob/n.out")
[ -n "$NPID" ] || NPID=$NP
check "the collector records its exit" wait_for 20 ended "$NPID"
check "it is stored under uid 65534" grep -q "\"pid\":$NPID,.*\"uid\":65534" "$T/ps.jsonl"
ngot=$(polls_at "$NPID" "prog_uvcrash+0x[0-9a-f]* on_tick\"")
check "every tick of it is stored ($ngot polls for $NT ticks)" test "${ngot:-0}" -eq "$NT"
check "SIGTERM exits 0" stop_collector
echo "rel-preload: $((got - RT)) ticks stored twice after 2 collector kills, $(( $(date +%s) - start ))s"
d9_finish rel-preload
