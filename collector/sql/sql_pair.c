/*
 * sql_pair.c — the paired tables (see sql_pair.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/sql/sql_pair.h"
#include "collector/sql/sql_scan.h"
#include "collector/sql/sql_val.h"

static bool polls_open(struct cur *c)
{
    size_t it = 0;
    struct q_poll p;
    return q_pair_next_open(c->polls, &it, &p) != 0;
}

static struct park_slot *park_slot_of(struct cur *c, const struct q_rec_src *src, bool create)
{
    for (size_t i = 0; i < c->nparks; i++) {
        struct park_slot *p = &c->parks[i];
        if (p->process_id == src->process_id && p->ring == src->ring &&
            p->generation == src->generation)
            return p;
    }
    if (!create)
        return NULL;
    if (c->nparks == c->capparks) {
        size_t nc = c->capparks ? c->capparks * 2 : 16;
        struct park_slot *n = realloc(c->parks, nc * sizeof *n);
        if (!n)
            return NULL;
        c->parks = n;
        c->capparks = nc;
    }
    struct park_slot *p = &c->parks[c->nparks++];
    *p = (struct park_slot){ .process_id = src->process_id, .ring = src->ring,
                             .generation = src->generation };
    return p;
}

/* Feed the current record: 1 when it closes an interval (row ready). */
static int pair_feed(struct cur *c, bool may_open)
{
    if (c->vt->def->kind == K_POLLS) {
        if (c->rec && c->rec->type == D9_REC_POLL_START && !may_open)
            return 0;
        int r = q_pair_feed(c->polls, c->src, c->rec, c->len, &c->poll);
        c->poll_unfinished = false;
        return r;
    }
    struct d9_rec_worker w;
    if (c->len < sizeof w)
        return 0;
    memcpy(&w, c->rec, sizeof w);
    bool sampled = !(w.flags & D9_WORKER_UNSAMPLED);
    if (w.h.type == D9_REC_WORKER_PARK) {
        if (!may_open)
            return 0;
        struct park_slot *p = park_slot_of(c, c->src, true);
        if (!p)
            return -ENOMEM;
        if (!p->open)
            c->parks_open++;
        p->open = true;
        p->pid = c->src->pid;
        p->tid = c->src->tid;
        p->runtime = w.runtime;
        p->worker = w.worker;
        p->start_ns = w.h.ts;
        p->cpu_ns = w.cpu_ns;
        p->park_wait_ns = w.sched_wait_ns;
        p->cpu_sampled = sampled;
        return 0;
    }
    struct park_slot *p = park_slot_of(c, c->src, false);
    if (!p || !p->open)
        return 0;
    p->open = false;
    c->parks_open--;
    c->park = (struct park_row){
        .process_id = p->process_id, .pid = p->pid, .tid = p->tid, .runtime = p->runtime,
        .worker = p->worker, .start_ns = p->start_ns,
        .end_ns = w.h.ts < p->start_ns ? p->start_ns : w.h.ts, .cpu_ns = p->cpu_ns,
        .park_wait_ns = p->park_wait_ns, .wait_ns = w.sched_wait_ns, .finished = true, .cpu_sampled = p->cpu_sampled,
        .wait_sampled = sampled,
    };
    return 1;
}

static bool pair_any_open(struct cur *c)
{
    return c->vt->def->kind == K_POLLS ? polls_open(c) : c->parks_open > 0;
}

/* The next interval still open after the scans: 1 = row ready, 0 = none. */
static int pair_unfinished(struct cur *c)
{
    if (c->vt->def->kind == K_POLLS) {
        if (!q_pair_next_open(c->polls, &c->open_it, &c->poll))
            return 0;
        /* the one rule: up to its process's last record (q_pair_end_open);
         * end_ns stays NULL, dur_ns is that lower bound */
        c->poll_why = q_pair_end_open(c->vt->ctx->s, UINT64_MAX, &c->poll);
        c->poll_unfinished = true;
        return 1;
    }
    for (; c->open_it < c->nparks; c->open_it++) {
        struct park_slot *p = &c->parks[c->open_it];
        if (!p->open)
            continue;
        c->park = (struct park_row){
            .process_id = p->process_id, .pid = p->pid, .tid = p->tid, .runtime = p->runtime,
            .worker = p->worker, .start_ns = p->start_ns, .cpu_ns = p->cpu_ns,
            .park_wait_ns = p->park_wait_ns, .cpu_sampled = p->cpu_sampled,
        };
        c->open_it++;
        return 1;
    }
    return 0;
}

static int group_step(struct cur *c);
int sql_pair_step(struct cur *c);

