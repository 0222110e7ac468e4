#!/bin/sh
# test_ps_index.sh — `d9 ps` answers from the index alone (issue #32: its
# counts and spans come from the index's processes, threads and segments
# rows, never from a scan of the records): on tool_store_aggs's store, its
# output (whole store, --pid, a window) is the same with every segment file
# moved away, with nothing on stderr, and its counts are the generator's.
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_aggs" "$S" >"$T/known.txt" || { echo "tool_store_aggs failed"; exit 1; }
T0=$(awk '$1 == "t0" { print $2 }' "$T/known.txt")

ps_all() { # ps_all SUFFIX: every variant into $T/*.SUFFIX
    "$D9" --store "$S" ps --format jsonl >"$T/all.$1" 2>"$T/all.$1.err" &&
        "$D9" --store "$S" ps >"$T/text.$1" 2>"$T/text.$1.err" &&
        "$D9" --store "$S" ps --pid 6161 --format jsonl >"$T/pid.$1" 2>"$T/pid.$1.err" &&
        "$D9" --store "$S" ps --from $((T0 + 2000000000)) --to $((T0 + 4000000000)) \
            --format jsonl >"$T/win.$1" 2>"$T/win.$1.err"
}
same_without_files() {
    ps_all a || return 1
    mkdir -p "$T/away" && mv "$S"/*.d9seg "$T/away/" || return 1
    ps_all b
    _rc=$?
    mv "$T/away"/*.d9seg "$S/"
    [ $_rc -eq 0 ] || return 1
    for v in all text pid win; do
        [ -s "$T/$v.a" ] || { echo "$v: empty"; return 1; }
        [ -s "$T/$v.b.err" ] && { echo "$v: stderr:"; cat "$T/$v.b.err"; return 1; }
        diff "$T/$v.a" "$T/$v.b" || return 1
    done
}
known_counts() { # records = the generator's, 3 segments, its first record at t0
    "$D9" --store "$S" ps --format jsonl >"$T/k" || return 1
    python3 - "$T/k" "$T0" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
if len(r) != 1 or r[0]["pid"] != 6161 or r[0]["segments"] != 3 or r[0]["first_ns"] != int(sys.argv[2]) \
        or r[0]["records"] <= 0 or r[0]["span_ns"] != r[0]["last_ns"] - r[0]["first_ns"]:
    print(r); sys.exit(1)
PY
}

check "ps: same output without the segment files (no record read)" same_without_files
check "ps: the store's known process, segments and span" known_counts

d9_finish ps_index
