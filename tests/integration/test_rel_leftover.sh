#!/bin/sh
# test_rel_leftover.sh — regions of short-lived traced processes do not
# pile up in the shm directory (docs/collector.md, "Region files"):
#
#   1. REL_SHORT_N (default 200; `make stress` runs 1000) short traced processes (prog_rel_workload,
#      one thread, 5 events, exit 0) with no collector: each removes its own
#      region at exit; the directory ends empty.
#   2. Killed ones leave theirs; past DIAL9_SHM_CAP_MB a new process runs
#      untraced with one line on stderr and creates nothing.
#   3. A collector started then drains the killed ones (crashed(SIGKILL)) and
#      removes them; a region of a gone process it cannot adopt (its pid now
#      runs another process) is removed once older than --reclaim-age, a
#      young one is not.
#   4. The same REL_SHORT_N short processes with the collector running: every
#      region is adopted, drained and removed; every event is in the store.
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
d9_setup
rel_init
N=${REL_SHORT_N:-200}
EVENTS=5
JOBS=4
start=$(date +%s)

# run_short N OUT: N short traced processes, JOBS at a time, bounded in time;
# OUT gets their "done" lines
run_short() {
    seq "$1" | timeout 180 xargs -P "$JOBS" -I{} \
        "$TBIN/prog_rel_workload" --threads 1 --events $EVENTS >"$2" 2>"$2.err"
}
regions() { find "$SHM" -name 'd9.*' | wc -l; }
traced_ok() { [ "$(grep -c 'traced=1 threads=1 emitted=5 ' "$1")" -eq "$2" ]; }

# 1. no collector: nothing answers at $EP
t0=$(date +%s)
run_short "$N" "$T/short1"
echo "    ($N short processes without a collector: $(( $(date +%s) - t0 )) s)"
check "$N short processes without a collector exit 0, traced" traced_ok "$T/short1" "$N"
check "no region is left behind ($(regions) found)" test "$(regions)" -eq 0
check "no stderr line from them" test ! -s "$T/short1.err"

# 2. killed processes leave their regions; the cap stops new ones
for i in 1 2 3; do
    rel_bg "$TBIN/prog_rel_workload" --threads 1 --events $EVENTS --exit hang \
        --done-file "$T/hang$i.done"
    eval "hang$i=$BGPID"
done
check "three hanging workloads are ready" wait_for 20 sh -c "[ -s '$T/hang1.done' ] && [ -s '$T/hang2.done' ] && [ -s '$T/hang3.done' ]"
kill -9 "$hang1" "$hang2" "$hang3"
wait "$hang1" "$hang2" "$hang3" 2>/dev/null
check "killed processes leave their 3 regions ($(regions))" test "$(regions)" -eq 3
used_kb=$(du -sk "$SHM" | cut -f1)
DIAL9_SHM_CAP_MB=1 "$TBIN/prog_rel_workload" --threads 1 --events $EVENTS >"$T/cap.out" 2>"$T/cap.err"
caprc=$?
check "past DIAL9_SHM_CAP_MB=1 ($used_kb KiB used) the program runs untraced, exit 0" \
    sh -c "[ $caprc -eq 0 ] && grep -q 'traced=0' '$T/cap.out'"
check "and says so in one stderr line: $(head -n 1 "$T/cap.err")" \
    sh -c "[ \$(wc -l <'$T/cap.err') -eq 1 ] && grep -q '^d9: 3 region(s) in .*DIAL9_SHM_CAP_MB=1; tracing disabled' '$T/cap.err'"
check "it created no region" test "$(regions)" -eq 3
"$TBIN/prog_rel_workload" --threads 1 --events $EVENTS >"$T/nocap.out" 2>&1
check "under the default cap the same program is traced" grep -q 'traced=1' "$T/nocap.out"
check "and leaves nothing behind" test "$(regions)" -eq 3

# 3. a collector drains the dead ones and reclaims what it cannot adopt
uid=$(id -u)
# the pid of a running process under another start time: never adoptable
sleep 300 &
sleeper=$!
_rel_pids="$_rel_pids $sleeper"
old=$SHM/d9.$uid.$sleeper.1
young=$SHM/d9.$uid.$sleeper.2
: >"$old"
: >"$young"
touch -d '2 hours ago' "$old"
check "collector starts (--reclaim-age 3600)" rel_start_collector --reclaim-age 3600
check "the killed processes' regions are drained and removed" wait_for 20 sh -c "[ \$(find '$SHM' -name 'd9.*.*.*' ! -name 'd9.$uid.$sleeper.*' | wc -l) -eq 0 ]"
check "their processes are in the store as crashed" \
    sh -c "[ \$('$BIN/d9' --store '$STORE' ps 2>/dev/null | grep -c ' crashed ') -eq 3 ]"
check "a gone process's region older than --reclaim-age is removed" wait_for 10 test ! -e "$old"
check "a young one stays" test -e "$young"
rm -f "$young"

# 4. with the collector: everything drained, nothing left
t0=$(date +%s)
run_short "$N" "$T/short2"
echo "    ($N short processes with a collector: $(( $(date +%s) - t0 )) s)"
check "$N short processes with a collector exit 0, traced" traced_ok "$T/short2" "$N"
check "the collector drains and removes every region" wait_for 60 rel_regions_gone
records() {
    "$BIN/d9" --store "$STORE" sql "select count(*) from rel_seq" 2>/dev/null | tail -n 1 | tr -d ' '
}
all_records() { [ "$(records)" = "$1" ]; }
# the 3 killed ones and the N short ones (the one run under the default cap
# had no collector: its region went with it)
want=$(( (N + 3) * EVENTS ))
check "every event is in the store" wait_for 20 all_records "$want"
check "the store holds $want events ($(records))" all_records "$want"
rel_stop "$CPID"
echo "rel-leftover: $N + $N short processes in $(( $(date +%s) - start ))s"
d9_finish rel-leftover
