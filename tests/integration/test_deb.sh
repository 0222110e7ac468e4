#!/bin/sh
# test_deb.sh — `make deb` as a Debian user meets it: lintian finds no error
# in the five packages; their programs and libraries are hardened; dpkg -i
# installs them on this machine (as root, without a running systemd:
# postinst only enables the unit); the installed
# d9collectd, started by hand with the installed configuration, traces a
# program built with pkg-config against the installed libd9agent-dev (and a
# libuv one with pkg-config d9uv from libd9uv-dev), and the
# installed d9 reads it, and so is a plain libuv program under the installed
# LD_PRELOAD shim; dpkg --purge leaves no file behind.
. tests/integration/lib.sh
d9_setup
trap 'd9_finish >/dev/null 2>&1; exit 1' INT TERM HUP
PKGS="d9 libd9agent0 libd9agent-dev libd9uv0 libd9uv-dev"

if [ "$(id -u)" -ne 0 ]; then
    echo "skipped: dpkg -i needs root (CI runs as root)"
    d9_finish deb
    exit $?
fi
installed=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && installed="$installed $p"
done
check "no d9 package is installed before the test (it would be replaced)" test -z "$installed"
[ -n "$installed" ] && { d9_finish deb; exit 1; }
had_store=0
[ -e /var/lib/dial9 ] && had_store=1

check "make deb builds the five packages" make --no-print-directory -s BUILD="$BUILD" deb
DEBS=$(echo "$BUILD"/deb/*.deb)
check "lintian reports no error" sh -c "lintian --fail-on error --tag-display-limit 0 $DEBS >'$T/lintian' 2>&1"
grep -E '^[EW]: ' "$T/lintian" | sed 's/^/    lintian /'
# libzmq is dlopened (agent/zmqlib.h): shlibdeps cannot see it, mkdeb.sh names it
check "libd9agent0 depends on libzmq5, named by hand" sh -c \
    "dpkg-deb -f '$BUILD'/deb/libd9agent0_*.deb Depends | grep -q 'libzmq5'"
check "libd9agent.so in the package does not link libzmq" sh -c \
    "dpkg-deb --fsys-tarfile '$BUILD'/deb/libd9agent0_*.deb | tar -xO --wildcards '*/libd9agent.so.0.*' >'$T/agent.so' && ! readelf -d '$T/agent.so' | grep -q 'NEEDED.*libzmq'"

at_exit dpkg --purge $PKGS
check "dpkg -i installs them without a running systemd" dpkg -i $DEBS
check "postinst enabled the unit" test -L /etc/systemd/system/multi-user.target.wants/d9collectd.service
check "the unit is in place and starts the installed daemon" \
    grep -qx 'ExecStart=/usr/sbin/d9collectd --config /etc/dial9/d9collectd.conf' \
    /lib/systemd/system/d9collectd.service
TRIPLET=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || cc -print-multiarch)
# hardened FILE: built with Debian's hardening flags (make deb's own build):
# full RELRO with immediate binding, stack protector, fortified libc calls
hardened() {
    readelf -lW "$1" | grep -q GNU_RELRO || { echo "$1: no RELRO"; return 1; }
    readelf -d "$1" | grep -q 'FLAGS.*NOW' || { echo "$1: not bound now"; return 1; }
    nm -D "$1" | grep -q ' U __stack_chk_fail' || { echo "$1: no stack protector"; return 1; }
    nm -D "$1" | grep -q ' U __.*_chk@' || { echo "$1: no fortified call"; return 1; }
}
for f in /usr/sbin/d9collectd /usr/bin/d9 /usr/lib/$TRIPLET/libd9agent.so.0 \
         /usr/lib/$TRIPLET/libd9uv.so.0 /usr/lib/$TRIPLET/d9/libd9preload.so; do
    check "$f is hardened (RELRO, BIND_NOW, stack protector, fortify)" hardened "$f"
