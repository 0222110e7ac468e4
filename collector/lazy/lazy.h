/*
 * lazy.h — the libraries d9 loads only when a command uses them: libcurl
 * and libcrypto (the S3 client: d9 pull, --store s3://), libzmq (the
 * control channel's client: status, flush, trigger, a reading command's
 * refresh of a live collector), libmicrohttpd (d9 serve), libzstd (Parquet
 * pages: export --format parquet) and libstdc++ (__cxa_demangle, C++ names).
 * Linked at start-up they cost a reading command most of its start (their
 * own dependencies: TLS, Kerberos, LDAP...), so `d9` is linked without them
 * and lazy_syms.c defines their functions as trampolines into the library,
 * which lazy_need opens (dlopen) and resolves whole at its first use.
 *
 * The daemon (d9collectd), the tests and the benches link the libraries as
 * usual: there lazy_need finds them already loaded and lazy_syms.c is not
 * linked at all.
 *
 * Called by: the modules that use a library, before its first call
 * (s3_client_open, ctl_client_request, cli_serve, pq_write_open, pq_check,
 * q_demangle through its trampoline), so a missing library is an error
 * message, not a crash. Must never: exit or print (the trampolines do, for
 * a call no caller prepared); thread-safe (a mutex per load, the loaded
 * state published with release/acquire).
 */
#ifndef D9_COL_LAZY_H
#define D9_COL_LAZY_H

enum lazy_lib {
    LAZY_CURL,
    LAZY_CRYPTO,
    LAZY_ZMQ,
    LAZY_MHD,
    LAZY_ZSTD,
    LAZY_STDCXX,
    LAZY_NLIBS
};

/* Load lib (once; later calls return the first answer). 0, or -ELIBACC
 * (not found: lazy_error says why). $D9_LAZY_HIDE, a comma-separated list
 * of lazy_name()s, makes those fail as if missing (for tests). */
int lazy_need(enum lazy_lib lib);
/* The library's short name ("curl", "crypto", "zmq", "microhttpd", "zstd",
 * "stdc++"), and why its load failed ("" before a failure). */
const char *lazy_name(enum lazy_lib lib);
const char *lazy_error(enum lazy_lib lib);
/* The address of function name in lib (loaded by lazy_need first); NULL
 * when lib cannot be loaded or lacks it. For lazy_syms.c. */
void *lazy_fn(enum lazy_lib lib, const char *name);

#endif /* D9_COL_LAZY_H */
