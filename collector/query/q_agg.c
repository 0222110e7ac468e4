/*
 * q_agg.c — a window's aggregates from the rollups of its whole buckets plus
 * the records of its edges (see q_agg.h).
 *
 * Accumulators: workers keyed by (process, runtime, worker) and locations by
 * (process, runtime, loc), each in an open-addressing table of indices into
 * a growing array; a location's histogram is merged bin by bin
 * (rollup_hist_add), its quantiles computed once at the end.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_agg.h"
#include "collector/query/q_edge.h"
#include "collector/query/q_rollup.h"
#include "collector/query/q_sched.h"
#include "collector/store/idx_read.h"
#include "collector/store/store_hash.h"

#define QA_EMPTY UINT32_MAX
#define QA_SLOTS_MIN 64u

struct loc_acc {
    struct q_agg_loc l;
    struct rollup_hist *h;
};

struct q_agg {
    struct q_agg_worker *w;
    size_t nw, capw;
    uint32_t *ws;                   /* slots of w; capws a power of two */
    size_t capws;
    struct loc_acc *l;
    size_t nl, capl;
    uint32_t *ls;
    size_t capls;
    struct q_agg_loc *out;          /* q_agg_locs' array, built at the end */
};

unsigned q_agg_edges(uint64_t from, uint64_t to, struct rollup_range r[2], uint64_t *whole_lo,
                     uint64_t *whole_hi)
{
    const uint64_t B = ROLLUP_BUCKET_NS;
    unsigned n = 0;
    uint64_t lo = 1, hi = 0;        /* none */
    if (from > to) {
        *whole_lo = lo, *whole_hi = hi;
        return 0;
    }
    int whole = (from % B == 0 || from <= UINT64_MAX - B) && to >= B - 1;
    if (whole) {
        lo = from % B == 0 ? from : from - from % B + B;
        uint64_t x = to - (B - 1);
        hi = x - x % B;
        whole = lo <= hi;
    }
    if (!whole) {
        r[n++] = (struct rollup_range){ from, to };
        lo = 1, hi = 0;
    } else {
        if (from < lo)
            r[n++] = (struct rollup_range){ from, lo - 1 };
        if (hi + (B - 1) < to)
            r[n++] = (struct rollup_range){ hi + B, to };
    }
    *whole_lo = lo;
    *whole_hi = hi;
    return n;
}

/* ---- accumulators ----------------------------------------------------------- */

