# deploy/install.mk — install, uninstall and the files generated for the
# install paths (pkg-config file, systemd unit, man pages). Included by the
# Makefile; the Debian package (deploy/deb.mk) installs through it.
#
#   make install   [DESTDIR=/tmp/root] [PREFIX=/usr] [MULTIARCH=1] [BINDIR=...] ...
#   make uninstall (same variables): removes what install put there
#   make man       the man pages only (build/man)
#
# Paths (GNU names; each may be given on the command line):
#   PREFIX       /usr/local
#   BINDIR       $(PREFIX)/bin               d9
#   SBINDIR      $(PREFIX)/sbin              d9collectd
#   LIBDIR       $(PREFIX)/lib, or $(PREFIX)/lib/<triplet> with MULTIARCH=1
#                libd9agent, libd9uv; d9/libd9preload.so (LD_PRELOAD only)
#   INCLUDEDIR   $(PREFIX)/include           d9.h, d9uv.h
#   PKGCONFIGDIR $(LIBDIR)/pkgconfig         d9agent.pc, d9uv.pc
#   MANDIR       $(PREFIX)/share/man
#   DOCDIR       $(PREFIX)/share/doc/d9       README.md, ARCHITECTURE.md, docs/ (the manual),
#                                            tests/bench/RESULTS.md (the manual links to both)
#   SYSCONFDIR   /etc for PREFIX=/usr, else $(PREFIX)/etc   dial9/d9collectd.conf
#   UNITDIR      $(PREFIX)/lib/systemd/system               d9collectd.service
#   DESTDIR      staging root prepended to every path (packaging); the
#                generated files name the paths without it.
# Every generated file depends on $(INSTALL_STAMP), which changes exactly
# when one of these paths does, so `make install PREFIX=/usr` after a plain
# `make` regenerates them instead of shipping /usr/local paths.
#
# The man pages are generated from the programs' own --help texts by
# deploy/help2roff.py (d9(1): `d9 --help` and every `d9 CMD --help`;
# d9collectd(8): `d9collectd --help`) and from deploy/libd9agent.3.txt (the
# agent's API and DIAL9_* environment), so they cannot drift from the help.
# Each page's SEE ALSO names the pages of the manual (README.md, docs/*.md,
# installed in DOCDIR) that cover it: MAN_DOCS_* below.

BINDIR       ?= $(PREFIX)/bin
SBINDIR      ?= $(PREFIX)/sbin
ifeq ($(MULTIARCH),1)
LIBDIR       ?= $(PREFIX)/lib/$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $(CC) -print-multiarch)
else
LIBDIR       ?= $(PREFIX)/lib
endif
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR       ?= $(PREFIX)/share/man
DOCDIR       ?= $(PREFIX)/share/doc/d9
SYSCONFDIR   ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
UNITDIR      ?= $(PREFIX)/lib/systemd/system

INSTALL_PATHS := $(PREFIX) $(BINDIR) $(SBINDIR) $(LIBDIR) $(INCLUDEDIR) $(PKGCONFIGDIR) \
                 $(MANDIR) $(DOCDIR) $(SYSCONFDIR) $(UNITDIR) $(D9_VERSION)
