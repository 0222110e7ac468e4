/*
 * sql_rollup.c — poll_stats, worker_stats and location_stats (see
 * sql_rollup.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "collector/query/q_agg.h"
#include "collector/query/q_rollup.h"
#include "collector/sql/sql_list.h"
#include "collector/sql/sql_rollup.h"

static int in_window(const struct cur *c, uint64_t bucket)
{
    return bucket >= c->f.from && bucket <= c->f.to;
}

/* A field value of the type's bits as a column value. */
static void mv_val(struct mval *m, uint8_t type, union rollup_val x)
{
    if (type == D9_FT_F64) {
        m->t = SQLITE_FLOAT;
        m->d = x.f;
    } else if (type == D9_FT_I64) {
        sql_list_mv_int(m, x.i);
    } else {
        sql_list_mv_u64(m, x.u);
    }
}

static uint64_t mag(uint8_t type, union rollup_val x)
{
    if (type == D9_FT_I64)
        return x.i < 0 ? 0 - x.u : x.u;
    if (type == D9_FT_F64) {
        double a = x.f < 0 ? -x.f : x.f;
        return a >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)a;
    }
    return x.u;
}

static int field_rows(struct cur *c, const struct q_rollup_seg *g)
{
    struct sql_vtab *v = c->vt->ctx;
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_field f;
    while (rollup_next_field(g->v, &off, &i, &f) == 1) {
        if (!in_window(c, f.bucket_ns))
            continue;
        struct mval *r = sql_list_row_add(c);
        if (!r)
            return -ENOMEM;
        sql_list_mv_int(&r[EF_PID], g->pid);
        const struct shm_meta_entry *m = q_names_meta(v->names, g->process_id, D9_META_SCHEMA,
                                                      f.schema);
        if (m && m->name)
            snprintf(c->text, sizeof c->text, "%s", m->name);
        else
            snprintf(c->text, sizeof c->text, "#%" PRIu32, f.schema);
        int e = sql_list_mv_str(&r[EF_EVENT], c->text);
        if (m && f.field < m->nfields && f.field < D9_SCHEMA_MAX_FIELDS && m->fields[f.field].name)
            snprintf(c->text, sizeof c->text, "%s", m->fields[f.field].name);
        else
            snprintf(c->text, sizeof c->text, "#%u", (unsigned)f.field);
        e |= sql_list_mv_str(&r[EF_FIELD], c->text);
        sql_list_mv_u64(&r[EF_BUCKET], f.bucket_ns);
        sql_list_mv_u64(&r[EF_COUNT], f.count);
        mv_val(&r[EF_SUM], f.type, f.sum);
        mv_val(&r[EF_MIN], f.type, f.min);
        mv_val(&r[EF_MAX], f.type, f.max);
        uint64_t hi = mag(f.type, f.min) > mag(f.type, f.max) ? mag(f.type, f.min)
                                                               : mag(f.type, f.max);
        sql_list_mv_u64(&r[EF_P50], rollup_bins_quantile(f.bins, f.nbins, f.count, hi, 0.5));
        sql_list_mv_u64(&r[EF_P99], rollup_bins_quantile(f.bins, f.nbins, f.count, hi, 0.99));
        sql_list_mv_u64(&r[EF_SEGMENT], g->segment_id);
        sql_list_mv_key(c, r, g->segment_id, f.bucket_ns, (uint64_t)f.schema << 16 | f.field);
        if (e)
            return -ENOMEM;
    }
    return 0;
}

