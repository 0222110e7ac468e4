# tests/bench/uv.mk — `make bench` also measures LD_PRELOAD=libd9preload.so on
# BIND's named under dnsperf (tests/bench/bench_uv_named.sh). Not part of make test.
.PHONY: bench-uv
bench: bench-uv
bench-uv:
	@D9_EXTRA_PKGS="bind9 dnsperf libuv1-dev" sh .ci/install-deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD) all
	BUILD=$(BUILD) sh tests/bench/bench_uv_named.sh