INSTALL_GEN   := $(BUILD)/install
INSTALL_STAMP := $(INSTALL_GEN)/paths
MAN_DIR       := $(BUILD)/man
MAN_PAGES     := $(MAN_DIR)/d9.1 $(MAN_DIR)/d9collectd.8 $(MAN_DIR)/libd9agent.3
# the manual: README.md into DOCDIR, docs/ (pages and their images) into DOCDIR/docs
DOC_FILES     := $(wildcard docs/*.md docs/*.png)
DOC_IMAGES    := $(wildcard docs/img/*.png)
# the manual's pages each man page points to
MAN_DOCS_d9         := README.md docs/cli.md docs/serve.md docs/sql.md docs/s3.md docs/concepts.md
MAN_DOCS_d9collectd := README.md docs/collector.md docs/s3.md docs/fleet.md docs/limits.md docs/install.md
MAN_DOCS_libd9agent := README.md docs/agent.md docs/libuv.md docs/limits.md
man_docs = --docdir $(DOCDIR) $(addprefix --doc ,$(MAN_DOCS_$(1)))
UNINST_PC     := $(BUILD)/lib/pkgconfig/d9agent-uninstalled.pc
UNINST_UV_PC  := $(BUILD)/lib/pkgconfig/d9uv-uninstalled.pc
SO_NAME       := libd9agent.so.0
SO_FILE       := libd9agent.so.$(D9_VERSION)
UV_SO_NAME    := libd9uv.so.0
UV_SO_FILE    := libd9uv.so.$(D9_VERSION)
PRELOAD_DIR   := $(LIBDIR)/d9
CONF_DIR      := $(SYSCONFDIR)/dial9

# ${prefix}-relative when under PREFIX, so the .pc file reads as usual
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))

.PHONY: install uninstall man install-stamp-check
all: $(UNINST_PC) $(UNINST_UV_PC) $(BUILD)/lib/$(SO_NAME) $(MAN_PAGES)
man: $(MAN_PAGES)

# Rewritten only when the paths changed (its mtime then triggers regeneration).
$(INSTALL_STAMP): install-stamp-check
	@mkdir -p $(dir $@)
	@echo '$(INSTALL_PATHS)' | cmp -s - $@ 2>/dev/null || echo '$(INSTALL_PATHS)' >$@

$(INSTALL_GEN)/d9agent.pc: deploy/d9agent.pc.in $(INSTALL_STAMP)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|' -e 's|@VERSION@|$(D9_VERSION)|' $< >$@
$(INSTALL_GEN)/d9uv.pc: deploy/d9uv.pc.in $(INSTALL_STAMP)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|' \
	    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|' -e 's|@VERSION@|$(D9_VERSION)|' $< >$@
$(INSTALL_GEN)/d9collectd.service: deploy/d9collectd.service.in $(INSTALL_STAMP)
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@

$(UNINST_PC) $(UNINST_UV_PC): $(BUILD)/lib/pkgconfig/%-uninstalled.pc: deploy/%-uninstalled.pc.in Makefile
	@mkdir -p $(dir $@)
	sed -e "s|@BUILDDIR@|$$(cd $(BUILD) && pwd)|" -e "s|@SRCDIR@|$$(pwd)|" \
	    -e 's|@VERSION@|$(D9_VERSION)|' $< >$@
# the soname link, so that programs linked against the build tree run
$(BUILD)/lib/$(SO_NAME): $(AGENT_SO)
	ln -sf libd9agent.so $@

$(MAN_DIR)/d9.1: $(BUILD)/bin/d9 deploy/help2roff.py $(MAN_DOCS_d9) $(INSTALL_STAMP)
	@mkdir -p $(dir $@)
	python3 deploy/help2roff.py --section 1 --version $(D9_VERSION) --subcommands \
	    $(call man_docs,d9) $< >$@.tmp && mv $@.tmp $@
$(MAN_DIR)/d9collectd.8: $(BUILD)/bin/d9collectd deploy/help2roff.py $(MAN_DOCS_d9collectd) $(INSTALL_STAMP)
	@mkdir -p $(dir $@)
	python3 deploy/help2roff.py --section 8 --version $(D9_VERSION) \
	    $(call man_docs,d9collectd) $< >$@.tmp && mv $@.tmp $@
$(MAN_DIR)/libd9agent.3: deploy/libd9agent.3.txt deploy/help2roff.py $(MAN_DOCS_libd9agent) $(INSTALL_STAMP)
	@mkdir -p $(dir $@)
	python3 deploy/help2roff.py --section 3 --version $(D9_VERSION) --text \
	    $(call man_docs,libd9agent) $< >$@.tmp && mv $@.tmp $@

INSTALL_FILES := $(INSTALL_GEN)/d9agent.pc $(INSTALL_GEN)/d9uv.pc $(INSTALL_GEN)/d9collectd.service

install: all $(INSTALL_FILES)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBDIR) \
	    $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 \
	    $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(CONF_DIR) \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(PRELOAD_DIR) $(DESTDIR)$(DOCDIR)/docs \
	    $(DESTDIR)$(DOCDIR)/docs/img $(DESTDIR)$(DOCDIR)/tests/bench
	install -m 0755 $(BUILD)/bin/d9 $(DESTDIR)$(BINDIR)/d9
	install -m 0755 $(BUILD)/bin/d9collectd $(DESTDIR)$(SBINDIR)/d9collectd
	install -m 0644 $(AGENT_A) $(DESTDIR)$(LIBDIR)/libd9agent.a
	install -m 0644 $(AGENT_SO) $(DESTDIR)$(LIBDIR)/$(SO_FILE)
	ln -sf $(SO_FILE) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/libd9agent.so
	install -m 0644 $(UV_SO) $(DESTDIR)$(LIBDIR)/$(UV_SO_FILE)
	ln -sf $(UV_SO_FILE) $(DESTDIR)$(LIBDIR)/$(UV_SO_NAME)
	ln -sf $(UV_SO_NAME) $(DESTDIR)$(LIBDIR)/libd9uv.so
	install -m 0644 $(UV_PRELOAD) $(DESTDIR)$(PRELOAD_DIR)/libd9preload.so
	install -m 0644 agent/d9.h $(DESTDIR)$(INCLUDEDIR)/d9.h
	install -m 0644 agent/uv/d9uv.h $(DESTDIR)$(INCLUDEDIR)/d9uv.h
	install -m 0644 $(INSTALL_GEN)/d9agent.pc $(DESTDIR)$(PKGCONFIGDIR)/d9agent.pc
	install -m 0644 $(INSTALL_GEN)/d9uv.pc $(DESTDIR)$(PKGCONFIGDIR)/d9uv.pc
	install -m 0644 $(MAN_DIR)/d9.1 $(DESTDIR)$(MANDIR)/man1/d9.1
	install -m 0644 $(MAN_DIR)/libd9agent.3 $(DESTDIR)$(MANDIR)/man3/libd9agent.3
	install -m 0644 $(MAN_DIR)/d9collectd.8 $(DESTDIR)$(MANDIR)/man8/d9collectd.8
	install -m 0644 README.md ARCHITECTURE.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 tests/bench/RESULTS.md $(DESTDIR)$(DOCDIR)/tests/bench/
	install -m 0644 $(DOC_FILES) $(DESTDIR)$(DOCDIR)/docs/
	install -m 0644 $(DOC_IMAGES) $(DESTDIR)$(DOCDIR)/docs/img/
	install -m 0644 $(INSTALL_GEN)/d9collectd.service $(DESTDIR)$(UNITDIR)/d9collectd.service
	@# a configuration the administrator already has is kept
	@if [ -e $(DESTDIR)$(CONF_DIR)/d9collectd.conf ]; then \
	    echo "keeping $(DESTDIR)$(CONF_DIR)/d9collectd.conf"; \
	else \
	    echo "install -m 0644 deploy/d9collectd.conf $(DESTDIR)$(CONF_DIR)/d9collectd.conf"; \
	    install -m 0644 deploy/d9collectd.conf $(DESTDIR)$(CONF_DIR)/d9collectd.conf; \
	fi
	@# a real install (not staged into DESTDIR) refreshes the linker cache
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then echo ldconfig; ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/d9 $(DESTDIR)$(SBINDIR)/d9collectd \
	    $(DESTDIR)$(LIBDIR)/libd9agent.a $(DESTDIR)$(LIBDIR)/$(SO_FILE) \
	    $(DESTDIR)$(LIBDIR)/$(SO_NAME) $(DESTDIR)$(LIBDIR)/libd9agent.so \
	    $(DESTDIR)$(INCLUDEDIR)/d9.h $(DESTDIR)$(PKGCONFIGDIR)/d9agent.pc \
	    $(DESTDIR)$(MANDIR)/man1/d9.1 $(DESTDIR)$(MANDIR)/man3/libd9agent.3 \
	    $(DESTDIR)$(MANDIR)/man8/d9collectd.8 $(DESTDIR)$(UNITDIR)/d9collectd.service \
	    $(DESTDIR)$(LIBDIR)/$(UV_SO_FILE) $(DESTDIR)$(LIBDIR)/$(UV_SO_NAME) \
	    $(DESTDIR)$(LIBDIR)/libd9uv.so $(DESTDIR)$(PRELOAD_DIR)/libd9preload.so \
	    $(DESTDIR)$(INCLUDEDIR)/d9uv.h $(DESTDIR)$(PKGCONFIGDIR)/d9uv.pc \
	    $(DESTDIR)$(DOCDIR)/README.md $(DESTDIR)$(DOCDIR)/ARCHITECTURE.md \
	    $(DESTDIR)$(DOCDIR)/tests/bench/RESULTS.md \
	    $(addprefix $(DESTDIR)$(DOCDIR)/docs/,$(notdir $(DOC_FILES))) \
	    $(addprefix $(DESTDIR)$(DOCDIR)/docs/img/,$(notdir $(DOC_IMAGES)))
	rmdir $(DESTDIR)$(PRELOAD_DIR) 2>/dev/null || true
	rmdir $(DESTDIR)$(DOCDIR)/docs/img $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR)/tests/bench $(DESTDIR)$(DOCDIR)/tests \
	    $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	@# the configuration goes only when it is still the unmodified example
	@if cmp -s deploy/d9collectd.conf $(DESTDIR)$(CONF_DIR)/d9collectd.conf; then \
	    echo "rm -f $(DESTDIR)$(CONF_DIR)/d9collectd.conf"; \
	    rm -f $(DESTDIR)$(CONF_DIR)/d9collectd.conf; \
	    rmdir $(DESTDIR)$(CONF_DIR) 2>/dev/null || true; \
	elif [ -e $(DESTDIR)$(CONF_DIR)/d9collectd.conf ]; then \
	    echo "keeping the modified $(DESTDIR)$(CONF_DIR)/d9collectd.conf"; \
	fi
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then echo ldconfig; ldconfig; fi
