#!/bin/sh
# bench_findings.sh — `d9 findings` beside `d9 sched` on one store (not part
# of make test): sched is the baseline (one scan of the worker records, the
# same q_sched facts findings derives imbalance from); findings scans more
# record types and keeps per-location, per-queue and per-task tables. CPU
# time (user + sys), wall time and peak RSS of each, PAIRS interleaved pairs
# (the order alternates), medians with min..max, and the ratio findings /
# sched of the median CPU time.
#
# Usage: sh tests/bench/bench_findings.sh D9 STORE [PAIRS]
#   STORE: a bench store (build/bench/bench_store DIR, 50 M records by default)
set -e
D9=$1 STORE=$2 PAIRS=${3:-5}
[ -x "$D9" ] && [ -f "$STORE/index.sqlite" ] || {
    echo "usage: bench_findings.sh D9 STORE [PAIRS]" >&2; exit 2; }
python3 - "$D9" "$STORE" "$PAIRS" <<'PY'
import os, statistics, subprocess, sys, time
d9, store, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmds = [('sched', ['sched', '--since', '1d']),
        ('findings', ['findings', '--since', '1d', '--format', 'jsonl'])]

def run(args):
    t = time.monotonic()
    p = subprocess.Popen([d9, '--store', store] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    if status != 0:
        sys.exit('%s: exit status %d' % (' '.join(args), status))
    return ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024.0, out

res = {n: [] for n, _ in cmds}
out = {}
for i in range(pairs):
    order = cmds if i % 2 == 0 else cmds[::-1]
    for name, args in order:
        cpu, wall, rss, o = run(args)
        res[name].append((cpu, wall, rss))
        out[name] = o
def col(name, k):
    v = [x[k] for x in res[name]]
    return statistics.median(v), min(v), max(v)
print('%-10s %24s %24s %14s' % ('command', 'CPU s median (min..max)', 'wall s median (min..max)',
                                'peak RSS MiB'))
for name, _ in cmds:
    c, w, r = col(name, 0), col(name, 1), col(name, 2)
    print('%-10s %10.2f (%.2f..%.2f) %10.2f (%.2f..%.2f) %14.0f' % (name, c[0], c[1], c[2],
          w[0], w[1], w[2], r[2]))
print('findings / sched, median CPU: %.2f' % (col('findings', 0)[0] / col('sched', 0)[0]))
lines = out['findings'].decode().splitlines()
print('findings found: %d (first: %s)' % (len(lines), lines[0][:160] if lines else 'none'))
PY