static int on_seg(void *arg, const struct q_rollup_seg *g)
{
    struct cur *c = arg;
    struct sql_vtab *v = c->vt->ctx;
    if (c->vt->def->kind == K_EVENT_FIELD_STATS)
        return field_rows(c, g);
    if (c->vt->def->kind == K_EVENT_STATS) {
        for (uint32_t i = 0; i < g->v->ncount; i++) {
            struct rollup_count k;
            rollup_count_at(g->v, i, &k);
            if (k.kind != ROLLUP_COUNT_EVENT || !in_window(c, k.bucket_ns))
                continue;
            struct mval *r = sql_list_row_add(c);
            if (!r)
                return -ENOMEM;
            sql_list_mv_int(&r[ES_PID], g->pid);
            const struct shm_meta_entry *m = q_names_meta(v->names, g->process_id,
                                                          D9_META_SCHEMA, k.id);
            if (m && m->name)
                snprintf(c->text, sizeof c->text, "%s", m->name);
            else
                snprintf(c->text, sizeof c->text, "#%" PRIu32, k.id);
            int e = sql_list_mv_str(&r[ES_EVENT], c->text);
            sql_list_mv_u64(&r[ES_BUCKET], k.bucket_ns);
            sql_list_mv_u64(&r[ES_COUNT], k.n);
            sql_list_mv_u64(&r[ES_SEGMENT], g->segment_id);
            sql_list_mv_key(c, r, g->segment_id, k.bucket_ns, (uint64_t)2 << 48 | k.id);
            if (e)
                return -ENOMEM;
        }
        return 0;
    }
    if (c->vt->def->kind == K_WAKE_STATS) {
        /* delay entries have the keys of wake entries, in the same order */
        size_t doff = 0;
        uint32_t di = 0;
        struct rollup_delay d;
        int dmore = rollup_next_delay(g->v, &doff, &di, &d) == 1;
        for (uint32_t i = 0; i < g->v->ncount; i++) {
            struct rollup_count w;
            rollup_count_at(g->v, i, &w);
            if (w.kind != ROLLUP_COUNT_WAKE || !in_window(c, w.bucket_ns))
                continue;
            struct mval *r = sql_list_row_add(c);
            if (!r)
                return -ENOMEM;
            sql_list_mv_int(&r[WK_PID], g->pid);
            int e = sql_list_mv_str(&r[WK_RUNTIME], q_names_runtime(v->names, g->process_id,
                                                                    w.runtime, c->text,
                                                                    sizeof c->text));
            sql_list_mv_u64(&r[WK_BUCKET], w.bucket_ns);
            sql_list_mv_u64(&r[WK_WAKES], w.n);
            sql_list_mv_u64(&r[WK_SEGMENT], g->segment_id);
            while (dmore && (d.bucket_ns < w.bucket_ns ||
                             (d.bucket_ns == w.bucket_ns && d.runtime < w.runtime)))
                dmore = rollup_next_delay(g->v, &doff, &di, &d) == 1;
            sql_list_mv_u64(&r[WK_DELAY_COUNT], 0);
            sql_list_mv_u64(&r[WK_DELAY_SUM], 0);
            if (dmore && d.bucket_ns == w.bucket_ns && d.runtime == w.runtime) {
                const uint64_t u[] = { d.count, d.sum_ns, d.max_ns,
                                       rollup_bins_quantile(d.bins, d.nbins, d.count, d.max_ns, 0.5),
                                       rollup_bins_quantile(d.bins, d.nbins, d.count, d.max_ns, 0.99) };
                for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
                    sql_list_mv_u64(&r[WK_DELAY_COUNT + k], u[k]);
            }
            sql_list_mv_key(c, r, g->segment_id, w.bucket_ns, (uint64_t)w.runtime << 48 | 1);
            if (e)
                return -ENOMEM;
        }
        return 0;
    }
    if (c->vt->def->kind == K_WORKER_STATS) {
        for (uint32_t i = 0; i < g->v->nworker; i++) {
            struct rollup_worker w;
            rollup_worker_at(g->v, i, &w);
            if (!in_window(c, w.bucket_ns))
                continue;
            struct mval *r = sql_list_row_add(c);
            if (!r)
                return -ENOMEM;
            sql_list_mv_int(&r[WS_PID], g->pid);
            int e = sql_list_mv_str(&r[WS_RUNTIME], q_names_runtime(v->names, g->process_id,
                                                                    w.runtime, c->text,
                                                                    sizeof c->text));
            sql_list_mv_int(&r[WS_WORKER], w.worker);
            const uint64_t u[] = { w.bucket_ns, w.polls, w.busy_ns, w.parks, w.parked_ns,
                                   w.waits, w.wait_sum_ns, w.wait_max_ns, g->segment_id };
            for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
                sql_list_mv_u64(&r[WS_BUCKET + k], u[k]);
            if (w.flags & ROLLUP_WORKER_CPU) {
                sql_list_mv_u64(&r[WS_CPU], w.cpu_last - w.cpu_first);
                sql_list_mv_u64(&r[WS_CPU_FIRST], w.cpu_first);
                sql_list_mv_u64(&r[WS_CPU_LAST], w.cpu_last);
            }
            sql_list_mv_key(c, r, g->segment_id, w.bucket_ns,
                            (uint64_t)w.runtime << 16 | w.worker);
            if (e)
                return -ENOMEM;
        }
        return 0;
    }
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    int e = 0;
    while (e == 0 && rollup_next_poll(g->v, &off, &i, &p) == 1) {
        if (!in_window(c, p.bucket_ns))
            continue;
        struct mval *r = sql_list_row_add(c);
        if (!r) {
            e = -ENOMEM;
            break;
        }
        sql_list_mv_int(&r[PS_PID], g->pid);
        e |= sql_list_mv_str(&r[PS_RUNTIME], q_names_runtime(v->names, g->process_id, p.runtime,
                                                            c->text, sizeof c->text));
        sql_list_mv_int(&r[PS_WORKER], p.worker);
        sql_list_mv_int(&r[PS_LOC], p.loc);
        e |= sql_list_mv_str(&r[PS_LOCATION], q_names_location(v->names, g->process_id, p.loc,
                                                              c->text, sizeof c->text));
        const uint64_t u[] = { p.bucket_ns, p.count, p.unfinished, p.sum_ns, p.max_ns,
                               rollup_poll_quantile(&p, 0.5), rollup_poll_quantile(&p, 0.99),
                               g->segment_id };
        for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
            sql_list_mv_u64(&r[PS_BUCKET + k], u[k]);
        if (p.count == p.unfinished) {  /* no finished poll: no durations */
            r[PS_P50].t = r[PS_P99].t = SQLITE_NULL;
        }
        sql_list_mv_key(c, r, g->segment_id, p.bucket_ns,
                        (uint64_t)p.runtime << 48 | (uint64_t)p.worker << 32 | p.loc);
        e = e ? -ENOMEM : 0;
    }
    return e;
}

