#!/bin/sh
# test_uv_preload.sh — LD_PRELOAD=libd9preload.so never changes a program:
# a libuv program (prog_uvmix: TCP echo, timers, work, fs, getaddrinfo,
# async, idle, loops on threads) prints the same and exits the same with
# and without it, with a collector, with none, and with a bad DIAL9_*
# value (one line on stderr, nothing traced), with its environment as it
# was; a program without libuv creates no region. With the collector, the program's callbacks are in
# d9 top-polls by function name and every loop's thread is a worker.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
PROG=$TBIN/prog_uvmix

"$PROG" >"$T/plain.out" 2>"$T/plain.err"
plain_rc=$?
check "the program runs without the preload" sh -c "[ $plain_rc -eq 0 ] && grep -q '^echo=ping over libuv$' '$T/plain.out'"
same() {    # same NAME: NAME.out and NAME.rc equal the plain run's
    cmp "$T/plain.out" "$T/$1.out" && [ "$(cat "$T/$1.rc")" = "$plain_rc" ]
}

start_collector
# --hold: the program waits on a fifo before it exits, until the collector
# has adopted it (and read its mappings, which name the callbacks)
mkfifo "$T/hold"
LD_PRELOAD=$PRELOAD "$PROG" --hold <"$T/hold" >"$T/traced.out" 2>"$T/traced.err" &
PID=$!
exec 7>"$T/hold"
adopted() { "$BIN/d9" status --endpoint "$EP" | grep -q "^ *$PID "; }
check "the collector adopts the traced program" wait_for 20 adopted
# a flush while it lives seals a segment opened while it lived: one that
# holds the map snapshot
check "a flush while the program lives" "$BIN/d9" flush --endpoint "$EP"
exec 7>&-
wait "$PID"
echo $? >"$T/traced.rc"
check "same output and exit status under the preload with a collector" same traced
check "nothing on stderr" sh -c "! test -s '$T/traced.err'"
check "the collector records the exit and seals the data" wait_for 20 ended "$PID"
for fn in on_tick on_read on_alloc on_connection on_connect on_write on_shutdown on_close \
          on_work on_after_work on_fs on_gai on_async on_idle side_tick; do
    check "$fn is in top-polls by name" has_polls_at "$PID" "prog_uvmix+0x[0-9a-f]* $fn\""
done
check "the re-armed timer: one poll per tick" has_polls_at "$PID" "prog_uvmix+0x[0-9a-f]* on_tick\"" 10
check "d9 events names the callbacks too" sh -c \
    "$D9 events --pid $PID --type poll_start | grep -q 'loc=\"prog_uvmix+0x[0-9a-f]* on_tick\"'"
check "the export's poll slices are named by the callbacks, their loc as top-polls prints it" sh -c \
    "$D9 export --pid $PID -o '$T/trace.json' &&
     grep -q '\"name\":\"on_read\",\"cat\":\"poll\"' '$T/trace.json' &&
     grep -q '\"loc\":\"prog_uvmix+0x[0-9a-f]* on_read\"' '$T/trace.json'"
check "the main loop and the $((3)) side loops are workers" has_workers "$PID" 4
check "no record was lost" no_lost "$PID"

# no collector: the agent records into its region, the program is unchanged
mkdir -p "$T/shm2"
DIAL9_SHM_DIR=$T/shm2 DIAL9_COLLECTOR=none LD_PRELOAD=$PRELOAD "$PROG" >"$T/nocol.out" 2>"$T/nocol.err"
echo $? >"$T/nocol.rc"
check "same output and exit status without a collector" same nocol

# a bad setting: one line on stderr, no region, same program
mkdir -p "$T/shm3"
DIAL9_SHM_DIR=$T/shm3 DIAL9_RING_KB=banana LD_PRELOAD=$PRELOAD "$PROG" >"$T/bad.out" 2>"$T/bad.err"
echo $? >"$T/bad.rc"
check "same output and exit status with a bad DIAL9_RING_KB" same bad
check "one line on stderr about it" sh -c "[ \$(wc -l <'$T/bad.err') -eq 1 ] && grep -q DIAL9_RING_KB '$T/bad.err'"
check "no region with a bad setting" sh -c "[ -z \"\$(ls '$T/shm3')\" ]"

# tracing off by configuration
DIAL9_SHM_DIR=$T/shm3 DIAL9_ENABLED=0 LD_PRELOAD=$PRELOAD "$PROG" >"$T/off.out" 2>"$T/off.err"
echo $? >"$T/off.rc"
check "same output and exit status with DIAL9_ENABLED=0" same off
check "no region with tracing off" sh -c "[ -z \"\$(ls '$T/shm3')\" ]"

# a program that does not use libuv: untouched, no agent started
DIAL9_SHM_DIR=$T/shm3 LD_PRELOAD=$PRELOAD sh -c 'echo no libuv here; exit 3' >"$T/sh.out" 2>"$T/sh.err"
sh_rc=$?
check "a program without libuv: same output and exit status" \
    sh -c "[ $sh_rc -eq 3 ] && [ \"\$(cat '$T/sh.out')\" = 'no libuv here' ] && ! test -s '$T/sh.err'"
check "a program without libuv creates no region" sh -c "[ -z \"\$(ls '$T/shm3')\" ]"
d9_finish uv-preload
