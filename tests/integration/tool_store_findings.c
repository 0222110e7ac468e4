/*
 * tool_store_findings.c — write a store whose findings are known, for
 * test_findings.sh (`d9 findings`). All times are from T0 = 1 s.
 *
 * Default: two processes.
 *   pid 7001 "bad", runtime 1 "rt", three workers, crashed (signal 11):
 *     w1 (tid 702) busy: back to back, 3 polls of 20 ms at location 1
 *        (src/slow.c:7 slow_handler), each followed by 3 polls of 1 ms at
 *        location 1; CPU samples of its thread: 3 inside each long poll
 *        (innermost frame find_hot, find_hot, find_cold), one inside a short
 *        poll and one between polls (neither counted). At T0+60.5 ms (in
 *        its third long poll) it wakes task 5000. Never parks: busy 69 ms of a 71 ms span.
 *     w0 (tid 701) idle: polls of 1 ms at location 2 (src/fast.c:3
 *        fast_handler) at T0, T0+21, T0+42 ms, each followed by a park
 *        (wait 10 us) and 19..20 ms parked; it polls task 5000 at T0+62 ms
 *        (wake -> poll 2 ms). Its ring also holds the global queue's depth:
 *        20 at T0+1 ms, 10 at T0+2 ms, then +15 a ms up to 160 at T0+12 ms
 *        (a rise of 150 in 10 ms), and a block that lost 7 records (the
 *        index's drops say 2 of them were type mismatches).
 *     w2 (tid 703) delayed: park T0+2 ms (wait 100 us), unpark T0+10 ms
 *        (wait 4 ms), poll 1 ms, park T0+11 ms (wait 4 ms), unpark T0+30 ms
 *        (20 us), poll 1 ms, park T0+31 ms (50 us), unpark T0+70 ms (20 us),
 *        then task 900 polled at T0+71 ms at location 3 (src/crash.c:5
 *        crasher) and never ended; a CPU sample of its thread at T0+75 ms
 *        is the process's last record.
 *   pid 7002 "leaker", exited 0, one thread (tid 801): tasks 1..5 spawned
 *     at T0+1..5 ms at location 1 (src/spawn.c:9 spawner), 1 and 2
 *     terminated at T0+100 ms, task 6 spawned at T0+1.4 s (too young), task
 *     7 spawned and terminated at T0+1.5 s (its last record).
 * "clean": pid 7003, exited 0, two workers alike (1 ms polls, 1 ms parks,
 *   10 us waits), a wake polled 20 us later, three tasks spawned and
 *   terminated, a flat queue, a poll unfinished at a normal exit.
 *
 * Usage: tool_store_findings DIR [clean]   (DIR must not exist)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "collector/store/crc32c.h"
#include "collector/store/idx.h"
#include "collector/store/pack.h"
#include "collector/store/seg_writer.h"
#include "collector/store/sym.h"
#include "shm/meta.h"
#include "store_fix.h"

#define TF_T0        1000000000ull
#define TF_US        1000ull
#define TF_MS        1000000ull
#define TF_PERF_RING 0xffffffffu
#define TF_MAX_RECS  256u
#define TF_RAW       (TF_MAX_RECS * 64u)
#define TF_RINGS     3u

static volatile unsigned tf_sink;
__attribute__((noinline)) static void find_hot(void) { tf_sink = tf_sink * 3u + 1u; }
__attribute__((noinline)) static void find_cold(void) { tf_sink = tf_sink * 5u + 2u; }

static struct store_fix_ring rings[TF_RINGS], perf;

static void poll_start(unsigned w, uint64_t task, uint32_t loc, uint64_t t)
{
    store_fix_poll_start(&rings[w], w, task, loc, t);
}

static void poll_end(unsigned w, uint64_t task, uint64_t t)
{
    store_fix_poll_end(&rings[w], w, task, t);
}

static uint64_t poll(unsigned w, uint64_t task, uint32_t loc, uint64_t t, uint64_t dur)
{
    poll_start(w, task, loc, t);
    poll_end(w, task, t + dur);
    return t + dur;
}

static void worker_rec(unsigned w, uint8_t type, uint64_t t, uint64_t wait)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, t }, 1, (uint16_t)w, 0, t / 2, wait };
    store_fix_put(&rings[w], &r, sizeof r);
}

static void park_unpark(unsigned w, uint64_t park, uint64_t park_wait, uint64_t unpark,
                        uint64_t unpark_wait)
{
    worker_rec(w, D9_REC_WORKER_PARK, park, park_wait);
    worker_rec(w, D9_REC_WORKER_UNPARK, unpark, unpark_wait);
}

static void wake(unsigned w, uint64_t t, uint64_t waker, uint64_t wakee)
{
    struct d9_rec_wake k = { { sizeof k, D9_REC_WAKE, 0, t }, waker, wakee, 1, 0, 0 };
    store_fix_put(&rings[w], &k, sizeof k);
}

static void depth(unsigned w, uint64_t t, uint64_t d)
{
    struct d9_rec_queue_depth q = { { sizeof q, D9_REC_QUEUE_DEPTH, 0, t }, d, 1,
                                    D9_WORKER_NONE, 0 };
    store_fix_put(&rings[w], &q, sizeof q);
}

static void task_rec(unsigned w, uint8_t type, uint64_t t, uint64_t task, uint32_t loc)
{
    struct d9_rec_task k = { { sizeof k, type, 0, t }, task, loc, 1, 0 };
    store_fix_put(&rings[w], &k, sizeof k);
}

int main(int argc, char **argv);

static void sample(uint32_t tid, uint64_t t, uint64_t leaf)
{
    store_fix_sample(&perf, tid, t, leaf, (uint64_t)(uintptr_t)&main + 20);
}

static void commit(struct seg_writer *sw, uint32_t tid, uint32_t ring, struct store_fix_ring *r,
                   uint64_t lost)
{
    store_fix_block(sw, r->raw, r->n, tid, ring, lost, &r->st);
    store_fix_free(r);
}

static void add_location(struct store_fix_meta *m, uint32_t id, const char *file, uint32_t line,
                         const char *fn)
{
    uint8_t p[512];
    store_fix_meta_add(m, D9_META_LOCATION, id, p, shm_meta_encode_location(p, sizeof p, file, line, fn));
}

/* This program's own memory maps as "d9.map" records: its samples' names. */
static long maps_records(uint8_t *out, size_t cap)
{
    struct sym_map *m;
    size_t n;
    int rc = sym_maps_read((uint32_t)getpid(), &m, &n);
    if (rc)
        store_fix_die("sym_maps_read", rc);
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    long len = sym_maps_encode(m, n, "", 0, TF_T0, &st, out, cap);
    sym_maps_free(m, n);
    return len;
}

