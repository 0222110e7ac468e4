/*
 * bell.h — the producer's side of a region's doorbell (struct d9_bell in
 * shm/d9_abi.h): where it is, and ringing it.
 *
 * Called by shm/ring.c (the producer's slow path, when a commit takes its
 * ring past a fill threshold) and by tests. A ring is one atomic add and,
 * only while a collector listens, one FUTEX_WAKE system call: it never
 * waits, never takes a lock and is async-signal-safe (the in-process
 * sampler's ring rings from a signal handler).
 * Must never: block, or ring on every commit (ring.h keeps the threshold).
 */
#ifndef D9_SHM_BELL_H
#define D9_SHM_BELL_H

#include <stdint.h>
#include "shm/d9_abi.h"

/* The doorbell of the region mapped at base. */
static inline struct d9_bell *shm_bell_of(uint8_t *base)
{
    return (struct d9_bell *)(base + D9_BELL_OFFSET);
}

/* Ring: word + 1, then wake one waiter if a collector listens. Returns 1
 * when it made the wake-up call, 0 when nobody listens. */
int shm_bell_ring(struct d9_bell *b);

#endif /* D9_SHM_BELL_H */
