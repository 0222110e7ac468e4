#!/bin/sh
# test_profile_perf.sh — CPU and off-CPU profiles sampled by d9collectd with
# perf_event_open from outside a real process (prog_hot: a known hot
# function d9test_hot_spin polled as task 1000+worker, a known sleeping
# function d9test_sleepy polled as task 99), symbolized by `d9 flame` at
# query time after the process exited. Skipped (with the reason) where perf
# is not permitted.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }
has() { grep -q -- "$1" "$2" || { echo "'$1' not in $2:"; head -n 20 "$2"; return 1; }; }
hasnt() { ! grep -q -- "$1" "$2" || { echo "'$1' unexpectedly in $2:"; grep -- "$1" "$2" | head; return 1; }; }
folded() {   # every line "frame;frame... COUNT", nothing else
    [ -s "$1" ] && ! grep -Ev '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$1"
}

# ---- is perf allowed here? ------------------------------------------------------
perf_or_skip profile-perf 0.3 "$T/probe.folded"
check "perf + symbolizer without the daemon find the hot function" has d9test_hot_spin "$T/probe.folded"

# ---- unprivileged sampler (root runs the test; setpriv drops to nobody) ----------------
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
    NB=$T/nobody
    mkdir -p "$NB" && cp "$TBIN/prog_hot" "$TBIN/tool_profile" "$NB/" && chmod 755 "$T" &&
        chown -R 65534:65534 "$NB"
    nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    "$NB/prog_hot" --no-d9 --seconds 1 >/dev/null 2>&1 &
    ROOTHOT=$!
    at_exit kill -9 "$ROOTHOT"
    nobody "$NB/tool_profile" --pid "$ROOTHOT" --seconds 0.2 >/dev/null 2>"$T/denied.err"
    DENIED_RC=$?
    wait "$ROOTHOT"
    check "sampling another user's process is refused and reported as 'not permitted'" \
        sh -c "[ $DENIED_RC -eq 77 ] && grep -q 'not permitted' '$T/denied.err'"
    if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ]; then
        nobody sh -c "'$NB/prog_hot' --no-d9 --seconds 1 >/dev/null 2>&1 & p=\$!;
            n=0; while [ \"\$(readlink /proc/\$p/exe)\" != '$NB/prog_hot' ] && [ \$n -lt 500 ]; do
                sleep 0.01; n=\$((n + 1)); done;
            '$NB/tool_profile' --pid \$p --seconds 0.5 >'$NB/user.probe' 2>'$NB/user.err'; wait \$p"
        check "an unprivileged sampler of its own process falls back to user-space stacks" \
            sh -c "grep -q d9test_hot_spin '$NB/user.probe' && grep -q 'kernel 0' '$NB/user.err'"
    fi
fi

# ---- through the daemon -----------------------------------------------------------
check "collector starts (with off-CPU sampling, which is opt-in)" start_collector --switch-period 16
# DIAL9_SAMPLER=perf: the agent never falls back, so every sample below is perf's
DIAL9_SAMPLER=perf "$TBIN/prog_hot" --seconds 3 --threads 2 --sleep-every 5 --kernel-busy \
    >"$T/hot.out" 2>&1 &
HOT=$!
at_exit kill -9 "$HOT"
sampler_is_perf() { d9 status --format jsonl 2>/dev/null | grep "\"pid\":$HOT," | grep -q '"sampler":"perf"'; }
check "status reports the perf sampler for the process" wait_for 20 sampler_is_perf
wait "$HOT"
check "workload ran" has "prog_hot: iterations" "$T/hot.out"
exited() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$HOT,.*\"state\":\"exited\""; }
check "process is sealed as exited" wait_for 20 exited

d9 flame --pid "$HOT" >"$T/cpu.folded" 2>"$T/cpu.err"
check "flame prints folded stacks" folded "$T/cpu.folded"
check "the hot function is in the CPU profile, under its caller (root first)" \
    has 'worker_main;d9test_hot_spin' "$T/cpu.folded"
check "frames of an exited process are named from its recorded maps" hasnt 'prog_hot+0x' "$T/cpu.folded"
check "flame reports what it read on stderr" has 'samples' "$T/cpu.err"
if grep -q ' _text$' /proc/kallsyms 2>/dev/null && ! grep -q '^0000000000000000 ' /proc/kallsyms; then
    check "kernel frames are named from kallsyms" has '_\[k\]' "$T/cpu.folded"
