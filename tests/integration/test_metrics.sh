#!/bin/sh
# test_metrics.sh — d9collectd --metrics scraped by a real Prometheus: a
# traced program with known counts (prog_cli), then Prometheus's query API
# answers d9's worker series with the values `d9 sql` gives on the same
# store (polls, parks, scheduling wait sum and count, parked and busy time,
# the poll duration histogram's count and sum: the finished polls of the
# polls table).
# Prometheus 2.x scrapes in OpenMetrics 1.0 (its Accept header prefers it;
# its metadata then has the families' units), plain curl gets text 0.0.4.
# Also: promtool's lint of the exposition, bad --metrics values refused
# with one line, HTTP methods and paths, hostile bytes and a connection
# flood leave the endpoint answering.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

PY="python3 tests/integration/metrics_check.py"
d9() { "$BIN/d9" --store "$STORE" "$@"; }

# ---- bad values: exit 2, one line naming the option ---------------------------------
one_line_refusal() {
    timeout 10 "$BIN/d9collectd" --store "$T/nostore" --shm-dir "$SHM" --endpoint "ipc://$T/x.sock" \
        "$@" >"$T/bad.out" 2>"$T/bad.err"
    rc=$?
    [ "$rc" -eq 2 ] || { echo "exit $rc"; cat "$T/bad.err"; return 1; }
    [ "$(wc -l <"$T/bad.err")" -eq 1 ] || { cat "$T/bad.err"; return 1; }
    grep -q "metrics" "$T/bad.err" || { cat "$T/bad.err"; return 1; }
}
for v in abc 65536 127.0.0.1: :9464 1.2.3:80 127.0.0.1:-1 "127.0.0.1:80 " 0x10 localhost:http; do
    check "--metrics '$v' is refused with one line" one_line_refusal --metrics "$v"
done
printf 'metrics = 99999\n' >"$T/bad.conf"
check "config key 'metrics = 99999' is refused with FILE:LINE" sh -c \
    "'$BIN/d9collectd' --config '$T/bad.conf' 2>&1 >/dev/null |
     grep -q '^d9collectd: $T/bad.conf:1: .*metrics'"
check "--print-config keeps the value" sh -c \
    "'$BIN/d9collectd' --metrics 9464 --print-config | grep -qx 'metrics = 9464'"

# ---- the collector with a metrics endpoint on a free port ----------------------------
start_collector --metrics 127.0.0.1:0
port() { sed -n 's|.*metrics: http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$T/col.log"; }
check "the log names the port" wait_for 10 sh -c "grep -q 'metrics: http://127.0.0.1:[1-9]' '$T/col.log'"
MPORT=$(port)
MURL="http://127.0.0.1:$MPORT/metrics"

# d9 sql's workers, with each one's finished polls (the histogram's count and sum)
WORKERS_SQL='select w.pid, w.runtime, w.worker, w.polls, w.parks, w.waits, w.wait_sum_ns,
  w.parked_ns, w.busy_ns, count(p.dur_ns) as finished, coalesce(sum(p.dur_ns), 0) as dur_sum_ns
  from workers w left join polls p on p.pid = w.pid and p.runtime = w.runtime
  and p.worker = w.worker and p.end_ns is not null group by w.pid, w.runtime, w.worker'
export WORKERS_SQL
DIAL9_SCHED_SAMPLE_US=0 "$TBIN/prog_cli" >"$T/cli.out" 2>"$T/cli.err"
PID=$(head -n 1 "$T/cli.out")
ended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null |
          grep -q "\"pid\":$PID,.*\"state\":\"exited\""; }
check "prog_cli ran and its process ended in the store" wait_for 20 ended
check "d9 sql lists its two workers" sh -c \
    "'$BIN/d9' --store '$STORE' sql --format csv \"\$WORKERS_SQL\" >'$T/workers.csv' &&
     [ \$(grep -c '^$PID,' '$T/workers.csv') -eq 2 ]"

# a poll that never ends, then finished and nested polls: busy time and the
# histogram still count them (q_sched's rule), as d9 sql does
"$TBIN/prog_metbusy" >"$T/busy.out" 2>"$T/busy.err"
BPID=$(head -n 1 "$T/busy.out")
bended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null |
           grep -q "\"pid\":$BPID,.*\"state\":\"exited\""; }
