# jitstub.mk — build flags of prog_jitstub (test_stack_jit.sh): no frame
# pointers, so that only the collector's scan finds the stub's caller.
$(BUILD)/tests/integration/prog_jitstub: private FRAME_POINTERS := -fomit-frame-pointer
