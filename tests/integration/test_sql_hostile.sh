#!/bin/sh
# test_sql_hostile.sh — `d9 sql` against a hostile user and a hostile store:
#   - read-only in every form: ATTACH (plain path, file: URIs with mode=rw and
#     mode=rwc, :memory:), VACUUM INTO, DDL and writes on the d9 tables,
#     writable_schema and other pragmas, load_extension, fts3_tokenizer are
#     refused with one line and exit 2; the file ATTACH or VACUUM INTO names
#     is not created and index.sqlite stays byte-identical after every try;
#     TEMP work still runs;
#   - limits: --timeout stops a runaway query, --memory-mb a growing
#     group_concat, each with one line naming the limit and how to raise it;
#   - terminal escapes: a traced program whose custom event, field and value
#     hold ESC, CSI, U+009B (C1 CSI) and newlines, its exe path U+009B (the
#     collector shows C0 bytes of a path as '?');
#     no raw control character reaches the output of sql (table, csv, jsonl,
#     --schema), ps (text, jsonl) or events, and the names are there escaped.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

d9() { "$BIN/d9" --store "$STORE" "$@"; }

ESC=$(printf '\033')
C1CSI=$(printf '\302\233')           # U+009B in UTF-8: a terminal takes it for ESC [
NL='
'
EVENT="ev${ESC}[31mred${C1CSI}2J${NL}x"
FIELD="f${ESC}]0;title$(printf '\007')y"
VALUE="v${ESC}[2J${C1CSI}31m${NL}z"
HDIR="$T/bin${ESC}[31m${C1CSI}2J"
mkdir -p "$HDIR"
cp "$TBIN/prog_hostile_names" "$HDIR/prog_hostile"

# the program writes its hostile names into its region before the collector
# starts, and exits once the collector adopted it
mkfifo "$T/hold"
"$HDIR/prog_hostile" "$EVENT" "$FIELD" "$VALUE" <"$T/hold" >"$T/h.out" 2>"$T/h.err" &
HOLDPID=$!
exec 7>"$T/hold"
check "the program wrote hostile names into its region" \
    wait_for 20 sh -c "grep -qx ready '$T/h.out' || ! kill -0 $HOLDPID"
grep -qx ready "$T/h.out" || cat "$T/h.err"
HPID=$(head -n 1 "$T/h.out")
# (without the hold fifo's write end: the program sees its end once we close it)
start_collector 7>&-
check "the collector adopted it" wait_for 20 sh -c "'$BIN/d9' status | grep -q '^ *$HPID '"
exec 7>&-
wait "$HOLDPID"
ended() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null |
          grep -q "\"pid\":$HPID,.*\"state\":\"exited\""; }
check "the hostile program ran traced and was sealed" wait_for 20 ended
stop_collector

# clean OUT [ALLOW]: OUT is not empty and holds no C0 control but newline
# (and the ones in ALLOW: "crlf" lets CR stand before a newline), no DEL, no
# C1 control (U+0080..U+009F) and no byte that is not UTF-8 (a lone 0x9b is
# CSI to an 8-bit terminal)
clean() {
    python3 - "$1" "${2:-}" <<'EOF'
import re, sys
b = open(sys.argv[1], 'rb').read()
assert b, 'empty output'
if sys.argv[2] == 'crlf':
    b = b.replace(b'\r\n', b'\n')
bad = [c for c in b if (c < 0x20 and c != 0x0a) or c == 0x7f]
assert not bad, 'raw control bytes %r in %r' % (sorted(set(bad)), b[:300])
t = b.decode('utf-8')          # raises on bytes that are not UTF-8
c1 = [ch for ch in t if 0x80 <= ord(ch) <= 0x9f]
assert not c1, 'raw C1 controls %r' % c1
EOF
}
# has OUT TEXT: OUT holds TEXT (fixed string)
has() { grep -qF -- "$2" "$1" || { echo "no '$2' in:"; head -c 600 "$1"; return 1; }; }

