#!/bin/sh
# test_sec_store_files.sh — a copied store is hostile input: a FIFO in place
# of a segment (or of the index's WAL) and a symbolic link in place of a
# segment must not hang any reader. Every reader command (fsck, ps, events,
# sql, top-polls, export, serve) returns promptly, with one line naming the
# file; `timeout` bounds each run and must never fire (exit 124).
. tests/integration/lib.sh
. tests/integration/collector_env.sh
LIMIT=${SEC_LIMIT:-20}

check "collector starts" start_collector
workload w --threads 2 --events 400
check "the workload ran" wait_for 20 wl_done w
W=$(wl_pid w)
check "flush succeeds" flush
check "the workload's process is finished" wait_for 20 sh -c \
    "[ \"\$(sqlite3 '$STORE/index.sqlite' \"select state from processes where pid=$W\")\" = exited ]"
check "SIGTERM exits 0" stop_collector

# two copies: one with a FIFO where a segment was, one with a symlink there
SEG=$(cd "$STORE" && ls -- *.d9seg | head -n 1)
check "the store has a segment" test -n "$SEG"
mk_copy() {
    cp -a "$STORE" "$T/$1"
    rm -f "$T/$1/$SEG"
}
mk_copy fifo
mkfifo "$T/fifo/$SEG"
mk_copy link
echo secret >"$T/outside"
ln -s "$T/outside" "$T/link/$SEG"
mk_copy walfifo
rm -f "$T/walfifo/index.sqlite-wal" "$T/walfifo/index.sqlite-shm"
mkfifo "$T/walfifo/index.sqlite-wal"

# runs_and_names FILE CMD...: bounded; passes when it ended by itself (not
# timeout's 124) and a line of its output names FILE and says $WHAT
runs_and_names() {
    _file=$1; shift
    timeout -k 5 "$LIMIT" "$@" >"$T/r.out" 2>"$T/r.err" </dev/null
    _rc=$?
    [ "$_rc" -ne 124 ] && [ "$_rc" -ne 137 ] || { echo "hung (timeout fired)"; return 1; }
    grep -F -- "$_file" "$T/r.out" "$T/r.err" | grep -q "$WHAT" ||
        { echo "exit $_rc, no line names $_file as $WHAT:"; cat "$T/r.err"; return 1; }
}
for kind in fifo link; do
    S=$T/$kind
    WHAT="FIFO"
    [ "$kind" = link ] && WHAT="symbolic link"
    F=$S/$SEG
    check "$kind: fsck returns and names the file" runs_and_names "$SEG" "$BIN/d9" --store "$S" fsck
    check "$kind: events returns and names the file" runs_and_names "$F" \
        "$BIN/d9" --store "$S" events --pid "$W"
    check "$kind: top-polls returns and names the file" runs_and_names "$F" \
        "$BIN/d9" --store "$S" top-polls --pid "$W"
    check "$kind: export returns and names the file" runs_and_names "$F" \
        "$BIN/d9" --store "$S" export --pid "$W" -o "$T/$kind.json"
    check "$kind: sql returns and names the file" runs_and_names "$F" \
        "$BIN/d9" --store "$S" sql "select count(*) from events"
    cp -a "$S" "$S.repair"
    check "$kind: fsck --repair returns and names the file" runs_and_names "$SEG" \
        "$BIN/d9" --store "$S.repair" fsck --repair
done
check "link: the file outside the store was not read" sh -c "! grep -rq secret '$T/link.json' '$T/r.out'"
WHAT=FIFO
check "a FIFO as the index's WAL: ps returns and names it" runs_and_names "index.sqlite-wal" \
    "$BIN/d9" --store "$T/walfifo" ps
check "a FIFO as the index's WAL: fsck returns and names it" runs_and_names "index.sqlite-wal" \
    "$BIN/d9" --store "$T/walfifo" fsck

# d9 serve: it answers (the API reports the problem or skips the file),
# never reads through the link, and stops on SIGTERM
for kind in fifo link; do
    "$BIN/d9" --store "$T/$kind" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
    SPID=$!
    at_exit kill -9 "$SPID"
    check "$kind: serve prints its URL" wait_for 10 grep -q '^d9 serve: http://127.0.0.1:' "$T/serve.out"
    U=$(sed -n 's|^d9 serve: \(http://[^ ]*/\).*|\1|p' "$T/serve.out")
    check "$kind: serve answers a timeline within ${LIMIT}s" \
        curl -s -o "$T/tl-$kind.json" --max-time "$LIMIT" "${U}api/timeline?pid=$W&width=100"
    check "$kind: serve answers events within ${LIMIT}s" \
        curl -s -o "$T/ev-$kind.json" --max-time "$LIMIT" "${U}api/events?pid=$W"
    check "$kind: serve still answers after it" curl -s -o /dev/null --max-time "$LIMIT" "${U}api/processes"
    check "$kind: serve names the file" grep -qF "$SEG" "$T/serve.err"
    kill -TERM "$SPID"
    check "$kind: serve stops on SIGTERM" wait_for 10 sh -c "! kill -0 $SPID"
done
check "link: serve sent nothing of the file outside the store" \
    sh -c "test -s '$T/tl-link.json' && ! grep -q secret '$T/tl-link.json' '$T/ev-link.json'"
d9_finish sec-store-files
