/*
 * tool_store_edges.c — a property check of window edges, for
 * test_edges_exact.sh: a window answered from the rollups of its whole
 * buckets plus its two edges (collector/query/q_agg.h) equals the answer
 * from every record of the window (Q_AGG_RAW) exactly, and both equal the
 * facts the generator wrote.
 *
 * The store (random, from SEED): two processes (pids EDG_PID0, +1), runtime
 * 1 in the first, 1 and 2 in the second, four threads each: workers 0, 1
 * and 2, and a fourth thread (its own ring) that takes over worker 2 before
 * the third one stops, so two threads share a worker in the same seconds.
 * About 8 s of records from EDG_T0, EDG_SEGS segments per process that
 * rotate inside a second, each thread's records cut into blocks of 1 to
 * EDG_BLOCK_MAX records, the blocks of a segment written in the order of
 * their first record's time (threads interleave in the file, as the
 * collector's drain writes them). A thread does: short polls on six
 * locations, long polls (0.3 .. 1.8 s: across buckets and rotations),
 * nested polls (the outer one ending first every third time), polls that
 * never end, a start replaced by a second start of its task (the first one
 * is unfinished), parks with sampled and unsampled waits (CPU time rising),
 * wakes of tasks polled later, and custom events of schema 1 (from the
 * segment's first META block) and schema 2 (defined by a META block in the
 * middle of each segment's blocks). The third segment of the second
 * process has no stored rollups (its whole buckets come from its records,
 * with a line on stderr per query).
 *
 * Then, on the store as written, for EDG windows random windows (random
 * nanoseconds, bucket-aligned ends, windows inside one bucket, edges one
 * nanosecond around poll starts and ends, both pids and each one), and
 * seven windows with an edge inside each process's first long poll, it
 * compares:
 *   raw-vs-edge  q_agg_run (0 and Q_AGG_LOCS) with the same plus Q_AGG_RAW:
 *                every worker field (polls, busy, parks, parked, waits,
 *                wait sum and max, CPU first/last) and location field
 *                (count, unfinished, sum, max, p50..p999);
 *   raw-vs-facts Q_AGG_RAW's counts, sums and maxima with the generator's
 *                own (busy and CPU are not modelled);
 *   segment      per segment meeting an edge: q_edge_rollup's bytes (with
 *                and without look-back) against rollup_file_only's, the
 *                poll, worker (look-back only), count and field sections
 *                byte for byte. The wake->poll delays of an edge are not
 *                exact (a wake's poll may lie in blocks the edge does not
 *                read): counted apart as "delay-differs", not a mismatch.
 * Each mismatch prints one line (the first EDG_SHOW); the last line is
 * "windows W checks C mismatches M delay-differs D".
 *
 * Usage: tool_store_edges DIR SEED NWINDOWS   (DIR must not exist)
 * Before the checks it prints "pids P0 P1", "t0 T0", "end END" and, per
 * process, "inside PID START END" for a long finished poll that ends in
 * the first half of the records (for windows whose edge is inside it),
 * and "shared PID FROM TO" while two threads run worker 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "collector/query/q_agg.h"
#include "collector/query/q_edge.h"
#include "collector/query/q_store.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/rollup.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"
#include "store_fix.h"

#define EDG_PID0      7100u
#define EDG_PROCS     2u
#define EDG_THREADS   4u
#define EDG_WORKERS   3u
#define EDG_RT_MAX    3u              /* runtimes 1, 2 */
#define EDG_LOCS      7u              /* locations 1..6 */
#define EDG_SEGS      4u
#define EDG_T0        20000000000ull
#define EDG_LEN       8000000000ull
#define EDG_END       (EDG_T0 + EDG_LEN)
#define EDG_BLOCK_MAX 48u
#define EDG_SHOW      40u
#define EDG_KINDS     64u
#define EDG_US        1000ull
#define EDG_MS        1000000ull
#define EDG_S         1000000000ull

/* ---- the facts written ------------------------------------------------------ */

struct poll_fact {
    unsigned p, rt, w, loc;
    uint64_t ts, dur;
    int fin;
};

