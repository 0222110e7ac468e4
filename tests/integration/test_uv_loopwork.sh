#!/bin/sh
# test_uv_loopwork.sh — loop work (collector/query/q_loopwork.h): a loop
# thread's time outside its callbacks and outside its wait. prog_uvloopwork
# (plain libuv, under LD_PRELOAD=libd9preload.so) runs 8 rounds of
# uv_run(UV_RUN_ONCE) then 50 ms of its thread's CPU time in loopwork_spin()
# outside any callback. Every reader must show those 8 intervals, each at
# least 50 ms (the CPU time it spent; no upper bound but the run's), with
# the CPU samples inside them in loopwork_spin: d9 top-polls --loop-work,
# d9 sql's loop_work table, d9 findings' loop-work kind. Without
# --loop-work, top-polls lists callbacks only.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
PROG=$TBIN/prog_uvloopwork
ROUNDS=8
WORK_NS=50000000

start_collector
held_rounds "$PROG" "$ROUNDS"
check "the program exits 0, nothing on stderr" sh -c "[ $HELD_RC -eq 0 ] && ! test -s '$T/traced.err'"
check "the collector records the exit and seals the data" wait_for 20 ended "$PID"

# top-polls --loop-work: the $ROUNDS longest rows are loop work >= 50 ms
$D9 top-polls --pid "$PID" --loop-work --limit 1000 --format jsonl >"$T/top.jsonl" 2>"$T/top.err"
# long_lw: the loop-work rows of top.jsonl lasting >= the work, counted
long_lw() {
    grep '"loop_work":true' "$T/top.jsonl" | sed 's/.*"duration_ns":\([0-9]*\),.*/\1/' |
        awk -v w=$WORK_NS '$1 >= w { n++ } END { print n + 0 }'
}
lw_rounds() { [ "$(long_lw)" -eq $ROUNDS ] || { echo "got $(long_lw):"; cat "$T/top.jsonl" "$T/top.err"; return 1; }; }
check "top-polls --loop-work: $ROUNDS loop-work rows of >= 50 ms" lw_rounds
check "  they are the $ROUNDS longest rows, named [loop work]" sh -c \
    "head -n $ROUNDS '$T/top.jsonl' | grep -c '\"location\":\"\\[loop work\\]\".*\"loop_work\":true' | grep -qx $ROUNDS"
check "  with CPU samples inside" sh -c \
    "head -n $ROUNDS '$T/top.jsonl' | grep -q '\"cpu_samples\":[1-9]'"
check "  text names them too" sh -c \
    "$D9 top-polls --pid $PID --loop-work --limit 3 | grep -q '\\[loop work\\]' &&
     $D9 top-polls --pid $PID --loop-work | grep -q 'loop-work intervals'"
check "without --loop-work, none" lacks 'loop work|loop_work' $D9 top-polls --pid "$PID" --limit 1000 --format jsonl
check "--location on_tick leaves loop work out" lacks 'loop_work' \
    $D9 top-polls --pid "$PID" --loop-work --location on_tick --limit 1000 --format jsonl
check "--loop-work-min 40ms: exactly the $ROUNDS rounds" sh -c \
    "[ \$($D9 top-polls --pid $PID --loop-work --loop-work-min 40ms --location 'loop work' --limit 1000 --format jsonl | grep -c '\"loop_work\":true') -eq $ROUNDS ]"
check "--loop-work-min without --loop-work is a usage error" sh -c \
    "! $D9 top-polls --pid $PID --loop-work-min 1ms 2>/dev/null"

# d9 sql: the loop_work table, and its samples by the cpu_samples table
$D9 sql --format csv "select count(*), min(dur_ns) >= $WORK_NS, sum(cpu_samples) > 0 from loop_work where pid = $PID and dur_ns >= 40000000" >"$T/sql.csv" 2>&1
check "sql loop_work: $ROUNDS rows of >= 50 ms with CPU samples" sh -c \
    "tail -n 1 '$T/sql.csv' | tr -d '\\r' | grep -qx '$ROUNDS,1,1' || { cat '$T/sql.csv'; false; }"
check "  the same rows as top-polls (start and duration)" sh -c \
    "$D9 sql --format csv \"select start_ns, dur_ns from loop_work where pid = $PID and dur_ns >= 40000000 order by start_ns\" | tail -n +2 | tr -d '\\r' >'$T/sql_iv' &&
     grep '\"loop_work\":true' '$T/top.jsonl' | sed 's/.*\"duration_ns\":\([0-9]*\),\"start_ns\":\([0-9]*\),.*/\2,\1/' | awk -F, '\$2 >= 40000000' | sort >'$T/top_iv' &&
     sort '$T/sql_iv' | cmp - '$T/top_iv'"
frames_in_lw() {
    $D9 sql --format csv "select s.frame, count(*) as n from loop_work w join cpu_samples c on c.pid = w.pid and c.tid = w.tid and c.ts_ns between w.start_ns and w.end_ns join stacks s on s.stack_id = c.stack_id and s.depth = 0 where w.pid = $PID and w.dur_ns >= 40000000 group by s.frame order by n desc limit 3" >"$T/frames.csv" 2>&1
    grep -q loopwork_spin "$T/frames.csv" || { cat "$T/frames.csv"; return 1; }
}
check "  its CPU samples name loopwork_spin" frames_in_lw

# d9 findings: one loop-work finding, its evidence the $ROUNDS rounds in loopwork_spin
$D9 findings --pid "$PID" --loop-work 40ms --format jsonl >"$T/find.jsonl" 2>"$T/find.err"
check "findings: a loop-work finding of $ROUNDS intervals" sh -c \
    "grep '\"kind\":\"loop-work\"' '$T/find.jsonl' | grep -q '\"count\":$ROUNDS,' || { cat '$T/find.jsonl' '$T/find.err'; false; }"
check "  its top frame is loopwork_spin" sh -c \
    "grep '\"kind\":\"loop-work\"' '$T/find.jsonl' | grep -q '\"frames\":\[{\"name\":\"[^\"]*loopwork_spin'"
check "  text: the evidence names the frame" sh -c \
    "$D9 findings --pid $PID --loop-work 40ms | grep -A1 'loop-work' | grep -q loopwork_spin"
check "  none over a threshold above the work" lacks '"kind":"loop-work"' \
    $D9 findings --pid "$PID" --loop-work 10s --format jsonl
check "no record was lost" no_lost "$PID"
d9_finish uv-loopwork
