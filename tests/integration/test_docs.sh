#!/bin/sh
# test_docs.sh — the documents say what the code does, and hold together:
#   - README.md starts with the two commands a newcomer runs (make demo,
#     make test) and stays short; the manual is in docs/;
#   - every relative link of README.md and docs/*.md names a file that
#     exists, and every #anchor a heading of its file (check_links.py);
#   - every command `d9 --help` lists has a row in docs/cli.md's table, and
#     every option `d9collectd --help` lists is in docs/collector.md or
#     docs/s3.md;
#   - every DIAL9_* variable the agent reads is in agent/d9.h's environment
#     list (the one source) and in docs/agent.md's table, and neither lists
#     one the agent does not read;
#   - `d9 --help` describes top-polls' location as the poll's (what it shows);
#   - the things a new user needs are written where they look: the link line
#     with its include path, -fno-omit-frame-pointer for stacks, what
#     d9_wake takes for an unknown worker, and what a private instance needs
#     from the traced program and from d9.
. tests/integration/lib.sh
d9_setup
DOCS="README.md docs/*.md"

# README: the two commands come first, in the first code block
sed -n '/^```/,/^```/p' README.md | sed -n '2,3p' | awk '{ print $1, $2 }' >"$T/first"
printf 'make demo\nmake test\n' >"$T/first.want"
check "README: the first commands are make demo and make test" cmp -s "$T/first" "$T/first.want"
check "README: a five-minute read (at most 170 lines)" test "$(wc -l <README.md)" -le 170

check "README and docs: every relative link and #anchor resolves" python3 tests/integration/check_links.py $DOCS
# and the check can fail: a link to a missing heading and one to a missing file
printf '# t\n\n[a](README.md#no-such-heading) [b](docs/no-such-page.md)\n' >"$T/broken.md"
check "the link check fails on a missing heading and a missing file" sh -c "
    python3 tests/integration/check_links.py '$T/broken.md' >'$T/broken.out';
    [ \$? -eq 1 ] && grep -q no-such-heading '$T/broken.out' && grep -q no-such-page '$T/broken.out'"

"$BIN/d9" --help >"$T/help.txt" 2>&1
sed -n '/^COMMANDS/,/^$/p' "$T/help.txt" | awk 'NR > 1 && NF { print $1 }' >"$T/commands"
cli_documents_commands() {
    [ -s "$T/commands" ] || { echo "no COMMANDS in d9 --help"; return 1; }
    for c in $(cat "$T/commands"); do
        grep -q "^| \`$c\` |" docs/cli.md || { echo "docs/cli.md has no row for $c"; return 1; }
    done
}
check "docs/cli.md has a row for every command of d9 --help" cli_documents_commands

"$BIN/d9collectd" --help >"$T/collectd.txt" 2>&1
# the option lines of OPTIONS (indented 4, starting with '-'; some name two)
sed -n '/^OPTIONS/,/^[A-Z]/p' "$T/collectd.txt" | grep -E '^    -' | grep -oE -- '--[a-z0-9-]+' |
    grep -vx -e --help -e --version | sort -u >"$T/flags"
collector_documents_flags() {
    [ "$(wc -l <"$T/flags")" -ge 10 ] || { echo "too few options read from d9collectd --help"; return 1; }
    for f in $(cat "$T/flags"); do
        grep -q -- "\`$f[\` ]" docs/collector.md docs/s3.md || { echo "docs lack $f"; return 1; }
    done
}
check "docs/collector.md and docs/s3.md name every option of d9collectd --help" collector_documents_flags

# names the agent reads: get("DIAL9_X") / getenv("DIAL9_X") string literals,
# in its sources or as a header's #define
grep -ohE '"DIAL9_[A-Z0-9_]+"' agent/*.c agent/*.h | tr -d '"' | sort -u >"$T/code"
# agent/d9.h: "Environment (...)" up to the end of that comment
sed -n '/^ \* Environment (read by d9_init/,/^ \*\//p' agent/d9.h |
    grep -oE '^ \*   DIAL9_[A-Z0-9_]+' | sed 's/^ \*   //' | sort -u >"$T/header"
# docs/agent.md: the table of "## Environment"
sed -n '/^## Environment/,/^## /p' docs/agent.md |
    grep -oE '^\| `DIAL9_[A-Z0-9_]+`' | sed 's/^| `//; s/`$//' | sort -u >"$T/manual"

same() {
    if ! cmp -s "$1" "$2"; then
        echo "$1 vs $2:"; diff "$1" "$2"; return 1
    fi
}
check "the agent reads at least the core variables" \
    sh -c "grep -qx DIAL9_ENABLED '$T/code' && grep -qx DIAL9_SAMPLER '$T/code'"
check "agent/d9.h lists exactly the variables the agent reads" same "$T/code" "$T/header"
check "docs/agent.md's table lists exactly the variables the agent reads" same "$T/code" "$T/manual"

check "d9 --help: top-polls shows each poll's location, not a spawn location" sh -c "
    grep -q '^ *top-polls .*location of each poll' '$T/help.txt' && ! grep -q 'spawn location' '$T/help.txt'"
check "docs/agent.md: the build-tree link line has the include path" \
    grep -q 'cc -I$D9/agent prog.c' docs/agent.md
check "docs/agent.md and d9.h: stacks need -fno-omit-frame-pointer" sh -c "
    grep -q 'fno-omit-frame-pointer' docs/agent.md && grep -q 'fno-omit-frame-pointer' agent/d9.h"
check "d9.h: d9_wake's unknown target worker is D9_WORKER_NONE_ID" sh -c "
    grep -B3 'D9_API void d9_wake' agent/d9.h | grep -q 'D9_WORKER_NONE_ID when the worker'"
check "docs/collector.md: a private instance's program needs DIAL9_SHM_DIR and DIAL9_COLLECTOR, d9 --store" \
    grep -q '^DIAL9_SHM_DIR=/tmp/shm DIAL9_COLLECTOR=ipc:///tmp/s.sock ./myprog' docs/collector.md
d9_finish docs
