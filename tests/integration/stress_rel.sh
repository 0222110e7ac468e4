#!/bin/sh
# stress_rel.sh — the long reliability loops behind `make stress`.
#
#   BUILD=... STRESS_TRIALS=60 STRESS_HOSTILE=20 STRESS_DISKFULL=5 sh tests/integration/stress_rel.sh
#
# Runs the reliability tests with many more trials than `make test`:
# kill -9 of traced processes and of the collector (STRESS_TRIALS each),
# hostile-region rounds (STRESS_HOSTILE) and repeated disk-full episodes
# (STRESS_DISKFULL). Prints each suite's result and a closing line
# "stress: N passed, N failed" (the sum of all checks).
BUILD=${BUILD:-build}
export BUILD
TRIALS=${STRESS_TRIALS:-60}
HOSTILE=${STRESS_HOSTILE:-20}
DISKFULL=${STRESS_DISKFULL:-5}
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

suite() {   # suite NAME ENV... -- script
    name=$1; shift
    t0=$(date +%s)
    env "$@" >"$log" 2>&1
    rc=$?
    grep -E '^FAIL|^    \|' "$log" | head -n 60
    tail -n 2 "$log"
    line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    if [ -z "$line" ]; then
        echo "$name: crashed or did not report (exit $rc)"
        f=1; p=0
    fi
    passed=$((passed + p)); failed=$((failed + f))
    echo "== $name: ${p} passed, ${f} failed in $(( $(date +%s) - t0 ))s"
}

suite kill-traced REL_TRIALS="$TRIALS" sh tests/integration/test_rel_kill_traced.sh
suite kill-collector REL_TRIALS="$TRIALS" sh tests/integration/test_rel_kill_collector.sh
suite ship-crash REL_S3_KILLS=12 REL_COL_KILLS=8 sh tests/integration/test_rel_ship_crash.sh
suite "ship-crash (counters)" REL_S3_KILLS=6 REL_COL_KILLS=3 REL_COUNTERS=1 REL_SEG_ARGS="--segment-seconds 60" \
    sh tests/integration/test_rel_ship_crash.sh
suite leftover REL_SHORT_N=1000 sh tests/integration/test_rel_leftover.sh
suite hostile-region REL_HOSTILE="$HOSTILE" sh tests/integration/test_rel_hostile_region.sh
i=1
while [ $i -le "$DISKFULL" ]; do
    suite "disk-full #$i" sh tests/integration/test_rel_disk_full.sh
    i=$((i + 1))
done
echo "stress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
