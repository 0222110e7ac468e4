/*
 * sql_list.c — the listing tables (see sql_list.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_loopwork.h"
#include "collector/query/q_sched.h"
#include "collector/sql/sql_list.h"
#include "collector/sql/sql_val.h"
#include "collector/store/idx_trig.h"
#include "collector/store/seg.h"

struct mval *sql_list_row_add(struct cur *c)
{
    /* capacity doubles from 64 rows: a power of two, or 0 before the first row */
    if (c->nrows >= 64 && (c->nrows & (c->nrows - 1)) == 0) {
        struct mval *n = realloc(c->rows, c->nrows * 2 * c->ncols * sizeof *n);
        if (!n)
            return NULL;
        c->rows = n;
    } else if (c->nrows == 0) {
        struct mval *n = realloc(c->rows, 64 * c->ncols * sizeof *n);
        if (!n)
            return NULL;
        c->rows = n;
    }
    struct mval *r = &c->rows[c->nrows++ * c->ncols];
    memset(r, 0, c->ncols * sizeof *r);
    return r;
}

void sql_list_mv_int(struct mval *m, int64_t v) { m->t = SQLITE_INTEGER; m->i = v; }

void sql_list_mv_u64(struct mval *m, uint64_t v)
{
    if (v > (uint64_t)INT64_MAX) {
        m->t = SQLITE_FLOAT;
        m->d = (double)v;
    } else {
        sql_list_mv_int(m, (int64_t)v);
    }
}

int sql_list_mv_str(struct mval *m, const char *s)
{
    m->t = SQLITE_TEXT;
    m->s = strdup(s ? s : "");
    return m->s ? 0 : -ENOMEM;
}

/* 0 = unknown in the index: NULL */
static void mv_ns(struct mval *m, uint64_t v)
{
    if (v)
        sql_list_mv_u64(m, v);
}

/* The row's key for its rowid, in the slot after its columns. */
void sql_list_mv_key(struct cur *c, struct mval *r, uint64_t a, uint64_t b, uint64_t k)
{
    sql_list_mv_int(&r[c->ncols - 1], (int64_t)(store_hash64(store_hash64(a) ^ b) ^ k));
}

static void rows_free(struct cur *c)
{
    for (size_t i = 0; i < c->nrows * c->ncols; i++)
        free(c->rows[i].s);
    free(c->rows);
    c->rows = NULL;
    c->nrows = c->irow = 0;
}

static int on_proc(void *arg, const struct idx_read_process *p)
{
    struct cur *c = arg;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    sql_list_mv_int(&r[0], p->pid);
    sql_list_mv_u64(&r[1], p->start_time);
    sql_list_mv_int(&r[2], p->uid);
    int e = sql_list_mv_str(&r[3], p->comm) | sql_list_mv_str(&r[4], p->exe) | sql_list_mv_str(&r[5], p->state);
    if (p->has_exit_code)
        sql_list_mv_int(&r[6], p->exit_code);
    mv_ns(&r[7], p->first_ns);
    mv_ns(&r[8], p->last_ns);
    sql_list_mv_u64(&r[9], p->records);
    sql_list_mv_u64(&r[10], p->lost);
    sql_list_mv_u64(&r[11], p->segments);
    sql_list_mv_u64(&r[12], p->bytes);
    sql_list_mv_key(c, r, (uint64_t)p->id, 0, 0);
    return e ? -ENOMEM : 0;
}

static int on_thread(void *arg, const struct idx_read_thread *t)
{
    struct cur *c = arg;
    if (c->f.tid && t->tid != c->f.tid)
        return 0;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    sql_list_mv_int(&r[0], t->pid);
    sql_list_mv_int(&r[1], t->tid);
    sql_list_mv_int(&r[2], t->ring);
    sql_list_mv_int(&r[3], t->generation);
    int e = sql_list_mv_str(&r[4], t->name);
    mv_ns(&r[5], t->first_ns);
    mv_ns(&r[6], t->last_ns);
    sql_list_mv_int(&r[7], t->ended);
    sql_list_mv_key(c, r, (uint64_t)t->process_id, t->ring, (uint64_t)t->generation << 1);
    return e;
}

