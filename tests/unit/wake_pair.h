/*
 * wake_pair.h — two task ids whose wakes fall into the same slot of every
 * table that places them by the query layer's hash (store_hash2(task,
 * process_id), the low 32 bits equal) and of a 4096-slot table indexed by
 * task % 4096 (what d9 serve used): the pair that proves a wake is matched
 * to its own poll, not to a neighbour's. For tests only (unit and
 * integration): it inverts store_hash64, which the query layer never needs.
 */
#ifndef D9_TEST_WAKE_PAIR_H
#define D9_TEST_WAKE_PAIR_H

#include <stdint.h>
#include "collector/store/store_hash.h"

static inline uint64_t wake_pair_unhash64(uint64_t x)
{
    x ^= x >> 33;                       /* its own inverse: 33 > 64 / 2 */
    x *= 0x9cb4b2f8129337dbull;         /* 0xc4ceb9fe1a85ec53^-1 mod 2^64 */
    x ^= x >> 33;
    x *= 0x4f74430c22a54005ull;         /* 0xff51afd7ed558ccd^-1 mod 2^64 */
    x ^= x >> 33;
    return x;
}

/* *a, *b (a != b, both nonzero) for process_id. */
static inline void wake_pair(int64_t process_id, uint64_t *a, uint64_t *b)
{
    uint64_t c = store_hash64((uint64_t)process_id ^ STORE_HASH_GOLDEN);
    uint64_t h = 0x1234567876543210ull;
    *a = wake_pair_unhash64(h) ^ c;     /* store_hash2(*a, process_id) == h */
    for (uint64_t j = 1;; j++) {
        *b = wake_pair_unhash64(h + (j << 32)) ^ c;
        if (*b % 4096u == *a % 4096u && *b && *a)
            return;
    }
}

#endif /* D9_TEST_WAKE_PAIR_H */
