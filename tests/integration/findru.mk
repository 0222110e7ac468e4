# findru.mk — tool_store_findru (test_findru.sh) links the store fixture
# module (store_fix.c), like the tools of STORE_FIX_TOOLS in the Makefile.
$(BUILD)/tests/integration/tool_store_findru: tests/integration/tool_store_findru.c \
    tests/integration/store_fix.c tests/integration/store_fix.h $(COL_A)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/integration $(CFLAGS) -o $@ $(filter %.c %.a,$^) $(LDLIBS_CLI)
