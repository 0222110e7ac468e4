/*
 * bench_own_ring.c — see bench_own_ring.h. Benchmark-only.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"
#include "shm/ring.h"
#include "tests/bench/bench_own_ring.h"

#define WAIT_STEP_NS 1000000L   /* poll the tail every 1 ms */

int bench_own_ring_find(struct bench_own_ring *o)
{
    const char *path = d9_region_path();
    if (!path) {
        fprintf(stderr, "bench: tracing is off: no region to look at\n");
        return -ENOENT;
    }
    struct shm_geometry geo;
    int rc = shm_region_map(path, (uint32_t)getuid(), &o->region, &geo);
    if (rc < 0) {
        fprintf(stderr, "bench: cannot map own region %s: %s\n", path, strerror(-rc));
        return rc;
    }
    uint32_t tid = (uint32_t)gettid();
    for (uint32_t i = 0; i < geo.ring_count; i++) {
        struct d9_ring_hdr *h = shm_ring_hdr(&o->region, &geo, i);
        if (atomic_load_explicit(&h->state, memory_order_acquire) == D9_RING_OWNED &&
            h->tid == tid) {
            o->hdr = h;
            return 0;
        }
    }
    fprintf(stderr, "bench: no ring owned by tid %u in %s\n", tid, path);
    return -ENOENT;
}

uint64_t bench_own_ring_head(const struct bench_own_ring *o)
{
    return atomic_load_explicit(&o->hdr->head, memory_order_acquire);
}

uint64_t bench_own_ring_tail(const struct bench_own_ring *o)
{
    return atomic_load_explicit(&o->hdr->tail, memory_order_acquire);
}

void bench_own_ring_reset(void *arg)
{
    struct bench_own_ring *o = arg;
    shm_ring_consume(o->hdr, bench_own_ring_head(o));
}

long bench_own_ring_wait_drained(const struct bench_own_ring *o, unsigned timeout_ms)
{
    uint64_t head = bench_own_ring_head(o);
    for (long waited = 0; waited <= (long)timeout_ms; waited++) {
        if (bench_own_ring_tail(o) >= head)
            return waited;
        struct timespec ts = { 0, WAIT_STEP_NS };
        nanosleep(&ts, NULL);
    }
    return -ETIMEDOUT;
}