fi
# the samples' weights add up to the CPU time the process used (not 3x it,
# as when "1 tick in 3" sampled every tick)
d9 flame --pid "$HOT" --weight >"$T/cpu_w.folded" 2>/dev/null
CPU_S=$(sed -n 's/.* cpu \([0-9.]*\) .*/\1/p' "$T/hot.out")
W_S=$(awk '{s+=$NF} END {printf "%.3f\n", s / 1e9}' "$T/cpu_w.folded")
check "the CPU samples weigh about the CPU time used ($W_S s of samples, $CPU_S s of CPU)" \
    awk -v w="$W_S" -v c="$CPU_S" 'BEGIN { exit !(c > 0 && w >= 0.5 * c && w <= 1.3 * c) }'
# a sample taken on the tick starts in the tick's interrupt handler, which
# runs with interrupts off: no honest sample is ever inside it
check "no frame of the sampling interrupt's handler is in a stack" \
    hasnt 'hrtimer_interrupt_\[k\]' "$T/cpu.folded"
d9 flame --pid "$HOT" --no-kernel >"$T/user.folded" 2>/dev/null
check "--no-kernel drops kernel frames" hasnt '_\[k\]' "$T/user.folded"
check "--no-kernel drops [kernel] frames too" hasnt '\[kernel\]' "$T/user.folded"

d9 flame --pid "$HOT" --off-cpu >"$T/off.folded" 2>/dev/null
check "off-CPU profile is folded stacks" folded "$T/off.folded"
check "the sleeping function is in the off-CPU profile" has 'worker_main;d9test_sleepy' "$T/off.folded"

d9 flame --pid "$HOT" --task 1000 >"$T/task.folded" 2>/dev/null
check "--task keeps samples taken inside that task's polls" has 'd9test_hot_spin' "$T/task.folded"
check "--task drops samples of other tasks' polls" hasnt 'd9test_sleepy' "$T/task.folded"
count() { awk '{s+=$NF} END {printf "%.0f\n", s}' "$1"; }
check "--task 1000 (worker 0 only) keeps fewer samples than the whole process" \
    sh -c "[ $(count "$T/task.folded") -lt $(count "$T/cpu.folded") ]"
d9 flame --pid "$HOT" --task 99 --off-cpu >"$T/task99.folded" 2>/dev/null
check "--task with --off-cpu: the sleepy task's profile is its sleep" has 'd9test_sleepy' "$T/task99.folded"
# (not "none at all": agent and perf clocks agree to about a microsecond, so a
# preemption right at a poll boundary may land on either side)
weight_of() { grep -- "$1" "$2" | awk '{s+=$NF} END {printf "%.0f\n", s}'; }
check "--task with --off-cpu: the sleepy task's off-CPU time is mostly its sleep" \
    sh -c "[ $(weight_of d9test_sleepy "$T/task99.folded") -gt $(weight_of d9test_hot_spin "$T/task99.folded") ]"

# off-CPU weights stand for the switches not sampled (1 in 16 here): two
# threads that only sleep (250 x 2 ms each, timed by the program) weigh
# their time asleep, within 25 % (a sample more or less per thread is 6 %;
# without the scaling it would be 1/16)
DIAL9_SAMPLER=perf "$TBIN/prog_hot" --sleeps 250 --threads 2 >"$T/sleep.out" 2>&1 &
SLP=$!
at_exit kill -9 "$SLP"
sleeper_sampled() { d9 status --format jsonl 2>/dev/null | grep "\"pid\":$SLP," | grep -q '"sampler":"perf"'; }
check "the sleeping program is sampled by perf" wait_for 20 sleeper_sampled
kill -USR1 "$SLP"
wait "$SLP"
slp_exited() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$SLP,.*\"state\":\"exited\""; }
check "the sleeping program is sealed as exited" wait_for 20 slp_exited
d9 flame --pid "$SLP" --off-cpu >"$T/sleep.folded" 2>/dev/null
SLEPT_S=$(sed -n 's/^prog_hot: slept \([0-9]*\) ns.*/\1/p' "$T/sleep.out" | awk '{printf "%.3f\n", $1 / 1e9}')
OFF_S=$(grep d9test_sleepy "$T/sleep.folded" | awk '{s+=$NF} END {printf "%.3f\n", s / 1e9}')
check "off-CPU weights add up to the time asleep ($OFF_S s of samples, $SLEPT_S s asleep)" \
    awk -v w="$OFF_S" -v s="$SLEPT_S" 'BEGIN { exit !(s > 0.5 && w >= 0.75 * s && w <= 1.25 * s) }'

