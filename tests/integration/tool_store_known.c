/*
 * tool_store_known.c — write a small store whose facts are known, for
 * test_consistency.sh: every reader (d9 sched, d9 sql, d9 serve, both
 * exports, d9 flame) must give the same answer on it.
 *
 * One process (pid TSK_PID), runtime 1 "web", three workers, every park
 * and unpark record sampled (sched_wait_ns read):
 *   w0 (tid 501) a normal worker: 5 cycles of 3 polls of 100 us, a park
 *      (wait 1..5 us), 1 ms parked, an unpark (wait 5.0..5.4 us); one last poll;
 *   w1 (tid 502) a saturated pool's worker: 40 polls back to back with one
 *      short park in the middle (the park's wait 3 ms, the unpark's 2 ms);
 *   w2 (tid 503) a preempted long poll: one short poll, a 60 ms poll, a park
 *      whose wait is 25 ms (the preemption inside the long poll), 0.5 ms
 *      parked, an unpark (wait 40 us), two short polls.
 * w0's first poll wakes three tasks: 20005 (w1), 24101 (w2: 20005 + 4096,
 * the same slot of a 4096-entry table indexed by task) and 20030 (w1); each
 * flow ends at that task's next poll.
 * The collector's perf ring holds CPU samples of w0's thread whose stacks
 * mix this program's functions, libc's, and, when given, a frame of LIB at
 * file offset OFF (innermost) and a frame of TLIB at file offset TOFF (a
 * trampoline, in the middle), and under it a frame of LIB at AOFF (a
 * return address: looked up at AOFF). Their mappings are added to the
 * process's own in the "d9.map" records. A second process (pid TSK_PID2,
 * thread TSK_TID2) has CPU samples of this program's and libc's frames but
 * no map records: only the objects its agent published (D9_META_OBJECT).
 *
 * Usage: tool_store_known DIR [LIB OFF [TLIB TOFF [AOFF]]]   (DIR must not exist)
 * Prints the expected facts: "worker W polls P parks K waits N wait_sum S
 * wait_max M busy B", and "wake TASK poll TS tid TID" per wake (the poll its flow ends at).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/crc32c.h"
#include "collector/store/idx.h"
#include "collector/store/pack.h"
#include "collector/store/seg_writer.h"
#include "collector/store/sym.h"
#include "shm/meta.h"
#include "store_fix.h"
#include "collector/store/rollup.h"

/* Index a sealed segment as the collector does: its row with its rollups. */
static int commit_with_rollups(struct idx *x, int64_t process_id, const struct seg_summary *sum,
                               const char *dir)
{
    uint8_t *ru = NULL;
    size_t n = 0;
    int rc = rollup_file(sum->path, &ru, &n);
    if (rc == 0)
        rc = idx_segment_commit_rollup(x, process_id, sum, dir, ru, n);
    free(ru);
    return rc;
}

#define TSK_PID        5151u
#define TSK_PID2       5252u       /* a process known only by its agent's objects */
#define TSK_TID2       601u        /* its sampled thread */
#define TSK_WORKERS    3u
#define TSK_TID0       501u
#define TSK_T0         1000000000ull
#define TSK_PERF_RING  0xffffffffu
#define TSK_MAX_RECS   256u
#define TSK_RAW        (TSK_MAX_RECS * 64u)
#define TSK_LIB_BASE   0x7e0000000000ull   /* where LIB and TLIB are said to be mapped */
#define TSK_LIB_SPAN   0x100000000ull
#define TSK_US         1000ull

static volatile unsigned tsk_sink;
__attribute__((noinline)) static void tsk_leaf(void) { tsk_sink = tsk_sink * 3u + 1u; }
__attribute__((noinline)) static void tsk_outer(void) { tsk_leaf(); tsk_sink = tsk_sink * 5u + 2u; }

struct facts {
    uint64_t polls, parks, waits, wait_sum, wait_max, parked, t_first, t_last, park_ts;
    uint64_t busy;                  /* time in polls (they do not nest here) */
};

static struct store_fix_ring rings[TSK_WORKERS], perf;
static struct facts facts[TSK_WORKERS];
static const uint64_t woken[3] = { 20005, 20005 + 4096, 20030 };
static uint64_t woken_poll[3];      /* the start of each woken task's next poll */
static unsigned woken_tid[3];

static void seen(unsigned w, uint64_t ts)
{
    struct facts *f = &facts[w];
    if (!f->t_first || ts < f->t_first)
        f->t_first = ts;
    if (ts > f->t_last)
        f->t_last = ts;
}

