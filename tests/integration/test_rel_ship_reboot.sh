#!/bin/sh
# test_rel_ship_reboot.sh — a segment whose upload failed before a reboot is
# retried when shipping starts again, not when the new uptime passes the old
# one: the index keeps each segment's next try in CLOCK_MONOTONIC, which
# starts again at every boot (a stalled ship retry, issue #30).
#
# A collector without --ship stores a short workload; the index then says
# every segment failed 5 times and is next due at a CLOCK_MONOTONIC time far
# past this boot's (as a long previous uptime leaves it); a collector with
# --ship to a local s3rver must ship them all, and `d9 pull` gets every
# record back (tool_rel_seqcheck).
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
. tests/integration/lib_s3.sh
d9_setup
rel_init
URL=s3://d9-reboot/ship
if ! s3_start d9-reboot; then
    check "s3rver starts" false
    d9_finish rel-ship-reboot; exit
fi
q() { sqlite3 "file:$STORE/index.sqlite?mode=ro" "$1" 2>/dev/null; }
all_shipped() {
    n=$(q "SELECT count(*) FROM segments s LEFT JOIN uploads u ON u.segment_id = s.id
           WHERE u.state IS NULL OR u.state != 'shipped'")
    [ -n "$n" ] && [ "$n" -eq 0 ]
}

check "collector starts (no shipping)" rel_start_collector --segment-seconds 1
check "a workload runs to its end" "$TBIN/prog_rel_workload" --threads 2 --events 3000 \
    --pace-us 1000 --batch 50 --progress "$T/progress"
check "the collector finishes it" wait_for 30 rel_regions_gone
rel_stop "$CPID"
nseg=$(q "SELECT count(*) FROM segments")
check "segments were written ($nseg)" test "${nseg:-0}" -ge 1
# what a collector that failed to ship before a reboot leaves in the index
check "the index says: failed before a reboot, next try far in this boot's future" \
    sqlite3 "$STORE/index.sqlite" "INSERT OR REPLACE INTO uploads(segment_id, state, attempts,
        last_error, next_ns, updated_ns) SELECT id, 'pending', 5, 'connection refused',
        9000000000000000000, 0 FROM segments"
check "a collector with --ship starts on the store" \
    rel_start_collector --segment-seconds 1 --ship $URL --s3-endpoint "$S3_ENDPOINT"
check "it ships every segment now" wait_for 60 all_shipped
check "and says why" grep -q "segments had a next try further off" "$T/col.log"
rel_stop "$CPID"
check "d9 pull fetches the bucket" "$BIN/d9" pull --quiet --s3-endpoint "$S3_ENDPOINT" $URL "$T/pulled"
"$TBIN/tool_rel_seqcheck" "$T/pulled" --progress "$T/progress" >"$T/seq" 2>&1
check "pulled store: every record once: $(tail -n 1 "$T/seq")" \
    sh -c "! grep '^FAIL' '$T/seq' && '$TBIN/tool_rel_seqcheck' '$T/pulled' --progress '$T/progress' >/dev/null"
d9_finish rel-ship-reboot
