#!/bin/sh
# test_d9_lazy.sh — `d9` opens curl, crypto, zmq, microhttpd, zstd and
# stdc++ only when a command uses them (collector/lazy/lazy.h): a reading
# command over a store maps none of them (ld.so's LD_DEBUG=libs names every
# library it loads, dlopen'ed ones too); the commands that need one load it
# and work; with one hidden ($D9_LAZY_HIDE, as if not installed) they fail
# with a message that names it, and a reading command does not care.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }
LAZY='lib(curl|crypto|zmq|microhttpd|zstd|stdc\+\+)\.so'
# loads CMD...: the libraries ld.so loaded for CMD (its exit status ignored)
loads() { LD_DEBUG=libs "$@" 2>&1 >/dev/null | sed -n 's/.*calling init: //p'; }
# fails_naming HIDE TEXT CMD...: with $D9_LAZY_HIDE=HIDE, CMD exits non-zero,
# not by a signal, and says TEXT (within 20 s: a d9 serve that did start is
# stopped and fails the check)
fails_naming() {
    _h=$1 _t=$2; shift 2
    (D9_LAZY_HIDE=$_h; export D9_LAZY_HIDE; timeout 20 "$@") >"$T/fn.out" 2>&1 &&
        { echo "exit 0:"; cat "$T/fn.out"; return 1; }
    _rc=$?
    [ "$_rc" -lt 128 ] || { echo "killed by a signal ($_rc)"; return 1; }
    grep -qF -- "$_t" "$T/fn.out" || { echo "'$_t' not in:"; cat "$T/fn.out"; return 1; }
}

check "collector starts" start_collector
workload w --threads 2 --events 2000 --polls
check "the workload ends" wait_for 30 wl_done w
check "flush" flush

# ---- with the collector live ------------------------------------------------------
check "d9 status works (libzmq opened at first use)" d9 status
check "d9 status loaded libzmq" sh -c "LD_DEBUG=libs '$BIN/d9' --endpoint '$EP' status 2>&1 >/dev/null | grep -q 'calling init: .*libzmq\.so'"
check "with libzmq hidden, d9 status fails naming it" \
    fails_naming zmq libzmq.so "$BIN/d9" --endpoint "$EP" status
check "with libzmq hidden, a reading command still answers (no refresh)" \
    env D9_LAZY_HIDE=zmq "$BIN/d9" --store "$STORE" --endpoint "$EP" top-polls
check "collector stops" stop_collector

# ---- a reading command maps none of them -------------------------------------------
for c in "--version" "top-polls" "top-polls --by-location" "sched" "events --limit 5" "ps"; do
    # shellcheck disable=SC2086
    check "d9 $c answers" d9 $c
    # shellcheck disable=SC2086
    check "d9 $c loads none of the lazy libraries" lacks "$LAZY" loads "$BIN/d9" --store "$STORE" --endpoint "$EP" $c
done
check "d9 sql answers" d9 sql "select count(*) from polls"
check "d9 sql loads none of the lazy libraries" \
    lacks "$LAZY" loads "$BIN/d9" --store "$STORE" --endpoint "$EP" sql "select count(*) from polls"
check "d9 maps 6 libraries or fewer at start (ldd)" sh -c "[ \$(ldd '$BIN/d9' | wc -l) -le 7 ]"

# ---- the commands that need one ---------------------------------------------------
check "export --format parquet works (libzstd opened at first use)" \
    d9 export --format parquet -o "$T/pq"
check "the Parquet files are there" sh -c "ls '$T/pq' | grep -q '\.parquet$'"
check "with libzstd hidden, export --format parquet fails naming it" \
    fails_naming zstd libzstd.so "$BIN/d9" --store "$STORE" export --format parquet -o "$T/pq2"
check "with libmicrohttpd hidden, d9 serve fails naming it" \
    fails_naming microhttpd libmicrohttpd.so "$BIN/d9" --store "$STORE" serve --listen 127.0.0.1:0
for h in curl crypto; do
    check "with lib$h hidden, d9 pull fails naming it" \
        fails_naming "$h" "lib$h.so" env AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s \
        "$BIN/d9" pull --s3-endpoint http://127.0.0.1:9 s3://bucket/p "$T/pulled"
done
check "d9collectd links them as before" sh -c "ldd '$BIN/d9collectd' | grep -q libzmq && ldd '$BIN/d9collectd' | grep -q libcurl"
d9_finish d9_lazy