struct wrec_fact {                  /* a park or unpark record */
    unsigned p, rt, w;
    uint64_t ts, wait;
    int park, sampled;
    uint64_t parked;                /* park: its interval, if closed in its segment */
    int closed;
};

static struct poll_fact *polls;
static size_t npolls, cappolls;
static struct wrec_fact *wrecs;
static size_t nwrecs, capwrecs;
static uint64_t cut[EDG_PROCS][EDG_SEGS - 1];
static struct store_fix_ring rings[EDG_PROCS][EDG_SEGS][EDG_THREADS];
static uint64_t inside[EDG_PROCS][2];
static uint64_t shared[EDG_PROCS][2];  /* when both threads of worker 2 run */
static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? rng % n : 0;
}

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return p;
    size_t c = *cap ? *cap * 2 : 1024;
    void *q = realloc(p, c * size);
    if (!q)
        store_fix_die("facts", -ENOMEM);
    *cap = c;
    return q;
}

static unsigned seg_of(unsigned p, uint64_t ts)
{
    unsigned k = 0;
    while (k < EDG_SEGS - 1 && ts >= cut[p][k])
        k++;
    return k;
}

/* ---- one thread's records --------------------------------------------------- */

struct thr {
    unsigned p, th, rt, w;
    uint64_t t, cpu, task;
    size_t open_fact;               /* the open poll of a replaced start */
};

static void put(struct thr *t, void *rec, size_t len)
{
    struct d9_rec_hdr h;
    memcpy(&h, rec, sizeof h);
    store_fix_put(&rings[t->p][seg_of(t->p, h.ts)][t->th], rec, len);
}

static size_t start(struct thr *t, uint64_t task, unsigned loc, uint64_t ts)
{
    struct d9_rec_poll_start s = { { sizeof s, D9_REC_POLL_START, 0, ts }, task, loc,
                                   (uint16_t)t->rt, (uint16_t)t->w };
    put(t, &s, sizeof s);
    polls = grow(polls, &cappolls, npolls, sizeof *polls);
    polls[npolls] = (struct poll_fact){ t->p, t->rt, t->w, loc, ts, 0, 0 };
    return npolls++;
}

/* The end of task at ts, which closes poll fact f (SIZE_MAX: none). */
static void end(struct thr *t, uint64_t task, uint64_t ts, size_t f)
{
    struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, ts }, task, (uint16_t)t->rt,
                                 (uint16_t)t->w, 0 };
    put(t, &e, sizeof e);
    if (f != SIZE_MAX && seg_of(t->p, polls[f].ts) == seg_of(t->p, ts)) {
        polls[f].fin = 1;
        polls[f].dur = ts - polls[f].ts;
    }
}

static void worker_rec(struct thr *t, uint8_t type, uint64_t ts, uint64_t wait, int sampled)
{
    t->cpu += 1000 + rnd(500 * EDG_US);
    struct d9_rec_worker r = { { sizeof r, type, 0, ts }, (uint16_t)t->rt, (uint16_t)t->w,
                               sampled ? 0 : D9_WORKER_UNSAMPLED, sampled ? t->cpu : 0,
                               sampled ? wait : 0 };
    put(t, &r, sizeof r);
    wrecs = grow(wrecs, &capwrecs, nwrecs, sizeof *wrecs);
    wrecs[nwrecs++] = (struct wrec_fact){ t->p, t->rt, t->w, ts, sampled ? wait : 0,
                                          type == D9_REC_WORKER_PARK, sampled, 0, 0 };
}

static void wake(struct thr *t, uint64_t ts, uint64_t wakee)
{
    struct d9_rec_wake r = { { sizeof r, D9_REC_WAKE, 0, ts }, t->task, wakee, (uint16_t)t->rt,
                             D9_WORKER_NONE, 0 };
    put(t, &r, sizeof r);
}

static void event(struct thr *t, uint64_t ts, uint32_t schema)
{
    struct {
        struct d9_rec_custom c;
        uint64_t a, b;
    } r = { { { sizeof r, D9_REC_CUSTOM, 0, ts }, schema, 16, D9_TASK_NONE }, rnd(1000),
            (uint64_t)(int64_t)(500 - (int64_t)rnd(1000)) };
    put(t, &r, sizeof r);
}

