# tests/bench/bench.mk — `make bench`: d9 vs LTTng-UST benchmarks (not part of make test).
# Included by the top Makefile; uses its variables and rules (BUILD, CC, CFLAGS,
# AGENT_A, LDLIBS_AGENT, all). Everything is built into $(BUILD)/bench/; the
# -MMD dependency files are picked up by the top Makefile's *.d include.
#
#   make bench                 install LTTng packages if missing, build, run, print the table
#   make bench-bins            only build the bench programs
#   make bench-ship            only the S3 shipping section (tests/bench/bench_ship.sh)
#   make bench-parquet         only the Parquet export section (tests/bench/bench_parquet.sh)
#   make bench-fleet           only the fleet scan section: DuckDB over Parquet vs d9 sql (tests/bench/bench_fleet_scan.sh)
#   make bench-aggs            only the rollups-vs-raw aggregates section (tests/bench/bench_aggs.sh)
#   make bench-serve-zoom      only d9 serve's sustained zoom in Chromium (tests/bench/bench_serve_zoom.sh)
#   make bench-flight          only the flight recorder's disk per hour, retain all vs triggered (tests/bench/bench_flight.sh)
#   make bench-drain-cost      only the collector's ns a record with rollups off / read back / inline / live (rollup thread) (tests/bench/bench_drain_cost.sh)
#   BENCH_QUICK=1 make bench   shorter runs (smoke test of the harness)
#   BENCH_E2E_PAIRS=N make bench   N off/on pairs in the end-to-end section (default 16)

BENCH_DIR  := $(BUILD)/bench
BENCH_UTIL := $(BENCH_DIR)/obj/bench_util.o
BENCH_BINS := $(BENCH_DIR)/bench_hot $(BENCH_DIR)/bench_hot_off $(BENCH_DIR)/bench_lttng \
              $(BENCH_DIR)/bench_drain $(BENCH_DIR)/bench_colstat $(BENCH_DIR)/bench_irq \
              $(BENCH_DIR)/bench_serve \
              $(BENCH_DIR)/bench_sql $(BENCH_DIR)/bench_cpu_gaps $(BENCH_DIR)/bench_store \
              $(BENCH_DIR)/bench_rollup $(BENCH_DIR)/bench_aggs_time
BENCH_LIBS_LTTNG := -llttng-ust -ldl -pthread

.PHONY: bench bench-bins bench-ship bench-parquet bench-fleet bench-aggs bench-flight bench-drain-cost
bench:
	@D9_EXTRA_PKGS="liblttng-ust-dev lttng-tools" sh .ci/install-deps
	@echo "bench: building into $(BUILD)"
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all bench-bins
	BUILD=$(BUILD) sh tests/bench/run-bench.sh
	@$(MAKE) --no-print-directory BUILD=$(BUILD) bench-ship
	@$(MAKE) --no-print-directory BUILD=$(BUILD) bench-parquet
	@$(MAKE) --no-print-directory BUILD=$(BUILD) bench-fleet
	@$(MAKE) --no-print-directory BUILD=$(BUILD) bench-aggs
	@$(MAKE) --no-print-directory BUILD=$(BUILD) bench-flight
	@$(MAKE) --no-print-directory BUILD=$(BUILD) bench-drain-cost

# the collector's ns a record: rollups off / read back at the seal / fed live (tests/bench/bench_drain_cost.sh)
bench-drain-cost:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_drain $(BENCH_DIR)/bench_colstat
	BUILD=$(BUILD) sh tests/bench/bench_drain_cost.sh

# --retain triggered vs all: disk written and kept per hour (tests/bench/bench_flight.sh)
bench-flight:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_drain $(BUILD)/tests/integration/tool_ctl
	BUILD=$(BUILD) sh tests/bench/bench_flight.sh

# d9 sched --totals / top-polls --by-location: rollups + edges vs --raw (tests/bench/bench_aggs.sh)
bench-aggs:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_store $(BENCH_DIR)/bench_aggs_time
	BUILD=$(BUILD) sh tests/bench/bench_aggs.sh

# d9 export --format parquet: bytes and CPU a record (tests/bench/bench_parquet.sh)
bench-parquet:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_store
	BUILD=$(BUILD) sh tests/bench/bench_parquet.sh