/* A poll of task on worker w from t for dur ns at location loc. */
static uint64_t poll(unsigned w, uint64_t task, uint32_t loc, uint64_t t, uint64_t dur)
{
    struct d9_rec_poll_start s = { { sizeof s, D9_REC_POLL_START, 0, t }, task, loc, 1,
                                   (uint16_t)w };
    struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, t + dur }, task, 1,
                                 (uint16_t)w, 0 };
    store_fix_put(&rings[w], &s, sizeof s);
    store_fix_put(&rings[w], &e, sizeof e);
    for (unsigned i = 0; i < 3; i++)
        if (task == woken[i] && !woken_poll[i]) {
            woken_poll[i] = t;
            woken_tid[i] = TSK_TID0 + w;
        }
    facts[w].polls++;
    facts[w].busy += dur;
    seen(w, t);
    seen(w, t + dur);
    return t + dur;
}

static void worker_rec(unsigned w, uint8_t type, uint64_t t, uint64_t wait)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, t }, 1, (uint16_t)w, 0, t / 2, wait };
    store_fix_put(&rings[w], &r, sizeof r);
    struct facts *f = &facts[w];
    f->waits++;
    f->wait_sum += wait;
    if (wait > f->wait_max)
        f->wait_max = wait;
    if (type == D9_REC_WORKER_PARK) {
        f->parks++;
        f->park_ts = t;
    } else {
        f->parked += t - f->park_ts;
    }
    seen(w, t);
}

static void wake(unsigned w, uint64_t t, uint64_t waker, uint64_t wakee, unsigned target)
{
    struct d9_rec_wake k = { { sizeof k, D9_REC_WAKE, 0, t }, waker, wakee, 1,
                             (uint16_t)target, 0 };
    store_fix_put(&rings[w], &k, sizeof k);
}

static uint32_t sample_tid = TSK_TID0;

static void sample(uint64_t t, const uint64_t *ips, uint16_t n)
{
    uint8_t rec[sizeof(struct d9_rec_stack) + 16 * 8];
    struct d9_rec_stack s = { .h = { (uint16_t)(sizeof s + n * 8u), D9_REC_CPU_SAMPLE, 0, t },
                              .tid = sample_tid, .nframes = n, .weight = 1000000 };
    memcpy(rec, &s, sizeof s);
    memcpy(rec + sizeof s, ips, n * 8u);
    store_fix_put(&perf, rec, s.h.len);
}

static void commit(struct seg_writer *sw, uint32_t tid, uint32_t ring, struct store_fix_ring *r)
{
    store_fix_block(sw, r->raw, r->n, tid, ring, 0, &r->st);
}

static struct store_fix_meta meta, meta2;

static void meta_add(uint16_t kind, uint32_t id, const uint8_t *p, int n)
{
    store_fix_meta_add(&meta, kind, id, p, n);
}

/* The second process's metadata: the executable mappings of this program
 * and of libc as the agent publishes them (D9_META_OBJECT), no map records. */
static void objects(void)
{
    struct sym_map *m;
    size_t n;
    int rc = sym_maps_read((uint32_t)getpid(), &m, &n);
    if (rc)
        store_fix_die("sym_maps_read", rc);
    uint32_t id = 1;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].exec || m[i].path[0] != '/')
            continue;
        struct d9_meta_object o = { .start = m[i].start, .end = m[i].end, .pgoff = m[i].pgoff };
        uint8_t p[512];
        store_fix_meta_add(&meta2, D9_META_OBJECT, id++, p, shm_meta_encode_object(p, sizeof p, &o, NULL, m[i].path));
    }
    sym_maps_free(m, n);
}

