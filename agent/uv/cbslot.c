/*
 * cbslot.c — claiming and reading slots (see cbslot.h).
 */
#include <errno.h>
#include <sched.h>
#include "cbslot.h"

_Static_assert((CBSLOT_N & (CBSLOT_N - 1)) == 0, "CBSLOT_N is a power of 2");

#define CBSLOT_HASH 0x9e3779b97f4a7c15ull  /* Fibonacci hashing of the address */

int cbslot_find(struct cbslot *table, uintptr_t key, cbslot_classify_fn classify, int *full)
{
    if (!key)
        return CBSLOT_NONE;
    uint32_t h = (uint32_t)(((uint64_t)key * CBSLOT_HASH) >> 32);
    for (uint32_t i = 0; i < CBSLOT_N; i++) {
        uint32_t k = (h + i) & (CBSLOT_N - 1);
        struct cbslot *s = &table[k];
        uintptr_t cur = atomic_load_explicit(&s->key, memory_order_acquire);
        if (cur == 0 &&
            atomic_compare_exchange_strong_explicit(&s->key, &cur, key, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            int err = errno;
            uint32_t loc = 0;
            uint32_t state = classify(key, &loc);
            atomic_store_explicit(&s->loc, loc, memory_order_relaxed);
            /* release: loc happens-before any thread that acquires state */
            atomic_store_explicit(&s->state, state, memory_order_release);
            errno = err;
            cur = key;
        }
        if (cur == key) {
            uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
            return state == CBSLOT_TRACE ? (int)k
                 : state == CBSLOT_CLAIMING ? CBSLOT_BUSY : CBSLOT_NONE;
        }
    }
    if (full)
        *full = 1;
    return CBSLOT_NONE;
}

int cbslot_find_wait(struct cbslot *table, uintptr_t key, cbslot_classify_fn classify, int *full)
{
    int k = cbslot_find(table, key, classify, full);
    for (unsigned spin = 0; k == CBSLOT_BUSY && spin < CBSLOT_BUSY_SPINS; spin++) {
        int err = errno;
        sched_yield();
        errno = err;
        k = cbslot_find(table, key, classify, full);
    }
    return k;
}
