/*
 * tool_store_aggs.c — write a store whose aggregates are known, for
 * test_aggs.sh: `d9 sched --totals` and `d9 top-polls --by-location` from
 * the rollups plus the window's edges must equal the same from the records
 * (--raw) for every window, and plain `d9 sched` for its counts.
 *
 * One process (pid AGG_PID), runtime 1 "web", two workers (tids 701, 702),
 * about 9 s of records from AGG_T0 (a whole second) written as AGG_SEGS
 * segments that rotate off the second (at AGG_T0 + 3.4 s and + 6.7 s), each
 * worker's records in blocks of at most AGG_BLOCK records. A fixed
 * pseudo-random sequence per worker of: short polls (20 us .. 2 ms, loc 1),
 * long polls (0.3 .. 1.5 s, loc 2: they cross bucket edges, some a
 * rotation), nested polls (loc 3 around loc 1, every third one ending the
 * outer poll before the inner one), parks with sampled and unsampled
 * waits, and polls that never end. The first long poll of worker 0 is
 * printed ("long START END") for a window edge inside a poll.
 *
 * With --busy, instead: one worker, one segment, a poll that never ends at
 * AGG_T0 and then 100 polls that do (plain, nested, one whose first start's
 * end was dropped), for `d9 sched`'s busy time (the union of the finished
 * polls: an unfinished poll stops nothing), with 0 to 3 wakes after each
 * and a custom event "req" after every fifth (for the rollups' counts);
 * prints "busy NS" (the union), "wakes N" and "events N".
 *
 * Usage: tool_store_aggs DIR [--busy]   (DIR must not exist)
 * Prints "worker W polls P parks K waits N wait_sum S wait_max M" (the whole
 * store), "long START END", "crossing N" (polls whose end is in the next
 * segment: at least one) and "t0 T0".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "collector/store/crc32c.h"
#include "collector/store/idx.h"
#include "collector/store/pack.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"
#include "store_fix.h"

#define AGG_PID     6161u
#define AGG_TID0    701u
#define AGG_WORKERS 2u
#define AGG_SEGS    3u
#define AGG_T0      10000000000ull
#define AGG_END     (AGG_T0 + 9000000000ull)
#define AGG_BLOCK   64u
#define AGG_US      1000ull
#define AGG_MS      1000000ull

static const uint64_t cut[AGG_SEGS - 1] = { AGG_T0 + 3400 * AGG_MS, AGG_T0 + 6700 * AGG_MS };

/* One worker's records in one segment. */
struct facts {
    uint64_t polls, parks, waits, wait_sum, wait_max;
};

static struct store_fix_ring rings[AGG_SEGS][AGG_WORKERS];
static struct facts facts[AGG_WORKERS];
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t long_start, long_end, crossing;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

static unsigned seg_of(uint64_t ts)
{
    unsigned k = 0;
    while (k < AGG_SEGS - 1 && ts >= cut[k])
        k++;
    return k;
}

static void put(unsigned w, void *rec, size_t len)
{
    struct d9_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    store_fix_put(&rings[seg_of(h.ts)][w], rec, len);
}

static void start(unsigned w, uint64_t task, uint32_t loc, uint64_t t)
{
    store_fix_poll_start(&rings[seg_of(t)][w], w, task, loc, t);
    facts[w].polls++;
}

static void end(unsigned w, uint64_t task, uint64_t t)
{
    store_fix_poll_end(&rings[seg_of(t)][w], w, task, t);
}

/* A poll from t for dur: returns its end. */
static uint64_t poll(unsigned w, uint64_t task, uint32_t loc, uint64_t t, uint64_t dur)
{
    start(w, task, loc, t);
    end(w, task, t + dur);
    if (seg_of(t) != seg_of(t + dur))
        crossing++;
    return t + dur;
}

static void worker_rec(unsigned w, uint8_t type, uint64_t t, uint64_t wait, int sampled)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, t }, 1, (uint16_t)w,
                               sampled ? 0 : D9_WORKER_UNSAMPLED, t / 2, sampled ? wait : 0 };
    put(w, &r, sizeof r);
    struct facts *f = &facts[w];
    if (type == D9_REC_WORKER_PARK)
        f->parks++;
    if (sampled) {
        f->waits++;
        f->wait_sum += wait;
        if (wait > f->wait_max)
            f->wait_max = wait;
    }
}

