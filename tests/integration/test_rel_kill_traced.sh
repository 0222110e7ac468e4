#!/bin/sh
# test_rel_kill_traced.sh — kill -9 of a traced process at a random point
# loses no committed record and counts every loss exactly.
#
#   REL_TRIALS=N (default 10; `make stress` runs 60) BUILD=... sh tests/integration/test_rel_kill_traced.sh
#
# Per trial: prog_rel_workload with random threads (1..4), ring size (4 KiB,
# which overflows constantly, or 64 KiB / 1 MiB) and pacing is killed with
# SIGKILL after a random delay (0..800 ms; every fourth trial 0..5 ms, which
# lands while the agent is still creating its region: the collector must
# remove a region that never became READY once its process is gone).
# Once the collector has finished the dead process (its region is gone),
# tool_rel_seqcheck reads the segments and checks, per thread, that ring
# sequence numbers have gaps only where the lost counts account for them,
# and that seen + lost == the events the workload had offered (from its
# kill-proof progress file; +1 for the emit in flight). One check per trial.
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
d9_setup
rel_init
TRIALS=${REL_TRIALS:-10}
start=$(date +%s)

check "collector starts" rel_start_collector

records=0
lost=0
trial=1
while [ "$trial" -le "$TRIALS" ]; do
    threads=$(rel_rand 1 4)
    case $(rel_rand 0 2) in 0) kb=4 ;; 1) kb=64 ;; *) kb=1024 ;; esac
    case $(rel_rand 0 1) in 0) pace="--pace-us 200 --batch 50" ;; *) pace="" ;; esac
    # every fourth kill lands within 5 ms: while the agent lays its region out
    if [ $((trial % 4)) -eq 0 ]; then delay_ms=$(rel_rand 0 5); else delay_ms=$(rel_rand 0 800); fi
    prog=$T/progress.$trial
    DIAL9_RING_KB=$kb rel_bg "$TBIN/prog_rel_workload" --threads "$threads" --progress "$prog" $pace
    wpid=$BGPID
    sleep "$(awk -v ms="$delay_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
    kill -9 "$wpid" 2>/dev/null
    wait "$wpid" 2>/dev/null
    desc="trial $trial: threads=$threads ring_kb=$kb pace=${pace:-none} kill_after=${delay_ms}ms"
    # The collector drains what is left, records the crash and removes the region.
    if ! wait_for 30 rel_regions_gone; then
        check "$desc: collector finished the killed process" false
    elif [ ! -s "$prog" ] || ! "$TBIN/tool_rel_seqcheck" --progress "$prog" >/dev/null 2>&1; then
        # killed before the progress file was set up: nothing was offered
        check "$desc: killed during start-up, collector unharmed" "$TBIN/tool_ctl" "$EP" status
    else
        "$TBIN/tool_rel_seqcheck" "$STORE" --progress "$prog" >"$T/seq.$trial" 2>&1
        check "$desc: $(grep -o 'records=[0-9]* .*lost=[0-9]*' "$T/seq.$trial")" \
            "$TBIN/tool_rel_seqcheck" "$STORE" --progress "$prog"
        r=$(sed -n 's/.* records=\([0-9]*\) .*/\1/p' "$T/seq.$trial")
        l=$(sed -n 's/.* lost=\([0-9]*\) .*/\1/p' "$T/seq.$trial")
        records=$((records + ${r:-0}))
        lost=$((lost + ${l:-0}))
    fi
    trial=$((trial + 1))
done

check "collector still running after $TRIALS kills" kill -0 "$CPID"
check "collector still answers status" "$TBIN/tool_ctl" "$EP" status
echo "kill-traced: $TRIALS trials, $records records and $lost losses checked, $(( $(date +%s) - start ))s"
d9_finish rel-kill-traced
