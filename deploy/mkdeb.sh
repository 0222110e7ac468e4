#!/bin/sh
# mkdeb.sh DEB_DIR — split the tree `make install` staged in DEB_DIR/stage
# (PREFIX=/usr, MULTIARCH=1) into the packages d9, libd9agent0,
# libd9agent-dev, libd9uv0 (libd9uv and the LD_PRELOAD shim) and libd9uv-dev
# and build them with dpkg-deb into DEB_DIR. Called by
# `make deb` (deploy/deb.mk) with D9_VERSION and DEB_MAINTAINER set.
#
# Does what debhelper would: strips binaries, compresses man pages and the
# changelog (gzip -9n), writes copyright, md5sums, shlibs (and the ldconfig
# trigger) for the library, Depends from dpkg-shlibdeps, conffiles, and the
# systemd maintainer scripts of the d9 package (enable on install, stop on
# remove, purge the enablement state), which tolerate a machine without a
# running systemd as deb-systemd-helper / deb-systemd-invoke do.
# The manual (README.md and docs/ in /usr/share/doc/d9, package d9) stays
# uncompressed, as dh_compress -X.md would leave it: the man pages name its
# files, and its pages link to each other.
# Fails when a staged file is left in no package.
set -eu
DEB=$1
STAGE=$DEB/stage
VERSION=$D9_VERSION
MAINT=$DEB_MAINTAINER
ARCH=$(dpkg --print-architecture)
TRIPLET=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || cc -print-multiarch)
LIB=usr/lib/$TRIPLET
HERE=$(cd "$(dirname "$0")" && pwd)

# take PKG PATH...: move staged paths into package PKG's tree
take() {
    _p=$1; shift
    for _f in "$@"; do
        mkdir -p "$DEB/$_p/$(dirname "$_f")"
        mv "$STAGE/$_f" "$DEB/$_p/$_f"
    done
}
take d9 usr/bin/d9 usr/sbin/d9collectd lib/systemd/system/d9collectd.service \
    etc/dial9/d9collectd.conf usr/share/man/man1/d9.1 usr/share/man/man8/d9collectd.8 \
    usr/share/doc/d9
take libd9agent0 "$LIB/libd9agent.so.0" "$LIB/libd9agent.so.$VERSION"
take libd9agent-dev usr/include/d9.h "$LIB/libd9agent.so" "$LIB/libd9agent.a" \
    "$LIB/pkgconfig/d9agent.pc" usr/share/man/man3/libd9agent.3
take libd9uv0 "$LIB/libd9uv.so.0" "$LIB/libd9uv.so.$VERSION" "$LIB/d9/libd9preload.so"
take libd9uv-dev usr/include/d9uv.h "$LIB/libd9uv.so" "$LIB/pkgconfig/d9uv.pc"
left=$(find "$STAGE" ! -type d)
if [ -n "$left" ]; then
    echo "mkdeb.sh: staged files in no package:" "$left" >&2
    exit 1
fi

# strip as dh_strip does; compress man pages as dh_compress does
strip --remove-section=.comment --remove-section=.note --strip-unneeded \
    "$DEB/d9/usr/bin/d9" "$DEB/d9/usr/sbin/d9collectd" "$DEB/libd9agent0/$LIB/libd9agent.so.$VERSION" \
    "$DEB/libd9uv0/$LIB/libd9uv.so.$VERSION" "$DEB/libd9uv0/$LIB/d9/libd9preload.so"
strip --strip-debug --remove-section=.comment --remove-section=.note \
    "$DEB/libd9agent-dev/$LIB/libd9agent.a"
find "$DEB/d9" "$DEB/libd9agent-dev" -path '*/share/man/*' -type f -exec gzip -9n {} +

