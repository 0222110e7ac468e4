# uvtramp.mk — prog_uvtramp (test_uv_stacks.sh): a plain libuv program, run
# under the preload shim; built by the top Makefile's prog_% rule.
$(BUILD)/tests/integration/prog_uvtramp: LDLIBS_AGENT += -luv
