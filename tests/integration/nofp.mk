# nofp.mk — build flags of prog_nofp (test_profile_dwarf.sh): no frame
# pointers, as Debian builds its packages; prog_nofp_dbg: the same without
# .eh_frame for its own code (-fno-asynchronous-unwind-tables), so its CFI
# is only in .debug_frame (-g), for the stripped + debug-file case.
$(BUILD)/tests/integration/prog_nofp: private FRAME_POINTERS := -fomit-frame-pointer
$(BUILD)/tests/integration/prog_nofp_dbg: tests/integration/prog_nofp.c $(AGENT_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fomit-frame-pointer -fno-asynchronous-unwind-tables \
		-fno-unwind-tables -g -MMD -MP -o $@ $(filter %.c %.a,$^) $(LDLIBS_AGENT) -lm
PROG_BINS += $(BUILD)/tests/integration/prog_nofp_dbg
integration: $(BUILD)/tests/integration/prog_nofp_dbg
