# d9 — runtime telemetry for C programs, collected out of process.
#
#   make            build everything into build/ (gcc; CC=clang works too)
#   make test       install missing packages, build, run unit (ASan/UBSan),
#                   integration and short fuzz tests; prints "tests: N passed, N failed"
#                   (T=PATTERN: only the suites whose name matches, see tests/run.sh)
#   make demo       collector + instrumented demo workload + queries, store in ./d9-demo-store
#   make bench      benchmarks against LTTng-UST (not part of make test)
#   make stress     long reliability loops (not part of make test)
#   make fuzz       longer fuzzing runs (FUZZ_SECONDS per target, default 60)
#   make install    PREFIX, DESTDIR, BINDIR, SBINDIR, LIBDIR (MULTIARCH=1), MANDIR...
#                   (deploy/install.mk); make uninstall; make deb (deploy/deb.mk)
#
# Layout: sources are picked up by wildcard. A module is one .c with its .h.
#   shm/*.c                     -> every binary that touches regions
#   agent/*.c                   -> libd9agent.{so,a} (the .so exports only the D9_API of d9.h)
#   collector/store/*.c         -> libd9store.a: segment files, index, fsck, symbols (every program)
#   collector/ctl/*.c           -> the control channel, both ends (daemon and CLI)
#   collector/s3/*.c            -> the S3 client (shipping, d9 pull; libcurl, libcrypto)
#   collector/daemon/*.c        -> build/bin/d9collectd (main: d9collectd.c)
#   collector/query/*.c         -> the analysis layer: scan, decode, pairing, waits, symbols (d9)
#   collector/export/*.c        -> d9 export's writers (Chrome JSON, Perfetto)
#   collector/parquet/*.c       -> the Parquet file writer and its checker (d9)
#   collector/serve/*.c         -> d9 serve's JSON API (and its page, serve_page.html)
#   collector/sql/*.c           -> d9 sql's SQLite virtual tables
#   collector/cli/*.c           -> build/bin/d9 (main: main.c)
#   (libcol.a holds every collector module, for test programs and benches)
#   agent/demo/*.c              -> build/bin/d9demo
#   tests/unit/test_*.c         -> one cmocka binary each, built with ASan/UBSan
#   tests/integration/prog_*.c  -> helper programs linked with libd9agent.a (traced workloads)
#   tests/integration/prog_*.cpp -> C++ programs, g++ (_gxx) and clang++ (_clangxx), libd9agent.so
#   tests/integration/tool_*.c  -> helper programs linked with libcol.a (readers, checkers)
#   tests/integration/test_*.sh -> integration tests (print "N passed, N failed")
#   tests/fuzz/fuzz_*.c         -> libFuzzer targets (clang)
# Area makefiles tests/*/*.mk are included for extra targets (bench, stress).

ifeq ($(origin CC),default)
CC       := gcc
endif
BUILD    ?= build
PREFIX   ?= /usr/local
D9_VERSION := 0.1.0

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CSTD     := -std=c11 -D_GNU_SOURCE
OPT      ?= -O2 -g
CPPFLAGS += -I. -I$(BUILD)/gen -DD9_VERSION=\"$(D9_VERSION)\"
CFLAGS   += $(CSTD) $(OPT) $(WARN) -fPIC -pthread -fno-strict-aliasing $(CFLAGS_EXTRA)
# CFLAGS_EXTRA (compiling) and LDFLAGS (linking what is installed) are for
# packagers: `make deb` passes dpkg-buildflags' hardening through them.
# libzmq is not linked: agent/zmqlib.c loads it when the control channel opens
LDLIBS_AGENT := -lprotobuf-c -ldl -pthread
# libcurl (OpenSSL flavour) and libcrypto: the S3 client of collector/s3/
# libdw (elfutils libdwfl): d9collectd's DWARF unwinding, --stack-mode dwarf
LDLIBS_COL   := -lzmq -lprotobuf-c -lsqlite3 -lcurl -lcrypto -lm -pthread -ldw -lelf
# traced programs (demo, integration workloads): complete stacks for d9 flame
FRAME_POINTERS := -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
# libzstd: the Parquet writer's page compression (collector/parquet/);
# libstdc++: __cxa_demangle, C++ names in every output (collector/query/q_demangle.c)
LDLIBS_CLI   := $(LDLIBS_COL) -lmicrohttpd -lzstd -lstdc++
# `d9` itself: curl, crypto, zmq, microhttpd, zstd and stdc++ are opened at
# first use (collector/lazy/lazy.h), so a reading command does not load them
LDLIBS_D9    := -lprotobuf-c -lsqlite3 -lm -pthread -ldl
# libmicrohttpd: d9collectd's --metrics endpoint (collector/daemon/met_http.c)
LDLIBS_DAEMON := $(LDLIBS_COL) -lmicrohttpd
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