/* location_stats: q_agg's locations of the window (its edges read from records). */
static int fill_locations(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    c->ncols = LS_NCOLS + 1;
    c->irow = 0;
    if (c->f.from > c->f.to) {
        c->eof = true;
        return 0;
    }
    struct q_agg *a = NULL;
    struct q_agg_stats st;
    int rc = q_agg_run(v->s, c->f.pid, c->f.from, c->f.to, Q_AGG_LOCS, v->prog, &a, &st);
    if (rc < 0)
        return rc;
    v->st.missing_segments += st.missing;
    size_t n;
    const struct q_agg_loc *l = q_agg_locs(a, &n);
    for (size_t i = 0; rc == 0 && i < n; i++, l++) {
        struct mval *r = sql_list_row_add(c);
        if (!r) {
            rc = -ENOMEM;
            break;
        }
        int e = 0;
        sql_list_mv_int(&r[LS_PID], l->pid);
        e |= sql_list_mv_str(&r[LS_RUNTIME], q_names_runtime(v->names, l->process_id, l->runtime,
                                                            c->text, sizeof c->text));
        sql_list_mv_int(&r[LS_LOC], l->loc);
        e |= sql_list_mv_str(&r[LS_LOCATION], q_names_location(v->names, l->process_id, l->loc,
                                                              c->text, sizeof c->text));
        const uint64_t u[] = { c->f.from, l->count, l->unfinished, l->sum_ns, l->max_ns,
                               l->p50_ns, l->p90_ns, l->p99_ns, l->p999_ns };
        for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
            sql_list_mv_u64(&r[LS_START + k], u[k]);
        if (l->count == l->unfinished)     /* no finished poll: no durations */
            r[LS_P50].t = r[LS_P90].t = r[LS_P99].t = r[LS_P999].t = SQLITE_NULL;
        sql_list_mv_key(c, r, (uint64_t)l->process_id, c->f.from,
                        (uint64_t)l->runtime << 32 | l->loc);
        rc = e ? -ENOMEM : 0;
    }
    q_agg_free(a);
    if (rc < 0)
        return rc;
    c->eof = c->nrows == 0;
    return 0;
}

