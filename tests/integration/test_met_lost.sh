#!/bin/sh
# test_met_lost.sh — d9collectd --metrics: d9_lost_records_total{cause} is a
# counter for every cause, read live from the rings, through the real
# collector and a traced program (prog_trigseq) that drops records of each
# ring cause while it runs:
#   - type mismatches and too-large events show under their own cause as
#     soon as a drain pass has seen them, before any segment is sealed (not
#     under ring_full first);
#   - no cause's value ever goes down between scrapes: across forced seals
#     (d9 flush), a flood that fills the ring, and a collector restart while
#     the program runs (the rings' counters are the process's, not the run's);
#   - once the program ended and its last segment is sealed, each cause
#     equals what d9 ps reports from the store.
# No timing thresholds: the program waits on files the test creates once the
# scrapes saw each step.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }

mport() { sed -n 's|.*metrics: http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/col.log" | tail -n 1; }
check "collector starts" start_collector --metrics 127.0.0.1:0
MPORT=$(mport)
check "the log names the metrics port" test -n "$MPORT"

# a 4 KiB ring: the flood (F:2000, 64 KiB of poll starts) overflows it while
# the collector is stopped
DIAL9_SAMPLER=off DIAL9_RING_KB=4 "$TBIN/prog_trigseq" lose lose lose big big f:1 "w:$T/go1" \
    F:2000 lose big f:2 o:flooded "w:$T/go2" lose big big f:3 "w:$T/go3" \
    >"$T/p.out" 2>"$T/p.err" &
at_exit kill -9 $!
wait_for 20 grep -q '^pid=' "$T/p.out"
P=$(sed -n 's/^pid=\([0-9]*\)$/\1/p' "$T/p.out")
check "the program runs" test -n "$P"

# scrape: the process's four causes, "ring_full mismatch too_big no_ring", into
# $T/cur (fails until all four series are there)
scrape() {
    curl -sf "http://127.0.0.1:$MPORT/metrics" >"$T/m.txt" || return 1
    for c in ring_full mismatch too_big no_ring; do
        sed -n "s/^d9_lost_records_total{pid=\"$P\",comm=\"[^\"]*\",cause=\"$c\"} \([0-9]*\)$/\1/p" \
            "$T/m.txt"
    done | tr '\n' ' ' | sed 's/ $//' >"$T/cur"
    [ "$(wc -w <"$T/cur")" -eq 4 ]
}
# keep: the current scrape joins the series that must never go down
keep() { cat "$T/cur" >>"$T/series"; echo >>"$T/series"; }
# causes RING_FULL_MIN MISMATCH TOO_BIG: a scrape with these values (kept)
causes() {
    scrape && awk -v f="$1" -v m="$2" -v b="$3" '$1 >= f && $2 == m && $3 == b && $4 == 0 {
        ok = 1 } END { exit !ok }' "$T/cur" && keep
}
sealed() { curl -sf "http://127.0.0.1:$MPORT/metrics" |
           sed -n 's/^d9_collector_segments_sealed_total \([0-9]*\)$/\1/p'; }
# flush_scrape: d9 flush, then a scrape rendered after that seal (kept)
flush_scrape() {
    _s0=$(sealed)
    d9 flush >/dev/null 2>&1 || return 1
    _after() { [ "$(sealed)" -gt "$_s0" ] && scrape; }
    wait_for 20 _after && keep
}
# never_down: each cause of every kept scrape >= the one before
never_down() {
    awk '{ for (i = 1; i <= 4; i++) if (NR > 1 && $i < v[i]) {
               print "scrape " NR ": " $0 " after " prev; bad = 1 }
           for (i = 1; i <= 4; i++) v[i] = $i; prev = $0 }
         END { exit bad }' "$T/series"
}

: >"$T/series"
check "before any seal: 3 mismatch and 2 too_big under their causes, 0 ring_full" \
    wait_for 20 causes 0 3 2
check "a forced seal: a scrape after it" flush_scrape
check "... moved no cause down" never_down
check "... and still says 0 ring_full, 3 mismatch, 2 too_big" causes 0 3 2

kill -STOP "$COLPID"
touch "$T/go1"
check "the program floods its ring while the collector is stopped" \
    wait_for 20 grep -qx flooded "$T/p.out"
kill -CONT "$COLPID"
check "after a flood: ring_full counts, 4 mismatch, 3 too_big, before a seal" \
    wait_for 20 causes 1 4 3
for k in 1 2 3; do scrape && keep; done
check "a second forced seal: a scrape after it" flush_scrape
check "... moved no cause down" never_down

check "the collector stops cleanly while the program runs" stop_collector
check "a collector starts again on the same store" start_collector --metrics 127.0.0.1:0
MPORT=$(mport)
readopted() { [ "$(grep -c "adopted pid $P " "$T/col.log")" -ge 2 ]; }
check "... and adopts the program again" wait_for 20 readopted
check "the restarted collector's scrapes resume the rings' counts" wait_for 20 causes 1 4 3
check "... no cause went down across the restart" never_down

touch "$T/go2"
check "drops after the restart: 5 mismatch, 5 too_big" wait_for 20 causes 1 5 5
touch "$T/go3"
ended() {
    d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
    grep -q "\"pid\":$P,.*\"state\":\"exited\"" "$T/ps.jsonl"
}
check "the program ends, its last segment sealed" wait_for 20 ended
check "a scrape after its end: 5 mismatch, 5 too_big" wait_for 20 causes 1 5 5
check "no cause ever went down" never_down
check "each cause equals d9 ps's count from the store" python3 -c "
import json
r = [json.loads(l) for l in open('$T/ps.jsonl') if json.loads(l)['pid'] == $P][0]
got = [int(x) for x in open('$T/cur').read().split()]
want = [r['lost_full'], r['lost_mismatch'], r['lost_too_big'], r['lost_no_ring']]
assert got == want and want[0] > 0 and want[1:] == [5, 5, 0], (got, want)
"
check "the collector stops cleanly" stop_collector
check "no error in the collector's log" lacks "error|sanitizer" cat "$T/col.log"
d9_finish test_met_lost
