/*
 * sql_rollup.c — poll_stats and worker_stats (see sql_rollup.h).
 */
#include <errno.h>
#include <stdlib.h>
#include "collector/query/q_rollup.h"
#include "collector/sql/sql_list.h"
#include "collector/sql/sql_rollup.h"

static int in_window(const struct cur *c, uint64_t bucket)
{
    return bucket >= c->f.from && bucket <= c->f.to;
}

static int on_seg(void *arg, const struct q_rollup_seg *g)
{
    struct cur *c = arg;
    struct sql_vtab *v = c->vt->ctx;
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

int sql_rollup_fill(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    c->ncols = (c->vt->def->kind == K_WORKER_STATS ? WS_NCOLS : PS_NCOLS) + 1;
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
