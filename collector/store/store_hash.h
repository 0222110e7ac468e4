/*
 * store_hash.h — the one 64-bit hash of d9: every hash table and every
 * hashed id (the rollups' tables, d9 sql's stack_id and rowids, the pairing's
 * threads, the wake table, the exports' interning) mixes its keys with these.
 * It lives in store/ so that the store and every layer above it share it.
 *
 * store_hash64 is MurmurHash3's 64-bit finalizer: a bijection of the 64-bit
 * values (every input bit reaches every output bit), so two different keys
 * never hash alike; only the slot they fall into (a few low bits) can.
 * store_hash2 combines two keys; for a fixed b it is a bijection of a.
 * store_hash_str hashes bytes (names, folded stacks).
 *
 * Header only (static inline): no state, used on every record of a scan.
 */
#ifndef D9_COL_STORE_HASH_H
#define D9_COL_STORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define STORE_HASH_GOLDEN 0x9e3779b97f4a7c15ull    /* 2^64 / phi: decorrelates the keys */

static inline uint64_t store_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static inline uint64_t store_hash2(uint64_t a, uint64_t b)
{
    return store_hash64(a ^ store_hash64(b ^ STORE_HASH_GOLDEN));
}

/* Bytes s[0, n): FNV-1a, then mixed (FNV's low bits alone are weak). */
static inline uint64_t store_hash_str(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return store_hash64(h);
}

#endif /* D9_COL_STORE_HASH_H */
