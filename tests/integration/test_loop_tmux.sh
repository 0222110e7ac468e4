#!/bin/sh
# test_loop_tmux.sh — tmux (libevent), unmodified, under
# LD_PRELOAD=libd9preload.so with the default DIAL9_LOOP: a detached
# session on a private socket runs seq into a pane with a long history,
# then one slow command (source-file of a file of many set-option lines:
# parsed and run by the server in one go). The captured
# text and the clients' exit statuses must be those of an untraced tmux;
# the store must hold the server's libevent callbacks as polls located in
# tmux's binary, its waits as parks (tmux makes libevent use poll, not
# epoll), and the capture as its longest poll.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
. tests/integration/loop_env.sh
LINES_N=20000
OPTS_N=3000
if ! command -v tmux >/dev/null; then
    check "tmux is installed (make test installs tmux)" false
    d9_finish loop-tmux; exit
fi

# session NAME [env...]: a detached session whose pane prints LINES_N lines
# and waits; the server's pid in $SPID. Client exit statuses into NAME.rc.
session() {
    _tn=$1; shift
    SOCK=$T/$_tn.sock
    echo "set-option -g history-limit $((LINES_N + 100))" >"$T/tmux.conf"
    env "$@" tmux -S "$SOCK" -f "$T/tmux.conf" new-session -d -x 80 -y 24 \
        "seq 1 $LINES_N; echo seq-done; exec sleep 60"
    echo $? >"$T/$_tn.rc"
    SPID=$(tmux -S "$SOCK" display-message -p '#{pid}')
    at_exit kill -9 "$SPID"
    [ -n "$SPID" ]
}
tm() { timeout 30 tmux -S "$SOCK" "$@"; }
seq_done() { tm capture-pane -p | grep -q '^seq-done$'; }
# run NAME: the slow source-file, the whole history captured (as its line
# count and SHA-1) and one of the options read back, then the server killed
run() {
    wait_for 30 seq_done
    tm source-file "$T/many.conf"
    echo $? >>"$T/$1.rc"
    tm show-options -gv @d9-opt-$((OPTS_N - 1)) >>"$T/$1.opt"
    tm capture-pane -p -S - -E - >"$T/$1.capture"
    echo $? >>"$T/$1.rc"
    { grep -c . "$T/$1.capture"; grep -v '^$' "$T/$1.capture" | sha1sum; cat "$T/$1.opt"; } >"$T/$1.out"
    tm kill-server
    echo $? >>"$T/$1.rc"
    wait_for 10 sh -c "! kill -0 $SPID"
}

seq 0 $((OPTS_N - 1)) | sed 's/.*/set-option -g @d9-opt-& value-&/' >"$T/many.conf"
check "an untraced tmux session starts detached" session plain
run plain

start_collector
check "a tmux session starts detached under the preload" session traced LD_PRELOAD="$PRELOAD"
TPID=$SPID
FROM=$(mono_ns)
run traced
TO=$(mono_ns)
check "the captured history is the same as untraced" cmp "$T/plain.out" "$T/traced.out"
check "  and whole ($LINES_N lines of seq)" grep -q "^$((LINES_N + 1))" "$T/traced.out"
check "the clients' exit statuses are the same ($(echo $(cat "$T/plain.rc")))" cmp "$T/plain.rc" "$T/traced.rc"
check "the server exited on kill-server" sh -c "! kill -0 $TPID"
check "the collector records the server's exit and seals its data" wait_for 20 ended "$TPID"
check "the server's libevent callbacks are polls located in tmux" has_polls_at "$TPID" 'tmux+0x' 100
check "its event base's waits are parks" has_type "$TPID" worker_park 10
check "and unparks" has_type "$TPID" worker_unpark 10
top_polls "$TPID" --limit 1
source_longest() {
    _s=$(field start_ns <"$T/.top")
    [ -n "$_s" ] && [ "$_s" -ge "$FROM" ] && [ "$_s" -le "$TO" ] ||
        { echo "longest poll (source-file between $FROM and $TO):"; cat "$T/.top"; return 1; }
}
check "the source-file is the longest poll" source_longest
check "no record of tmux was lost" no_lost "$TPID"
d9_finish loop-tmux
