#!/bin/sh
# test_loop_memcached.sh — memcached (libevent), unmodified, under
# LD_PRELOAD=libd9preload.so with the default DIAL9_LOOP: on 127.0.0.1, a
# bounded memcslap load, then a slow request (one multiget of many keys,
# tests/integration/mc_client.py). The client's replies and memcached's exit
# status must be those of an untraced memcached; the store must hold
# memcached's libevent callbacks as polls located in memcached's binary,
# its event bases' waits as parks, and the multiget as the longest poll.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
. tests/integration/loop_env.sh
MEMCACHED=${MEMCACHED:-/usr/bin/memcached}
KEYS_N=50000
if [ ! -x "$MEMCACHED" ] || ! command -v memcslap >/dev/null; then
    check "memcached and memcslap are installed (make test installs memcached libmemcached-tools)" false
    d9_finish loop-memcached; exit
fi

# run_mc NAME [env...]: memcached on a free port (-u: it refuses root without it); pid in $MPID
run_mc() {
    _mn=$1; shift
    PORT=$(free_port)
    env "$@" "$MEMCACHED" -u "$(id -un)" -l 127.0.0.1 -p "$PORT" -U 0 -t 2 \
        >"$T/$_mn.stdout" 2>&1 &
    MPID=$!
    at_exit kill -9 "$MPID"
    wait_for 20 python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT)).close()"
}
# stop NAME: SIGTERM; its exit status into $T/NAME.rc
stop() {
    kill -TERM "$MPID"
    wait "$MPID"
    echo $? >"$T/$1.rc"
}

check "an untraced memcached starts" run_mc plain
timeout 30 python3 tests/integration/mc_client.py "$PORT" $KEYS_N >"$T/plain.out" 2>&1
stop plain

start_collector
check "memcached starts under the preload" run_mc traced LD_PRELOAD="$PRELOAD"
TPID=$MPID
timeout 30 memcslap --servers=127.0.0.1:"$PORT" --concurrency=4 --execute-number=2000 \
    >"$T/slap.out" 2>&1
echo $? >"$T/slap.rc"
check "memcslap ran its bounded load" sh -c "[ \$(cat '$T/slap.rc') -eq 0 ] && grep -q 'Time total' '$T/slap.out'"
FROM=$(mono_ns)
timeout 30 python3 tests/integration/mc_client.py "$PORT" $KEYS_N >"$T/traced.out" 2>&1
TO=$(mono_ns)
stop traced
check "the client's replies are the same as untraced" cmp "$T/plain.out" "$T/traced.out"
check "  and complete ($KEYS_N values)" grep -q "^multiget $KEYS_N values $KEYS_N " "$T/traced.out"
check "the same exit status on SIGTERM ($(cat "$T/plain.rc"))" test "$(cat "$T/plain.rc")" = "$(cat "$T/traced.rc")"
check "nothing from the shim on memcached's output" sh -c "! grep -q 'd9' '$T/traced.stdout'"
check "the collector records memcached's exit and seals its data" wait_for 20 ended "$TPID"

check "memcached's libevent callbacks are polls located in memcached" \
    has_polls_at "$TPID" 'memcached+0x' 1000
check "libevent's own functions are never a poll's location" sh -c "! grep -q 'libevent' '$T/.polls'"
check "its event bases' waits are parks" has_type "$TPID" worker_park 100
check "and unparks" has_type "$TPID" worker_unpark 100
check "the main and the 2 worker threads' bases are workers" has_workers "$TPID" 3
# the slow request: the longest poll of the whole run is in the multiget's window
top_polls "$TPID" --limit 1
multiget_longest() {
    _s=$(field start_ns <"$T/.top")
    [ -n "$_s" ] && [ "$_s" -ge "$FROM" ] && [ "$_s" -le "$TO" ] ||
        { echo "longest poll (multiget sent between $FROM and $TO):"; cat "$T/.top"; return 1; }
}
check "the multiget is the longest poll" multiget_longest
check "no record of memcached was lost" no_lost "$TPID"
d9_finish loop-memcached
