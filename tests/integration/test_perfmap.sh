#!/bin/sh
# test_perfmap.sh — JIT frames named from /tmp/perf-PID.map: node
# --perf-basic-prof runs a CPU-busy JS function under the preload shim
# (DIAL9_LOOP=epoll: node's libuv is static, its epoll loop is what gets
# traced); the collector reads the perf map and `d9 flame`, `d9 sql`'s
# stacks and both exports name the function. Hostile maps (a symlink, a
# file of another uid, one above 16 MiB, garbage lines) are refused or
# ignored with a log line while the collector keeps running. Skipped
# without node.
. tests/integration/lib.sh
. tests/integration/collector_env.sh

if ! command -v node >/dev/null 2>&1; then
    echo "skipped: node not installed (apt-get install nodejs)"
    d9_finish perfmap
    exit $?
fi
PRELOAD=$(cd "$BUILD/lib" && pwd)/libd9preload.so
d9() { "$BIN/d9" --store "$STORE" --endpoint "$EP" "$@"; }
has() { grep -q -- "$1" "$2" || { echo "'$1' not in $2:"; head -c 2000 "$2"; return 1; }; }
cat >"$T/busy.js" <<'JS'
function d9jsBusySpin(n) { let s = 0; for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003; return s; }
setTimeout(() => {
    const end = Date.now() + 1000 * Number(process.argv[2] || 2); let r = 0;
    while (Date.now() < end) r += d9jsBusySpin(200000);
    console.log("done", r);
}, 10);
JS
# traced PREFIX [node args]: runs node (exec keeps the shell's pid, so
# $T/PREFIX.pre can place /tmp/perf-PID.map before node starts; in $T, where
# node leaves its isolate-*-v8.log); pid in $T/PREFIX.pid
traced() {
    _p=$1; shift
    DIAL9_LOOP=epoll LD_PRELOAD=$PRELOAD sh -c 'cd "$T" && echo $$ >"$0.pid"; [ -f "$0.pre" ] && . "$0.pre"; exec node "$@"' \
        "$T/$_p" "$@" >"$T/$_p.out" 2>&1
}
exited() { d9 flush >/dev/null 2>&1; d9 ps --format jsonl 2>/dev/null | grep -q "\"pid\":$1,.*\"state\":\"exited"; }
logged() { grep -q -- "$1" "$T/col.log"; }

check "collector starts" start_collector

# ---- node --perf-basic-prof ---------------------------------------------------------
traced js --perf-basic-prof "$T/busy.js" 3
NP=$(cat "$T/js.pid")
at_exit rm -f "/tmp/perf-$NP.map"
check "node ran under the shim" has "done" "$T/js.out"
check "node wrote its perf map" test -s "/tmp/perf-$NP.map"
check "node is stored and exited" wait_for 20 exited "$NP"
d9 flame --pid "$NP" >"$T/js.folded" 2>"$T/js.err"
check "d9 flame names the JS function from the perf map" has 'd9jsBusySpin' "$T/js.folded"
d9 sql "select frame from stacks where pid = $NP and frame like '%d9jsBusySpin%' limit 1" \
    >"$T/js.sql" 2>&1
check "d9 sql's stacks name it" has 'd9jsBusySpin' "$T/js.sql"
d9 export --pid "$NP" --format json -o "$T/js.json" >/dev/null 2>&1
check "the JSON export names it" has 'd9jsBusySpin' "$T/js.json"
d9 export --pid "$NP" --format perfetto -o "$T/js.pftrace" >/dev/null 2>&1
check "the Perfetto export names it" has 'd9jsBusySpin' "$T/js.pftrace"

# ---- hostile maps: refused or ignored, the collector keeps running ------------------
echo "1000 10 secret" >"$T/target"
printf 'ln -s "%s" "/tmp/perf-$$.map"\n' "$T/target" >"$T/sym.pre"
traced sym "$T/busy.js" 1
SP=$(cat "$T/sym.pid")
at_exit rm -f "/tmp/perf-$SP.map"
check "a symlinked perf map is refused with a log line" wait_for 20 logged "perf-$SP.map refused (a symlink)"

printf 'truncate -s 17M "/tmp/perf-$$.map"\n' >"$T/big.pre"
traced big "$T/busy.js" 1
BP=$(cat "$T/big.pid")
at_exit rm -f "/tmp/perf-$BP.map"
check "a perf map above 16 MiB is refused with a log line" wait_for 20 logged "perf-$BP.map refused (larger than 16 MiB)"

printf 'printf "garbage\\n1000 0 zero\\nzz 10 x\\n" >"/tmp/perf-$$.map"\n' >"$T/bad.pre"
traced bad "$T/busy.js" 1
GP=$(cat "$T/bad.pid")
at_exit rm -f "/tmp/perf-$GP.map"
check "garbage lines are ignored with a log line" wait_for 20 logged "pid $GP: perf map: 3 malformed lines ignored"

if [ "$(id -u)" -eq 0 ]; then
    printf 'echo "1000 10 x" >"/tmp/perf-$$.map"; chown 65534 "/tmp/perf-$$.map"\n' >"$T/own.pre"
    traced own "$T/busy.js" 1
    OP=$(cat "$T/own.pid")
    at_exit rm -f "/tmp/perf-$OP.map"
    check "a perf map of another uid is refused with a log line" \
        wait_for 20 logged "perf-$OP.map refused (not owned by the process's uid)"
fi
check "the collector keeps running" "$TBIN/tool_ctl" "$EP" status

d9_finish perfmap