static void worker(unsigned w)
{
    uint64_t t = AGG_T0 + w * 7 * AGG_US, task = 1000 + w * 1000000;
    while (t < AGG_END) {
        unsigned a = (unsigned)rnd(20);
        if (a < 12) {                                   /* a short poll */
            t = poll(w, task++, 1, t, 20 * AGG_US + rnd(2 * AGG_MS));
        } else if (a == 12) {                           /* a long poll */
            uint64_t s = t;
            t = poll(w, task++, 2, t, 300 * AGG_MS + rnd(1200 * AGG_MS));
            if (w == 0 && !long_start)
                long_start = s, long_end = t;
        } else if (a < 15) {                            /* nested */
            uint64_t outer = task++, inner = task++;
            start(w, outer, 3, t);
            t += 10 * AGG_US + rnd(AGG_MS);
            start(w, inner, 1, t);
            t += 10 * AGG_US + rnd(30 * AGG_MS);
            if (rnd(3) == 0) {                          /* the outer one ends first */
                end(w, outer, t);
                t += 5 * AGG_US + rnd(AGG_MS);
                end(w, inner, t);
            } else {
                end(w, inner, t);
                t += 5 * AGG_US + rnd(AGG_MS);
                end(w, outer, t);
            }
        } else if (a < 19) {                            /* a park */
            worker_rec(w, D9_REC_WORKER_PARK, t, 1 * AGG_US + rnd(3 * AGG_MS), rnd(4) != 0);
            t += 100 * AGG_US + rnd(50 * AGG_MS);
            worker_rec(w, D9_REC_WORKER_UNPARK, t, 1 * AGG_US + rnd(AGG_MS), rnd(4) != 0);
        } else {                                        /* a poll that never ends */
            start(w, task++, 1, t);
        }
        t += 10 * AGG_US + rnd(3 * AGG_MS);
    }
}

static uint64_t nwakes;

static void wake(uint64_t t, uint64_t wakee)
{
    struct d9_rec_wake r = { { sizeof r, D9_REC_WAKE, 0, t }, 0, wakee, 1, D9_WORKER_NONE, 0 };
    put(0, &r, sizeof r);
    nwakes++;
}

static uint64_t nevents;

/* A custom event "req" {u64 bytes} (schema 1) outside any poll. */
static void event(uint64_t t, uint64_t bytes)
{
    struct {
        struct d9_rec_custom c;
        uint64_t bytes;
    } r = { { { sizeof r, D9_REC_CUSTOM, 0, t }, 1, 8, D9_TASK_NONE }, bytes };
    put(0, &r, sizeof r);
    nevents++;
}

/* --busy: returns the busy time (the union of the finished polls). */
static uint64_t worker_busy(void)
{
    uint64_t task = 1, busy = 0;
    start(0, task++, 1, AGG_T0);                        /* never ends */
    for (unsigned i = 0; i < 100; i++) {
        uint64_t t = AGG_T0 + AGG_MS + i * 20 * AGG_MS;
        for (unsigned k = 0; k < i % 4; k++)
            wake(t + 9 * AGG_MS + k * AGG_US, 7 + k);
        if (i % 5 == 0)
            event(t + 9 * AGG_MS + 10 * AGG_US, 100 + i);
        if (i % 3 == 0) {
            poll(0, task++, 1, t, 10 * AGG_MS);
            busy += 10 * AGG_MS;
        } else if (i % 3 == 1) {                        /* nested: the outer one's time */
            uint64_t outer = task++, inner = task++;
            start(0, outer, 3, t);
            poll(0, inner, 1, t + AGG_MS, 2 * AGG_MS);
            end(0, outer, t + 8 * AGG_MS);
            busy += 8 * AGG_MS;
        } else {                                        /* the first start's end dropped */
            start(0, task, 2, t);
            poll(0, task++, 2, t + 2 * AGG_MS, 4 * AGG_MS);
            busy += 4 * AGG_MS;
        }
    }
    return busy;
}


static struct store_fix_meta meta;

