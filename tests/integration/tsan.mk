# tsan.mk — the rollup thread's unit tests (test_ru_pipe, test_rollup_feed)
# built with ThreadSanitizer into $(BUILD)/tsan/, for test_tsan_rollups.sh:
# the drain and the rollup thread share the pipe's ring, its buffers and
# its streams, and ASan (the unit tests' sanitizer) sees no data race.
# One compile of the store and shm sources per binary (TSan cannot share
# the ASan objects), without dependency files: every header of those
# directories is a prerequisite instead.
TSAN_UNITS := test_ru_pipe test_rollup_feed
TSAN_BINS  := $(addprefix $(BUILD)/tsan/,$(TSAN_UNITS))
TSAN_SRC   := $(SHM_SRC) $(STORE_SRC) $(BUILD)/gen/proto/d9.pb-c.c
$(TSAN_BINS): $(BUILD)/tsan/%: tests/unit/%.c $(TSAN_SRC) $(wildcard shm/*.h collector/store/*.h) \
    tests/unit/rollup_fixture.h $(BUILD)/gen/proto/d9.pb-c.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=thread -o $@ \
		$(filter %.c,$^) -lcmocka $(LDLIBS_CLI)
PROG_BINS += $(TSAN_BINS)
integration: $(TSAN_BINS)
