/*
 * uvreal.c — resolution of the real functions behind the wrappers (see
 * uvreal.h): at load (constructor, every slot of the UVREAL_SECTION section
 * that has a definition then, silently) and at a wrapper's first call (the
 * others).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "uvreal.h"

#define UVREAL_LIBUV "libuv.so.1"

/* The slots of this shared object (the linker defines the bounds). */
extern struct uvreal_slot __start_d9_uvreal[];
extern struct uvreal_slot __stop_d9_uvreal[];

/* dlsym(RTLD_NEXT) or the privately loaded libuv's symbol; NULL, silently,
 * when neither defines name. */
static void *find(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        /* libuv loaded privately: not in the global scope RTLD_NEXT searches */
        void *h = dlopen(UVREAL_LIBUV, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = dlsym(h, name);
            dlclose(h);
        }
    }
    return p;
}

/* At load, on the loading thread's stack (uvreal.h): what is not defined
 * yet (no libuv, or libevent, in the process) stays NULL for the first call. */
__attribute__((constructor)) static void uvreal_preresolve(void)
{
    int err = errno;
    for (struct uvreal_slot *s = __start_d9_uvreal; s < __stop_d9_uvreal; s++) {
        if (s->name && !atomic_load_explicit(&s->p, memory_order_acquire)) {
            void *p = find(s->name);
            if (p)
                atomic_store_explicit(&s->p, p, memory_order_release);
        }
    }
    errno = err;
}

void *uvreal_lookup(const char *name)
{
    int err = errno;
    void *p = find(name);
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