# shipping to S3 (d9collectd --ship) against a local s3rver: tests/bench/bench_ship.sh
bench-ship: deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_drain $(BUILD)/tests/integration/tool_ctl
	BUILD=$(BUILD) sh tests/bench/bench_ship.sh

bench-bins: $(BENCH_BINS)

$(BENCH_DIR)/obj/%.o: tests/bench/%.c tests/bench/bench_util.h tests/bench/bench_own_ring.h $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@
# LTTng's generated probe code is not ours: compiled without our warning set.
$(BENCH_DIR)/obj/bench_lttng_tp.o: tests/bench/bench_lttng_tp.c tests/bench/bench_lttng_tp.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CSTD) $(OPT) -fPIC -w -MMD -MP -c $< -o $@
$(BENCH_DIR)/obj/bench_hot_off.o: tests/bench/bench_hot.c tests/bench/bench_util.h agent/d9.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DD9_DISABLE -MMD -MP -c $< -o $@

$(BENCH_DIR)/bench_hot: $(BENCH_DIR)/obj/bench_hot.o $(BENCH_DIR)/obj/bench_own_ring.o $(BENCH_UTIL) $(AGENT_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_AGENT)
# Compiled out: not even linked with the agent.
$(BENCH_DIR)/bench_hot_off: $(BENCH_DIR)/obj/bench_hot_off.o $(BENCH_UTIL)
	$(CC) $(CFLAGS) -o $@ $^ -pthread
$(BENCH_DIR)/bench_lttng: $(BENCH_DIR)/obj/bench_lttng.o $(BENCH_DIR)/obj/bench_lttng_tp.o $(BENCH_UTIL)
	$(CC) $(CFLAGS) -o $@ $^ $(BENCH_LIBS_LTTNG)
$(BENCH_DIR)/bench_drain: $(BENCH_DIR)/obj/bench_drain.o $(BENCH_DIR)/obj/bench_own_ring.o $(BENCH_UTIL) $(AGENT_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_AGENT)
$(BENCH_DIR)/bench_colstat: $(BENCH_DIR)/obj/bench_colstat.o $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_COL)
$(BENCH_DIR)/bench_irq: $(BENCH_DIR)/obj/bench_irq.o $(BENCH_UTIL) $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_COL)
$(BENCH_DIR)/bench_serve: $(BENCH_DIR)/obj/bench_serve.o $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_CLI)
$(BENCH_DIR)/bench_cpu_gaps: $(BENCH_DIR)/obj/bench_cpu_gaps.o $(BENCH_UTIL)
	$(CC) $(CFLAGS) -o $@ $^ -pthread
$(BENCH_DIR)/bench_sql: $(BENCH_DIR)/obj/bench_sql.o $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_CLI)
$(BENCH_DIR)/bench_store: $(BENCH_DIR)/obj/bench_store.o $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_COL)
$(BENCH_DIR)/bench_rollup: $(BENCH_DIR)/obj/bench_rollup.o $(BENCH_DIR)/rollup3/rollup3.o $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_COL)
$(BENCH_DIR)/bench_aggs_time: $(BENCH_DIR)/obj/bench_aggs_time.o $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_CLI)

# bench_rollup's baseline: rollups version 3 (rollup.[ch] at ROLLUP3_REV, the
# commit before version 4), its functions renamed rollup3_*, beside the current ones
ROLLUP3_REV := 1717826
ROLLUP3_FNS := new free only feed_block encode file file_only decode next_poll worker_at \
    count_at hist_add bin poll_quantile hist_quantile
$(BENCH_DIR)/rollup3/rollup3.o:
	@mkdir -p $(BENCH_DIR)/rollup3/collector/store
	git show $(ROLLUP3_REV):collector/store/rollup.h >$(BENCH_DIR)/rollup3/collector/store/rollup.h
	git show $(ROLLUP3_REV):collector/store/rollup.c >$(BENCH_DIR)/rollup3/collector/store/rollup.c
	$(CC) -I$(BENCH_DIR)/rollup3 $(CPPFLAGS) $(CFLAGS) \
	    $(foreach f,$(ROLLUP3_FNS),-Drollup_$(f)=rollup3_$(f)) \
	    -c -o $@ $(BENCH_DIR)/rollup3/collector/store/rollup.c

