#!/bin/sh
# test_loop_nginx.sh — nginx (its own epoll loop), unmodified, under
# LD_PRELOAD=libd9preload.so with DIAL9_LOOP=epoll: a master and one worker
# on 127.0.0.1, a bounded ab load, then a slow request (a large text file
# gzip-compressed at level 9 on the fly). The bodies, ab's counts and
# nginx's exit status must be those of an untraced nginx; the store must
# hold the worker's loop iterations as polls located in nginx's binary,
# its waits as parks, and the compression as its longest iterations, with
# CPU samples in zlib's deflate. nginx clears its workers' environment but
# for the variables its env directives name: the test's private shm dir and
# collector are passed that way (the defaults need nothing).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
. tests/integration/loop_env.sh
NGINX=${NGINX:-/usr/sbin/nginx}
REQUESTS=2000
if [ ! -x "$NGINX" ] || ! command -v ab >/dev/null || ! command -v curl >/dev/null; then
    check "nginx, ab and curl are installed (make test installs nginx-light apache2-utils curl)" false
    d9_finish loop-nginx; exit
fi
mkdir -p "$T/www"
echo "hello from nginx" >"$T/www/index.html"
# about 4 MiB of text that compresses slowly (level 9, few long matches)
python3 -c '
import random
r = random.Random(9)
w = ["loop", "poll", "park", "wake", "epoll", "nginx", "d9", "iteration", "worker", "event"]
print("\n".join(" ".join(r.choice(w) + str(r.randrange(1000)) for _ in range(12)) for _ in range(60000)))
' >"$T/www/big.txt"

# run_nginx NAME [env...]: master + 1 worker on a free port; master's pid in $NPID
run_nginx() {
    _nn=$1; shift
    PORT=$(free_port)
    mkdir -p "$T/$_nn"
    _user=""
    [ "$(id -u)" -eq 0 ] && _user="user root;"
    cat >"$T/$_nn/nginx.conf" <<CONF
$_user
daemon off;
master_process on;
worker_processes 1;
pid $T/$_nn/nginx.pid;
env DIAL9_SHM_DIR;
env DIAL9_COLLECTOR;
error_log $T/$_nn/error.log;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $T/$_nn;
    proxy_temp_path $T/$_nn;
    fastcgi_temp_path $T/$_nn;
    uwsgi_temp_path $T/$_nn;
    scgi_temp_path $T/$_nn;
    default_type text/plain;
    server {
        listen 127.0.0.1:$PORT;
        root $T/www;
        gzip on;
        gzip_types text/plain;
        gzip_comp_level 9;
        gzip_buffers 64 256k;
    }
}
CONF
    env "$@" "$NGINX" -p "$T/$_nn" -c "$T/$_nn/nginx.conf" >"$T/$_nn.stdout" 2>&1 &
    NPID=$!
    at_exit kill -9 "$NPID"
    wait_for 20 curl -sf "http://127.0.0.1:$PORT/index.html"
}
# requests NAME: the bodies (the big one compressed, as its SHA-1) into $T/NAME.out
requests() {
    { curl -sS "http://127.0.0.1:$PORT/index.html"
      curl -sS -H 'Accept-Encoding: gzip' "http://127.0.0.1:$PORT/big.txt" | sha1sum; } >"$T/$1.out" 2>&1
}
stop() {
    kill -TERM "$NPID"
    wait "$NPID"
    echo $? >"$T/$1.rc"
}

check "an untraced nginx starts" run_nginx plain
requests plain
stop plain

start_collector
check "nginx starts under the preload with DIAL9_LOOP=epoll" run_nginx traced DIAL9_LOOP=epoll LD_PRELOAD="$PRELOAD"
TPID=$NPID
timeout 60 ab -n $REQUESTS -c 10 "http://127.0.0.1:$PORT/index.html" >"$T/ab.out" 2>&1
check "ab: every request complete, none failed" sh -c \
    "grep -q '^Complete requests: *$REQUESTS\$' '$T/ab.out' && grep -q '^Failed requests: *0\$' '$T/ab.out'"
FROM=$(mono_ns)
requests traced
TO=$(mono_ns)
WPID=$(pgrep -P "$TPID" | head -1)
stop traced
check "the same bodies as untraced" cmp "$T/plain.out" "$T/traced.out"
check "the same exit status on SIGTERM ($(cat "$T/plain.rc"))" test "$(cat "$T/plain.rc")" = "$(cat "$T/traced.rc")"
check "nothing from the shim on nginx's output" sh -c "! grep -q 'd9' '$T/traced.stdout'"
check "the worker process ($WPID) was found" test -n "$WPID"
check "the collector records the worker's exit and seals its data" wait_for 20 ended "$WPID"
check "the worker's loop iterations are polls located in nginx" \
    has_polls_at "$WPID" 'nginx+0x' "$REQUESTS"
check "its epoll waits are parks" has_type "$WPID" worker_park 100
check "and unparks" has_type "$WPID" worker_unpark 100
top_polls "$WPID" --limit 1
gzip_longest() {
    _s=$(field start_ns <"$T/.top")
    [ -n "$_s" ] && [ "$_s" -ge "$FROM" ] && [ "$_s" -le "$TO" ] ||
        { echo "longest iteration (big.txt requested between $FROM and $TO):"; cat "$T/.top"; return 1; }
}
check "the compression is the longest iteration" gzip_longest
deflate_in_samples() {
    $D9 flame --pid "$WPID" --task "$(field task <"$T/.top")" >"$T/.flame" 2>&1
    grep -q 'deflate\|libz' "$T/.flame" || { echo "samples of the longest iteration:"; head "$T/.flame"; return 1; }
}
check "  its CPU samples are in zlib's deflate" deflate_in_samples
check "no record of nginx was lost" no_lost "$WPID"
d9_finish loop-nginx
