/*
 * tool_store_findru.c — write a store for test_findru.sh: `d9 findings`
 * with the rollups' filter (collector/query/q_findru.h) must print what
 * `d9 findings --raw` prints. Times from T0 = 1 s; 1 s rollup buckets, so
 * T0 + 1000 ms is a bucket edge.
 *
 *   pid 7101 "ru", one segment with rollups, runtime 1, two workers:
 *     w0 (tid 711): polls of 1 ms at location 1 every 5 ms from T0 to
 *        T0 + 1.3 s, except a long poll at location 2 (task 500) from
 *        T0 + 990 ms to T0 + 1015 ms (25 ms, across the bucket edge), with
 *        CPU samples of tid 711 at +992, +998 and +1004 ms (find_hot, twice,
 *        find_cold) inside it, and one at +1100 ms inside a short poll;
 *        park/unpark pairs between polls every 50 ms, waits 10 us;
 *        a wake of task 600 at T0 + 500 ms answered by w1 at +500.5 ms.
 *     w1 (tid 712): park/unpark pairs every 100 ms from T0 + 50 ms, waits
 *        10 us except the unpark at T0 + 1200 ms: 3 ms (a sched-delay);
 *        polls task 600 (location 1, 1 ms) at T0 + 500.5 ms.
 *   pid 7102 "rot", two segments with rollups (a rotation at T0 + 1 s),
 *     runtime 1, one worker w0 (tid 721): polls of 1 ms every 10 ms, and
 *     a poll of task 700 at location 1 from T0 + 995 ms (in segment 1,
 *     unfinished there) to T0 + 1030 ms (in segment 2): 35 ms, the only
 *     long poll; the rollups show none.
 *   pid 7103 "norollup", one segment indexed without rollups: a long poll
 *     of 30 ms at location 1 at T0 + 100 ms among 1 ms polls.
 *
 * Usage: tool_store_findru DIR   (DIR must not exist)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collector/store/idx.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_writer.h"
#include "collector/store/sym.h"
#include "shm/meta.h"
#include "store_fix.h"

#define FR_T0        1000000000ull
#define FR_US        1000ull
#define FR_MS        1000000ull
#define FR_PERF_RING 0xffffffffu

static volatile unsigned fr_sink;
__attribute__((noinline)) static void find_hot(void) { fr_sink = fr_sink * 3u + 1u; }
__attribute__((noinline)) static void find_cold(void) { fr_sink = fr_sink * 5u + 2u; }

static struct store_fix_ring rings[2], perf;

static uint64_t poll(unsigned w, uint64_t task, uint32_t loc, uint64_t t, uint64_t dur)
{
    store_fix_poll_start(&rings[w], w, task, loc, t);
    store_fix_poll_end(&rings[w], w, task, t + dur);
    return t + dur;
}

static void worker_rec(unsigned w, uint8_t type, uint64_t t, uint64_t wait)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, t }, 1, (uint16_t)w, 0, t / 2, wait };
    store_fix_put(&rings[w], &r, sizeof r);
}

static void sample(uint32_t tid, uint64_t t, uint64_t leaf)
{
    store_fix_sample(&perf, tid, t, leaf, (uint64_t)(uintptr_t)&find_cold + 2);
}

static void add_location(struct store_fix_meta *m, uint32_t id, const char *file, uint32_t line,
                         const char *fn)
{
    uint8_t p[512];
    store_fix_meta_add(m, D9_META_LOCATION, id, p,
                       shm_meta_encode_location(p, sizeof p, file, line, fn));
}

struct proc {
    uint32_t pid;
    uint64_t start;
    const char *comm;
    int64_t process_id;
    struct store_fix_meta m;
};

static void proc_open(struct idx *x, struct proc *p, unsigned nw, uint32_t tid0)
{
    uint8_t b[512];
    store_fix_meta_add(&p->m, D9_META_RUNTIME, 1, b, shm_meta_encode_runtime(b, sizeof b, "rt"));
    add_location(&p->m, 1, "src/short.c", 1, "short_handler");
    add_location(&p->m, 2, "src/long.c", 2, "long_handler");
    struct idx_process ip = { .pid = p->pid, .start_time = p->start, .comm = p->comm,
                              .exe = "/findru", .first_ns = FR_T0 };
    int rc;
    if ((rc = idx_process_upsert(x, &ip, &p->process_id)))
        store_fix_die("idx_process_upsert", rc);
    if ((rc = idx_runtime_upsert(x, p->process_id, 1, "rt")))
        store_fix_die("idx_runtime_upsert", rc);
    for (unsigned w = 0; w < nw; w++) {
        char name[16];
        snprintf(name, sizeof name, "rt-%u", w);
        if ((rc = idx_thread_upsert(x, p->process_id, tid0 + w, w, 1, name, FR_T0, 0, 0)))
            store_fix_die("idx_thread_upsert", rc);
    }
}

/* The rings held so far as segment seg_id of p; with_rollups: indexed with
 * them, as the collector's seal does. */
