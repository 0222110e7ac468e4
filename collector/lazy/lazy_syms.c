/*
 * lazy_syms.c — the functions of the lazily loaded libraries (lazy.h), as
 * `d9` calls them: each one a trampoline with the library's own prototype
 * (its header is included, so a prototype that differs does not compile)
 * that finds the library's function at its first call (lazy_fn) and calls
 * it. The names are the libraries' own: the callers (s3, ctl, serve,
 * parquet, q_demangle) stay as they are, and the same objects link with
 * the real libraries in d9collectd and the tests, where this file is not
 * linked.
 *
 * Linked into `d9` only. Its symbols are not exported (the executable is
 * linked without -rdynamic and no library of its link refers to them), so
 * a library opened later binds its own calls to itself, never here.
 *
 * A call whose library cannot be loaded (its caller did not check
 * lazy_need first) prints why and exits with status 69 (EX_UNAVAILABLE),
 * but for __cxa_demangle: without libstdc++ a name stays mangled.
 * The variadic functions are passed on by their documented argument types:
 * curl_easy_setopt by the option's type range, curl_easy_getinfo a
 * pointer, MHD_start_daemon through MHD_start_daemon_va, and
 * MHD_get_connection_info without extra arguments (the only info types d9
 * asks take none).
 */
#define CURL_DISABLE_TYPECHECK      /* curl_easy_setopt defined here, not type-checked by macro */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <zmq.h>
#include <zstd.h>
#include "collector/lazy/lazy.h"

#define LAZY_EXIT_UNAVAILABLE 69

/* The address of name in lib, cached in *slot (relaxed is enough: any
 * thread that finds it NULL resolves the same address itself). */
static void *lazy_sym(enum lazy_lib lib, const char *name, void **slot)
{
    void *p = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (p)
        return p;
    if (!(p = lazy_fn(lib, name))) {
        const char *why = lazy_error(lib);
        fprintf(stderr, "d9: this needs lib%s, which could not be loaded: %s\n", lazy_name(lib),
                *why ? why : name);
        exit(LAZY_EXIT_UNAVAILABLE);
    }
    __atomic_store_n(slot, p, __ATOMIC_RELAXED);
    return p;
}

