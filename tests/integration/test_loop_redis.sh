#!/bin/sh
# test_loop_redis.sh — redis-server, unmodified, under LD_PRELOAD=libd9preload.so
# with DIAL9_LOOP=epoll (redis runs its own epoll loop, ae.c): a private
# config on 127.0.0.1, a bounded redis-benchmark, then two slow commands
# (DEBUG SLEEP 0.05, KEYS * over a populated keyspace). Every reply must be
# what the same commands get from an untraced redis-server, which exits the
# same; the store must hold redis's loop iterations as polls at the place
# its loop calls epoll_wait (in redis's own binary: its ae.c functions are
# static, so the location is named redis-check-rdb+0xOFFSET after the file
# Debian's redis-server links to) and its waits as parks; the
# two slow commands must be the longest iterations after the populate, and
# the CPU samples of the KEYS iteration must be in redis's keysCommand.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
. tests/integration/loop_env.sh
REDIS=${REDIS:-/usr/bin/redis-server}
KEYS_N=200000
if [ ! -x "$REDIS" ] || ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null; then
    check "redis-server, redis-cli and redis-benchmark are installed (make test installs redis-server redis-tools)" false
    d9_finish loop-redis; exit
fi

# run_redis NAME [env...]: redis-server on a free port with its own dir; pid in $RPID
run_redis() {
    _rn=$1; shift
    PORT=$(free_port)
    mkdir -p "$T/$_rn"
    cat >"$T/$_rn/redis.conf" <<CONF
port $PORT
bind 127.0.0.1
dir $T/$_rn
save ""
appendonly no
daemonize no
logfile $T/$_rn/log
enable-debug-command local
CONF
    env "$@" "$REDIS" "$T/$_rn/redis.conf" >"$T/$_rn/stdout" 2>&1 &
    RPID=$!
    at_exit kill -9 "$RPID"
    wait_for 20 sh -c "redis-cli -p $PORT ping | grep -q PONG"
}
cli() { timeout 30 redis-cli -p "$PORT" "$@"; }
# the commands whose replies are compared (the benchmark's numbers vary:
# it runs first and its keys are flushed)
populate() {
    cli flushall
    cli debug populate $KEYS_N
}
slow() {
    cli dbsize
    cli set d9 loop
    cli get d9
    cli debug sleep 0.05
    cli keys '*' | wc -l
}
# stop NAME: SIGTERM; its exit status into $T/NAME.rc
stop() {
    kill -TERM "$RPID"
    wait "$RPID"
    echo $? >"$T/$1.rc"
}

check "an untraced redis-server starts" run_redis plain
{ populate; slow; } >"$T/plain.out" 2>&1
stop plain

# every scheduler tick (250 Hz here): a KEYS iteration of ~70 ms gets ~17 samples
start_collector --perf-freq 250
check "redis-server starts under the preload with DIAL9_LOOP=epoll" \
    run_redis traced DIAL9_LOOP=epoll LD_PRELOAD="$PRELOAD"
TPID=$RPID
timeout 60 redis-benchmark -p "$PORT" -n 20000 -c 10 -t set,get -q >"$T/bench.out" 2>&1
check "redis-benchmark ran its bounded load" \
    sh -c "grep -q 'SET: [0-9.]* requests per second' '$T/bench.out' && grep -q 'GET: [0-9.]* requests per second' '$T/bench.out'"
populate >"$T/traced.out" 2>&1
FROM=$(mono_ns)
slow >>"$T/traced.out" 2>&1
TO=$(mono_ns)
stop traced
check "the same replies as untraced" cmp "$T/plain.out" "$T/traced.out"
check "the same exit status on SIGTERM ($(cat "$T/plain.rc"))" test "$(cat "$T/plain.rc")" = "$(cat "$T/traced.rc")"
check "nothing from the shim on redis's output" sh -c "! grep -q 'd9' '$T/traced/stdout'"
check "the collector records redis's exit and seals its data" wait_for 20 ended "$TPID"

check "redis's loop iterations are polls located in redis's binary" \
    has_polls_at "$TPID" '[^"]*redis-[a-z-]*+0x' 1000
one_site() {
    _s=$(sed -n 's/.*"location":"\([^"]*\)".*/\1/p' "$T/.polls" | sort -u)
    [ "$(echo "$_s" | grep -c .)" -eq 1 ] || { echo "call sites: $_s"; return 1; }
}
check "  all at one call site (its one epoll_wait)" one_site
check "its epoll waits are parks" has_type "$TPID" worker_park 1000
check "and unparks" has_type "$TPID" worker_unpark 1000
# after the populate: the two slow commands are the two longest iterations
top_polls "$TPID" --from "$FROM" --to "$TO" --limit 2
# durations of the listed polls, one per line
durations() { field duration_ns <"$T/.top"; }
two_slow() {
    [ "$(grep -c . "$T/.top")" -eq 2 ] && durations | awk '$1 < 20000000 { bad = 1 } END { exit bad }' ||
        { echo "longest iterations after the populate:"; cat "$T/.top"; return 1; }
}
check "the two longest iterations after the populate are >= 20 ms" two_slow
sleep_found() { durations | awk '$1 >= 50000000 { ok = 1 } END { exit !ok }'; }
check "one of them is DEBUG SLEEP 0.05 (>= 50 ms)" sleep_found
keys_in_samples() {
    for task in $(field task <"$T/.top"); do
        $D9 flame --pid "$TPID" --task "$task" 2>/dev/null | grep -q 'keysCommand' && return 0
    done
    echo "no keysCommand in the samples of the longest iterations:"; cat "$T/.top"
    for task in $(field task <"$T/.top"); do $D9 flame --pid "$TPID" --task "$task" | head -5; done
    return 1
}
check "the KEYS iteration's CPU samples are in keysCommand" keys_in_samples
check "no record of redis was lost" no_lost "$TPID"
d9_finish loop-redis
