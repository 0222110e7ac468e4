#!/bin/sh
# test_sql.sh — `d9 sql` against a real d9collectd and a real traced program
# (prog_cli): exact counts and values of the tables, the same answers as the
# hand-written subcommands, push-down seen in the blocks read, output
# formats, the query from stdin, SQL errors, a live store while the
# collector writes, a copied store, and damaged segments under a query.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" "$@"; }
# q SQL EXPECTED: the csv rows (no header) of SQL equal EXPECTED (lines joined by ';')
q() { got=$("$BIN/d9" --store "${QSTORE:-$STORE}" sql --format csv "$1" 2>"$T/q.err" | tail -n +2 |
            tr -d '\r' | paste -sd ';' -)
      [ "$got" = "$2" ] || { echo "query: $1"; echo "got:      $got"; echo "expected: $2"; cat "$T/q.err"; return 1; }; }

check "collector answers d9 status" start_collector

check "flush, then both processes reached their final state" cli_runs

# ---- live store: exact values ------------------------------------------------------
check "processes: both runs, with their states" \
    q "select pid, comm, state from processes where pid in ($OKPID, $CRPID) order by first_ns" \
      "$OKPID,prog_cli,exited;$CRPID,prog_cli,crashed"
check "threads and runtimes come from the index" \
    q "select (select group_concat(name, '+') from (select name from threads where pid = $OKPID order by name)),
              (select runtime_id from runtimes where pid = $OKPID and name = 'clirt')" "cliw0+cliw1,2"
check "polls: 200 short polls per worker and the long one, all finished" \
    q "select count(*), sum(end_ns is null), sum(task = 999) from polls where pid = $OKPID" "401,0,1"
check "polls: the crash left task 4242 unfinished (end NULL, dur_ns a bound, why)" \
    q "select task, end_ns is null, dur_ns >= 0, unfinished from polls where pid = $CRPID and end_ns is null" \
      "4242,1,1,process crashed"
check "polls: the long poll is the longest, at its spawn location" \
    q "select task, worker, runtime, location like '%prog_cli.c:% spawn_long_task', dur_ns > 100000000
       from polls where pid = $OKPID order by dur_ns desc limit 1" "999,0,clirt,1,1"
check "parks: three per worker, all sampled, wait and CPU known" \
    q "select worker, count(*), sum(sched_wait_ns is not null), sum(cpu_ns is not null), min(dur_ns) > 1000000
       from parks where pid = $OKPID group by worker order by worker" "0,3,3,3,1;1,3,3,3,1"
check "spawns, terminates, queue depths, wakes: one row per record" \
    q "select (select count(*) from spawns where pid = $OKPID), (select count(*) from terminates where pid = $OKPID),
              (select count(*) from queue_depths where pid = $OKPID), (select count(*) from wakes where pid = $OKPID),
              (select wakee from wakes where pid = $OKPID)" "401,400,400,1,1000"
check "custom table 'order': typed fields, exact values" \
    q "select count(*), sum(qty), min(price), max(price), sum(delta), sum(ok), min(item)
       from \"order\" where pid = $OKPID" "10,50,2.5,2.5,-50,4,\"widget-0 \"\"q\"\"\""
check "custom table columns are typed from the schema" \
    q "select group_concat(name || ':' || type, ' ') from pragma_table_info('order')" \
      "pid:INTEGER tid:INTEGER ts_ns:INTEGER task:INTEGER item:TEXT qty:INTEGER price:REAL delta:INTEGER ok:INTEGER"
check "locations: the spawn sites by name" \
    q "select count(*) from locations where pid = $OKPID and func in ('spawn_short_task', 'spawn_long_task')" "2"
check "events: as many rows as d9 events prints (it hides the collector's d9.* events)" \
    q "select count(*) from events where pid = $OKPID and (event is null or event not like 'd9.%')" \
      "$("$BIN/d9" --store "$STORE" events --pid "$OKPID" | wc -l | tr -d ' ')"
check "events: fields as JSON" \
    q "select json_extract(fields, '\$.task') from events where pid = $OKPID and type = 'poll_start'
       and json_extract(fields, '\$.task') = 999" "999"