struct proc {
    uint32_t pid;
    uint64_t start;
    const char *comm;
    const char *state;          /* "exited" / "crashed" */
    int code;
    uint64_t end_ns;
    uint64_t mismatch;          /* the index's drops: of the lost, type mismatches */
};

/* Write the rings (w in [0, nrings): tid base_tid + w) and the perf ring as
 * one sealed segment of p, and index it. lost0: records ring 0 lost. */
static void write_proc(struct idx *x, const char *dir, uint64_t seg_id, const struct proc *p,
                       struct store_fix_meta *m, unsigned nrings, uint32_t base_tid, uint64_t lost0)
{
    uint8_t b[512];
    store_fix_meta_add(m, D9_META_RUNTIME, 1, b, shm_meta_encode_runtime(b, sizeof b, "rt"));
    store_fix_meta_add(m, D9_META_SCHEMA, SYM_MAP_SCHEMA_ID, b, sym_map_schema_payload(b, sizeof b));
    int64_t process_id;
    struct idx_process ip = { .pid = p->pid, .start_time = p->start, .comm = p->comm,
                              .exe = "/findings", .first_ns = TF_T0 };
    int rc;
    if ((rc = idx_process_upsert(x, &ip, &process_id)))
        store_fix_die("idx_process_upsert", rc);
    if ((rc = idx_runtime_upsert(x, process_id, 1, "rt")))
        store_fix_die("idx_runtime_upsert", rc);
    for (unsigned w = 0; w < nrings; w++) {
        char name[16];
        snprintf(name, sizeof name, "rt-%u", w);
        if ((rc = idx_thread_upsert(x, process_id, base_tid + w, w, 1, name, TF_T0, 0, 0)))
            store_fix_die("idx_thread_upsert", rc);
    }
    char exe[512] = "/findings";
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0)
        exe[l] = 0;
    struct seg_proc_info pi = { .pid = p->pid, .start_time = p->start,
                                .clock_source = D9_CLOCK_MONOTONIC, .host = "findings",
                                .comm = p->comm, .exe = exe };
    struct seg_writer *sw;
    if ((rc = seg_writer_open(&sw, dir, seg_id, &pi, m->b, m->len)))
        store_fix_die("seg_writer_open", rc);
    static uint8_t mapbuf[1 << 16];
    long mn = maps_records(mapbuf, sizeof mapbuf);
    if (mn <= 0)
        store_fix_die("maps", mn < 0 ? (int)mn : -ENODATA);
    if ((rc = seg_writer_add_data(sw, p->pid, SYM_SEG_RING, 0, 0, mapbuf, (size_t)mn)) < 0)
        store_fix_die("maps block", rc);
    for (unsigned w = 0; w < nrings; w++)
        commit(sw, base_tid + w, w, &rings[w], w == 0 ? lost0 : 0);
    if (perf.n)
        commit(sw, p->pid, TF_PERF_RING, &perf, 0);
    struct seg_summary sum;
    if ((rc = seg_writer_seal(sw, &sum)) || (rc = idx_segment_commit(x, process_id, &sum, dir)))
        store_fix_die("seal/index", rc);
    seg_writer_free(sw);
    if ((rc = idx_process_end(x, process_id, p->end_ns, p->state, p->code)))
        store_fix_die("idx_process_end", rc);
    if (p->mismatch) {
        struct idx_drops d = { .mismatch = p->mismatch };
        if ((rc = idx_process_drops(x, process_id, &d)))
            store_fix_die("idx_process_drops", rc);
    }
}