static int slots_fit(uint32_t **s, size_t *cap, size_t n, uint64_t (*h)(const struct q_agg *, size_t),
                     const struct q_agg *a)
{
    if (*cap && (n + 1) * 2 <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : QA_SLOTS_MIN;
    uint32_t *t = malloc(c * sizeof *t);
    if (!t)
        return -ENOMEM;
    memset(t, 0xff, c * sizeof *t);
    for (size_t i = 0; i < n; i++) {
        size_t j = (size_t)h(a, i) & (c - 1);
        while (t[j] != QA_EMPTY)
            j = (j + 1) & (c - 1);
        t[j] = (uint32_t)i;
    }
    free(*s);
    *s = t;
    *cap = c;
    return 0;
}

static uint64_t hash_w(int64_t pid, uint16_t rt, uint16_t w)
{
    return store_hash2((uint64_t)pid, (uint64_t)rt << 16 | w);
}

static uint64_t hash_l(int64_t pid, uint16_t rt, uint32_t loc)
{
    return store_hash2((uint64_t)pid, (uint64_t)rt << 32 | loc);
}

static uint64_t h_w(const struct q_agg *a, size_t i)
{
    return hash_w(a->w[i].process_id, a->w[i].runtime, a->w[i].worker);
}

static uint64_t h_l(const struct q_agg *a, size_t i)
{
    return hash_l(a->l[i].l.process_id, a->l[i].l.runtime, a->l[i].l.loc);
}

static struct q_agg_worker *worker_of(struct q_agg *a, const struct q_rollup_seg *g,
                                      uint16_t rt, uint16_t wk)
{
    if (a->nw >= UINT32_MAX - 1 || slots_fit(&a->ws, &a->capws, a->nw, h_w, a) < 0)
        return NULL;
    size_t j = (size_t)hash_w(g->process_id, rt, wk) & (a->capws - 1);
    for (; a->ws[j] != QA_EMPTY; j = (j + 1) & (a->capws - 1)) {
        struct q_agg_worker *o = &a->w[a->ws[j]];
        if (o->process_id == g->process_id && o->runtime == rt && o->worker == wk)
            return o;
    }
    if (a->nw == a->capw) {
        size_t c = a->capw ? a->capw * 2 : 16;
        struct q_agg_worker *n = realloc(a->w, c * sizeof *n);
        if (!n)
            return NULL;
        a->w = n;
        a->capw = c;
    }
    a->w[a->nw] = (struct q_agg_worker){ .process_id = g->process_id, .pid = g->pid,
                                         .runtime = rt, .worker = wk };
    a->ws[j] = (uint32_t)a->nw;
    return &a->w[a->nw++];
}

static struct loc_acc *loc_of(struct q_agg *a, const struct q_rollup_seg *g, uint16_t rt,
                              uint32_t loc)
{
    if (a->nl >= UINT32_MAX - 1 || slots_fit(&a->ls, &a->capls, a->nl, h_l, a) < 0)
        return NULL;
    size_t j = (size_t)hash_l(g->process_id, rt, loc) & (a->capls - 1);
    for (; a->ls[j] != QA_EMPTY; j = (j + 1) & (a->capls - 1)) {
        struct loc_acc *o = &a->l[a->ls[j]];
        if (o->l.process_id == g->process_id && o->l.runtime == rt && o->l.loc == loc)
            return o;
    }
    if (a->nl == a->capl) {
        size_t c = a->capl ? a->capl * 2 : 16;
        struct loc_acc *n = realloc(a->l, c * sizeof *n);
        if (!n)
            return NULL;
        a->l = n;
        a->capl = c;
    }
    struct rollup_hist *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    a->l[a->nl] = (struct loc_acc){ .l = { .process_id = g->process_id, .pid = g->pid,
                                           .runtime = rt, .loc = loc }, .h = h };
    a->ls[j] = (uint32_t)a->nl;
    return &a->l[a->nl++];
}

/* Add a segment's entries whose bucket is in [lo, hi] (every entry: lo 0, hi max). */
static int add_view(struct q_agg *a, const struct q_rollup_seg *g, uint64_t lo, uint64_t hi)
{
    const struct rollup_view *v = g->v;
    size_t off = 0;
    uint32_t i = 0;
    struct rollup_poll p;
    while (rollup_next_poll(v, &off, &i, &p) == 1) {
        if (p.bucket_ns < lo || p.bucket_ns > hi)
            continue;
        struct loc_acc *l = loc_of(a, g, p.runtime, p.loc);
        if (!l)
            return -ENOMEM;
        l->l.count += p.count;
        l->l.unfinished += p.unfinished;
        l->l.sum_ns += p.sum_ns;
        if (p.max_ns > l->l.max_ns)
            l->l.max_ns = p.max_ns;
        rollup_hist_add(l->h, &p);
    }
    struct rollup_worker rw;
    for (uint32_t k = 0; k < v->nworker && rollup_worker_at(v, k, &rw) == 0; k++) {
        if (rw.bucket_ns < lo || rw.bucket_ns > hi)
            continue;
        struct q_agg_worker *w = worker_of(a, g, rw.runtime, rw.worker);
        if (!w)
            return -ENOMEM;
        w->polls += rw.polls;
        w->busy_ns += rw.busy_ns;
        w->parks += rw.parks;
        w->parked_ns += rw.parked_ns;
        w->waits += rw.waits;
        w->wait_sum_ns += rw.wait_sum_ns;
        if (rw.wait_max_ns > w->wait_max_ns)
            w->wait_max_ns = rw.wait_max_ns;
        if (rw.flags & ROLLUP_WORKER_CPU) {
            if (!w->have_cpu || rw.cpu_first < w->cpu_first)
                w->cpu_first = rw.cpu_first;
            if (!w->have_cpu || rw.cpu_last > w->cpu_last)
                w->cpu_last = rw.cpu_last;
            w->have_cpu = 1;
        }
    }
    return 0;
}

/* ---- the window ------------------------------------------------------------- */

struct whole_arg {
    struct q_agg *a;
    uint64_t lo, hi;
};

static int on_whole(void *arg, const struct q_rollup_seg *g)
{
    struct whole_arg *w = arg;
    return add_view(w->a, g, w->lo, w->hi);
}

struct seg_ref {
    uint64_t id, t_min, t_max;
    int64_t process_id;
    uint32_t pid;
    char *path;
};

struct seg_list {
    struct seg_ref *r;
    size_t n, cap;
};

static int on_seg(void *arg, const struct idx_read_segment *s)
{
    struct seg_list *l = arg;
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 64;
        struct seg_ref *n = realloc(l->r, c * sizeof *n);
        if (!n)
            return -ENOMEM;
        l->r = n;
        l->cap = c;
    }
    char *p = strdup(s->path ? s->path : "");
    if (!p)
        return -ENOMEM;
    l->r[l->n++] = (struct seg_ref){ s->id, s->t_min, s->t_max, s->process_id, s->pid, p };
    return 0;
}

