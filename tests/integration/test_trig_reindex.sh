#!/bin/sh
# test_trig_reindex.sh — the index's triggers rows survive a re-index from
# the segments (issue 35): triggers of every source the collector fires
# (markers kept, debounced and merged across pids, d9 trigger --pid, a long
# poll, a crash, records lost by a ring, a typed marker) are also
# SEG_BLK_TRIGGER blocks of their process's segments; with every row of the
# index deleted, `d9 fsck --repair` brings the triggers table back equal, row
# for row (pid, time, source, reason, verdict, merged window, and a typed
# marker's fields, the same JSON bytes, from its record), and a second
# repair adds no duplicate.
# The same with --retain triggered: the triggers inside the kept windows are
# cut into the kept segments with their records and come back from them,
# and d9 ps then counts the records those segments hold (issue 35, 3a).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" "$@"; }
TRIG_SQL='select pid, t_ns, source, reason, verdict, win_t0, win_t1, fields from triggers
  order by t_ns, pid, source, reason'

pid_of() { sed -n 's/^pid=\([0-9]*\)$/\1/p' "$1"; }
ended() {       # ended PID: the process is finished in the store
    d9 flush >/dev/null 2>&1; d9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
    grep -q "\"pid\":$1,.*\"state\":\"\(exited\|crashed\)\"" "$T/ps.jsonl"
}
rows() { d9 sql --format csv "$TRIG_SQL" >"$1" 2>"$1.err"; }
sql() { sqlite3 "$STORE/index.sqlite" "$1"; }
# emptied: every row of the index gone (its schema kept: fsck needs an index
# to call the directory a store), as if it were lost
emptied() {
    for tb in $(sql "select name from sqlite_master where type = 'table' and name <> 'meta'
                     and name not like 'sqlite%'"); do
        sql "delete from $tb" || return 1
    done
    [ "$(sql 'select count(*) from segments')" = 0 ] && [ "$(sql 'select count(*) from triggers')" = 0 ]
}
# reindexed NAME: the index emptied, fsck --repair, the rows equal the ones before
reindexed() {
    rows "$T/$1.before" && [ "$(wc -l <"$T/$1.before")" -gt 1 ] && emptied &&
    d9 fsck --repair >"$T/$1.fsck" 2>&1 && rows "$T/$1.after" &&
    diff "$T/$1.before" "$T/$1.after" >"$T/$1.diff" || { cat "$T/$1.fsck" "$T/$1.diff"; return 1; }
}

# ---- every source, the whole store kept --------------------------------------
check "collector starts" start_collector --trigger-lookback-ms 3000000 \
    --trigger-lookforward-ms 1000 --trigger-debounce-ms 3600000 --trigger-rate 6000 \
    --trigger-poll-ms 50 --trigger-crash yes --trigger-lost yes
DIAL9_SAMPLER=off "$TBIN/prog_trigger" >"$T/p1.out" 2>"$T/p1.err"
P1=$(pid_of "$T/p1.out")
check "markers: kept, then debounced" wait_for 20 ended "$P1"
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" t:second >"$T/p2.out" 2>&1
check "a marker of another pid: merged" wait_for 20 ended "$(pid_of "$T/p2.out")"
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" "w:$T/go" >"$T/p3.out" 2>&1 &
at_exit kill -9 $!
wait_for 20 grep -q '^pid=' "$T/p3.out"
P3=$(pid_of "$T/p3.out")
check "d9 trigger --pid" wait_for 20 sh -c \
    "'$BIN/d9' --endpoint '$EP' trigger --pid '$P3' --reason 'from the shell' >/dev/null 2>&1"
touch "$T/go"
check "... its program ends" wait_for 20 ended "$P3"
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" p:200 >"$T/p4.out" 2>&1
check "a long poll" wait_for 20 ended "$(pid_of "$T/p4.out")"
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" crash >"$T/p5.out" 2>&1
check "a crash" wait_for 20 ended "$(pid_of "$T/p5.out")"
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" lose >"$T/p7.out" 2>&1
P7=$(pid_of "$T/p7.out")
check "records lost by a ring" wait_for 20 ended "$P7"
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" 'k:250:slow request' >"$T/p8.out" 2>&1
P8=$(pid_of "$T/p8.out")
check "a typed marker" wait_for 20 ended "$P8"
typed_row() {   # typed_row PID REASON: that marker's row holds the typed fields
    [ "$(sql "select fields from triggers where pid = $1 and reason = '$2'")" = \
      '{"latency_ms":250,"path":"/k/250"}' ] || { sql 'select * from triggers'; return 1; }
}
check "... its row holds its fields" wait_for 20 typed_row "$P8" 'slow request'
lost_row() { rows "$T/l.csv" && grep -q "^$P7,.*,lost," "$T/l.csv"; }
check "... its trigger row" wait_for 20 lost_row
check "the collector stops cleanly" stop_collector
sources() { d9 sql --format csv 'select distinct source from triggers order by source' |
            tr -d '\r' | tail -n +2 | tr '\n' ' '; }
check "every source has rows" test "$(sources)" = "crash lost marker poll shell "
check "index emptied, fsck --repair: the triggers table is the same" reindexed all
check "a second repair duplicates nothing" sh -c "
    '$BIN/d9' --store '$STORE' fsck --repair >/dev/null 2>&1 &&
    '$BIN/d9' --store '$STORE' sql --format csv \"$TRIG_SQL\" >'$T/all.again' &&
    diff '$T/all.before' '$T/all.again'"
check "d9 fsck finds the store consistent" d9 fsck

# ---- --retain triggered: the kept windows' triggers --------------------------
STORE=$T/store2
check "collector starts with --retain triggered" start_collector --perf-freq 0 \
    --retain triggered --trigger-lookback-ms 300 --trigger-lookforward-ms 200 --trigger-crash yes \
    --trigger-debounce-ms 0
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" p:10 t:first p:10 s:1000 p:10 k:250:second p:10 \
    >"$T/f1.out" 2>&1
F1=$(pid_of "$T/f1.out")
check "two markers a second apart, the second typed" wait_for 20 ended "$F1"
DIAL9_SAMPLER=off "$TBIN/prog_trigseq" p:10 crash >"$T/f2.out" 2>&1
check "a crash" wait_for 20 ended "$(pid_of "$T/f2.out")"
undecided() { sql "select count(*) from segments where id not in (select segment_id from kept)"; }
settled() { d9 flush >/dev/null 2>&1; [ "$(undecided)" = 0 ]; }
check "every segment settled: only kept windows are left" wait_for 60 settled
check "the collector stops cleanly" stop_collector
kept3() { [ "$(sql "select count(*) from triggers where verdict in ('kept', 'merged')")" = 3 ] ||
          { sql 'select * from triggers'; return 1; }; }
check "three triggers with kept windows (the crash may merge into the second's)" kept3
check "the typed marker's row holds its fields" typed_row "$F1" second
check "index emptied, fsck --repair: the triggers come back from the kept segments" \
    reindexed kept
check "... and d9 ps counts the records the kept segments hold" \
    python3 tests/integration/ps_records.py "$BIN/d9" "$STORE"
d9_finish trig_reindex