# ---- the same answer as the hand-written subcommands ----------------------------------
d9 top-polls --pid "$OKPID" --limit 5 --format jsonl >"$T/top.jsonl"
check "the 5 longest polls are those of top-polls (task, start, duration)" sh -c "
    python3 -c \"
import json
for l in open('$T/top.jsonl'):
    r = json.loads(l); print('%d,%d,%d' % (r['task'], r['start_ns'], r['duration_ns']))
\" >'$T/top.csv'
    '$BIN/d9' --store '$STORE' sql --format csv 'select task, start_ns, dur_ns from polls where pid = $OKPID
        order by dur_ns desc, start_ns limit 5' | tail -n +2 | tr -d '\r' >'$T/sqltop.csv'
    diff '$T/top.csv' '$T/sqltop.csv'"
d9 sched --pid "$OKPID" --format jsonl >"$T/sched.jsonl"
check "parked time per worker is that of d9 sched" sh -c "
    python3 -c \"
import json
for l in sorted(open('$T/sched.jsonl'), key=lambda l: json.loads(l)['worker']):
    r = json.loads(l); print('%d,%d' % (r['worker'], r['parked_ns']))
\" >'$T/sched.csv'
    '$BIN/d9' --store '$STORE' sql --format csv 'select worker, sum(dur_ns) from parks where pid = $OKPID
        group by worker order by worker' | tail -n +2 | tr -d '\r' >'$T/sqlsched.csv'
    diff '$T/sched.csv' '$T/sqlsched.csv'"

# ---- profile: stacks named as d9 flame names them ------------------------------------
DIAL9_SAMPLER=itimer DIAL9_SAMPLER_HZ=999 "$TBIN/prog_hot" --seconds 1 --threads 2 >"$T/hot.out" 2>&1 &
HOTPID=$!
wait "$HOTPID"
hot_ended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$HOTPID,.*\"state\":\"exited\""; }
check "the profiled program was sealed" wait_for 20 hot_ended
d9 flame --pid "$HOTPID" >"$T/flame.folded" 2>/dev/null
d9 sql --format jsonl "with f as (select stack_id, group_concat(frame, ';') as folded
                          from (select stack_id, frame from stacks order by stack_id, depth desc)
                          group by stack_id)
                       select folded, count(*) as n from cpu_samples join f using (stack_id)
                       where pid = $HOTPID and kind = 'cpu' group by folded" >"$T/sqlflame.jsonl"
check "cpu_samples joined with stacks give d9 flame's folded stacks and counts" python3 -c "
import json
flame = {}
for l in open('$T/flame.folded'):
    k, n = l.rstrip('\n').rsplit(' ', 1); flame[k] = int(n)
sql = {r['folded']: r['n'] for r in map(json.loads, open('$T/sqlflame.jsonl'))}
assert len(flame) > 0 and sum(flame.values()) > 50, flame
assert any('d9test_hot_spin' in k for k in sql), list(sql)[:3]
assert sql == flame, (set(sql.items()) ^ set(flame.items()))
"

# ---- push-down ---------------------------------------------------------------------------
blocks() { "$BIN/d9" --store "$STORE" sql --stats "$1" 2>&1 >/dev/null |
           sed -n 's/.* \([0-9]*\) blocks and.*/\1/p'; }