/* The thread table index of a poll's thread. */
static int grp_thread(struct cur *c, const struct q_poll *p)
{
    uint64_t h = store_hash64((uint64_t)p->process_id ^ ((uint64_t)p->ring << 32 | p->generation));
    uint32_t *slot = &c->gthr_cache[h % SQL_THR_CACHE];
    const struct grp_thr *t = *slot ? &c->gthr[*slot - 1] : NULL;
    if (t && t->process_id == p->process_id && t->ring == p->ring && t->generation == p->generation)
        return (int)(*slot - 1);
    size_t i = 0;
    while (i < c->ngthr && !(c->gthr[i].process_id == p->process_id &&
                             c->gthr[i].ring == p->ring && c->gthr[i].generation == p->generation))
        i++;
    if (i == c->ngthr) {
        if (c->ngthr >= GRP_UNFINISHED - 1)
            return -E2BIG;
        if (c->ngthr == c->capgthr) {
            size_t nc = c->capgthr ? c->capgthr * 2 : 16;
            struct grp_thr *n = realloc(c->gthr, nc * sizeof *n);
            if (!n)
                return -ENOMEM;
            c->gthr = n;
            c->capgthr = nc;
        }
        c->gthr[c->ngthr++] = (struct grp_thr){ p->process_id, p->pid, p->tid, p->ring,
                                                p->generation };
    }
    *slot = (uint32_t)i + 1;
    return (int)i;
}

/* The bucket of a poll: by loc, or by its location text as col_poll names it. */
static int grp_bucket(struct cur *c, const struct q_poll *p, int by)
{
    if (by == GRP_BY_LOC)
        return sql_group_bucket_int(c->grp, p->loc);
    uint64_t h = store_hash64((uint64_t)p->process_id) ^ p->loc;
    struct grp_loc *e = &c->gloc[h % SQL_LOC_CACHE];
    if (e->bucket && e->process_id == p->process_id && e->loc == p->loc)
        return e->bucket - 1;
    int b = sql_group_bucket_text(c->grp, q_names_location(c->vt->ctx->names, p->process_id,
                                                                   p->loc, c->text, sizeof c->text));
    if (b >= 0) {
        e->process_id = p->process_id;
        e->loc = p->loc;
        e->bucket = b + 1;
    }
    return b;
}

/* Run the whole pairing into buckets, then serve the first row. */
static int group_fill(struct cur *c, int by)
{
    int rc = sql_group_new(sizeof(struct grp_row), &c->grp);
    for (rc = rc < 0 ? rc : sql_pair_step(c); rc == 0 && !c->eof; rc = sql_pair_step(c)) {
        const struct q_poll *p = &c->poll;
        int b = grp_bucket(c, p, by), t = b < 0 ? b : grp_thread(c, p);
        if (t < 0)
            return t;
        struct grp_row *r = sql_group_slot(c->grp, b);
        if (!r)
            return -ENOMEM;
        *r = (struct grp_row){
            .thr = (uint32_t)t | (c->poll_unfinished ? GRP_UNFINISHED : 0), .loc = p->loc,
            .task = p->task, .runtime = p->runtime, .worker = p->worker,
            .start_ns = p->start_ns, .end_ns = p->end_ns, .why = c->poll_why,
        };
        if (sql_group_bytes(c->grp) > SQL_GROUP_MEM_HARD)
            return -E2BIG;
    }
    if (rc < 0 || (rc = sql_group_seal(c->grp)) < 0)
        return rc;
    c->grp_serving = true;
    c->eof = false;
    return group_step(c);
}

static int group_step(struct cur *c)
{
    const struct grp_row *r = sql_group_next(c->grp);
    if (!r) {
        c->eof = true;
        return 0;
    }
    const struct grp_thr *t = &c->gthr[r->thr & ~GRP_UNFINISHED];
    c->poll = (struct q_poll){
        .process_id = t->process_id, .pid = t->pid, .tid = t->tid, .ring = t->ring,
        .generation = t->generation, .task = r->task, .loc = r->loc, .runtime = r->runtime,
        .worker = r->worker, .start_ns = r->start_ns, .end_ns = r->end_ns,
    };
    c->poll_unfinished = (r->thr & GRP_UNFINISHED) != 0;
    c->poll_why = (enum q_open_why)r->why;
    return 0;
}

static int on_seg_starts(void *arg, const struct idx_read_segment *r)
{
    *(uint64_t *)arg += r->counts[D9_REC_POLL_START];
    return 0;
}

/* May the polls of this plan be held for grouped serving? Their number is
 * at most the poll_starts of the segments the constant pid and start_ns
 * constraints select (others are not known at planning: all segments). */