/* ---- coarser levels: rows merged into bucket_width-wide buckets ---------- */

struct macc {                       /* one merged row: (process, key, bucket) */
    int64_t process_id;
    uint32_t pid;
    uint64_t key, bucket;
    uint64_t n[7];                  /* the kind's counters (see merge_seg) */
    uint8_t type;                   /* event_field_stats: the field's D9_FT_* */
    bool have;                      /* worker: cpu set; field: sum/min/max set */
    uint64_t cpu_first, cpu_last;
    union rollup_val sum, min, max;
    struct rollup_hist *h;          /* polls, delays, fields */
};

struct merge {
    struct macc *a;
    size_t n, cap;
    uint32_t *slot;                 /* index + 1, 0 = empty */
    size_t nslot;                   /* a power of two */
    uint64_t width;
};

static uint64_t macc_hash(int64_t process_id, uint64_t key, uint64_t bucket)
{
    return store_hash64(store_hash64((uint64_t)process_id ^ key * STORE_HASH_GOLDEN) ^ bucket);
}

static struct macc *macc_of(struct merge *m, const struct q_rollup_seg *g, uint64_t key,
                            uint64_t bucket, bool hist)
{
    if ((m->n + 1) * 2 > m->nslot) {
        size_t ns = m->nslot ? m->nslot * 2 : 256;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl || ns > UINT32_MAX) {
            free(sl);
            return NULL;
        }
        for (size_t i = 0; i < m->n; i++) {
            size_t j = (size_t)macc_hash(m->a[i].process_id, m->a[i].key, m->a[i].bucket) & (ns - 1);
            while (sl[j])
                j = (j + 1) & (ns - 1);
            sl[j] = (uint32_t)i + 1;
        }
        free(m->slot);
        m->slot = sl;
        m->nslot = ns;
    }
    bucket -= bucket % m->width;
    size_t j = (size_t)macc_hash(g->process_id, key, bucket) & (m->nslot - 1);
    for (; m->slot[j]; j = (j + 1) & (m->nslot - 1)) {
        struct macc *x = &m->a[m->slot[j] - 1];
        if (x->process_id == g->process_id && x->key == key && x->bucket == bucket)
            return x;
    }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct macc *na = realloc(m->a, cap * sizeof *na);
        if (!na)
            return NULL;
        m->a = na;
        m->cap = cap;
    }
    struct macc *x = &m->a[m->n];
    *x = (struct macc){ .process_id = g->process_id, .pid = g->pid, .key = key, .bucket = bucket };
    if (hist && !(x->h = calloc(1, sizeof *x->h)))
        return NULL;
    m->slot[j] = (uint32_t)++m->n;
    return x;
}

static void max_in(uint64_t *to, uint64_t v)
{
    if (v > *to)
        *to = v;
}

