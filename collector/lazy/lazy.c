/*
 * lazy.c — the libraries d9 opens at first use (see lazy.h).
 *
 * One slot per library: its handle, or why it failed. A load runs once,
 * under the slot's mutex; done is stored with release after handle/why,
 * and read with acquire, so a thread that sees done sees them too.
 * Sonames are the ABI versions the build links against (a library of
 * another ABI version is not taken: its functions could differ).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/lazy/lazy.h"

#define LAZY_WHY_MAX 256u
#define LAZY_HIDE_ENV "D9_LAZY_HIDE"

static const struct {
    const char *name, *soname;
} lazy_libs[LAZY_NLIBS] = {
    [LAZY_CURL] = { "curl", "libcurl.so.4" },
    [LAZY_CRYPTO] = { "crypto", "libcrypto.so.3" },
    [LAZY_ZMQ] = { "zmq", "libzmq.so.5" },
    [LAZY_MHD] = { "microhttpd", "libmicrohttpd.so.12" },
    [LAZY_ZSTD] = { "zstd", "libzstd.so.1" },
    [LAZY_STDCXX] = { "stdc++", "libstdc++.so.6" },
};

static struct lazy_slot {
    pthread_mutex_t mu;
    int done;                       /* release after handle/why are set */
    void *handle;                   /* NULL: failed, why says why */
    char why[LAZY_WHY_MAX];
} lazy_slots[LAZY_NLIBS] = {
    [0 ... LAZY_NLIBS - 1] = { .mu = PTHREAD_MUTEX_INITIALIZER },
};

/* Whether $D9_LAZY_HIDE names lib. */
static int lazy_hidden(enum lazy_lib lib)
{
    const char *h = getenv(LAZY_HIDE_ENV);
    size_t n = strlen(lazy_libs[lib].name);
    for (const char *p = h; p && *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && memcmp(p, lazy_libs[lib].name, n) == 0)
            return 1;
        p = c ? c + 1 : NULL;
    }
    return 0;
}

int lazy_need(enum lazy_lib lib)
{
    if ((unsigned)lib >= LAZY_NLIBS)
        return -EINVAL;
    struct lazy_slot *s = &lazy_slots[lib];
    if (!__atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&s->mu);
        if (!s->done) {
            if (lazy_hidden(lib)) {
                snprintf(s->why, sizeof s->why, "%s: hidden by $%s", lazy_libs[lib].soname,
                         LAZY_HIDE_ENV);
            } else if (!(s->handle = dlopen(lazy_libs[lib].soname, RTLD_NOW | RTLD_LOCAL))) {
                const char *e = dlerror();
                snprintf(s->why, sizeof s->why, "%s", e ? e : lazy_libs[lib].soname);
            }
            __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&s->mu);
    }
    return s->handle ? 0 : -ELIBACC;
}

const char *lazy_name(enum lazy_lib lib)
{
    return (unsigned)lib < LAZY_NLIBS ? lazy_libs[lib].name : "?";
}

const char *lazy_error(enum lazy_lib lib)
{
    if ((unsigned)lib >= LAZY_NLIBS || !__atomic_load_n(&lazy_slots[lib].done, __ATOMIC_ACQUIRE))
        return "";
    return lazy_slots[lib].why;
}

void *lazy_fn(enum lazy_lib lib, const char *name)
{
    if (lazy_need(lib) < 0)
        return NULL;
    return dlsym(lazy_slots[lib].handle, name);
}