static void run_thread(struct thr *t, uint64_t until)
{
    while (t->t < until) {
        unsigned a = (unsigned)rnd(200);
        uint64_t task = t->task++;
        if (a < 90) {                                   /* a short poll */
            size_t f = start(t, task, 1 + (unsigned)rnd(6), t->t);
            t->t += 5 * EDG_US + rnd(2 * EDG_MS);
            end(t, task, t->t, f);
        } else if (a == 90) {                           /* a long poll */
            size_t f = start(t, task, 6, t->t);
            t->t += 300 * EDG_MS + rnd(1500 * EDG_MS);
            end(t, task, t->t, f);
            if (polls[f].fin && !inside[t->p][0] && t->t < EDG_T0 + EDG_LEN / 2)
                inside[t->p][0] = polls[f].ts, inside[t->p][1] = t->t;
        } else if (a < 106) {                           /* nested */
            uint64_t inner = t->task++;
            size_t fo = start(t, task, 5, t->t);
            t->t += 5 * EDG_US + rnd(EDG_MS);
            size_t fi = start(t, inner, 2, t->t);
            t->t += 5 * EDG_US + rnd(40 * EDG_MS);
            if (rnd(3) == 0) {                          /* the outer one ends first */
                end(t, task, t->t, fo);
                t->t += 3 * EDG_US + rnd(EDG_MS);
                end(t, inner, t->t, fi);
            } else {
                end(t, inner, t->t, fi);
                t->t += 3 * EDG_US + rnd(EDG_MS);
                end(t, task, t->t, fo);
            }
        } else if (a < 109) {                           /* never ends */
            start(t, task, 1 + (unsigned)rnd(6), t->t);
        } else if (a < 113) {                           /* replaced by a second start */
            start(t, task, 3, t->t);
            t->t += 5 * EDG_US + rnd(20 * EDG_MS);
            size_t f = start(t, task, 3, t->t);
            t->t += 5 * EDG_US + rnd(EDG_MS);
            end(t, task, t->t, f);
        } else if (a < 151) {                           /* a park */
            worker_rec(t, D9_REC_WORKER_PARK, t->t, EDG_US + rnd(3 * EDG_MS), rnd(4) != 0);
            size_t pf = nwrecs - 1;
            uint64_t pts = t->t;
            t->t += 50 * EDG_US + (rnd(40) ? rnd(30 * EDG_MS) : rnd(900 * EDG_MS));
            worker_rec(t, D9_REC_WORKER_UNPARK, t->t, EDG_US + rnd(EDG_MS), rnd(4) != 0);
            if (seg_of(t->p, pts) == seg_of(t->p, t->t)) {
                wrecs[pf].closed = 1;
                wrecs[pf].parked = t->t - pts;
            }
        } else if (a < 176) {                           /* wakes of tasks polled soon */
            for (unsigned k = 0, n = 1 + (unsigned)rnd(3); k < n; k++)
                wake(t, t->t + k * EDG_US, t->task + rnd(4));
        } else {
            event(t, t->t, a < 190 ? 1 : 2);
        }
        t->t += 2 * EDG_US + rnd(3 * EDG_MS);
    }
}

/* ---- writing the store ------------------------------------------------------ */

struct blk {
    unsigned th;
    size_t off, end;
    uint64_t t_first;
};

