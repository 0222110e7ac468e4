/*
 * sql_rollup.c — poll_stats, worker_stats and location_stats (see
 * sql_rollup.h).
 */
#include <errno.h>
#include <inttypes.h>
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
    int rc = q_agg_run(v->s, c->f.pid, c->f.from, c->f.to, 0, v->prog, &a, &st);
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
    uint64_t to = c->f.to > UINT64_MAX - ROLLUP_BUCKET_NS ? UINT64_MAX
                                                          : c->f.to + ROLLUP_BUCKET_NS - 1;
    struct q_rollup_stats st;
    int rc = q_rollup_each(v->s, c->f.pid, c->f.from, to, on_seg, c, &st, v->prog);
    v->st.missing_segments += st.missing;
    if (rc < 0)
        return rc;
    c->irow = 0;
    c->eof = c->nrows == 0;
    return 0;
}