static void bad(struct idx *x, const char *dir)
{
    struct store_fix_meta m = { .len = 0 };
    add_location(&m, 1, "src/slow.c", 7, "slow_handler");
    add_location(&m, 2, "src/fast.c", 3, "fast_handler");
    add_location(&m, 3, "src/crash.c", 5, "crasher");
    uint64_t hot = (uint64_t)(uintptr_t)&find_hot + 1, cold = (uint64_t)(uintptr_t)&find_cold + 1;

    /* w1: busy, three long polls with samples inside */
    uint64_t t = TF_T0, task = 2000;
    for (unsigned k = 0; k < 3; k++) {
        sample(702, t + 5 * TF_MS, hot);
        sample(702, t + 10 * TF_MS, hot);
        sample(702, t + 15 * TF_MS, cold);
        poll_start(1, task, 1, t);
        if (k == 2)
            wake(1, t + 14500 * TF_US, task, 5000);     /* at T0+60.5 ms */
        poll_end(1, task++, t + 20 * TF_MS);
        t += 20 * TF_MS;
        for (unsigned s = 0; s < 3; s++) {
            if (k == 0 && s == 0)
                sample(702, t + 500 * TF_US, cold);     /* inside a short poll */
            t = poll(1, task++, 1, t, TF_MS);
        }
    }
    sample(702, t + 100 * TF_US, hot);                  /* after the last poll */

    /* w0: idle; answers the wake 2 ms later; the global queue grows */
    poll(0, 10, 2, TF_T0, TF_MS);
    park_unpark(0, TF_T0 + TF_MS, 10 * TF_US, TF_T0 + 21 * TF_MS, 10 * TF_US);
    depth(0, TF_T0 + TF_MS + 1, 20);
    depth(0, TF_T0 + 2 * TF_MS, 10);
    for (unsigned k = 1; k <= 10; k++)
        depth(0, TF_T0 + (2 + k) * TF_MS, 10 + 15 * k);
    poll(0, 11, 2, TF_T0 + 21 * TF_MS, TF_MS);
    park_unpark(0, TF_T0 + 22 * TF_MS, 10 * TF_US, TF_T0 + 42 * TF_MS, 10 * TF_US);
    poll(0, 12, 2, TF_T0 + 42 * TF_MS, TF_MS);
    park_unpark(0, TF_T0 + 43 * TF_MS, 10 * TF_US, TF_T0 + 62500 * TF_US, 10 * TF_US);
    poll(0, 5000, 2, TF_T0 + 62500 * TF_US, TF_MS);

    /* w2: scheduling delay, then the poll the crash interrupts */
    park_unpark(2, TF_T0 + 2 * TF_MS, 100 * TF_US, TF_T0 + 10 * TF_MS, 4 * TF_MS);
    poll(2, 800, 2, TF_T0 + 10 * TF_MS, TF_MS);
    park_unpark(2, TF_T0 + 11 * TF_MS, 4 * TF_MS, TF_T0 + 30 * TF_MS, 20 * TF_US);
    poll(2, 801, 2, TF_T0 + 30 * TF_MS, TF_MS);
    park_unpark(2, TF_T0 + 31 * TF_MS, 50 * TF_US, TF_T0 + 70 * TF_MS, 20 * TF_US);
    poll_start(2, 900, 3, TF_T0 + 71 * TF_MS);
    sample(703, TF_T0 + 75 * TF_MS, hot);

    struct proc p = { 7001, 71, "bad", "crashed", 11, TF_T0 + 80 * TF_MS, 2 };
    write_proc(x, dir, 1, &p, &m, TF_RINGS, 701, 7);

    /* pid 7002: tasks spawned and never terminated */
    struct store_fix_meta m2 = { .len = 0 };
    add_location(&m2, 1, "src/spawn.c", 9, "spawner");
    for (unsigned k = 1; k <= 5; k++)
        task_rec(0, D9_REC_TASK_SPAWN, TF_T0 + k * TF_MS, k, 1);
    task_rec(0, D9_REC_TASK_TERMINATE, TF_T0 + 100 * TF_MS, 1, 0);
    task_rec(0, D9_REC_TASK_TERMINATE, TF_T0 + 100 * TF_MS + 1, 2, 0);
    task_rec(0, D9_REC_TASK_SPAWN, TF_T0 + 1400 * TF_MS, 6, 1);
    task_rec(0, D9_REC_TASK_SPAWN, TF_T0 + 1500 * TF_MS - 1, 7, 1);
    task_rec(0, D9_REC_TASK_TERMINATE, TF_T0 + 1500 * TF_MS, 7, 0);
    struct proc p2 = { 7002, 72, "leaker", "exited", 0, TF_T0 + 1600 * TF_MS, 0 };
    write_proc(x, dir, 2, &p2, &m2, 1, 801, 0);
}

