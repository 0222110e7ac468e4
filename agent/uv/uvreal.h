/*
 * uvreal.h — the real functions behind libd9uv's wrappers.
 *
 * A wrapper (uvwrap.c, uvloop.c) defines a libuv or libc entry point under
 * its own name and forwards to the definition that comes next in the
 * dynamic lookup order: dlsym(RTLD_NEXT, name), or, when libuv was loaded
 * privately (dlopen RTLD_LOCAL), the symbol of the already loaded
 * libuv.so.1. Each wrapper caches its pointer in a static atomic; the
 * lookup runs once per function (dlsym takes the loader's lock) and then
 * costs one load.
 *
 * Called by: uvwrap.c, uvloop.c. Must never: call back into a wrapper,
 * allocate on the cached path, or abort (a missing symbol is logged once
 * and the wrapper fails the call with UV_ENOSYS / ENOSYS).
 */
#ifndef D9_UV_UVREAL_H
#define D9_UV_UVREAL_H

#include <stdatomic.h>

#pragma GCC visibility push(hidden)

/* Look name up (slow path). NULL when nothing defines it (logged once). */
void *uvreal_lookup(const char *name);

/* Address of the real libuv shared object's text, for uvreal_in_libuv. */
int uvreal_in_libuv(const void *code);

static inline void *uvreal_get(_Atomic(void *) *cache, const char *name)
{
    /* acquire pairs with the release below: another thread's lookup result */
    void *p = atomic_load_explicit(cache, memory_order_acquire);
    if (__builtin_expect(p == NULL, 0)) {
        p = uvreal_lookup(name);
        atomic_store_explicit(cache, p, memory_order_release);
    }
    return p;
}

/* Declares var, the next definition of fn, typed like fn. */
#define UVREAL_AS(fn, var)                                                   \
    static _Atomic(void *) uvreal_cache_##var;                               \
    __typeof__(&fn) var = (__typeof__(&fn))uvreal_get(&uvreal_cache_##var, #fn)
#define UVREAL(fn) UVREAL_AS(fn, real)

#pragma GCC visibility pop

#endif /* D9_UV_UVREAL_H */
