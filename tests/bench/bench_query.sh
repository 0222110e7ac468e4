#!/bin/sh
# bench_query.sh — the reading commands of two d9 builds side by side on one
# store (not part of make test): CPU time (user + sys) and wall time of each
# command, PAIRS interleaved pairs (the order alternates within the pairs),
# medians with min..max, and the ratio new / base of the median CPU time.
#
# Usage: sh tests/bench/bench_query.sh BASE_D9 NEW_D9 STORE [PAIRS]
#   BQ_ONLY=sched,sql   only the commands whose names start so
#   BQ_BASE_STORE=DIR   the store the base build reads (default STORE): for a
#                       base build that cannot read STORE's format, a store
#                       built by the base tree's bench_store (same records)
#   STORE: a bench store (build/bench/bench_store DIR, 50 M records by default)
# Outputs are compared too: a command whose output differs between the two
# builds is marked "output differs" (expected only where the output format
# changed on purpose).
set -e
BASE=$1 NEW=$2 STORE=$3 PAIRS=${4:-5}
[ -x "$BASE" ] && [ -x "$NEW" ] && [ -f "$STORE/index.sqlite" ] || {
    echo "usage: bench_query.sh BASE_D9 NEW_D9 STORE [PAIRS]" >&2; exit 2; }
W=$(mktemp -d /tmp/d9bq.XXXXXX)
trap 'rm -rf "$W"' EXIT
python3 - "$BASE" "$NEW" "$STORE" "$PAIRS" "$W" "${BQ_BASE_STORE:-$STORE}" <<'PY'
import os, resource, statistics, subprocess, sys, time
base, new, store, pairs, w = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
stores = {base: sys.argv[6], new: store}
# the store's time range: windows for the commands whose output grows with it
t0 = int(subprocess.run([new, '--store', store, 'sql', '--format', 'csv',
                         'select min(start_ns) from polls where start_ns < 2100000000'],
                        capture_output=True, text=True).stdout.split()[1])
win = ['--from', str(t0), '--to', str(t0 + 200_000_000)]          # 0.2 s
big = ['--from', str(t0), '--to', str(t0 + 2_000_000_000)]        # 2 s
cmds = [
    ('sched', ['sched', '--since', '1d']),
    ('top-polls', ['top-polls', '--since', '1d']),
    ('flame', ['flame', '--since', '1d']),
    ('events 0.2 s', ['events'] + win),
    ('export json 0.2 s', ['export'] + win + ['-o', w + '/out']),
    ('export perfetto 0.2 s', ['export', '--format', 'perfetto'] + win + ['-o', w + '/out']),
    ('export json 2 s', ['export'] + big + ['-o', w + '/out']),
    ('export perfetto 2 s', ['export', '--format', 'perfetto'] + big + ['-o', w + '/out']),
    ('sql polls count/sum', ['sql', 'select count(*), sum(dur_ns) from polls']),
    ('sql parks by worker', ['sql', 'select worker, count(*), sum(sched_wait_ns) from parks group by worker']),
    ('sql stacks by frame', ['sql', 'select frame, count(*) from stacks group by frame order by 2 desc']),
    ('findings', ['findings', '--since', '1d']),
    ('ps', ['ps']),
    ('segments', ['segments']),
]
# a command the base build does not have (findings before the query layer)
# is timed on the new build only
def has(d9, args):
    return subprocess.run([d9, '--store', stores[d9], args[0], '--help'], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0

def run(d9, args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    r = subprocess.run([d9, '--store', stores[d9]] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = r.stdout
    if '-o' in args:
        out = open(w + '/out', 'rb').read()
    return cpu, wall, r.returncode, out

print('%-24s %22s %22s %8s %s' % ('command', 'base CPU s (min..max)', 'new CPU s (min..max)',
                                   'new/base', 'wall base / new (median s)'))
only = [s for s in os.environ.get('BQ_ONLY', '').split(',') if s]
for name, args in cmds:
    if only and not any(name.startswith(s) for s in only):
        continue
    sides = [d9 for d9 in (base, new) if has(d9, args)]
    res = {d9: [] for d9 in sides}
    outs = {}
    for i in range(pairs):
        order = sides if i % 2 == 0 else sides[::-1]
        for d9 in order:
            cpu, wall, rc, out = run(d9, args)
            if rc != 0:
                sys.exit('%s %s: exit %d' % (d9, name, rc))
            res[d9].append((cpu, wall))
            outs[d9] = out
    def med(d9, k):
        return statistics.median(x[k] for x in res[d9])
    def rng(d9):
        if d9 not in res:
            return 'n/a'
        v = [x[0] for x in res[d9]]
        return '%.2f (%.2f..%.2f)' % (statistics.median(v), min(v), max(v))
    if base not in res:
        print('%-24s %22s %22s %8s - / %.2f' % (name, rng(base), rng(new), '-', med(new, 1)))
        continue
    print('%-24s %22s %22s %8.3f %.2f / %.2f%s' % (name, rng(base), rng(new), med(new, 0) / med(base, 0),
          med(base, 1), med(new, 1), '' if outs[base] == outs[new] else '  output differs'))
PY