# the fleet question over a whole store: DuckDB over the Parquet polls table
# beside d9 sql over raw records and over rollups (tests/bench/bench_fleet_scan.sh)
bench-fleet: deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_store
	BUILD=$(BUILD) sh tests/bench/bench_fleet_scan.sh

# --stack-mode fp vs dwarf: collector CPU per sample, stack depth (tests/bench/bench_stack.sh)
.PHONY: bench-stack
bench: bench-stack
bench-stack:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BUILD)/tests/integration/prog_nofp
	BUILD=$(BUILD) sh tests/bench/bench_stack.sh

# q_wake's cost per poll lookup with a backlog of unanswered wakes (tests/bench/bench_wake.c)
BENCH_BINS += $(BENCH_DIR)/bench_wake
$(BENCH_DIR)/bench_wake: $(BENCH_DIR)/obj/bench_wake.o $(COL_A)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS_COL)

# d9 findings over a whole store, and before/after with BENCH_FINDINGS_BASE=OLD_D9
# (tests/bench/bench_findings_run.sh)
.PHONY: bench-findings
bench: bench-findings
bench-findings:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_store $(BENCH_DIR)/bench_wake
	BUILD=$(BUILD) sh tests/bench/bench_findings_run.sh

# d9 serve's page under sustained zooming in Chromium: redraws per second, lag
# after the last input (tests/bench/bench_serve_zoom.sh)
.PHONY: bench-serve-zoom
bench: bench-serve-zoom
bench-serve-zoom:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_serve
	BUILD=$(BUILD) sh tests/bench/bench_serve_zoom.sh

# The reading commands of two d9 builds side by side on one bench store
# (tests/bench/bench_query.sh; not part of `make bench`: it needs a base build):
#   make bench-query BENCH_QUERY_BASE=OLD_D9 [BENCH_QUERY_STORE=DIR]
#        [BENCH_QUERY_BASE_STORE=DIR] [BENCH_QUERY_PAIRS=8]
# STORE is built by bench_store (50 M records) when missing; BASE_STORE is a
# store the base build can read when STORE's format is newer than it.
BENCH_QUERY_STORE ?= $(BENCH_DIR)/query_store
BENCH_QUERY_PAIRS ?= 8
.PHONY: bench-query
bench-query:
	@test -x "$(BENCH_QUERY_BASE)" || { echo "bench-query: set BENCH_QUERY_BASE=OLD_D9" >&2; exit 2; }
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_store
	test -f $(BENCH_QUERY_STORE)/index.sqlite || $(BENCH_DIR)/bench_store $(BENCH_QUERY_STORE)
	BQ_BASE_STORE=$(BENCH_QUERY_BASE_STORE) sh tests/bench/bench_query.sh $(BENCH_QUERY_BASE) \
	    $(BUILD)/bin/d9 $(BENCH_QUERY_STORE) $(BENCH_QUERY_PAIRS)

# The issue's 1 %-window question (<= 20 ms) on a 50 M-record store, base d9
# vs this one, paired and interleaved (tests/bench/bench_window.sh; not part of
# `make bench`: the store is made once and kept in BENCH_WINDOW_STORE):
#   make bench-window [BENCH_WINDOW_BASE=OLD_D9] [BENCH_WINDOW_STORE=DIR] [BENCH_WINDOW_PAIRS=21]
.PHONY: bench-window
bench-window:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BENCH_DIR)/bench_store
	BUILD=$(BUILD) sh tests/bench/bench_window.sh

# what LD_PRELOAD of the shim costs /bin/true's start: CPU, wall, peak RSS,
# shared objects (tests/bench/bench_startup.c); BENCH_STARTUP_BASE=OLD.so adds
# another build's shim beside this one's
.PHONY: bench-startup
bench: bench-startup
BENCH_BINS += $(BENCH_DIR)/bench_startup
$(BENCH_DIR)/bench_startup: $(BENCH_DIR)/obj/bench_startup.o
	$(CC) $(CFLAGS) -o $@ $^
bench-startup: all $(BENCH_DIR)/bench_startup
	$(BENCH_DIR)/bench_startup --runs $(if $(BENCH_QUICK),10,200) none=none \
	    $(if $(BENCH_STARTUP_BASE),before=$(BENCH_STARTUP_BASE)) shim=$(abspath $(UV_PRELOAD))