SHM_SRC   := $(wildcard shm/*.c)
AGENT_SRC := $(wildcard agent/*.c)
STORE_SRC := $(wildcard collector/store/*.c)
CTL_SRC   := $(wildcard collector/ctl/*.c)
S3_SRC    := $(wildcard collector/s3/*.c)
DAEMON_SRC := $(filter-out collector/daemon/d9collectd.c,$(wildcard collector/daemon/*.c))
QUERY_SRC := $(wildcard collector/query/*.c)
EXPORT_SRC := $(wildcard collector/export/*.c)
PARQUET_SRC := $(wildcard collector/parquet/*.c)
SERVE_SRC := $(wildcard collector/serve/*.c)
SQL_SRC   := $(wildcard collector/sql/*.c)
CLI_SRC   := $(filter-out collector/cli/main.c,$(wildcard collector/cli/*.c)) \
             $(QUERY_SRC) $(EXPORT_SRC) $(PARQUET_SRC) $(SERVE_SRC) $(SQL_SRC)
LAZY_SRC  := collector/lazy/lazy.c
COL_SRC   := $(STORE_SRC) $(CTL_SRC) $(S3_SRC) $(DAEMON_SRC) $(CLI_SRC) $(LAZY_SRC)
DEMO_SRC  := $(wildcard agent/demo/*.c)
PROTO_C   := $(BUILD)/gen/proto/d9.pb-c.c
PROTO_H   := $(BUILD)/gen/proto/d9.pb-c.h $(BUILD)/gen/proto/perfetto_trace.pb-c.h
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
PROG_SRC  := $(wildcard tests/integration/prog_*.c)
CXX_PROG_SRC := $(wildcard tests/integration/prog_*.cpp)
TOOL_SRC  := $(wildcard tests/integration/tool_*.c)
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
san = $(patsubst %.c,$(BUILD)/san/%.o,$(1))

SHM_OBJ   := $(call obj,$(SHM_SRC))
AGENT_OBJ := $(call obj,$(AGENT_SRC))
COL_OBJ   := $(call obj,$(COL_SRC))
STORE_OBJ := $(call obj,$(STORE_SRC))
CTL_OBJ   := $(call obj,$(CTL_SRC))
S3_OBJ    := $(call obj,$(S3_SRC))
LAZY_OBJ  := $(call obj,$(LAZY_SRC))
# the lazily loaded libraries' functions: linked into `d9` only
LAZY_SYMS_OBJ := $(call obj,collector/lazy/lazy_syms.c)
DAEMON_OBJ := $(call obj,$(DAEMON_SRC))
CLI_OBJ   := $(call obj,$(CLI_SRC))
PROTO_OBJ := $(BUILD)/obj/proto/d9.pb-c.o
# proto/*.proto other than d9.proto: used by the CLI only (d9 export formats)
CLI_PROTO_OBJ := $(patsubst proto/%.proto,$(BUILD)/obj/proto/%.pb-c.o,$(filter-out proto/d9.proto,$(wildcard proto/*.proto)))
# the page d9 serve sends, as a C string literal
SERVE_PAGE_H := $(BUILD)/gen/collector/serve/serve_page.h

AGENT_SO  := $(BUILD)/lib/libd9agent.so
AGENT_A   := $(BUILD)/lib/libd9agent.a
COL_A     := $(BUILD)/lib/libcol.a
STORE_A   := $(BUILD)/lib/libd9store.a
BINS      := $(BUILD)/bin/d9collectd $(BUILD)/bin/d9 $(if $(DEMO_SRC),$(BUILD)/bin/d9demo)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRC))
PROG_BINS := $(patsubst tests/integration/%.c,$(BUILD)/tests/integration/%,$(PROG_SRC) $(TOOL_SRC))
PROG_BINS += $(foreach x,gxx clangxx,$(patsubst tests/integration/%.cpp,$(BUILD)/tests/integration/%_$(x),$(CXX_PROG_SRC)))

.PHONY: all deps test unit integration fuzz-smoke fuzz demo bench stress clean install clang-check
all: $(AGENT_SO) $(AGENT_A) $(BINS)

# ---- dependencies (Debian packages, installed only when missing) ----------
deps:
	@sh .ci/install-deps
	@BUILD=$(BUILD) sh tests/integration/s3rver_install.sh
	@BUILD=$(BUILD) sh tests/integration/parquet_readers_install.sh >/dev/null

# ---- generated protobuf-c code ------------------------------------------
# Made by a pattern rule and named by no other rule as a target, the
# generated files would be intermediate, deleted after the build and so
# remade (with everything that includes the headers) by the next make: they
# are kept.
.SECONDARY: $(PROTO_H) $(PROTO_H:.h=.c)
$(BUILD)/gen/proto/%.pb-c.c $(BUILD)/gen/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $<
$(SERVE_PAGE_H): collector/serve/serve_page.html
	@mkdir -p $(dir $@)
	sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/collector/cli/cli_serve.o $(BUILD)/san/collector/cli/cli_serve.o: $(SERVE_PAGE_H)

# ---- objects --------------------------------------------------------------
# libd9agent exports the API of agent/d9.h (marked D9_API) and nothing else:
# everything linked into it defaults to hidden visibility.
VIS_HIDDEN := -fvisibility=hidden
# (rebuilt when this file changes: the flag is not in their names)
$(AGENT_OBJ) $(SHM_OBJ): CFLAGS += $(VIS_HIDDEN)
$(AGENT_OBJ) $(SHM_OBJ) $(PROTO_OBJ): Makefile
$(BUILD)/obj/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/obj/proto/%.pb-c.o: $(BUILD)/gen/proto/%.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(OPT) -fPIC $(CFLAGS_EXTRA) $(VIS_HIDDEN) -w -c $< -o $@
$(BUILD)/san/%.o: %.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -MMD -MP -c $< -o $@
$(BUILD)/san/proto/%.pb-c.o: $(BUILD)/gen/proto/%.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(OPT) -fPIC -w $(SAN) -c $< -o $@

# ---- libraries and binaries ----------------------------------------------
# libd9agent.so binds its symbols at load (-z now): a thread's first event
# can come on a small stack, under libuv's 12 KiB epoll array, where the
# lazy binder's frame (an xsave area) is more than is left. -z defs: every
# symbol it uses comes from a library it names, so a direct zmq_* call
# (libzmq is dlopened, agent/zmqlib.h) fails the link instead of the load.
$(AGENT_SO): $(AGENT_OBJ) $(SHM_OBJ) $(PROTO_OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libd9agent.so.0 -Wl,-z,now -Wl,-z,defs -o $@ $^ $(LDLIBS_AGENT)
	ln -sf libd9agent.so $(dir $@)libd9agent.so.0
$(AGENT_A): $(AGENT_OBJ) $(SHM_OBJ) $(PROTO_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(COL_A): $(COL_OBJ) $(SHM_OBJ) $(PROTO_OBJ) $(CLI_PROTO_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(STORE_A): $(STORE_OBJ) $(SHM_OBJ) $(PROTO_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(BUILD)/bin/d9collectd: $(BUILD)/obj/collector/daemon/d9collectd.o $(DAEMON_OBJ) $(CTL_OBJ) $(S3_OBJ) $(LAZY_OBJ) $(STORE_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_DAEMON)
$(BUILD)/bin/d9: $(BUILD)/obj/collector/cli/main.o $(CLI_OBJ) $(CTL_OBJ) $(S3_OBJ) $(LAZY_OBJ) $(LAZY_SYMS_OBJ) $(CLI_PROTO_OBJ) $(STORE_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_D9)
$(call obj,$(DEMO_SRC)): CFLAGS += $(FRAME_POINTERS)
$(BUILD)/bin/d9demo: $(call obj,$(DEMO_SRC)) $(AGENT_A)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_AGENT) -lm
# Programs, tools and unit tests are compiled and linked in one step, one .c
# each: -MMD -MP writes NAME.d beside the binary (the headers it includes),
# which adds those headers to its prerequisites; the recipes link only the
# .c, .o and .a of $^.
$(BUILD)/tests/integration/prog_%: tests/integration/prog_%.c $(AGENT_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(FRAME_POINTERS) -MMD -MP -o $@ $(filter %.c %.a,$^) $(LDLIBS_AGENT) -lm
# C++ users of agent/d9.h: built with g++ (_gxx) and clang++ (_clangxx),
# linked against libd9agent.so (found next to them through the rpath)
CXX_PROG_FLAGS := -std=c++11 $(CPPFLAGS) $(OPT) -Wall -Wextra -Werror -pthread -MMD -MP
CXX_PROG_LINK  := -L$(BUILD)/lib -ld9agent -Wl,-rpath,'$$ORIGIN/../../lib'
$(BUILD)/tests/integration/prog_%_gxx: tests/integration/prog_%.cpp agent/d9.h $(AGENT_SO)
	@mkdir -p $(dir $@)
	g++ $(CXX_PROG_FLAGS) -o $@ $< $(CXX_PROG_LINK)
$(BUILD)/tests/integration/prog_%_clangxx: tests/integration/prog_%.cpp agent/d9.h $(AGENT_SO)
	@mkdir -p $(dir $@)
	clang++ $(CXX_PROG_FLAGS) -o $@ $< $(CXX_PROG_LINK)
# C++ frames in CPU samples (test_demangle.sh): complete stacks
$(BUILD)/tests/integration/prog_demangle_gxx $(BUILD)/tests/integration/prog_demangle_clangxx: \
    CXX_PROG_FLAGS += $(FRAME_POINTERS)
$(BUILD)/tests/integration/tool_%: tests/integration/tool_%.c $(COL_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -o $@ $(filter %.c %.a,$^) $(LDLIBS_CLI)
# the hand-built store tools share one fixture module (store_fix.h), an
# object of its own (one .c per compile: one dependency file each)
STORE_FIX_OBJ := $(call obj,tests/integration/store_fix.c)
STORE_FIX_TOOLS := $(addprefix $(BUILD)/tests/integration/tool_store_,known findings window aggs edges)
STORE_FIX_TOOLS += $(BUILD)/tests/integration/tool_store_rollup4
$(STORE_FIX_TOOLS): $(BUILD)/tests/integration/tool_store_%: tests/integration/tool_store_%.c \
    $(STORE_FIX_OBJ) $(COL_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/integration $(CFLAGS) -MMD -MP -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS_CLI)

# Unit tests: every module, sanitized, plus cmocka.
SAN_LIB_OBJ := $(call san,$(SHM_SRC) $(AGENT_SRC) $(COL_SRC)) $(BUILD)/san/proto/d9.pb-c.o $(CLI_PROTO_OBJ:$(BUILD)/obj/%=$(BUILD)/san/%)
$(BUILD)/tests/unit/%: tests/unit/%.c $(SAN_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -MMD -MP -o $@ $(filter %.c %.o,$^) -lcmocka $(LDLIBS_CLI)

# ---- tests ----------------------------------------------------------------
unit: $(UNIT_BINS)
integration: all $(PROG_BINS)

test: deps
	$(MAKE) --no-print-directory all $(UNIT_BINS) $(PROG_BINS)
	$(MAKE) --no-print-directory clang-check
	BUILD=$(BUILD) sh tests/run.sh $(if $(T),'$(T)')

# Compile everything with clang as well: both compilers must be -Werror clean.
clang-check:
	$(MAKE) --no-print-directory CC=clang BUILD=$(BUILD)/clang all

fuzz-smoke fuzz:
	BUILD=$(BUILD) FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) sh tests/fuzz/run.sh

demo: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) sh agent/demo/run-demo.sh

clean:
	rm -rf $(BUILD)

-include $(wildcard tests/*/*.mk) agent/uv/uv.mk
# the list of what tests/run.sh runs (make test-bins-list): after the area makefiles
include tests/testbins.mk
# install / uninstall / man pages / Debian package
include deploy/install.mk deploy/deb.mk
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