static void clean(struct idx *x, const char *dir)
{
    struct store_fix_meta m = { .len = 0 };
    add_location(&m, 1, "src/ok.c", 1, "ok_handler");
    uint64_t hot = (uint64_t)(uintptr_t)&find_hot + 1;
    for (unsigned w = 0; w < 2; w++) {
        uint64_t t = TF_T0 + w * 100 * TF_US;
        for (unsigned c = 0; c < 5; c++) {
            if (c == 2)
                sample(901 + w, t + 500 * TF_US, hot);
            t = poll(w, 100 * (w + 1) + c, 1, t, TF_MS);
            park_unpark(w, t, 10 * TF_US, t + TF_MS, 10 * TF_US);
            t += TF_MS;
        }
        poll_start(w, 999, 1, t);       /* unfinished at a normal exit */
    }
    wake(0, TF_T0 + 4080 * TF_US, 100, 202);    /* w1 polls task 202 at T0+4.1 ms */
    for (unsigned k = 0; k < 3; k++) {
        task_rec(0, D9_REC_TASK_SPAWN, TF_T0 + k * TF_MS, 50 + k, 1);
        task_rec(1, D9_REC_TASK_TERMINATE, TF_T0 + (k + 1) * TF_MS + 200 * TF_US, 50 + k, 0);
    }
    const uint64_t d[] = { 5, 6, 5, 4 };
    for (unsigned k = 0; k < 4; k++)
        depth(0, TF_T0 + k * TF_MS + 1, d[k]);
    struct proc p = { 7003, 73, "clean", "exited", 0, TF_T0 + 20 * TF_MS, 0 };
    write_proc(x, dir, 1, &p, &m, 2, 901, 0);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "clean")) ||
        !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tool_store_findings DIR [clean]\n");
        return 2;
    }
    struct idx *x = store_fix_create(argv[1]);
    if (argc == 3)
        clean(x, argv[1]);
    else
        bad(x, argv[1]);
    idx_close(x);
    return 0;
}
