#!/bin/sh
# test_docs.sh — the documents say what the code does:
#   - every DIAL9_* variable the agent reads is in agent/d9.h's environment
#     list (the one source) and in README.md's table, and neither lists one
#     the agent does not read;
#   - `d9 --help` describes top-polls' location as the poll's (what it shows);
#   - the things a new user needs are written where they look: the link line
#     with its include path, -fno-omit-frame-pointer for stacks, what
#     d9_wake takes for an unknown worker, and what a private instance needs
#     from the traced program and from d9.
. tests/integration/lib.sh
d9_setup

# names the agent reads: get("DIAL9_X") / getenv("DIAL9_X") string literals
grep -ohE '"DIAL9_[A-Z0-9_]+"' agent/*.c | tr -d '"' | sort -u >"$T/code"
# agent/d9.h: "Environment (...)" up to the end of that comment
sed -n '/^ \* Environment (read by d9_init/,/^ \*\//p' agent/d9.h |
    grep -oE '^ \*   DIAL9_[A-Z0-9_]+' | sed 's/^ \*   //' | sort -u >"$T/header"
# README.md: the table of "## Environment (agent)"
sed -n '/^## Environment (agent)/,/^## /p' README.md |
    grep -oE '^\| `DIAL9_[A-Z0-9_]+`' | sed 's/^| `//; s/`$//' | sort -u >"$T/readme"

same() {
    if ! cmp -s "$1" "$2"; then
        echo "$1 vs $2:"; diff "$1" "$2"; return 1
    fi
}
check "the agent reads at least the core variables" \
    sh -c "grep -qx DIAL9_ENABLED '$T/code' && grep -qx DIAL9_SAMPLER '$T/code'"
check "agent/d9.h lists exactly the variables the agent reads" same "$T/code" "$T/header"
check "README.md's table lists exactly the variables the agent reads" same "$T/code" "$T/readme"

"$BIN/d9" --help >"$T/help.txt" 2>&1
check "d9 --help: top-polls shows each poll's location, not a spawn location" sh -c "
    grep -q '^ *top-polls .*location of each poll' '$T/help.txt' && ! grep -q 'spawn location' '$T/help.txt'"
check "README: the build-tree link line has the include path" \
    grep -q 'cc -I$D9/agent prog.c' README.md
check "README and d9.h: stacks need -fno-omit-frame-pointer" sh -c "
    grep -q 'fno-omit-frame-pointer' README.md && grep -q 'fno-omit-frame-pointer' agent/d9.h"
check "d9.h: d9_wake's unknown target worker is D9_WORKER_NONE_ID" sh -c "
    grep -B3 'D9_API void d9_wake' agent/d9.h | grep -q 'D9_WORKER_NONE_ID when the worker'"
check "README: a private instance's program needs DIAL9_SHM_DIR and DIAL9_COLLECTOR, d9 --store" \
    grep -q '^DIAL9_SHM_DIR=/tmp/shm DIAL9_COLLECTOR=ipc:///tmp/s.sock ./myprog' README.md
d9_finish docs
