#!/bin/sh
# test_uv_nvim.sh — Neovim, unmodified, under LD_PRELOAD=libd9preload.so:
# nvim --headless runs a Lua script whose libuv timer (vim.loop) ticks 20
# times at least (until the test lets it stop) and prints that it did. The
# script's output must be the same as without the preload; the store must
# hold the timer's callback (luv's timer callback in liblua5.1-luv) in d9
# top-polls, once per tick at least, nvim's main loop as a worker in d9
# sched, and no lost record. 8 ticks once the collector has adopted nvim
# each vim.schedule 50 ms
# of work, which Neovim runs after uv_run returns (no libuv callback): it
# must be loop work (d9 top-polls --loop-work, q_loopwork.h), 8
# intervals of >= 50 ms at least.
# Neovim's and luv's callbacks are static functions of stripped binaries:
# they are named "library+0xoffset", or "library+0xoffset function" when
# the debug symbols (/usr/lib/debug/.build-id) are installed.
. tests/integration/lib.sh
. tests/integration/collector_env.sh
. tests/integration/uv_env.sh
NVIM=${NVIM:-$(command -v nvim)}
TICKS=20
SCHED=8
if [ -z "$NVIM" ]; then
    check "nvim is installed (make test installs neovim)" false
    d9_finish uv-nvim; exit
fi
# the timer ticks until it has ticked $TICKS times and the file go exists
# (the test creates it once the collector has adopted nvim)
cat >"$T/timer.lua" <<LUA
local n, s = 0, 0
local t = vim.loop.new_timer()
t:start(0, 5, function()
  n = n + 1
  if s < $SCHED and vim.loop.fs_stat("$T/go") then
    s = s + 1
    vim.schedule(function()
      local t0 = vim.loop.hrtime()
      while vim.loop.hrtime() - t0 < 50e6 do end
    end)
  end
  if n >= $TICKS and s >= $SCHED and vim.loop.fs_stat("$T/go") then
    t:stop()
    t:close()
    vim.schedule(function() io.stdout:write("ticks>=$TICKS\\n"); vim.cmd("qa!") end)
  end
end)
LUA
NVIM_ARGS="--headless --clean -u NONE -i NONE -c"

start_collector
touch "$T/go"
timeout 30 "$NVIM" $NVIM_ARGS "luafile $T/timer.lua" >"$T/plain.out" 2>&1
plain_rc=$?
rm -f "$T/go"
# started directly (its pid is the traced process), with a guard against a hang
LD_PRELOAD=$PRELOAD "$NVIM" $NVIM_ARGS "luafile $T/timer.lua" >"$T/traced.out" 2>&1 &
VPID=$!
at_exit kill -9 "$VPID"
( sleep 30; kill -9 "$VPID" ) >/dev/null 2>&1 &
GUARD=$!
at_exit kill "$GUARD"
adopted() { "$BIN/d9" status --endpoint "$EP" | grep -q "^ *$VPID "; }
check "the collector adopts nvim" wait_for 20 adopted
# a flush while it lives seals a segment that holds its map snapshot
check "a flush while nvim lives" "$BIN/d9" flush --endpoint "$EP"
touch "$T/go"
wait "$VPID"
traced_rc=$?
kill "$GUARD" 2>/dev/null
check "the script prints ticks>=$TICKS without the preload" grep -qx "ticks>=$TICKS" "$T/plain.out"
check "the same output and exit status under the preload" \
    sh -c "cmp '$T/plain.out' '$T/traced.out' && [ $plain_rc -eq $traced_rc ]"
check "the collector records nvim's exit and seals its data" wait_for 20 ended "$VPID"
check "the timer's callback (luv) is in top-polls, once per tick at least" \
    has_polls_at "$VPID" '[^"]*liblua5.1-luv[^"]*+0x' "$TICKS"
check "nvim's own callbacks are in top-polls" has_polls_at "$VPID" '[^"]*nvim+0x' 1
check "no code location is left unresolved" sh -c "! grep -q '\"location\":\"\\[code\\]' '$T/.polls'"
check "nvim's loop is a worker in d9 sched" has_workers "$VPID" 1
sched_work() {
    _n=$($D9 top-polls --pid "$VPID" --loop-work --loop-work-min 50ms --location 'loop work' \
        --limit 1000 --format jsonl 2>&1 | grep -c '"loop_work":true')
    [ "${_n:-0}" -ge $SCHED ] || { echo "loop work >= 50ms: ${_n:-0}"; $D9 top-polls --pid "$VPID" --loop-work --limit 20; return 1; }
}
check "its $SCHED scheduled works (50 ms each) are loop work" sched_work
check "no record of nvim was lost" no_lost "$VPID"
d9_finish uv-nvim
