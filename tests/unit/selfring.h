/*
 * selfring.h — for unit tests of the loop shims (test_uv.c, test_ev.c,
 * test_eploop.c): a process that traces itself into a temp DIAL9_SHM_DIR
 * (no collector) reads its own rings back. drain(0) forgets everything
 * recorded so far; drain(1) keeps what was recorded since, in order per
 * ring, for count() and find(); loc_addr() turns a code location id back
 * into its address.
 * Header-only (static functions): include it once per test binary.
 */
#ifndef D9_TEST_SELFRING_H
#define D9_TEST_SELFRING_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "agent/d9.h"
#include "shm/meta.h"
#include "shm/region.h"
#include "shm/ring.h"

#define SELFRING_MAXREC 200000

struct rec {
    uint16_t type;
    uint32_t ring;
    uint64_t ts;
    uint64_t task, a;           /* a: loc / wakee / depth */
    uint16_t rt, worker;
};

static struct rec *g_recs;
static size_t g_nrecs;
static uint8_t g_buf[1 << 20];
static struct shm_region g_region;
static struct shm_geometry g_geo;
static int g_mapped;

static void map_self(void)
{
    if (g_mapped)
        return;
    const char *path = d9_region_path();
    assert_non_null(path);
    assert_int_equal(shm_region_map(path, (uint32_t)getuid(), &g_region, &g_geo), 0);
    g_mapped = 1;
}

static void add_rec(const uint8_t *p, uint32_t ring)
{
    struct d9_rec_hdr h;
    memcpy(&h, p, sizeof h);
    struct rec r = { .type = h.type, .ring = ring, .ts = h.ts };
    switch (h.type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start x;
        memcpy(&x, p, sizeof x);
        r.task = x.task, r.a = x.loc, r.rt = x.runtime, r.worker = x.worker;
        break;
    }
    case D9_REC_POLL_END: {
        struct d9_rec_poll_end x;
        memcpy(&x, p, sizeof x);
        r.task = x.task, r.rt = x.runtime, r.worker = x.worker;
        break;
    }
    case D9_REC_WAKE: {
        struct d9_rec_wake x;
        memcpy(&x, p, sizeof x);
        r.task = x.waker, r.a = x.wakee, r.rt = x.runtime, r.worker = x.target_worker;
        break;
    }
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE: {
        struct d9_rec_task x;
        memcpy(&x, p, sizeof x);
        r.task = x.task, r.a = x.loc, r.rt = x.runtime;
        break;
    }
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        struct d9_rec_worker x;
        memcpy(&x, p, sizeof x);
        r.rt = x.runtime, r.worker = x.worker;
        break;
    }
    case D9_REC_QUEUE_DEPTH: {
        struct d9_rec_queue_depth x;
        memcpy(&x, p, sizeof x);
        r.a = x.depth, r.rt = x.runtime, r.worker = x.worker;
        break;
    }
    default:
        return;
    }
    if (g_nrecs < SELFRING_MAXREC)
        g_recs[g_nrecs++] = r;
}

/* Read and consume every ring of region r; keep the records when keep. */
static void drain_region(struct shm_region *r, struct shm_geometry *g, int keep)
{
    g_nrecs = 0;
    for (uint32_t i = 0; i < g->ring_count; i++) {
        for (;;) {
            struct shm_ring_snapshot s;
            shm_ring_snapshot(shm_ring_hdr(r, g, i), &s);
            assert_int_equal(s.lost, 0);
            uint64_t nt;
            long n = shm_ring_read(shm_ring_data(r, g, i), g->ring_data_size, &s,
                                   g_buf, sizeof g_buf, &nt, NULL);
            assert_true(n >= 0);
            if (n == 0)
                break;
            for (long off = 0; keep && off < n;) {
                struct d9_rec_hdr h;
                memcpy(&h, g_buf + off, sizeof h);
                add_rec(g_buf + off, i);
                off += h.len;
            }
            shm_ring_consume(shm_ring_hdr(r, g, i), nt);
        }
    }
}

static void drain(int keep)
{
    map_self();
    drain_region(&g_region, &g_geo, keep);
}

/* Records of type (and task, unless 0) kept by the last drain(1). */
static size_t count(uint16_t type, uint64_t task)
{
    size_t n = 0;
    for (size_t i = 0; i < g_nrecs; i++)
        n += g_recs[i].type == type && (task == 0 || g_recs[i].task == task);
    return n;
}

static const struct rec *find(uint16_t type, uint64_t task)
{
    for (size_t i = 0; i < g_nrecs; i++)
        if (g_recs[i].type == type && (task == 0 || g_recs[i].task == task))
            return &g_recs[i];
    return NULL;
}

/* The code address behind location id loc (0 when it is not a code location). */
static uint64_t loc_addr(uint32_t loc)
{
    map_self();
    size_t off = 0;
    uint32_t len = atomic_load(&g_region.hdr->meta_head);
    struct shm_meta_entry e;
    uint64_t addr;
    while (shm_meta_next(g_region.base + g_geo.meta_offset, len, &off, &e) == 1)
        if (e.kind == D9_META_LOCATION && e.id == loc && shm_meta_code_addr(&e, &addr))
            return addr;
    return 0;
}

#define ID(p) ((uint64_t)(uintptr_t)(p))
#define FN(f) ((uint64_t)(uintptr_t)(f))

#endif /* D9_TEST_SELFRING_H */
