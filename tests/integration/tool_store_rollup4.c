/*
 * tool_store_rollup4.c — write a store whose rollups version 4 facts are
 * known, for test_rollup4_stats.sh: wake->poll delays per runtime and
 * second, and a custom event's numeric fields.
 *
 * One process (pid R4_PID), runtimes 1 "web" and 2 "io", two threads, one
 * segment of about 2.8 s from R4_T0. For i = 0 .. R4_N-1 at t = R4_T0 +
 * i * 7 ms: thread 1 wakes task 5000 + i (runtime 2 when i % 3 == 0, else
 * 1), and again 100 us later when i % 7 == 3 (the later wake replaces the
 * first); thread 0 polls that task (0.5 ms) 0.2 .. 5.2 ms after t, except
 * when i % 11 == 5 (that wake is never answered), and at t + 6 ms emits a
 * custom event "req" {u64 bytes, i64 delta, f64 ratio, str name, bool ok}.
 * Thread 0's blocks are written before thread 1's: in file order every
 * poll comes before the wake it answers.
 *
 * Usage: tool_store_rollup4 DIR   (DIR must not exist)
 * Prints "delay BUCKET RUNTIME COUNT SUM MAX P50 P99" per (bucket,
 * runtime) with answered wakes (P50/P99 exact, nearest rank), "delays N
 * SUM" and "events N".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "collector/store/idx.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"
#include "store_fix.h"

#define R4_PID    6262u
#define R4_TID0   801u
#define R4_N      400u
#define R4_T0     20000000000ull
#define R4_BUCKET 1000000000ull
#define R4_US     1000ull
#define R4_MS     1000000ull
#define R4_BLOCK  64u

static struct store_fix_ring rings[2];
static struct store_fix_meta meta;

struct delay {
    uint64_t bucket, ns;
    uint16_t runtime;
};
static struct delay delays[R4_N];
static unsigned ndelays;

static void wake(uint64_t t, uint64_t task, uint16_t runtime)
{
    struct d9_rec_wake r = { { sizeof r, D9_REC_WAKE, 0, t }, 0, task, runtime, D9_WORKER_NONE, 0 };
    store_fix_put(&rings[1], &r, sizeof r);
}

static void event(uint64_t t, uint64_t bytes, int64_t delta, double ratio, uint64_t ok)
{
    struct {
        struct d9_rec_custom c;
        uint64_t bytes;
        int64_t delta;
        double ratio;
        uint32_t nlen;
        char name[4];
        uint64_t ok;
    } r;
    memset(&r, 0, sizeof r);
    r.c = (struct d9_rec_custom){ { sizeof r, D9_REC_CUSTOM, 0, t }, 1,
                                  (uint32_t)(sizeof r - sizeof r.c), D9_TASK_NONE };
    r.bytes = bytes;
    r.delta = delta;
    r.ratio = ratio;
    r.nlen = 1;
    r.name[0] = 'x';
    r.ok = ok;
    store_fix_put(&rings[0], &r, sizeof r);
}

static int by_key(const void *x, const void *y)
{
    const struct delay *a = x, *b = y;
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    if (a->runtime != b->runtime)
        return a->runtime < b->runtime ? -1 : 1;
    return a->ns < b->ns ? -1 : a->ns > b->ns;
}

/* Nearest rank, as the rollups' quantiles count it. */
static uint64_t rank(const struct delay *d, unsigned n, double q)
{
    double want = q * n;
    unsigned k = (unsigned)want;
    if ((double)k < want)
        k++;
    return d[(k ? k : 1) - 1].ns;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tool_store_rollup4 DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    if (mkdir(dir, 0700) < 0)
        store_fix_die(dir, -errno);
    uint8_t p[512];
    static const uint8_t types[] = { D9_FT_U64, D9_FT_I64, D9_FT_F64, D9_FT_STR, D9_FT_BOOL };
    static const char *const names[] = { "bytes", "delta", "ratio", "name", "ok" };
    store_fix_meta_add(&meta, D9_META_RUNTIME, 1, p, shm_meta_encode_runtime(p, sizeof p, "web"));
    store_fix_meta_add(&meta, D9_META_RUNTIME, 2, p, shm_meta_encode_runtime(p, sizeof p, "io"));
    store_fix_meta_add(&meta, D9_META_LOCATION, 1, p, shm_meta_encode_location(p, sizeof p, "src/a.c", 1, "fast"));
    store_fix_meta_add(&meta, D9_META_SCHEMA, 1, p, shm_meta_encode_schema(p, sizeof p, "req", 5, types, names));
    uint64_t sum = 0;
    for (unsigned i = 0; i < R4_N; i++) {
        uint64_t t = R4_T0 + i * 7 * R4_MS, task = 5000 + i, w = t;
        uint16_t rt = i % 3 == 0 ? 2 : 1;
        wake(t, task, rt);
        if (i % 7 == 3) {
            w = t + 100 * R4_US;
            wake(w, task, rt);
        }
        uint64_t d = 200 * R4_US + (i * 7919u % 5000u) * R4_US;
        if (i % 11 != 5) {
            store_fix_poll_start(&rings[0], 0, task, 1, t + d);
            store_fix_poll_end(&rings[0], 0, task, t + d + 500 * R4_US);
            delays[ndelays++] = (struct delay){ w - w % R4_BUCKET, t + d - w, rt };
            sum += t + d - w;
        }
        event(t + 6 * R4_MS, 100 + i * 3, (int64_t)i - 200, i * 0.25, i % 2);
    }

    struct idx *x;
    int rc = idx_open(&x, dir);
    if (rc)
        store_fix_die("idx_open", rc);
    int64_t process_id;
    struct idx_process ip = { .pid = R4_PID, .start_time = 92, .comm = "r4", .exe = "/r4",
                              .first_ns = R4_T0 };
    if ((rc = idx_process_upsert(x, &ip, &process_id)) ||
        (rc = idx_runtime_upsert(x, process_id, 1, "web")) ||
        (rc = idx_runtime_upsert(x, process_id, 2, "io")))
        store_fix_die("idx", rc);
    for (unsigned w = 0; w < 2; w++) {
        char name[16];
        snprintf(name, sizeof name, "r4-%u", w);
        if ((rc = idx_thread_upsert(x, process_id, R4_TID0 + w, w, 1, name, R4_T0, 0, 0)))
            store_fix_die("idx_thread_upsert", rc);
    }
    struct seg_proc_info pi = { .pid = R4_PID, .start_time = 92, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "r4", .comm = "r4", .exe = "/r4" };
    struct seg_writer *sw;
    if ((rc = seg_writer_open(&sw, dir, 1, &pi, meta.b, meta.len)))
        store_fix_die("seg_writer_open", rc);
    store_fix_blocks(sw, &rings[0], R4_BLOCK, R4_TID0, 0);
    store_fix_blocks(sw, &rings[1], R4_BLOCK, R4_TID0 + 1, 1);
    struct seg_summary ss;
    uint8_t *ru = NULL;
    size_t n = 0;
    if ((rc = seg_writer_seal(sw, &ss)) || (rc = rollup_file(ss.path, &ru, &n)) ||
        (rc = idx_segment_commit_rollup(x, process_id, &ss, dir, ru, n)))
        store_fix_die("seal/index", rc);
    free(ru);
    seg_writer_free(sw);
    idx_close(x);

    qsort(delays, ndelays, sizeof *delays, by_key);
    for (unsigned i = 0, j; i < ndelays; i = j) {
        uint64_t s = 0;
        for (j = i; j < ndelays && delays[j].bucket == delays[i].bucket &&
                    delays[j].runtime == delays[i].runtime; j++)
            s += delays[j].ns;
        printf("delay %" PRIu64 " %s %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
               delays[i].bucket, delays[i].runtime == 1 ? "web" : "io", j - i, s,
               delays[j - 1].ns, rank(&delays[i], j - i, 0.5), rank(&delays[i], j - i, 0.99));
    }
    printf("delays %u %" PRIu64 "\nevents %u\n", ndelays, sum, R4_N);
    store_fix_free(&rings[0]);
    store_fix_free(&rings[1]);
    return 0;
}