/* Read one segment's records counting only inside ranges, and add them. */
static int scan_seg(struct q_agg *a, struct q_store *s, const struct seg_ref *g,
                    const struct rollup_range *r, unsigned n, unsigned flags, const char *prog,
                    struct q_agg_stats *st)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", q_store_dir(s), g->path);
    uint8_t *buf = NULL;
    size_t len = 0;
    struct rollup_view v;
    struct q_skip_note note = { prog ? prog : "d9", q_store_dir(s), g->path };
    int e = -ENOENT;
    if (!(flags & Q_AGG_RAW)) {
        struct q_edge_stats es;
        e = q_edge_rollup(s, g->id, path, r, n,
                          (flags & Q_AGG_LOCS) ? Q_EDGE_POLLS : Q_EDGE_LOOKBACK,
                          q_store_skip_note, &note, &buf, &len, &es);
        st->blocks += es.blocks;
        st->blocks_read += es.read;
    }
    if (e < 0 && e != -ENOMEM) {        /* the index lists no block, or one does not match:
                                         * the whole file, which names what is wrong */
        free(buf);
        buf = NULL;
        e = rollup_file_only(path, r, n, q_store_skip_note, &note, &buf, &len);
    }
    if (e == 0)
        e = rollup_decode(buf, len, &v, NULL, 0) == 0 ? 0 : -EBADMSG;
    if (e == -ENOMEM) {
        free(buf);
        return e;
    }
    if (e < 0) {
        fprintf(stderr, "%s: segment %s: its records cannot be read (%s): left out\n",
                prog ? prog : "d9", g->path, strerror(-e));
        st->missing++;
        free(buf);
        return 0;
    }
    st->scanned++;
    struct q_rollup_seg rs = { g->id, g->process_id, g->pid, &v, 1, NULL, NULL };
    e = add_view(a, &rs, 0, UINT64_MAX);
    free(buf);
    return e;
}

/* q_sched_workers' order, so that both answers list workers alike */
static int by_worker(const void *x, const void *y)
{
    const struct q_agg_worker *a = x, *b = y;
    return q_sched_key_cmp((struct q_sched_key){ a->pid, a->process_id, a->runtime, a->worker },
                           (struct q_sched_key){ b->pid, b->process_id, b->runtime, b->worker });
}

