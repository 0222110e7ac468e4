/*
 * tool_badregion.c — a hostile "traced process" for the collector tests:
 * creates a region for itself in $DIAL9_SHM_DIR, writes valid records into
 * one ring and corrupt framing into another, then (mode "truncate") shrinks
 * its own region file under the collector, or (mode "bell") rings its
 * doorbell without pause and without data, scribbling the doorbell's
 * word and listener now and then, and hangs until killed.
 *
 * Mode "stamps" writes STAMPS_GOOD records with stamps T0 + i * STAMPS_STEP
 * (task = i) into one ring, with STAMPS_BAD impossible stamps among them (0,
 * 1, UINT64_MAX, an hour from now; task = STAMPS_BAD_TASK + k), and claims
 * drop counters no ring can have (lost_mismatch far above lost); it writes
 * "T0 STEP GOOD" to READY_FILE once the collector drained the ring.
 *
 * Mode "forge PID START DIR" forges the region of another process: it lays
 * a region out in the private directory DIR, fills a ring with
 * FORGE_RECORDS records, marks it closed with exit status exited(0), puts
 * PID and START in its header and renames it to d9.<own uid>.PID.START in
 * $DIAL9_SHM_DIR (so no collector sees it half made), then exits.
 *
 * Mode "noloop" claims what the preload shim's record says (the flag
 * D9_REGION_F_NOLOOP: no loop found, nothing traced) on a region that
 * holds GOOD_RECORDS records, closes it and exits: the collector must not
 * believe the claim.
 *
 *   tool_badregion corrupt|truncate|bell|stamps|noloop READY_FILE
 *   tool_badregion forge READY_FILE PID START DIR
 * READY_FILE is written once the region is set up (in truncate mode: after
 * the collector drained the good ring, and the file was truncated; in bell
 * mode: after the collector drained the good ring, when the ringing starts). Linked with libcol.a (it only needs shm/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shm/bell.h"
#include "shm/clock.h"
#include "shm/region.h"
#include "shm/ring.h"

#define GOOD_RECORDS 50
#define FORGE_RECORDS 2000u
#define STAMPS_GOOD 500u
#define STAMPS_STEP 1000u           /* ns between good stamps */
#define STAMPS_BAD_TASK 1000000u
#define STAMPS_LOST 246983u         /* the ring's lost count ... */
#define STAMPS_MISMATCH 6537443251081707520ull  /* ... and a cause no ring can have */

static void records(struct shm_region *r, int idx, unsigned n)
{
    struct d9_region_hdr *h = r->hdr;
    struct shm_producer p;
    shm_producer_attach(&p, (struct d9_ring_hdr *)(r->base + h->rings_offset +
                                                   (uint64_t)idx * h->ring_stride),
                        r->base + h->rings_offset + (uint64_t)idx * h->ring_stride +
                            D9_RING_HDR_SIZE, h->ring_data_size);
    for (unsigned i = 0; i < n; i++) {
        struct d9_rec_poll_end *e = shm_ring_reserve(&p, sizeof *e);
        if (!e)
            break;
        memset((char *)e + sizeof e->h, 0, sizeof *e - sizeof e->h);
        e->task = i;
        shm_ring_commit(&p, e, sizeof *e, D9_REC_POLL_END, shm_mono_ns());
    }
}

static struct d9_ring_hdr *ring_of(struct shm_region *r, int idx)
{
    return (struct d9_ring_hdr *)(r->base + r->hdr->rings_offset +
                                  (uint64_t)idx * r->hdr->ring_stride);
}

static void wait_drained(struct shm_region *r, int idx)
{
    struct d9_ring_hdr *g = ring_of(r, idx);
    while (atomic_load(&g->tail) != atomic_load(&g->head))
        usleep(10000);
}

/* Good stamps T0 + i * STAMPS_STEP with impossible ones among them. */
static uint64_t stamps(struct shm_region *r, int idx)
{
    struct shm_producer p;
    shm_producer_attach(&p, ring_of(r, idx), (uint8_t *)ring_of(r, idx) + D9_RING_HDR_SIZE,
                        r->hdr->ring_data_size);
    uint64_t t0 = shm_mono_ns() - STAMPS_GOOD * STAMPS_STEP;
    const uint64_t bad[] = { 0, UINT64_MAX, t0 + 3600ull * 1000000000ull, 1 };
    unsigned nb = 0;
    for (unsigned i = 0; i < STAMPS_GOOD; i++) {
        if (i % (STAMPS_GOOD / 5) == STAMPS_GOOD / 10 && nb < sizeof bad / sizeof bad[0]) {
            struct d9_rec_poll_end *e = shm_ring_reserve(&p, sizeof *e);
            if (!e)
                break;
            memset((char *)e + sizeof e->h, 0, sizeof *e - sizeof e->h);
            e->task = STAMPS_BAD_TASK + nb;
            shm_ring_commit(&p, e, sizeof *e, D9_REC_POLL_END, bad[nb++]);
        }
        struct d9_rec_poll_end *e = shm_ring_reserve(&p, sizeof *e);
        if (!e)
            break;
        memset((char *)e + sizeof e->h, 0, sizeof *e - sizeof e->h);
        e->task = i;
        shm_ring_commit(&p, e, sizeof *e, D9_REC_POLL_END, t0 + (uint64_t)i * STAMPS_STEP);
    }
    struct d9_ring_hdr *h = ring_of(r, idx);
    atomic_store(&h->lost, STAMPS_LOST);
    atomic_store(&h->lost_mismatch, STAMPS_MISMATCH);
    return t0;
}

