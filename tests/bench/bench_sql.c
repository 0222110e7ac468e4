/*
 * bench_sql.c — `d9 sql` against the hand-written scan, on a synthetic store.
 *
 * Builds a store of N records (default 50 M) the way the collector lays one
 * out: one process, 8 threads whose packed DATA blocks (4096 records each)
 * overlap in time, segments of 4 M records, every block in the index. The
 * records are poll_start/poll_end pairs of tasks spawned at 64 locations.
 * Then answers two questions both ways, best of R runs each:
 *   Q1 "select location, count(*), max(dur_ns) from polls group by location"
 *      against the top-polls path (q_store.h scan + q_pair pairing +
 *      an array per location): records scanned per second per CPU second;
 *   Q2 the same over a 1 % window of start_ns (the middle of the store):
 *      latency of the query.
 * Each SQL question is also asked without its GROUP BY ("select count(*),
 * max(dur_ns) from polls ..."), which separates the cost of the scan from
 * that of SQLite's grouping (it sorts every row).
 * The answers of both paths are compared (Q1 exactly; Q2 may differ by the
 * polls that end past the window, which only the SQL path follows).
 * Beside them, SQLite's own floor for Q1's shape: the same GROUP BY over a
 * virtual table that computes nothing (as many rows as Q1 has polls, a
 * constant location text per group, rows already in group order so SQLite
 * does not sort): what SQLite's per-row work alone costs, whatever the scan.
 *
 * Usage: bench_sql [--records N] [--runs R] [--dir DIR] [--keep]
 * Prints "key=value" lines for run-bench.sh, then a readable summary.
 */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "collector/query/q_pair.h"
#include "collector/query/q_scan.h"
#include "collector/sql/sql_vtab.h"
#include "collector/store/idx.h"
#include "collector/store/pack.h"
#include "collector/store/crc32c.h"
#include "collector/store/seg.h"
#include "collector/store/seg_writer.h"
#include "shm/meta.h"

#define BS_THREADS     8u
#define BS_BLOCK_RECS  4096u
#define BS_SEG_RECS    (4u * 1024u * 1024u)
#define BS_LOCS        64u
#define BS_PID         4242u
#define BS_T0          1000000000ull        /* first timestamp */
#define BS_WINDOW_PCT  1.0

static double now_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2a9a43ull;
    return x ^ (x >> 33);
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_sql: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
    exit(1);
}

/* ---- store --------------------------------------------------------------------- */

struct gen {
    const char *dir;
    struct idx *x;
    int64_t process_id;
    struct seg_writer *w;
    uint64_t seg_id, seg_recs;
    uint8_t meta[BS_LOCS * 64 + 64];
    size_t meta_len;
    uint64_t t[BS_THREADS];         /* next timestamp per thread */
    uint64_t task[BS_THREADS];
    uint64_t t_min, t_max;
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

static void seg_open(struct gen *g)
{
    struct seg_proc_info pi = { .pid = BS_PID, .start_time = 77, .clock_source = D9_CLOCK_MONOTONIC,
                                .host = "bench", .comm = "bench_sql", .exe = "/bench" };
    int rc = seg_writer_open(&g->w, g->dir, ++g->seg_id, &pi, g->meta, g->meta_len);
    if (rc)
        die("seg_writer_open", rc);
    g->seg_recs = 0;
}

static void seg_seal(struct gen *g)
{
    struct seg_summary sum;
    int rc = seg_writer_seal(g->w, &sum);
    if (rc == 0)
        rc = idx_segment_commit(g->x, g->process_id, &sum, g->dir);
    if (rc)
        die("seal/index", rc);
    seg_writer_free(g->w);
    g->w = NULL;
}

/* One packed block of BS_BLOCK_RECS records (poll pairs) of thread i. */
static void add_block(struct gen *g, unsigned i, uint8_t *raw, uint8_t *dst)
{
    size_t n = 0;
    struct seg_data_stats st = { .nrec = BS_BLOCK_RECS };
    uint32_t seq = (uint32_t)(g->task[i] * 2);
    for (unsigned k = 0; k < BS_BLOCK_RECS / 2; k++) {
        uint64_t task = ++g->task[i] + ((uint64_t)i << 40);
        uint64_t h = hash64(task);
        uint64_t dur = 200 + h % 20000 + (h % 1000 == 0 ? 2000000 : 0);
        uint64_t t0 = g->t[i];
        struct d9_rec_poll_start s = { { sizeof s, D9_REC_POLL_START, seq++, t0 }, task,
                                       1 + (uint32_t)(h >> 32) % BS_LOCS, 1, (uint16_t)i };
        struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, seq++, t0 + dur }, task, 1,
                                     (uint16_t)i, 0 };
        memcpy(raw + n, &s, sizeof s);
        memcpy(raw + n + sizeof s, &e, sizeof e);
        n += sizeof s + sizeof e;
        g->t[i] = t0 + dur + 100 + h % 400;
        if (k == 0)
            st.t_min = t0;
        st.t_max = t0 + dur;
    }
    st.counts[D9_REC_POLL_START] = st.counts[D9_REC_POLL_END] = BS_BLOCK_RECS / 2;
    struct pack_state pk;
    pack_init(&pk);
    long e = pack_records(&pk, raw, n, dst + PACK_PREFIX, PACK_BOUND(n) - PACK_PREFIX);
    if (e < 0)
        die("pack_records", (int)e);
    size_t plen = pack_finish(dst, (size_t)e, (uint32_t)n);
    uint8_t *payload;
    int rc = seg_writer_data_reserve(g->w, (plen + 7) & ~(size_t)7, &payload);
    if (rc)
        die("seg_writer_data_reserve", rc);
    memcpy(payload, dst, plen);
    rc = seg_writer_data_commit(g->w, 100 + i, i, 1, 0, plen, &st, crc32c_update(0, payload, plen),
                                SEG_BF_PACKED);
    if (rc)
        die("seg_writer_data_commit", rc);
    if (g->t_min == 0 || st.t_min < g->t_min)
        g->t_min = st.t_min;
    if (st.t_max > g->t_max)
        g->t_max = st.t_max;
    g->seg_recs += BS_BLOCK_RECS;
}

