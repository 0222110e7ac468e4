#!/bin/sh
# test_rel_ship_partial.sh — an S3 server killed during a PUT may keep an
# empty object under the key (s3rver does: the stress run of
# test_rel_ship_crash.sh once left a 0-byte manifest, and `d9 pull` skipped
# that segment as corrupt). A retry must check that what is there is whole
# (size and MD5, as for segments), not only that something is there.
#
# A collector ships a short workload; the bucket's manifests are then cut to
# 0 bytes on the server's disk (what a kill during their PUT leaves), and
# the index says each segment's upload was interrupted (pending, 1 attempt);
# a collector started again with --ship must put whole manifests back, and
# `d9 pull` gets every record (tool_rel_seqcheck), with no corrupt manifest.
. tests/integration/lib.sh
. tests/integration/rel_lib.sh
. tests/integration/lib_s3.sh
d9_setup
rel_init
URL=s3://d9-partial/ship
if ! s3_start d9-partial; then
    check "s3rver starts" false
    d9_finish rel-ship-partial; exit
fi
all_shipped() {
    n=$(sqlite3 "file:$STORE/index.sqlite?mode=ro" \
        "SELECT count(*) FROM segments s LEFT JOIN uploads u ON u.segment_id = s.id
         WHERE u.state IS NULL OR u.state != 'shipped'" 2>/dev/null)
    [ -n "$n" ] && [ "$n" -eq 0 ]
}
ship() { rel_start_collector --segment-seconds 1 --ship $URL --s3-endpoint "$S3_ENDPOINT"; }

check "collector starts with --ship" ship
check "a workload runs to its end" "$TBIN/prog_rel_workload" --threads 2 --events 3000 \
    --pace-us 1000 --batch 50 --progress "$T/progress"
check "the collector finishes it" wait_for 30 rel_regions_gone
check "every segment is shipped" wait_for 60 all_shipped
rel_stop "$CPID"
find "$S3_DATA" -name '*.manifest.json._S3rver_object' >"$T/manifests"
check "the bucket holds manifests ($(wc -l <"$T/manifests"))" test -s "$T/manifests"
# what a server killed during each manifest's PUT leaves: an empty object
while read -r m; do
    : >"$m"
    printf 'd41d8cd98f00b204e9800998ecf8427e' >"$m.md5"
done <"$T/manifests"
check "the index says each upload was interrupted" sqlite3 "$STORE/index.sqlite" \
    "UPDATE uploads SET state = 'pending', attempts = 1, next_ns = 0"
check "a collector with --ship starts again" ship
check "it ships every segment again" wait_for 60 all_shipped
rel_stop "$CPID"
check "every manifest in the bucket is whole again" \
    sh -c "! while read -r m; do test -s \"\$m\" || echo \"empty: \$m\"; done <'$T/manifests' | grep ."
check "d9 pull fetches the bucket" sh -c "'$BIN/d9' pull --s3-endpoint '$S3_ENDPOINT' $URL '$T/pulled' >'$T/pull.out' 2>&1"
check "no segment skipped as corrupt" lacks "corrupt" cat "$T/pull.out"
"$TBIN/tool_rel_seqcheck" "$T/pulled" --progress "$T/progress" >"$T/seq" 2>&1
check "pulled store: every record once: $(tail -n 1 "$T/seq")" \
    sh -c "! grep '^FAIL' '$T/seq' && '$TBIN/tool_rel_seqcheck' '$T/pulled' --progress '$T/progress' >/dev/null"
d9_finish rel-ship-partial