check "prog_metbusy ran and its process ended in the store" wait_for 20 bended
# its 55 polls, 54 finished; busy >= the 50 short polls' 20 us busy loops; the
# histogram's sum counts the two overlapping polls' time again (>= 2 x 20 us)
busy_row() {
    "$BIN/d9" --store "$STORE" sql --format csv "$WORKERS_SQL" >"$T/busy.csv" &&
    tr -d '\r' <"$T/busy.csv" | awk -F, -v p="$BPID" '$1 == p && $2 == "busyrt" && $3 == 0 &&
        $4 == 55 && $9 >= 50 * 20000 && $10 == 54 && $11 >= $9 + 40000 { ok = 1 }
        END { exit !ok }' || { cat "$T/busy.csv"; return 1; }
}
check "d9 sql: its worker's busy time counts the polls after the open one" busy_row

# ---- HTTP behaviour ------------------------------------------------------------------
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "GET /metrics: 200, text format 0.0.4" sh -c \
    "curl -sfD '$T/h' -o '$T/m.txt' '$MURL' &&
     grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' '$T/h'"
# the text is published by the collector's loop (every MET_PUBLISH_NS and at
# a process's end), so each try fetches it again
series() { curl -sf -o "$T/m.txt" "$MURL" &&
           grep -q "^d9_worker_polls_total{pid=\"$PID\",comm=\"prog_cli\",runtime=\"clirt\",worker=\"0\"} " "$T/m.txt"; }
check "its series for the exited process" wait_for 10 series
check "promtool check metrics: no lint findings" sh -c "promtool check metrics <'$T/m.txt'"
# OpenMetrics 1.0 when the Accept header prefers it (Prometheus 2.x's own header)
PROM_ACCEPT='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
check "Accept preferring OpenMetrics: its content type, # EOF last" sh -c \
    "curl -sfD '$T/oh' -o '$T/m.om' -H 'Accept: $PROM_ACCEPT' '$MURL' &&
     grep -qi '^content-type: application/openmetrics-text; version=1.0.0; charset=utf-8' '$T/oh' &&
     [ \"\$(tail -n 1 '$T/m.om')\" = '# EOF' ]"
check "OpenMetrics: counter families without _total, samples with it, units" sh -c \
    "grep -qx '# TYPE d9_worker_busy_seconds counter' '$T/m.om' &&
     grep -qx '# UNIT d9_worker_busy_seconds seconds' '$T/m.om' &&
     grep -q '^d9_worker_busy_seconds_total{pid=' '$T/m.om'"
check "Accept text/plain: the 0.0.4 text" sh -c \
    "curl -sfD '$T/th' -o /dev/null -H 'Accept: text/plain;version=0.0.4' '$MURL' &&
     grep -qi '^content-type: text/plain; version=0.0.4' '$T/th'"
check "POST: 405" test "$(code -X POST "$MURL")" = 405
check "another path: 404" test "$(code "http://127.0.0.1:$MPORT/other")" = 404
body_closed() { curl -s -o /dev/null --data-binary @"$T/m.txt" -X GET "$MURL"; [ $? -eq 52 ]; }
check "a request with a body: closed without an answer" body_closed
check "hostile bytes and 200 idle connections" $PY raw "$MPORT"
check "the endpoint still answers after them" wait_for 15 curl -sf -o /dev/null "$MURL"

# ---- Prometheus scraping it ----------------------------------------------------------
PPORT=$($PY port)
cat >"$T/prom.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: d9
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
CONF
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address="127.0.0.1:$PPORT" >"$T/prom.log" 2>&1 &
PROMPID=$!
at_exit kill -9 "$PROMPID"
PURL="http://127.0.0.1:$PPORT"
check "prometheus is ready" wait_for 20 curl -sf -o /dev/null "$PURL/-/ready"
scraped() { curl -sf "$PURL/api/v1/query?query=up%7Bjob%3D%22d9%22%7D" | grep -q '"value":\[[0-9.]*,"1"\]'; }
check "prometheus scraped d9 (up == 1)" wait_for 20 scraped
# Prometheus 2.x asks for OpenMetrics first: its metadata has the families'
# units, which only OpenMetrics carries (the values below came that way)
om_scraped() { curl -sf "$PURL/api/v1/metadata?metric=d9_worker_busy_seconds" |
               grep -q '"type":"counter".*"unit":"seconds"'; }
check "prometheus scraped OpenMetrics (the unit of d9_worker_busy_seconds)" wait_for 20 om_scraped
check "prometheus answers d9 sql's values for every worker" \
    wait_for 10 $PY compare "$PURL" "$PID" "$T/workers.csv"
$PY compare "$PURL" "$PID" "$T/workers.csv" | sed 's/^/    /'
check "... and for the worker whose first poll never ends" \
    wait_for 10 $PY compare "$PURL" "$BPID" "$T/busy.csv"
$PY compare "$PURL" "$BPID" "$T/busy.csv" | sed 's/^/    /'

check "collector stops cleanly" stop_collector
check "no error in the collector's log" lacks "error|sanitizer" cat "$T/col.log"
d9_finish test_metrics
