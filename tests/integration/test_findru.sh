#!/bin/sh
# test_findru.sh — `d9 findings` with the rollups' filter (q_findru.h) prints
# byte for byte what `d9 findings --raw` prints, on a store whose contents
# are known (tool_store_findru): a long poll across a 1 s bucket edge with
# CPU samples inside, windows whose edges cut that poll or fall on the
# bucket edge, a scheduling wait over the threshold on one worker, query-time
# thresholds; the filter reads those without a second pass (no "again" line
# on stderr: a filter that left out the bucket with the instance would need
# one). A long poll across a segment rotation (the rollups say unfinished)
# is found by the re-read, and a segment without rollups is read unfiltered,
# each said on stderr.
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
"$TBIN/tool_store_findru" "$T/s" || exit 1
W="--from 0 --to 100000000000"

# same NAME ARGS...: the filtered and the raw findings (jsonl, then text)
# are byte-identical; the filtered run's stderr is in $T/NAME.err.
same() {
    _n=$1; shift
    "$D9" --store "$T/s" findings --format jsonl --limit 1000 "$@" >"$T/$_n.jsonl" \
        2>"$T/$_n.err" || return 1
    "$D9" --store "$T/s" findings --format jsonl --limit 1000 --raw "$@" >"$T/$_n.raw.jsonl" \
        2>"$T/$_n.raw.err" || return 1
    cmp "$T/$_n.jsonl" "$T/$_n.raw.jsonl" || return 1
    "$D9" --store "$T/s" findings --limit 1000 "$@" >"$T/$_n.txt" 2>/dev/null || return 1
    "$D9" --store "$T/s" findings --limit 1000 --raw "$@" >"$T/$_n.raw.txt" 2>/dev/null || return 1
    cmp "$T/$_n.txt" "$T/$_n.raw.txt"
}
# filtered NAME ARGS...: same, and the filter answered in one pass
filtered() {
    same "$@" || return 1
    if grep -E "again|without the rollups" "$T/$1.err"; then return 1; fi
    return 0
}

check "pid 7101, whole store: filtered = raw, one pass" filtered all --pid 7101 $W
has_long() { grep -q '"kind":"long-poll".*"count":1,"of":1,"total_ns":25000000.*"from_ns":1990000000,"to_ns":2015000000,"samples":3' "$T/all.jsonl"; }
check "... with the long poll across the bucket edge and its 3 samples" has_long
has_sched() { grep -q '"kind":"sched-delay".*"worker":1.*"count":1,.*"max_ns":3000000' "$T/all.jsonl"; }
check "... and worker 1's 3 ms scheduling wait" has_sched
no_w0() { [ "$(grep -c '"kind":"sched-delay"' "$T/all.jsonl")" = 1 ]; }
check "... and no sched-delay for worker 0 (its waits are 10 us)" no_w0

check "window ending inside the long poll: filtered = raw" \
    filtered to_in --pid 7101 --from 0 --to 2005000000
no_long() { if grep -q '"kind":"long-poll"' "$T/$1.jsonl"; then return 1; fi; }
check "... the poll is unfinished there: no long-poll" no_long to_in
check "window starting inside the long poll, at the bucket edge: filtered = raw" \
    filtered from_edge --pid 7101 --from 2000000000 --to 100000000000
check "... its start is outside: no long-poll" no_long from_edge
check "window starting inside the long poll, before the edge: filtered = raw" \
    filtered from_in --pid 7101 --from 1995000000 --to 100000000000
check "window ending at the bucket edge: filtered = raw" \
    filtered to_edge --pid 7101 --from 0 --to 1999999999
check "window ending at the long poll's end: filtered = raw" \
    filtered to_end --pid 7101 --from 0 --to 2015000000
has_long_end() { grep -q '"kind":"long-poll".*"to_ns":2015000000,"samples":3' "$T/to_end.jsonl"; }
check "... with the long poll" has_long_end
check "window of the bucket after the edge only: filtered = raw" \
    filtered next_bucket --pid 7101 --from 2000000000 --to 2999999999
check "--long-poll 1ms (every poll long): filtered = raw" \
    filtered lp1 --pid 7101 $W --long-poll 1ms
many_long() { grep -q '"kind":"long-poll".*"count":25[0-9],"of":25[0-9]' "$T/lp1.jsonl"; }
check "... every short poll is one" many_long
check "--long-poll 26ms (none): filtered = raw" filtered lp26 --pid 7101 $W --long-poll 26ms
check "... no long-poll" no_long lp26
check "--sched-wait 5us (every wait): filtered = raw" filtered sw5 --pid 7101 $W --sched-wait 5us
two_sched() { [ "$(grep -c '"kind":"sched-delay"' "$T/sw5.jsonl")" = 2 ]; }
check "... both workers" two_sched

check "pid 7102, a long poll across a segment rotation: filtered = raw" \
    same rot --pid 7102 $W
rot_long() { grep -q '"kind":"long-poll".*"max_ns":35000000' "$T/rot.jsonl"; }
check "... the 35 ms poll is found" rot_long
reread() { grep -q "reading the window again" "$T/rot.err"; }
check "... by the re-read the filter asks for (said on stderr)" reread
check "pid 7102, its first segment only (the poll unfinished): filtered = raw, one pass" \
    filtered rot1 --pid 7102 --from 0 --to 1999999999
check "... no long-poll" no_long rot1

check "pid 7103, a segment without rollups: filtered = raw" same norollup --pid 7103 $W
noted() { grep -q "7103-83-4.d9seg: no rollups: .*without the rollups' filter" "$T/norollup.err"; }
check "... said on stderr" noted
check "every process: filtered = raw" same every $W
helps() { "$D9" findings --help | grep -q -- "--raw"; }
check "--help has --raw" helps
d9_finish findru