static int by_loc(const void *x, const void *y)
{
    const struct q_agg_loc *a = x, *b = y;
    if (a->sum_ns != b->sum_ns)
        return a->sum_ns > b->sum_ns ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->process_id != b->process_id)
        return a->process_id < b->process_id ? -1 : 1;
    if (a->runtime != b->runtime)
        return a->runtime < b->runtime ? -1 : 1;
    return a->loc < b->loc ? -1 : a->loc > b->loc;
}

static int finish(struct q_agg *a)
{
    a->out = malloc((a->nl ? a->nl : 1) * sizeof *a->out);
    if (!a->out)
        return -ENOMEM;
    for (size_t i = 0; i < a->nl; i++) {
        struct q_agg_loc *o = &a->out[i];
        *o = a->l[i].l;
        o->p50_ns = rollup_hist_quantile(a->l[i].h, 0.50, o->max_ns);
        o->p90_ns = rollup_hist_quantile(a->l[i].h, 0.90, o->max_ns);
        o->p99_ns = rollup_hist_quantile(a->l[i].h, 0.99, o->max_ns);
        o->p999_ns = rollup_hist_quantile(a->l[i].h, 0.999, o->max_ns);
    }
    qsort(a->out, a->nl, sizeof *a->out, by_loc);
    qsort(a->w, a->nw, sizeof *a->w, by_worker);
    return 0;
}

int q_agg_run(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to, unsigned flags,
              const char *prog, struct q_agg **out, struct q_agg_stats *st)
{
    if (!s || !out)
        return -EINVAL;
    *out = NULL;
    struct q_agg_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    struct q_agg *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    struct rollup_range edge[2];
    uint64_t wlo, whi;
    unsigned nedge = q_agg_edges(from, to, edge, &wlo, &whi);
    int raw = (flags & Q_AGG_RAW) != 0;
    if (raw && from <= to) {
        edge[0] = (struct rollup_range){ from, to };
        nedge = 1;
        wlo = 1, whi = 0;
    }
    int rc = 0;
    if (wlo <= whi) {
        struct q_rollup_stats rst;
        struct whole_arg wa = { a, wlo, whi };
        rc = q_rollup_each(s, pid, wlo, whi + (ROLLUP_BUCKET_NS - 1), on_whole, &wa, &rst, prog);
        st->segments = rst.segments;
        st->missing += rst.missing;
    }
    /* the edges: each segment that meets one is read once, for both */
    struct seg_list l = { 0 };
    if (rc >= 0 && nedge && from <= to)
        rc = q_store_segments(s, pid, from, to, on_seg, &l);
    for (size_t i = 0; rc >= 0 && i < l.n; i++) {
        struct rollup_range mine[2];
        unsigned n = 0;
        for (unsigned k = 0; k < nedge; k++)
            if (l.r[i].t_min <= edge[k].to && l.r[i].t_max >= edge[k].from)
                mine[n++] = edge[k];
        if (n)
            rc = scan_seg(a, s, &l.r[i], mine, n, flags, prog, st);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.r[i].path);
    free(l.r);
    if (rc >= 0 && (flags & Q_AGG_LOCS))
        a->nw = 0;                  /* their busy_ns is not exact without the look-back */
    if (rc >= 0)
        rc = finish(a);
    if (rc < 0) {
        q_agg_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

void q_agg_free(struct q_agg *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nl; i++)
        free(a->l[i].h);
    free(a->l);
    free(a->ls);
    free(a->w);
    free(a->ws);
    free(a->out);
    free(a);
}

const struct q_agg_worker *q_agg_workers(const struct q_agg *a, size_t *n)
{
    *n = a ? a->nw : 0;
    return a ? a->w : NULL;
}

const struct q_agg_loc *q_agg_locs(const struct q_agg *a, size_t *n)
{
    *n = a ? a->nl : 0;
    return a ? a->out : NULL;
}