/* A segment's entries into the merged rows. */
static int merge_seg(void *arg, const struct q_rollup_seg *g)
{
    struct cur *c = arg;
    struct merge *m = c->rollup_merge;
    enum kind k = c->vt->def->kind;
    struct macc *x;
#define IN(b) in_window(c, (b) - (b) % m->width)
    if (k == K_POLL_STATS) {
        size_t off = 0;
        uint32_t i = 0;
        struct rollup_poll p;
        while (rollup_next_poll(g->v, &off, &i, &p) == 1) {
            if (!IN(p.bucket_ns))
                continue;
            uint64_t key = (uint64_t)p.runtime << 48 | (uint64_t)p.worker << 32 | p.loc;
            if (!(x = macc_of(m, g, key, p.bucket_ns, true)))
                return -ENOMEM;
            x->n[0] += p.count;
            x->n[1] += p.unfinished;
            x->n[2] += p.sum_ns;
            max_in(&x->n[3], p.max_ns);
            rollup_hist_add(x->h, &p);
        }
    } else if (k == K_WORKER_STATS) {
        struct rollup_worker w;
        for (uint32_t i = 0; i < g->v->nworker && rollup_worker_at(g->v, i, &w) == 0; i++) {
            if (!IN(w.bucket_ns))
                continue;
            if (!(x = macc_of(m, g, (uint64_t)w.runtime << 16 | w.worker, w.bucket_ns, false)))
                return -ENOMEM;
            x->n[0] += w.polls;
            x->n[1] += w.busy_ns;
            x->n[2] += w.parks;
            x->n[3] += w.parked_ns;
            x->n[4] += w.waits;
            x->n[5] += w.wait_sum_ns;
            max_in(&x->n[6], w.wait_max_ns);
            if (w.flags & ROLLUP_WORKER_CPU) {
                if (!x->have || w.cpu_first < x->cpu_first)
                    x->cpu_first = w.cpu_first;
                if (!x->have || w.cpu_last > x->cpu_last)
                    x->cpu_last = w.cpu_last;
                x->have = true;
            }
        }
    } else if (k == K_WAKE_STATS || k == K_EVENT_STATS) {
        uint16_t want = k == K_WAKE_STATS ? ROLLUP_COUNT_WAKE : ROLLUP_COUNT_EVENT;
        struct rollup_count n;
        for (uint32_t i = 0; i < g->v->ncount && rollup_count_at(g->v, i, &n) == 0; i++) {
            if (n.kind != want || !IN(n.bucket_ns))
                continue;
            uint64_t key = k == K_WAKE_STATS ? n.runtime : n.id;
            if (!(x = macc_of(m, g, key, n.bucket_ns, k == K_WAKE_STATS)))
                return -ENOMEM;
            x->n[0] += n.n;
        }
        size_t off = 0;
        uint32_t i = 0;
        struct rollup_delay d;
        while (k == K_WAKE_STATS && rollup_next_delay(g->v, &off, &i, &d) == 1) {
            if (!IN(d.bucket_ns))
                continue;
            if (!(x = macc_of(m, g, d.runtime, d.bucket_ns, true)))
                return -ENOMEM;
            x->n[1] += d.count;
            x->n[2] += d.sum_ns;
            max_in(&x->n[3], d.max_ns);
            rollup_hist_add_bins(x->h, d.bins, d.nbins);
        }
    } else if (k == K_EVENT_FIELD_STATS) {
        size_t off = 0;
        uint32_t i = 0;
        struct rollup_field f;
        while (rollup_next_field(g->v, &off, &i, &f) == 1) {
            if (!IN(f.bucket_ns))
                continue;
            uint64_t key = (uint64_t)f.type << 48 | (uint64_t)f.schema << 16 | f.field;
            if (!(x = macc_of(m, g, key, f.bucket_ns, true)))
                return -ENOMEM;
            int lo = f.type == D9_FT_I64 ? f.min.i < x->min.i
                     : f.type == D9_FT_F64 ? f.min.f < x->min.f : f.min.u < x->min.u;
            int hi = f.type == D9_FT_I64 ? f.max.i > x->max.i
                     : f.type == D9_FT_F64 ? f.max.f > x->max.f : f.max.u > x->max.u;
            if (!x->have || lo)
                x->min = f.min;
            if (!x->have || hi)
                x->max = f.max;
            if (f.type == D9_FT_F64)
                x->sum.f += f.sum.f;
            else
                x->sum.u += f.sum.u;
            x->type = f.type;
            x->have = true;
            x->n[0] += f.count;
            rollup_hist_add_bins(x->h, f.bins, f.nbins);
        }
    }
#undef IN
    return 0;
}

static const char *schema_text(struct cur *c, const struct macc *x, uint32_t id, int field)
{
    struct sql_vtab *v = c->vt->ctx;
    const struct shm_meta_entry *m = q_names_meta(v->names, x->process_id, D9_META_SCHEMA, id);
    if (field < 0 && m && m->name)
        snprintf(c->text, sizeof c->text, "%s", m->name);
    else if (field < 0)
        snprintf(c->text, sizeof c->text, "#%" PRIu32, id);
    else if (m && field < m->nfields && field < (int)D9_SCHEMA_MAX_FIELDS && m->fields[field].name)
        snprintf(c->text, sizeof c->text, "%s", m->fields[field].name);
    else
        snprintf(c->text, sizeof c->text, "#%d", field);
    return c->text;
}

