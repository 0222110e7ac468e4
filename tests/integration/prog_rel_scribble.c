/*
 * prog_rel_scribble.c — a hostile traced process for
 * tests/integration/test_rel_hostile_region.sh: it creates a region exactly
 * like the agent does (shm_region_create in --dir), claims its rings and
 * writes valid records for a moment so the collector adopts it and drains,
 * then, while the collector keeps draining, scribbles random bytes over
 * everything a collector reads: the region header, ring headers (state,
 * tid, generation, head, tail, lost — random values and nasty ones like
 * head behind tail or far beyond it), ring data (record framing), the
 * metadata log and meta_head. Valid records keep flowing in between. At the
 * end it ftruncates the file smaller (the collector's mapping now ends in
 * SIGBUS territory), stays alive for --linger-ms and exits without cleaning up.
 *
 *   prog_rel_scribble --dir DIR [--seconds S] [--seed N] [--linger-ms M]
 *
 * Prints "scribble pid=P seed=N writes=W" on exit. Linked with libd9agent.a
 * for the shm objects (it does not use the agent). Test helper only.
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
#include "shm/meta.h"
#include "shm/region.h"
#include "shm/ring.h"

#define SCR_RINGS      4u
#define SCR_RING_DATA  (16u * 1024u)
#define SCR_META_SIZE  4096u
#define SCR_WARMUP_MS  400u
#define SCR_STEP_US    500u

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: reproducible from --seed */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static void sleep_us(unsigned us)
{
    struct timespec ts = { .tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void scribble(uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)rnd();
}

/* A nasty value for a 64-bit ring cursor, relative to the current one. */
static uint64_t evil_cursor(uint64_t cur)
{
    switch (rnd() % 6) {
    case 0: return rnd();
    case 1: return cur + SCR_RING_DATA + 1 + rnd() % 4096;     /* more than a ring ahead */
    case 2: return cur - 1 - rnd() % 64;                      /* behind */
    case 3: return UINT64_MAX - rnd() % 16;
    case 4: return cur + 1 + rnd() % 7;                       /* misaligned */
    default: return 0;
    }
}

static void write_records(struct shm_producer *p, unsigned n)
{
    for (unsigned k = 0; k < n; k++) {
        uint32_t len = sizeof(struct d9_rec_queue_depth);
        struct d9_rec_queue_depth *r = shm_ring_reserve(p, len);
        if (!r)
            continue;
        r->depth = rnd() % 1000;
        r->runtime = 1;
        r->worker = D9_WORKER_NONE;
        r->_pad = 0;
        shm_ring_commit(p, r, len, D9_REC_QUEUE_DEPTH, shm_mono_ns());
    }
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    unsigned seconds = 2, linger_ms = 1000;
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds")) seconds = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--linger-ms")) linger_ms = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "usage: prog_rel_scribble --dir DIR [--seconds S] [--seed N] "
                    "[--linger-ms M]\n");
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "prog_rel_scribble: --dir is required\n");
        return 2;
    }
    rng_state = seed ? seed : 1;
    struct shm_region_params prm = { .ring_count = SCR_RINGS, .ring_data_size = SCR_RING_DATA,
                                     .meta_size = SCR_META_SIZE,
                                     .clock_source = D9_CLOCK_MONOTONIC, .dir = dir };
    struct shm_region r;
    int rc = shm_region_create(&prm, &r);
    if (rc) {
        fprintf(stderr, "prog_rel_scribble: cannot create a region in %s: %s\n", dir,
                strerror(-rc));
        return 1;
    }
    /* the geometry as created, kept privately: we are about to destroy the header */
    uint64_t size = r.size, meta_off = r.hdr->meta_offset, rings_off = r.hdr->rings_offset;
    uint32_t stride = r.hdr->ring_stride;
    uint8_t payload[64];
    int pl = shm_meta_encode_runtime(payload, sizeof payload, "scribbled");
    if (pl > 0)
        shm_meta_append(r.hdr, r.base + meta_off, D9_META_RUNTIME, 1, payload, (size_t)pl);
    struct shm_producer prod[SCR_RINGS];
    for (unsigned i = 0; i < SCR_RINGS; i++) {
        char name[16];
        snprintf(name, sizeof name, "scr-%u", i);
        int idx = shm_slot_claim(&r, (uint32_t)gettid(), name);
        if (idx < 0) {
            fprintf(stderr, "prog_rel_scribble: claim failed: %s\n", strerror(-idx));
            return 1;
        }
        uint8_t *ring = r.base + rings_off + (uint64_t)idx * stride;
        shm_producer_attach(&prod[i], (struct d9_ring_hdr *)ring, ring + D9_RING_HDR_SIZE,
                            SCR_RING_DATA);
    }
    /* warm-up: valid data, so the collector adopts the region and drains it */
    for (unsigned t = 0; t < SCR_WARMUP_MS * 1000u / SCR_STEP_US; t++) {
        for (unsigned i = 0; i < SCR_RINGS; i++)
            write_records(&prod[i], 8);
        sleep_us(SCR_STEP_US);
    }
    uint64_t writes = 0;
    uint64_t steps = (uint64_t)seconds * 1000000u / SCR_STEP_US;
    for (uint64_t t = 0; t < steps; t++) {
        unsigned ring = (unsigned)(rnd() % SCR_RINGS);
        uint8_t *rh = r.base + rings_off + (uint64_t)ring * stride;
        struct d9_ring_hdr *h = (struct d9_ring_hdr *)rh;
        switch (rnd() % 10) {
        case 0:     /* region header: a few random bytes anywhere in it */
            scribble(r.base + rnd() % (D9_REGION_HDR_SIZE - 16), 1 + rnd() % 16);
            break;
        case 1:     /* ring header bytes */
            scribble(rh + rnd() % (D9_RING_HDR_SIZE - 8), 1 + rnd() % 8);
            break;
        case 2:
            atomic_store(&h->head, evil_cursor(atomic_load(&h->head)));
            break;
        case 3:
            atomic_store(&h->tail, evil_cursor(atomic_load(&h->tail)));
            break;
        case 4:
            atomic_store(&h->state, (uint32_t)rnd() % 6);
            h->generation = (uint32_t)rnd();
            atomic_store(&h->lost, rnd());
            break;
        case 5:     /* record framing in the data */
            scribble(rh + D9_RING_HDR_SIZE + rnd() % (SCR_RING_DATA - 32), 1 + rnd() % 32);
            break;
        case 6:     /* metadata log and its head */
            scribble(r.base + meta_off + rnd() % (SCR_META_SIZE - 32), 1 + rnd() % 32);
            if (rnd() % 2)
                atomic_store(&r.hdr->meta_head, (uint32_t)rnd());
            break;
        default:    /* valid records keep coming */
            write_records(&prod[ring], 4);
            break;
        }
        writes++;
        sleep_us(SCR_STEP_US);
    }
    /* the collector's mapping now reaches past the end of the file */
    int fd = open(r.path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        if (ftruncate(fd, (off_t)(rnd() % 2 ? D9_REGION_HDR_SIZE : size / 3)) != 0)
            perror("prog_rel_scribble: ftruncate");
        close(fd);
    }
    printf("scribble pid=%ld seed=%llu writes=%llu\n", (long)getpid(), (unsigned long long)seed,
           (unsigned long long)writes);
    fflush(stdout);
    sleep_us(linger_ms * 1000u);
    return 0;
}
