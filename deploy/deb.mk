# deploy/deb.mk — Debian packages of d9 (make deb), built with dpkg-deb from
# what `make install` stages, the way debhelper would lay them out:
#   d9              d9collectd (sbin, its unit enabled by postinst), d9, man 1 and 8,
#                   the manual (README.md, docs/) in /usr/share/doc/d9
#   libd9agent0     the shared library (soname libd9agent.so.0, ldconfig trigger)
#   libd9agent-dev  d9.h, libd9agent.so and .a, d9agent.pc, libd9agent(3)
#   libd9uv0        libd9uv.so.0 and the LD_PRELOAD shim d9/libd9preload.so
#   libd9uv-dev     d9uv.h, libd9uv.so
# into $(BUILD)/deb/. The packaged programs and libraries are built apart,
# in $(BUILD)/deb-build, with Debian's hardening flags (dpkg-buildflags with
# hardening=+all: stack protector, _FORTIFY_SOURCE, format-security, full
# RELRO and immediate binding), as a package build would; the build the
# tests and benchmarks use is left as it is. deploy/mkdeb.sh splits, strips,
# compresses and writes the control files. DEB_MAINTAINER overrides the
# Maintainer field.

DEB_DIR        := $(BUILD)/deb
DEB_BUILD      := $(BUILD)/deb-build
DEB_FLAGS       = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
DEB_MAINTAINER ?= d9 maintainers <maintainers@users.noreply.a-seed-2d9169a7.example>

.PHONY: deb
deb:
	rm -rf $(DEB_DIR)
	$(MAKE) --no-print-directory -s install BUILD=$(DEB_BUILD) \
	    CFLAGS_EXTRA="$$($(DEB_FLAGS) CPPFLAGS) $$($(DEB_FLAGS) CFLAGS)" \
	    LDFLAGS="$$($(DEB_FLAGS) LDFLAGS)" \
	    DESTDIR=$(abspath $(DEB_DIR)/stage) PREFIX=/usr MULTIARCH=1 UNITDIR=/lib/systemd/system
	D9_VERSION='$(D9_VERSION)' DEB_MAINTAINER='$(DEB_MAINTAINER)' \
	    sh deploy/mkdeb.sh $(DEB_DIR)