/* One row of a merged accumulator. */
static int merged_row(struct cur *c, const struct macc *x)
{
    struct sql_vtab *v = c->vt->ctx;
    enum kind k = c->vt->def->kind;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    int e = 0;
    sql_list_mv_int(&r[0], x->pid);
    if (k == K_POLL_STATS) {
        uint16_t rt = (uint16_t)(x->key >> 48), wk = (uint16_t)(x->key >> 32);
        uint32_t loc = (uint32_t)x->key;
        e |= sql_list_mv_str(&r[PS_RUNTIME], q_names_runtime(v->names, x->process_id, rt, c->text,
                                                            sizeof c->text));
        sql_list_mv_int(&r[PS_WORKER], wk);
        sql_list_mv_int(&r[PS_LOC], loc);
        e |= sql_list_mv_str(&r[PS_LOCATION], q_names_location(v->names, x->process_id, loc,
                                                              c->text, sizeof c->text));
        const uint64_t u[] = { x->bucket, x->n[0], x->n[1], x->n[2], x->n[3],
                               rollup_hist_quantile(x->h, 0.5, x->n[3]),
                               rollup_hist_quantile(x->h, 0.99, x->n[3]) };
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
            sql_list_mv_u64(&r[PS_BUCKET + i], u[i]);
        if (x->n[0] == x->n[1])
            r[PS_P50].t = r[PS_P99].t = SQLITE_NULL;
        sql_list_mv_u64(&r[PS_WIDTH], c->bucket_width);
    } else if (k == K_WORKER_STATS) {
        e |= sql_list_mv_str(&r[WS_RUNTIME],
                             q_names_runtime(v->names, x->process_id, (uint16_t)(x->key >> 16),
                                             c->text, sizeof c->text));
        sql_list_mv_int(&r[WS_WORKER], (uint16_t)x->key);
        sql_list_mv_u64(&r[WS_BUCKET], x->bucket);
        for (size_t i = 0; i < 7; i++)
            sql_list_mv_u64(&r[WS_POLLS + i], x->n[i]);
        if (x->have) {
            sql_list_mv_u64(&r[WS_CPU], x->cpu_last - x->cpu_first);
            sql_list_mv_u64(&r[WS_CPU_FIRST], x->cpu_first);
            sql_list_mv_u64(&r[WS_CPU_LAST], x->cpu_last);
        }
        sql_list_mv_u64(&r[WS_WIDTH], c->bucket_width);
    } else if (k == K_WAKE_STATS) {
        e |= sql_list_mv_str(&r[WK_RUNTIME], q_names_runtime(v->names, x->process_id,
                                                            (uint16_t)x->key, c->text,
                                                            sizeof c->text));
        const uint64_t u[] = { x->n[1], x->n[2], x->n[3], rollup_hist_quantile(x->h, 0.5, x->n[3]),
                               rollup_hist_quantile(x->h, 0.99, x->n[3]) };
        sql_list_mv_u64(&r[WK_BUCKET], x->bucket);
        sql_list_mv_u64(&r[WK_WAKES], x->n[0]);
        for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
            sql_list_mv_u64(&r[WK_DELAY_COUNT + i], u[i]);
        if (x->n[1] == 0)
            r[WK_DELAY_MAX].t = r[WK_DELAY_P50].t = r[WK_DELAY_P99].t = SQLITE_NULL;
        sql_list_mv_u64(&r[WK_WIDTH], c->bucket_width);
    } else if (k == K_EVENT_STATS) {
        e |= sql_list_mv_str(&r[ES_EVENT], schema_text(c, x, (uint32_t)x->key, -1));
        sql_list_mv_u64(&r[ES_BUCKET], x->bucket);
        sql_list_mv_u64(&r[ES_COUNT], x->n[0]);
        sql_list_mv_u64(&r[ES_WIDTH], c->bucket_width);
    } else {
        uint32_t schema = (uint32_t)(x->key >> 16) & UINT32_MAX;
        e |= sql_list_mv_str(&r[EF_EVENT], schema_text(c, x, schema, -1));
        e |= sql_list_mv_str(&r[EF_FIELD], schema_text(c, x, schema, (int)(x->key & 0xffff)));
        sql_list_mv_u64(&r[EF_BUCKET], x->bucket);
        sql_list_mv_u64(&r[EF_COUNT], x->n[0]);
        mv_val(&r[EF_SUM], x->type, x->sum);
        mv_val(&r[EF_MIN], x->type, x->min);
        mv_val(&r[EF_MAX], x->type, x->max);
        uint64_t hi = mag(x->type, x->min) > mag(x->type, x->max) ? mag(x->type, x->min)
                                                                   : mag(x->type, x->max);
        sql_list_mv_u64(&r[EF_P50], rollup_hist_quantile(x->h, 0.5, hi));
        sql_list_mv_u64(&r[EF_P99], rollup_hist_quantile(x->h, 0.99, hi));
        sql_list_mv_u64(&r[EF_WIDTH], c->bucket_width);
    }
    sql_list_mv_key(c, r, (uint64_t)x->process_id, x->bucket, x->key);
    return e ? -ENOMEM : 0;
}