static int by_time(const void *x, const void *y)
{
    const struct blk *a = x, *b = y;
    if (a->t_first != b->t_first)
        return a->t_first < b->t_first ? -1 : 1;
    if (a->th != b->th)
        return a->th < b->th ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

static struct store_fix_meta meta, meta2;

static void write_segment(struct idx *x, const char *dir, int64_t process_id, unsigned p,
                          unsigned k, const struct seg_proc_info *pi)
{
    struct blk *b = NULL;
    size_t nb = 0, capb = 0;
    for (unsigned th = 0; th < EDG_THREADS; th++) {
        const struct store_fix_ring *r = &rings[p][k][th];
        size_t off = 0;
        while (off < r->n) {
            size_t e = off;
            struct d9_rec_hdr h0;
            memcpy(&h0, r->raw + off, sizeof h0);
            for (unsigned m = 0, lim = 1 + (unsigned)rnd(EDG_BLOCK_MAX); m < lim && e < r->n; m++) {
                struct d9_rec_hdr h;
                memcpy(&h, r->raw + e, sizeof h);
                e += h.len;
            }
            b = grow(b, &capb, nb, sizeof *b);
            b[nb++] = (struct blk){ th, off, e, h0.ts };
            off = e;
        }
    }
    qsort(b, nb, sizeof *b, by_time);
    struct seg_writer *sw;
    int rc = seg_writer_open(&sw, dir, (uint64_t)p * 100 + k + 1, pi, meta.b, meta.len);
    if (rc)
        store_fix_die("seg_writer_open", rc);
    for (size_t i = 0; i < nb; i++) {
        if (i == nb / 2 && (rc = seg_writer_add_meta(sw, meta2.b, meta2.len)))
            store_fix_die("seg_writer_add_meta", rc);
        const struct store_fix_ring *r = &rings[p][k][b[i].th];
        struct seg_data_stats st;
        memset(&st, 0, sizeof st);
        for (size_t o = b[i].off; o < b[i].end;) {
            struct d9_rec_hdr h;
            memcpy(&h, r->raw + o, sizeof h);
            store_fix_count(&st, &h);
            o += h.len;
        }
        store_fix_block(sw, r->raw + b[i].off, b[i].end - b[i].off, 800 + p * 10 + b[i].th,
                        b[i].th, 0, &st);
    }
    free(b);
    struct seg_summary sum;
    uint8_t *ru = NULL;
    size_t n = 0;
    int none = p == 1 && k == 2;        /* no rollups: answered from its records */
    if ((rc = seg_writer_seal(sw, &sum)) || (!none && (rc = rollup_file(sum.path, &ru, &n))) ||
        (rc = idx_segment_commit_rollup(x, process_id, &sum, dir, ru, n)))
        store_fix_die("seal/index", rc);
    free(ru);
    seg_writer_free(sw);
}

static void write_store(const char *dir)
{
    uint8_t q[512];
    static const uint8_t ty[] = { D9_FT_U64, D9_FT_I64 };
    static const char *const names[] = { "n", "delta" };
    store_fix_meta_add(&meta, D9_META_RUNTIME, 1, q, shm_meta_encode_runtime(q, sizeof q, "web"));
    store_fix_meta_add(&meta, D9_META_RUNTIME, 2, q, shm_meta_encode_runtime(q, sizeof q, "bg"));
    for (unsigned l = 1; l < EDG_LOCS; l++) {
        char fn[32];
        snprintf(fn, sizeof fn, "src/l%u.c", l);
        store_fix_meta_add(&meta, D9_META_LOCATION, l, q,
                           shm_meta_encode_location(q, sizeof q, fn, l, fn + 4));
    }
    store_fix_meta_add(&meta, D9_META_SCHEMA, 1, q,
                       shm_meta_encode_schema(q, sizeof q, "req", 2, ty, names));
    store_fix_meta_add(&meta2, D9_META_SCHEMA, 2, q,
                       shm_meta_encode_schema(q, sizeof q, "late", 2, ty, names));
    struct idx *x = store_fix_create(dir);
    for (unsigned p = 0; p < EDG_PROCS; p++) {
        int64_t process_id;
        uint32_t pid = EDG_PID0 + p;
        struct idx_process ip = { .pid = pid, .start_time = 50 + p, .comm = "edges",
                                  .exe = "/edges", .first_ns = EDG_T0 };
        int rc = idx_process_upsert(x, &ip, &process_id);
        for (unsigned rt = 1; rc == 0 && rt <= 1 + p; rt++)
            rc = idx_runtime_upsert(x, process_id, (uint16_t)rt, rt == 1 ? "web" : "bg");
        for (unsigned th = 0; rc == 0 && th < EDG_THREADS; th++) {
            char name[16];
            snprintf(name, sizeof name, "w-%u", th);
            rc = idx_thread_upsert(x, process_id, 800 + p * 10 + th, th, 1, name, EDG_T0, 0, 0);
        }
        if (rc)
            store_fix_die("index", rc);
        struct seg_proc_info pi = { .pid = pid, .start_time = 50 + p,
                                    .clock_source = D9_CLOCK_MONOTONIC, .host = "edges",
                                    .comm = "edges", .exe = "/edges" };
        for (unsigned k = 0; k < EDG_SEGS; k++)
            write_segment(x, dir, process_id, p, k, &pi);
    }
    idx_close(x);
}

static void generate(void)
{
    for (unsigned p = 0; p < EDG_PROCS; p++) {
        for (unsigned k = 0; k < EDG_SEGS - 1; k++)     /* rotations inside a second */
            cut[p][k] = EDG_T0 + (k + 1) * EDG_LEN / EDG_SEGS + 1 + rnd(EDG_S - 2);
        for (unsigned th = 0; th < EDG_THREADS; th++) {
            struct thr t = { p, th, th == 1 && p == 1 ? 2 : 1, th < EDG_WORKERS ? th : 2,
                             EDG_T0 + rnd(EDG_MS), 0, 1000000ull * (p * 10 + th + 1), 0 };
            if (th == 3)                                /* takes over worker 2 */
                t.t = shared[p][0] = EDG_T0 + EDG_LEN / 2 + rnd(EDG_S);
            if (th == 2)
                shared[p][1] = EDG_T0 + EDG_LEN / 2 + EDG_S + rnd(EDG_S);
            run_thread(&t, th == 2 ? shared[p][1] : EDG_END);
        }
    }
}

/* ---- the checks ------------------------------------------------------------- */

struct wsum {
    uint64_t polls, busy, parks, parked, waits, wait_sum, wait_max, cpu_first, cpu_last;
    int have_cpu;
};

struct lsum {
    uint64_t count, unfinished, sum, max, q[4];
};

struct answer {
    struct wsum w[EDG_PROCS][EDG_RT_MAX][EDG_WORKERS];
    struct lsum l[EDG_PROCS][EDG_RT_MAX][EDG_LOCS];
};

static uint64_t nchecks, nmismatch, ndelay;

/* Mismatches per kind (what and field): "mismatches KIND N" at the end. */
static struct {
    char kind[64];
    uint64_t n;
} kinds[EDG_KINDS];
static unsigned nkinds;

static void mismatch(const char *what, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void mismatch(const char *what, const char *field, const char *fmt, ...)
{
    char k[64];
    snprintf(k, sizeof k, "%s:%s", what, field);
    unsigned i = 0;
    while (i < nkinds && strcmp(kinds[i].kind, k) != 0)
        i++;
    if (i == nkinds && nkinds < EDG_KINDS)
        snprintf(kinds[nkinds++].kind, sizeof kinds[0].kind, "%s", k);
    if (i < nkinds)
        kinds[i].n++;
    if (nmismatch++ < EDG_SHOW) {
        va_list ap;
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
    }
}

static void answer_of(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to, unsigned flags,
                      struct answer *out)
{
    memset(out, 0, sizeof *out);
    struct q_agg *a;
    struct q_agg_stats st;
    int rc = q_agg_run(s, pid, from, to, flags, "tool_store_edges", &a, &st);
    if (rc < 0)
        store_fix_die("q_agg_run", rc);
    if (st.missing)
        store_fix_die("q_agg_run left segments out", -EIO);
    size_t n;
    const struct q_agg_worker *w = q_agg_workers(a, &n);
    for (size_t i = 0; i < n; i++, w++) {
        if (w->pid < EDG_PID0 || w->pid >= EDG_PID0 + EDG_PROCS || w->runtime >= EDG_RT_MAX ||
            w->worker >= EDG_WORKERS)
            store_fix_die("a worker the store does not hold", -EINVAL);
        out->w[w->pid - EDG_PID0][w->runtime][w->worker] = (struct wsum){
            w->polls, w->busy_ns, w->parks, w->parked_ns, w->waits, w->wait_sum_ns,
            w->wait_max_ns, w->have_cpu ? w->cpu_first : 0, w->have_cpu ? w->cpu_last : 0,
            w->have_cpu };
    }
    const struct q_agg_loc *l = q_agg_locs(a, &n);
    for (size_t i = 0; i < n; i++, l++) {
        if (l->pid < EDG_PID0 || l->pid >= EDG_PID0 + EDG_PROCS || l->runtime >= EDG_RT_MAX ||
            l->loc >= EDG_LOCS)
            store_fix_die("a location the store does not hold", -EINVAL);
        out->l[l->pid - EDG_PID0][l->runtime][l->loc] = (struct lsum){
            l->count, l->unfinished, l->sum_ns, l->max_ns,
            { l->p50_ns, l->p90_ns, l->p99_ns, l->p999_ns } };
    }
    q_agg_free(a);
}

static void facts_of(uint32_t pid, uint64_t from, uint64_t to, struct answer *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < npolls; i++) {
        const struct poll_fact *f = &polls[i];
        if ((pid && pid != EDG_PID0 + f->p) || f->ts < from || f->ts > to)
            continue;
        struct lsum *l = &out->l[f->p][f->rt][f->loc];
        l->count++;
        out->w[f->p][f->rt][f->w].polls++;
        if (!f->fin) {
            l->unfinished++;
            continue;
        }
        l->sum += f->dur;
        if (f->dur > l->max)
            l->max = f->dur;
    }
    for (size_t i = 0; i < nwrecs; i++) {
        const struct wrec_fact *f = &wrecs[i];
        if ((pid && pid != EDG_PID0 + f->p) || f->ts < from || f->ts > to)
            continue;
        struct wsum *w = &out->w[f->p][f->rt][f->w];
        if (f->park) {
            w->parks++;
            w->parked += f->parked;
        }
        if (f->sampled) {
            w->waits++;
            w->wait_sum += f->wait;
            if (f->wait > w->wait_max)
                w->wait_max = f->wait;
        }
    }
}

/* Compare two answers: facts = 1: only the fields the facts hold. */
static void compare(const char *what, uint32_t pid, uint64_t from, uint64_t to,
                    const struct answer *a, const struct answer *b, int facts, int workers)
{
    for (unsigned p = 0; p < EDG_PROCS; p++)
        for (unsigned rt = 0; rt < EDG_RT_MAX; rt++) {
            for (unsigned w = 0; workers && w < EDG_WORKERS; w++) {
                const struct wsum *x = &a->w[p][rt][w], *y = &b->w[p][rt][w];
                const uint64_t u[] = { x->polls, x->parks, x->parked, x->waits, x->wait_sum,
                                       x->wait_max, x->busy, x->cpu_first, x->cpu_last };
                const uint64_t v[] = { y->polls, y->parks, y->parked, y->waits, y->wait_sum,
                                       y->wait_max, y->busy, y->cpu_first, y->cpu_last };
                static const char *const nm[] = { "polls", "parks", "parked_ns", "waits",
                                                  "wait_sum", "wait_max", "busy_ns",
                                                  "cpu_first", "cpu_last" };
                for (unsigned k = 0; k < (facts ? 6u : 9u); k++) {
                    nchecks++;
                    if (u[k] != v[k])
                        mismatch(what, nm[k], "%s pid %u window %" PRIu64 " %" PRIu64 " pid %u rt %u worker %u "
                                 "%s %" PRIu64 " != %" PRIu64, what, pid, from, to, EDG_PID0 + p,
                                 rt, w, nm[k], u[k], v[k]);
                }
            }
            for (unsigned l = 0; l < EDG_LOCS; l++) {
                const struct lsum *x = &a->l[p][rt][l], *y = &b->l[p][rt][l];
                const uint64_t u[] = { x->count, x->unfinished, x->sum, x->max, x->q[0], x->q[1],
                                       x->q[2], x->q[3] };
                const uint64_t v[] = { y->count, y->unfinished, y->sum, y->max, y->q[0], y->q[1],
                                       y->q[2], y->q[3] };
                static const char *const nm[] = { "count", "unfinished", "sum_ns", "max_ns",
                                                  "p50", "p90", "p99", "p999" };
                for (unsigned k = 0; k < (facts ? 4u : 8u); k++) {
                    nchecks++;
                    if (u[k] != v[k])
                        mismatch(what, nm[k], "%s pid %u window %" PRIu64 " %" PRIu64 " pid %u rt %u loc %u "
                                 "%s %" PRIu64 " != %" PRIu64, what, pid, from, to, EDG_PID0 + p,
                                 rt, l, nm[k], u[k], v[k]);
                }
            }
        }
}

struct seg_ref {
    uint64_t id;
    char path[PATH_MAX];
};

struct seg_list {
    struct seg_ref r[EDG_PROCS * EDG_SEGS];
    unsigned n;
};

static int on_seg(void *arg, const struct idx_read_segment *s)
{
    struct seg_list *l = arg;
    if (l->n == EDG_PROCS * EDG_SEGS)
        return -E2BIG;
    l->r[l->n].id = s->id;
    snprintf(l->r[l->n].path, sizeof l->r[l->n].path, "%s", s->path);
    l->n++;
    return 0;
}

static int section(const uint8_t *a, size_t alen, const struct rollup_view *va, const uint8_t *b,
                   size_t blen, const struct rollup_view *vb, unsigned k)
{
    size_t ao[6] = { ROLLUP_HDR_SIZE, va->workers_off, va->counts_off, va->delays_off,
                     va->fields_off, alen };
    size_t bo[6] = { ROLLUP_HDR_SIZE, vb->workers_off, vb->counts_off, vb->delays_off,
                     vb->fields_off, blen };
    return ao[k + 1] - ao[k] == bo[k + 1] - bo[k] &&
           memcmp(a + ao[k], b + bo[k], ao[k + 1] - ao[k]) == 0;
}

/* Each segment's edge rollups against rollup_file_only's, section by section. */
static void segments(struct q_store *s, uint64_t from, uint64_t to)
{
    struct rollup_range r[2];
    uint64_t lo, hi;
    unsigned n = q_agg_edges(from, to, r, &lo, &hi);
    if (n == 0)
        return;
    struct seg_list l = { .n = 0 };
    int rc = q_store_segments(s, 0, r[0].from, r[n - 1].to, on_seg, &l);
    if (rc < 0)
        store_fix_die("q_store_segments", rc);
    static const char *const nm[] = { "polls", "workers", "counts", "delays", "fields" };
    for (unsigned i = 0; i < l.n; i++) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", q_store_dir(s), l.r[i].path);
        uint8_t *want = NULL;
        size_t wlen = 0;
        struct rollup_view wv, gv;
        if ((rc = rollup_file_only(path, r, n, NULL, NULL, &want, &wlen)) < 0 ||
            (rc = rollup_decode(want, wlen, &wv, NULL, 0)) < 0)
            store_fix_die("rollup_file_only", rc);
        for (int lookback = 0; lookback < 2; lookback++) {
            uint8_t *got = NULL;
            size_t glen = 0;
            if ((rc = q_edge_rollup(s, l.r[i].id, path, r, n, lookback, NULL, NULL, &got, &glen, NULL)) < 0 ||
                (rc = rollup_decode(got, glen, &gv, NULL, 0)) < 0)
                store_fix_die("q_edge_rollup", rc);
            for (unsigned k = 0; k < 5; k++) {
                if (k == 1 && !lookback)
                    continue;               /* busy_ns needs the look-back */
                int same = section(got, glen, &gv, want, wlen, &wv, k);
                if (k == 3) {
                    ndelay += !same;
                    continue;
                }
                nchecks++;
                if (!same)
                    mismatch(lookback ? "segment(lookback)" : "segment", nm[k], "segment %s window %" PRIu64 " %" PRIu64 " lookback %d: %s differ",
                             l.r[i].path, from, to, lookback, nm[k]);
            }
            free(got);
        }
        free(want);
    }
}