static void build_store(const char *dir, uint64_t records, uint64_t *t_min, uint64_t *t_max)
{
    struct gen g = { .dir = dir };
    int rc = idx_open(&g.x, dir);
    if (rc)
        die("idx_open", rc);
    uint8_t p[256];
    meta_add(&g, D9_META_RUNTIME, 1, p, shm_meta_encode_runtime(p, sizeof p, "bench"));
    for (uint32_t l = 1; l <= BS_LOCS; l++) {
        char f[32];
        snprintf(f, sizeof f, "src/handler%02u.c", l);
        meta_add(&g, D9_META_LOCATION, l, p, shm_meta_encode_location(p, sizeof p, f, 10 * l,
                                                                         "handle"));
    }
    struct idx_process ip = { .pid = BS_PID, .start_time = 77, .comm = "bench_sql",
                              .exe = "/bench", .first_ns = BS_T0 };
    if ((rc = idx_process_upsert(g.x, &ip, &g.process_id)))
        die("idx_process_upsert", rc);
    for (unsigned i = 0; i < BS_THREADS; i++) {
        g.t[i] = BS_T0 + i * 37;
        char name[16];
        snprintf(name, sizeof name, "worker%u", i);
        if ((rc = idx_thread_upsert(g.x, g.process_id, 100 + i, i, 1, name, BS_T0, 0, 0)))
            die("idx_thread_upsert", rc);
    }
    if ((rc = idx_runtime_upsert(g.x, g.process_id, 1, "bench")))
        die("idx_runtime_upsert", rc);
    size_t raw_cap = BS_BLOCK_RECS * 32u;
    uint8_t *raw = malloc(raw_cap), *dst = malloc(PACK_BOUND(raw_cap));
    if (!raw || !dst)
        die("malloc", -ENOMEM);
    uint64_t done = 0;
    seg_open(&g);
    while (done < records) {
        for (unsigned i = 0; i < BS_THREADS && done < records; i++) {
            add_block(&g, i, raw, dst);
            done += BS_BLOCK_RECS;
        }
        if (g.seg_recs >= BS_SEG_RECS && done < records) {
            seg_seal(&g);
            seg_open(&g);
        }
    }
    seg_seal(&g);
    idx_close(g.x);
    free(raw);
    free(dst);
    *t_min = g.t_min;
    *t_max = g.t_max;
}

/* ---- the two paths ------------------------------------------------------------------ */

struct answer {
    uint64_t count[BS_LOCS + 1];
    uint64_t max[BS_LOCS + 1];
    uint64_t polls, records;
};

