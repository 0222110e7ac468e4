#!/bin/sh
# test_install.sh — `make install` as a packager and a user run it: into a
# DESTDIR with PREFIX=/usr after a plain `make`; a program compiled with
# pkg-config against the installed tree (C and C++) and traced by the
# installed collector; the installed unit through systemd-analyze verify; the
# man pages render without warnings and hold every help text; a plain libuv
# program traced through the installed LD_PRELOAD shim; the manual (README.md,
# docs/) is installed where the man pages' SEE ALSO says; other PREFIX /
# MULTIARCH choices regenerate the .pc; the build tree's -uninstalled.pc;
# make uninstall leaves no file behind.
. tests/integration/lib.sh
d9_setup
ROOT=$(pwd)
case $BUILD in /*) ABS_BUILD=$BUILD ;; *) ABS_BUILD=$ROOT/$BUILD ;; esac
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
D=$T/root
MK="make --no-print-directory -s BUILD=$BUILD"

check "make install DESTDIR=... PREFIX=/usr" $MK install DESTDIR="$D" PREFIX=/usr
has_files() {
    for f in usr/bin/d9 usr/sbin/d9collectd usr/lib/libd9agent.so.0 usr/lib/libd9agent.so \
             usr/lib/libd9agent.a usr/include/d9.h usr/lib/pkgconfig/d9agent.pc \
             usr/share/man/man1/d9.1 usr/share/man/man8/d9collectd.8 \
             usr/share/man/man3/libd9agent.3 usr/lib/systemd/system/d9collectd.service \
             etc/dial9/d9collectd.conf usr/lib/libd9uv.so.0 usr/lib/libd9uv.so \
             usr/lib/d9/libd9preload.so usr/include/d9uv.h usr/lib/pkgconfig/d9uv.pc; do
        [ -e "$D/$f" ] || { echo "missing $f"; return 1; }
    done
    [ ! -e "$D/usr/bin/d9collectd" ] || { echo "the daemon belongs in sbin"; return 1; }
}
check "binaries, library, header, .pc, man pages, unit and config are installed" has_files
manual_installed() {
    for f in README.md docs/*.md docs/*.png; do
        cmp -s "$f" "$D/usr/share/doc/d9/$f" || { echo "usr/share/doc/d9/$f: missing or not $f"; return 1; }
    done
}
check "the manual (README.md, docs/) is installed in PREFIX/share/doc/d9" manual_installed
# the installed manual's relative links (ARCHITECTURE.md, the bench results) resolve there too
check "every relative link of the installed manual resolves in PREFIX/share/doc/d9" \
    sh -c "cd '$D/usr/share/doc/d9' && python3 '$PWD/tests/integration/check_links.py' README.md docs/*.md"
# man_names_manual PAGE: its SEE ALSO names files of the manual, and each one is installed
man_names_manual() {
    n=0
    for f in $(sed -n '/^\.SH "SEE ALSO"/,$p' "$1" | grep -o '/usr/share/doc/d9/[^ ]*'); do
        [ -f "$D$f" ] || { echo "$1 names $f, which is not installed"; return 1; }
        n=$((n + 1))
    done
    [ "$n" -ge 2 ] || { echo "$1 names $n files of the manual"; return 1; }
}
for p in man1/d9.1 man8/d9collectd.8 man3/libd9agent.3; do
    check "$p: SEE ALSO names the installed manual" man_names_manual "$D/usr/share/man/$p"
done
check "the .pc file names the chosen prefix" grep -qx 'prefix=/usr' "$D/usr/lib/pkgconfig/d9agent.pc"
check "the unit starts the installed daemon with the installed config" grep -qx \
    'ExecStart=/usr/sbin/d9collectd --config /etc/dial9/d9collectd.conf' \
    "$D/usr/lib/systemd/system/d9collectd.service"

# pkg-config over the staged tree, as a user would after installing it
pc() { PKG_CONFIG_LIBDIR="$D/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D" pkg-config "$@" d9agent; }
check "pkg-config --cflags is the include dir alone (no libzmq flags)" \
    test "$(echo $(pc --cflags))" = "-I$D/usr/include"
check "pkg-config --libs links libd9agent from the install" test "$(echo $(pc --libs))" = "-L$D/usr/lib -ld9agent"
check "a C program compiles against the install with pkg-config" sh -c \
    "cc -std=c11 -Wall -Wextra -Werror \$(PKG_CONFIG_LIBDIR='$D/usr/lib/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$D' pkg-config --cflags d9agent) \
        tests/integration/pkg_hello.c -o '$T/hello' \
        \$(PKG_CONFIG_LIBDIR='$D/usr/lib/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$D' pkg-config --libs d9agent)"
if command -v c++ >/dev/null 2>&1; then
    check "the header compiles as C++ and links" sh -c \
        "c++ -Wall -Wextra -Werror -x c++ \$(PKG_CONFIG_LIBDIR='$D/usr/lib/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$D' pkg-config --cflags d9agent) \
            tests/integration/pkg_hello.c -x none -o '$T/hello_cxx' \
            \$(PKG_CONFIG_LIBDIR='$D/usr/lib/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$D' pkg-config --libs d9agent)"
fi
check "the program needs the installed soname" sh -c \
    "objdump -p '$T/hello' | grep -q 'NEEDED *libd9agent.so.0'"

# the installed collector traces it; the installed d9 reads the result
mkdir -p "$T/shm"
EP=ipc://$T/c.sock
"$D/usr/sbin/d9collectd" --store "$T/store" --shm-dir "$T/shm" --endpoint "$EP" --scan-ms 100 \
    --perf-freq 0 >"$T/col.log" 2>&1 &
COLPID=$!
at_exit kill -9 "$COLPID"
check "the installed collector answers the installed d9" \
    wait_for 20 "$D/usr/bin/d9" --endpoint "$EP" status
run_hello() {
    LD_LIBRARY_PATH="$D/usr/lib" DIAL9_SHM_DIR="$T/shm" DIAL9_COLLECTOR="$EP" "$T/$1" || return 1
    wait_for 20 sh -c "'$D/usr/bin/d9' --endpoint '$EP' flush >/dev/null &&
        '$D/usr/bin/d9' --store '$T/store' ps | grep -q '$1 .*exited'"
}
check "the program runs traced and d9 ps lists it" run_hello hello
polls() {
    n=$("$D/usr/bin/d9" --store "$T/store" events --type poll_start --format jsonl | grep -c .)
    [ "$n" -ge 100 ] || { echo "poll_start events: $n"; return 1; }
}
check "its 100 polls are in the store" polls
# a libuv program that traces its own loop, built with pkg-config d9uv
# (d9uv.h alone: it brings d9.h), calling d9_uv_trace before any d9_init
check "a libuv program compiles against the install with pkg-config d9uv" sh -c \
    "cc -std=gnu11 -Wall -Wextra -Werror \$(PKG_CONFIG_LIBDIR='$D/usr/lib/pkgconfig:/usr/lib/pkgconfig:/usr/lib/$(gcc -print-multiarch)/pkgconfig:/usr/share/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$D' pkg-config --cflags d9uv) \
        tests/integration/pkg_uvhello.c -o '$T/uvhello' \
        \$(PKG_CONFIG_LIBDIR='$D/usr/lib/pkgconfig:/usr/lib/pkgconfig:/usr/lib/$(gcc -print-multiarch)/pkgconfig:/usr/share/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$D' pkg-config --libs d9uv)"
check "  it links libd9uv before libuv" sh -c \
    "objdump -p '$T/uvhello' | grep NEEDED | tr -s ' ' | cut -d' ' -f3 | tr '\n' ' ' | grep -q 'libd9uv.so.0 .*libuv.so.1'"
check "  d9_uv_trace before d9_init starts d9 and traces the loop" sh -c \
    "LD_LIBRARY_PATH='$D/usr/lib' DIAL9_SHM_DIR='$T/shm' DIAL9_COLLECTOR='$EP' '$T/uvhello' >'$T/uvhello.out' &&
     grep -qx 'trace=0 enabled=1' '$T/uvhello.out'"
check "  its timer's polls are in the store" sh -c \
    "'$D/usr/bin/d9' --endpoint '$EP' flush >/dev/null && sleep 0.5 && '$D/usr/bin/d9' --endpoint '$EP' flush >/dev/null &&
     [ \$('$D/usr/bin/d9' --store '$T/store' events --type poll_start --format jsonl | grep -c '\"comm\":\"uvhello\"') -ge 3 ]"
# the build tree's own d9uv-uninstalled.pc (d9uv.h from agent/uv, d9.h
# through d9agent-uninstalled.pc), the program traced like the installed one
check "the build tree's d9uv-uninstalled.pc builds a libuv program that runs traced" sh -c \
    "cc -std=gnu11 -Wall -Wextra -Werror \$(PKG_CONFIG_PATH='$ABS_BUILD/lib/pkgconfig' pkg-config --cflags d9uv) \
        tests/integration/pkg_uvhello.c -o '$T/uvhello_tree' \
        \$(PKG_CONFIG_PATH='$ABS_BUILD/lib/pkgconfig' pkg-config --libs d9uv) &&
     DIAL9_SHM_DIR='$T/shm' DIAL9_COLLECTOR='$EP' '$T/uvhello_tree' >'$T/uvhello_tree.out' &&
     grep -qx 'trace=0 enabled=1' '$T/uvhello_tree.out'"
# the installed shim finds the installed libd9agent.so.0 one level up from
# its private directory, with no LD_LIBRARY_PATH
if [ -x "$TBIN/prog_uvmix" ]; then
    check "a libuv program runs traced under the installed libd9preload.so" \
        uvmix_traced "$D/usr/bin/d9" "$D/usr/lib/d9/libd9preload.so" "$T/store"
fi
kill -TERM "$COLPID" 2>/dev/null; wait "$COLPID"

# systemd-analyze verify, offline, on the staged unit. --root resolves ExecStart
# inside DESTDIR; MANPATH lets the Documentation= man: pages be found there;
# the staging root holds no systemd units, so the unit's own dependencies
# (sysinit.target) are not verified (--recursive-errors=no).
verify() {
    MANPATH="$1/usr/share/man" systemd-analyze verify --recursive-errors=no --root="$1" \
        /usr/lib/systemd/system/d9collectd.service
}
if command -v systemd-analyze >/dev/null 2>&1; then
    check "systemd-analyze verify accepts the installed unit" verify "$D"
    # and it can fail: a unit naming a missing daemon or man page is refused
    cp -a "$D" "$T/broken"
    rm "$T/broken/usr/sbin/d9collectd"
    check "systemd-analyze verify refuses a unit whose daemon is missing" sh -c \
        "! MANPATH='$T/broken/usr/share/man' systemd-analyze verify --recursive-errors=no \
        --root='$T/broken' /usr/lib/systemd/system/d9collectd.service"
    cp -a "$D/usr/sbin/d9collectd" "$T/broken/usr/sbin/" && rm "$T/broken/usr/share/man/man8/d9collectd.8"
    check "systemd-analyze verify refuses a unit whose man page is missing" sh -c \
        "! MANPATH='$T/broken/usr/share/man' systemd-analyze verify --recursive-errors=no \
        --root='$T/broken' /usr/lib/systemd/system/d9collectd.service"
else
    check "systemd-analyze is installed (.ci/install-deps)" false
fi

# man pages: no warnings, and every section of every help text is in the page
"$D/usr/bin/d9" --help >"$T/help.d9"
helps="$T/help.d9"
for c in $(sed -n '/^COMMANDS/,/^$/p' "$T/help.d9" | awk 'NR > 1 && NF { print $1 }'); do
    "$D/usr/bin/d9" "$c" --help >"$T/help.d9.$c"
    helps="$helps $T/help.d9.$c"
done
"$D/usr/sbin/d9collectd" --help >"$T/help.d9collectd"
check "d9(1) renders without warnings and holds d9 --help and every d9 CMD --help" \
    python3 tests/integration/check_man.py "$D/usr/share/man/man1/d9.1" $helps
check "d9(1) has a section for every command" \
    test "$(grep -c '^\.SH "D9 ' "$D/usr/share/man/man1/d9.1")" -eq "$(echo $helps | wc -w | awk '{print $1 - 1}')"
check "d9collectd(8) renders without warnings and holds d9collectd --help" \
    python3 tests/integration/check_man.py "$D/usr/share/man/man8/d9collectd.8" "$T/help.d9collectd"
check "libd9agent(3) renders without warnings and holds its source" \
    python3 tests/integration/check_man.py "$D/usr/share/man/man3/libd9agent.3" deploy/libd9agent.3.txt
api_documented() {
    for fn in $(sed -n 's/^D9_API [^(]*[ *]\(d9_[a-z_]*\)(.*/\1/p' agent/d9.h | sort -u); do
        grep -q "$fn" deploy/libd9agent.3.txt || { echo "libd9agent(3) lacks $fn"; return 1; }
    done
    for v in $(grep -oh 'DIAL9_[A-Z][A-Z_]*' agent/*.c | sort -u); do
        grep -q "^    $v\$" deploy/libd9agent.3.txt || { echo "libd9agent(3) lacks $v"; return 1; }
    done
}
check "libd9agent(3) documents every public function and DIAL9_* variable" api_documented
check "the drift check fails on a page that lacks a help text" sh -c \
    "! python3 tests/integration/check_man.py '$D/usr/share/man/man8/d9collectd.8' '$T/help.d9.flame'"

# other path choices regenerate the generated files
check "PREFIX=/opt/d9 regenerates the .pc, unit and man pages" sh -c \
    "$MK install DESTDIR='$T/opt' PREFIX=/opt/d9 >/dev/null &&
     grep -qx 'prefix=/opt/d9' '$T/opt/opt/d9/lib/pkgconfig/d9agent.pc' &&
     grep -q '^ */opt/d9/share/doc/d9/docs/cli.md ' '$T/opt/opt/d9/share/man/man1/d9.1' &&
     test -f '$T/opt/opt/d9/share/doc/d9/docs/cli.md' &&
     grep -q '^ExecStart=/opt/d9/sbin/d9collectd --config /opt/d9/etc/dial9/' \
        '$T/opt/opt/d9/lib/systemd/system/d9collectd.service'"
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || cc -print-multiarch)
check "MULTIARCH=1 installs into lib/<triplet> and says so in the .pc" sh -c \
    "$MK install DESTDIR='$T/ma' PREFIX=/usr MULTIARCH=1 >/dev/null &&
     test -e '$T/ma/usr/lib/$triplet/libd9agent.so.0' &&
     grep -qx 'libdir=\${prefix}/lib/$triplet' '$T/ma/usr/lib/$triplet/pkgconfig/d9agent.pc'"

# the build tree's own .pc (pkg-config prefers NAME-uninstalled.pc)
check "the build tree's d9agent-uninstalled.pc builds a program that runs" sh -c \
    "PKG_CONFIG_PATH='$ABS_BUILD/lib/pkgconfig' cc -std=c11 \$(PKG_CONFIG_PATH='$ABS_BUILD/lib/pkgconfig' pkg-config --cflags d9agent) \
        tests/integration/pkg_hello.c -o '$T/hello_tree' \$(PKG_CONFIG_PATH='$ABS_BUILD/lib/pkgconfig' pkg-config --libs d9agent) &&
     DIAL9_ENABLED=0 '$T/hello_tree' 2>&1 | grep -q 'd9_init_with returned 1'"

check "make uninstall leaves no file in DESTDIR" sh -c \
    "$MK uninstall DESTDIR='$D' PREFIX=/usr >/dev/null && test -z \"\$(find '$D' ! -type d)\""
d9_finish install
