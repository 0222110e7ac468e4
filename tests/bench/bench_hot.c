/*
 * bench_hot.c — hot-path cost of one poll-start-sized event (32 bytes: the
 * 16-byte record header with its TSC timestamp, then task u64, loc u32,
 * runtime u16, worker u16), for the variants that do not need LTTng:
 *
 *   baseline       inline rdtsc + store of the 32-byte record into a plain
 *                  1 MiB buffer (same size and wrap as a default d9 ring)
 *   baseline-call  the same behind a non-inlined call (what a library call costs)
 *   ring-inline    the shm ring ABI's own floor: shm_ring_reserve/commit from
 *                  shm/ring.h inlined here, on a region this bench creates
 *                  itself (--shm-dir), reset between batches like d9 --reset.
 *                  d9 minus ring-inline is what the agent adds around the ring.
 *   d9             d9_poll_start() into this thread's ring. With --reset the
 *                  bench itself consumes the ring between batches (untimed:
 *                  tail = head), so no drop ever happens and no other core
 *                  touches the ring: pure producer cost. Without --reset the
 *                  ring is drained by whatever collector is running (d9-live).
 *                  With DIAL9_ENABLED=0 in the environment this is the
 *                  disabled path (d9_init returns 1).
 *   compiled-out   built with -DD9_DISABLE (bench_hot_off binary): the calls
 *                  are empty inline functions.
 *
 * Output: one "hot name=..." line (see bench_util.h) plus "info ..." lines.
 * It checks that d9 really wrote the events (ring head moved 32 bytes per
 * event) so a misconfigured agent cannot produce a flattering number.
 *
 * Who runs it: tests/bench/run-bench.sh. Never part of make test.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/d9.h"
#include "shm/d9_abi.h"
#include "tests/bench/bench_util.h"
#ifndef D9_DISABLE
#include "shm/region.h"
#include "shm/ring.h"
#endif

#define BASE_BUF_BYTES (1u << 20)
#define DEF_BATCH      1000u
#define DEF_BATCHES    5000u
#define DEF_WARM       200u
#define DEF_SINGLES    200000u
#define CAL_MS         200u

/* ---- baseline: the minimum an event can cost ----------------------------- */
static uint8_t base_buf[BASE_BUF_BYTES] __attribute__((aligned(64)));
static uint64_t base_pos;
static uint32_t base_seq;

static inline void base_event(uint64_t task, uint32_t loc, uint16_t rt, uint16_t w)
{
    struct d9_rec_poll_start *r =
        (struct d9_rec_poll_start *)(base_buf + (base_pos & (BASE_BUF_BYTES - 1)));
    r->h.len = sizeof *r;
    r->h.type = D9_REC_POLL_START;
    r->h.seq = base_seq++;
    r->h.ts = bench_tsc();
    r->task = task;
    r->loc = loc;
    r->runtime = rt;
    r->worker = w;
    base_pos += sizeof *r;
}

__attribute__((noinline)) static void base_event_call(uint64_t task, uint32_t loc,
                                                      uint16_t rt, uint16_t w)
{
    base_event(task, loc, rt, w);
    BENCH_BARRIER();
}

#ifndef D9_DISABLE
#include "tests/bench/bench_own_ring.h"

/* ---- ring-inline: the ring primitives with nothing around them ---------- */
struct solo_ring {
    struct shm_region region;
    struct shm_producer p;
};

static int solo_ring_open(struct solo_ring *s, const char *dir)
{
    struct shm_region_params prm = { .ring_count = 1, .clock_source = D9_CLOCK_TSC,
                                     .dir = dir };
    int rc = shm_region_create(&prm, &s->region);
    if (rc < 0) {
        fprintf(stderr, "bench_hot: cannot create a region in %s: %s\n", dir, strerror(-rc));
        return rc;
    }
    rc = shm_slot_claim(&s->region, (uint32_t)gettid(), "bench");
    if (rc < 0) {
        fprintf(stderr, "bench_hot: cannot claim a ring: %s\n", strerror(-rc));
        return rc;
    }
    struct d9_region_hdr *h = s->region.hdr;
    uint8_t *ring = s->region.base + h->rings_offset + (uint64_t)rc * h->ring_stride;
    shm_producer_attach(&s->p, (struct d9_ring_hdr *)ring, ring + D9_RING_HDR_SIZE,
                        h->ring_data_size);
    return 0;
}

