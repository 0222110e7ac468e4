/*
 * tool_store_window.c — write a small store whose polls cross windows,
 * segments and a block that the test corrupts, for test_serve_window.sh.
 *
 * One process (pid TSW_PID), runtime 1 "rt", times from TSW_T0 (ms below):
 *   main  (tid TSW_PID, ring 0) one poll [0, 1] at main_poll, nothing after:
 *         its lane must be there at every zoom;
 *   lp    (tid TSW_PID+1, ring 1) a poll [1, 2], parked [2, 3], then the
 *         long poll: task TSW_LONG_TASK at long_poll [10, 610] whose start is
 *         in segment 1 and end in segment 2, then a poll [620, 621];
 *   gap   (tid TSW_PID+2, ring 2) three blocks in segment 2: block 1 starts
 *         task TSW_GAP_TASK at 100; block 2 (the one the test corrupts)
 *         ends it at 101 and starts it again at 200; block 3 ends it at 700
 *         and polls task TSW_GAP_TASK+1 [710, 711]. With block 2 unreadable,
 *         pairing 100 with 700 would invent a 600 ms poll;
 *   busy  (tid TSW_PID+3, ring 3) TSW_BUSY polls of 10 us from 720 ms: more
 *         than a timeline lists one by one, so the whole store is in buckets.
 * Segment 1 holds [0, 10], segment 2 the rest.
 *
 * Usage: tool_store_window DIR   (DIR must not exist). Prints nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "collector/store/crc32c.h"
#include "collector/store/idx.h"
#include "collector/store/pack.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"
#include "store_fix.h"

#define TSW_PID        7171u
#define TSW_T0         1000000000ull
#define TSW_MS         1000000ull
#define TSW_US         1000ull
#define TSW_LONG_TASK  11u
#define TSW_GAP_TASK   20u
#define TSW_BUSY       4200u
#define TSW_RINGS      4u
#define TSW_BLOCK_POLLS 200u        /* busy polls per block */
#define TSW_RAW        (TSW_BLOCK_POLLS * 2u * 40u)

static struct store_fix_ring rings[TSW_RINGS];

static void start(unsigned w, uint64_t task, uint32_t loc, uint64_t t)
{
    store_fix_poll_start(&rings[w], w, task, loc, t);
}

static void end(unsigned w, uint64_t task, uint64_t t)
{
    store_fix_poll_end(&rings[w], w, task, t);
}

static void worker_rec(unsigned w, uint8_t type, uint64_t t)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, t }, 1, (uint16_t)w, 0, 0, 0 };
    store_fix_put(&rings[w], &r, sizeof r);
}

/* Write ring w's records so far as one DATA block and empty it (seq goes on). */
static void commit(struct seg_writer *sw, uint32_t tid, unsigned w)
{
    struct store_fix_ring *r = &rings[w];
    if (!r->n)
        return;
    store_fix_block(sw, r->raw, r->n, tid, w, 0, &r->st);
    store_fix_clear(r);
}

static struct store_fix_meta meta;

static void seal(struct idx *x, struct seg_writer *sw, int64_t process_id, const char *dir)
{
    struct seg_summary sum;
    int rc = seg_writer_seal(sw, &sum);
    if (rc || (rc = idx_segment_commit(x, process_id, &sum, dir)))
        store_fix_die("seal/index", rc);
    seg_writer_free(sw);
}

