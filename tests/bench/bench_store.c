/*
 * bench_store.c — a large store with every kind of record, for timing the d9
 * commands that read records (sched, top-polls, events, flame, export, sql,
 * serve) before and after a change of the query layer.
 *
 * Builds a store of about N records (default 50 M) the way the collector
 * lays one out: one process, 8 worker threads whose packed DATA blocks
 * (2048 records each) overlap in time, segments of about 4 M records, every
 * block in the index. A worker's cycle: worker_unpark (schedstat read),
 * six polls at 64 locations, a wake of another worker's next task, a queue
 * depth, a custom event "request" (path, status, ms), every fourth cycle a
 * task_spawn and a task_terminate, worker_park. Every segment starts with
 * the "d9.map" records of this program's own memory maps (so frames name
 * against real ELF files: this program and libc), and the collector's perf
 * ring gets one CPU sample per 64 records with stacks made of addresses in
 * this program and in libc.
 *
 * Usage: bench_store DIR [RECORDS]   (DIR must not exist). Prints
 * "store.<key> <value>" lines: records written, pid, time range.
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

#define BST_THREADS     8u
#define BST_BLOCK_RECS  2048u
#define BST_SEG_RECS    (4u * 1024u * 1024u)
#define BST_LOCS        64u
#define BST_PID         4343u
#define BST_T0          2000000000ull
#define BST_PERF_RING   0xffffffffu     /* the collector's perf pseudo ring */
#define BST_SAMPLE_EVERY 64u            /* records per CPU sample */
#define BST_POLLS       6u              /* polls per worker cycle */
#define BST_RAW_MAX     (BST_BLOCK_RECS * 64u)
#define BST_SCHEMA      1u

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
    exit(1);
}

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2a9a43ull;
    return x ^ (x >> 33);
}

/* Functions of this program a stack can hold (named from its own .symtab). */
static volatile unsigned bst_sink;
__attribute__((noinline)) static void bst_leaf(void) { bst_sink = bst_sink * 3u + 1u; }
__attribute__((noinline)) static void bst_middle(void) { bst_leaf(); bst_sink = bst_sink * 5u + 2u; }
__attribute__((noinline)) static void bst_outer(void) { bst_middle(); bst_sink = bst_sink * 7u + 3u; }

struct worker {
    uint64_t t, task, cycle;
    uint32_t seq;
};

struct gen {
    const char *dir;
    struct idx *x;
    int64_t process_id;
    struct seg_writer *w;
    uint64_t seg_id, seg_recs, records;
    uint8_t meta[BST_LOCS * 64 + 512];
    size_t meta_len;
    struct worker wk[BST_THREADS];
    uint32_t perf_seq, map_seq;
    uint64_t t_min, t_max;
    uint8_t *raw, *dst, *perf;
    size_t perf_len;
    uint32_t perf_n;
    uint64_t stacks[6][8];
    uint16_t stack_n[6];
    struct sym_maps_state maps;
    uint8_t mapbuf[1 << 16];
};

static void meta_add(struct gen *g, uint16_t kind, uint32_t id, const uint8_t *p, int n)
{
    if (n <= 0)
        die("metadata", -EINVAL);
    struct d9_meta_hdr h = { (uint16_t)((sizeof h + (size_t)n + 7) & ~7u), kind, id };
    memset(g->meta + g->meta_len, 0, h.len);
    memcpy(g->meta + g->meta_len, &h, sizeof h);
    memcpy(g->meta + g->meta_len + sizeof h, p, (size_t)n);
    g->meta_len += h.len;
}

/* Pack raw[0, n) (nrec records, stats st) into one DATA block of ring. */
static void commit_block(struct gen *g, uint32_t tid, uint32_t ring, uint32_t generation,
                         const uint8_t *raw, size_t n, const struct seg_data_stats *st)
{
    struct pack_state pk;
    pack_init(&pk);
    long e = pack_records(&pk, raw, n, g->dst + PACK_PREFIX, PACK_BOUND(n) - PACK_PREFIX);
    if (e < 0)
        die("pack_records", (int)e);
    size_t plen = pack_finish(g->dst, (size_t)e, (uint32_t)n);
    uint8_t *payload;
    int rc = seg_writer_data_reserve(g->w, (plen + 7) & ~(size_t)7, &payload);
    if (rc)
        die("seg_writer_data_reserve", rc);
    memcpy(payload, g->dst, plen);
    rc = seg_writer_data_commit(g->w, tid, ring, generation, 0, plen, st,
                                crc32c_update(0, payload, plen), SEG_BF_PACKED);
    if (rc)
        die("seg_writer_data_commit", rc);
    g->seg_recs += st->nrec;
    g->records += st->nrec;
}

