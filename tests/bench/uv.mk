# tests/bench/uv.mk — `make bench` also measures LD_PRELOAD=libd9preload.so:
# BIND's named under dnsperf and the cost per traced callback
# (tests/bench/bench_uv_named.sh, bench_uv_idle.c, bench_loop_cb.c: one
# libuv and one libevent callback, plain against traced). Not part of make test.
.PHONY: bench-uv
bench: bench-uv
bench-uv:
	@D9_EXTRA_PKGS="bind9 dnsperf libuv1-dev libevent-dev memcached libmemcached-tools redis-server redis-tools nginx-light apache2-utils curl" sh .ci/install-deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all $(BUILD)/bench/bench_uv_idle \
	    $(BUILD)/bench/bench_loop_cb
	BUILD=$(BUILD) sh tests/bench/bench_uv_named.sh
	BUILD=$(BUILD) sh tests/bench/bench_loops.sh

# a plain libuv program: no d9 in it (the preload brings it)
$(BUILD)/bench/bench_uv_idle: tests/bench/bench_uv_idle.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< -luv

# a plain libuv + libevent program: the callback cost of the shim
$(BUILD)/bench/bench_loop_cb: tests/bench/bench_loop_cb.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< -luv -levent
