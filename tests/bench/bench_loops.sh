#!/bin/sh
# bench_loops.sh — what LD_PRELOAD=libd9preload.so costs real event-loop
# servers: memcached (libevent, default DIAL9_LOOP) under memcslap, redis
# (DIAL9_LOOP=epoll) under redis-benchmark, nginx (DIAL9_LOOP=epoll, one
# worker) under ab; all on 127.0.0.1. Paired runs whose order alternates
# (off/on, on/off, ...) so that drift of the machine falls on both sides
# alike; the collector runs throughout (both sides pay its share of the
# CPUs), the "on" side is traced into it. Then the shim's cost per callback
# (bench_loop_cb, libuv and libevent: a plain call against the call
# libevent/libuv stores, in the same run).
#
# Printed: every pair, then per server the medians off and on with the
# overhead and the spread of the per-pair overheads (min .. max). Figures:
#   memcached  memcslap's sets per second (memcslap reports no latency)
#   redis      SET and GET requests per second and p99 (ms) from
#              redis-benchmark --csv (-c 20, -n BENCH_LOOPS_N)
#   nginx      ab's requests per second and its 99 % line (ms, whole ms)
# The 1 % target is printed beside the numbers, never enforced. Numbers of
# a run belong in tests/bench/RESULTS.md, not here.
#
# Environment: BUILD (default build), BENCH_QUICK=1 (2 pairs, smaller
# loads), BENCH_LOOPS_PAIRS (default 5), BENCH_LOOPS_N (requests per load,
# default 100000), BENCH_KEEP=1 (keep the temp dir). Only processes started
# here are signalled.
set -u
BUILD=${BUILD:-build}
BIN=$(cd "$BUILD/bin" && pwd)
PRELOAD=$(cd "$BUILD/lib" && pwd)/libd9preload.so
CB=$BUILD/bench/bench_loop_cb
PAIRS=${BENCH_LOOPS_PAIRS:-5}
N=${BENCH_LOOPS_N:-100000}
if [ "${BENCH_QUICK:-0}" = 1 ]; then PAIRS=2; N=20000; fi
for x in memcached memcslap redis-server redis-benchmark redis-cli nginx ab curl python3; do
    command -v "$x" >/dev/null || [ -x "/usr/sbin/$x" ] ||
        { echo "bench_loops: needs $x (install-deps with the bench packages)" >&2; exit 2; }
done
[ -f "$PRELOAD" ] || { echo "bench_loops: needs $PRELOAD (make all)" >&2; exit 2; }
NGINX=/usr/sbin/nginx

T=$(mktemp -d /tmp/d9bench-loops.XXXXXX)
COLPID=""
SPID=""
cleanup() {
    [ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null
    [ -n "$COLPID" ] && kill -TERM "$COLPID" 2>/dev/null && wait "$COLPID" 2>/dev/null
    [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
mkdir -p "$T/shm" "$T/www"
echo "hello from nginx" >"$T/www/index.html"

EP=ipc://$T/c.sock
"$BIN/d9collectd" --store "$T/store" --shm-dir "$T/shm" --endpoint "$EP" >"$T/col.log" 2>&1 &
COLPID=$!
i=0
until "$BIN/d9" status --endpoint "$EP" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "bench_loops: collector did not start" >&2; exit 1; }
    sleep 0.1
done

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# traced MODE LOOP cmd...: cmd in the background, under the preload when MODE is on; pid in SPID
traced() {
    _m=$1 _l=$2; shift 2
    if [ "$_m" = on ]; then
        DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP DIAL9_LOOP=$_l LD_PRELOAD=$PRELOAD "$@" >"$T/srv.log" 2>&1 &
    else
        "$@" >"$T/srv.log" 2>&1 &
    fi
    SPID=$!
}
up() {      # up PORT: wait until 127.0.0.1:PORT accepts
    i=0
    until python3 -c "import socket; socket.create_connection(('127.0.0.1', $1)).close()" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 200 ] && { echo "bench_loops: server did not start" >&2; cat "$T/srv.log" >&2; exit 1; }
        sleep 0.05
    done
}
down() { kill -TERM "$SPID"; wait "$SPID" 2>/dev/null; SPID=""; }

# each prints its figures, space-separated, "-" where a figure is missing
run_memcached() {
    port=$(free_port)
    traced "$1" event memcached -u "$(id -un)" -l 127.0.0.1 -p "$port" -U 0 -t 2
    up "$port"
    t0=$(date +%s.%N)
    timeout 120 memcslap --servers=127.0.0.1:"$port" --concurrency=4 --execute-number=$((N / 4)) >"$T/slap.out" 2>&1
    t1=$(date +%s.%N)
    down
    awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN { printf "%.0f\n", n / (b - a) }'
}
run_redis() {
    port=$(free_port)
    traced "$1" epoll redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$T"
    up "$port"
    timeout 120 redis-benchmark -p "$port" -n "$N" -c 20 -t set,get --csv >"$T/rb.csv" 2>&1
    down
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    awk -F'"' '$2 == "SET" { s = $4; sp = $14 } $2 == "GET" { g = $4; gp = $14 }
               END { printf "%s %s %s %s\n", s ? s : "-", sp ? sp : "-", g ? g : "-", gp ? gp : "-" }' "$T/rb.csv"
}
run_nginx() {
    port=$(free_port)
    _user=""
    [ "$(id -u)" -eq 0 ] && _user="user root;"
    cat >"$T/nginx.conf" <<CONF
$_user
daemon off;
master_process on;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx-error.log;
env DIAL9_SHM_DIR;
env DIAL9_COLLECTOR;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $T;
    proxy_temp_path $T;
    fastcgi_temp_path $T;
    uwsgi_temp_path $T;
    scgi_temp_path $T;
    server { listen 127.0.0.1:$port; root $T/www; }
}
CONF
    traced "$1" epoll "$NGINX" -p "$T" -c "$T/nginx.conf"
    up "$port"
    timeout 120 ab -n "$N" -c 10 "http://127.0.0.1:$port/index.html" >"$T/ab.out" 2>&1
    down
    rps=$(sed -n 's/^Requests per second: *\([0-9.]*\).*/\1/p' "$T/ab.out")
    p99=$(awk '$1 == "99%" { print $2 }' "$T/ab.out")
    echo "${rps:--} ${p99:--}"
}

