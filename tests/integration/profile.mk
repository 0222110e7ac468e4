# profile.mk — build flags for the profiling test helpers: the hot
# workload keeps frame pointers so both perf and the in-process fallback can
# walk its stacks.
$(BUILD)/tests/integration/prog_hot: private CFLAGS += -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