static int on_runtime(void *arg, const struct idx_read_runtime *t)
{
    struct cur *c = arg;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    sql_list_mv_int(&r[0], t->pid);
    sql_list_mv_int(&r[1], t->runtime_id);
    sql_list_mv_key(c, r, (uint64_t)t->process_id, t->runtime_id, 3);
    return sql_list_mv_str(&r[2], t->name);
}

static int on_segment(void *arg, const struct idx_read_segment *s)
{
    struct cur *c = arg;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    sql_list_mv_int(&r[0], s->pid);
    sql_list_mv_u64(&r[1], s->id);
    int e = sql_list_mv_str(&r[2], s->comm) | sql_list_mv_str(&r[3], s->path);
    sql_list_mv_u64(&r[4], s->t_min);
    sql_list_mv_u64(&r[5], s->t_max);
    sql_list_mv_u64(&r[6], s->bytes);
    sql_list_mv_u64(&r[7], s->records);
    sql_list_mv_u64(&r[8], s->lost);
    sql_list_mv_key(c, r, s->id, 0, 5);
    return e ? -ENOMEM : 0;
}

static int on_proc_id(void *arg, const struct idx_read_process *p)
{
    struct sql_list_procs *l = arg;
    if (l->n % 32 == 0) {
        int64_t *ni = realloc(l->id, (l->n + 32) * sizeof *ni);
        if (!ni)
            return -ENOMEM;
        l->id = ni;
        uint32_t *np = realloc(l->pid, (l->n + 32) * sizeof *np);
        if (!np)
            return -ENOMEM;
        l->pid = np;
    }
    l->id[l->n] = p->id;
    l->pid[l->n++] = p->pid;
    return 0;
}

static int locations_fill(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    struct sql_list_procs l;
    int rc = sql_list_procs(v->s, c->f.pid, &l);
    for (size_t i = 0; rc >= 0 && i < l.n; i++) {
        for (uint32_t id = 1; id <= SEG_META_IDS_MAX; id++) {
            const struct shm_meta_entry *e = q_names_meta(v->names, l.id[i], D9_META_LOCATION,
                                                            id);
            if (!e)
                continue;
            struct mval *r = sql_list_row_add(c);
            if (!r) {
                rc = -ENOMEM;
                break;
            }
            sql_list_mv_int(&r[0], l.pid[i]);
            sql_list_mv_int(&r[1], id);
            sql_list_mv_key(c, r, (uint64_t)l.id[i], id, 7);
            sql_list_mv_int(&r[3], e->line);
            if (sql_list_mv_str(&r[2], e->name) | sql_list_mv_str(&r[4], e->func) |
                sql_list_mv_str(&r[5], q_names_location(v->names, l.id[i], id, c->text, sizeof c->text))) {
                rc = -ENOMEM;
                break;
            }
        }
    }
    sql_list_procs_free(&l);
    return rc < 0 ? rc : 0;
}

static int on_sched(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                    size_t len)
{
    return q_sched_feed(arg, src, rec, len);
}