int main(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tool_store_window DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    struct idx *x = store_fix_create(dir);
    int rc;
    uint8_t p[512];
    store_fix_meta_add(&meta, D9_META_RUNTIME, 1, p, shm_meta_encode_runtime(p, sizeof p, "rt"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 1, p, shm_meta_encode_location(p, sizeof p, "src/main.c", 1, "main_poll"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 2, p, shm_meta_encode_location(p, sizeof p, "src/short.c", 2, "short_poll"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 3, p, shm_meta_encode_location(p, sizeof p, "src/long.c", 3, "long_poll"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 4, p, shm_meta_encode_location(p, sizeof p, "src/gap.c", 4, "gap_poll"));

    int64_t process_id;
    struct idx_process ip = { .pid = TSW_PID, .start_time = 99, .comm = "window",
                              .exe = "/window", .first_ns = TSW_T0 };
    if ((rc = idx_process_upsert(x, &ip, &process_id)))
        store_fix_die("idx_process_upsert", rc);
    if ((rc = idx_runtime_upsert(x, process_id, 1, "rt")))
        store_fix_die("idx_runtime_upsert", rc);
    static const char *names[TSW_RINGS] = { "main", "lp", "gap", "busy" };
    for (unsigned w = 0; w < TSW_RINGS; w++)
        if ((rc = idx_thread_upsert(x, process_id, TSW_PID + w, w, 1, names[w], TSW_T0, 0, 0)))
            store_fix_die("idx_thread_upsert", rc);
    struct seg_proc_info pi = { .pid = TSW_PID, .start_time = 99, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "window", .comm = "window", .exe = "/window" };

    /* segment 1: [0, 10] ms */
    struct seg_writer *sw;
    if ((rc = seg_writer_open(&sw, dir, 1, &pi, meta.b, meta.len)))
        store_fix_die("seg_writer_open", rc);
    start(0, 1, 1, TSW_T0);
    end(0, 1, TSW_T0 + 1 * TSW_MS);
    start(1, 10, 2, TSW_T0 + 1 * TSW_MS);
    end(1, 10, TSW_T0 + 2 * TSW_MS);
    worker_rec(1, D9_REC_WORKER_PARK, TSW_T0 + 2 * TSW_MS);
    worker_rec(1, D9_REC_WORKER_UNPARK, TSW_T0 + 3 * TSW_MS);
    start(1, TSW_LONG_TASK, 3, TSW_T0 + 10 * TSW_MS);
    commit(sw, TSW_PID, 0);
    commit(sw, TSW_PID + 1, 1);
    seal(x, sw, process_id, dir);

    /* segment 2: the rest */
    if ((rc = seg_writer_open(&sw, dir, 2, &pi, meta.b, meta.len)))
        store_fix_die("seg_writer_open", rc);
    start(2, TSW_GAP_TASK, 4, TSW_T0 + 100 * TSW_MS);
    commit(sw, TSW_PID + 2, 2);                         /* gap block 1 */
    end(2, TSW_GAP_TASK, TSW_T0 + 101 * TSW_MS);
    start(2, TSW_GAP_TASK, 4, TSW_T0 + 200 * TSW_MS);
    commit(sw, TSW_PID + 2, 2);                         /* gap block 2: corrupted by the test */
    end(1, TSW_LONG_TASK, TSW_T0 + 610 * TSW_MS);
    start(1, 12, 2, TSW_T0 + 620 * TSW_MS);
    end(1, 12, TSW_T0 + 621 * TSW_MS);
    commit(sw, TSW_PID + 1, 1);
    end(2, TSW_GAP_TASK, TSW_T0 + 700 * TSW_MS);
    start(2, TSW_GAP_TASK + 1, 4, TSW_T0 + 710 * TSW_MS);
    end(2, TSW_GAP_TASK + 1, TSW_T0 + 711 * TSW_MS);
    commit(sw, TSW_PID + 2, 2);                         /* gap block 3 */
    uint64_t t = TSW_T0 + 720 * TSW_MS;
    for (unsigned k = 0; k < TSW_BUSY; k++, t += 20 * TSW_US) {
        start(3, 1000 + k, 2, t);
        end(3, 1000 + k, t + 10 * TSW_US);
        if (k % TSW_BLOCK_POLLS == TSW_BLOCK_POLLS - 1)
            commit(sw, TSW_PID + 3, 3);
    }
    commit(sw, TSW_PID + 3, 3);
    seal(x, sw, process_id, dir);
    idx_close(x);
    return 0;
}