EV_ESC='ev\x1b[31mred\u009b2J\x0ax'
HDIR_ESC="bin?[31m\\u009b2J/prog_hostile"
Q_EV=$(printf '%s' "$EVENT" | sed 's/"/""/g')

# ---- terminal escapes ---------------------------------------------------------------
d9 sql --schema >"$T/schema.txt" 2>&1
check "sql --schema: no raw control character" clean "$T/schema.txt"
check "sql --schema: the custom event's table is listed, escaped" has "$T/schema.txt" "$EV_ESC -- "
check "sql --schema: its field too" has "$T/schema.txt" '    f\x1b]0;title\x07y'

d9 sql --format csv "select event, thread from events where pid = $HPID and type = 'custom'" \
    >"$T/ev.csv" 2>&1
check "sql --format csv: no raw control character in event names" clean "$T/ev.csv" crlf
check "sql --format csv: the event name is there, escaped (newline kept, quoted)" \
    has "$T/ev.csv" '"ev\x1b[31mred\u009b2J'
d9 sql --format csv "select * from \"$Q_EV\"" >"$T/custom.csv" 2>&1
check "sql --format csv: a custom table's header and values, no raw control" \
    clean "$T/custom.csv" crlf
check "... the field name is in the header, escaped" has "$T/custom.csv" 'f\x1b]0;title\x07y'

d9 sql "select pid, exe, comm from processes where pid = $HPID" >"$T/exe.txt" 2>&1
check "sql (table): no raw control character in the exe path" clean "$T/exe.txt"
check "sql (table): the exe path shows U+009B and ESC escaped" has "$T/exe.txt" "$HDIR_ESC"
d9 sql "select * from \"$Q_EV\"" >"$T/custom.txt" 2>&1
check "sql (table): a custom table with hostile field name and values, no raw control" \
    clean "$T/custom.txt"
check "... the value is there, escaped" has "$T/custom.txt" 'v\x1b[2J\u009b31m\x0az'

d9 sql --format jsonl "select exe, comm from processes where pid = $HPID" >"$T/exe.jsonl" 2>&1
check "sql --format jsonl: no raw control character (U+009B as \\u009b)" clean "$T/exe.jsonl"
check "sql --format jsonl: the exe path comes back exact" python3 -c "
import json, sys
r = json.loads(open('$T/exe.jsonl', encoding='utf-8').readline())
want = ''.join('?' if ord(c) < 0x20 or c == '\\x7f' else c for c in sys.argv[1])
assert r['exe'] == want, (r['exe'], want)
assert '\\\\u009b' in open('$T/exe.jsonl').read()
" "$HDIR/prog_hostile"

d9 ps --format jsonl >"$T/ps.jsonl" 2>&1
check "ps --format jsonl: no raw control character (U+009B as \\u009b)" clean "$T/ps.jsonl"
check "ps --format jsonl: the exe path comes back exact" python3 -c "
import json, sys
want = ''.join('?' if ord(c) < 0x20 or c == '\\x7f' else c for c in sys.argv[1])
rows = [json.loads(l) for l in open('$T/ps.jsonl', encoding='utf-8')]
assert [r['exe'] for r in rows if r['pid'] == $HPID] == [want], rows
" "$HDIR/prog_hostile"
d9 ps >"$T/ps.txt" 2>&1
check "ps (text): no raw control character" clean "$T/ps.txt"
d9 events --pid "$HPID" >"$T/events.txt" 2>&1
check "events (text): no raw control character" clean "$T/events.txt"
check "events (text): the custom event is there" has "$T/events.txt" 'red\u009b2J'
d9 events --pid "$HPID" --format jsonl >"$T/events.jsonl" 2>&1
check "events --format jsonl: no raw control character" clean "$T/events.jsonl"

