/*
 * prog_rel_stamp.c — a traced process with one impossible timestamp, for
 * tests/integration/test_rel_restart_stamp.sh: it creates a region exactly
 * like the agent does (shm_region_create in --dir, CLOCK_MONOTONIC stamps),
 * claims one ring and writes a queue depth record every millisecond. Once
 * --pause-file exists it stops writing and, once the collector has read
 * everything (the ring's tail is its head), creates --drained-file. Once
 * --bad-file exists it writes one record stamped a minute in the future
 * first (the collector must give it the time of the record before it),
 * creates --ready-file and writes on; once --stop-file exists it releases
 * the ring, marks the region closed and exits 0.
 *
 *   prog_rel_stamp --dir DIR --pause-file F --drained-file F --bad-file F
 *                  --ready-file F --stop-file F
 *
 * Linked with libd9agent.a for the shm objects (it does not use the agent).
 * Test helper only; bounded: it gives up after 10 minutes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "shm/clock.h"
#include "shm/region.h"
#include "shm/ring.h"

#define ST_RING_DATA  (64u * 1024u)
#define ST_META_SIZE  4096u
#define ST_STEP_US    1000u
#define ST_MAX_STEPS  (600u * 1000u)       /* 10 minutes of steps */
#define ST_FUTURE_NS  (60ull * 1000000000ull)

static void sleep_us(unsigned us)
{
    struct timespec ts = { .tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void put(struct shm_producer *p, uint64_t depth, uint64_t ts)
{
    uint32_t len = sizeof(struct d9_rec_queue_depth);
    struct d9_rec_queue_depth *r = shm_ring_reserve(p, len);
    if (!r)
        return;                 /* full (no collector): counted lost by the producer */
    r->depth = depth;
    r->runtime = 1;
    r->worker = D9_WORKER_NONE;
    r->_pad = 0;
    shm_ring_commit(p, r, len, D9_REC_QUEUE_DEPTH, ts);
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *bad = NULL, *ready = NULL, *stop = NULL, *pause = NULL;
    const char *drained = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--bad-file")) bad = argv[i + 1];
        else if (!strcmp(argv[i], "--ready-file")) ready = argv[i + 1];
        else if (!strcmp(argv[i], "--stop-file")) stop = argv[i + 1];
        else if (!strcmp(argv[i], "--pause-file")) pause = argv[i + 1];
        else if (!strcmp(argv[i], "--drained-file")) drained = argv[i + 1];
    }
    if (!dir || !bad || !ready || !stop || !pause || !drained) {
        fprintf(stderr, "usage: prog_rel_stamp --dir DIR --pause-file F --drained-file F "
                "--bad-file F --ready-file F --stop-file F\n");
        return 2;
    }
    struct shm_region_params prm = { .ring_count = 1, .ring_data_size = ST_RING_DATA,
                                     .meta_size = ST_META_SIZE,
                                     .clock_source = D9_CLOCK_MONOTONIC, .dir = dir };
    struct shm_region r;
    int rc = shm_region_create(&prm, &r);
    if (rc) {
        fprintf(stderr, "prog_rel_stamp: cannot create a region in %s: %s\n", dir, strerror(-rc));
        return 1;
    }
    int idx = shm_slot_claim(&r, (uint32_t)gettid(), "stamp");
    if (idx < 0) {
        fprintf(stderr, "prog_rel_stamp: claim failed: %s\n", strerror(-idx));
        return 1;
    }
    uint8_t *ring = r.base + r.hdr->rings_offset + (uint64_t)idx * r.hdr->ring_stride;
    struct shm_producer prod;
    shm_producer_attach(&prod, (struct d9_ring_hdr *)ring, ring + D9_RING_HDR_SIZE, ST_RING_DATA);
    struct d9_ring_hdr *h = (struct d9_ring_hdr *)ring;
    int bad_done = 0, drained_done = 0;
    uint64_t n = 0;
    for (uint32_t step = 0; step < ST_MAX_STEPS; step++) {
        if (!bad_done && access(pause, F_OK) == 0 && access(bad, F_OK) != 0) {
            /* paused: nothing written until --bad-file */
            if (!drained_done && atomic_load_explicit(&h->tail, memory_order_acquire) ==
                                     atomic_load_explicit(&h->head, memory_order_relaxed)) {
                int fd = open(drained, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (fd >= 0)
                    close(fd);
                drained_done = 1;
            }
            sleep_us(ST_STEP_US);
            continue;
        }
        if (!bad_done && access(bad, F_OK) == 0) {
            put(&prod, n++, shm_mono_ns() + ST_FUTURE_NS);
            bad_done = 1;
            int fd = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (fd >= 0)
                close(fd);
        }
        if (access(stop, F_OK) == 0)
            break;
        put(&prod, n++, shm_mono_ns());
        sleep_us(ST_STEP_US);
    }
    shm_slot_release(&r, (uint32_t)idx);
    atomic_store_explicit(&r.hdr->state, D9_REGION_CLOSED, memory_order_release);
    printf("stamp pid=%ld records=%llu bad=%d\n", (long)getpid(), (unsigned long long)n, bad_done);
    return 0;
}
