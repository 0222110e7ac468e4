#!/bin/sh
# bench_window.sh — `make bench-window`: the issue's 1 %-window question on a
# store of >= 50 M records (bench_store), through `d9 top-polls
# --by-location` and `d9 sql` location_stats, a base d9 build beside this
# one: PAIRS interleaved pairs (the order alternates), CPU ms (user + sys of
# the d9 process) and wall ms, median and range [min .. max]; the answers of
# both builds are checked equal first. Also `d9 --version` (start-up alone).
# The window: 1 % of the store's time range from its middle (bench_aggs.sh's
# "1%"): it covers no 1 s bucket whole, so all of it is edge (q_edge.h).
#
# Environment: BUILD (default build); BENCH_WINDOW_BASE=D9 (the base d9, e.g.
# one built from main in another directory; default: this build against
# itself); BENCH_WINDOW_STORE=DIR (default $BUILD/bench/window_store: made by
# bench_store once, then reused; its bench_store output in DIR.out);
# BENCH_WINDOW_RECORDS (default 50 M); BENCH_WINDOW_PAIRS (default 21).
set -u
BUILD=${BUILD:-build}
NEW="$BUILD/bin/d9"
BASE=${BENCH_WINDOW_BASE:-$NEW}
STORE=${BENCH_WINDOW_STORE:-$BUILD/bench/window_store}
RECORDS=${BENCH_WINDOW_RECORDS:-50000000}
PAIRS=${BENCH_WINDOW_PAIRS:-21}
if [ ! -f "$STORE/index.sqlite" ] || [ ! -f "$STORE.out" ]; then
    [ ! -e "$STORE" ] || { echo "bench_window: $STORE exists but is not a bench store" >&2; exit 1; }
    echo "bench_window: writing a $RECORDS-record store into $STORE (once)"
    "$BUILD/bench/bench_store" "$STORE" "$RECORDS" >"$STORE.out" || exit 1
fi
python3 - "$BASE" "$NEW" "$STORE" "$PAIRS" <<'PY'
import os, resource, statistics, subprocess, sys, time
base, new, store, pairs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
kv = dict(l.split()[:2] for l in open(store + '.out') if l.startswith('store.'))
n, tmin, tmax = int(kv['store.records']), int(kv['store.t_min']), int(kv['store.t_max'])
frm = tmin + (tmax - tmin) * 50 // 100 + 123457
to = frm + (tmax - tmin) // 100
sql = ('select loc, sum(count), max(max_ns), max(p99_ns) from location_stats '
       'where start_ns >= %d and start_ns <= %d group by loc order by 2 desc' % (frm, to))
cmds = [
    ('d9 --version', ['--version']),
    ('top-polls --by-location 1 %', ['--store', store, 'top-polls', '--by-location',
                                      '--from', str(frm), '--to', str(to)]),
    ('sql location_stats 1 %', ['--store', store, 'sql', '--format', 'csv', sql]),
]

def run(d9, args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    r = subprocess.run([d9] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if r.returncode != 0:
        sys.exit('bench_window: %s %s: exit %d' % (d9, ' '.join(args), r.returncode))
    return cpu * 1e3, wall * 1e3, r.stdout

def fmt(v):
    return '%7.2f [%6.2f .. %6.2f]' % (statistics.median(v), min(v), max(v))

print('== the 1 %% window (%d .. %d) on %d records, %d pairs, ms: median [min .. max]'
      % (frm, to, n, pairs))
print('   base %s\n   new  %s' % (base, new))
print('%-28s %-26s %-26s %-26s %-26s %s' % ('question', 'base CPU', 'new CPU', 'base wall',
                                            'new wall', 'new/base CPU'))
for name, args in cmds:
    a, b = run(base, args)[2], run(new, args)[2]
    same = 'answers equal' if a == b else 'ANSWERS DIFFER'
    res = {base: ([], []), new: ([], [])}
    for i in range(pairs):
        for d9 in ((base, new) if i % 2 == 0 else (new, base)):
            c, w, _ = run(d9, args)
            res[d9][0].append(c)
            res[d9][1].append(w)
    (bc, bw), (nc, nw) = res[base], res[new]
    if base == new:     # one build against itself: both columns are the same runs
        bc, bw, nc, nw = bc[0::2], bw[0::2], nc[1::2], nw[1::2]
    print('%-28s %-26s %-26s %-26s %-26s %.2f  %s' % (name, fmt(bc), fmt(nc), fmt(bw), fmt(nw),
          statistics.median(nc) / max(statistics.median(bc), 1e-9), same))
print('(target: the 1 % window <= 20 ms; issue #32 item 4)')
PY
