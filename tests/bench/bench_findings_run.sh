#!/bin/sh
# bench_findings_run.sh — the findings section of `make bench` (and `make
# bench-findings`): `d9 findings` over a whole synthetic store (bench_store),
#   1. beside `d9 sched` (tests/bench/bench_findings.sh: CPU, wall, peak RSS);
#   2. with BENCH_FINDINGS_BASE=/path/to/an/older/d9: that binary against
#      this build's, PAIRS interleaved pairs (the order alternates), CPU
#      seconds (user + sys), median and range, after checking that both
#      print the same findings (jsonl, every finding);
#   3. q_wake's cost per poll lookup (bench_wake), without and with a backlog
#      of 2 M wakes never answered.
# Environment: BUILD (default build), BENCH_QUICK=1 (1 M records, 3 pairs),
# BENCH_FINDINGS_RECORDS (default 20 M), BENCH_FINDINGS_PAIRS (default 5),
# BENCH_FINDINGS_STORE (an existing bench store: used instead of building one),
# BENCH_KEEP=1 (keep the temp dir).
set -u
BUILD=${BUILD:-build}
QUICK=${BENCH_QUICK:-0}
RECORDS=${BENCH_FINDINGS_RECORDS:-$([ "$QUICK" = 1 ] && echo 1000000 || echo 20000000)}
PAIRS=${BENCH_FINDINGS_PAIRS:-$([ "$QUICK" = 1 ] && echo 3 || echo 5)}
D9="$BUILD/bin/d9"
T=$(mktemp -d /tmp/d9bench-findings.XXXXXX) || exit 1
trap '[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT INT TERM
STORE=${BENCH_FINDINGS_STORE:-}
if [ -z "$STORE" ]; then
    STORE=$T/store
    "$BUILD/bench/bench_store" "$STORE" "$RECORDS" >"$T/store.out" || exit 1
    RECORDS=$(awk '$1 == "store.records" { print $2 }' "$T/store.out")
fi
WIN="--from 0 --to 18446744073709551615"

echo "== findings: whole store ($STORE, $RECORDS records)"
sh tests/bench/bench_findings.sh "$D9" "$STORE" "$PAIRS" || exit 1

if [ -n "${BENCH_FINDINGS_BASE:-}" ]; then
    echo "== findings: $BENCH_FINDINGS_BASE (before) vs $D9 (after), $PAIRS pairs, CPU s"
    # shellcheck disable=SC2086
    "$BENCH_FINDINGS_BASE" --store "$STORE" findings $WIN --format jsonl --limit 100000 \
        >"$T/before.jsonl" 2>/dev/null || exit 1
    # shellcheck disable=SC2086
    "$D9" --store "$STORE" findings $WIN --format jsonl --limit 100000 >"$T/after.jsonl" \
        2>/dev/null || exit 1
    if cmp -s "$T/before.jsonl" "$T/after.jsonl"; then
        echo "same findings: $(wc -l <"$T/after.jsonl") lines"
    else
        echo "bench-findings: the two binaries print different findings" >&2
        exit 1
    fi
    python3 - "$BENCH_FINDINGS_BASE" "$D9" "$STORE" "$PAIRS" <<'PY'
import os, statistics, subprocess, sys
base, new, store, pairs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
args = ['findings', '--from', '0', '--to', '18446744073709551615', '--format', 'jsonl']
res = {'before': [], 'after': []}
for i in range(pairs):
    order = [('before', base), ('after', new)]
    if i % 2:
        order.reverse()
    for name, d9 in order:
        p = subprocess.Popen([d9, '--store', store] + args, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        if status:
            sys.exit('%s: exit status %d' % (d9, status))
        res[name].append(ru.ru_utime + ru.ru_stime)
for name in ('before', 'after'):
    v = res[name]
    print('%-7s %.2f s [%.2f .. %.2f]' % (name, statistics.median(v), min(v), max(v)))
print('after / before, median CPU: %.2f' % (statistics.median(res['after']) /
                                            statistics.median(res['before'])))
PY
fi

echo "== q_wake: CPU ns per poll (a take; a put every sixth poll)"
for B in 0 2000000; do
    [ "$QUICK" = 1 ] && P=2000000 || P=20000000
    printf 'backlog %-8s ' "$B"
    "$BUILD/bench/bench_wake" "$P" "$B" | awk '$1 == "wake.ns_per_poll" { print $2 " ns" }'
done
