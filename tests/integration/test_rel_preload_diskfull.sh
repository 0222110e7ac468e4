#!/bin/sh
# test_rel_preload_diskfull.sh — the disk-full suite under the LD_PRELOAD
# shim with a real libuv program (prog_uvcrash: a 1 ms timer, no d9 in it).
#
#   BUILD=... sh tests/integration/test_rel_preload_diskfull.sh   (needs root: mount)
#
# The store is a 4 MiB tmpfs (unmounted at exit, whatever happens). While the
# preloaded program ticks, a filler file takes every free byte of it: the
# collector must report write errors and keep answering, the program must
# tick on unaffected; when the filler goes, new segments must be sealed, every
# tick from then on must be stored, the program ends exited with its output
# unchanged, and the index and fsck stay clean.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
PROG=$TBIN/prog_uvcrash
start=$(date +%s)

mkdir -p "$STORE"
if ! mount -t tmpfs -o size=4m tmpfs "$STORE" 2>"$T/mount.err"; then
    check "mount a 4 MiB tmpfs store (needs root)" sh -c "cat '$T/mount.err'; false"
    d9_finish rel-preload-diskfull
    exit 1
fi
at_exit umount -l "$STORE"

ticks_of() { sed -n 's/^0*\([0-9]\)/\1/p' "$1"; }
has_ticks() { [ "$(ticks_of "$1")" -ge "$2" ] 2>/dev/null; }
gt0() { v=$(st "$1"); echo "$1=$v"; [ "${v:-0}" -gt 0 ]; }
segments_above() { v=$(st segments); echo "segments=$v"; [ "${v:-0}" -gt "$1" ]; }
integrity() {
    r=$(sqlite3 "$STORE/index.sqlite" 'PRAGMA integrity_check' 2>&1)
    echo "integrity_check: $r"
    [ "$r" = ok ]
}
# on_tick_polls PID: the number of stored polls of PID located at on_tick
on_tick_polls() { polls_at "$1" "prog_uvcrash+0x[0-9a-f]* on_tick\""; }

check "collector starts on a 4 MiB store" start_collector --segment-seconds 1 --segment-mb 1 \
    --store-mb 64

LD_PRELOAD=$PRELOAD "$PROG" --stop-file "$T/stop" --count-file "$T/p.count" \
    >"$T/p.out" 2>"$T/p.err" &
P=$!
at_exit kill -9 "$P"
check "the preloaded program ticks" wait_for 20 has_ticks "$T/p.count" 100

# Take every free byte of the store (dd stops at ENOSPC, as intended).
dd if=/dev/zero of="$STORE/fill" bs=64k >/dev/null 2>&1
check "the store is full (the filler stopped at ENOSPC)" \
    sh -c "[ \$(df --output=avail -k '$STORE' | tail -n 1) -lt 64 ]"
check "store full: write errors reported in status" wait_for 30 gt0 write_errors
check "collector keeps running on a full disk" kill -0 "$COLPID"
check "collector answers status on a full disk" "$TBIN/tool_ctl" "$EP" status
n0=$(ticks_of "$T/p.count")
check "the preloaded program ticks on while the disk is full (from $n0)" \
    wait_for 20 has_ticks "$T/p.count" $((n0 + 300))
check "index intact while the disk is full" integrity
full_segs=$(st segments)

rm -f "$STORE/fill"
n1=$(ticks_of "$T/p.count")
check "space returns: new segments sealed (had ${full_segs:-0})" wait_for 30 \
    segments_above "${full_segs:-0}"
check "the program ticks after the space returned" wait_for 20 has_ticks "$T/p.count" $((n1 + 300))
touch "$T/stop"
wait "$P"
prc=$?
PT=$(ticks_of "$T/p.count")
check "the program exits 0 after $PT ticks, its output unchanged" \
    sh -c "[ $prc -eq 0 ] && grep -q '^ticks=$PT rc=0' '$T/p.out'"
check "nothing on its stderr" test ! -s "$T/p.err"
check "d9 ps says exited" wait_for 30 ended "$P"
stored=$(on_tick_polls "$P")
lost=$(st lost); dropped=$(st dropped_records)
echo "ticks=$PT at_full=$n0 at_space=$n1 stored=$stored lost=${lost:-?} dropped_records=${dropped:-?}"
check "every tick from the space's return on is stored ($stored stored >= $PT - $n1)" \
    test "${stored:-0}" -ge $((PT - n1))
check "no tick stored twice ($stored <= $PT)" test "${stored:-0}" -le "$PT"
if [ "${dropped:-0}" -eq 0 ] && [ "${lost:-0}" -eq 0 ]; then
    check "nothing dropped or lost: every tick is stored" test "${stored:-0}" -eq "$PT"
fi
check "collector stops cleanly" stop_collector
check "index intact after shutdown" integrity
check "d9 fsck clean after the disk-full episode" "$BIN/d9" --store "$STORE" fsck
check "collector logged the disk-full condition" grep -qiE 'no space|ENOSPC' "$T/col.log"
echo "preload disk-full: ticks=$PT stored=$stored, $(( $(date +%s) - start ))s"
d9_finish rel-preload-diskfull
