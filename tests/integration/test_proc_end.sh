#!/bin/sh
# test_proc_end.sh — d9 ps tells how a traced process really ended, with the
# real collector: _exit(0) and _exit(9) (which the agent's exit hook cannot
# see) as exited(0) / exited(9), exit(9) as exited(9), a forked child's
# _exit(7) as exited(7), SIGKILL (which no handler sees) as crashed(SIGKILL)
# and SIGSEGV as crashed(SIGSEGV): the kernel's wait status (pexit.h); an
# execve (the pid lives on in another program) as exec, also in an index
# rebuilt from the segment files (fsck --repair, the collector's start-up).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }
# ended_as PID STATE CODE: the index's row of PID says STATE and CODE
ended_as() {
    d9 flush >/dev/null 2>&1
    d9 ps --format jsonl 2>/dev/null | grep "\"pid\":$1," >"$T/row" &&
        grep -q "\"state\":\"$2\"" "$T/row" && grep -q "\"exit_code\":$3[,}]" "$T/row"
}
# shown PID TEXT: d9 ps's table shows TEXT on PID's line
shown() { d9 ps 2>/dev/null | grep -w "$1" | grep -qF "$2"; }

check "collector starts" start_collector
alive() { d9 ps --format jsonl 2>/dev/null | grep "\"pid\":$1," | grep -q '"state":"alive"'; }
printed() { grep -q "^$2=" "$1"; }
# start MODE OUT: runs prog_procend MODE until the collector adopted it, then lets it end
start() {
    "$TBIN/prog_procend" "$1" >"$2" 2>"$2.err" &
    _bg=$!
    at_exit kill -9 "$_bg"
    wait_for 20 printed "$2" pid
    check "$1: the collector adopted it before it ended" wait_for 20 alive "$(sed -n 's/^pid=//p' "$2")"
    kill -USR1 "$_bg"
    wait "$_bg"
}
run_as() { # MODE STATE CODE TEXT
    start "$1" "$T/$1.out"
    pid=$(sed -n 's/^pid=//p' "$T/$1.out")
    check "$1: program ran" test -n "$pid"
    check "$1: indexed as $2 with code $3" wait_for 20 ended_as "$pid" "$2" "$3"
    check "$1: d9 ps shows $4" shown "$pid" "$4"
}
run_as _exit0 exited 0 'exited(0)'
run_as _exit9 exited 9 'exited(9)'
run_as exit9 exited 9 'exited(9)'
run_as sigkill crashed 9 'crashed(SIGKILL)'
run_as sigsegv crashed 11 'crashed(SIGSEGV)'
"$TBIN/prog_procend" fork_exit >"$T/fork.out" 2>"$T/fork.err" &
fpid=$!
at_exit kill -9 "$fpid"
wait_for 20 printed "$T/fork.out" child
cpid=$(sed -n 's/^child=//p' "$T/fork.out")
ppid=$(sed -n 's/^pid=//p' "$T/fork.out")
check "fork_exit: child ran" test -n "$cpid"
check "fork_exit: the collector adopted the parent" wait_for 20 alive "$ppid"
check "fork_exit: the collector adopted the child" wait_for 20 alive "$cpid"
kill -USR1 "$cpid"
kill -USR1 "$ppid"
wait "$fpid"
check "fork_exit: the parent reaped its child and exited 0" eq "$?" 0
check "fork_exit: the child's _exit(7) is exited(7)" wait_for 20 ended_as "$cpid" exited 7
check "fork_exit: d9 ps shows exited(7) for the child" shown "$cpid" 'exited(7)'
check "fork_exit: the parent is exited(0)" wait_for 20 ended_as "$ppid" exited 0
# exec: the process lives on as a shell that waits for $T/go
"$TBIN/prog_procend" exec "$T/go" >"$T/exec.out" 2>"$T/exec.err" &
epid=$!
at_exit kill -9 "$epid"
wait_for 20 printed "$T/exec.out" pid
check "exec: the collector adopted it" wait_for 20 alive "$epid"
kill -USR1 "$epid"
ended_exec() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep "\"pid\":$epid," | grep -q '"state":"exec"'; }
check "exec: indexed as exec while the new program still runs" wait_for 20 ended_exec
check "exec: the new program is still running" kill -0 "$epid"
check "exec: d9 ps shows exec" shown "$epid" 'exec'
touch "$T/go"
wait "$epid"
check "exec: the new program exited 0" eq "$?" 0
check "the collector stops cleanly" stop_collector
# the segment keeps the exec (its exit block), so an index rebuilt from the
# files says exec again: the process's rows removed and d9 fsck --repair
# re-indexes its sealed files; a whole index removed and rebuilt by the
# collector's start-up
forget() { # DIR PID: the index of DIR forgets PID (its process, threads, segments)
    sqlite3 "$1/index.sqlite" "
      delete from blocks where segment_id in (select s.id from segments s join processes p
        on p.id = s.process_id where p.pid = $2);
      delete from rollups where segment_id in (select s.id from segments s join processes p
        on p.id = s.process_id where p.pid = $2);
      delete from segments where process_id in (select id from processes where pid = $2);
      delete from threads where process_id in (select id from processes where pid = $2);
      delete from runtimes where process_id in (select id from processes where pid = $2);
      delete from processes where pid = $2;"
}
rm -rf "$T/copy" && cp -r "$STORE" "$T/copy" && forget "$T/copy" "$epid"
check "exec: the index forgot it" sh -c "! '$BIN/d9' --store '$T/copy' ps --format jsonl | grep -q '\"pid\":$epid,'"
check "exec: fsck --repair re-indexes its segments" "$BIN/d9" --store "$T/copy" fsck --repair --quiet
check "exec: ... and d9 ps shows exec again" sh -c \
    "'$BIN/d9' --store '$T/copy' ps --format jsonl | grep '\"pid\":$epid,' | grep -q '\"state\":\"exec\"'"
for f in exit9 sigsegv; do
    fp=$(sed -n 's/^pid=//p' "$T/$f.out")
    forget "$T/copy" "$fp"
done
"$BIN/d9" --store "$T/copy" fsck --repair --quiet >/dev/null 2>&1
check "exec: the others re-indexed as they ended (exited(9), crashed(SIGSEGV))" sh -c \
    "'$BIN/d9' --store '$T/copy' ps | grep -w $(sed -n 's/^pid=//p' "$T/exit9.out") | grep -qF 'exited(9)' &&
     '$BIN/d9' --store '$T/copy' ps | grep -w $(sed -n 's/^pid=//p' "$T/sigsegv.out") | grep -qF 'crashed(SIGSEGV)'"
rm -f "$STORE/index.sqlite" "$STORE/index.sqlite-wal" "$STORE/index.sqlite-shm"
check "the collector starts without an index" start_collector
check "exec: the rebuilt index says exec" wait_for 20 sh -c \
    "'$BIN/d9' --store '$STORE' ps --format jsonl | grep '\"pid\":$epid,' | grep -q '\"state\":\"exec\"'"
check "exec: d9 ps shows exec after the rebuild" shown "$epid" 'exec'
check "the collector stops cleanly" stop_collector
d9_finish proc_end
