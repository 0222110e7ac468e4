# agent/uv/uv.mk — libd9uv.so and libd9preload.so (trace libuv, libevent and
# epoll loops), their unit tests and helper programs. Included by the top
# Makefile; uses its variables (BUILD, CC, CFLAGS, SAN, obj, san, AGENT_SO,
# SAN_LIB_OBJ).
#
#   libd9uv.so       the wrappers; link a program with -ld9uv before -luv
#                    (soname libd9uv.so.0, made next to it as for libd9agent)
#   libd9preload.so  the wrappers + auto mode: LD_PRELOAD=.../libd9preload.so program
# Neither links libuv nor libevent: the wrappers find them with
# dlsym(RTLD_NEXT), so a program without them is left exactly as it was
# (compiling needs their headers: libuv1-dev, libevent-dev). Both need libd9agent.so.0, so that a
# program with its own d9 calls and the wrappers share one agent: found next
# to them (RUNPATH $ORIGIN: the build tree, LIBDIR once installed) or, for the
# preload, which is installed in the private LIBDIR/d9, one level up.

UV_LIB_SRC  := agent/uv/uvloop.c agent/uv/uvwrap.c agent/uv/uvreal.c agent/uv/loopcfg.c \
               agent/uv/cbslot.c agent/uv/evloop.c agent/uv/evwrap.c agent/uv/eploop.c \
               agent/uv/epollwrap.c
UV_LIB_OBJ  := $(call obj,$(UV_LIB_SRC))
# -fno-plt: a trampoline calls the agent's record functions through the GOT,
# not a PLT stub (one instruction-cache line and one jump less per call)
$(UV_LIB_OBJ) $(BUILD)/obj/agent/uv/preload.o: CFLAGS += -fno-plt
# d9uv.h includes "d9.h", its sibling once installed: here it is in agent/
$(UV_LIB_OBJ) $(call san,$(UV_LIB_SRC)) $(BUILD)/tests/unit/test_uv: CPPFLAGS += -Iagent
UV_SO       := $(BUILD)/lib/libd9uv.so
UV_PRELOAD  := $(BUILD)/lib/libd9preload.so
UV_LDLIBS   := -L$(BUILD)/lib -l:libd9agent.so -ldl -pthread -Wl,-z,now

all: $(UV_SO) $(UV_PRELOAD) $(BUILD)/lib/libd9uv.so.0

# (the libd9agent.so rule also makes libd9agent.so.0, its soname, next to it)
$(UV_SO): $(UV_LIB_OBJ) $(AGENT_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libd9uv.so.0 -o $@ $(UV_LIB_OBJ) $(UV_LDLIBS) -Wl,-rpath,'$$ORIGIN'
$(BUILD)/lib/libd9uv.so.0: $(UV_SO)
	ln -sf libd9uv.so $@
# The preload's "no supported loop found" region (noloop.c) lays it out
# with the shm code and reads DIAL9_* with the agent's parser, linked in
# (hidden: the agent library exports only agent/d9.h).
UV_NOLOOP_OBJ := $(call obj,agent/uv/noloop.c shm/region.c shm/clock.c shm/paths.c agent/env.c)
$(BUILD)/obj/agent/uv/noloop.o: CFLAGS += $(VIS_HIDDEN)
$(UV_PRELOAD): $(UV_LIB_OBJ) $(BUILD)/obj/agent/uv/preload.o $(UV_NOLOOP_OBJ) $(AGENT_SO)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libd9preload.so -o $@ $(UV_LIB_OBJ) $(BUILD)/obj/agent/uv/preload.o \
	    $(UV_NOLOOP_OBJ) $(UV_LDLIBS) -Wl,-rpath,'$$ORIGIN:$$ORIGIN/..'


# Unit test: the wrappers compiled in (sanitized) and exported (-rdynamic), so
# that they interpose libuv's entry points and libuv's own calls into itself,
# as libd9uv.so does in a real program; linked with the real libuv. Every
# unit test here is compiled and linked in one step with -MMD -MP, as the top
# Makefile's are: NAME.d beside the binary rebuilds it when a header changes.
$(BUILD)/tests/unit/test_uv: tests/unit/test_uv.c tests/unit/selfring.h $(call san,$(UV_LIB_SRC)) $(SAN_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -rdynamic -MMD -MP -o $@ $(filter %.c %.o,$^) -lcmocka -luv -ldl $(LDLIBS_CLI)

# Integration helpers tests/integration/prog_uvmix.c, prog_uvcrash.c: plain libuv programs
# (built by the top Makefile's prog_% rule, which links nothing of the agent
# it does not call), run under the preload.
$(BUILD)/tests/integration/prog_uvmix: LDLIBS_AGENT += -luv
$(BUILD)/tests/integration/prog_uvcrash: LDLIBS_AGENT += -luv
$(BUILD)/tests/integration/prog_uvloopwork: LDLIBS_AGENT += -luv

# The libevent and epoll loop shims: the same wrappers linked into the test
# and exported, against the real libevent (and its pthreads locking, for
# event_active from another thread).
$(BUILD)/tests/unit/test_ev: tests/unit/test_ev.c tests/unit/selfring.h $(call san,$(UV_LIB_SRC)) $(SAN_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -rdynamic -MMD -MP -o $@ $(filter %.c %.o,$^) -lcmocka -levent -levent_pthreads -ldl $(LDLIBS_CLI)
$(BUILD)/tests/unit/test_eploop: tests/unit/test_eploop.c tests/unit/selfring.h $(call san,$(UV_LIB_SRC)) $(SAN_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -rdynamic -MMD -MP -o $@ $(filter %.c %.o,$^) -lcmocka -levent -ldl $(LDLIBS_CLI)
# Pure modules: only themselves (and the agent, for the worker ids' limit).
$(BUILD)/tests/unit/test_loopcfg: tests/unit/test_loopcfg.c $(call san,agent/uv/loopcfg.c) $(SAN_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -MMD -MP -o $@ $^ -lcmocka $(LDLIBS_CLI)
$(BUILD)/tests/unit/test_cbslot: tests/unit/test_cbslot.c $(call san,agent/uv/cbslot.c) $(SAN_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN) -MMD -MP -o $@ $^ -lcmocka $(LDLIBS_CLI)