# Depends of the ELF files, from the shlibs of the packages they link
mkdir -p "$DEB/shlibdeps/debian"
: >"$DEB/shlibdeps/debian/control"
depends() {
    (cd "$DEB/shlibdeps" && dpkg-shlibdeps -O "$@" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
}
D9_DEPS=$(depends "$PWD/$DEB/d9/usr/bin/d9" "$PWD/$DEB/d9/usr/sbin/d9collectd")
# d9 opens libzstd and libstdc++ at first use (collector/lazy/lazy.h), which
# no ELF file of the package names: their packages by hand (libcurl, libssl,
# libzmq and libmicrohttpd come with d9collectd, which links them)
D9_DEPS="$D9_DEPS, libzstd1, libstdc++6"
LIB_DEPS=$(depends "$PWD/$DEB/libd9agent0/$LIB/libd9agent.so.$VERSION")
# libzmq is loaded with dlopen when the control channel opens (agent/zmqlib.h),
# so dpkg-shlibdeps does not see it: named here. Without it the agent
# records, without a control channel.
LIB_DEPS="$LIB_DEPS, libzmq5"
# libd9uv needs libd9agent0, which is not installed here: its shlibs say which
echo "libd9agent 0 libd9agent0 (>= $VERSION)" >"$DEB/shlibdeps/debian/shlibs.local"
UV_DEPS=$(depends -l"$PWD/$DEB/libd9agent0/$LIB" "$PWD/$DEB/libd9uv0/$LIB/libd9uv.so.$VERSION" "$PWD/$DEB/libd9uv0/$LIB/d9/libd9preload.so")
rm -rf "$DEB/shlibdeps"

# control PKG SECTION DEPENDS SUMMARY LONG [extra fields]
control() {
    mkdir -p "$DEB/$1/DEBIAN"
    {
        echo "Package: $1"
        echo "Version: $VERSION"
        echo "Architecture: $ARCH"
        echo "Maintainer: $MAINT"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$DEB/$1" | cut -f1)"
        echo "Depends: $3"
        [ -n "${6:-}" ] && echo "$6"
        echo "Section: $2"
        echo "Priority: optional"
        echo "Description: $4"
        echo "$5" | sed 's/^/ /'
    } >"$DEB/$1/DEBIAN/control"
}

doc() {    # copyright and changelog in /usr/share/doc/PKG
    _d=$DEB/$1/usr/share/doc/$1
    mkdir -p "$_d"
    cp "$HERE/debian-copyright" "$_d/copyright"
    sed -e "s/@VERSION@/$VERSION/" -e "s/@MAINT@/$MAINT/" "$HERE/debian-changelog" | gzip -9n >"$_d/changelog.gz"
}
for p in d9 libd9agent0 libd9agent-dev libd9uv0 libd9uv-dev; do doc "$p"; done

control d9 utils "$D9_DEPS" \
    "runtime telemetry for C programs: collector and query tool" \
"d9 records what the task runtimes of a C program do (polls, wake-ups,
scheduling delays, custom events, CPU samples) into shared-memory rings
with libd9agent, and drains them out of process.
.
This package holds d9collectd, the collector, as a systemd service that
writes the store under /var/lib/dial9, and d9, the command that queries it
(top polls, scheduling, flame graphs, Chrome trace export)."
control libd9agent0 libs "$LIB_DEPS" \
    "runtime telemetry for C programs: agent library" \
"libd9agent records task polls, wake-ups and custom events of a C program
into per-thread shared-memory rings, without locks or syscalls on the hot
path, for the d9collectd collector (package d9) to drain." \
    "Multi-Arch: same"
control libd9agent-dev libdevel "libd9agent0 (= $VERSION), libprotobuf-c-dev" \
    "runtime telemetry for C programs: agent development files" \
"The header d9.h, the static library, the pkg-config file d9agent.pc and the
libd9agent(3) manual, for building programs traced by d9." \
    "Multi-Arch: same"

control libd9uv0 libs "$UV_DEPS" \
    "runtime telemetry for C programs: libuv tracing" \
"libd9uv traces the callbacks, loop waits, wake-ups and thread-pool work of
a libuv program as d9 polls, parks, wakes and spawns. A program that owns
its loop links it (d9_uv_trace); libd9preload.so, in the private directory
d9/, traces an unmodified program: LD_PRELOAD=.../d9/libd9preload.so." \
    "Multi-Arch: same"
control libd9uv-dev libdevel "libd9uv0 (= $VERSION), libd9agent-dev (= $VERSION), libuv1-dev" \
    "runtime telemetry for C programs: libuv tracing development files" \
"The header d9uv.h, the link to libd9uv and the pkg-config file d9uv.pc, for
a libuv program that traces its own loops with d9_uv_trace." \
    "Multi-Arch: same"

# the library: shlibs for dependants, ldconfig through the trigger
echo "libd9agent 0 libd9agent0 (>= $VERSION)" >"$DEB/libd9agent0/DEBIAN/shlibs"
echo "activate-noawait ldconfig" >"$DEB/libd9agent0/DEBIAN/triggers"
echo "libd9uv 0 libd9uv0 (>= $VERSION)" >"$DEB/libd9uv0/DEBIAN/shlibs"
echo "activate-noawait ldconfig" >"$DEB/libd9uv0/DEBIAN/triggers"

# d9: the configuration is the administrator's; the unit is enabled and
# started on install, as debhelper's dh_installsystemd scripts do
echo /etc/dial9/d9collectd.conf >"$DEB/d9/DEBIAN/conffiles"
for s in postinst prerm postrm; do
    install -m 0755 "$HERE/debian-d9.$s" "$DEB/d9/DEBIAN/$s"
done

for p in d9 libd9agent0 libd9agent-dev libd9uv0 libd9uv-dev; do
    (cd "$DEB/$p" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
        LC_ALL=C sort -z | xargs -0r md5sum) >"$DEB/$p/DEBIAN/md5sums"
    chmod 0644 "$DEB/$p/DEBIAN/md5sums" "$DEB/$p/DEBIAN/control"
    find "$DEB/$p" -type d -exec chmod 0755 {} +
    dpkg-deb --root-owner-group -Zxz --build "$DEB/$p" "$DEB/${p}_${VERSION}_$ARCH.deb" >/dev/null
    echo "$DEB/${p}_${VERSION}_$ARCH.deb"
done
