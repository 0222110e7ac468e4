#!/bin/sh
# test_rollup_live.sh — a real collector's live rollups (collector/store/
# seg_writer.h, seg_writer_rollup_*): segments of programs with polls and
# custom events, rotated (1 MiB) or sealed by a flush, get
# their rollups from live feeding (the seal's debug line says "live", never
# "read back"); every segment has them, and they are byte for byte the ones
# its file gives (d9 fsck compares each row with rollup_file's bytes); the
# rows that d9 fsck --repair rebuilds after they are deleted are the same
# bytes; and d9 sql answers from them what a raw scan answers (poll counts,
# sums and maxima per location, custom events per schema).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
D9=$BIN/d9

check "collector starts (1 MiB segments, debug log)" start_collector --segment-mb 1 --log-level debug
# three rounds: programs with polls and custom events, each round sealed by a flush
for r in 1 2 3; do
    workload "a$r" --threads 3 --events 20000 --polls
    workload "b$r" --threads 2 --events 20000 --polls --batch 16
    check "round $r: the workloads finish" wait_for 60 sh -c "test -s '$T/a$r.done' && test -s '$T/b$r.done'"
    check "round $r: flush seals the open segments" flush
done
check "collector stops cleanly" stop_collector

seals() { grep -c "sealed .*rollups ($1)" "$T/col.log"; }
live_seals() {
    _n=$(seals live)
    [ "$_n" -ge 6 ] || { echo "live seals: $_n"; grep "sealed" "$T/col.log" | head -n 3; return 1; }
}
check "segments rotated and sealed with live rollups (>= 6 seals)" live_seals
check "no seal read its file back" eq "$(seals 'read back')" 0
rows_all() {
    _s=$(sql "select count(*) from segments")
    _r=$(sql "select count(*) from rollups r join segments s on s.id = r.segment_id where length(r.data) > 40")
    [ "$_s" -ge 6 ] && eq "$_r" "$_s"
}
check "every segment has rollups" rows_all
check "d9 fsck: every segment's rollups are the bytes its file gives" "$D9" --store "$STORE" fsck

dump() { sql "select segment_id, hex(data) from rollups order by segment_id"; }
rebuilt_same() {
    dump >"$T/live.txt" || return 1
    sql "delete from rollups" || return 1
    "$D9" --store "$STORE" fsck --repair >"$T/repair.out" 2>&1
    grep -q "rebuilt" "$T/repair.out" || { cat "$T/repair.out"; return 1; }
    dump >"$T/rebuilt.txt" && [ -s "$T/live.txt" ] && cmp "$T/live.txt" "$T/rebuilt.txt"
}
check "fsck --repair rebuilds the same bytes the collector stored" rebuilt_same

q() { "$D9" --store "$STORE" sql --format csv "$1" 2>>"$T/sql.err"; }
# counts per location (a raw scan pairs a poll across a rotation, the rollups
# per segment: sums differ by definition there; fsck above compares them
# with rollup_file's, the definition)
polls_same() {
    q "select pid, location, count(*) from polls group by pid, location order by pid, location" >"$T/raw" &&
    q "select pid, location, sum(count) from poll_stats group by pid, location order by pid, location" >"$T/ru" || return 1
    [ "$(wc -l <"$T/raw")" -ge 3 ] || { echo "too few polls"; cat "$T/raw"; return 1; }
    tail -n +2 "$T/raw" >"$T/raw2" && tail -n +2 "$T/ru" >"$T/ru2" && diff "$T/raw2" "$T/ru2"
}
check "poll_stats' polls per process and location = a raw scan of polls" polls_same
events_same() {
    _raw=$(q "select count(*) from wl_seq" | tail -n 1 | tr -d '\r')
    _ru=$(q "select sum(count) from event_stats where event = 'wl_seq'" | tail -n 1 | tr -d '\r')
    [ "${_raw:-0}" -gt 0 ] && [ "$_raw" = "$_ru" ] || { echo "raw $_raw rollups $_ru"; return 1; }
}
check "event_stats' count = the custom events a raw scan finds" events_same
d9_finish
