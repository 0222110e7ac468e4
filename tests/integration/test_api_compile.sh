#!/bin/sh
# test_api_compile.sh — what agent/d9.h promises at compile and link time,
# with gcc, clang, g++ and clang++:
#   - with -DD9_DISABLE every function and macro compiles to an inline stub:
#     nolink_disabled.c (every call) links with nothing but libc, names no
#     d9_ symbol, and runs seeing "off" everywhere;
#   - D9_EVENT's typed emit function (and D9_TRIGGER_EVENT's trigger
#     function) is checked by the compiler:
#     typed_event_check.c compiles with correct arguments and fails to
#     compile with each wrong one (-Wall -Wextra -Werror, as C and as C++).
. tests/integration/lib.sh
d9_setup
W="-Wall -Wextra -Werror -I."

for c in "gcc -std=c11" "clang -std=c11" "g++ -x c++ -std=c++11" "clang++ -x c++ -std=c++11"; do
    tag=$(echo "$c" | cut -d' ' -f1)
    out="$T/nolink_$tag"
    check "$tag: every call with -DD9_DISABLE links against libc alone" \
        $c $W -Wpedantic -DD9_DISABLE tests/integration/nolink_disabled.c -o "$out"
    check "$tag: the disabled program references no d9_ symbol" \
        sh -c "test -x '$out' && nm -u '$out' >'$out.nm' && ! grep d9_ '$out.nm'"
    check "$tag: every call says off when disabled at compile time" \
        sh -c "test \"\$('$out')\" = off"
    check "$tag: D9_EVENT with the right argument types compiles" \
        $c $W -DBAD=0 -c tests/integration/typed_event_check.c -o "$T/ok.o"
    for bad in 1 2 3 4 5 6 7 8; do
        check "$tag: D9_EVENT call $bad with a wrong argument does not compile" \
            sh -c "! $c $W -DBAD=$bad -c tests/integration/typed_event_check.c -o '$T/bad.o'"
    done
done
d9_finish api-compile
