#!/bin/sh
# test_uv_named.sh — BIND's named, unmodified, under LD_PRELOAD=libd9preload.so:
# a private config (one zone, port on 127.0.0.1, temp directory) answering
# dnsperf at a fixed rate for a few seconds. Every query must be answered as
# without the preload; the store must hold named's libuv callbacks in d9
# top-polls by function name (isc__nm_alloc_cb, exported by libisc), its
# network threads as workers in d9 sched, and no lost record.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
. tests/integration/named_env.sh
NAMED=${NAMED:-/usr/sbin/named}
PORT=${D9_NAMED_PORT:-53953}
SECONDS_RUN=3
RATE=2000
if [ ! -x "$NAMED" ] || ! command -v dnsperf >/dev/null; then
    check "named and dnsperf are installed (make test installs bind9 dnsperf)" false
    d9_finish uv-named; exit
fi

named_setup "$T/named" "$PORT"

start_collector
check "the collector starts" test -n "$COLPID"
LD_PRELOAD=$PRELOAD "$NAMED" -g -4 -n 2 -c "$T/named/named.conf" >"$T/named/log" 2>&1 &
NPID=$!
at_exit kill -9 "$NPID"
check "named starts on 127.0.0.1:$PORT under the preload" \
    wait_for 20 grep -q 'running$' "$T/named/log"
timeout 30 dnsperf -s 127.0.0.1 -p "$PORT" -d "$T/named/queries" -l $SECONDS_RUN -Q $RATE \
    >"$T/dnsperf.out" 2>&1
check "dnsperf ran" grep -q 'Queries completed' "$T/dnsperf.out"
sent=$(sed -n 's/^ *Queries sent: *\([0-9]*\).*/\1/p' "$T/dnsperf.out")
done_=$(sed -n 's/^ *Queries completed: *\([0-9]*\).*/\1/p' "$T/dnsperf.out")
check "every query was answered (sent $sent, completed $done_)" \
    sh -c "[ '${sent:-0}' -gt 0 ] && [ '$sent' = '$done_' ] && grep -q 'NOERROR $sent ' '$T/dnsperf.out'"
kill -TERM "$NPID"
wait_for 10 sh -c "! kill -0 $NPID"
check "named exits on SIGTERM as usual" sh -c "! kill -0 $NPID"
check "the collector records named's exit and seals its data" wait_for 20 ended "$NPID"
check "named's receive buffer callback is in top-polls by name" \
    has_polls_at "$NPID" 'libisc-[^"]*+0x[0-9a-f]* isc__nm_alloc_cb"' 1
# every datagram is one receive callback at least; static functions of the
# stripped libisc have no symbol: they are named libisc-...so+0xoffset
check "named's callbacks in libisc: at least one poll per query" \
    has_polls_at "$NPID" '[^"]*libisc-' "$sent"
check "named's network threads are workers in d9 sched" has_workers "$NPID" 2
check "the shim made no unresolved code location" sh -c "! grep -q '\"location\":\"\\[code\\]' '$T/.polls'"
check "no record of named was lost" no_lost "$NPID"
d9_finish uv-named