/* The workers of the store (of c->f.pid), as d9 sched computes them. */
static int workers_fill(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    struct q_sched *s;
    if (q_sched_new(&s) < 0)
        return -ENOMEM;
    struct q_filter f = { .from = 0, .to = UINT64_MAX, .pid = c->f.pid, .types = Q_SCHED_TYPES };
    struct q_scan_stats st;
    int rc = q_scan(v->s, &f, on_sched, s, &st, v->prog);
    v->st.blocks += st.blocks;
    v->st.records += st.records;
    v->st.bad_blocks += st.bad_blocks;
    v->st.missing_segments += st.missing_segments;
    size_t n = 0;
    const struct q_sched_worker *w = rc < 0 ? NULL : q_sched_workers(s, &n);
    if (rc >= 0 && !w)
        rc = -ENOMEM;
    for (size_t i = 0; rc >= 0 && i < n; i++, w++) {
        struct mval *r = sql_list_row_add(c);
        if (!r) {
            rc = -ENOMEM;
            break;
        }
        sql_list_mv_int(&r[0], w->pid);
        rc = sql_list_mv_str(&r[1], q_names_runtime(v->names, w->process_id, w->runtime, c->text,
                                           sizeof c->text));
        sql_list_mv_int(&r[2], w->worker);
        sql_list_mv_int(&r[3], w->tid);
        const uint64_t u[] = { w->polls, w->parks, w->unparks, w->waits, w->wait_sum_ns,
                               w->wait_p50_ns, w->wait_p99_ns, w->wait_max_ns, w->cpu_ns,
                               w->parked_ns, w->span_ns, w->busy_ns };
        for (size_t k = 0; k < sizeof u / sizeof u[0]; k++)
            sql_list_mv_u64(&r[4 + k], u[k]);
        r[16].t = SQLITE_FLOAT;
        r[16].d = w->busy_pct;
        sql_list_mv_key(c, r, (uint64_t)w->process_id, (uint64_t)w->runtime << 16 | w->worker, 11);
    }
    q_sched_free(s);
    return rc < 0 ? rc : 0;
}

struct lw_fill {
    struct cur *c;
    struct q_loopwork *lw;
};

static int on_loopwork(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                       size_t len)
{
    struct lw_fill *a = arg;
    struct cur *c = a->c;
    struct q_loopwork_iv w;
    int rc = q_loopwork_feed(a->lw, src, rec, len, &w);
    if (rc <= 0)
        return rc;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    sql_list_mv_int(&r[0], w.pid);
    sql_list_mv_int(&r[1], w.tid);
    rc = sql_list_mv_str(&r[2], q_names_runtime(c->vt->ctx->names, w.process_id, w.runtime,
                                                c->text, sizeof c->text));
    sql_list_mv_int(&r[3], w.worker);
    sql_list_mv_u64(&r[4], w.start_ns);
    sql_list_mv_u64(&r[5], w.end_ns);
    sql_list_mv_u64(&r[6], w.end_ns - w.start_ns);
    sql_list_mv_u64(&r[7], w.samples);
    sql_list_mv_key(c, r, (uint64_t)w.process_id, w.tid, w.start_ns);
    return rc < 0 ? rc : 0;
}

/* The loop work of the store (of c->f.pid), as q_loopwork defines it. */
static int loopwork_fill(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    struct lw_fill a = { c, NULL };
    if (q_loopwork_new(&a.lw, 0) < 0)
        return -ENOMEM;
    struct q_filter f = { .from = 0, .to = UINT64_MAX, .pid = c->f.pid,
                          .types = Q_LOOPWORK_TYPES, .gaps = true };
    struct q_scan_stats st;
    int rc = q_scan(v->s, &f, on_loopwork, &a, &st, v->prog);
    v->st.blocks += st.blocks;
    v->st.records += st.records;
    v->st.bad_blocks += st.bad_blocks;
    v->st.missing_segments += st.missing_segments;
    q_loopwork_free(a.lw);
    return rc < 0 ? rc : 0;
}

static int on_trigger(void *arg, const struct idx_trigger *t)
{
    struct cur *c = arg;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    sql_list_mv_int(&r[0], t->pid);
    sql_list_mv_u64(&r[1], t->t_ns);
    int e = sql_list_mv_str(&r[2], t->source) | sql_list_mv_str(&r[3], t->reason) |
            sql_list_mv_str(&r[4], t->verdict);
    if (t->win_t0_ns || t->win_t1_ns) {
        sql_list_mv_u64(&r[5], t->win_t0_ns);
        sql_list_mv_u64(&r[6], t->win_t1_ns);
    }
    if (t->fields)
        e |= sql_list_mv_str(&r[7], t->fields);
    sql_list_mv_key(c, r, (uint64_t)t->id, 0, 0);
    return e ? -ENOMEM : 0;
}

