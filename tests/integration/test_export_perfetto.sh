#!/bin/sh
# test_export_perfetto.sh — `d9 export --format perfetto` on a demo store:
# the file decodes with protobuf-c as a Trace (tool_perfetto_check checks
# sequence, clock, interning, tracks, balanced slices, flows) and holds
# every record the JSON export holds (polls, parked spans, instants,
# counters) plus every CPU sample of `d9 events`; the file is smaller.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
demo_store
check "demo store made" test -f "$T/d9-demo-store/index.sqlite"
d9() { "$BIN/d9" --store "$T/d9-demo-store" "$@"; }

check "export --format perfetto writes a file" d9 export --format perfetto -o "$T/t.pftrace"
check "export --format json writes a file" d9 export -o "$T/t.json"
check "the perfetto file decodes and is consistent" \
    sh -c "'$TBIN/tool_perfetto_check' '$T/t.pftrace' spawn_report_task >'$T/pf.txt'"
cat "$T/pf.txt" | tr '\n' ' '; echo
pf() { sed -n "s/^$1 //p" "$T/pf.txt"; }
python3 -c "
import json, collections
ev = json.load(open('$T/t.json'))['traceEvents']
c = collections.Counter()
for e in ev:
    if e['ph'] == 'X': c['parks' if e['name'] == 'parked' else 'polls'] += 1
    # CPU samples are instants (category cpu) in JSON, PerfSamples in Perfetto
    if e['ph'] == 'i' and e.get('cat') != 'cpu': c['instants'] += 1
    if e['ph'] == 'C': c['counters'] += 1
    if e['ph'] == 'X' and e['name'] == 'spawn_report_task': c['named'] += 1
for k in ('polls', 'parks', 'instants', 'counters', 'named'): print(k, c[k])
" >"$T/js.txt"
js() { sed -n "s/^$1 //p" "$T/js.txt"; }
same() { [ "$(pf "$1")" = "$(js "$1")" ] || { echo "$1: perfetto $(pf "$1"), json $(js "$1")"; return 1; }; }
check "every poll of the JSON export is a slice" same polls
check "every parked span is a slice" same parks
check "every wake, spawn, terminate and custom event is an instant" same instants
check "every queue-depth sample is a counter value" same counters
check "the demo's long report polls (slow_checksum) are there by name" same named
check "the report polls are long (slow_checksum runs >= 80 ms)" \
    sh -c "[ $(pf named_max_ns) -ge 80000000 ]"
check "every slice begun is ended" sh -c "[ $(pf ends) -eq $(( $(pf polls) + $(pf parks) )) ]"
check "wakes start flows and wakee polls end them" sh -c "[ $(pf flows) -gt 0 ] && [ $(pf terminated) -gt 0 ]"
NS=$(d9 events --type cpu_sample 2>/dev/null | wc -l)
check "every CPU sample is a PerfSample ($NS)" sh -c "[ $(pf samples) -eq $NS ]"
check "one thread track per traced thread" sh -c "[ $(pf threads) -ge 2 ]"
SJ=$(stat -c %s "$T/t.json"); SP=$(stat -c %s "$T/t.pftrace")
echo "json $SJ bytes, perfetto $SP bytes"
check "the perfetto file is smaller than the JSON" test "$SP" -lt "$SJ"
check "--format garbage is a usage error (exit 2)" sh -c "'$BIN/d9' --store '$T/d9-demo-store' export --format xml >/dev/null 2>&1; [ \$? -eq 2 ]"
d9 export --format perfetto --from 1 --to 2 -o "$T/empty.pftrace" 2>/dev/null
check "an empty window is a valid (empty) trace" sh -c "'$TBIN/tool_perfetto_check' '$T/empty.pftrace'"
d9_finish export_perfetto