/* forge READY_FILE PID START DIR (see the top of the file) */
static int forge(char **argv)
{
    char *end;
    unsigned long pid = strtoul(argv[3], &end, 10);
    unsigned long long start = strtoull(argv[4], &end, 10);
    struct shm_region_params prm = { .ring_count = 2, .ring_data_size = 128 * 1024,
                                     .clock_source = D9_CLOCK_MONOTONIC, .dir = argv[5],
                                     .comm = "forged", .exe = "/forged" };
    struct shm_region r;
    int rc = shm_region_create(&prm, &r);
    if (rc) {
        fprintf(stderr, "tool_badregion: cannot create region: %d\n", rc);
        return 1;
    }
    int ring = shm_slot_claim(&r, (uint32_t)getpid(), "forged");
    records(&r, ring, FORGE_RECORDS);
    r.hdr->pid = (uint32_t)pid;
    r.hdr->start_time = start;
    atomic_store(&r.hdr->exit_status, D9_EXIT_CODE | 0u);
    atomic_store(&r.hdr->state, D9_REGION_CLOSED);
    char name[96], to[512];
    shm_region_name(name, sizeof name, (uint32_t)getuid(), (uint32_t)pid, start);
    snprintf(to, sizeof to, "%s/%s", getenv("DIAL9_SHM_DIR"), name);
    if (rename(r.path, to) != 0) {
        perror("tool_badregion: rename");
        return 1;
    }
    FILE *f = fopen(argv[2], "w");
    if (f) {
        fprintf(f, "%s\n", to);
        fclose(f);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "forge"))
        return forge(argv);
    if (argc != 3 || (strcmp(argv[1], "corrupt") && strcmp(argv[1], "truncate") &&
                      strcmp(argv[1], "bell") && strcmp(argv[1], "stamps") &&
                      strcmp(argv[1], "noloop"))) {
        fprintf(stderr, "usage: tool_badregion corrupt|truncate|bell|stamps|noloop READY_FILE\n"
                        "       tool_badregion forge READY_FILE PID START DIR\n");
        return 2;
    }
    struct shm_region_params prm = { .ring_count = 4, .ring_data_size = 64 * 1024,
                                     .clock_source = D9_CLOCK_MONOTONIC,
                                     .dir = getenv("DIAL9_SHM_DIR") };
    if (!strcmp(argv[1], "noloop"))
        prm.flags = D9_REGION_F_NOLOOP;
    struct shm_region r;
    int rc = shm_region_create(&prm, &r);
    if (rc) {
        fprintf(stderr, "tool_badregion: cannot create region: %d\n", rc);
        return 1;
    }
    if (!strcmp(argv[1], "noloop")) {
        int ring = shm_slot_claim(&r, (uint32_t)getpid(), "noloop");
        records(&r, ring, GOOD_RECORDS);
        atomic_store(&r.hdr->exit_status, D9_EXIT_CODE | 0u);
        atomic_store(&r.hdr->state, D9_REGION_CLOSED);
        FILE *f = fopen(argv[2], "w");
        if (f) {
            fprintf(f, "%s\n", r.path);
            fclose(f);
        }
        return 0;
    }
    if (!strcmp(argv[1], "stamps")) {
        int ring = shm_slot_claim(&r, (uint32_t)getpid(), "stamps");
        uint64_t t0 = stamps(&r, ring);
        wait_drained(&r, ring);
        FILE *f = fopen(argv[2], "w");
        if (f) {
            fprintf(f, "%llu %u %u\n", (unsigned long long)t0, STAMPS_STEP, STAMPS_GOOD);
            fclose(f);
        }
        for (;;)
            pause();
    }
    int bad = shm_slot_claim(&r, (uint32_t)getpid(), "bad");
    int good = shm_slot_claim(&r, (uint32_t)getpid() + 1, "good");
    records(&r, bad, 3);
    records(&r, good, GOOD_RECORDS);
    /* corrupt the first record of the bad ring: length 12 is never valid */
    uint8_t *data = r.base + r.hdr->rings_offset + (uint64_t)bad * r.hdr->ring_stride +
                    D9_RING_HDR_SIZE;
    uint16_t len = 12;
    memcpy(data, &len, sizeof len);
    int ring = !strcmp(argv[1], "bell");
    if (ring) {
        /* the good ring drained: the collector listens (bell_watch) */
        struct d9_ring_hdr *g = (struct d9_ring_hdr *)(r.base + r.hdr->rings_offset +
                                                       (uint64_t)good * r.hdr->ring_stride);
        while (atomic_load(&g->tail) != atomic_load(&g->head))
            usleep(10000);
    }
    if (!strcmp(argv[1], "truncate")) {
        /* wait until the collector has adopted it (it consumed the good
         * ring), then pull the pages away under it */
        struct d9_ring_hdr *g = (struct d9_ring_hdr *)(r.base + r.hdr->rings_offset +
                                                       (uint64_t)good * r.hdr->ring_stride);
        while (atomic_load(&g->tail) != atomic_load(&g->head))
            usleep(10000);
        if (truncate(r.path, 4096) != 0)
            perror("truncate");
    }
    FILE *f = fopen(argv[2], "w");
    if (f) {
        fprintf(f, "%s\n", r.path);
        fclose(f);
    }
    struct d9_bell *b = shm_bell_of(r.base);
    uint32_t listener = atomic_load(&b->listener);
    for (uint64_t n = 1; ring && n; n++) {     /* "bell": rings until killed */
        shm_bell_ring(b);
        if (n % 4096 == 0) {
            /* scribble the word, and the listener (the collector's line:
             * it must not care), then put the listener back so the rings
             * keep making the wake-up call */
            atomic_store(&b->word, (uint32_t)(n * 2654435761u));
            atomic_store(&b->listener, (uint32_t)n);
            shm_bell_ring(b);
            atomic_store(&b->listener, listener);
        }
    }
    for (;;)
        pause();
}