static void seg_open(struct gen *g, uint64_t ts)
{
    char exe[512] = "/bench";
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0)
        exe[l] = 0;
    struct seg_proc_info pi = { .pid = BST_PID, .start_time = 88, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "bench", .comm = "bench_store", .exe = exe };
    int rc = seg_writer_open(&g->w, g->dir, ++g->seg_id, &pi, g->meta, g->meta_len);
    if (rc)
        die("seg_writer_open", rc);
    g->seg_recs = 0;
    /* the maps, as the collector writes them at the start of every segment */
    sym_maps_state_reset(&g->maps);
    long n = sym_maps_emit((uint32_t)getpid(), ts, &g->maps, g->mapbuf, sizeof g->mapbuf);
    if (n < 0)
        die("sym_maps_emit", (int)n);
    if (n > 0 && (rc = seg_writer_add_data(g->w, BST_PID, SYM_SEG_RING, 0, 0, g->mapbuf,
                                           (size_t)n)) < 0)
        die("maps block", rc);
}

static void seg_seal(struct gen *g)
{
    struct seg_summary sum;
    int rc = seg_writer_seal(g->w, &sum);
    if (rc == 0)
        rc = commit_with_rollups(g->x, g->process_id, &sum, g->dir);
    if (rc)
        die("seal/index", rc);
    seg_writer_free(g->w);
    g->w = NULL;
}

static size_t put(uint8_t *raw, size_t n, const void *rec, size_t len, struct seg_data_stats *st)
{
    struct d9_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    memcpy(raw + n, rec, len);
    if (st->nrec == 0 || h.ts < st->t_min)
        st->t_min = h.ts;
    if (h.ts > st->t_max)
        st->t_max = h.ts;
    st->counts[h.type]++;
    st->nrec++;
    return n + len;
}

static void sample(struct gen *g, uint32_t tid, uint64_t ts, uint64_t h)
{
    unsigned k = (unsigned)(h % 6);
    uint8_t rec[sizeof(struct d9_rec_stack) + 8 * 8];
    struct d9_rec_stack s = { .h = { (uint16_t)(sizeof s + g->stack_n[k] * 8u),
                                     D9_REC_CPU_SAMPLE, g->perf_seq++, ts },
                              .tid = tid, .nframes = g->stack_n[k], .weight = 10101010 };
    memcpy(rec, &s, sizeof s);
    memcpy(rec + sizeof s, g->stacks[k], g->stack_n[k] * 8u);
    if (g->perf_len + s.h.len > BST_RAW_MAX)
        return;
    memcpy(g->perf + g->perf_len, rec, s.h.len);
    g->perf_len += s.h.len;
    g->perf_n++;
}