static int by_macc(const void *p, const void *q)
{
    const struct macc *a = p, *b = q;
    if (a->bucket != b->bucket)
        return a->bucket < b->bucket ? -1 : 1;
    if (a->process_id != b->process_id)
        return a->process_id < b->process_id ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

/* bucket_width_ns = W: every segment's entries merged, then one row each. */
static int fill_merged(struct cur *c, uint64_t to)
{
    struct sql_vtab *v = c->vt->ctx;
    struct merge m = { .width = c->bucket_width };
    c->rollup_merge = &m;
    struct q_rollup_stats st;
    int rc = q_rollup_each(v->s, c->f.pid, c->f.from, to, merge_seg, c, &st, v->prog);
    c->rollup_merge = NULL;
    v->st.missing_segments += st.missing;
    if (rc == 0 && m.n)
        qsort(m.a, m.n, sizeof *m.a, by_macc);
    for (size_t i = 0; rc == 0 && i < m.n; i++)
        rc = merged_row(c, &m.a[i]);
    for (size_t i = 0; i < m.n; i++)
        free(m.a[i].h);
    free(m.a);
    free(m.slot);
    return rc;
}

int sql_rollup_width_col(enum kind k)
{
    switch (k) {
    case K_POLL_STATS: return PS_WIDTH;
    case K_WORKER_STATS: return WS_WIDTH;
    case K_WAKE_STATS: return WK_WIDTH;
    case K_EVENT_STATS: return ES_WIDTH;
    case K_EVENT_FIELD_STATS: return EF_WIDTH;
    default: return -1;
    }
}

int sql_rollup_fill(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    if (c->vt->def->kind == K_LOCATION_STATS)
        return fill_locations(c);
    enum kind k = c->vt->def->kind;
    c->ncols = (k == K_WORKER_STATS ? WS_NCOLS : k == K_WAKE_STATS ? WK_NCOLS
                : k == K_EVENT_STATS ? ES_NCOLS : k == K_EVENT_FIELD_STATS ? EF_NCOLS
                : PS_NCOLS) + 1;
    /* a poll's bucket is at or before its start: a segment that starts
     * within a bucket of the window's end holds polls of that bucket */
    uint64_t w = c->bucket_width ? c->bucket_width : ROLLUP_BUCKET_NS;
    uint64_t to = c->f.to > UINT64_MAX - w ? UINT64_MAX : c->f.to + w - 1;
    int rc;
    if (c->bucket_width) {
        rc = fill_merged(c, to);
    } else {
        struct q_rollup_stats st;
        rc = q_rollup_each(v->s, c->f.pid, c->f.from, to, on_seg, c, &st, v->prog);
        v->st.missing_segments += st.missing;
        int wc = sql_rollup_width_col(k);
        for (size_t i = 0; rc == 0 && wc >= 0 && i < c->nrows; i++)
            sql_list_mv_u64(&c->rows[i * c->ncols + (size_t)wc], ROLLUP_BUCKET_NS);
    }
    if (rc < 0)
        return rc;
    c->irow = 0;
    c->eof = c->nrows == 0;
    return 0;
}