static void window(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to)
{
    static struct answer e, raw, f;
    answer_of(s, pid, from, to, 0, &e);
    answer_of(s, pid, from, to, Q_AGG_RAW, &raw);
    compare("raw-vs-edge", pid, from, to, &e, &raw, 0, 1);
    facts_of(pid, from, to, &f);
    compare("raw-vs-facts", pid, from, to, &raw, &f, 1, 1);
    answer_of(s, pid, from, to, Q_AGG_LOCS, &e);
    answer_of(s, pid, from, to, Q_AGG_LOCS | Q_AGG_RAW, &raw);
    compare("raw-vs-edge(locs)", pid, from, to, &e, &raw, 0, 0);
    segments(s, from, to);
}

/* A random time in the store's span, often near a bucket edge or a poll's edge. */
static uint64_t some_time(void)
{
    unsigned a = (unsigned)rnd(6);
    uint64_t t = EDG_T0 - EDG_S / 2 + rnd(EDG_LEN + EDG_S);
    if (a == 0)
        return t - t % EDG_S;                           /* a bucket's start */
    if (a == 1)
        return t - t % EDG_S + EDG_S - 1;               /* a bucket's end */
    if (a == 2 && npolls) {                             /* around a poll's start or end */
        const struct poll_fact *f = &polls[rnd(npolls)];
        uint64_t x = f->ts + (rnd(2) ? f->dur : 0);
        return x - 1 + rnd(3);
    }
    if (a == 3 && nwrecs)
        return wrecs[rnd(nwrecs)].ts - 1 + rnd(3);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 4 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: tool_store_edges DIR SEED NWINDOWS\n");
        return 2;
    }
    const char *dir = argv[1];
    rng = strtoull(argv[2], NULL, 10) * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
    unsigned long nwin = strtoul(argv[3], NULL, 10);
    generate();
    write_store(dir);
    printf("pids %u %u\nt0 %llu\nend %llu\n", EDG_PID0, EDG_PID0 + 1, EDG_T0, EDG_END);
    for (unsigned p = 0; p < EDG_PROCS; p++)
        if (inside[p][0])
            printf("inside %u %" PRIu64 " %" PRIu64 "\n", EDG_PID0 + p, inside[p][0], inside[p][1]);
    for (unsigned p = 0; p < EDG_PROCS; p++)
        printf("shared %u %" PRIu64 " %" PRIu64 "\n", EDG_PID0 + p, shared[p][0], shared[p][1]);
    fflush(stdout);
    struct q_store *s;
    char why[256];
    int rc = q_store_open(&s, dir, why, sizeof why);
    if (rc < 0) {
        fprintf(stderr, "tool_store_edges: %s\n", why);
        return 1;
    }
    window(s, 0, 0, UINT64_MAX);                        /* the whole store */
    for (unsigned long i = 0; i < nwin; i++) {
        uint64_t a = some_time(), b;
        unsigned kind = (unsigned)rnd(4);
        if (kind == 0)                                  /* inside one bucket */
            b = a - a % EDG_S + rnd(EDG_S);
        else if (kind == 1)                             /* short */
            b = a + rnd(3 * EDG_S);
        else
            b = some_time();
        uint64_t from = a < b ? a : b, to = a < b ? b : a;
        uint32_t pid = rnd(3) == 0 ? EDG_PID0 + (uint32_t)rnd(EDG_PROCS) : 0;
        window(s, pid, from, to);
    }
    unsigned long nhand = 0;
    for (unsigned p = 0; p < EDG_PROCS; p++) {        /* edges inside a long poll */
        uint64_t a = inside[p][0], b = inside[p][1], mid = a + (b - a) / 2;
        const uint64_t w[][2] = { { mid, b + 2 * EDG_S }, { EDG_T0, mid }, { a + 1, b - 1 },
                                  { a, a }, { a - 1, a + 1 }, { b, b }, { mid, mid + 1 } };
        for (size_t k = 0; a && k < sizeof w / sizeof w[0]; k++, nhand++) {
            window(s, 0, w[k][0], w[k][1]);
            window(s, EDG_PID0 + p, w[k][0], w[k][1]);
        }
    }
    q_store_close(s);
    for (unsigned k = 0; k < nkinds; k++)
        printf("mismatches %s %" PRIu64 "\n", kinds[k].kind, kinds[k].n);
    printf("windows %lu checks %" PRIu64 " mismatches %" PRIu64 " delay-differs %" PRIu64 "\n",
           nwin + 1 + nhand, nchecks, nmismatch, ndelay);
    for (unsigned p = 0; p < EDG_PROCS; p++)
        for (unsigned k = 0; k < EDG_SEGS; k++)
            for (unsigned th = 0; th < EDG_THREADS; th++)
                store_fix_free(&rings[p][k][th]);
    free(polls);
    free(wrecs);
    return nmismatch ? 1 : 0;
}
