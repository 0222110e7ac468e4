#!/bin/sh
# tests/fuzz/run.sh — build and run every libFuzzer target tests/fuzz/fuzz_*.c.
#
#   BUILD=build-x FUZZ_SECONDS=10 sh tests/fuzz/run.sh [fuzz_name ...]
#
# Used by `make test` (short runs, FUZZ_SECONDS default 10) and `make fuzz`.
# Each target is built with clang -fsanitize=fuzzer,address,undefined and
# linked with shm/*.c, collector/*/*.c (without the mains daemon/d9collectd.c
# and cli/main.c) and the generated protobuf-c code; binaries go to $BUILD/fuzz/. Each
# runs for FUZZ_SECONDS on a private copy of tests/fuzz/corpus/<target>/ in
# $BUILD/fuzz/corpus-<target> (nothing is ever written into the repository;
# crash inputs land in $BUILD/fuzz/artifacts-<target>/; TMPDIR is a scratch
# dir $BUILD/fuzz/tmp-<target>, removed afterwards). A target passes if
# libFuzzer exits 0. Last line: "fuzz: N passed, N failed".
BUILD=${BUILD:-build}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
CC_FUZZ=${CC_FUZZ:-clang}
OUT=$BUILD/fuzz
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
D9_VERSION=$(sed -n 's/^D9_VERSION *:= *//p' "$(dirname "$0")/../../Makefile")
# the version string the Makefile gives every object (d9's Parquet writer names it)
CFLAGS_FUZZ="-std=c11 -D_GNU_SOURCE -g -O1 -I. -I$BUILD/gen -pthread -fno-strict-aliasing -DD9_VERSION=\"$D9_VERSION\""
LIBS="-lsqlite3 -lzmq -lprotobuf-c -lmicrohttpd -lcurl -lcrypto -lzstd -ldw -lelf -lstdc++ -lm -pthread"
passed=0
failed=0

cd "$(dirname "$0")/../.." || exit 1
mkdir -p "$OUT/obj" || exit 1

if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
    echo "fuzz: $CC_FUZZ not found (libFuzzer needs clang)"
    echo "fuzz: 0 passed, 1 failed"
    exit 1
fi

# Generated code (protobuf-c, d9 serve's page), if the build has not made it yet.
PROTO_C=""
for proto in proto/*.proto; do
    c=$BUILD/gen/proto/$(basename "$proto" .proto).pb-c.c
    if [ ! -f "$c" ] || [ "$proto" -nt "$c" ]; then
        mkdir -p "$BUILD/gen"
        protoc-c --c_out="$BUILD/gen" "$proto" || { echo "fuzz: protoc-c failed"; echo "fuzz: 0 passed, 1 failed"; exit 1; }
    fi
    PROTO_C="$PROTO_C $c"
done
PAGE_H=$BUILD/gen/collector/serve/serve_page.h
if [ ! -f "$PAGE_H" ] || [ collector/serve/serve_page.html -nt "$PAGE_H" ]; then
    mkdir -p "$(dirname "$PAGE_H")"
    sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$/\\n"/' collector/serve/serve_page.html >"$PAGE_H"
fi

# Library objects, compiled once (instrumented, no libFuzzer main).
objs=""
lib_ok=1
for src in shm/*.c collector/*/*.c $PROTO_C; do
    case "$src" in
        collector/daemon/d9collectd.c|collector/cli/main.c) continue ;;
        collector/lazy/lazy_syms.c) continue ;;     # d9's own: the targets link the libraries
    esac
    [ -f "$src" ] || continue
    obj=$OUT/obj/$(echo "$src" | tr '/' '_' | sed 's/\.c$/.o/')
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find shm collector -name '*.h' -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        if ! $CC_FUZZ $CFLAGS_FUZZ -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined -w -c "$src" -o "$obj" 2>"$OUT/obj/build.log"; then
            echo "fuzz: cannot compile $src:"
            sed 's/^/    | /' "$OUT/obj/build.log" | head -n 20
            lib_ok=0
            continue
        fi
    fi
    objs="$objs $obj"
done

if [ $# -gt 0 ]; then
    targets=""
    for t in "$@"; do targets="$targets tests/fuzz/${t%.c}.c"; done
else
    targets=$(ls tests/fuzz/fuzz_*.c 2>/dev/null)
fi

for src in $targets; do
    name=$(basename "$src" .c)
    bin=$OUT/$name
    log=$OUT/$name.log
    if [ "$lib_ok" != 1 ]; then
        failed=$((failed + 1))
        echo "FAIL - $name (build: the library objects did not compile, above)"
        continue
    fi
    if ! $CC_FUZZ $CFLAGS_FUZZ $SAN -o "$bin" "$src" $objs $LIBS >"$log" 2>&1; then
        failed=$((failed + 1))
        echo "FAIL - $name (build)"
        sed 's/^/    | /' "$log" | tail -n 20
        continue
    fi
    corpus=$OUT/corpus-$name
    art=$OUT/artifacts-$name
    scratch=$OUT/tmp-$name              # TMPDIR for targets that need files
    rm -rf "$scratch"
    mkdir -p "$corpus" "$art" "$scratch"
    if [ -d "tests/fuzz/corpus/$name" ]; then
        cp -R "tests/fuzz/corpus/$name/." "$corpus/" 2>/dev/null
    fi
    TMPDIR=$scratch ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
    "$bin" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -timeout=25 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$art/" "$corpus" >"$log" 2>&1
    rc=$?
    rm -rf "$scratch"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok   - $name (${runs:-?} runs in ${FUZZ_SECONDS}s, corpus $(ls "$corpus" | wc -l) inputs)"
    else
        failed=$((failed + 1))
        echo "FAIL - $name (exit $rc; inputs in $art, log $log)"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 10 | sed 's/^/    | /'
    fi
done

echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
