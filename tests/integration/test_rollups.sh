#!/bin/sh
# test_rollups.sh — d9 sql's poll_stats and worker_stats (the segments'
# rollups, collector/store/rollup.h) on a store whose facts are known
# (tool_store_known): the same counts and sums as the raw tables, without a
# line on stderr; a segment whose rollups are missing or corrupt is answered
# from its records with one line naming it; d9 fsck finds such rollups and
# --repair rebuilds them.
. tests/integration/lib.sh
d9_setup
D9=$BIN/d9
S=$T/store
"$TBIN/tool_store_known" "$S" >"$T/known.txt" || { echo "tool_store_known failed"; exit 1; }
SEG=$(cd "$S" && ls 5151-*.d9seg)

# the same question, raw and from the rollups, printed the same way
raw_polls() { "$D9" --store "$S" sql "select location, count(*) as n, sum(dur_ns) as s, max(dur_ns) as m from polls group by location order by location"; }
ru_polls() { "$D9" --store "$S" sql "select location, sum(count) as n, sum(sum_ns) as s, max(max_ns) as m from poll_stats group by location order by location" 2>"$T/ru.err"; }
raw_workers() { "$D9" --store "$S" sql "select worker, polls, busy_ns, parks, parked_ns, waits, wait_sum_ns, wait_max_ns from workers order by worker"; }
ru_workers() { "$D9" --store "$S" sql "select worker, sum(polls) as polls, sum(busy_ns) as busy_ns, sum(parks) as parks, sum(parked_ns) as parked_ns, sum(waits) as waits, sum(wait_sum_ns) as wait_sum_ns, max(wait_max_ns) as wait_max_ns from worker_stats group by worker order by worker" 2>"$T/ru.err"; }
same() { # same NAME F G: F and G print the same, and something
    "$2" >"$T/a" && "$3" >"$T/b" || return 1
    [ -s "$T/a" ] || { echo "$1: empty"; return 1; }
    diff "$T/a" "$T/b"
}
no_stderr() { [ ! -s "$T/ru.err" ] || { cat "$T/ru.err"; return 1; }; }
one_line_about() { # one_line_about WHAT: ru.err is one line per query naming the segment and WHAT
    [ "$(wc -l <"$T/ru.err")" -eq 1 ] && grep -q "segment $SEG: .*$1.*answered from its records" "$T/ru.err" || { cat "$T/ru.err"; return 1; }
}
known_counts() { # the known store's polls, from its own description, in poll_stats
    want=$(awk '$1 == "worker" { n += $4 } END { print n }' "$T/known.txt")
    got=$("$D9" --store "$S" sql "select sum(count) from poll_stats" | tail -n 1 | tr -d ' ')
    [ "$want" -gt 0 ] && [ "$got" = "$want" ] || { echo "want $want got $got"; return 1; }
}
sql_db() { python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()" "$S/index.sqlite" "$1"; }

check "poll_stats counts the known polls" known_counts
check "poll_stats per location = polls (count, sum, max)" same polls raw_polls ru_polls
check "... from the rollups alone (nothing on stderr)" no_stderr
check "worker_stats per worker = workers (polls, busy, parks, parked, waits)" same workers raw_workers ru_workers
check "... from the rollups alone (nothing on stderr)" no_stderr
check "p50 <= p99 <= max on every row" lacks . "$D9" --store "$S" sql "select * from poll_stats where p50_ns > p99_ns or p99_ns > max_ns"
check "a pid with no polls has no rows" lacks . "$D9" --store "$S" sql "select * from poll_stats where pid = 5252"
check "fsck: the store's rollups check" "$D9" --store "$S" fsck

# missing rollups: the same answers from the records, one line; fsck finds it, --repair rebuilds
sql_db "delete from rollups where segment_id = (select id from segments where path = '$SEG')"
check "missing rollups: poll_stats = polls still" same polls raw_polls ru_polls
check "... and one line on stderr names the segment" one_line_about "no rollups"
check "missing rollups: worker_stats = workers still" same workers raw_workers ru_workers
fsck_finds() { ! "$D9" --store "$S" fsck >"$T/fsck.out" 2>&1 && grep -q "$SEG.*$1" "$T/fsck.out" || { cat "$T/fsck.out"; return 1; }; }
check "fsck reports the missing rollups (exit != 0)" fsck_finds "has no rollups"
check "fsck --repair rebuilds them" "$D9" --store "$S" fsck --repair
check "... then fsck is clean" "$D9" --store "$S" fsck
check "... and the answer comes from the rollups again" same polls raw_polls ru_polls
check "... (nothing on stderr)" no_stderr

# a flipped byte in a stored value: refused, the records answer, fsck finds it
flip_byte() { python3 - "$S/index.sqlite" "$SEG" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
sid, data = c.execute("select r.segment_id, r.data from rollups r join segments s on s.id = r.segment_id where s.path = ?", (sys.argv[2],)).fetchone()
b = bytearray(data)
b[40] ^= 1
c.execute("update rollups set data = ? where segment_id = ?", (bytes(b), sid))
c.commit()
PY
}
check "a byte of the stored rollups flipped" flip_byte
check "corrupt rollups: poll_stats = polls still" same polls raw_polls ru_polls
check "... and one line on stderr says why" one_line_about "CRC"
check "fsck reports the corrupt rollups" fsck_finds "rollups: CRC mismatch"
check "fsck --repair rebuilds them" "$D9" --store "$S" fsck --repair
check "... then fsck is clean" "$D9" --store "$S" fsck

d9_finish rollups
