#!/bin/sh
# named_env.sh — BIND's named as a real libuv server for the shim's test
# and benches: a private configuration (one zone, d9.test; a port on
# 127.0.0.1; every file in one directory) and dnsperf's query file.
# Sourced by tests/integration/test_uv_named.sh, tests/bench/bench_uv_named.sh
# and tests/bench/bench_stack.sh; defines functions only.

# named_setup DIR PORT: DIR/named.conf, DIR/d9.test.zone, DIR/queries
named_setup() {
    mkdir -p "$1"
    cat >"$1/named.conf" <<CONF
options {
    directory "$1";
    pid-file "$1/named.pid";
    session-keyfile "$1/session.key";
    listen-on port $2 { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    dnssec-validation no;
    notify no;
    allow-query { 127.0.0.1; };
};
controls { };
zone "d9.test" { type primary; file "$1/d9.test.zone"; };
CONF
    cat >"$1/d9.test.zone" <<'ZONE'
$TTL 300
@   IN SOA ns.d9.test. admin.d9.test. 1 3600 600 86400 300
    IN NS  ns.d9.test.
ns  IN A   127.0.0.1
www IN A   127.0.0.2
ZONE
    printf 'www.d9.test A\nns.d9.test A\n' >"$1/queries"
}

# named_running LOG: 0 once named has logged that it runs (up to 10 s), else 1
named_running() {
    _i=0
    until grep -q 'running$' "$1"; do
        _i=$((_i + 1)); [ $_i -gt 200 ] && return 1
        sleep 0.05
    done
    return 0
}
