/*
 * sql_stack.c — the stacks table (see sql_stack.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/sql/sql_stack.h"
#include "collector/sql/sql_val.h"
#include "collector/store/sym.h"

/* stack_id of a CPU_SAMPLE / SCHED_SWITCH record (shm_record_check passed) */
uint64_t sql_stack_id(int64_t process_id, const struct d9_rec_hdr *rec, size_t len,
                            uint16_t *nframes)
{
    struct d9_rec_stack s;
    if (len < sizeof s) {
        *nframes = 0;
        return store_hash64((uint64_t)process_id) & (uint64_t)INT64_MAX;
    }
    memcpy(&s, rec, sizeof s);
    size_t max = (len - sizeof s) / 8;
    uint16_t n = s.nframes <= max ? s.nframes : (uint16_t)max;
    uint64_t h = store_hash64((uint64_t)process_id ^ STORE_HASH_GOLDEN) ^ n;
    const uint8_t *ips = (const uint8_t *)rec + sizeof s;
    for (uint16_t i = 0; i < n; i++) {
        uint64_t ip;
        memcpy(&ip, ips + (size_t)i * 8, 8);
        h = store_hash64(h ^ ip) + i;
    }
    *nframes = n;
    return h & (uint64_t)INT64_MAX;
}

static struct stk *stack_find(struct sql_vtab *v, uint64_t id)
{
    if (!v->capslot)
        return NULL;
    for (size_t j = store_hash64(id) & (v->capslot - 1); v->slot[j]; j = (j + 1) & (v->capslot - 1))
        if (v->stk[v->slot[j] - 1].id == id)
            return &v->stk[v->slot[j] - 1];
    return NULL;
}

static int stack_insert(struct sql_vtab *v, uint64_t id, const struct q_rec_src *src,
                        const struct d9_rec_hdr *rec, size_t len)
{
    if ((v->nstk + 1) * 2 > v->capslot) {
        size_t nc = v->capslot ? v->capslot * 2 : 1024;
        size_t *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return -ENOMEM;
        for (size_t i = 0; i < v->nstk; i++) {
            size_t j = store_hash64(v->stk[i].id) & (nc - 1);
            while (ns[j])
                j = (j + 1) & (nc - 1);
            ns[j] = i + 1;
        }
        free(v->slot);
        v->slot = ns;
        v->capslot = nc;
    }
    if (v->nstk == v->capstk) {
        size_t nc = v->capstk ? v->capstk * 2 : 256;
        struct stk *s = realloc(v->stk, nc * sizeof *s);
        if (!s)
            return -ENOMEM;
        v->stk = s;
        v->capstk = nc;
    }
    struct q_frame fr[D9_STACK_MAX_FRAMES];
    int n = q_sym_frames(v->sym, src->process_id, rec, len, fr);
    if (n < 0)
        return n;
    struct stk *e = &v->stk[v->nstk];
    *e = (struct stk){ .id = id, .process_id = src->process_id, .pid = src->pid,
                       .nframes = (uint16_t)n };
    e->ips = malloc((n ? (size_t)n : 1) * sizeof *e->ips);
    e->names = malloc((n ? (size_t)n : 1) * sizeof *e->names);
    if (!e->ips || !e->names) {
        free(e->ips);
        free(e->names);
        return -ENOMEM;
    }
    for (int i = 0; i < n; i++) {
        e->ips[i] = fr[i].ip;
        e->names[i] = fr[i].name;
    }
    size_t j = store_hash64(id) & (v->capslot - 1);
    while (v->slot[j])
        j = (j + 1) & (v->capslot - 1);
    v->slot[j] = ++v->nstk;
    return 0;
}

/* The processes' memory maps (q_sym_load), then one scan of the samples:
 * the distinct stacks, their frames named by q_sym as d9 flame names them. */
