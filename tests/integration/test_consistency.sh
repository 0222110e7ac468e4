#!/bin/sh
# test_consistency.sh — every reader gives the same answer to the same
# question, on a store whose facts are known (tool_store_known: three
# workers, one of a saturated pool, one with a preempted long poll; three
# wakes, two of tasks 4096 apart; CPU samples with frames of the program,
# of libc, of a library named only by its debug file and of a shim
# trampoline).
#   - per worker: polls, parks, wait count / sum / max and busy time are the
#     known ones in d9 sched --format jsonl, d9 sql (workers, and polls,
#     parks and sched_waits counted by SQL), d9 serve's /api/workers and
#     /api/timeline, and the JSON and Perfetto exports;
#   - every wake's flow ends at the known poll in both exports and in
#     d9 serve's arrows;
#   - every stack's frames are named the same in d9 flame, sql's stacks and
#     both exports, also for a process known only by the objects its agent
#     published (no map records); the library's static function is named from its
#     build-id debug file (--debug-dir / D9_DEBUG_DIR) and not without it;
#     no frame is a trampoline (ELF section d9_tramp).
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
PID=5151
PID2=5252   # known only by the objects its agent published: no map records

# a library with only .dynsym, its symbols in a debug file found by build-id
# (and a function with a local and a global name: named by the global one)
cat >"$T/fix.c" <<'EOF'
__attribute__((noinline, used)) static int fix_hidden_helper(int x) { return x * 3 + 1; }
int fix_exported(int x);
int fix_exported(int x) { return fix_hidden_helper(x) + 1; }
__attribute__((noinline, used)) static int fix_internal_impl(int x) { return fix_hidden_helper(x) * 2; }
extern int fix_public(int x) __attribute__((alias("fix_internal_impl")));
EOF
cc -shared -fPIC -g -O0 -Wl,--build-id -o "$T/libfix.so" "$T/fix.c"
# file offset of a symbol of an ELF file (through its PT_LOAD)
offset_of() { python3 - "$1" "$2" <<'PY'
import re, subprocess, sys
path, name = sys.argv[1], sys.argv[2]
va = None
for l in subprocess.run(['nm', path], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if len(f) == 3 and f[2] == name:
        va = int(f[0], 16)
if va is None:
    sys.exit(name + ': no such symbol in ' + path)
for l in subprocess.run(['readelf', '-lW', path], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == 'LOAD':
        off, vaddr, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
        if vaddr <= va < vaddr + filesz:
            print(hex(va - vaddr + off))
            sys.exit(0)
sys.exit('no PT_LOAD holds ' + name)
PY
}
OFF=$(offset_of "$T/libfix.so" fix_hidden_helper)
AOFF=$(($(offset_of "$T/libfix.so" fix_public) + 4))
BID=$(readelf -n "$T/libfix.so" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
DBG=$T/debug
mkdir -p "$DBG/$(echo "$BID" | cut -c1-2)"
objcopy --only-keep-debug "$T/libfix.so" "$DBG/$(echo "$BID" | cut -c1-2)/$(echo "$BID" | cut -c3-).debug"
strip --strip-all "$T/libfix.so"
check "the fixture library keeps only .dynsym" sh -c \
    "! readelf -SW '$T/libfix.so' | grep -q ' .symtab ' && readelf -SW '$T/libfix.so' | grep -q ' .dynsym '"
# a trampoline of the shim, 4 bytes into it
TLIB=$(cd "$BUILD/lib" && pwd)/libd9uv.so
TOFF=$(offset_of "$TLIB" uvwrap_t_timer_66)
check "the shim's trampolines are in the section d9_tramp" sh -c \
    "readelf -SW '$TLIB' | grep -q ' d9_tramp '"

"$TBIN/tool_store_known" "$T/store" "$T/libfix.so" "$OFF" "$TLIB" "$((TOFF + 4))" "$AOFF" >"$T/expect.txt"
check "the known store is made" test -f "$T/store/index.sqlite"
export D9_DEBUG_DIR="$DBG"
S="--store $T/store"

# ---- the answers of every reader -----------------------------------------------
$D9 $S sched --since 1000d --format jsonl >"$T/sched.jsonl"
$D9 $S sql --format jsonl "select worker, polls, parks, waits, wait_sum_ns, wait_max_ns, busy_ns from workers" >"$T/sql_workers.jsonl"
$D9 $S sql --format jsonl "select worker, count(*) as polls from polls group by worker" >"$T/sql_polls.jsonl"
$D9 $S sql --format jsonl "select worker, count(*) as parks from parks group by worker" >"$T/sql_parks.jsonl"
$D9 $S sql --format jsonl "select worker, count(*) as waits, sum(wait_ns) as wait_sum, max(wait_ns) as wait_max from sched_waits group by worker" >"$T/sql_waits.jsonl"
$D9 $S sql --format jsonl "select pid, stack_id, depth, frame from stacks order by stack_id, depth" >"$T/sql_stacks.jsonl"
$D9 $S top-polls --since 1000d --limit 100 --format jsonl >"$T/top.jsonl"
$D9 $S events --since 1000d --type poll_start --format jsonl >"$T/events.jsonl"
$D9 $S sql --format jsonl "select task, location from polls" >"$T/sql_locs.jsonl"
$D9 $S flame --pid $PID --since 1000d >"$T/flame.txt" 2>/dev/null
$D9 $S flame --pid $PID2 --since 1000d >"$T/flame2.txt" 2>/dev/null
$D9 $S export -o "$T/trace.json" 2>/dev/null
$D9 $S export --format perfetto -o "$T/trace.pftrace" 2>/dev/null
"$TBIN/tool_perfetto_check" "$T/trace.pftrace" --dump >"$T/perfetto.txt"
check "the Perfetto export is consistent" test -s "$T/perfetto.txt"
$D9 --store "$T/store" --debug-dir "$T/nowhere" flame --since 1000d >"$T/flame_nodebug.txt" 2>/dev/null

$D9 $S serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SPID=$!
at_exit kill "$SPID"
check "serve prints its URL" wait_for 10 sh -c "grep -q '^d9 serve: http://127.0.0.1:' '$T/serve.out'"
U=$(sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/serve.out")
get() { python3 - "$U" "$1" "$2" <<'PY'
import sys, urllib.request
open(sys.argv[3], 'wb').write(urllib.request.urlopen(sys.argv[1].rstrip('/') + sys.argv[2], timeout=20).read())
PY
}
check "serve answers /api/workers" get "/api/workers?pid=$PID" "$T/api_workers.json"
check "serve answers /api/timeline" get "/api/timeline?pid=$PID&from=1000000000&to=1100000000&width=4096" "$T/api_timeline.json"

# ---- the comparisons -------------------------------------------------------------
cat >"$T/cmp.py" <<'PY'
import json, sys
T = sys.argv[1]
what = sys.argv[2]
TID0 = 501
FIELDS = ('polls', 'parks', 'waits', 'wait_sum', 'wait_max', 'busy')

def jsonl(name):
    return [json.loads(l) for l in open(T + '/' + name) if l.strip()]

def expected():
    w, wakes = {}, {}
    for l in open(T + '/expect.txt'):
        f = l.split()
        if f[0] == 'worker':
            w[int(f[1])] = {f[i]: int(f[i + 1]) for i in range(2, len(f), 2)}
        elif f[0] == 'wake':
            wakes[int(f[1])] = (int(f[3]), int(f[5]))
    return w, wakes

def same(label, got, want):
    bad = [(k, got.get(k), want[k]) for k in want if got.get(k) != want[k]]
    if bad:
        sys.exit('%s: %s' % (label, ', '.join('%s got %s want %s' % b for b in bad)))

def workers_from(rows, names):
    return {int(r['worker']): {k: int(r[names[k]]) for k in names if names[k] in r} for r in rows}

exp, wakes = expected()
if what == 'expect':
    assert len(exp) == 3 and exp[1]['parks'] == 1 and exp[2]['wait_max'] >= 25000000, exp
    assert len(wakes) == 3 and (20005 - (20005 + 4096)) % 4096 == 0, wakes
    sys.exit(0)

def busy_of(spans):
    # the time in polls: the length of the union of a worker's poll slices
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total

def trace_json():
    ev = json.load(open(T + '/trace.json'))['traceEvents']
    w = {k: {'polls': 0, 'parks': 0, 'waits': 0, 'wait_sum': 0, 'wait_max': 0} for k in exp}
    span, parked = {}, {}
    for e in ev:
        tid = e.get('tid', 0) - TID0
        if e.get('ph') == 'X' and e.get('cat') == 'poll':
            w[tid]['polls'] += 1
            a, b = round(e['ts'] * 1000), round((e['ts'] + e['dur']) * 1000)
            span.setdefault(tid, []).append((a, b))
        elif e.get('ph') == 'X' and e.get('cat') == 'park':
            w[tid]['parks'] += 1
            parked[tid] = parked.get(tid, 0) + round(e['dur'] * 1000)
        elif e.get('ph') == 'C' and e['name'].startswith('sched_wait '):
            k = int(e['name'].rsplit('w', 1)[1])
            v = e['args']['wait_ns']
            w[k]['waits'] += 1
            w[k]['wait_sum'] += v
            w[k]['wait_max'] = max(w[k]['wait_max'], v)
    for k in w:
        w[k]['busy'] = busy_of(span[k])
    return w, ev

def perfetto():
    w = {k: {'polls': 0, 'parks': 0, 'waits': 0, 'wait_sum': 0, 'wait_max': 0} for k in exp}
    span, parked, flows, stacks = {}, {}, {}, []
    starts = {}
    for l in open(T + '/perfetto.txt'):
        f = l.split()
        if f[0] == 'slice':
            tid, name, a, b = int(f[1]) - TID0, f[2], int(f[3]), int(f[4])
            if name == 'parked':
                w[tid]['parks'] += 1
                parked[tid] = parked.get(tid, 0) + b - a
            else:
                w[tid]['polls'] += 1
                span.setdefault(tid, []).append((a, b))
        elif f[0] == 'counter' and f[1] == 'sched_wait':
            k, v = int(f[3][1:]), int(f[4])
            w[k]['waits'] += 1
            w[k]['wait_sum'] += v
            w[k]['wait_max'] = max(w[k]['wait_max'], v)
        elif f[0] == 'flow' and f[2] == 'start':
            starts[f[1]] = int(f[3])
        elif f[0] == 'flow' and f[2] == 'end':
            flows[f[1]] = (int(f[3]), int(f[4]))
        elif f[0] == 'stack':
            stacks.append((int(f[1]), l.split(None, 2)[2].strip()))
    for k in w:
        w[k]['busy'] = busy_of(span[k])
    return w, starts, flows, stacks

SCHED = {'polls': 'polls', 'parks': 'parks', 'waits': 'waits', 'wait_sum': 'sched_wait_sum_ns',
         'wait_max': 'sched_wait_max_ns', 'busy': 'busy_ns'}
if what == 'sched':
    got = workers_from(jsonl('sched.jsonl'), SCHED)
    for k in exp:
        same('sched w%d' % k, got[k], exp[k])
elif what == 'sql':
    got = workers_from(jsonl('sql_workers.jsonl'), {'polls': 'polls', 'parks': 'parks', 'waits': 'waits',
                       'wait_sum': 'wait_sum_ns', 'wait_max': 'wait_max_ns', 'busy': 'busy_ns'})
    for k in exp:
        same('sql workers w%d' % k, got[k], exp[k])
    counted = {}
    for f, keys in (('sql_polls.jsonl', {'polls': 'polls'}), ('sql_parks.jsonl', {'parks': 'parks'}),
                    ('sql_waits.jsonl', {'waits': 'waits', 'wait_sum': 'wait_sum', 'wait_max': 'wait_max'})):
        for k, v in workers_from(jsonl(f), keys).items():
            counted.setdefault(k, {}).update(v)
    for k in exp:
        same('sql polls/parks/sched_waits w%d' % k, counted[k],
             {x: exp[k][x] for x in ('polls', 'parks', 'waits', 'wait_sum', 'wait_max')})
elif what == 'serve':
    got = workers_from(json.load(open(T + '/api_workers.json'))['workers'], SCHED)
    for k in exp:
        same('/api/workers w%d' % k, got[k], exp[k])
    tl = json.load(open(T + '/api_timeline.json'))
    for lane in tl['lanes']:
        k = lane['tid'] - TID0
        same('/api/timeline lane w%d' % k, {'polls': lane['polls'], 'waits': lane['waits'],
             'wait_sum': lane['wait_sum_ns'], 'wait_max': lane['wait_max_ns']},
             {x: exp[k][x] for x in ('polls', 'waits', 'wait_sum', 'wait_max')})
    if len(tl['lanes']) != 3:
        sys.exit('lanes: %d' % len(tl['lanes']))
elif what == 'json':
    got, _ = trace_json()
    for k in exp:
        same('JSON export w%d' % k, got[k], exp[k])
elif what == 'perfetto':
    got = perfetto()[0]
    for k in exp:
        same('Perfetto export w%d' % k, got[k], exp[k])
elif what == 'wakes':
    want = sorted(wakes.values())
    _, ev = trace_json()
    ends = sorted((round(e['ts'] * 1000), e['tid']) for e in ev if e.get('ph') == 'f')
    if ends != want:
        sys.exit('JSON export flows end at %s, want %s' % (ends, want))
    _, _, flows, _ = perfetto()
    if sorted(flows.values()) != want:
        sys.exit('Perfetto flows end at %s, want %s' % (sorted(flows.values()), want))
    tl = json.load(open(T + '/api_timeline.json'))
    lanes = [l['tid'] for l in tl['lanes']]
    arrows = sorted((tl['from'] + a[2], lanes[a[3]]) for a in tl['wakes'])
    if tl['wakes_total'] != 3 or arrows != want:
        sys.exit('serve arrows end at %s (of %d), want %s' % (arrows, tl['wakes_total'], want))
elif what in ('frames', 'objects', 'debugname', 'notramp'):
    # pid 5151 (tid 501) has map records; pid 5252 (tid 601) only its agent's objects
    pid, tid, ff = (5151, 501, 'flame.txt') if what != 'objects' else (5252, 601, 'flame2.txt')
    flame = sorted(l.rsplit(' ', 1)[0] for l in open(T + '/' + ff) if l.strip())
    by = {}
    for r in jsonl('sql_stacks.jsonl'):
        if r['pid'] == pid:
            by.setdefault(r['stack_id'], []).append((r['depth'], r['frame']))
    sql = sorted(';'.join(f for _, f in sorted(v, reverse=True)) for v in by.values())
    _, ev = trace_json()
    js = sorted(';'.join(e['args']['stack']) for e in ev if e.get('cat') == 'cpu' and e['pid'] == pid)
    pf = sorted(s for t_, s in perfetto()[3] if t_ == tid)
    if what in ('frames', 'objects'):
        if len(flame) != (3 if what == 'frames' else 2):
            sys.exit('flame: %d stacks: %s' % (len(flame), flame))
        for label, v in (('sql stacks', sql), ('JSON export', js), ('Perfetto export', pf)):
            if v != flame:
                sys.exit('%s names the stacks %s, flame %s' % (label, v, flame))
        if not any(s.endswith('qsort') for s in flame):
            sys.exit('no libc frame named: %s' % flame)
        if not any(s == 'main;tsk_outer;tsk_leaf' for s in flame):
            sys.exit('the program\'s own frames are not named: %s' % flame)
    elif what == 'debugname':
        for label, v in (('flame', flame), ('sql stacks', sql), ('JSON export', js), ('Perfetto export', pf)):
            if not any(s.endswith(';fix_hidden_helper') for s in v):
                sys.exit('%s: the static function is not named from the debug file: %s' % (label, v))
        nodebug = open(T + '/flame_nodebug.txt').read()
        if 'fix_hidden_helper' in nodebug or 'libfix.so+0x' not in nodebug:
            sys.exit('without the debug file: %s' % nodebug)
    else:
        for label, v in (('flame', flame), ('sql stacks', sql), ('JSON export', js), ('Perfetto export', pf)):
            bad = [s for s in v if 'uvwrap_t_' in s or 'd9_tramp' in s or 'libd9uv' in s]
            if bad:
                sys.exit('%s shows a trampoline frame: %s' % (label, bad))
        if not any(s == 'main;tsk_outer;fix_public;fix_hidden_helper' for s in flame):
            sys.exit('the stack through the trampoline lost a frame, or an alias is not named by its global name: %s' % flame)
elif what == 'locs':
    # task -> location, as each reader prints it: one text, "file:line function"
    want = {t: 'src/long.c:22 long_poll' if t == 20005 + 4096 else 'src/short.c:11 short_poll'
            for t in [r['task'] for r in jsonl('sql_locs.jsonl')]}
    got = {
        'sql polls': {r['task']: r['location'] for r in jsonl('sql_locs.jsonl')},
        'top-polls': {r['task']: r['location'] for r in jsonl('top.jsonl')},
        'events': {r['task']: r['loc'] for r in jsonl('events.jsonl')},
        'JSON export': {e['args']['task']: e['args']['loc'] for e in trace_json()[1]
                        if e.get('cat') == 'poll' and e.get('ph') == 'X'},
    }
    tl = json.load(open(T + '/api_timeline.json'))
    got['serve'] = {i[4]: tl['locs'][i[3]] for i in tl['items'] if len(i) == 5 and i[3] > 0}
    if len(want) != 60:
        sys.exit('sql: %d polls' % len(want))
    for label, g in got.items():
        if g != want:
            sys.exit('%s prints the locations %s' % (label, sorted(set(g.values()))))
else:
    sys.exit('what? ' + what)
PY
C="python3 $T/cmp.py $T"
check "the known facts are as designed" $C expect
check "d9 sched --format jsonl: per worker polls, parks, waits (count, sum, max), busy" $C sched
check "d9 sql: workers, and polls, parks and sched_waits counted by SQL" $C sql
check "d9 serve: /api/workers and /api/timeline's lanes" $C serve
check "the JSON export: poll and parked slices, sched_wait counters, busy" $C json
check "the Perfetto export: poll and parked slices, sched_wait counters, busy" $C perfetto
check "every wake's flow ends at the same poll in both exports and d9 serve (tasks 4096 apart included)" $C wakes
check "every location is printed the same (file:line function) in sql, top-polls, events, the JSON export and serve" $C locs
check "every frame is named the same in flame, sql stacks and both exports (libc included)" $C frames
check "... also for a process with only the objects its agent published (no map records)" $C objects
check "a library with only .dynsym is named from its build-id debug file (D9_DEBUG_DIR), not without it" $C debugname
check "no frame is a shim trampoline (section d9_tramp); aliases are named by their global name" $C notramp
d9_finish consistency
