#!/bin/sh
# test_rel_crash_points.sh — the collector killed at exact steps of its work
# (crash points, collector/daemon/crashpt.h: D9_CRASH_AT=NAME:N) while it
# drains and ships a program writing counters: after a restart on the same
# store, every record is in the local store and in a store pulled from the
# bucket exactly once, no thread's time goes back, and persisted + lost ==
# written (tool_rel_seqcheck, record by record).
#
# Points: records written to the segment file but their ring tails not
# published (the next collector finds them in the salvaged temp file AND
# still in the ring); a segment sealed with such records (size rotation,
# --segment-mb 1); sealed but not indexed; indexed but the upload threads
# not told; uploaded but not recorded as shipped.
#
#   REL_CRASH_POINTS="name:hit ..." (default: each point below) BUILD=...
#   sh tests/integration/test_rel_crash_points.sh
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
. tests/integration/lib_s3.sh
d9_setup
rel_init
POINTS=${REL_CRASH_POINTS:-"flushed-unpublished:5 sealed-unpublished:1 renamed-unindexed:2 indexed-unkicked:2 uploaded-unrecorded:2"}

if ! s3_start d9-crash; then
    check "s3rver starts" false
    d9_finish rel-crash-points; exit
fi

# segments of $STORE not shipped yet, read again at every call
all_shipped() {
    n=$(sqlite3 "file:$STORE/index.sqlite?mode=ro" \
        "SELECT count(*) FROM segments s LEFT JOIN uploads u ON u.segment_id = s.id
         WHERE u.state IS NULL OR u.state != 'shipped'" 2>/dev/null)
    [ -n "$n" ] && [ "$n" -eq 0 ]
}
# the workload completed more events than $1 (read again at every call)
progressed() {
    n=$("$TBIN/tool_rel_seqcheck" --progress "$D/progress" | sed -n 's/^total=//p')
    [ -n "$n" ] && [ "$n" -gt "$1" ]
}
# the armed collector $1 died of SIGKILL; killed here if it never reached its point
exited_137() {
    grep -q "crash point $pt reached" "$T/col.log" || kill -9 "$1"
    wait "$1"
    [ $? -eq 137 ] && grep -q "crash point $pt reached" "$T/col.log"
}

for spec in $POINTS; do
    pt=${spec%%:*}
    hit=${spec#*:}
    D=$T/$pt
    mkdir -p "$D/shm"
    SHM=$D/shm STORE=$D/store EP=ipc://$D/c.sock
    DIAL9_SHM_DIR=$SHM DIAL9_COLLECTOR=$EP
    export SHM STORE EP DIAL9_SHM_DIR DIAL9_COLLECTOR
    URL=s3://d9-crash/$pt
    seg=--segment-seconds\ 1
    [ "$pt" = sealed-unpublished ] && seg="--segment-mb 1"
    # shellcheck disable=SC2086
    D9_CRASH_AT=$pt:$hit
    export D9_CRASH_AT
    rel_start_collector $seg --ship $URL --s3-endpoint "$S3_ENDPOINT"
    armed=$CPID
    unset D9_CRASH_AT
    rel_bg "$TBIN/prog_rel_workload" --threads 2 --progress "$D/progress" --pace-us 1000 \
        --batch 20 --counters 1 --stop-file "$D/stop" --done-file "$D/done"
    wpid=$BGPID
    check "$pt: workload starts" wait_for 10 test -s "$D/progress"
    check "$pt: the collector reaches crash point $pt (hit $hit)" \
        wait_for 90 grep -q "crash point $pt reached" "$T/col.log"
    check "$pt: and is killed there (SIGKILL)" exited_137 "$armed"
    # shellcheck disable=SC2086
    check "$pt: a collector restarts on the same store" \
        rel_start_collector $seg --ship $URL --s3-endpoint "$S3_ENDPOINT"
    case $pt in *-unpublished)
        # the point's records are in the store and still in the ring
        check "$pt: the restarted collector skips the records it finds stored" \
            wait_for 30 grep -q "are in the store already" "$T/col.log" ;;
    esac
    before=$("$TBIN/tool_rel_seqcheck" --progress "$D/progress" | sed -n 's/^total=//p')
    check "$pt: the workload goes on" wait_for 30 progressed "$before"
    touch "$D/stop"
    wait "$wpid"
    wrc=$?
    check "$pt: workload finishes normally (exit $wrc)" sh -c "[ $wrc -eq 0 ] && grep -q 'traced=1' '$D/done'"
    check "$pt: the collector finishes the workload" wait_for 30 rel_regions_gone
    check "$pt: every segment is shipped" wait_for 120 all_shipped
    rel_stop "$CPID"
    check "$pt: d9 fsck clean" "$BIN/d9" --store "$STORE" fsck
    ARGS="--progress $D/progress --per-event 2"
    "$TBIN/tool_rel_seqcheck" "$STORE" $ARGS >"$D/seq.local" 2>&1
    check "$pt: local store: exactly once, in time order, nothing missing: $(tail -n 1 "$D/seq.local")" \
        sh -c "! grep '^FAIL' '$D/seq.local' && '$TBIN/tool_rel_seqcheck' '$STORE' $ARGS >/dev/null"
    check "$pt: d9 pull fetches the bucket" "$BIN/d9" pull --quiet --s3-endpoint "$S3_ENDPOINT" "$URL" "$D/pulled"
    "$TBIN/tool_rel_seqcheck" "$D/pulled" $ARGS >"$D/seq.pulled" 2>&1
    check "$pt: pulled store: exactly once, in time order, nothing missing: $(tail -n 1 "$D/seq.pulled")" \
        sh -c "! grep '^FAIL' '$D/seq.pulled' && '$TBIN/tool_rel_seqcheck' '$D/pulled' $ARGS >/dev/null"
    grep '^FAIL' "$D/seq.local" "$D/seq.pulled" | head -n 8
done
d9_finish rel-crash-points
