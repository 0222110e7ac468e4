# findru.mk — tool_store_findru (test_findru.sh) links the store fixture
# module (STORE_FIX_OBJ), like the tools of STORE_FIX_TOOLS in the Makefile.
$(BUILD)/tests/integration/tool_store_findru: tests/integration/tool_store_findru.c \
    $(STORE_FIX_OBJ) $(COL_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/integration $(CFLAGS) -MMD -MP -o $@ $(filter %.c %.o %.a,$^) $(LDLIBS_CLI)
