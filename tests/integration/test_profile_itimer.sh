#!/bin/sh
# test_profile_itimer.sh — the agent's in-process CPU sampler (SIGPROF +
# frame-pointer walk) and its handshake with d9collectd over the region's
# sampler field: forced with DIAL9_SAMPLER=itimer, chosen automatically when
# the collector does not sample (here: --perf-freq 0, as when perf is not
# permitted), never when the collector already samples with perf, and not
# at all with DIAL9_SAMPLER=off. The hot function must appear in `d9 flame`.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }
has() { grep -q -- "$1" "$2" || { echo "'$1' not in $2:"; head -n 20 "$2"; return 1; }; }
exited() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$1,.*\"state\":\"exited\""; }
sampler_is() { d9 status --format jsonl 2>/dev/null | grep "\"pid\":$1," | grep -q "\"sampler\":\"$2\""; }
# records of pid in a ring: collector pseudo ring 4294967295 = perf samples
perf_blocks() {
    sql "select count(*) from blocks b join segments s on b.segment_id = s.id
         join processes p on s.process_id = p.id
         where p.pid = $1 and b.ring = 4294967295 and b.nrec > 0"
}
# threads of pid recorded in more than one ring: the fallback's sampler rings
sampler_rings() {
    sql "select count(*) from (select t.tid from threads t join processes p on t.process_id = p.id
         where p.pid = $1 group by t.tid having count(distinct t.ring) > 1)"
}
cpu_samples() {
    sql "select coalesce(sum(s.n_cpu_sample), 0) from segments s join processes p
         on s.process_id = p.id where p.pid = $1"
}
# hot NAME ENV...: run prog_hot for 2 s with the given environment, in the background
hot() {
    _n=$1; shift
    env "$@" "$TBIN/prog_hot" --seconds 2 --threads 2 >"$T/$_n.out" 2>"$T/$_n.err" &
    echo $! >"$T/$_n.pid"
    at_exit kill -9 "$!"
}
hot_pid() { cat "$T/$1.pid"; }

# ---- collector not sampling: forced and automatic fallback -----------------------
check "collector starts without perf sampling" start_collector --perf-freq 0 --switch-period 0
hot forced DIAL9_SAMPLER=itimer DIAL9_SAMPLER_HZ=999
check "status reports the itimer sampler when forced" wait_for 20 sampler_is "$(hot_pid forced)" itimer
hot auto DIAL9_SAMPLER_WAIT_MS=200
check "auto mode falls back when the collector does not claim perf" \
    wait_for 20 sampler_is "$(hot_pid auto)" itimer
hot off DIAL9_SAMPLER=off
hot bogus DIAL9_SAMPLER=bogus
for n in forced auto off bogus; do wait "$(hot_pid $n)"; done
for n in forced auto off bogus; do
    check "process $n sealed as exited" wait_for 20 exited "$(hot_pid $n)"
done

d9 flame --pid "$(hot_pid forced)" >"$T/forced.folded" 2>"$T/forced.err"
check "forced fallback: the hot function is in the profile, under its caller" \
    has 'worker_main;d9test_hot_spin' "$T/forced.folded"
check "forced fallback: no samples in the collector's perf ring" \
    eq "$(perf_blocks "$(hot_pid forced)")" 0
check "forced fallback: each sampled thread wrote through a sampler ring of its own" \
    ge "$(sampler_rings "$(hot_pid forced)")" 2
d9 flame --pid "$(hot_pid auto)" >"$T/auto.folded" 2>/dev/null
check "automatic fallback: the hot function is in the profile" has 'd9test_hot_spin' "$T/auto.folded"
check "DIAL9_SAMPLER=off: no CPU samples" eq "$(cpu_samples "$(hot_pid off)")" 0
check "a bad DIAL9_SAMPLER is one stderr line naming it" has 'DIAL9_SAMPLER=bogus' "$T/bogus.err"
check "a bad DIAL9_SAMPLER does not stop the program or its tracing" \
    sh -c "grep -q 'prog_hot: iterations' '$T/bogus.out' && [ $(sql "select count(*) from processes where pid = $(hot_pid bogus)") -eq 1 ]"
check "a bad DIAL9_SAMPLER disables only the sampler" eq "$(cpu_samples "$(hot_pid bogus)")" 0
check "collector stops" stop_collector

# ---- collector sampling with perf: the agent must not sample as well ---------------
if grep -q 'perf_event_open not permitted' "$T/col.log"; then
    echo "skipped: perf not permitted, the perf-vs-itimer exclusion needs perf"
else
    check "collector with perf sampling starts" start_collector
    hot both DIAL9_SAMPLER_WAIT_MS=200
    check "perf claimed first: status says perf" wait_for 20 sampler_is "$(hot_pid both)" perf
    wait "$(hot_pid both)"
    check "process sealed as exited" wait_for 20 exited "$(hot_pid both)"
    # the fallback would claim a second ring per sampled thread (sampler ring)
    check "only perf sampled: no thread got a sampler ring" eq "$(sampler_rings "$(hot_pid both)")" 0
    check "collector stops again" stop_collector
fi
d9_finish profile-itimer
