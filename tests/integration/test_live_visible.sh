#!/bin/sh
# test_live_visible.sh — a running traced program's records are seen by the
# reading commands without `d9 flush`, with the collector at its default
# segment settings (64 MiB / 60 s: nothing would be sealed for a minute):
# d9 ps shows records and a span while it runs, top-polls and sql see its
# polls, --no-flush keeps the old behaviour (only sealed data), and a
# collector writing another store is not asked.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
start_collector
workload live --threads 1 --events 6000000 --polls --batch 10 --pace-us 1000 --exit clean \
    --stop-file "$T/stop"
WPID=$(wl_pid live)
d9() { "$BIN/d9" --store "$STORE" "$@"; }
# ps_field FIELD [flags]: FIELD of the workload's jsonl row of d9 ps
ps_field() {
    _f=$1; shift
    d9 ps --pid "$WPID" --format jsonl "$@" | python3 -c "
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print(rows[0].get('$_f', 0) if rows else 0)"
}
adopted() { "$BIN/d9" status --pid "$WPID" >/dev/null 2>&1; }
check "the collector adopts the running program" wait_for 20 adopted
sleep 2
check "--no-flush: nothing sealed yet, so ps shows 0 records (the old behaviour)" \
    test "$(ps_field records --no-flush)" -eq 0
seen() { [ "$(ps_field records)" -gt 0 ]; }
check "ps shows records of the running program without d9 flush" wait_for 20 seen
span() { python3 -c "import sys; sys.exit(0 if $(ps_field last_ns) > $(ps_field first_ns) > 0 else 1)"; }
check "ps shows a span > 0 for it" span
check "the program is still running" kill -0 "$WPID"
check "top-polls sees its polls" \
    sh -c "'$BIN/d9' --store '$STORE' top-polls --pid $WPID --limit 3 --format jsonl | grep -q '\"dur'"
check "sql sees its polls" sh -c "[ \$('$BIN/d9' --store '$STORE' sql --format csv \
    'select count(*) from polls where pid = $WPID' | tail -1) -gt 0 ]"
R1=$(ps_field records)
sleep 1.5
grew() { [ "$(ps_field records)" -gt "$R1" ]; }
check "a later ps sees more records (the next open segment, once 1 s old)" wait_for 20 grew
R2=$(ps_field records --no-flush)
sleep 1.5
check "--no-flush seals nothing: the count stays" test "$(ps_field records --no-flush)" -eq "$R2"
# another store: the collector is not asked to flush anything
mkdir -p "$T/other"
"$BIN/d9" --store "$T/other" ps >/dev/null 2>&1
check "a command on another store does not flush this collector's store" \
    test "$(ps_field records --no-flush)" -eq "$R2"
touch "$T/stop"
d9_finish live-visible
