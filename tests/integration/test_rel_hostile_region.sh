#!/bin/sh
# test_rel_hostile_region.sh — a traced process that scribbles over its own
# LIVE region while a sanitized collector drains it: the collector does not
# crash, hang or read out of bounds, quarantines and reports the corruption,
# and another process's data keeps flowing, exactly accounted.
#
#   REL_HOSTILE=N (rounds, default 3; `make stress` runs 20) BUILD=... sh tests/integration/test_rel_hostile_region.sh
#
# The collector is d9collectd built with ASan/UBSan (make rel-asan, built
# here if missing): any out-of-bounds read or undefined behaviour aborts it.
# Each round runs prog_rel_scribble (random seed, printed) for 2 s: header,
# ring headers and cursors, record bytes, metadata log, then ftruncate.
# Meanwhile prog_rel_workload runs untouched.
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
d9_setup
rel_init
ROUNDS=${REL_HOSTILE:-3}
start=$(date +%s)
ASAN_BIN=$BUILD/rel-asan/d9collectd

build_asan() {
    make --no-print-directory -s BUILD="$BUILD" rel-asan >"$T/asan-build.log" 2>&1 ||
        { tail -n 20 "$T/asan-build.log"; return 1; }
    test -x "$ASAN_BIN"
}
no_sanitizer_report() {
    ! grep -E 'AddressSanitizer|runtime error|LeakSanitizer|SUMMARY:' "$T/col.log"
}
answers_status() { timeout 10 "$TBIN/tool_ctl" "$EP" status >/dev/null; }

check "sanitized collector builds (make rel-asan)" build_asan
REL_COLLECTD=$(cd "$(dirname "$ASAN_BIN")" && pwd)/d9collectd
COLLECTD=$REL_COLLECTD
# SIGBUS from a truncated region is the collector's own business (its guard)
export ASAN_OPTIONS=handle_sigbus=0:allow_user_segv_handler=1:detect_leaks=0:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
check "sanitized collector starts" rel_start_collector

rel_bg "$TBIN/prog_rel_workload" --threads 2 --progress "$T/progress" --pace-us 2000 --batch 20
wpid=$BGPID

round=1
while [ "$round" -le "$ROUNDS" ]; do
    seed=$(rel_rand 1 2000000000)
    "$TBIN/prog_rel_scribble" --dir "$SHM" --seconds 2 --seed "$seed" --linger-ms 500 \
        >"$T/scribble.$round" 2>&1 &
    spid=$!
    _rel_pids="$_rel_pids $spid"
    wait "$spid"
    desc="round $round (seed $seed)"
    check "$desc: collector survives the scribbling and the truncation" kill -0 "$CPID"
    check "$desc: collector answers status (no hang)" answers_status
    check "$desc: scribbled region is finished and removed" wait_for 20 \
        sh -c "! ls '$SHM'/d9.*.$spid.* >/dev/null 2>&1"
    round=$((round + 1))
done

"$TBIN/tool_ctl" "$EP" status >"$T/status" 2>&1
q=$(sed -n 's/^quarantined_rings=//p' "$T/status")
check "corrupt rings are quarantined and counted in the status reply (quarantined_rings=$q)" \
    test "${q:-0}" -gt 0
check "the quarantine is in the collector log" grep -q 'quarantined' "$T/col.log"
check "d9 status reports the quarantined rings" sh -c \
    "'$BIN/d9' --endpoint '$EP' status | grep -E '[1-9][0-9]* quarantined rings'"
check "other process still traced while the hostile ones ran" kill -0 "$wpid"
kill -9 "$wpid"
wait "$wpid" 2>/dev/null
check "collector finishes the other process" wait_for 30 rel_regions_gone
"$TBIN/tool_rel_seqcheck" "$STORE" --progress "$T/progress" >"$T/seq" 2>&1
check "other process: no record missing, every loss counted: $(tail -n 1 "$T/seq")" \
    "$TBIN/tool_rel_seqcheck" "$STORE" --progress "$T/progress"
rel_stop "$CPID"
check "no sanitizer report in the collector log" no_sanitizer_report
echo "hostile-region: $ROUNDS rounds, quarantined_rings=$q, $(( $(date +%s) - start ))s"
d9_finish rel-hostile-region
