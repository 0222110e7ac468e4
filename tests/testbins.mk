# tests/testbins.mk — what tests/run.sh runs, as the Makefile builds it.
# Included by the top Makefile after every area makefile (it reads their
# additions to PROG_BINS and `all`).
#
#   make test-bins-list    one line per build output the test suites run:
#                          "unit PATH" (a cmocka binary, run by its name)
#                          "tool PATH" (a program, library or helper that the
#                          integration scripts run or load)
#
# tests/run.sh asks this list, then asks make itself (make -n --trace) which
# of them are missing or older than their inputs (sources, and the headers
# named by the -MMD dependency files), and refuses to run a stale build.
# Invariant: every path printed is one that `make unit integration` builds,
# so that command is always the fix the runner names.

TEST_UNIT_BINS = $(UNIT_BINS)
# what `all` builds (programs, libraries; UV_* come from agent/uv/uv.mk) and
# the integration helpers
TEST_TOOL_BINS = $(AGENT_SO) $(AGENT_A) $(BINS) $(UV_SO) $(UV_PRELOAD) $(PROG_BINS)

.PHONY: test-bins-list
test-bins-list:
	@$(foreach b,$(TEST_UNIT_BINS),echo 'unit $(b)';)
	@$(foreach b,$(TEST_TOOL_BINS),echo 'tool $(b)';)
