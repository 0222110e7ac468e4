# loop_env.sh — shared set-up for tests/integration/test_loop_*.sh (sourced
# after lib.sh, collector_env.sh and uv_env.sh): real servers (memcached,
# tmux, redis, nginx) run unmodified under LD_PRELOAD=libd9preload.so on
# 127.0.0.1, and checks over what the store holds of them.

# free_port: a TCP port of 127.0.0.1 nobody listens on now
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# mono_ns: CLOCK_MONOTONIC now, in ns (the store's clock)
mono_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }
# count_type PID TYPE: PID's records of TYPE in the store
count_type() {
    $D9 events --pid "$1" --type "$2" --format jsonl 2>/dev/null | grep -c .
}
# has_type PID TYPE [N]: at least N (default 1) records of TYPE
has_type() {
    _c=$(count_type "$1" "$2")
    [ "${_c:-0}" -ge "${3:-1}" ] || { echo "$2 records of pid $1: ${_c:-0} (want >= ${3:-1})"; return 1; }
}
# top_polls PID [d9 top-polls options]: jsonl of PID's longest polls into $T/.top
top_polls() {
    _p=$1; shift
    $D9 top-polls --pid "$_p" --format jsonl "$@" >"$T/.top" 2>"$T/.top.err"
}
# field NAME: the value of a jsonl field of each line of stdin (numbers and strings)
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
