#!/bin/sh
# test_findings.sh — `d9 findings` on stores whose findings are known
# (tool_store_findings): every kind is found once, with its evidence and
# its time range, in the stated rank (crash, lost records, then by time
# lost); the thresholds and --pid, --limit, the window and --serve-url do
# what --help says; a clean store has no finding; bad values are one-line
# usage errors.
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
"$TBIN/tool_store_findings" "$T/bad" || exit 1
"$TBIN/tool_store_findings" "$T/clean" clean || exit 1
find_jsonl() { "$D9" --store "$T/bad" findings --format jsonl "$@" 2>>"$T/find.err"; }
find_jsonl >"$T/all.jsonl" 2>"$T/all.err" || { echo "d9 findings failed: $(cat "$T/all.err")"; exit 1; }

cat >"$T/cmp.py" <<'PY'
import json, sys
class Fail(Exception):
    pass
def fail(msg):
    raise Fail(msg)
MS = 1000000
def load(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    if not rows:
        fail(path + ': no findings')
    return rows
def one(rows, kind):
    k = [r for r in rows if r['kind'] == kind]
    if len(k) != 1:
        fail('%d findings of kind %s, want 1: %s' % (len(k), kind, rows))
    return k[0]
def want(r, **kv):
    for k, v in kv.items():
        if r.get(k) != v:
            fail('%s: %s = %r, want %r (%s)' % (r['kind'], k, r.get(k), v, r))
def has(r, *words):
    for w in words:
        if w not in r['evidence']:
            fail('%s: evidence lacks %r: %s' % (r['kind'], w, r['evidence']))
def verify(what, path, arg):
  rows = load(path)
  if what == 'rank':
      kinds = [r['kind'] for r in rows]
      order = ['crash', 'lost-records', 'task-leak', 'long-poll', 'imbalance', 'queue-growth',
               'sched-delay', 'wake-delay']
      if kinds != order:
          fail('ranked %s, want %s' % (kinds, order))
      if [r['rank'] for r in rows] != list(range(1, len(rows) + 1)):
          fail('ranks are not 1..N')
  elif what == 'crash':
      r = one(rows, 'crash')
      want(r, pid=7001, tid=703, task=900, loc=3, lost_ns=4 * MS, from_ns=1071 * MS, to_ns=1075 * MS)
      has(r, 'signal 11', 'task 900', 'src/crash.c:5 crasher', 'tid 703')
  elif what == 'lost':
      r = one(rows, 'lost-records')
      want(r, pid=7001, count=7, from_ns=1000 * MS, to_ns=1075 * MS)
      has(r, '7 records lost', '5 ring full', '2 type mismatch')
  elif what == 'leak':
      r = one(rows, 'task-leak')
      want(r, pid=7002, count=3, task=3, lost_ns=1497 * MS, from_ns=1003 * MS, to_ns=2500 * MS,
           where='src/spawn.c:9 spawner')
  elif what == 'long':
      r = one(rows, 'long-poll')
      want(r, pid=7001, tid=702, count=3, of=12, total_ns=60 * MS, max_ns=20 * MS, lost_ns=60 * MS,
           task=2000, samples=9, from_ns=1000 * MS, to_ns=1020 * MS, where='src/slow.c:7 slow_handler',
           frames=[{'name': 'find_hot', 'samples': 6}, {'name': 'find_cold', 'samples': 3}])
      has(r, 'find_hot 6', 'find_cold 3')
  elif what == 'imbalance':
      r = one(rows, 'imbalance')
      want(r, pid=7001, tid=702, worker=1, count=12, total_ns=69 * MS, lost_ns=44 * MS,
           where='runtime rt worker 1')
      has(r, 'busy 97%', '2 of the runtime\'s 3 workers')
  elif what == 'queue':
      r = one(rows, 'queue-growth')
      want(r, pid=7001, count=150, lost_ns=10 * MS, from_ns=1002 * MS, to_ns=1012 * MS,
           where='runtime rt global queue')
      has(r, 'from 10 to 160')
  elif what == 'sched':
      r = one(rows, 'sched-delay')
      want(r, pid=7001, tid=703, worker=2, count=2, of=6, total_ns=8 * MS, max_ns=4 * MS,
           from_ns=1002 * MS, to_ns=1010 * MS, where='runtime rt worker 2')
  elif what == 'wake':
      r = one(rows, 'wake-delay')
      want(r, pid=7001, tid=701, task=5000, count=1, of=1, lost_ns=2 * MS, from_ns=1060500000,
           to_ns=1062500000, where='src/fast.c:3 fast_handler')
  elif what == 'urls':
      for r in rows:
          u = 'http://127.0.0.1:8009/?pid=%d&from=%d&to=%d' % (r['pid'], r['from_ns'], r['to_ns'])
          if r['url'] != u:
              fail('url %s, want %s' % (r['url'], u))
  elif what == 'only':
      kinds = sorted(r['kind'] for r in rows)
      if kinds != sorted(arg.split(',')):
          fail('kinds %s, want %s' % (kinds, sys.argv[3]))
  elif what == 'all-long':
      r = one([r for r in rows if r.get('loc') == 1], 'long-poll')
      want(r, count=12, of=12, total_ns=69 * MS, samples=10,
           frames=[{'name': 'find_hot', 'samples': 6}, {'name': 'find_cold', 'samples': 4}])
  else:
      fail('unknown check ' + what)
# each line of the plan: KEY CHECK FILE [ARG]; one line per key in the
# results: "ok KEY" or "FAIL KEY why"
with open(sys.argv[2], 'w') as res:
    for line in open(sys.argv[1]):
        f = line.split()
        try:
            verify(f[1], f[2], f[3] if len(f) > 3 else None)
            res.write('ok %s\n' % f[0])
        except (Fail, OSError, ValueError, KeyError) as e:
            res.write('FAIL %s %s\n' % (f[0], str(e).replace('\n', ' ')))
PY
find_jsonl --long-poll 25ms --wake-delay 3ms --leak-age 2s --queue-growth 151 --sched-wait 5ms \
    --busy-pct 98 >"$T/hi.jsonl"
find_jsonl --long-poll 1ms >"$T/lo.jsonl"
find_jsonl --pid 7002 >"$T/pid.jsonl"
find_jsonl --from 1000000000 --to 1050000000 >"$T/win.jsonl"
# one interpreter for every JSON check (its start-up is seconds on a busy host)
cat >"$T/plan" <<EOF
rank rank $T/all.jsonl
crash crash $T/all.jsonl
lost lost $T/all.jsonl
leak leak $T/all.jsonl
long long $T/all.jsonl
imbalance imbalance $T/all.jsonl
queue queue $T/all.jsonl
sched sched $T/all.jsonl
wake wake $T/all.jsonl
urls urls $T/all.jsonl
hi only $T/hi.jsonl crash,lost-records
lo all-long $T/lo.jsonl
pid only $T/pid.jsonl task-leak
win only $T/win.jsonl lost-records,long-poll,imbalance,queue-growth,sched-delay
EOF
python3 "$T/cmp.py" "$T/plan" "$T/results"
# verdict KEY: the check KEY of the plan passed (else its failure, with why)
verdict() { grep -qx "ok $1" "$T/results" || { grep "^FAIL $1 " "$T/results"; return 1; }; }

check "every kind once, ranked: crash, lost records, then by time lost" verdict rank
check "crash: the unfinished poll (task, location, thread), the signal, its range" verdict crash
check "lost records: the count and the causes" verdict lost
check "task leak: 3 tasks of the spawn location, the oldest's age" verdict leak
check "long polls: 3 of 12 at the location, 9 CPU samples inside, top frames by name" verdict long
check "imbalance: the busy worker against the runtime's mean" verdict imbalance
check "queue growth: the rise, its range" verdict queue
check "scheduling delay: the samples over 1ms, the worst one's interval" verdict sched
check "wake -> poll delay: the wake and the poll that answered it" verdict wake
check "each finding links d9 serve at its pid and range" verdict urls
check "thresholds above every instance leave only crash and lost records" verdict hi
check "--long-poll 1ms: all 12 polls of the location, and the sample in a short one" verdict lo
check "--pid: only that process's findings" verdict pid
check "a window that ends before the crash: no crash finding" verdict win

# a clean store: nothing, said on stderr, exit 0
clean_none() {
    "$D9" --store "$T/clean" findings >"$T/clean.out" 2>"$T/clean.err" || return 1
    [ ! -s "$T/clean.out" ] && grep -q "nothing found" "$T/clean.err"
}
check "a clean store has no finding (an unfinished poll at a normal exit is none)" clean_none
limited() { [ "$(find_jsonl --limit 2 | wc -l)" -eq 2 ]; }
check "--limit 2 prints two" limited
text_view() {
    "$D9" --store "$T/bad" findings --serve-url http://127.0.0.1:9999/ >"$T/text.out" || return 1
    grep -q "^RANK KIND" "$T/text.out" &&
        grep -q "^   1 crash  *7001 " "$T/text.out" &&
        grep -q "view http://127.0.0.1:9999/?pid=7001&from=1071000000&to=1075000000  (range 1071000000..1075000000, 4.00ms)" "$T/text.out"
}
check "text: rank, kind, pid, then the link (--serve-url) and the range" text_view
usage_err() {
    "$D9" --store "$T/bad" findings "$@" >"$T/u.out" 2>"$T/u.err"
    [ $? -eq 2 ] && [ "$(wc -l <"$T/u.err")" -le 2 ] && grep -q "^d9 findings: " "$T/u.err"
}
check "--long-poll abc: a usage error" usage_err --long-poll abc
check "--busy-pct 101: a usage error" usage_err --busy-pct 101
check "--idle-pct not below --busy-pct: a usage error" usage_err --idle-pct 95
# d9 serve's /api/findings: the same findings of the pid, in the same order
"$D9" --store "$T/bad" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SPID=$!
at_exit kill "$SPID"
served() { grep -q '^d9 serve: http://127.0.0.1:' "$T/serve.out"; }
check "d9 serve starts" wait_for 10 served
U=$(sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/serve.out")
api_same() {
    python3 - "$U" "$T/all.jsonl" <<'PY'
import json, sys, urllib.request
base, cli = sys.argv[1].rstrip('/'), [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
j = json.load(urllib.request.urlopen(base + '/api/findings?pid=7001', timeout=20))
want = [dict((k, v) for k, v in r.items() if k not in ('url', 'rank')) for r in cli if r['pid'] == 7001]
got = [dict((k, v) for k, v in r.items() if k != 'rank') for r in j['findings']]
if got != want or j['total'] != len(want):
    sys.exit('api %s\ncli %s' % (got, want))
try:
    urllib.request.urlopen(base + '/api/findings', timeout=20)
    sys.exit('no pid: not refused')
except urllib.error.HTTPError as e:
    if e.code != 400:
        sys.exit('no pid: HTTP %d, want 400' % e.code)
PY
}
check "/api/findings?pid= answers what d9 findings prints for the pid; no pid is a 400" api_same
helps() { "$D9" findings --help | grep -q "^RANKING"; }
check "--help states the ranking rule" helps
d9_finish findings
