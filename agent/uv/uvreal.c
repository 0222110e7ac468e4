/*
 * uvreal.c — resolution of the real functions behind the wrappers (see uvreal.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "uvreal.h"

#define UVREAL_LIBUV "libuv.so.1"

void *uvreal_lookup(const char *name)
{
    int err = errno;
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        /* libuv loaded privately: not in the global scope RTLD_NEXT searches */
        void *h = dlopen(UVREAL_LIBUV, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = dlsym(h, name);
            dlclose(h);
        }
    }
    if (!p)
        fprintf(stderr, "d9uv: no definition of %s after the wrapper; the call fails\n", name);
    errno = err;
    return p;
}

int uvreal_in_libuv(const void *code)
{
    static _Atomic(void *) base_cache;
    void *base = atomic_load_explicit(&base_cache, memory_order_acquire);
    if (!base) {
        Dl_info di;
        void *run = uvreal_lookup("uv_version");
        if (!run || !dladdr(run, &di) || !di.dli_fbase)
            return 0;
        base = di.dli_fbase;
        atomic_store_explicit(&base_cache, base, memory_order_release);
    }
    Dl_info ci;
    return dladdr(code, &ci) && ci.dli_fbase == base;
}