ALL=$(blocks "select count(*) from events")
ONE=$(blocks "select count(*) from events where pid = $OKPID")
TOT=$(blocks "select count(*) from events where tid = -1")
check "a pid query reads fewer blocks than the whole store ($ONE < $ALL)" test "$ONE" -lt "$ALL"
check "a query that cannot match reads no block" test "$TOT" -eq 0
check "the pid query reads that process's indexed data blocks" sh -c "
    [ $ONE -eq \$(sqlite3 '$STORE/index.sqlite' \"select count(*) from blocks b join segments s on s.id = b.segment_id
        join processes p on p.id = s.process_id where p.pid = $OKPID and b.kind = 2\") ]"

# ---- formats, stdin, schema, errors -------------------------------------------------------
check "jsonl rows are JSON objects keyed by column" sh -c "
    '$BIN/d9' --store '$STORE' sql --format jsonl 'select pid, task, end_ns from polls where pid = $CRPID and end_ns is null' |
    python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin]; assert r == [{\"pid\": $CRPID, \"task\": 4242, \"end_ns\": None}], r'"
check "table output aligns a header and the rows" sh -c "
    '$BIN/d9' --store '$STORE' sql 'select task, worker from polls where pid = $OKPID and task = 999' >'$T/tab.txt' &&
    [ \"\$(sed -n 1p '$T/tab.txt')\" = 'task  worker' ] && [ \"\$(sed -n 2p '$T/tab.txt')\" = ' 999       0' ]"
check "the query can come from standard input" sh -c "
    echo 'select count(*) from polls where pid = $OKPID;' | '$BIN/d9' --store '$STORE' sql --format csv | grep -qx '401.\{0,1\}'"
check "--schema lists the tables and their columns" sh -c "
    '$BIN/d9' --store '$STORE' sql --schema >'$T/schema.txt' && grep -q '^polls -- ' '$T/schema.txt' &&
    grep -q '^order -- ' '$T/schema.txt' && grep -q '^    sched_wait_ns' '$T/schema.txt'"
# the custom-event tables and the schema are made only for the SQL that needs them
# (cli_sql.c reads_schema, and prepare at a statement's first failed compile): each
# way a statement can reach them still finds them
check "a custom table named by a later statement of a script is found" \
    q "select 1; select count(*) from \"order\" where pid = $OKPID" "1;count(*);10"
check "a custom table named in a subquery and a temp view is found" \
    q "create temp view v as select * from (select qty from \"order\" where pid = $OKPID);
       select count(*), sum(qty) from v" "10,50"
check "sqlite_schema lists the built-in and the custom tables, as --schema does" sh -c "
    '$BIN/d9' --store '$STORE' sql --format csv \"select name from sqlite_schema where type = 'table'
        order by rowid\" | tail -n +2 | tr -d '\\r\"' >'$T/names.txt' &&
    grep -qx polls '$T/names.txt' && grep -qx order '$T/names.txt' &&
    '$BIN/d9' --store '$STORE' sql --schema | sed -n 's/^\\([^ ]*\\) -- .*/\\1/p' | cmp - '$T/names.txt'"
check "pragma table_list names the custom table; module_list only the d9 module" \
    q "select (select count(*) from pragma_table_list where name = 'order'),
              (select group_concat(name) from pragma_module_list where name in ('d9', 'polls'))" "1,d9"
check "a built-in table named as main.polls or in upper case answers as polls" \
    q "select (select count(*) from main.polls where pid = $OKPID), (select count(*) from POLLS where pid = $OKPID)" "401,401"
check "an unknown table is an SQL error naming it" sh -c "
    '$BIN/d9' --store '$STORE' sql 'select * from nosuchtable' >/dev/null 2>'$T/nt.txt'; [ \$? -eq 2 ] &&
    grep -qx 'd9 sql: no such table: nosuchtable' '$T/nt.txt'"
check "an SQL error prints SQLite's message and exits 2" sh -c "
    '$BIN/d9' --store '$STORE' sql 'select nope from polls' >/dev/null 2>'$T/err.txt'; [ \$? -eq 2 ] &&
    grep -qx 'd9 sql: no such column: nope' '$T/err.txt'"
check "a query without a statement is a usage error" sh -c "
    echo ' -- nothing' | '$BIN/d9' --store '$STORE' sql >/dev/null 2>&1; [ \$? -eq 2 ]"
check "writing is refused with exit 2" sh -c "
    '$BIN/d9' --store '$STORE' sql 'delete from polls' >/dev/null 2>&1; [ \$? -eq 2 ]"
check "an empty result says so and exits 0" sh -c "
    '$BIN/d9' --store '$STORE' sql 'select * from polls where pid = 4000000' >'$T/e.out' 2>'$T/e.err' &&
    [ ! -s '$T/e.out' ] && grep -q 'no rows' '$T/e.err'"
check "a bad --format is a usage error" sh -c "
    '$BIN/d9' --store '$STORE' sql --format xml 'select 1' >/dev/null 2>'$T/u.err'; [ \$? -eq 2 ] && grep -q \"^Try 'd9 sql\" '$T/u.err'"
check "d9 sql --help is a manual page" sh -c "'$BIN/d9' sql --help | grep -q SYNOPSIS && '$BIN/d9' sql --help | grep -q 'EXIT STATUS'"
# Each statement is compiled once (cli_sql.c prepare): a preloaded shim
# counts the calls of sqlite3_prepare_v2 on SQL that holds the marker
# comment /*probe*/ (d9's own index reads do not).
cat >"$T/prep.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
typedef int prep_fn(void *, const char *, int, void **, const char **);
static unsigned n;
int sqlite3_prepare_v2(void *db, const char *sql, int len, void **st, const char **tail)
{
    prep_fn *real = (prep_fn *)dlsym(RTLD_NEXT, "sqlite3_prepare_v2");
    n += sql && strstr(sql, "/*probe*/") != NULL;
    return real(db, sql, len, st, tail);
}
__attribute__((destructor)) static void prep_count(void) { fprintf(stderr, "prepares: %u\n", n); }
EOF
# compiles N SQL: `d9 sql SQL` called sqlite3_prepare_v2 N times on SQL with the marker
compiles() {
    [ -f "$T/prep.so" ] || cc -shared -fPIC -o "$T/prep.so" "$T/prep.c" -ldl || return 1
    n=$(LD_PRELOAD=$T/prep.so "$BIN/d9" --store "$STORE" sql --no-flush --format csv "$2" 2>&1 >/dev/null |
        sed -n 's/^prepares: //p')
    [ "$n" = "$1" ] || { echo "$2: compiled $n times, not $1"; return 1; }
}
check "a statement is compiled once" compiles 1 "select /*probe*/ count(*) from polls where pid = $OKPID"
check "each statement of a script is compiled once" \
    compiles 2 "select /*probe*/ count(*) from polls; select /*probe*/ count(*) from parks"

# ---- a copied store; damaged segments ----------------------------------------------------
stop_collector
cp -r "$STORE" "$T/copy"
QSTORE=$T/copy
check "copied store: the same polls" q "select count(*) from polls where pid = $OKPID" "401"
chmod -R a-w "$T/copy"
check "read-only copy: custom events" q "select count(*) from \"order\" where pid = $OKPID" "10"
chmod -R u+w "$T/copy"
SEG=$(sqlite3 "$T/copy/index.sqlite" "select s.path from segments s join processes p on p.id = s.process_id
                                        where p.pid = $OKPID order by s.id limit 1")
OFF=$(sqlite3 "$T/copy/index.sqlite" "select b.offset from blocks b join segments s on s.id = b.segment_id
                                        where s.path = '$SEG' and b.kind = 2 order by b.offset limit 1")
printf 'ZZZZ' | dd of="$T/copy/$SEG" bs=1 seek=$((OFF + 80)) conv=notrunc 2>/dev/null
check "a corrupt block: the query answers without it and warns" sh -c "
    '$BIN/d9' --store '$T/copy' sql --format csv 'select count(*) from events where pid = $OKPID' >'$T/c.out' 2>'$T/c.err';
    [ \$? -eq 0 ] && n=\$(tail -n 1 '$T/c.out' | tr -d '\r') && [ \$n -gt 0 ] && [ \$n -lt $(d9 events --pid "$OKPID" | wc -l) ] &&
    grep -q 'blocks failed validation' '$T/c.err'"
truncate -s 1000 "$T/copy/$SEG"
check "a truncated segment: the query answers without it and warns" sh -c "
    '$BIN/d9' --store '$T/copy' sql --format csv 'select count(*) from polls where pid = $OKPID' >'$T/t.out' 2>'$T/t.err';
    [ \$? -eq 0 ] && grep -q 'could not be read' '$T/t.err'"

d9_finish sql
