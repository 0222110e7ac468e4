/*
 * uvreal.h — the real functions behind libd9uv's wrappers.
 *
 * A wrapper (uvwrap.c, uvloop.c) defines a libuv or libc entry point under
 * its own name and forwards to the definition that comes next in the
 * dynamic lookup order: dlsym(RTLD_NEXT, name), or, when libuv was loaded
 * privately (dlopen RTLD_LOCAL), the symbol of the already loaded
 * libuv.so.1. Each wrapper caches its pointer in a static slot; the
 * lookup runs once per function (dlsym takes the loader's lock) and then
 * costs one load.
 *
 * The slots sit in one ELF section (UVREAL_SECTION) that uvreal.c's
 * constructor walks at load, on the loading thread's stack: every function
 * already defined then is resolved before the program's first wrapped call.
 * dlsym needs several KiB of stack, and a wrapper's first call can come on a
 * thread of a small stack, under libuv's 12 KiB epoll array (a loop thread
 * of 20 KiB crashed so). A function defined only later (libuv dlopen'ed) is
 * looked up at its first call, as before.
 *
 * Called by: uvwrap.c, uvloop.c. Must never: call back into a wrapper,
 * allocate on the cached path, or abort (a missing symbol is logged once
 * and the wrapper fails the call with UV_ENOSYS / ENOSYS).
 */
#ifndef D9_UV_UVREAL_H
#define D9_UV_UVREAL_H

#include <stdatomic.h>

#pragma GCC visibility push(hidden)

/* One wrapped function's real definition: name, and its cached address. */
struct uvreal_slot {
    _Atomic(void *) p;                  /* NULL: not resolved yet */
    const char *name;
};
/* the section is an array of slots: no padding between two */
_Static_assert(sizeof(struct uvreal_slot) == 16, "uvreal_slot: 16 bytes, aligned 16");
#define UVREAL_SECTION d9_uvreal        /* a C identifier: __start_/__stop_ bounds */
#define UVREAL_STR_(x) #x
#define UVREAL_STR(x) UVREAL_STR_(x)

/* Look name up (slow path). NULL when nothing defines it (logged once). */
void *uvreal_lookup(const char *name);

/* Address of the real libuv shared object's text, for uvreal_in_libuv. */
int uvreal_in_libuv(const void *code);

static inline void *uvreal_get(struct uvreal_slot *slot)
{
    /* acquire pairs with the release below (or the constructor's) */
    void *p = atomic_load_explicit(&slot->p, memory_order_acquire);
    if (__builtin_expect(p == NULL, 0)) {
        p = uvreal_lookup(slot->name);
        atomic_store_explicit(&slot->p, p, memory_order_release);
    }
    return p;
}

/* Declares var, the next definition of fn, typed like fn. */
#define UVREAL_AS(fn, var)                                                   \
    __attribute__((section(UVREAL_STR(UVREAL_SECTION)), used, aligned(16))) \
    static struct uvreal_slot uvreal_slot_##var = { NULL, #fn };             \
    __typeof__(&fn) var = (__typeof__(&fn))uvreal_get(&uvreal_slot_##var)
#define UVREAL(fn) UVREAL_AS(fn, real)

#pragma GCC visibility pop

#endif /* D9_UV_UVREAL_H */