static void proc_segment(struct idx *x, const char *dir, struct proc *p, uint64_t seg_id,
                         unsigned nw, uint32_t tid0, int with_rollups)
{
    char exe[512] = "/findru";
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0)
        exe[l] = 0;
    struct seg_proc_info pi = { .pid = p->pid, .start_time = p->start,
                                .clock_source = D9_CLOCK_MONOTONIC, .host = "findru",
                                .comm = p->comm, .exe = exe };
    struct seg_writer *sw;
    int rc;
    if ((rc = seg_writer_open(&sw, dir, seg_id, &pi, p->m.b, p->m.len)))
        store_fix_die("seg_writer_open", rc);
    for (unsigned w = 0; w < nw; w++) {
        if (rings[w].n)
            store_fix_block(sw, rings[w].raw, rings[w].n, tid0 + w, w, 0, &rings[w].st);
        store_fix_clear(&rings[w]);
    }
    if (perf.n)
        store_fix_block(sw, perf.raw, perf.n, p->pid, FR_PERF_RING, 0, &perf.st);
    store_fix_clear(&perf);
    struct seg_summary sum;
    if ((rc = seg_writer_seal(sw, &sum)))
        store_fix_die("seal", rc);
    if (with_rollups) {
        uint8_t *ru = NULL;
        size_t n = 0;
        if ((rc = rollup_file(sum.path, &ru, &n)) ||
            (rc = idx_segment_commit_rollup(x, p->process_id, &sum, dir, ru, n)))
            store_fix_die("rollups/index", rc);
        free(ru);
    } else if ((rc = idx_segment_commit(x, p->process_id, &sum, dir))) {
        store_fix_die("index", rc);
    }
    seg_writer_free(sw);
}

static void proc_end(struct idx *x, struct proc *p, uint64_t end)
{
    int rc = idx_process_end(x, p->process_id, end, "exited", 0);
    if (rc)
        store_fix_die("idx_process_end", rc);
}

static void ru(struct idx *x, const char *dir)
{
    struct proc p = { .pid = 7101, .start = 81, .comm = "ru" };
    proc_open(x, &p, 2, 711);
    uint64_t hot = (uint64_t)(uintptr_t)&find_hot + 1, cold = (uint64_t)(uintptr_t)&find_cold + 1;
    uint64_t task = 1;
    for (uint64_t t = FR_T0; t < FR_T0 + 1300 * FR_MS;) {
        if (t == FR_T0 + 990 * FR_MS) {
            sample(711, t + 2 * FR_MS, hot);
            sample(711, t + 8 * FR_MS, hot);
            sample(711, t + 14 * FR_MS, cold);
            t = poll(0, 500, 2, t, 25 * FR_MS);
            t += 5 * FR_MS;
            continue;
        }
        if (t == FR_T0 + 1100 * FR_MS)
            sample(711, t + 500 * FR_US, cold);
        if (t == FR_T0 + 500 * FR_MS) {
            struct d9_rec_wake k = { { sizeof k, D9_REC_WAKE, 0, t }, task, 600, 1, 0, 0 };
            store_fix_put(&rings[0], &k, sizeof k);
        }
        uint64_t e = poll(0, task++, 1, t, FR_MS);
        if ((t - FR_T0) % (50 * FR_MS) == 0) {
            worker_rec(0, D9_REC_WORKER_PARK, e + 100 * FR_US, 10 * FR_US);
            worker_rec(0, D9_REC_WORKER_UNPARK, e + 2 * FR_MS, 10 * FR_US);
        }
        t += 5 * FR_MS;
    }
    for (uint64_t t = FR_T0 + 50 * FR_MS; t < FR_T0 + 1300 * FR_MS; t += 100 * FR_MS) {
        if (t == FR_T0 + 450 * FR_MS) {
            worker_rec(1, D9_REC_WORKER_PARK, t, 10 * FR_US);
            worker_rec(1, D9_REC_WORKER_UNPARK, t + 50 * FR_MS, 10 * FR_US);
            poll(1, 600, 1, FR_T0 + 500500 * FR_US, FR_MS);
            continue;
        }
        worker_rec(1, D9_REC_WORKER_PARK, t, 10 * FR_US);
        worker_rec(1, D9_REC_WORKER_UNPARK, t + 50 * FR_MS,
                   t == FR_T0 + 1150 * FR_MS ? 3 * FR_MS : 10 * FR_US);
    }
    proc_segment(x, dir, &p, 1, 2, 711, 1);
    proc_end(x, &p, FR_T0 + 1400 * FR_MS);
}

static void rot(struct idx *x, const char *dir)
{
    struct proc p = { .pid = 7102, .start = 82, .comm = "rot" };
    proc_open(x, &p, 1, 721);
    uint64_t task = 1;
    for (uint64_t t = FR_T0; t < FR_T0 + 990 * FR_MS; t += 10 * FR_MS)
        poll(0, task++, 1, t, FR_MS);
    store_fix_poll_start(&rings[0], 0, 700, 1, FR_T0 + 995 * FR_MS);
    proc_segment(x, dir, &p, 2, 1, 721, 1);
    store_fix_poll_end(&rings[0], 0, 700, FR_T0 + 1030 * FR_MS);
    for (uint64_t t = FR_T0 + 1040 * FR_MS; t < FR_T0 + 1500 * FR_MS; t += 10 * FR_MS)
        poll(0, task++, 1, t, FR_MS);
    proc_segment(x, dir, &p, 3, 1, 721, 1);
    proc_end(x, &p, FR_T0 + 1600 * FR_MS);
}

static void norollup(struct idx *x, const char *dir)
{
    struct proc p = { .pid = 7103, .start = 83, .comm = "norollup" };
    proc_open(x, &p, 1, 731);
    uint64_t task = 1;
    for (uint64_t t = FR_T0; t < FR_T0 + 300 * FR_MS; t += 10 * FR_MS)
        poll(0, task++, 1, t, t == FR_T0 + 100 * FR_MS ? 30 * FR_MS : FR_MS);
    proc_segment(x, dir, &p, 4, 1, 731, 0);
    proc_end(x, &p, FR_T0 + 400 * FR_MS);
}

int main(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tool_store_findru DIR\n");
        return 2;
    }
    struct idx *x = store_fix_create(argv[1]);
    ru(x, argv[1]);
    rot(x, argv[1]);
    norollup(x, argv[1]);
    idx_close(x);
    store_fix_free(&rings[0]);
    store_fix_free(&rings[1]);
    store_fix_free(&perf);
    return 0;
}
