#!/bin/sh
# test_tsan_rollups.sh — the rollup thread (collector/store/ru_pipe.c) under
# ThreadSanitizer: test_ru_pipe and test_rollup_feed (every live-rollup
# case fed inline and through the pipe, the drain's in-place buffers
# included), built with -fsanitize=thread by tests/integration/tsan.mk
# (`make integration`), pass and TSan reports no data race.
. tests/integration/lib.sh
d9_setup
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stop=1

# tsan_ok NAME: the binary passes all its tests, with no TSan report
tsan_ok() {
    "$BUILD/tsan/$1" >"$T/$1.out" 2>&1
    rc=$?
    tail -n 3 "$T/$1.out"
    ! grep -E "ThreadSanitizer|runtime error" "$T/$1.out" && [ "$rc" -eq 0 ] &&
        grep -q "PASSED" "$T/$1.out"
}
for u in test_ru_pipe test_rollup_feed; do
    check "$u under ThreadSanitizer: passes, no data race" tsan_ok "$u"
done
d9_finish test_tsan_rollups