static int stacks_build(struct sql_vtab *v)
{
    if (v->stacks_built)
        return 0;
    int rc = v->sym ? 0 : q_sym_new(&v->sym, v->s);
    if (rc == 0)
        rc = q_sym_load(v->sym, 0, 0, UINT64_MAX, v->prog);
    if (rc < 0)
        return rc;
    struct q_filter f = { .from = 0, .to = UINT64_MAX,
                          .types = T(D9_REC_CPU_SAMPLE) | T(D9_REC_SCHED_SWITCH) };
    struct q_scan_it *it;
    struct q_scan_stats st;
    rc = q_scan_open(v->s, &f, &st, v->prog, &it);
    if (rc < 0)
        return rc;
    struct q_rec_src src;
    const struct d9_rec_hdr *rec;
    size_t len;
    while ((rc = q_scan_next(it, &src, &rec, &len)) == 1) {
        uint16_t n;
        uint64_t id = sql_stack_id(src.process_id, rec, len, &n);
        if (!stack_find(v, id) && (rc = stack_insert(v, id, &src, rec, len)) < 0)
            break;
    }
    q_scan_close(it);
    v->st.blocks += st.blocks;
    v->st.records += st.records;
    v->st.bad_blocks += st.bad_blocks;
    v->st.missing_segments += st.missing_segments;
    if (rc < 0)
        return rc;
    v->stacks_built = true;
    return 0;
}

int sql_stack_fill(struct cur *c, uint64_t want, bool set)
{
    struct sql_vtab *v = c->vt->ctx;
    int rc = stacks_build(v);
    if (rc < 0)
        return rc;
    c->sidx = malloc((v->nstk ? v->nstk : 1) * sizeof *c->sidx);
    if (!c->sidx)
        return -ENOMEM;
    if (set) {
        struct stk *e = stack_find(v, want);
        if (e)
            c->sidx[c->nsidx++] = (size_t)(e - v->stk);
    } else {
        for (size_t i = 0; i < v->nstk; i++)
            c->sidx[c->nsidx++] = i;
    }
    /* position on the first frame of the first non-empty stack */
    c->isidx = 0;
    c->depth = 0;
    while (c->isidx < c->nsidx && v->stk[c->sidx[c->isidx]].nframes == 0)
        c->isidx++;
    c->eof = c->isidx >= c->nsidx;
    return 0;
}

int sql_stack_step(struct cur *c)
{
    const struct sql_vtab *v = c->vt->ctx;
    c->depth++;
    while (c->isidx < c->nsidx && c->depth >= v->stk[c->sidx[c->isidx]].nframes) {
        c->isidx++;
        c->depth = 0;
    }
    c->eof = c->isidx >= c->nsidx;
    return 0;
}

void sql_stack_column(struct cur *c, sqlite3_context *cx, int col)
{
    struct sql_vtab *v = c->vt->ctx;
    struct stk *e = &v->stk[c->sidx[c->isidx]];
    if (col == ST_ID)
        sql_val_u64(cx, e->id);
    else if (col == ST_DEPTH)
        sqlite3_result_int(cx, c->depth);
    else if (col == ST_FRAME)
        sql_val_str(cx, e->names[c->depth]);
    else if (col == ST_ADDRESS)
        sql_val_u64(cx, e->ips[c->depth]);
    else
        sqlite3_result_int64(cx, e->pid);
}

uint64_t sql_stack_current(const struct cur *c)
{
    return c->vt->ctx->stk[c->sidx[c->isidx]].id;
}

void sql_stack_reset(struct cur *c)
{
    free(c->sidx);
    c->sidx = NULL;
    c->nsidx = c->isidx = 0;
}

void sql_stack_free(struct sql_vtab *v)
{
    for (size_t i = 0; i < v->nstk; i++) {
        free(v->stk[i].names);
        free(v->stk[i].ips);
    }
    free(v->stk);
    free(v->slot);
    q_sym_free(v->sym);
}