# ---- read-only in every form ----------------------------------------------------------
d9 sql "select count(*) from processes" >/dev/null 2>&1      # a reader's first open
IDX_SUM=$(sha256sum <"$STORE/index.sqlite")
FILES=$(ls -a "$STORE" | tr '\n' ' ')
# refused SQL PATTERN [FILE]: exit 2, one stderr line matching PATTERN (ERE),
# nothing on stdout, FILE (when given) not created, the index byte-identical
# and no file added to or removed from the store
refused() {
    timeout 20 "$BIN/d9" --store "$STORE" sql "$1" >"$T/r.out" 2>"$T/r.err"
    rc=$?
    echo "exit $rc; stderr:"; cat "$T/r.err"; echo "stdout:"; cat "$T/r.out"
    [ $rc -eq 2 ] && [ "$(wc -l <"$T/r.err")" -eq 1 ] && grep -qE -- "$2" "$T/r.err" &&
        [ ! -s "$T/r.out" ] && { [ -z "${3:-}" ] || [ ! -e "$3" ]; } &&
        [ "$(sha256sum <"$STORE/index.sqlite")" = "$IDX_SUM" ] &&
        [ "$(ls -a "$STORE" | tr '\n' ' ')" = "$FILES" ]
}
ATT='^d9 sql: d9 sql is read-only: ATTACH and VACUUM INTO are refused'
check "attach database PATH: refused, the file is not created" \
    refused "attach database '$T/a1.db' as x" "$ATT" "$T/a1.db"
check "attach 'file:STORE/index.sqlite?mode=rw'; update; delete: refused, index unchanged" \
    refused "attach 'file:$STORE/index.sqlite?mode=rw' as i; update i.processes set uid = 4242;
             delete from i.segments" "$ATT"
check "attach 'file:PATH?mode=rwc': refused, the file is not created" \
    refused "attach 'file:$T/a2.db?mode=rwc' as x" "$ATT" "$T/a2.db"
check "attach a file named like a URI: refused, nothing created" \
    refused "attach 'file:a3.db?mode=rwc' as x" "$ATT" a3.db
check "attach ':memory:': refused" refused "attach ':memory:' as m" "$ATT"
check "vacuum into PATH: refused, the file is not created" \
    refused "vacuum into '$T/v1.db'" "$ATT" "$T/v1.db"
check "vacuum into 'file:PATH?mode=rwc': refused, the file is not created" \
    refused "vacuum into 'file:$T/v2.db?mode=rwc'" "$ATT" "$T/v2.db"
check "drop table processes: refused" refused "drop table processes" 'DROP of processes is refused'
check "drop table polls: refused" refused "drop table polls" 'DROP of polls is refused'
check "create table on main: refused" refused "create table t(a)" 'CREATE of t is refused'
check "create view on main: refused" refused "create view v as select 1" 'CREATE of v is refused'
check "create virtual table: refused" \
    refused "create virtual table temp.f using fts4(x)" 'CREATE VIRTUAL TABLE f is refused'
check "pragma writable_schema=1: refused" \
    refused "pragma writable_schema=1" 'PRAGMA writable_schema is refused'
check "pragma writable_schema, then writing sqlite_schema: refused" \
    refused "pragma writable_schema=on; update sqlite_schema set sql = 'x'" 'PRAGMA writable_schema'
check "another pragma (temp_store_directory): refused" \
    refused "pragma temp_store_directory = '$T'" 'PRAGMA temp_store_directory is refused'
check "insert into processes: refused" \
    refused "insert into processes(pid) values (1)" 'writing to processes is refused'
check "update processes: refused" \
    refused "update processes set uid = 1" 'writing to processes is refused|processes may not be modified'
check "delete from polls: refused" \
    refused "delete from polls" 'writing to polls is refused|polls may not be modified'
check "alter table processes: refused" \
    refused "alter table processes rename to p" 'ALTER TABLE processes is refused'
