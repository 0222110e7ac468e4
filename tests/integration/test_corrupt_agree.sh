#!/bin/sh
# test_corrupt_agree.sh — one DATA block damaged after the seal (a payload
# byte: its checksum fails, its header holds), on a store with known
# contents (tool_store_aggs): every reader leaves out that block and only
# that block. `sched --totals --raw` / `top-polls --by-location --raw` (the
# whole file, rollup_file_only) and the window's edges (q_edge) agree with
# plain `d9 sched` (the record scan, q_scan) for windows inside and across
# the damage, with the scans' note on stderr. The stored rollups, made at
# the seal, still count the block: before a repair the rollup path exceeds
# the records exactly by the block's records (the undamaged store's counts
# of its thread over its time range; without stored rollups they are made
# from the readable records); `d9 fsck` says so, `fsck --repair`
# rebuilds them from the readable blocks, and then all three paths agree.
. tests/integration/lib.sh
. tests/integration/aggs_env.sh
d9_setup
D9=$BIN/d9
CLEAN=$T/clean
S=$T/store
"$TBIN/tool_store_aggs" "$CLEAN" >"$T/known.txt" || { echo "tool_store_aggs failed"; exit 1; }
cp -r "$CLEAN" "$S"
T0=$(awk '$1 == "t0" { print $2 }' "$T/known.txt")
S1=1000000000

