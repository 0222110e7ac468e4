#!/bin/sh
# test_rel_ship_crash.sh — kill -9 of the S3 server and of a shipping
# collector: every record reaches the local store and the bucket exactly
# once, in time order, and persisted + lost == written.
#
#   REL_S3_KILLS=N REL_COL_KILLS=M (defaults 4 and 3; `make stress` runs 12
#   and 8) REL_COUNTERS=1 BUILD=... sh tests/integration/test_rel_ship_crash.sh
#
# REL_COUNTERS=1 (`make stress` runs both): each workload event is followed
# by a queue depth record in the same ring (a program writing counters), and
# the check expects two ring records per event.
#
# A paced prog_rel_workload (2 threads) runs through the whole test against a
# collector with --ship to a local s3rver and 1 s segments. Kills alternate:
# the S3 server (kill -9, restarted on the same port and data after a pause,
# so uploads fail mid-request and are retried) and the collector (kill -9
# after a random 0.3..1.5 s, often while an upload or a seal is in flight,
# restarted on the same store; every second server kill the collector is
# killed too before the server comes back). Then the workload stops, the collector
# finishes it and ships the rest, and tool_rel_seqcheck reads, record by
# record, the local store and a store made by `d9 pull` from the bucket:
# no duplicate, no gap not counted lost, no time going backwards in a
# thread's sequence, seen + lost == offered.
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
. tests/integration/lib_s3.sh
d9_setup
rel_init
S3_KILLS=${REL_S3_KILLS:-4}
COL_KILLS=${REL_COL_KILLS:-3}
URL=s3://d9-rel/ship
start=$(date +%s)

if ! s3_start d9-rel; then
    check "s3rver starts" false
    d9_finish rel-ship-crash; exit
fi
ship() { rel_start_collector ${REL_SEG_ARGS:---segment-seconds 1} --ship $URL --s3-endpoint "$S3_ENDPOINT"; }
pause() { sleep "$(awk -v ms="$(rel_rand "$1" "$2")" 'BEGIN { printf "%.3f", ms / 1000 }')"; }
# segments not shipped yet, read again at every call
unshipped() {
    sqlite3 "file:$STORE/index.sqlite?mode=ro" \
        "SELECT count(*) FROM segments s LEFT JOIN uploads u ON u.segment_id = s.id
         WHERE u.state IS NULL OR u.state != 'shipped'" 2>/dev/null
}
all_shipped() { n=$(unshipped); [ -n "$n" ] && [ "$n" -eq 0 ]; }

check "collector starts with --ship" ship
COUNTERS=${REL_COUNTERS:-0}
SEQ_ARGS="--progress $T/progress --per-event $((COUNTERS + 1))"
rel_bg "$TBIN/prog_rel_workload" --threads 2 --progress "$T/progress" ${REL_PACE:---pace-us 1000 --batch 20} \
    --counters "$COUNTERS" \
    --stop-file "$T/stop" --done-file "$T/done"
wpid=$BGPID
check "workload starts" wait_for 10 test -s "$T/progress"

# kill_collector: kill -9 the collector, restart it on the same store
kill_collector() {
    kill -9 "$CPID"
    wait "$CPID" 2>/dev/null
    colk=$((colk + 1))
    check "collector kill $colk: workload still running" kill -0 "$wpid"
    check "collector kill $colk: collector restarts on the same store" ship
}
s3k=0
colk=0
while [ $s3k -lt "$S3_KILLS" ] || [ $colk -lt "$COL_KILLS" ]; do
    if [ $s3k -lt "$S3_KILLS" ]; then
        pause 300 1500
        kill -9 "$S3_PID" 2>/dev/null
        wait "$S3_PID" 2>/dev/null
        S3_PID=""
        s3k=$((s3k + 1))
        if [ $((s3k % 2)) -eq 0 ] && [ $colk -lt "$COL_KILLS" ]; then
            # the collector dies too while the server is down (uploads failing)
            pause 200 1200
            kill_collector
        fi
        pause 200 1200
        check "s3 kill $s3k: s3rver restarts on the same data" s3_start d9-rel
    fi
    if [ $colk -lt "$COL_KILLS" ]; then
        pause 300 1500
        kill_collector
    fi
done

touch "$T/stop"
wait "$wpid"
wrc=$?
check "workload finishes normally (exit $wrc)" sh -c "[ $wrc -eq 0 ] && grep -q 'traced=1' '$T/done'"
check "collector finishes the workload" wait_for 30 rel_regions_gone
check "every segment is shipped" wait_for 120 all_shipped
rel_stop "$CPID"
check "d9 fsck clean" "$BIN/d9" --store "$STORE" fsck

"$TBIN/tool_rel_seqcheck" "$STORE" $SEQ_ARGS >"$T/seq.local" 2>&1
check "local store: exactly once, in time order, nothing missing: $(tail -n 1 "$T/seq.local")" \
    sh -c "! grep '^FAIL' '$T/seq.local' && '$TBIN/tool_rel_seqcheck' '$STORE' $SEQ_ARGS >/dev/null"
check "d9 pull fetches the bucket" "$BIN/d9" pull --quiet --s3-endpoint "$S3_ENDPOINT" $URL "$T/pulled"
"$TBIN/tool_rel_seqcheck" "$T/pulled" $SEQ_ARGS >"$T/seq.pulled" 2>&1
check "pulled store: exactly once, in time order, nothing missing: $(tail -n 1 "$T/seq.pulled")" \
    sh -c "! grep '^FAIL' '$T/seq.pulled' && '$TBIN/tool_rel_seqcheck' '$T/pulled' $SEQ_ARGS >/dev/null"
grep '^FAIL' "$T/seq.local" "$T/seq.pulled" | head -n 8
echo "rel-ship-crash: $S3_KILLS s3 kills, $COL_KILLS collector kills, $(sed -n 's/.* records=\([0-9]*\) .*/\1/p' "$T/seq.local") records, $(sed -n 's/.* dups=\([0-9]*\) .*/\1/p' "$T/seq.local") duplicates, $(( $(date +%s) - start ))s"
d9_finish rel-ship-crash
