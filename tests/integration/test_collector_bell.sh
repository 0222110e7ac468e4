#!/bin/sh
# The doorbell (collector/daemon/bell.h): producers whose rings pass half
# full ring the collector; a region that rings without data, scribbling its
# doorbell, is muted and drained on the timer; several regions ringing at
# once all get drained with every committed event stored; the collector
# stays up and says what its doorbell did.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

check "collector starts" start_collector --poll-max-us 20000
check "the doorbell is on (futex_waitv)" sh -c "! grep -q 'doorbell: no futex_waitv' '$T/col.log'"

"$TBIN/tool_badregion" bell "$T/bell.ready" >"$T/bell.out" 2>&1 &
RINGER=$!
at_exit kill -9 $RINGER
check "the ringing process is adopted and its good ring drained" wait_for 10 test -s "$T/bell.ready"
check "a region ringing without data is muted" wait_for 20 grep -q "pid $RINGER: its doorbell rings without data" "$T/col.log"

# several processes with small rings (64 KiB: 1638 of their 40-byte
# events), writing bursts of 1000 events (past half a ring) while the
# ringer keeps ringing; they start together once all are adopted
THREADS=2
for n in a b c d; do
    DIAL9_RING_KB=64 workload $n --threads $THREADS --events 100000 --batch 1000 --pace-us 2000 \
        --wait-file "$T/go"
done
check "the four are adopted" wait_for 20 sh -c "[ \"\$('$TBIN/tool_ctl' '$EP' status | sed -n 's/^processes=//p')\" = 5 ]"
touch "$T/go"
for n in a b c d; do
    check "workload $n finishes" wait_for 120 wl_done $n
done
check "the collector is still alive" kill -0 "$COLPID"
check "flush succeeds" flush
check "the ringing process's good ring is stored" eq "$(seg type.poll_end $RINGER)" 50
kill -9 $RINGER
committed=0
for n in a b c d; do
    committed=$((committed + $(wl_committed $n)))
done
check "every committed event of the four is in a segment exactly once" eq "$(seg wl_unique)" "$committed"
check "no event is stored twice" eq "$(seg wl_dups)" 0
check "SIGTERM exits 0" stop_collector
check "the doorbell's totals are logged" grep -q "doorbell: [0-9]* wake-ups, [0-9]* rings, [0-9]* spurious, [1-9][0-9]* mutes" "$T/col.log"
check "the workloads' rings rang it" sh -c "[ \"\$(sed -n 's/.*doorbell: [0-9]* wake-ups, \([0-9]*\) rings.*/\1/p' '$T/col.log')\" -gt 0 ]"
d9_finish collector-bell