done
check "the libraries are in the linker cache (ldconfig trigger)" sh -c "ldconfig -p | grep -q 'libd9agent.so.0 ' && ldconfig -p | grep -q 'libd9uv.so.0 '"
check "man finds the installed pages" sh -c "man -w d9 && man -w 8 d9collectd && man -w 3 libd9agent"
# the manual is in package d9, uncompressed, at the paths the man pages name
deb_manual() {
    for f in README.md docs/*.md docs/*.png; do
        cmp -s "$f" "/usr/share/doc/d9/$f" || { echo "/usr/share/doc/d9/$f: missing or not $f"; return 1; }
    done
    n=0
    for f in $(zcat /usr/share/man/man1/d9.1.gz /usr/share/man/man8/d9collectd.8.gz \
               /usr/share/man/man3/libd9agent.3.gz | grep -o '/usr/share/doc/d9/[^ ]*'); do
        [ -f "$f" ] || { echo "a man page names $f, which is not installed"; return 1; }
        n=$((n + 1))
    done
    [ "$n" -ge 6 ] || { echo "the man pages name $n files of the manual"; return 1; }
    dpkg -S /usr/share/doc/d9/docs/cli.md | grep -q '^d9:'
}
check "the manual is installed with d9, where the man pages say" deb_manual

check "a program builds with pkg-config against libd9agent-dev" sh -c \
    "cc -std=c11 -Wall -Werror \$(pkg-config --cflags d9agent) tests/integration/pkg_hello.c \
        -o '$T/hello' \$(pkg-config --libs d9agent)"
mkdir -p "$T/shm"
EP=ipc://$T/c.sock
/usr/sbin/d9collectd --config /etc/dial9/d9collectd.conf --store "$T/store" --shm-dir "$T/shm" \
    --endpoint "$EP" --scan-ms 100 --perf-freq 0 >"$T/col.log" 2>&1 &
COLPID=$!
at_exit kill -9 "$COLPID"
check "the installed collector runs with the installed configuration" \
    wait_for 20 d9 --endpoint "$EP" status
traced() {
    DIAL9_SHM_DIR="$T/shm" DIAL9_COLLECTOR="$EP" "$T/hello" || return 1
    wait_for 20 sh -c "d9 --endpoint '$EP' flush >/dev/null && d9 --store '$T/store' ps | grep -q 'hello .*exited'" ||
        { d9 --store "$T/store" ps; cat "$T/col.log"; return 1; }
    n=$(d9 --store "$T/store" events --type poll_start --format jsonl | grep -c .)
    [ "$n" -ge 100 ] || { echo "poll_start events: $n"; return 1; }
}
check "a traced program is collected and queried with the installed d9" traced
# libd9uv-dev: d9uv.pc installed, and a libuv program built with
# pkg-config d9uv (d9uv.h alone, d9_uv_trace before d9_init) runs traced
check "libd9uv-dev installs d9uv.pc" sh -c \
    "dpkg -L libd9uv-dev | grep -qx '/usr/lib/$TRIPLET/pkgconfig/d9uv.pc' && pkg-config --exists d9uv"
check "a libuv program builds with pkg-config --cflags --libs d9uv and runs traced" sh -c \
    "cc -std=gnu11 -Wall -Wextra -Werror \$(pkg-config --cflags d9uv) tests/integration/pkg_uvhello.c \
        -o '$T/uvhello' \$(pkg-config --libs d9uv) &&
     DIAL9_SHM_DIR='$T/shm' DIAL9_COLLECTOR='$EP' '$T/uvhello' >'$T/uvhello.out' &&
     grep -qx 'trace=0 enabled=1' '$T/uvhello.out'"
check "a libuv program is traced through the installed LD_PRELOAD shim" \
    uvmix_traced /usr/bin/d9 "/usr/lib/$TRIPLET/d9/libd9preload.so" "$T/store"
kill -TERM "$COLPID" 2>/dev/null; wait "$COLPID"

check "dpkg --purge removes them" dpkg --purge $PKGS
left() {
    for f in /usr/sbin/d9collectd /usr/bin/d9 /usr/include/d9.h /usr/include/d9uv.h /etc/dial9 \
             /usr/share/doc/d9 \
             /usr/lib/$TRIPLET/d9 \
             /lib/systemd/system/d9collectd.service \
             /etc/systemd/system/multi-user.target.wants/d9collectd.service \
             /var/lib/systemd/deb-systemd-helper-enabled/d9collectd.service.dsh-also; do
        [ ! -e "$f" ] && [ ! -L "$f" ] || { echo "left behind: $f"; return 1; }
    done
    [ $had_store -eq 1 ] || [ ! -e /var/lib/dial9 ] || { echo "left behind: /var/lib/dial9"; return 1; }
    ldconfig -p >"$T/ldconfig.out" && ! grep -q 'libd9agent\|libd9uv' "$T/ldconfig.out"
}
check "nothing is left behind" left
d9_finish deb
