# aggs_env.sh — shared helpers of the tests that compare the aggregate
# answers (sched --totals, top-polls --by-location) of one store $S
# (sourced after lib.sh; $D9 is the d9 binary, $T the test's temp dir).

# totals OUT [args...]: sched --totals as jsonl into $T/OUT (stderr OUT.err)
totals() {
    _o=$1; shift
    "$D9" --store "$S" sched --totals --format jsonl "$@" >"$T/$_o" 2>"$T/$_o.err"
}
# locs OUT [args...]: top-polls --by-location as jsonl into $T/OUT (stderr OUT.err)
locs() {
    _o=$1; shift
    "$D9" --store "$S" top-polls --by-location --limit 1000 --format jsonl "$@" >"$T/$_o" 2>"$T/$_o.err"
}
# same_nonempty A B: $T/A has lines and equals $T/B
same_nonempty() {
    [ -s "$T/$1" ] || { echo "$1: empty"; cat "$T/$1.err" 2>/dev/null; return 1; }
    diff "$T/$1" "$T/$2"
}