printf 'bench_loops: %d pairs, %d requests per load\n' "$PAIRS" "$N"
printf '%-5s %-4s %10s | %10s %8s %10s %8s | %10s %8s\n' pair mode mc_sets/s \
    redis_set/s set_p99 redis_get/s get_p99 nginx_rq/s ng_p99
: >"$T/results"
p=1
while [ $p -le "$PAIRS" ]; do
    if [ $((p % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
    for mode in $order; do
        mc=$(run_memcached "$mode")
        rd=$(run_redis "$mode")
        ng=$(run_nginx "$mode")
        set -- $mc $rd $ng
        printf '%-5s %-4s %10s | %10s %8s %10s %8s | %10s %8s\n' "$p" "$mode" "$@"
        echo "$p $mode $*" >>"$T/results"
    done
    p=$((p + 1))
done

# median MODE COLUMN (columns of $T/results: 1 pair, 2 mode, 3.. figures)
median() {
    awk -v m="$1" -v c="$2" '$2 == m && $c != "-" {print $c}' "$T/results" | sort -g |
        awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) printf "%.3f\n", v[(NR+1)/2]; else printf "%.3f\n", (v[NR/2]+v[NR/2+1])/2}'
}
# spread COLUMN HIGHER_IS_BETTER: min .. max of the per-pair overheads in %
spread() {
    awk -v c="$1" -v h="$2" '{ v[$1, $2] = $c; pairs[$1] = 1 }
        END { n = 0; for (p in pairs) { a = v[p, "off"]; b = v[p, "on"];
                if (a == "-" || b == "-" || a + 0 == 0) continue;
                o = (h ? (a - b) / a : (b - a) / a) * 100;
                if (n == 0 || o < lo) lo = o; if (n == 0 || o > hi) hi = o; n++ }
              if (n) printf "%+.2f .. %+.2f %%", lo, hi; else print "nan" }' "$T/results"
}
echo
echo "medians over $PAIRS pairs (overhead: throughput lost or latency added; target <= 1 % throughput)"
printf '%-22s %12s %12s %10s   %s\n' metric off on overhead "per-pair spread"
row() {     # row NAME COLUMN higher_is_better
    off=$(median off "$2"); on=$(median on "$2")
    ovh=$(awk -v a="$off" -v b="$on" -v h="$3" 'BEGIN { if (a + 0 == 0) print "nan";
          else printf "%+.2f %%", (h ? (a - b) / a : (b - a) / a) * 100 }')
    printf '%-22s %12s %12s %10s   %s\n' "$1" "$off" "$on" "$ovh" "$(spread "$2" "$3")"
}
row "memcached sets/s" 3 1
row "redis SET rps" 4 1
row "redis SET p99 (ms)" 5 0
row "redis GET rps" 6 1
row "redis GET p99 (ms)" 7 0
row "nginx requests/s" 8 1
row "nginx p99 (ms)" 9 0

if [ -x "$CB" ]; then
    echo
    echo "per callback (bench_loop_cb: the stored callback against the plain function, same run; without the preload: the noise floor)"
    for kind in uv event; do
        "$CB" "$kind" 100 | sed 's/^/  off /'
        DIAL9_SHM_DIR=$T/shm DIAL9_COLLECTOR=$EP LD_PRELOAD=$PRELOAD "$CB" "$kind" 100 | sed 's/^/  on  /'
    done
fi