d9 flame --pid "$HOT" --addresses >"$T/addr.folded" 2>/dev/null
check "--addresses prints raw frames" has '^0x[0-9a-f]*;0x' "$T/addr.folded"
d9 flame --pid "$HOT" --tid 1 >"$T/none.folded" 2>"$T/none.err"
check "a selection without samples is empty, says so and exits 0" \
    sh -c "[ ! -s '$T/none.folded' ] && grep -q 'no CPU samples' '$T/none.err'"
d9 flame --task nope >/dev/null 2>"$T/bad.err"
BAD_RC=$?
check "a bad --task is a usage error (exit 2, one line + hint)" \
    sh -c "[ $BAD_RC -eq 2 ] && [ \$(wc -l <'$T/bad.err') -eq 2 ] && grep -q 'task' '$T/bad.err'"
check "flame --help documents the options" sh -c "'$BIN/d9' flame --help | grep -q -- '--off-cpu'"

cp -r "$STORE" "$T/copy"
"$BIN/d9" --store "$T/copy" flame --pid "$HOT" >"$T/copy.folded" 2>/dev/null
check "a copied store still symbolizes (maps are inside the segments)" \
    has 'worker_main;d9test_hot_spin' "$T/copy.folded"

# per-CPU events interrupt every busy CPU whoever runs: they are on only
# while a traced process is live (off at start, on at adoption, off again
# once the process has ended)
last_switch() { grep -o 'per-CPU sampling o[nf]*' "$T/col.log" | tail -n 1 | grep -q "$1"; }
if grep -q 'per-CPU events' "$T/col.log"; then
    check "per-CPU sampling was off before the first traced process" \
        sh -c "grep -o 'per-CPU sampling o[nf]*' '$T/col.log' | head -n 1 | grep -q 'sampling off'"
    check "per-CPU sampling was switched on for the traced process" has 'per-CPU sampling on' "$T/col.log"
    check "per-CPU sampling is off again once no traced process is live" \
        wait_for 10 last_switch 'sampling off'
fi
check "SIGTERM stops the collector" stop_collector
if [ "$(id -u)" -eq 0 ]; then
    check "as root, the CPU profile came from per-CPU events" has 'per-CPU events' "$T/col.log"
    check "the samples were taken on the scheduler tick, or the log says why not" \
        sh -c "grep -q 'on the scheduler tick, 1 tick in' '$T/col.log' || grep -q 'not on the tick: ' '$T/col.log'"
fi

# ---- per-thread events: the fallback where per-CPU events are not permitted ----------
check "collector restarts with --perf-scope thread" start_collector --perf-scope thread
DIAL9_SAMPLER=perf "$TBIN/prog_hot" --seconds 2 --threads 2 >"$T/hot2.out" 2>&1 &
HOT2=$!
at_exit kill -9 "$HOT2"
wait "$HOT2"
exited2() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$HOT2,.*\"state\":\"exited\""; }
check "second process is sealed as exited" wait_for 20 exited2
d9 flame --pid "$HOT2" >"$T/cpu2.folded" 2>/dev/null
check "per-thread events find the hot function under its caller too" \
    has 'worker_main;d9test_hot_spin' "$T/cpu2.folded"
check "the log says it sampled the process's threads" \
    has "pid $HOT2 (prog_hot): perf sampling at [0-9]* Hz per thread, no off-CPU sampling, [0-9]* threads" \
    "$T/col.log"
check "SIGTERM stops the second collector" stop_collector
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1 &&
    [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -gt 0 ]; then
    nobody "$BIN/d9collectd" --perf-scope cpu --store "$NB/st" --shm-dir "$NB" \
        --endpoint "ipc://$NB/c.sock" >"$NB/cpu.out" 2>&1
    CPU_RC=$?
    check "--perf-scope cpu where per-CPU events are refused: exit 1, says why" \
        sh -c "[ $CPU_RC -eq 1 ] && grep -q 'cannot open per-CPU perf events' '$NB/cpu.out'"
fi
d9_finish profile-perf