/* The hand-written path: what top-polls does (scan, pair), aggregated per location. */
static int hand_written(struct q_store *s, uint64_t from, uint64_t to, struct answer *a)
{
    memset(a, 0, sizeof *a);
    struct q_pair *p;
    if (q_pair_new(&p) < 0)
        return -ENOMEM;
    struct q_filter f = { .from = from, .to = to,
                            .types = 1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END };
    struct q_scan_it *it;
    struct q_scan_stats st;
    int rc = q_scan_open(s, &f, &st, "bench_sql", &it);
    struct q_rec_src src;
    const struct d9_rec_hdr *rec;
    size_t len;
    while (rc == 0 && (rc = q_scan_next(it, &src, &rec, &len)) == 1) {
        struct q_poll done;
        rc = q_pair_feed(p, &src, rec, len, &done);
        if (rc == 1 && done.loc <= BS_LOCS) {
            uint64_t d = done.end_ns - done.start_ns;
            a->count[done.loc]++;
            a->polls++;
            if (d > a->max[done.loc])
                a->max[done.loc] = d;
        }
        rc = rc < 0 ? rc : 0;
    }
    if (it)
        q_scan_close(it);
    a->records = st.records;
    q_pair_free(p);
    return rc < 0 ? rc : 0;
}

static int sql_path(sqlite3 *db, struct sql_vtab *v, const char *q, struct answer *a)
{
    memset(a, 0, sizeof *a);
    sql_vtab_stats_reset(v);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_sql: %s: %s\n", q, sqlite3_errmsg(db));
        return -EINVAL;
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        /* location text "src/handlerNN.c:L handle" -> its id NN */
        const char *loc = (const char *)sqlite3_column_text(st, 0);
        unsigned id = 0;
        if (loc && sscanf(loc, "src/handler%u.c", &id) == 1 && id <= BS_LOCS) {
            a->count[id] = (uint64_t)sqlite3_column_int64(st, 1);
            a->max[id] = (uint64_t)sqlite3_column_int64(st, 2);
            a->polls += a->count[id];
        }
    }
    sqlite3_finalize(st);
    a->records = sql_vtab_stats(v)->records;
    return rc == SQLITE_DONE ? 0 : -EIO;
}

/* count(*), max(dur_ns): one row */
static int sql_count(sqlite3 *db, struct sql_vtab *v, const char *q, struct answer *a)
{
    memset(a, 0, sizeof *a);
    sql_vtab_stats_reset(v);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
        return -EINVAL;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        a->polls = (uint64_t)sqlite3_column_int64(st, 0);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    a->records = sql_vtab_stats(v)->records;
    return rc == SQLITE_DONE ? 0 : -EIO;
}

struct timing {
    double wall, cpu;
};

/* ---- the floor: a virtual table of n rows (location TEXT, dur_ns INTEGER)
 * in location order, computing nothing */
struct floor_tab {
    sqlite3_vtab base;
    uint64_t n;
};
struct floor_cur {
    sqlite3_vtab_cursor base;
    uint64_t i, n;
};
static char floor_names[BS_LOCS][32];

static int floor_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                         sqlite3_vtab **vt, char **err)
{
    (void)argc;
    (void)argv;
    (void)err;
    int rc = sqlite3_declare_vtab(db, "create table x(location TEXT, dur_ns INTEGER)");
    struct floor_tab *t = rc == SQLITE_OK ? sqlite3_malloc(sizeof *t) : NULL;
    if (!t)
        return rc == SQLITE_OK ? SQLITE_NOMEM : rc;
    memset(t, 0, sizeof *t);
    t->n = *(const uint64_t *)aux;
    *vt = &t->base;
    return SQLITE_OK;
}
static int floor_best(sqlite3_vtab *vt, sqlite3_index_info *ii)
{
    (void)vt;
    if (ii->nOrderBy == 1 && ii->aOrderBy[0].iColumn == 0 && !ii->aOrderBy[0].desc)
        ii->orderByConsumed = 1;        /* rows come grouped: no sorter */
    ii->estimatedCost = 1e9;
    return SQLITE_OK;
}
static int floor_free(sqlite3_vtab *vt)
{
    sqlite3_free(vt);
    return SQLITE_OK;
}
static int floor_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
    struct floor_cur *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->n = ((struct floor_tab *)vt)->n;
    *out = &c->base;
    return SQLITE_OK;
}
static int floor_close(sqlite3_vtab_cursor *c)
{
    sqlite3_free(c);
    return SQLITE_OK;
}
static int floor_filter(sqlite3_vtab_cursor *c, int idx, const char *s, int argc, sqlite3_value **v)
{
    (void)idx;
    (void)s;
    (void)argc;
    (void)v;
    ((struct floor_cur *)c)->i = 0;
    return SQLITE_OK;
}
static int floor_next(sqlite3_vtab_cursor *c)
{
    ((struct floor_cur *)c)->i++;
    return SQLITE_OK;
}
static int floor_eof(sqlite3_vtab_cursor *c)
{
    return ((struct floor_cur *)c)->i >= ((struct floor_cur *)c)->n;
}
static int floor_column(sqlite3_vtab_cursor *cur, sqlite3_context *cx, int col)
{
    const struct floor_cur *c = (const struct floor_cur *)cur;
    if (col == 0)
        sqlite3_result_text(cx, floor_names[c->i * BS_LOCS / c->n], -1, SQLITE_STATIC);
    else
        sqlite3_result_int64(cx, (sqlite3_int64)(hash64(c->i) % 1000000));
    return SQLITE_OK;
}
static int floor_rowid(sqlite3_vtab_cursor *c, sqlite3_int64 *r)
{
    *r = (sqlite3_int64)((struct floor_cur *)c)->i;
    return SQLITE_OK;
}
static sqlite3_module floor_module = {
    .xCreate = floor_connect, .xConnect = floor_connect, .xBestIndex = floor_best,
    .xDisconnect = floor_free, .xDestroy = floor_free, .xOpen = floor_open,
    .xClose = floor_close, .xFilter = floor_filter, .xNext = floor_next, .xEof = floor_eof,
    .xColumn = floor_column, .xRowid = floor_rowid,
};

