/*
 * bench_own_ring.h — a traced benchmark program's view of its own d9 ring.
 *
 * The agent gives the application no access to its ring (by design); the
 * benchmarks need two things it does not offer: (1) bench_hot --reset acts
 * as the consumer between timed batches (tail = head) to measure the pure
 * producer cost, and (2) bench_drain waits until d9collectd has adopted the
 * process (the ring's tail moved) before it starts the timed load, so the
 * loss figures describe steady state, not the adoption delay (which it
 * reports separately). Both map the process's own region file a second
 * time (d9_region_path) with the collector-side shm_region_map.
 *
 * Who calls it: bench_hot.c, bench_drain.c. Benchmark-only; never use this
 * pattern in a real program (two consumers on one ring corrupt it).
 */
#ifndef D9_BENCH_OWN_RING_H
#define D9_BENCH_OWN_RING_H

#include <stdint.h>
#include "shm/region.h"

struct bench_own_ring {
    struct shm_region region;
    struct d9_ring_hdr *hdr;
};

/* Find the ring owned by the calling thread (it must have recorded an
 * event already). 0 or a negative errno (message printed). */
int bench_own_ring_find(struct bench_own_ring *o);

uint64_t bench_own_ring_head(const struct bench_own_ring *o);
uint64_t bench_own_ring_tail(const struct bench_own_ring *o);

/* Consume everything (tail = head). Signature fits bench_run.between. */
void bench_own_ring_reset(void *o);

/* Wait up to timeout_ms until the ring's tail reaches head (a consumer has
 * drained it). Returns the ms waited, or -ETIMEDOUT. */
long bench_own_ring_wait_drained(const struct bench_own_ring *o, unsigned timeout_ms);

#endif /* D9_BENCH_OWN_RING_H */