static inline void solo_event(struct shm_producer *p, uint64_t task, uint32_t loc,
                              uint16_t rt, uint16_t w)
{
    struct d9_rec_poll_start *r = shm_ring_reserve(p, sizeof *r);
    if (__builtin_expect(r == NULL, 0))
        return;
    r->task = task;
    r->loc = loc;
    r->runtime = rt;
    r->worker = w;
    shm_ring_commit(p, r, sizeof *r, D9_REC_POLL_START, bench_tsc());
}

static void solo_ring_reset(void *arg)
{
    struct solo_ring *s = arg;
    shm_ring_consume(s->p.hdr, atomic_load_explicit(&s->p.hdr->head, memory_order_acquire));
}

#endif

static void usage(FILE *f)
{
    fprintf(f,
        "usage: bench_hot --variant V [options]\n"
        "  Times a 32-byte poll-start event; prints one 'hot name=...' line.\n"
        "  --variant V     baseline | baseline-call | ring-inline | d9 | compiled-out\n"
        "  --name N        name printed in the result line (default: the variant)\n"
        "  --cpu C         pin to CPU C (default 0)\n"
        "  --batch N       events per timed batch (default %u)\n"
        "  --batches N     timed batches (default %u)\n"
        "  --warm N        untimed warm-up batches (default %u)\n"
        "  --singles N     individually timed events (default %u, 0 = skip)\n"
        "  --gap-ns N      minimum ns between batch starts (pacing; default 0)\n"
        "  --reset         d9 only: consume our own ring between batches\n"
        "  --shm-dir D     ring-inline only: where to create the bench's region (default /tmp)\n"
        "Environment: DIAL9_* as for any traced program (DIAL9_ENABLED=0 = disabled path).\n",
        DEF_BATCH, DEF_BATCHES, DEF_WARM, DEF_SINGLES);
}