/* Q1's shape over the floor table of n rows: best CPU seconds of runs. */
static double floor_cpu(uint64_t n, int runs)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    for (unsigned i = 0; i < BS_LOCS; i++)
        snprintf(floor_names[i], sizeof floor_names[i], "src/task_%02u.c:%u poll_fn", i, 100 + i);
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_create_module(db, "floor", &floor_module, &n) != SQLITE_OK ||
        sqlite3_exec(db, "create virtual table floor_polls using floor", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "select location, count(*), max(dur_ns) from floor_polls "
                           "group by location", -1, &st, NULL) != SQLITE_OK)
        die("floor table", -EIO);
    double best = 1e30;
    for (int r = 0; r < runs; r++) {
        double c = now_s(CLOCK_PROCESS_CPUTIME_ID);
        int groups = 0;
        while (sqlite3_step(st) == SQLITE_ROW)
            groups++;
        sqlite3_reset(st);
        c = now_s(CLOCK_PROCESS_CPUTIME_ID) - c;
        if (groups != (int)BS_LOCS)
            die("floor groups", -EPROTO);
        if (c < best)
            best = c;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return best;
}

int main(int argc, char **argv)
{
    uint64_t records = 50000000;
    int runs = 3;
    bool keep = false;
    char dir[512] = "";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
            records = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            snprintf(dir, sizeof dir, "%s", argv[++i]);
        else if (strcmp(argv[i], "--keep") == 0)
            keep = true;
        else {
            fprintf(stderr, "usage: bench_sql [--records N] [--runs R] [--dir DIR] [--keep]\n");
            return 2;
        }
    }
    if (runs < 1)
        runs = 1;
    if (!*dir) {
        snprintf(dir, sizeof dir, "/tmp/d9bsql.XXXXXX");
        if (!mkdtemp(dir))
            die("mkdtemp", errno);
    }
    uint64_t t_min, t_max;
    double t0 = now_s(CLOCK_MONOTONIC);
    build_store(dir, records, &t_min, &t_max);
    printf("sql.records=%" PRIu64 " sql.build_s=%.1f\n", records, now_s(CLOCK_MONOTONIC) - t0);

    struct q_store *s;
    char why[512];
    sqlite3 *db;
    struct sql_vtab *v;
    if (q_store_open(&s, dir, why, sizeof why) < 0 || sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sql_vtab_attach(db, s, "bench_sql", &v, why, sizeof why) < 0) {
        fprintf(stderr, "bench_sql: %s\n", why);
        return 1;
    }
    uint64_t span = t_max - t_min;
    uint64_t w_from = t_min + span / 2, w_to = w_from + (uint64_t)((double)span * BS_WINDOW_PCT / 100);
    char q1[] = "select location, count(*), max(dur_ns) from polls group by location";
    char q2[256], q1n[] = "select count(*), max(dur_ns) from polls", q2n[256];
    snprintf(q2, sizeof q2, "select location, count(*), max(dur_ns) from polls where start_ns "
             "between %" PRIu64 " and %" PRIu64 " group by location", w_from, w_to);
    snprintf(q2n, sizeof q2n, "select count(*), max(dur_ns) from polls where start_ns "
             "between %" PRIu64 " and %" PRIu64, w_from, w_to);

    struct timing best[6];
    struct answer ans[6];
    for (int k = 0; k < 6; k++)
        best[k] = (struct timing){ 1e30, 1e30 };
    for (int r = 0; r < runs; r++) {
        for (int k = 0; k < 6; k++) {
            double w = now_s(CLOCK_MONOTONIC), c = now_s(CLOCK_PROCESS_CPUTIME_ID);
            int rc = k == 0 ? sql_path(db, v, q1, &ans[0])
                   : k == 1 ? hand_written(s, 0, UINT64_MAX, &ans[1])
                   : k == 2 ? sql_path(db, v, q2, &ans[2])
                   : k == 3 ? hand_written(s, w_from, w_to, &ans[3])
                   : sql_count(db, v, k == 4 ? q1n : q2n, &ans[k]);
            if (rc < 0)
                die("query", rc);
            w = now_s(CLOCK_MONOTONIC) - w;
            c = now_s(CLOCK_PROCESS_CPUTIME_ID) - c;
            if (w < best[k].wall)
                best[k] = (struct timing){ w, c };
        }
    }
    double floor_s = floor_cpu(records / 2, runs);
    bool same = memcmp(ans[0].count, ans[1].count, sizeof ans[0].count) == 0 &&
                memcmp(ans[0].max, ans[1].max, sizeof ans[0].max) == 0;
    static const char *const name[6] = { "q1_sql", "q1_hand", "q2_sql", "q2_hand",
                                         "q1_sql_nogroup", "q2_sql_nogroup" };
    for (int k = 0; k < 6; k++)
        printf("sql.%s.wall_ms=%.1f sql.%s.cpu_ms=%.1f sql.%s.records=%" PRIu64
               " sql.%s.polls=%" PRIu64 " sql.%s.mrec_per_cpu_s=%.1f\n",
               name[k], best[k].wall * 1e3, name[k], best[k].cpu * 1e3, name[k], ans[k].records,
               name[k], ans[k].polls, name[k],
               best[k].cpu > 0 ? (double)ans[k].records / best[k].cpu / 1e6 : 0.0);
    printf("sql.q1_same_answer=%s\n", same ? "yes" : "NO");
    printf("sql.floor.cpu_ms=%.1f sql.floor.ns_per_poll=%.1f sql.floor.mrec_per_cpu_s=%.1f\n",
           floor_s * 1e3, floor_s * 1e9 / (double)(records / 2), (double)records / floor_s / 1e6);
    printf("\n%" PRIu64 " records (%" PRIu64 " polls), best of %d:\n", records, records / 2, runs);
    printf("  Q1 group by location, whole store:  SQL %.0f ms (%.1f M records/CPU-s)  "
           "hand-written %.0f ms (%.1f M records/CPU-s)  answers %s\n",
           best[0].wall * 1e3, (double)ans[0].records / best[0].cpu / 1e6, best[1].wall * 1e3,
           (double)ans[1].records / best[1].cpu / 1e6, same ? "equal" : "DIFFER");
    printf("  Q2 the same over a %.0f %% window:     SQL %.1f ms (%" PRIu64 " polls)  "
           "hand-written %.1f ms (%" PRIu64 " polls)\n", BS_WINDOW_PCT, best[2].wall * 1e3,
           ans[2].polls, best[3].wall * 1e3, ans[3].polls);
    printf("  without GROUP BY (scan and pairing only): Q1 SQL %.0f ms (%.1f M records/CPU-s), "
           "Q2 SQL %.1f ms\n", best[4].wall * 1e3, (double)ans[4].records / best[4].cpu / 1e6,
           best[5].wall * 1e3);
    printf("  SQLite's floor for Q1's shape (a table that computes nothing, rows already grouped): "
           "%.0f ms CPU, %.1f ns a poll = at most %.1f M records/CPU-s whatever the scan\n",
           floor_s * 1e3, floor_s * 1e9 / (double)(records / 2), (double)records / floor_s / 1e6);
    sqlite3_close(db);
    sql_vtab_free(v);
    q_store_close(s);
    if (!keep) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench_sql: could not remove %s\n", dir);
    }
    return same ? 0 : 1;
}