/* The maps of this process, plus LIB and TLIB (when given) at TSK_LIB_BASE. */
static long maps_records(char **argv, int argc, uint8_t *out, size_t cap)
{
    struct sym_map *m;
    size_t n;
    int rc = sym_maps_read((uint32_t)getpid(), &m, &n);
    if (rc)
        store_fix_die("sym_maps_read", rc);
    struct sym_map *all = calloc(n + 2, sizeof *all);
    if (!all)
        store_fix_die("calloc", -ENOMEM);
    memcpy(all, m, n * sizeof *m);
    size_t k = n;
    for (int a = 2, i = 0; a + 1 < argc && i < 2; a += 2, i++) {
        uint64_t start = TSK_LIB_BASE + (uint64_t)i * TSK_LIB_SPAN;
        all[k++] = (struct sym_map){ .start = start, .end = start + TSK_LIB_SPAN, .pgoff = 0,
                                     .exec = 1, .path = argv[a] };
    }
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    long len = sym_maps_encode(all, k, "", 0, TSK_T0, &st, out, cap);
    free(all);
    sym_maps_free(m, n);
    return len;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc == 3 || argc == 5 || argc > 7 ||
        (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(stderr, "usage: tool_store_known DIR [LIB OFF [TLIB TOFF [AOFF]]]\n");
        return 2;
    }
    const char *dir = argv[1];
    struct idx *x = store_fix_create(dir);
    int rc;
    uint8_t p[512];
    meta_add(D9_META_RUNTIME, 1, p, shm_meta_encode_runtime(p, sizeof p, "web"));
    meta_add(D9_META_LOCATION, 1, p, shm_meta_encode_location(p, sizeof p, "src/short.c", 11, "short_poll"));
    meta_add(D9_META_LOCATION, 2, p, shm_meta_encode_location(p, sizeof p, "src/long.c", 22, "long_poll"));
    meta_add(D9_META_SCHEMA, SYM_MAP_SCHEMA_ID, p, sym_map_schema_payload(p, sizeof p));

    /* w0: a normal worker; its first poll wakes three tasks */
    uint64_t t = TSK_T0, task = 100;
    for (unsigned c = 0; c < 5; c++) {
        for (unsigned k = 0; k < 3; k++) {
            if (c == 0 && k == 0) {
                struct d9_rec_poll_start s = { { sizeof s, D9_REC_POLL_START, 0, t }, task, 1, 1, 0 };
                store_fix_put(&rings[0], &s, sizeof s);
                for (unsigned i = 0; i < 3; i++)
                    wake(0, t + (10 + 10 * i) * TSK_US, task, woken[i], i == 1 ? 2 : 1);
                struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, t + 100 * TSK_US },
                                             task, 1, 0, 0 };
                store_fix_put(&rings[0], &e, sizeof e);
                facts[0].polls++;
                facts[0].busy += 100 * TSK_US;
                seen(0, t);
                t += 100 * TSK_US;
                task++;
            } else {
                t = poll(0, task++, 1, t, 100 * TSK_US);
            }
            t += 50 * TSK_US;
        }
        worker_rec(0, D9_REC_WORKER_PARK, t, (c + 1) * TSK_US);
        t += 1000 * TSK_US;
        worker_rec(0, D9_REC_WORKER_UNPARK, t, 5000 + c * 100);
        t += 10 * TSK_US;
    }
    poll(0, task++, 1, t, 100 * TSK_US);

    /* w1: saturated, 40 polls back to back, one short park */
    t = TSK_T0 + 5 * TSK_US;
    for (unsigned k = 0; k < 40; k++) {
        t = poll(1, 20000 + k, 1, t, 200 * TSK_US) + 10 * TSK_US;
        if (k == 19) {
            worker_rec(1, D9_REC_WORKER_PARK, t, 3000 * TSK_US);
            t += 10 * TSK_US;
            worker_rec(1, D9_REC_WORKER_UNPARK, t, 2000 * TSK_US);
            t += 10 * TSK_US;
        }
    }

    /* w2: a long poll preempted (the park after it carries the wait) */
    t = TSK_T0 + 7 * TSK_US;
    t = poll(2, 30000, 1, t, 100 * TSK_US) + 50 * TSK_US;
    t = poll(2, 20005 + 4096, 2, t, 60000 * TSK_US) + 10 * TSK_US;
    worker_rec(2, D9_REC_WORKER_PARK, t, 25000 * TSK_US);
    t += 500 * TSK_US;
    worker_rec(2, D9_REC_WORKER_UNPARK, t, 40 * TSK_US);
    t += 10 * TSK_US;
    t = poll(2, 30001, 1, t, 100 * TSK_US) + 10 * TSK_US;
    poll(2, 30002, 1, t, 100 * TSK_US);

    /* CPU samples on w0's thread, innermost first */
    uint64_t libc_ip = (uint64_t)(uintptr_t)&qsort + 4, own_leaf = (uint64_t)(uintptr_t)&tsk_leaf + 1;
    uint64_t own_outer = (uint64_t)(uintptr_t)&tsk_outer + 6, own_main = (uint64_t)(uintptr_t)&main + 20;
    uint64_t st1[] = { own_leaf, own_outer, own_main };
    uint64_t st2[] = { libc_ip, own_outer, own_main };
    sample(TSK_T0 + 50 * TSK_US, st1, 3);
    sample(TSK_T0 + 60 * TSK_US, st2, 3);
    if (argc >= 4) {
        uint64_t lib_ip = TSK_LIB_BASE + strtoull(argv[3], NULL, 0);
        uint64_t st3[5] = { lib_ip, own_outer, own_main, 0, 0 };
        uint16_t n3 = 3;
        if (argc >= 6) {
            /* a trampoline between the library's frame and the program's:
             * a return address, looked up at ip - 1 */
            uint64_t tramp_ip = TSK_LIB_BASE + TSK_LIB_SPAN + strtoull(argv[5], NULL, 0) + 1;
            uint64_t with[5] = { lib_ip, tramp_ip, own_outer, own_main, 0 };
            memcpy(st3, with, sizeof with);
            n3 = 4;
        }
        if (argc >= 7) {
            /* and a frame of LIB at AOFF (looked up at ip - 1) under the trampoline */
            uint64_t alias_ip = TSK_LIB_BASE + strtoull(argv[6], NULL, 0) + 1;
            uint64_t with[5] = { st3[0], st3[1], alias_ip, own_outer, own_main };
            memcpy(st3, with, sizeof with);
            n3 = 5;
        }
        sample(TSK_T0 + 70 * TSK_US, st3, n3);
    }

    int64_t process_id;
    struct idx_process ip = { .pid = TSK_PID, .start_time = 77, .comm = "known",
                              .exe = "/known", .first_ns = TSK_T0 };
    if ((rc = idx_process_upsert(x, &ip, &process_id)))
        store_fix_die("idx_process_upsert", rc);
    if ((rc = idx_runtime_upsert(x, process_id, 1, "web")))
        store_fix_die("idx_runtime_upsert", rc);
    for (unsigned w = 0; w < TSK_WORKERS; w++) {
        char name[16];
        snprintf(name, sizeof name, "web-%u", w);
        if ((rc = idx_thread_upsert(x, process_id, TSK_TID0 + w, w, 1, name, TSK_T0, 0, 0)))
            store_fix_die("idx_thread_upsert", rc);
    }
    char exe[512] = "/known";
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0)
        exe[l] = 0;
    struct seg_proc_info pi = { .pid = TSK_PID, .start_time = 77, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "known", .comm = "known", .exe = exe };
    struct seg_writer *sw;
    if ((rc = seg_writer_open(&sw, dir, 1, &pi, meta.b, meta.len)))
        store_fix_die("seg_writer_open", rc);
    static uint8_t mapbuf[1 << 16];
    long mn = maps_records(argv, argc, mapbuf, sizeof mapbuf);
    if (mn <= 0)
        store_fix_die("maps", mn < 0 ? (int)mn : -ENODATA);
    if ((rc = seg_writer_add_data(sw, TSK_PID, SYM_SEG_RING, 0, 0, mapbuf, (size_t)mn)) < 0)
        store_fix_die("maps block", rc);
    for (unsigned w = 0; w < TSK_WORKERS; w++)
        commit(sw, TSK_TID0 + w, w, &rings[w]);
    commit(sw, TSK_PID, TSK_PERF_RING, &perf);
    struct seg_summary sum;
    if ((rc = seg_writer_seal(sw, &sum)) || (rc = commit_with_rollups(x, process_id, &sum, dir)))
        store_fix_die("seal/index", rc);
    seg_writer_free(sw);

    /* a process the collector never saw alive: no map records, only the
     * objects its agent published; its samples must be named all the same */
    objects();
    store_fix_free(&perf);
    sample_tid = TSK_TID2;
    uint64_t st4[] = { own_leaf, own_outer, own_main };
    uint64_t st5[] = { libc_ip, own_leaf + 4, own_outer, own_main };
    sample(TSK_T0 + 80 * TSK_US, st4, 3);
    sample(TSK_T0 + 90 * TSK_US, st5, 4);
    int64_t process_id2;
    struct idx_process ip2 = { .pid = TSK_PID2, .start_time = 78, .comm = "objects",
                               .exe = "/objects", .first_ns = TSK_T0 };
    if ((rc = idx_process_upsert(x, &ip2, &process_id2)))
        store_fix_die("idx_process_upsert", rc);
    struct seg_proc_info pi2 = { .pid = TSK_PID2, .start_time = 78, .clock_source = D9_CLOCK_MONOTONIC,
                                 .host = "known", .comm = "objects", .exe = exe };
    if ((rc = seg_writer_open(&sw, dir, 2, &pi2, meta2.b, meta2.len)))
        store_fix_die("seg_writer_open", rc);
    commit(sw, TSK_PID2, TSK_PERF_RING, &perf);
    if ((rc = seg_writer_seal(sw, &sum)) || (rc = commit_with_rollups(x, process_id2, &sum, dir)))
        store_fix_die("seal/index", rc);
    seg_writer_free(sw);
    idx_close(x);
    for (unsigned w = 0; w < TSK_WORKERS; w++) {
        const struct facts *f = &facts[w];
        printf("worker %u polls %" PRIu64 " parks %" PRIu64 " waits %" PRIu64 " wait_sum %" PRIu64
               " wait_max %" PRIu64 " busy %" PRIu64 "\n", w, f->polls, f->parks, f->waits,
               f->wait_sum, f->wait_max, f->busy);
    }
    for (unsigned i = 0; i < 3; i++)
        printf("wake %" PRIu64 " poll %" PRIu64 " tid %u\n", woken[i], woken_poll[i], woken_tid[i]);
    return 0;
}