/* One block of worker i: whole cycles until BST_BLOCK_RECS records. */
static void add_block(struct gen *g, unsigned i)
{
    struct worker *w = &g->wk[i];
    struct seg_data_stats st = { 0 };
    size_t n = 0;
    uint16_t wk = (uint16_t)i;
    while (st.nrec + 24 <= BST_BLOCK_RECS) {
        uint64_t h = hash64(w->cycle++ * BST_THREADS + i);
        struct d9_rec_worker un = { { sizeof un, D9_REC_WORKER_UNPARK, w->seq++, w->t }, 1, wk, 0,
                                    w->cycle * 50000, h % 30000 };
        n = put(g->raw, n, &un, sizeof un, &st);
        w->t += 500;
        for (unsigned p = 0; p < BST_POLLS; p++) {
            uint64_t task = ++w->task + ((uint64_t)i << 40);
            uint64_t hh = hash64(task);
            uint64_t dur = 200 + hh % 20000 + (hh % 1000 == 0 ? 2000000 : 0);
            struct d9_rec_poll_start s = { { sizeof s, D9_REC_POLL_START, w->seq++, w->t }, task,
                                           1 + (uint32_t)(hh >> 32) % BST_LOCS, 1, wk };
            struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, w->seq++, w->t + dur }, task,
                                         1, wk, 0 };
            n = put(g->raw, n, &s, sizeof s, &st);
            n = put(g->raw, n, &e, sizeof e, &st);
            if ((st.nrec & (BST_SAMPLE_EVERY - 1)) < 2)
                sample(g, 300 + i, w->t + dur / 2, hh);
            if (p == 2) {
                unsigned other = (i + 1) % BST_THREADS;
                struct d9_rec_wake wa = { { sizeof wa, D9_REC_WAKE, w->seq++, w->t + dur + 10 },
                                          task, g->wk[other].task + 1 + ((uint64_t)other << 40),
                                          1, (uint16_t)other, 0 };
                n = put(g->raw, n, &wa, sizeof wa, &st);
            }
            w->t += dur + 100 + hh % 400;
        }
        struct d9_rec_queue_depth q = { { sizeof q, D9_REC_QUEUE_DEPTH, w->seq++, w->t },
                                        h % 17, 1, wk, 0 };
        n = put(g->raw, n, &q, sizeof q, &st);
        /* custom "request": path (str), status (u64), ms (f64) */
        char path[16];
        int pl = snprintf(path, sizeof path, "/api/%u", (unsigned)(h % 100));
        size_t strpad = ((4u + (size_t)pl) + 7u) & ~(size_t)7u;
        uint8_t crec[64];
        memset(crec, 0, sizeof crec);
        struct d9_rec_custom c = { { (uint16_t)(sizeof c + strpad + 16), D9_REC_CUSTOM, w->seq++,
                                     w->t + 5 }, BST_SCHEMA, (uint32_t)(strpad + 16), D9_TASK_NONE };
        uint32_t plen = (uint32_t)pl;
        uint64_t status = h % 5 ? 200 : 500;
        double ms = (double)(h % 10000) / 100.0;
        memcpy(crec, &c, sizeof c);
        memcpy(crec + sizeof c, &plen, 4);
        memcpy(crec + sizeof c + 4, path, (size_t)pl);
        memcpy(crec + sizeof c + strpad, &status, 8);
        memcpy(crec + sizeof c + strpad + 8, &ms, 8);
        n = put(g->raw, n, crec, c.h.len, &st);
        if (w->cycle % 4 == 0) {
            struct d9_rec_task sp = { { sizeof sp, D9_REC_TASK_SPAWN, w->seq++, w->t + 10 },
                                      w->task + 1000000, 1 + (uint32_t)(h % BST_LOCS), 1, 0 };
            struct d9_rec_task te = { { sizeof te, D9_REC_TASK_TERMINATE, w->seq++, w->t + 20 },
                                      w->task + 1000000, 0, 1, 0 };
            n = put(g->raw, n, &sp, sizeof sp, &st);
            n = put(g->raw, n, &te, sizeof te, &st);
        }
        w->t += 100;
        struct d9_rec_worker pk = { { sizeof pk, D9_REC_WORKER_PARK, w->seq++, w->t }, 1, wk, 0,
                                    w->cycle * 50000 + 40000, h % 7000 };
        n = put(g->raw, n, &pk, sizeof pk, &st);
        w->t += 2000 + h % 8000;
    }
    commit_block(g, 300 + i, i, 1, g->raw, n, &st);
    if (g->t_min == 0 || st.t_min < g->t_min)
        g->t_min = st.t_min;
    if (st.t_max > g->t_max)
        g->t_max = st.t_max;
}