check "load_extension(): refused" \
    refused "select load_extension('$T/x.so')" 'load_extension\(\) is refused'
check "fts3_tokenizer('simple'): refused, no pointer printed" \
    refused "select hex(fts3_tokenizer('simple'))" 'fts3_tokenizer\(\) is refused'
check "fts3_tokenizer with two arguments: refused" \
    refused "select fts3_tokenizer('x', x'0000000000000000')" 'fts3_tokenizer\(\) is refused'
check "analyze: refused" refused "analyze" 'ANALYZE and REINDEX are refused|CREATE of sqlite_stat1 is refused'
check "a refusal in a later statement stops there with exit 2" \
    refused "select 1 where 0; drop table threads" 'DROP of threads'
check "the index is byte-identical after every attempt" \
    test "$(sha256sum <"$STORE/index.sqlite")" = "$IDX_SUM"

# temp work: allowed
check "TEMP tables, views and pragma table_info still work" sh -c "
    '$BIN/d9' --store '$STORE' sql --format csv \"create temp table t as select pid from processes;
        insert into t values (-1); create temp view v as select count(*) as n from polls;
        create index temp.ti on t(pid); select (select count(*) from t) - (select count(*) from processes),
        (select count(*) from v) , (select count(*) from pragma_table_info('processes')) > 5\" >'$T/tmp.csv' &&
    [ \"\$(tail -n 1 '$T/tmp.csv' | tr -d '\r')\" = '1,1,1' ]"

# ---- limits ------------------------------------------------------------------------------
# limited ARGS PATTERN: exit 2 within 60 s, one stderr line matching PATTERN
limited() {
    _q=$1; _p=$2; shift 2
    timeout 60 "$BIN/d9" --store "$STORE" sql "$@" "$_q" >"$T/l.out" 2>"$T/l.err"
    rc=$?
    echo "exit $rc; stderr:"; cat "$T/l.err"
    [ $rc -eq 2 ] && [ "$(wc -l <"$T/l.err")" -eq 1 ] && grep -qE -- "$_p" "$T/l.err"
}
FOREVER="with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"
check "--timeout stops a runaway query, says which limit and how to raise it" \
    limited "$FOREVER" 'longer than --timeout 300ms .*--timeout DURATION' --timeout 300ms
check "--timeout covers a statement after a first one" \
    limited "select 1; $FOREVER" '--timeout 1s' --timeout 1s
# 12 M numbers make a ~90 MB string: past 64 MiB, and SQLite reports the
# failed growth only when the aggregate ends, so the rows are bounded
GROW="with recursive c(x) as (select 1 union all select x + 1 from c where x < 12000000)
      select length(group_concat(x)) from c"
check "--memory-mb stops a growing group_concat, says which limit and how to raise it" \
    limited "$GROW" 'memory limit of 64 MiB; raise it with --memory-mb' --memory-mb 64
check "the default memory limit (1024 MiB) is stated in --help" sh -c \
    "'$BIN/d9' sql --help | grep -q 'default 1024'"
check "a bad --timeout is a usage error" sh -c "
    '$BIN/d9' --store '$STORE' sql --timeout soon 'select 1' >/dev/null 2>'$T/u.err'; [ \$? -eq 2 ] &&
    grep -q '^d9 sql: --timeout' '$T/u.err'"
check "a bad --memory-mb is a usage error" sh -c "
    '$BIN/d9' --store '$STORE' sql --memory-mb lots 'select 1' >/dev/null 2>'$T/u.err'; [ \$? -eq 2 ] &&
    grep -q '^d9 sql: --memory-mb' '$T/u.err'"
check "within the limits a query answers as before" sh -c "
    [ \"\$('$BIN/d9' --store '$STORE' sql --format csv --timeout 30s --memory-mb 64 \
        'select count(*) from processes where pid = $HPID' | tail -n 1 | tr -d '\r')\" = 1 ]"

d9_finish sql-hostile