int main(int argc, char **argv)
{
    int busy_mode = argc == 3 && !strcmp(argv[2], "--busy");
    if ((argc != 2 && !busy_mode) || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tool_store_aggs DIR [--busy]\n");
        return 2;
    }
    const char *dir = argv[1];
    if (mkdir(dir, 0700) < 0)
        store_fix_die(dir, -errno);
    uint8_t p[512];
    store_fix_meta_add(&meta, D9_META_RUNTIME, 1, p, shm_meta_encode_runtime(p, sizeof p, "web"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 1, p, shm_meta_encode_location(p, sizeof p, "src/a.c", 1, "fast"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 2, p, shm_meta_encode_location(p, sizeof p, "src/b.c", 2, "slow"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 3, p, shm_meta_encode_location(p, sizeof p, "src/c.c", 3, "outer"));
    if (busy_mode) {
        static const uint8_t types[] = { D9_FT_U64 };
        static const char *const names[] = { "bytes" };
        store_fix_meta_add(&meta, D9_META_SCHEMA, 1, p, shm_meta_encode_schema(p, sizeof p, "req", 1, types, names));
    }
    uint64_t busy = 0;
    unsigned nseg = busy_mode ? 1 : AGG_SEGS, nwork = busy_mode ? 1 : AGG_WORKERS;
    for (unsigned w = 0; w < AGG_WORKERS && !busy_mode; w++)
        worker(w);
    if (busy_mode)
        busy = worker_busy();
    else if (!crossing || !long_start)
        store_fix_die("the sequence has no poll across a rotation or no long poll", -EINVAL);

    struct idx *x;
    int rc = idx_open(&x, dir);
    if (rc)
        store_fix_die("idx_open", rc);
    int64_t process_id;
    struct idx_process ip = { .pid = AGG_PID, .start_time = 91, .comm = "aggs", .exe = "/aggs",
                              .first_ns = AGG_T0 };
    if ((rc = idx_process_upsert(x, &ip, &process_id)))
        store_fix_die("idx_process_upsert", rc);
    if ((rc = idx_runtime_upsert(x, process_id, 1, "web")))
        store_fix_die("idx_runtime_upsert", rc);
    for (unsigned w = 0; w < nwork; w++) {
        char name[16];
        snprintf(name, sizeof name, "web-%u", w);
        if ((rc = idx_thread_upsert(x, process_id, AGG_TID0 + w, w, 1, name, AGG_T0, 0, 0)))
            store_fix_die("idx_thread_upsert", rc);
    }
    struct seg_proc_info pi = { .pid = AGG_PID, .start_time = 91, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "aggs", .comm = "aggs", .exe = "/aggs" };
    for (unsigned k = 0; k < nseg; k++) {
        struct seg_writer *sw;
        if ((rc = seg_writer_open(&sw, dir, k + 1, &pi, meta.b, meta.len)))
            store_fix_die("seg_writer_open", rc);
        for (unsigned w = 0; w < nwork; w++)
            store_fix_blocks(sw, &rings[k][w], AGG_BLOCK, AGG_TID0 + w, w);
        struct seg_summary sum;
        uint8_t *ru = NULL;
        size_t n = 0;
        if ((rc = seg_writer_seal(sw, &sum)) || (rc = rollup_file(sum.path, &ru, &n)) ||
            (rc = idx_segment_commit_rollup(x, process_id, &sum, dir, ru, n)))
            store_fix_die("seal/index", rc);
        free(ru);
        seg_writer_free(sw);
    }
    idx_close(x);
    if (busy_mode)
        printf("busy %" PRIu64 "\nwakes %" PRIu64 "\nevents %" PRIu64 "\nt0 %" PRIu64 "\n",
               busy, nwakes, nevents, (uint64_t)AGG_T0);
    for (unsigned w = 0; w < AGG_WORKERS && !busy_mode; w++) {
        const struct facts *f = &facts[w];
        printf("worker %u polls %" PRIu64 " parks %" PRIu64 " waits %" PRIu64 " wait_sum %" PRIu64
               " wait_max %" PRIu64 "\n", w, f->polls, f->parks, f->waits, f->wait_sum, f->wait_max);
    }
    if (!busy_mode)
        printf("long %" PRIu64 " %" PRIu64 "\ncrossing %" PRIu64 "\nt0 %" PRIu64 "\n", long_start,
               long_end, crossing, (uint64_t)AGG_T0);
    for (unsigned k = 0; k < AGG_SEGS; k++)
        for (unsigned w = 0; w < AGG_WORKERS; w++)
            store_fix_free(&rings[k][w]);
    return 0;
}