# the middle DATA block of segment 1 (blocks of both workers before and after it)
SEG=$(sqlite3 "$S/index.sqlite" "select path from segments where id = 1")
set -- $(sqlite3 -separator ' ' "$S/index.sqlite" "select offset, tid, t_first, t_last from blocks
         where segment_id = 1 and kind = 2 order by offset limit 1 offset 2")
OFF=$1 TID=$2 BF=$3 BL=$4
check "the block to damage is found, with blocks after it" sh -c "[ -n '$OFF' ] && [ \$(sqlite3 '$S/index.sqlite' \
    'select count(*) from blocks where segment_id = 1 and kind = 2 and offset > $OFF') -ge 2 ]"
printf 'ZZZZ' | dd of="$S/$SEG" bs=1 seek=$((OFF + 60)) conv=notrunc 2>/dev/null

KEYS='("polls", "parks", "waits", "sched_wait_sum_ns")'
# counts OUT STORE CMD...: the jsonl rows' counts per (pid, runtime, worker), stderr in OUT.err
counts() {
    _o=$1 _s=$2; shift 2
    "$D9" --store "$_s" "$@" --format jsonl >"$T/$_o.jsonl" 2>"$T/$_o.err" || { cat "$T/$_o.err"; return 1; }
    python3 - "$T/$_o.jsonl" >"$T/$_o" <<PY
import json, sys
keys = $KEYS
out = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        k = (r["pid"], r["runtime"], r["worker"])
        out[k] = tuple(a + r[f] for a, f in zip(out.get(k, (0,) * len(keys)), keys))
for k in sorted(out):
    print(*k, *out[k])
PY
}
# agree NAME [window...]: --raw totals = plain sched (counts), and the --raw
# top-polls by location = the edge path's when ALSO_EDGES is set
agree() {
    _w=$1; shift
    counts raw "$S" sched --totals --raw "$@"; counts plain "$S" sched "$@"
    check "$_w: sched --totals --raw = plain d9 sched" same_nonempty raw plain
    check "$_w: --raw notes the skipped block, and leaves out no segment" sh -c \
        "grep -q 'block at offset $OFF unreadable' '$T/raw.err' && ! grep -q 'left out' '$T/raw.err'"
    "$D9" --store "$S" top-polls --by-location --limit 1000 --raw --format jsonl "$@" >"$T/lr" 2>"$T/lr.err"
    check "$_w: top-polls --by-location --raw polls = plain d9 sched's" python3 - "$T/lr" "$T/plain" <<'PY'
import json, sys
a = sum(json.loads(l)["polls"] for l in open(sys.argv[1]) if l.startswith("{"))
b = sum(int(l.split()[3]) for l in open(sys.argv[2]))
assert a == b and a > 0, (a, b)
PY
}
# rollups_equal NAME [window...]: the rollup path (whole seconds + edges) = --raw
rollups_equal() {
    _w=$1; shift
    counts ru "$S" sched --totals "$@"; counts raw "$S" sched --totals --raw "$@"
    check "$_w: sched --totals = --raw" same_nonempty ru raw
    "$D9" --store "$S" top-polls --by-location --limit 1000 --format jsonl "$@" >"$T/l1" 2>&1
    "$D9" --store "$S" top-polls --by-location --limit 1000 --raw --format jsonl "$@" >"$T/l2" 2>&1
    check "$_w: top-polls --by-location = --raw" sh -c "grep -v warning '$T/l1' >'$T/l1.j'; \
        grep -v warning '$T/l2' >'$T/l2.j'; [ -s '$T/l1.j' ] && diff '$T/l1.j' '$T/l2.j'"
}

INSIDE="--from $((BF + (BL - BF) / 4)) --to $((BL - (BL - BF) / 4))"     # edges inside the block
ACROSS="--from $((BF - S1 / 4)) --to $((BL + S1 / 3))"                  # around it, whole seconds
echo "damaged block: $SEG offset $OFF tid $TID [$BF, $BL]; inside: $INSIDE; across: $ACROSS"

# ---- before the repair ---------------------------------------------------------
agree "whole store"
agree "window inside the block" $INSIDE
agree "window across the block" $ACROSS
rollups_equal "edges only (a window inside one second, in the block)" \
    --from $((T0 + S1 + S1 / 20)) --to $((T0 + 2 * S1 - S1 / 20))
check "... where the edges read the block: the same note, no segment left out" sh -c \
    "grep -q 'block at offset $OFF unreadable' '$T/ru.err' && ! grep -q 'left out' '$T/ru.err'"

# the stored rollups exceed the records by the damaged block's own records
# (the undamaged store's counts of its thread over its time range)
counts ru "$S" sched --totals
counts raw "$S" sched --totals --raw
counts blk "$CLEAN" sched --from "$BF" --to "$BL"
check "the damaged block's thread has polls and parks in its time range" python3 - "$T/blk.jsonl" "$TID" "$T/blk" <<'PY'
import json, sys
keys = ("polls", "parks", "waits", "sched_wait_sum_ns")
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
rows = [r for r in rows if r["tid"] == int(sys.argv[2])]
assert len(rows) == 1 and rows[0]["polls"] > 0 and rows[0]["parks"] > 0, rows
r = rows[0]
open(sys.argv[3], "w").write(" ".join(str(x) for x in (r["pid"], r["runtime"], r["worker"]) +
                                       tuple(r[k] for k in keys)) + "\n")
PY
check "before fsck --repair: rollups - records = the damaged block's records, exactly" \
    python3 - "$T/ru" "$T/raw" "$T/blk" <<'PY'
import sys
def load(p):
    return {tuple(l.split()[:3]): list(map(int, l.split()[3:])) for l in open(p)}
ru, raw, blk = (load(p) for p in sys.argv[1:4])
for k in set(ru) | set(raw):
    want = blk.get(k, [0, 0, 0, 0])
    got = [a - b for a, b in zip(ru.get(k, [0] * 4), raw.get(k, [0] * 4))]
    assert got == want, (k, got, want)
PY

# a damaged segment without stored rollups: its rollups from its readable records
cp -r "$S" "$T/noru"
sqlite3 "$T/noru/index.sqlite" "delete from rollups where segment_id = 1"
counts ru "$T/noru" sched --totals
counts plain "$T/noru" sched
check "no stored rollups: sched --totals (from the readable records) = plain d9 sched" same_nonempty ru plain
check "... with the block's note, and no segment left out" sh -c \
    "grep -q 'block at offset $OFF unreadable' '$T/ru.err' && ! grep -q 'left out' '$T/ru.err'"

# ---- fsck ------------------------------------------------------------------------
"$D9" --store "$S" fsck >"$T/fsck1" 2>&1; rc=$?
check "fsck: problems (exit 1)" test "$rc" -eq 1
check "fsck: the segment has an unreadable block and is kept" grep -q "$SEG: .*1 unreadable data block" "$T/fsck1"
check "fsck: its rollups differ from its readable records" \
    grep -q "$SEG: .*rollups differ from the ones its readable records give" "$T/fsck1"
check "fsck --repair" "$D9" --store "$S" fsck --repair
check "fsck --repair kept the segment file" test -f "$S/$SEG"
"$D9" --store "$S" fsck >"$T/fsck2" 2>&1; rc=$?
check "fsck after the repair: clean (exit 0), the damage still listed" \
    sh -c "[ $rc -eq 0 ] && grep -q 'clean: .* 1 with unreadable blocks' '$T/fsck2' || { cat '$T/fsck2'; exit 1; }"

# ---- after the repair: all three paths agree -------------------------------------
agree "after repair: whole store"
rollups_equal "after repair: whole store"
rollups_equal "after repair: across the block" $ACROSS
rollups_equal "after repair: inside the block" $INSIDE
counts ru "$S" sched --totals
counts plain "$S" sched
check "after repair: the whole store's rollups = plain d9 sched" same_nonempty ru plain

d9_finish corrupt_agree