bool sql_pair_group_fits(struct vt *v, sqlite3_index_info *ii)
{
#if SQLITE_VERSION_NUMBER >= 3038000
    uint32_t pid = 0;
    uint64_t from = 0, to = UINT64_MAX, starts = 0;
    for (int i = 0; i < ii->nConstraint; i++) {
        const struct sqlite3_index_constraint *k = &ii->aConstraint[i];
        sqlite3_value *val = NULL;
        if (!k->usable || sqlite3_vtab_rhs_value(ii, i, &val) != SQLITE_OK || !val)
            continue;
        char op = k->op == SQLITE_INDEX_CONSTRAINT_EQ ? '=' : k->op == SQLITE_INDEX_CONSTRAINT_GT ? '>'
                : k->op == SQLITE_INDEX_CONSTRAINT_GE ? 'g' : k->op == SQLITE_INDEX_CONSTRAINT_LT ? '<'
                : k->op == SQLITE_INDEX_CONSTRAINT_LE ? 'l' : 0;
        uint32_t id = 0;
        if (k->iColumn == PL_PID && op == '=') {
            if (!sql_val_narrow_id(val, &id))
                return true;                /* no process: no rows */
            if (id)
                pid = id;
        } else if (k->iColumn == PL_START && op && !sql_val_narrow_time(op, val, &from, &to))
            return true;                    /* an empty window */
    }
    if (from > to)
        return true;
    if (q_store_segments(v->ctx->s, pid, from, to, on_seg_starts, &starts) < 0)
        return false;
    return starts <= SQL_GROUP_MEM / sizeof(struct grp_row);
#else
    (void)v;
    (void)ii;
    return false;
#endif
}

static void col_poll(struct cur *c, sqlite3_context *cx, int col)
{
    const struct q_poll *p = &c->poll;
    struct q_names *nm = c->vt->ctx->names;
    switch (col) {
    case PL_PID: sqlite3_result_int64(cx, p->pid); break;
    case PL_TID: sqlite3_result_int64(cx, p->tid); break;
    case PL_RUNTIME:
        sql_val_str(cx, q_names_runtime(nm, p->process_id, p->runtime, c->text, sizeof c->text));
        break;
    case PL_WORKER: sqlite3_result_int(cx, p->worker); break;
    case PL_TASK: sql_val_u64(cx, p->task); break;
    case PL_LOC: sqlite3_result_int64(cx, p->loc); break;
    case PL_LOCATION: {
        struct loc_cache *e = &c->locs[p->loc % SQL_LOC_CACHE];
        if (!e->text || e->process_id != p->process_id || e->loc != p->loc) {
            free(e->text);
            e->process_id = p->process_id;
            e->loc = p->loc;
            e->text = strdup(q_names_location(nm, p->process_id, p->loc, c->text,
                                                sizeof c->text));
            if (!e->text) {
                sqlite3_result_error_nomem(cx);
                break;
            }
        }
        /* copied: the cache slot may be refilled while SQLite still holds
         * this value (a GROUP BY compares each row's key with the last) */
        sqlite3_result_text(cx, e->text, -1, SQLITE_TRANSIENT);
        break;
    }
    case PL_START: sql_val_u64(cx, p->start_ns); break;
    case PL_END:
        if (!c->poll_unfinished)
            sql_val_u64(cx, p->end_ns);
        break;
    case PL_DUR: sql_val_u64(cx, p->end_ns - p->start_ns); break;
    case PL_UNFINISHED:
        if (c->poll_unfinished)
            sql_val_str(cx, q_pair_open_text(c->poll_why));
        break;
    }
}

static void col_park(struct cur *c, sqlite3_context *cx, int col)
{
    const struct park_row *p = &c->park;
    switch (col) {
    case PK_PID: sqlite3_result_int64(cx, p->pid); break;
    case PK_TID: sqlite3_result_int64(cx, p->tid); break;
    case PK_RUNTIME:
        sql_val_str(cx, q_names_runtime(c->vt->ctx->names, p->process_id, p->runtime, c->text,
                                         sizeof c->text));
        break;
    case PK_WORKER: sqlite3_result_int(cx, p->worker); break;
    case PK_START: sql_val_u64(cx, p->start_ns); break;
    case PK_END:
        if (p->finished)
            sql_val_u64(cx, p->end_ns);
        break;
    case PK_DUR:
        if (p->finished)
            sql_val_u64(cx, p->end_ns - p->start_ns);
        break;
    case PK_CPU:
        if (p->cpu_sampled)
            sql_val_u64(cx, p->cpu_ns);
        break;
    case PK_WAIT:
        if (p->finished && p->wait_sampled)
            sql_val_u64(cx, p->wait_ns);
        break;
    case PK_PARK_WAIT:
        if (p->cpu_sampled)
            sql_val_u64(cx, p->park_wait_ns);
        break;
    }
}

