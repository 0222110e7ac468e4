# uv_env.sh — shared set-up for tests/integration/test_uv_*.sh (sourced after
# lib.sh and collector_env.sh): the preload library and checks over what a
# program traced through it left in the store.
PRELOAD=$(cd "$BUILD/lib" 2>/dev/null && pwd)/libd9preload.so
D9="$BIN/d9 --store $STORE"

# (DIAL9_SHM_DIR and DIAL9_COLLECTOR, for the traced programs, come from collector_env.sh.)
# polls_at PID PATTERN: the number of PID's polls whose location matches PATTERN.
polls_at() {
    $D9 top-polls --pid "$1" --limit 10000000 --format jsonl >"$T/.polls" 2>"$T/.polls.err" || return 1
    grep -c "\"location\":\"$2" "$T/.polls"
}
has_polls_at() {
    _n=$(polls_at "$1" "$2")
    [ "${_n:-0}" -ge "${3:-1}" ] || { echo "no poll of pid $1 at '$2' (got ${_n:-0}); locations:";
        sed 's/.*"location":"\([^"]*\)".*/\1/' "$T/.polls" | sort | uniq -c | sort -rn | head; return 1; }
}
# has_workers PID N: at least N worker threads of PID in d9 sched
has_workers() {
    _w=$($D9 sched --pid "$1" | awk -v p="$1" '$1 == p { print $4 }' | sort -u | wc -l)
    [ "$_w" -ge "$2" ] || { echo "expected >= $2 worker threads, got $_w:"; $D9 sched --pid "$1"; return 1; }
}
# ended PID: the collector saw PID exit and sealed its data (d9 ps: exited)
ended() {
    $D9 flush --endpoint "$EP" >/dev/null 2>&1
    $D9 ps --format jsonl >"$T/ps.jsonl" 2>/dev/null &&
        grep -q "\"pid\":$1,.*\"state\":\"exited\"" "$T/ps.jsonl"
}
# no_lost PID: d9 ps counts no record of PID dropped by a full ring
no_lost() {
    grep -q "\"pid\":$1,.*\"lost\":0," "$T/ps.jsonl" ||
        { echo "lost records:"; grep "\"pid\":$1," "$T/ps.jsonl"; return 1; }
}
# held_rounds PROG ROUNDS: PROG (a libuv program taking --hold) under the
# preload, held until the collector adopted it, then its ROUNDS rounds, a
# flush while it lives, and its exit: its pid in PID, its exit status in
# HELD_RC, its output in $T/traced.out and .err. Three checks.
held_rounds() {
    mkfifo "$T/hold"
    LD_PRELOAD=$PRELOAD "$1" --hold <"$T/hold" >"$T/traced.out" 2>"$T/traced.err" &
    PID=$!
    exec 7>"$T/hold"
    check "the collector adopts the traced program" wait_for 20 _held_adopted
    echo go >&7
    _held_rounds=$2
    check "the program runs its $2 rounds" wait_for 60 _held_done
    check "a flush while the program lives" "$BIN/d9" flush --endpoint "$EP"
    exec 7>&-
    wait "$PID"
    HELD_RC=$?
}
_held_adopted() { "$BIN/d9" status --endpoint "$EP" | grep -q "^ *$PID "; }
_held_done() { grep -q "^rounds=$_held_rounds " "$T/traced.out"; }
