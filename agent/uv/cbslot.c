/*
 * cbslot.c — claiming and reading slots (see cbslot.h).
 */
#include <errno.h>
#include <sched.h>
#include "agent/d9.h"
#include "shm/d9_abi.h"
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

void cbslot_tell(struct cbslot *table, int k, uintptr_t tramp)
{
    if (k < 0 || (unsigned)k >= CBSLOT_N)
        return;
    struct cbslot *s = &table[k];
    /* one publisher per slot: the exchange picks it (relaxed: the entry's
     * own lock orders the registration; the slot's loc was acquired by the
     * caller's cbslot_find) */
    if (atomic_load_explicit(&s->told, memory_order_relaxed) ||
        atomic_exchange_explicit(&s->told, 1, memory_order_relaxed))
        return;
    uint32_t loc = atomic_load_explicit(&s->loc, memory_order_relaxed);
    if (!loc || loc > (uint32_t)INT32_MAX)
        return;
    /* "0x" and lower-case hex, as shm_meta_code_func (which libd9agent.so
     * does not export) writes a code location's */
    char func[D9_LOC_CODE_FUNC_MAX], tmp[16];
    int n = 0;
    uint64_t v = (uint64_t)tramp;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v && n < 16);
    func[0] = '0';
    func[1] = 'x';
    for (int i = 0; i < n; i++)
        func[2 + i] = tmp[n - 1 - i];
    func[2 + n] = 0;
    int saved = errno;
    d9_loc_register(D9_LOC_TRAMP_FILE, (int)loc, func);
    errno = saved;
}