static int on_kept(void *arg, const struct idx_kept *k)
{
    struct cur *c = arg;
    struct mval *r = sql_list_row_add(c);
    if (!r)
        return -ENOMEM;
    sql_list_mv_int(&r[0], k->pid);
    sql_list_mv_u64(&r[1], k->t0_ns);
    sql_list_mv_u64(&r[2], k->t1_ns);
    sql_list_mv_u64(&r[3], k->trig_ns);
    sql_list_mv_int(&r[4], k->ntrig);
    int e = sql_list_mv_str(&r[5], k->reason);
    sql_list_mv_int(&r[6], k->segment_id);
    e |= sql_list_mv_str(&r[7], k->path);
    sql_list_mv_u64(&r[8], k->bytes);
    sql_list_mv_u64(&r[9], k->records);
    if (k->source_segment)
        sql_list_mv_int(&r[10], k->source_segment);
    sql_list_mv_key(c, r, (uint64_t)k->segment_id, 0, 0);
    return e ? -ENOMEM : 0;
}

int sql_list_fill(struct cur *c)
{
    struct sql_vtab *v = c->vt->ctx;
    int rc = 0;
    switch (c->vt->def->kind) {
    case K_PROCESSES:
        c->ncols = 13 + 1;
        rc = q_store_processes(v->s, c->f.pid, 0, UINT64_MAX, on_proc, c);
        break;
    case K_THREADS:
        c->ncols = 8 + 1;
        rc = q_store_threads(v->s, c->f.pid, 0, on_thread, c);
        break;
    case K_RUNTIMES:
        c->ncols = 3 + 1;
        rc = q_store_runtimes(v->s, c->f.pid, 0, on_runtime, c);
        break;
    case K_SEGMENTS:
        c->ncols = 9 + 1;
        rc = q_store_segments(v->s, c->f.pid, 0, UINT64_MAX, on_segment, c);
        break;
    case K_LOCATIONS:
        c->ncols = 6 + 1;
        rc = locations_fill(c);
        break;
    case K_WORKERS:
        c->ncols = 17 + 1;
        rc = workers_fill(c);
        break;
    case K_TRIGGERS:
        c->ncols = 8 + 1;
        rc = idx_trig_foreach(q_store_idx(v->s), c->f.pid, 0, UINT64_MAX, on_trigger, c);
        break;
    case K_KEPT:
        c->ncols = 11 + 1;
        rc = idx_trig_kept_foreach(q_store_idx(v->s), c->f.pid, on_kept, c);
        break;
    case K_LOOP_WORK:
        c->ncols = 8 + 1;
        rc = loopwork_fill(c);
        break;
    default:
        break;
    }
    if (rc < 0)
        return rc;
    c->irow = 0;
    c->eof = c->nrows == 0;
    return 0;
}

int sql_list_step(struct cur *c)
{
    if (++c->irow >= c->nrows)
        c->eof = true;
    return 0;
}

void sql_list_column(struct cur *c, sqlite3_context *cx, int col)
{
    const struct mval *m = &c->rows[c->irow * c->ncols + (size_t)col];
    if (m->t == SQLITE_INTEGER)
        sqlite3_result_int64(cx, m->i);
    else if (m->t == SQLITE_FLOAT)
        sqlite3_result_double(cx, m->d);
    else if (m->t == SQLITE_TEXT)
        sql_val_str(cx, m->s);
}

int64_t sql_list_key(const struct cur *c)
{
    return c->rows[c->irow * c->ncols + c->ncols - 1].i;
}

int sql_list_procs(struct q_store *s, uint32_t pid, struct sql_list_procs *l)
{
    memset(l, 0, sizeof *l);
    int rc = q_store_processes(s, pid, 0, UINT64_MAX, on_proc_id, l);
    return rc < 0 ? rc : 0;
}

void sql_list_procs_free(struct sql_list_procs *l)
{
    free(l->id);
    free(l->pid);
    memset(l, 0, sizeof *l);
}

void sql_list_reset(struct cur *c)
{
    rows_free(c);
}
