#!/bin/sh
# test_api_exports.sh — libd9agent.so exports the API of agent/d9.h and
# nothing else: its dynamic symbol table (defined symbols) must be exactly
# the d9_* functions d9.h declares. An internal name that leaks (a missing
# -fvisibility=hidden) or an API function left hidden (a missing D9_API)
# fails here.
. tests/integration/lib.sh
d9_setup
CC=${CC:-cc}
LC_ALL=C; export LC_ALL    # sort and comm must agree on the order
SO=$BUILD/lib/libd9agent.so

# declared: function names in the preprocessed header (macros are gone by then)
declared() {
    $CC -E -P -x c -I. agent/d9.h | grep -oE '\bd9_[a-z0-9_]+[[:space:]]*\(' |
        sed 's/[[:space:]]*($//' | sort -u
}
exported() { nm -D --defined-only "$SO" | awk '{print $NF}' | sort -u; }
declared >"$T/declared"
exported >"$T/exported" 2>"$T/nm.err"

check "libd9agent.so is built" test -f "$SO"
check "d9.h declares the API (at least d9_init and d9_poll_start)" \
    sh -c "grep -qx d9_init '$T/declared' && grep -qx d9_poll_start '$T/declared'"
only_api() {
    extra=$(comm -13 "$T/declared" "$T/exported")
    [ -z "$extra" ] || { echo "exported but not declared in d9.h:"; echo "$extra"; return 1; }
}
check "no symbol beyond the d9_* functions of d9.h is exported" only_api
whole_api() {
    missing=$(comm -23 "$T/declared" "$T/exported")
    [ -z "$missing" ] || { echo "declared in d9.h but not exported:"; echo "$missing"; return 1; }
}
check "every function d9.h declares is exported" whole_api
d9_finish api-exports
