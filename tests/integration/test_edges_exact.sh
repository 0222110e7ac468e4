#!/bin/sh
# test_edges_exact.sh — a window that does not align with the rollups' 1 s
# buckets is answered from its whole buckets' rollups plus its two edges
# (collector/query/q_agg.h), and equals a raw scan exactly for every count,
# sum and maximum the consumers show.
#   - tool_store_edges (a property check, in process): on random stores of
#     known contents (two processes, a worker shared by two threads, polls
#     across buckets, rotations and window edges, unfinished and replaced
#     polls, parks, wakes, events whose schema a mid-segment META block
#     defines, a segment without rollups), for hundreds of random windows a
#     seed: rollups + edges = Q_AGG_RAW = the generator's facts, and each
#     segment's edge rollups = the whole file's, section by section;
#   - the consumers, on windows with an edge inside a long poll or inside
#     the seconds when two threads run one worker: `d9 sched
#     --totals` = `--raw`, `d9 top-polls --by-location` = `--raw`, and
#     d9 sql's location_stats = top-polls' raw counts, sums and maxima.
. tests/integration/lib.sh
. tests/integration/aggs_env.sh
d9_setup
D9=$BIN/d9
SEEDS="1 2 3"
NWIN=300

# property: 0 mismatches over NWIN random windows (and the hand-built ones)
prop() { # prop SEED
    "$TBIN/tool_store_edges" "$T/p$1" "$1" "$NWIN" >"$T/p$1.out" 2>"$T/p$1.err"
    _rc=$?
    tail -n 1 "$T/p$1.out"
    grep '^mismatches ' "$T/p$1.out"
    [ $_rc -eq 0 ] && grep -Eq "^windows [0-9]+ checks [1-9][0-9]* mismatches 0 " "$T/p$1.out"
}
for s in $SEEDS; do
    check "seed $s: rollups + edges = raw scan = the facts written" prop "$s"
done
check "a segment without rollups was answered from its records" \
    grep -q "no rollups: answered from its records" "$T/p1.err"

S=$T/p1
# location_stats of [FROM, TO] against top-polls --raw's (file $T/$3)
sql_vs_raw() { # sql_vs_raw FROM TO RAWFILE
    "$D9" --store "$S" sql --format jsonl "select pid, location, count, unfinished, sum_ns, max_ns \
        from location_stats where start_ns >= $1 and start_ns <= $2" >"$T/ls" 2>"$T/ls.err" || {
        cat "$T/ls.err"; return 1; }
    python3 - "$T/ls" "$T/$3" <<'PY'
import json, sys
a = {(r["pid"], r["location"]): (r["count"], r["unfinished"], r["sum_ns"], r["max_ns"])
     for r in map(json.loads, open(sys.argv[1]))}
b = {(r["pid"], r["location"]): (r["polls"], r["unfinished"], r["total_ns"], r["max_ns"])
     for r in map(json.loads, open(sys.argv[2]))}
if not b or a != b:
    print("location_stats", a, "top-polls --raw", b)
    sys.exit(1)
PY
}
window() { # window NAME FROM TO
    totals a --from "$2" --to "$3"; totals b --raw --from "$2" --to "$3"
    check "$1: sched --totals = --raw" same_nonempty a b
    locs c --from "$2" --to "$3"; locs d --raw --from "$2" --to "$3"
    check "$1: top-polls --by-location = --raw" same_nonempty c d
    check "$1: sql location_stats = top-polls --raw" sql_vs_raw "$2" "$3" d
}
T0=$(awk '$1 == "t0" { print $2 }' "$T/p1.out")
awk '$1 == "inside" { print $2, $3, $4 }' "$T/p1.out" >"$T/inside"
check "the store has a long poll in each process" test "$(wc -l <"$T/inside")" -eq 2
while read -r pid a b; do
    mid=$(( (a + b) / 2 ))
    window "pid $pid: from inside a long poll" "$mid" $((b + 2000000000))
    window "pid $pid: to inside a long poll" "$T0" "$mid"
    window "pid $pid: both edges inside a long poll" $((a + 1)) $((b - 1))
    window "pid $pid: one ns at a long poll's start" "$a" "$a"
done <"$T/inside"
# two threads of one worker in the same seconds: the CPU of sched --totals
# takes the first sampled record in file order, at the edges as in the rollups
awk '$1 == "shared" { print $2, $3, $4 }' "$T/p1.out" >"$T/shared"
while read -r pid a b; do
    for off in 123456789 456789123 789123456; do
        window "pid $pid: edges where two threads share a worker (+$off)" $((a + off)) $((b + off))
    done
done <"$T/shared"
d9_finish edges_exact
