# stress.mk — reliability targets (included by the top Makefile).
#
#   make stress      long reliability loops (not part of make test):
#                    kill -9 of traced processes and of the collector
#                    (STRESS_TRIALS each, default 60), hostile-region rounds
#                    (STRESS_HOSTILE, default 20) and disk-full cycles
#   make rel-asan    d9collectd built with ASan/UBSan into $(BUILD)/rel-asan/,
#                    used by test_rel_hostile_region.sh (it runs this target
#                    itself when the binary is missing or stale)
#
# The sanitized collector reuses the $(BUILD)/san/ objects the unit tests
# already build (shm, collector, proto), so it costs one compile and a link.

STRESS_TRIALS  ?= 60
STRESS_HOSTILE ?= 20
REL_ASAN_BIN   := $(BUILD)/rel-asan/d9collectd
REL_ASAN_OBJ   := $(call san,$(SHM_SRC) $(STORE_SRC) $(CTL_SRC) $(S3_SRC) $(DAEMON_SRC) $(LAZY_SRC)) $(BUILD)/san/proto/d9.pb-c.o

.PHONY: rel-asan
rel-asan: $(REL_ASAN_BIN)

$(REL_ASAN_BIN): $(BUILD)/san/collector/daemon/d9collectd.o $(REL_ASAN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -o $@ $^ $(LDLIBS_DAEMON)

stress: all $(PROG_BINS) $(REL_ASAN_BIN)
	BUILD=$(BUILD) STRESS_TRIALS=$(STRESS_TRIALS) STRESS_HOSTILE=$(STRESS_HOSTILE) \
	    sh tests/integration/stress_rel.sh
