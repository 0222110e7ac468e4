/*
 * sql_scan.c — the record tables (see sql_scan.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_sched.h"
#include "collector/query/q_text.h"
#include "collector/sql/sql_scan.h"
#include "collector/sql/sql_stack.h"
#include "collector/sql/sql_val.h"
#include "shm/record.h"

/* the runtime id a built-in record carries; false for records without one */
static bool rec_runtime(const struct d9_rec_hdr *rec, size_t len, uint16_t *rt)
{
    switch (rec->type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_POLL_END: {
        struct d9_rec_poll_end r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_WAKE: {
        struct d9_rec_wake r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        struct d9_rec_worker r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE: {
        struct d9_rec_task r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    case D9_REC_QUEUE_DEPTH: {
        struct d9_rec_queue_depth r;
        if (len < sizeof r)
            return false;
        memcpy(&r, rec, sizeof r);
        *rt = r.runtime;
        return true;
    }
    default:
        return false;
    }
}

static const char *src_runtime(const struct q_rec_src *src, uint16_t rt, char *buf, size_t cap)
{
    const struct q_meta_src *m = src->meta;
    const char *n = m && m->runtime ? m->runtime(m->ctx, rt) : NULL;
    if (n)
        return n;
    snprintf(buf, cap, "#%u", (unsigned)rt);
    return buf;
}

void sql_scan_end(struct cur *c)
{
    if (!c->it)
        return;
    q_scan_close(c->it);
    c->it = NULL;
    struct q_scan_stats *t = &c->vt->ctx->st;
    t->blocks += c->st.blocks;
    t->records += c->st.records;
    t->lost += c->st.lost;
    t->bad_blocks += c->st.bad_blocks;
    t->missing_segments += c->st.missing_segments;
}

int sql_scan_begin(struct cur *c, uint64_t from, uint64_t to)
{
    struct q_filter f = c->f;
    f.from = from;
    f.to = to;
    return q_scan_open(c->vt->ctx->s, &f, &c->st, c->vt->ctx->prog, &c->it);
}

/* Does the current record belong to this table (beyond the scan's filter)? */
static bool rec_matches(struct cur *c)
{
    const struct tab_def *d = c->vt->def;
    if (c->rt_set) {
        uint16_t rt;
        char buf[24];
        if (!rec_runtime(c->rec, c->len, &rt) ||
            strcmp(src_runtime(c->src, rt, buf, sizeof buf), c->rt_name) != 0)
            return false;
    }
    if (d->kind == K_SCHED_WAITS) {
        uint64_t ns;
        return q_sched_wait(c->rec, c->len, &ns);
    }
    if (d->kind == K_CPU_SAMPLES && c->sample_tid) {
        struct d9_rec_stack s;
        if (c->len < sizeof s)
            return false;
        memcpy(&s, c->rec, sizeof s);
        return s.tid == c->sample_tid;
    }
    if (d->kind == K_EVENTS && c->src->ring == SYM_SEG_RING)
        return false;           /* the collector's d9.map records are not the program's */
    if (d->kind == K_CUSTOM) {
        struct d9_rec_custom r;
        if (c->len < sizeof r)
            return false;
        memcpy(&r, c->rec, sizeof r);
        const struct q_meta_src *m = c->src->meta;
        if (m->ctx != c->last_meta || r.schema != c->last_schema) {
            const struct shm_meta_entry *e = m->schema ? m->schema(m->ctx, r.schema) : NULL;
            c->last_meta = m->ctx;
            c->last_schema = r.schema;
            c->last_match = e && e->name && strcmp(e->name, c->vt->ev->event) == 0;
        }
        return c->last_match;
    }
    return true;
}

static const struct q_decoded *decoded(struct cur *c)
{
    if (c->decoded)
        return c->dec;
    if (!c->dec && !(c->dec = malloc(sizeof *c->dec)))
        return NULL;
    if (q_decode(c->rec, c->len, c->src->meta, c->dec) < 0)
        return NULL;
    c->decoded = true;
    return c->dec;
}

static void result_field(sqlite3_context *cx, const struct q_field *f)
{
    switch (f->type) {
    case Q_V_U64:
    case Q_V_HEX:
        sql_val_u64(cx, f->u);
        break;
    case Q_V_I64:
        sqlite3_result_int64(cx, f->i);
        break;
    case Q_V_F64:
        sqlite3_result_double(cx, f->f);
        break;
    case Q_V_BOOL:
        sqlite3_result_int(cx, f->u != 0);
        break;
    case Q_V_STR:
        sqlite3_result_text(cx, f->s, (int)f->slen, SQLITE_TRANSIENT);
        break;
    default:
        sqlite3_result_null(cx);
        break;
    }
}

static void col_fields_json(struct cur *c, sqlite3_context *cx)
{
    const struct q_decoded *d = decoded(c);
    if (!d) {
        sqlite3_result_null(cx);
        return;
    }
    free(c->json);
    c->json = NULL;
    FILE *f = open_memstream(&c->json, &c->jsonlen);
    if (!f) {
        sqlite3_result_error_nomem(cx);
        return;
    }
    fputc('{', f);
    q_decode_print_json_members(f, d, 0, d->nfields, false);
    if (d->error) {
        fputs(d->nfields ? ",\"error\":" : "\"error\":", f);
        q_text_json(f, d->error, strlen(d->error));
    }
    fputc('}', f);
    if (fclose(f) != 0) {
        sqlite3_result_error_nomem(cx);
        return;
    }
    sqlite3_result_text(cx, c->json, (int)c->jsonlen, SQLITE_TRANSIENT);
}

void sql_scan_column(struct cur *c, sqlite3_context *cx, int col)
{
    const struct tab_def *d = c->vt->def;
    if (col == C_PID) {
        sqlite3_result_int64(cx, c->src->pid);
        return;
    }
    if (col == C_TID && d->kind != K_CPU_SAMPLES) {
        sqlite3_result_int64(cx, c->src->tid);
        return;
    }
    if (col == C_TS) {
        sql_val_u64(cx, c->rec->ts);
        return;
    }
    char buf[24];
    uint16_t rt;
    if (col == 3 && d->rt_col == 3 && rec_runtime(c->rec, c->len, &rt)) {
        sql_val_str(cx, src_runtime(c->src, rt, buf, sizeof buf));
        return;
    }
    switch (d->kind) {
    case K_WAKES: {
        struct d9_rec_wake r;
        memcpy(&r, c->rec, sizeof r);
        if (col == 4)
            sql_val_u64(cx, r.waker);
        else if (col == 5)
            sql_val_u64(cx, r.wakee);
        else if (r.target_worker != D9_WORKER_NONE)
            sqlite3_result_int(cx, r.target_worker);
        return;
    }
    case K_SPAWNS:
    case K_TERMINATES: {
        struct d9_rec_task r;
        memcpy(&r, c->rec, sizeof r);
        if (col == 4) {
            sql_val_u64(cx, r.task);
        } else if (col == 5) {
            sqlite3_result_int64(cx, r.loc);
        } else if (col == 6) {
            const struct q_meta_src *m = c->src->meta;
            const struct shm_meta_entry *e = m->location ? m->location(m->ctx, r.loc) : NULL;
            sql_val_str(cx, q_loc_text(e, r.loc, c->text, sizeof c->text));
        }
        return;
    }
    case K_SCHED_WAITS: {
        struct d9_rec_worker r;
        memcpy(&r, c->rec, sizeof r);
        if (col == SW_WORKER)
            sqlite3_result_int(cx, r.worker);
        else if (col == SW_KIND)
            sql_val_str(cx, r.h.type == D9_REC_WORKER_PARK ? "park" : "unpark");
        else if (col == SW_WAIT)
            sql_val_u64(cx, r.sched_wait_ns);
        else if (col == SW_CPU)
            sql_val_u64(cx, r.cpu_ns);
        return;
    }
    case K_QUEUE_DEPTHS: {
        struct d9_rec_queue_depth r;
        memcpy(&r, c->rec, sizeof r);
        if (col == 4) {
            if (r.worker != D9_WORKER_NONE)
                sqlite3_result_int(cx, r.worker);
        } else {
            sql_val_u64(cx, r.depth);
        }
        return;
    }
    case K_CPU_SAMPLES: {
        struct d9_rec_stack s;
        memcpy(&s, c->rec, sizeof s);
        uint16_t n;
        if (col == C_TID)
            sqlite3_result_int64(cx, s.tid);
        else if (col == 3)
            sql_val_str(cx, c->rec->type == D9_REC_CPU_SAMPLE ? "cpu" : "off_cpu");
        else if (col == 4)
            sql_val_u64(cx, sql_stack_id(c->src->process_id, c->rec, c->len, &n));
        else if (col == 5)
            sql_val_u64(cx, s.weight);
        else if (col == 6)
            sqlite3_result_int(cx, (int)(sql_stack_id(c->src->process_id, c->rec, c->len, &n), n));
        return;
    }
    case K_EVENTS:
        if (col == 3) {
            sql_val_str(cx, shm_record_type_name(c->rec->type));
        } else if (col == 4) {
            const struct q_decoded *dd = c->rec->type == D9_REC_CUSTOM ? decoded(c) : NULL;
            if (dd && dd->event)
                sql_val_str(cx, dd->event);
        } else if (col == 5) {
            sql_val_str(cx, c->src->thread ? c->src->thread : "");
        } else {
            col_fields_json(c, cx);
        }
        return;
    case K_CUSTOM: {
        if (col == C_TASK) {
            /* the task whose poll it was emitted in; NULL outside polls */
            struct d9_rec_custom r;
            if (c->len >= sizeof r) {
                memcpy(&r, c->rec, sizeof r);
                if (r.task != D9_TASK_NONE)
                    sql_val_u64(cx, r.task);
            }
            return;
        }
        const struct q_decoded *dd = decoded(c);
        unsigned fi = (unsigned)col - C_FIELDS;
        if (!dd || fi >= c->vt->ev->nfields)
            return;
        const char *want = c->vt->ev->fields[fi];
        for (unsigned i = dd->first_custom; i < dd->nfields; i++)
            if (strcmp(dd->f[i].name, want) == 0) {
                result_field(cx, &dd->f[i]);
                return;
            }
        return;
    }
    default:
        return;
    }
}

int sql_scan_next(struct cur *c)
{
    c->decoded = false;
    while (c->it) {
        int r = q_scan_step(c->it, &c->src, &c->rec, &c->len);
        if (r < 0)
            return r;
        if (r == 0) {
            sql_scan_end(c);
            return 0;
        }
        if (!c->rec)
            return 1;                   /* a gap: only a scan with f.gaps (the polls) gets one */
        if (rec_matches(c))
            return 1;
    }
    return 0;
}

int sql_scan_step(struct cur *c)
{
    int r = sql_scan_next(c);
    if (r < 0)
        return r;
    c->eof = r == 0;
    return 0;
}

int64_t sql_scan_key(const struct cur *c)
{
    uint64_t h = store_hash64(store_hash64(c->src->segment_id) ^ ((uint64_t)c->src->ring << 32 | c->src->generation)) ^
                 store_hash64((uint64_t)c->rec->seq << 16 ^ c->rec->type) ^ store_hash64(c->rec->ts + 1);
    return (int64_t)(h & (uint64_t)INT64_MAX);
}

void sql_scan_close(struct cur *c)
{
    sql_scan_end(c);
    free(c->dec);
    free(c->json);
    c->dec = NULL;
    c->json = NULL;
}