/* A trampoline: ret name params, calling the library's name with args. */
#define LAZY_CALL(lib, ret, name, params)                                              \
    static void *lazy_p_##name;                                                        \
    ret name params                                                                    \
    {                                                                                  \
        ret (*f) params;                                                               \
        void *p = lazy_sym(lib, #name, &lazy_p_##name);                                \
        memcpy(&f, &p, sizeof f);
#define LAZY_RET(args) return f args; }
#define LAZY_VOID(args) f args; }

/* ---- libcurl ---- */
LAZY_CALL(LAZY_CURL, CURLcode, curl_global_init, (long flags)) LAZY_RET((flags))
LAZY_CALL(LAZY_CURL, CURL *, curl_easy_init, (void)) LAZY_RET(())
LAZY_CALL(LAZY_CURL, void, curl_easy_cleanup, (CURL *h)) LAZY_VOID((h))
LAZY_CALL(LAZY_CURL, void, curl_easy_reset, (CURL *h)) LAZY_VOID((h))
LAZY_CALL(LAZY_CURL, CURLcode, curl_easy_perform, (CURL *h)) LAZY_RET((h))
LAZY_CALL(LAZY_CURL, const char *, curl_easy_strerror, (CURLcode c)) LAZY_RET((c))
LAZY_CALL(LAZY_CURL, struct curl_slist *, curl_slist_append, (struct curl_slist *l, const char *s))
    LAZY_RET((l, s))
LAZY_CALL(LAZY_CURL, void, curl_slist_free_all, (struct curl_slist *l)) LAZY_VOID((l))

static void *lazy_p_curl_easy_setopt, *lazy_p_curl_easy_getinfo;

CURLcode curl_easy_setopt(CURL *h, CURLoption o, ...)
{
    CURLcode (*f)(CURL *, CURLoption, ...);
    void *p = lazy_sym(LAZY_CURL, "curl_easy_setopt", &lazy_p_curl_easy_setopt);
    memcpy(&f, &p, sizeof f);
    va_list ap;
    va_start(ap, o);
    CURLcode rc;
    if (o < CURLOPTTYPE_OBJECTPOINT) {
        long v = va_arg(ap, long);
        rc = f(h, o, v);
    } else if (o < CURLOPTTYPE_FUNCTIONPOINT || o >= CURLOPTTYPE_BLOB) {
        void *v = va_arg(ap, void *);
        rc = f(h, o, v);
    } else if (o < CURLOPTTYPE_OFF_T) {
        void (*v)(void) = va_arg(ap, void (*)(void));
        rc = f(h, o, v);
    } else {
        curl_off_t v = va_arg(ap, curl_off_t);
        rc = f(h, o, v);
    }
    va_end(ap);
    return rc;
}

CURLcode curl_easy_getinfo(CURL *h, CURLINFO i, ...)
{
    CURLcode (*f)(CURL *, CURLINFO, ...);
    void *p = lazy_sym(LAZY_CURL, "curl_easy_getinfo", &lazy_p_curl_easy_getinfo);
    memcpy(&f, &p, sizeof f);
    va_list ap;
    va_start(ap, i);
    void *v = va_arg(ap, void *);   /* every info type takes a pointer */
    va_end(ap);
    return f(h, i, v);
}

/* ---- libcrypto ---- */
LAZY_CALL(LAZY_CRYPTO, const EVP_MD *, EVP_md5, (void)) LAZY_RET(())
LAZY_CALL(LAZY_CRYPTO, const EVP_MD *, EVP_sha256, (void)) LAZY_RET(())
LAZY_CALL(LAZY_CRYPTO, EVP_MD_CTX *, EVP_MD_CTX_new, (void)) LAZY_RET(())
LAZY_CALL(LAZY_CRYPTO, void, EVP_MD_CTX_free, (EVP_MD_CTX *c)) LAZY_VOID((c))
LAZY_CALL(LAZY_CRYPTO, int, EVP_DigestInit_ex, (EVP_MD_CTX *c, const EVP_MD *t, ENGINE *e))
    LAZY_RET((c, t, e))
LAZY_CALL(LAZY_CRYPTO, int, EVP_DigestUpdate, (EVP_MD_CTX *c, const void *d, size_t n))
    LAZY_RET((c, d, n))
LAZY_CALL(LAZY_CRYPTO, int, EVP_DigestFinal_ex, (EVP_MD_CTX *c, unsigned char *md, unsigned int *s))
    LAZY_RET((c, md, s))
LAZY_CALL(LAZY_CRYPTO, int, EVP_Digest, (const void *d, size_t n, unsigned char *md,
                                         unsigned int *s, const EVP_MD *t, ENGINE *e))
    LAZY_RET((d, n, md, s, t, e))
LAZY_CALL(LAZY_CRYPTO, int, EVP_EncodeBlock, (unsigned char *t, const unsigned char *f_, int n))
    LAZY_RET((t, f_, n))
LAZY_CALL(LAZY_CRYPTO, unsigned char *, HMAC, (const EVP_MD *m, const void *k, int kl,
                                               const unsigned char *d, size_t n,
                                               unsigned char *md, unsigned int *ml))
    LAZY_RET((m, k, kl, d, n, md, ml))

/* ---- libzmq ---- */
LAZY_CALL(LAZY_ZMQ, void *, zmq_ctx_new, (void)) LAZY_RET(())
LAZY_CALL(LAZY_ZMQ, int, zmq_ctx_term, (void *c)) LAZY_RET((c))
LAZY_CALL(LAZY_ZMQ, void *, zmq_socket, (void *c, int t)) LAZY_RET((c, t))
LAZY_CALL(LAZY_ZMQ, int, zmq_close, (void *s)) LAZY_RET((s))
LAZY_CALL(LAZY_ZMQ, int, zmq_connect, (void *s, const char *a)) LAZY_RET((s, a))
LAZY_CALL(LAZY_ZMQ, int, zmq_setsockopt, (void *s, int o, const void *v, size_t n))
    LAZY_RET((s, o, v, n))
LAZY_CALL(LAZY_ZMQ, int, zmq_send, (void *s, const void *b, size_t n, int fl)) LAZY_RET((s, b, n, fl))
LAZY_CALL(LAZY_ZMQ, int, zmq_poll, (zmq_pollitem_t *i, int n, long t)) LAZY_RET((i, n, t))
LAZY_CALL(LAZY_ZMQ, int, zmq_msg_init, (zmq_msg_t *m)) LAZY_RET((m))
LAZY_CALL(LAZY_ZMQ, int, zmq_msg_close, (zmq_msg_t *m)) LAZY_RET((m))
LAZY_CALL(LAZY_ZMQ, int, zmq_msg_recv, (zmq_msg_t *m, void *s, int fl)) LAZY_RET((m, s, fl))
LAZY_CALL(LAZY_ZMQ, void *, zmq_msg_data, (zmq_msg_t *m)) LAZY_RET((m))
LAZY_CALL(LAZY_ZMQ, size_t, zmq_msg_size, (const zmq_msg_t *m)) LAZY_RET((m))
LAZY_CALL(LAZY_ZMQ, int, zmq_msg_more, (const zmq_msg_t *m)) LAZY_RET((m))

/* ---- libmicrohttpd ---- */
LAZY_CALL(LAZY_MHD, struct MHD_Daemon *, MHD_start_daemon_va,
          (unsigned int fl, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
           MHD_AccessHandlerCallback dh, void *dh_cls, va_list ap))
    LAZY_RET((fl, port, apc, apc_cls, dh, dh_cls, ap))
LAZY_CALL(LAZY_MHD, void, MHD_stop_daemon, (struct MHD_Daemon *d)) LAZY_VOID((d))
LAZY_CALL(LAZY_MHD, struct MHD_Response *, MHD_create_response_from_buffer,
          (size_t n, void *b, enum MHD_ResponseMemoryMode m))
    LAZY_RET((n, b, m))
LAZY_CALL(LAZY_MHD, void, MHD_destroy_response, (struct MHD_Response *r)) LAZY_VOID((r))
LAZY_CALL(LAZY_MHD, enum MHD_Result, MHD_add_response_header,
          (struct MHD_Response *r, const char *h, const char *v))
    LAZY_RET((r, h, v))
LAZY_CALL(LAZY_MHD, enum MHD_Result, MHD_queue_response,
          (struct MHD_Connection *c, unsigned int st, struct MHD_Response *r))
    LAZY_RET((c, st, r))
LAZY_CALL(LAZY_MHD, int, MHD_get_connection_values,
          (struct MHD_Connection *c, enum MHD_ValueKind k, MHD_KeyValueIterator it, void *cls))
    LAZY_RET((c, k, it, cls))
LAZY_CALL(LAZY_MHD, const char *, MHD_lookup_connection_value,
          (struct MHD_Connection *c, enum MHD_ValueKind k, const char *key))
    LAZY_RET((c, k, key))
LAZY_CALL(LAZY_MHD, void, MHD_suspend_connection, (struct MHD_Connection *c)) LAZY_VOID((c))
LAZY_CALL(LAZY_MHD, void, MHD_resume_connection, (struct MHD_Connection *c)) LAZY_VOID((c))

struct MHD_Daemon *MHD_start_daemon(unsigned int fl, uint16_t port, MHD_AcceptPolicyCallback apc,
                                    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls,
                                    ...)
{
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = MHD_start_daemon_va(fl, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

static void *lazy_p_MHD_get_connection_info;

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
                                                        enum MHD_ConnectionInfoType t, ...)
{
    const union MHD_ConnectionInfo *(*f)(struct MHD_Connection *, enum MHD_ConnectionInfoType,
                                         ...);
    void *p = lazy_sym(LAZY_MHD, "MHD_get_connection_info", &lazy_p_MHD_get_connection_info);
    memcpy(&f, &p, sizeof f);
    return f(c, t);
}

/* ---- libzstd ---- */
LAZY_CALL(LAZY_ZSTD, ZSTD_CCtx *, ZSTD_createCCtx, (void)) LAZY_RET(())
LAZY_CALL(LAZY_ZSTD, size_t, ZSTD_freeCCtx, (ZSTD_CCtx *c)) LAZY_RET((c))
LAZY_CALL(LAZY_ZSTD, size_t, ZSTD_compressBound, (size_t n)) LAZY_RET((n))
LAZY_CALL(LAZY_ZSTD, size_t, ZSTD_compressCCtx, (ZSTD_CCtx *c, void *d, size_t dn, const void *s,
                                                 size_t sn, int level))
    LAZY_RET((c, d, dn, s, sn, level))
LAZY_CALL(LAZY_ZSTD, size_t, ZSTD_decompress, (void *d, size_t dn, const void *s, size_t sn))
    LAZY_RET((d, dn, s, sn))
LAZY_CALL(LAZY_ZSTD, unsigned, ZSTD_isError, (size_t c)) LAZY_RET((c))

/* ---- libstdc++ ---- */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

static void *lazy_p_cxa_demangle;

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status)
{
    void *p = __atomic_load_n(&lazy_p_cxa_demangle, __ATOMIC_RELAXED);
    if (!p && (p = lazy_fn(LAZY_STDCXX, "__cxa_demangle")))
        __atomic_store_n(&lazy_p_cxa_demangle, p, __ATOMIC_RELAXED);
    if (!p) {                       /* the caller keeps the mangled name */
        if (status)
            *status = -1;
        return NULL;
    }
    char *(*f)(const char *, char *, size_t *, int *);
    memcpy(&f, &p, sizeof f);
    return f(mangled, out, len, status);
}
