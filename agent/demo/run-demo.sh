#!/bin/sh
# run-demo.sh — `make demo`: collector + instrumented demo workload + queries.
#
#   1. starts d9collectd on a fresh store ./d9-demo-store, with its control
#      socket and the shared-memory regions in a private temp dir (no /run,
#      no /dev/shm, nothing left behind);
#   2. runs build/bin/d9demo for DEMO_SECONDS (default 4) seconds;
#   3. flushes, then prints `d9 ps`, `d9 top-polls`, the demo's custom
#      "request_done" events and `d9 sched`, and writes a Chrome trace;
#   4. stops the collector cleanly (SIGTERM, wait) and exits non-zero if any
#      step failed.
# Environment: BUILD (default build), DEMO_SECONDS, DEMO_WORKERS, DEMO_STORE.
set -u
BUILD=${BUILD:-build}
BIN=$BUILD/bin
STORE=${DEMO_STORE:-./d9-demo-store}
TRACE=./d9-demo-trace.json
SECONDS_=${DEMO_SECONDS:-4}
WORKERS=${DEMO_WORKERS:-}
failed=0
col_pid=""
demo_pid=""

say() { printf '\n==> %s\n' "$*"; }
fail() { printf 'demo: FAILED: %s\n' "$*" >&2; failed=$((failed + 1)); }

for b in d9collectd d9 d9demo; do
    if [ ! -x "$BIN/$b" ]; then
        echo "demo: $BIN/$b is missing: run 'make' (or 'make demo') first" >&2
        exit 1
    fi
done

RUN=$(mktemp -d /tmp/d9demo.XXXXXX) || { echo "demo: cannot create a temp dir" >&2; exit 1; }
cleanup() {
    [ -n "$demo_pid" ] && kill "$demo_pid" 2>/dev/null
    if [ -n "$col_pid" ] && kill -0 "$col_pid" 2>/dev/null; then
        kill -TERM "$col_pid" 2>/dev/null
        wait "$col_pid" 2>/dev/null
    fi
    rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export DIAL9_COLLECTOR="ipc://$RUN/collector.sock"
export DIAL9_SHM_DIR="$RUN/shm"
mkdir -p "$DIAL9_SHM_DIR"

say "starting d9collectd (store $STORE, endpoint $DIAL9_COLLECTOR)"
rm -rf "$STORE"
"$BIN/d9collectd" --store "$STORE" --endpoint "$DIAL9_COLLECTOR" --shm-dir "$DIAL9_SHM_DIR" \
    --log-level warn 2>"$RUN/collector.log" &
col_pid=$!
n=50
until "$BIN/d9" status >/dev/null 2>&1; do
    n=$((n - 1))
    if [ $n -le 0 ] || ! kill -0 "$col_pid" 2>/dev/null; then
        echo "demo: the collector did not come up; its log:" >&2
        cat "$RUN/collector.log" >&2
        exit 1
    fi
    sleep 0.1
done
echo "collector pid $col_pid is up"

say "running d9demo for $SECONDS_ s (traced)"
"$BIN/d9demo" --seconds "$SECONDS_" ${WORKERS:+--workers "$WORKERS"} &
demo_pid=$!
wait "$demo_pid" || fail "d9demo exited with status $?"
pid=$demo_pid
demo_pid=""

say "d9 flush: seal what the collector holds"
"$BIN/d9" flush || fail "d9 flush"

say "d9 status"
"$BIN/d9" status || fail "d9 status"

say "d9 ps"
"$BIN/d9" --store "$STORE" ps || fail "d9 ps"

say "d9 top-polls --pid $pid --limit 10   (slow_checksum in spawn_report_task should lead)"
"$BIN/d9" --store "$STORE" top-polls --pid "$pid" --limit 10 || fail "d9 top-polls"

say "d9 events --pid $pid --type custom --limit 10   (the request_done custom event)"
"$BIN/d9" --store "$STORE" events --pid "$pid" --type custom --limit 10 || fail "d9 events"

say "d9 sched --pid $pid"
"$BIN/d9" --store "$STORE" sched --pid "$pid" || fail "d9 sched"

# the last second of the run: --since counts back from now on a live store,
# and the demo ended a moment ago, so give the window explicitly
last=$("$BIN/d9" --store "$STORE" ps --pid "$pid" --format jsonl | sed -n 's/.*"last_ns":\([0-9]*\).*/\1/p')
from=$(( ${last:-1000000000} - 1000000000 ))
say "d9 export --pid $pid --from $from (the last second) -o $TRACE"
if "$BIN/d9" --store "$STORE" export --pid "$pid" --from "$from" -o "$TRACE"; then
    if command -v python3 >/dev/null 2>&1; then
        python3 -m json.tool "$TRACE" >/dev/null || fail "$TRACE is not valid JSON"
    fi
else
    fail "d9 export"
fi

say "stopping the collector"
kill -TERM "$col_pid"
wait "$col_pid"
rc=$?
col_pid=""
[ $rc -eq 0 ] || { fail "d9collectd exited with status $rc"; cat "$RUN/collector.log" >&2; }

echo
if [ $failed -ne 0 ]; then
    echo "demo: $failed step(s) failed"
    exit 1
fi
cat <<EOF
demo: done. The store stays in $STORE; try
    $BIN/d9 --store $STORE events --pid $pid --limit 20
    $BIN/d9 --store $STORE segments
    $BIN/d9 --store $STORE flame --pid $pid | head
and open $TRACE in https://ui.perfetto.dev (or chrome://tracing).
EOF