/* The perf ring's samples gathered over a round of worker blocks. */
static void flush_samples(struct gen *g)
{
    if (!g->perf_n)
        return;
    /* samples of several workers: ordered by time, as the collector writes them */
    struct seg_data_stats st = { 0 };
    size_t n = 0, off = 0;
    uint8_t *sorted = g->raw;
    size_t cnt = g->perf_n;
    const uint8_t **v = malloc(cnt * sizeof *v);
    if (!v)
        die("malloc", -ENOMEM);
    for (size_t k = 0; k < cnt; k++) {
        v[k] = g->perf + off;
        struct d9_rec_hdr h;
        memcpy(&h, v[k], sizeof h);
        off += h.len;
    }
    for (size_t a = 1; a < cnt; a++) {         /* insertion sort: nearly ordered already */
        const uint8_t *x = v[a];
        struct d9_rec_hdr hx;
        memcpy(&hx, x, sizeof hx);
        size_t b = a;
        while (b > 0) {
            struct d9_rec_hdr hb;
            memcpy(&hb, v[b - 1], sizeof hb);
            if (hb.ts <= hx.ts)
                break;
            v[b] = v[b - 1];
            b--;
        }
        v[b] = x;
    }
    for (size_t k = 0; k < cnt; k++) {
        struct d9_rec_hdr h;
        memcpy(&h, v[k], sizeof h);
        h.seq = g->perf_seq++;
        uint8_t tmp[sizeof(struct d9_rec_stack) + 8 * 8];
        memcpy(tmp, v[k], h.len);
        memcpy(tmp, &h, sizeof h);
        n = put(sorted, n, tmp, h.len, &st);
    }
    free(v);
    commit_block(g, BST_PID, BST_PERF_RING, 0, sorted, n, &st);
    g->perf_len = 0;
    g->perf_n = 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || argv[1][0] == '-') {
        fprintf(argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? stdout : stderr,
                "usage: bench_store DIR [RECORDS]\n"
                "  writes a store of RECORDS (default 50000000) generated records into the new\n"
                "  directory DIR, and prints its facts (store.records, store.pid, ...)\n");
        return argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
    }
    char *end;
    uint64_t want = argc > 2 ? strtoull(argv[2], &end, 10) : 50000000ull;
    if (argc > 2 && (*end || !want))
        die("RECORDS: not a positive number", -EINVAL);
    if (mkdir(argv[1], 0700) < 0)
        die(argv[1], -errno);
    struct gen *g = calloc(1, sizeof *g);
    if (!g)
        die("calloc", -ENOMEM);
    g->dir = argv[1];
    g->raw = malloc(BST_RAW_MAX);
    g->dst = malloc(PACK_BOUND(BST_RAW_MAX));
    g->perf = malloc(BST_RAW_MAX);
    if (!g->raw || !g->dst || !g->perf)
        die("malloc", -ENOMEM);
    /* stacks, innermost first: libc frames under this program's frames */
    const uint64_t libc[3] = { (uint64_t)(uintptr_t)&qsort + 8, (uint64_t)(uintptr_t)&memcpy + 4,
                               (uint64_t)(uintptr_t)&strtoull + 12 };
    const uint64_t own[3] = { (uint64_t)(uintptr_t)&bst_leaf + 1,
                              (uint64_t)(uintptr_t)&bst_middle + 6,
                              (uint64_t)(uintptr_t)&bst_outer + 6 };
    for (unsigned k = 0; k < 6; k++) {
        unsigned d = 0;
        if (k < 3)
            g->stacks[k][d++] = libc[k];
        for (unsigned j = k % 3; j < 3; j++)
            g->stacks[k][d++] = own[j];
        g->stacks[k][d++] = (uint64_t)(uintptr_t)&main + 20;
        g->stack_n[k] = (uint16_t)d;
    }
    int rc = idx_open(&g->x, g->dir);
    if (rc)
        die("idx_open", rc);
    uint8_t p[512];
    meta_add(g, D9_META_RUNTIME, 1, p, shm_meta_encode_runtime(p, sizeof p, "bench"));
    for (uint32_t l = 1; l <= BST_LOCS; l++) {
        char f[32], fn[32];
        snprintf(f, sizeof f, "src/handler%02u.c", l);
        snprintf(fn, sizeof fn, "handle_%02u", l);
        meta_add(g, D9_META_LOCATION, l, p, shm_meta_encode_location(p, sizeof p, f, 10 * l, fn));
    }
    static const uint8_t types[3] = { D9_FT_STR, D9_FT_U64, D9_FT_F64 };
    static const char *const fields[3] = { "path", "status", "ms" };
    meta_add(g, D9_META_SCHEMA, BST_SCHEMA, p,
             shm_meta_encode_schema(p, sizeof p, "request", 3, types, fields));
    meta_add(g, D9_META_SCHEMA, SYM_MAP_SCHEMA_ID, p, sym_map_schema_payload(p, sizeof p));
    struct idx_process ip = { .pid = BST_PID, .start_time = 88, .comm = "bench_store",
                              .exe = "/bench", .first_ns = BST_T0 };
    if ((rc = idx_process_upsert(g->x, &ip, &g->process_id)))
        die("idx_process_upsert", rc);
    for (unsigned i = 0; i < BST_THREADS; i++) {
        g->wk[i].t = BST_T0 + i * 37;
        char name[16];
        snprintf(name, sizeof name, "worker%u", i);
        if ((rc = idx_thread_upsert(g->x, g->process_id, 300 + i, i, 1, name, BST_T0, 0, 0)))
            die("idx_thread_upsert", rc);
    }
    if ((rc = idx_runtime_upsert(g->x, g->process_id, 1, "bench")))
        die("idx_runtime_upsert", rc);
    seg_open(g, BST_T0);
    while (g->records < want) {
        for (unsigned i = 0; i < BST_THREADS && g->records < want; i++)
            add_block(g, i);
        flush_samples(g);
        if (g->seg_recs >= BST_SEG_RECS && g->records < want) {
            seg_seal(g);
            seg_open(g, g->t_max);
        }
    }
    seg_seal(g);
    idx_close(g->x);
    printf("store.records %" PRIu64 "\nstore.pid %u\nstore.t_min %" PRIu64 "\nstore.t_max %" PRIu64
           "\nstore.segments %" PRIu64 "\n", g->records, BST_PID, g->t_min, g->t_max, g->seg_id);
    free(g->raw);
    free(g->dst);
    free(g->perf);
    free(g);
    return 0;
}