int sql_pair_step(struct cur *c)
{
    if (c->grp_serving)
        return group_step(c);
    for (;;) {
        if (c->it) {
            int r = sql_scan_next(c);
            if (r < 0)
                return r;
            if (r == 1) {
                int p = pair_feed(c, c->phase == 1);
                if (p < 0)
                    return p;
                if (p == 1)
                    return 0;
                if (c->phase == 2 && !pair_any_open(c))
                    sql_scan_end(c);
                continue;
            }
        }
        if (c->phase == 1 || c->phase == 2) {
            /* the window's scan is over: follow open intervals past its end */
            if (c->phase == 1) {
                c->ext_from = c->win_to + 1;
                c->phase = 2;
            }
            if (c->win_to != UINT64_MAX && pair_any_open(c) && c->ext_from <= c->tmax &&
                c->ext_from != 0) {
                uint64_t to = c->ext_len > UINT64_MAX - c->ext_from ? UINT64_MAX
                                                                    : c->ext_from + c->ext_len - 1;
                int r = sql_scan_begin(c, c->ext_from, to);
                if (r < 0)
                    return r;
                c->ext_from = to == UINT64_MAX ? 0 : to + 1;
                c->ext_len = c->ext_len > UINT64_MAX / 2 ? UINT64_MAX : c->ext_len * 2;
                continue;
            }
            c->phase = 3;
            c->open_it = 0;
        }
        if (c->phase == 3 && pair_unfinished(c) == 1)
            return 0;
        c->phase = 4;
        c->eof = true;
        return 0;
    }
}

int sql_pair_begin(struct cur *c, int idx_num)
{
    const struct tab_def *d = c->vt->def;
    int rc;
    if (d->kind == K_POLLS && (rc = q_pair_new(&c->polls)) < 0)
        return rc;
    uint64_t tmin;
    c->phase = 1;
    c->win_to = c->f.to;
    c->ext_len = c->f.to - c->f.from < UINT64_MAX ? c->f.to - c->f.from + 1 : UINT64_MAX;
    if (c->ext_len < 1000000)
        c->ext_len = 1000000;
    int tr = q_store_time_range(c->vt->ctx->s, c->f.pid, &tmin, &c->tmax);
    if (tr < 0)
        c->tmax = 0;
    if (tr < 0 && tr != -ENOENT)
        q_store_index_warn(c->vt->ctx->s, "polls open at the window's end left unpaired");
    bool grouped = d->kind == K_POLLS && (idx_num == GRP_BY_LOC || idx_num == GRP_BY_LOCATION);
    c->f.ring_order_only = grouped;     /* the buckets reorder the rows anyway */
    c->f.gaps = d->kind == K_POLLS;     /* a poll is never paired across a block not read */
    rc = sql_scan_begin(c, c->f.from, c->f.to);
    if (rc == 0 && grouped)
        rc = group_fill(c, idx_num);
    else if (rc == 0)
        rc = sql_pair_step(c);
    return rc;
}

void sql_pair_column(struct cur *c, sqlite3_context *cx, int col)
{
    if (c->vt->def->kind == K_POLLS)
        col_poll(c, cx, col);
    else
        col_park(c, cx, col);
}

int64_t sql_pair_key(const struct cur *c)
{
    uint64_t h;
    if (c->vt->def->kind == K_POLLS)
        h = store_hash64(store_hash64((uint64_t)c->poll.process_id ^ ((uint64_t)c->poll.ring << 32 |
                                                         c->poll.generation)) ^ c->poll.task) ^
            store_hash64(c->poll.start_ns);
    else
        h = store_hash64(store_hash64((uint64_t)c->park.process_id) ^ c->park.tid) ^ store_hash64(c->park.start_ns);
    return (int64_t)(h & (uint64_t)INT64_MAX);
}

void sql_pair_reset(struct cur *c)
{
    q_pair_free(c->polls);
    c->polls = NULL;
    free(c->parks);
    c->parks = NULL;
    c->nparks = c->capparks = c->parks_open = 0;
    sql_group_free(c->grp);
    c->grp = NULL;
    c->grp_serving = false;
    free(c->gthr);
    c->gthr = NULL;
    c->ngthr = c->capgthr = 0;
    memset(c->gloc, 0, sizeof c->gloc);
    memset(c->gthr_cache, 0, sizeof c->gthr_cache);
}

void sql_pair_close(struct cur *c)
{
    sql_pair_reset(c);
    for (size_t i = 0; i < SQL_LOC_CACHE; i++)
        free(c->locs[i].text);
}