int main(int argc, char **argv)
{
    const char *variant = NULL, *name = NULL, *shm_dir = "/tmp";
    int cpu = 0, reset = 0;
    unsigned long gap_ns = 0;
    struct bench_run r = { .batch = DEF_BATCH, .nbatches = DEF_BATCHES,
                           .warm_batches = DEF_WARM, .nsingle = DEF_SINGLES };

    int i = 1;
    while (i < argc) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--reset")) { reset = 1; i++; continue; }        /* takes no value */
        if (!v) { fprintf(stderr, "bench_hot: %s needs a value (try --help)\n", a); return 2; }
        i += 2;
        if (!strcmp(a, "--variant")) variant = v;
        else if (!strcmp(a, "--name")) name = v;
        else if (!strcmp(a, "--shm-dir")) shm_dir = v;
        else if (!strcmp(a, "--cpu")) cpu = (int)bench_arg_ulong(a, v, 0, 4095);
        else if (!strcmp(a, "--batch")) r.batch = (unsigned)bench_arg_ulong(a, v, 1, 1u << 20);
        else if (!strcmp(a, "--batches")) r.nbatches = (unsigned)bench_arg_ulong(a, v, 1, 1u << 24);
        else if (!strcmp(a, "--warm")) r.warm_batches = (unsigned)bench_arg_ulong(a, v, 0, 1u << 24);
        else if (!strcmp(a, "--singles")) r.nsingle = (unsigned)bench_arg_ulong(a, v, 0, 1u << 26);
        else if (!strcmp(a, "--gap-ns")) gap_ns = bench_arg_ulong(a, v, 0, 1000000000ul);
        else { fprintf(stderr, "bench_hot: unknown option '%s' (try --help)\n", a); return 2; }
    }
    if (!variant) { usage(stderr); return 2; }
    if (!name)
        name = variant;

    int rc = bench_pin(cpu);
    if (rc < 0)
        fprintf(stderr, "bench_hot: cannot pin to cpu %d: %s (running unpinned)\n", cpu,
                strerror(-rc));
    double npt = bench_ns_per_tick(CAL_MS);
    if (npt <= 0.0) { fprintf(stderr, "bench_hot: TSC calibration failed\n"); return 1; }
    r.gap_ticks = (uint64_t)((double)gap_ns / npt);
    if (bench_run_alloc(&r) < 0) { fprintf(stderr, "bench_hot: out of memory\n"); return 1; }
    uint64_t empty = bench_empty_pair_ticks();
    struct bench_hot_result res = { .name = name };
    const uint32_t loc = 7;
    const uint16_t worker = 0;

    if (!strcmp(variant, "baseline")) {
        BENCH_BATCHES(&r, base_event(bench_i, loc, 1, worker));
        BENCH_SINGLES(&r, base_event(bench_i, loc, 1, worker));
    } else if (!strcmp(variant, "baseline-call")) {
        BENCH_BATCHES(&r, base_event_call(bench_i, loc, 1, worker));
        BENCH_SINGLES(&r, base_event_call(bench_i, loc, 1, worker));
    } else if (!strcmp(variant, "ring-inline")) {
#ifdef D9_DISABLE
        (void)shm_dir;
        fprintf(stderr, "bench_hot: ring-inline needs the normal build (bench_hot)\n");
        return 2;
#else
        struct solo_ring solo;
        if (solo_ring_open(&solo, shm_dir) < 0)
            return 1;
        r.between = solo_ring_reset;
        r.between_arg = &solo;
        BENCH_BATCHES(&r, solo_event(&solo.p, bench_i, loc, 1, worker));
        BENCH_SINGLES(&r, solo_event(&solo.p, bench_i, loc, 1, worker));
        res.lost = atomic_load_explicit(&solo.p.hdr->lost, memory_order_relaxed);
        unlink(solo.region.path);
#endif
    } else if (!strcmp(variant, "compiled-out")) {
#ifndef D9_DISABLE
        fprintf(stderr, "bench_hot: compiled-out needs the -DD9_DISABLE build (bench_hot_off)\n");
        return 2;
#else
        d9_runtime rt = { .id = 1 };
        (void)reset;
        BENCH_BATCHES(&r, d9_poll_start(rt, worker, bench_i, loc));
        BENCH_SINGLES(&r, d9_poll_start(rt, worker, bench_i, loc));
#endif
    } else if (!strcmp(variant, "d9")) {
#ifdef D9_DISABLE
        fprintf(stderr, "bench_hot: variant d9 needs the normal build (bench_hot)\n");
        return 2;
#else
        int irc = d9_init();
        d9_runtime rt = { 0 };
        d9_loc l = 0;
        if (irc == 0) {
            rc = d9_runtime_register("bench", &rt);
            if (rc < 0) {
                fprintf(stderr, "bench_hot: d9_runtime_register: %s\n", strerror(-rc));
                return 1;
            }
            l = d9_loc_register(__FILE__, __LINE__, __func__);
        } else if (irc < 0) {
            fprintf(stderr, "bench_hot: d9_init failed: %s\n", strerror(-irc));
            return 1;
        }
        printf("info variant=d9 enabled=%d reset=%d\n", d9_enabled(), reset);
        struct bench_own_ring own = { 0 };
        uint64_t head0 = 0;
        if (irc == 0) {
            d9_poll_start(rt, worker, 0, l);    /* first event claims the ring */
            if (bench_own_ring_find(&own) < 0)
                return 1;
            head0 = bench_own_ring_head(&own);
            if (reset) {
                r.between = bench_own_ring_reset;
                r.between_arg = &own;
            }
        }
        BENCH_BATCHES(&r, d9_poll_start(rt, worker, bench_i, l));
        BENCH_SINGLES(&r, d9_poll_start(rt, worker, bench_i, l));
        d9_stats st;
        d9_get_stats(&st);
        res.lost = st.lost;
        if (irc == 0) {
            uint64_t issued = (uint64_t)(r.warm_batches + r.nbatches) * r.batch + r.nsingle;
            uint64_t moved = bench_own_ring_head(&own) - head0;
            uint64_t want = (issued - st.lost) * sizeof(struct d9_rec_poll_start);
            printf("info ring_bytes=%llu expected_bytes=%llu lost=%llu\n",
                   (unsigned long long)moved, (unsigned long long)want,
                   (unsigned long long)st.lost);
            if (moved < want) {
                fprintf(stderr, "bench_hot: d9 did not record the events (ring moved %llu "
                        "bytes, expected %llu): result invalid\n",
                        (unsigned long long)moved, (unsigned long long)want);
                return 1;
            }
        }
#endif
    } else {
        fprintf(stderr, "bench_hot: unknown variant '%s' (try --help)\n", variant);
        return 2;
    }

    bench_hot_reduce(&r, npt, empty, &res);
    printf("info ns_per_tick=%.6f empty_pair_ticks=%llu\n", npt, (unsigned long long)empty);
    bench_hot_print(stdout, &res);
    bench_run_free(&r);
    return 0;
}
