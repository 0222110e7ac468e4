/*
 * q_decode.c — records to named fields and to text / JSON lines (q_decode.h).
 *
 * Called by query-driven subcommands (events, export) and the unit tests.
 * Every read from a record is bounded by the length shm_record_check proved
 * and, for custom payloads, by payload_len; struct fields are copied out with
 * memcpy because record bytes carry no alignment promise for us.
 * Never allocates, never reads metadata it was not given.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_decode.h"
#include "collector/query/q_loc.h"
#include "collector/query/q_text.h"
#include "shm/record.h"

static struct q_field *add(struct q_decoded *d, const char *name, enum q_val_type t)
{
    if (d->nfields >= Q_DEC_MAX_FIELDS)
        return NULL;
    struct q_field *f = &d->f[d->nfields++];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->type = t;
    return f;
}

static void add_u64(struct q_decoded *d, const char *name, uint64_t v)
{
    struct q_field *f = add(d, name, Q_V_U64);
    if (f)
        f->u = v;
}

static void add_str(struct q_decoded *d, const char *name, const char *s, size_t n)
{
    struct q_field *f = add(d, name, Q_V_STR);
    if (f) {
        f->s = s;
        f->slen = n;
    }
}

static void add_cstr(struct q_decoded *d, const char *name, const char *s)
{
    add_str(d, name, s, strlen(s));
}

static void add_runtime(struct q_decoded *d, const struct q_meta_src *m, uint16_t id)
{
    const char *name = m && m->runtime ? m->runtime(m->ctx, id) : NULL;
    if (name) {
        add_cstr(d, "runtime", name);
    } else {
        snprintf(d->rt_text, sizeof d->rt_text, "#%u", (unsigned)id);
        add_cstr(d, "runtime", d->rt_text);
    }
}

static void add_worker(struct q_decoded *d, const char *name, uint16_t w, const char *none)
{
    if (w == D9_WORKER_NONE)
        add_cstr(d, name, none);
    else
        add_u64(d, name, w);
}

static void add_loc(struct q_decoded *d, const struct q_meta_src *m, uint32_t id)
{
    if (id == 0) {
        add_cstr(d, "loc", "?");
        return;
    }
    const struct shm_meta_entry *e = m && m->location ? m->location(m->ctx, id) : NULL;
    add_cstr(d, "loc", q_loc_text(e, id, d->loc_text, sizeof d->loc_text));
}

static void decode_custom(const uint8_t *p, size_t len, const struct q_meta_src *m,
                          struct q_decoded *d)
{
    struct d9_rec_custom c;
    memcpy(&c, p, sizeof c);
    d->schema = c.schema;
    const struct shm_meta_entry *s = m && m->schema ? m->schema(m->ctx, c.schema) : NULL;
    d->first_custom = d->nfields;
    if (!s || s->kind != D9_META_SCHEMA) {
        d->event = NULL;
        add_u64(d, "schema", c.schema);
        add_u64(d, "payload_len", c.payload_len);
        d->first_custom = d->nfields;
        d->error = "unknown schema";
        return;
    }
    d->event = s->name;
    if (c.task != D9_TASK_NONE) {       /* emitted inside that task's poll */
        add_u64(d, "task", c.task);
        d->first_custom = d->nfields;
    }
    /* shm_record_check proved payload_len <= len - sizeof c */
    const uint8_t *q = p + sizeof c;
    size_t avail = c.payload_len <= len - sizeof c ? c.payload_len : len - sizeof c;
    size_t off = 0;
    for (unsigned i = 0; i < s->nfields && i < D9_SCHEMA_MAX_FIELDS; i++) {
        const char *name = s->fields[i].name;
        uint8_t t = s->fields[i].type;
        if (t == D9_FT_STR) {
            uint32_t n;
            if (avail - off < sizeof n) {
                d->error = "payload shorter than its schema";
                return;
            }
            memcpy(&n, q + off, sizeof n);
            off += sizeof n;
            if (n > avail - off) {
                d->error = "string field longer than the payload";
                return;
            }
            add_str(d, name, (const char *)q + off, n);
            off += n;
            size_t pad = (D9_REC_ALIGN - (off % D9_REC_ALIGN)) % D9_REC_ALIGN;
            off = pad <= avail - off ? off + pad : avail;
            continue;
        }
        uint64_t raw;
        if (avail - off < sizeof raw) {
            d->error = "payload shorter than its schema";
            return;
        }
        memcpy(&raw, q + off, sizeof raw);
        off += sizeof raw;
        struct q_field *f;
        switch (t) {
        case D9_FT_U64:
            add_u64(d, name, raw);
            break;
        case D9_FT_I64:
            if ((f = add(d, name, Q_V_I64)))
                memcpy(&f->i, &raw, sizeof raw);
            break;
        case D9_FT_F64:
            if ((f = add(d, name, Q_V_F64)))
                memcpy(&f->f, &raw, sizeof raw);
            break;
        case D9_FT_BOOL:
            if ((f = add(d, name, Q_V_BOOL)))
                f->u = raw != 0;
            break;
        default:
            d->error = "unknown field type in schema";
            return;
        }
    }
    if (off < avail)
        d->error = "payload longer than its schema";
}

int q_decode(const void *rec, size_t len, const struct q_meta_src *m, struct q_decoded *d)
{
    memset(d, 0, sizeof *d);
    int n = shm_record_check(rec, len);
    if (n < 0)
        return -EBADMSG;
    const uint8_t *p = rec;
    len = (size_t)n;
    struct d9_rec_hdr h;
    memcpy(&h, p, sizeof h);
    d->type = h.type;
    d->type_name = shm_record_type_name(h.type);
    d->ts = h.ts;

    switch (h.type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start r;
        memcpy(&r, p, sizeof r);
        add_u64(d, "task", r.task);
        add_runtime(d, m, r.runtime);
        add_u64(d, "worker", r.worker);
        add_loc(d, m, r.loc);
        break;
    }
    case D9_REC_POLL_END: {
        struct d9_rec_poll_end r;
        memcpy(&r, p, sizeof r);
        add_u64(d, "task", r.task);
        add_runtime(d, m, r.runtime);
        add_u64(d, "worker", r.worker);
        break;
    }
    case D9_REC_WAKE: {
        struct d9_rec_wake r;
        memcpy(&r, p, sizeof r);
        add_u64(d, "waker", r.waker);
        add_u64(d, "wakee", r.wakee);
        add_runtime(d, m, r.runtime);
        add_worker(d, "target_worker", r.target_worker, "none");
        break;
    }
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        struct d9_rec_worker r;
        memcpy(&r, p, sizeof r);
        add_runtime(d, m, r.runtime);
        add_u64(d, "worker", r.worker);
        /* unsampled (DIAL9_SCHED_SAMPLE_US): the agent read nothing; no fields */
        if (!(r.flags & D9_WORKER_UNSAMPLED)) {
            add_u64(d, "cpu_ns", r.cpu_ns);
            add_u64(d, "sched_wait_ns", r.sched_wait_ns);
        }
        break;
    }
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE: {
        struct d9_rec_task r;
        memcpy(&r, p, sizeof r);
        add_u64(d, "task", r.task);
        add_runtime(d, m, r.runtime);
        if (h.type == D9_REC_TASK_SPAWN)
            add_loc(d, m, r.loc);
        break;
    }
    case D9_REC_QUEUE_DEPTH: {
        struct d9_rec_queue_depth r;
        memcpy(&r, p, sizeof r);
        add_u64(d, "depth", r.depth);
        add_runtime(d, m, r.runtime);
        add_worker(d, "worker", r.worker, "global");
        break;
    }
    case D9_REC_CUSTOM:
        decode_custom(p, len, m, d);
        return 0;
    case D9_REC_CPU_SAMPLE:
    case D9_REC_SCHED_SWITCH: {
        struct d9_rec_stack r;
        memcpy(&r, p, sizeof r);
        add_u64(d, "sampled_tid", r.tid);
        add_u64(d, "weight_ns", r.weight);
        add_u64(d, "nframes", r.nframes);
        if (r.flags & D9_STACK_KERNEL)
            add_cstr(d, "kernel", "yes");
        if (r.flags & D9_STACK_TRUNCATED)
            add_cstr(d, "truncated", "yes");
        struct q_field *f = add(d, "ips", Q_V_IPS);
        if (f) {
            /* shm_record_check proved len == sizeof r + 8 * nframes */
            f->ips = p + sizeof r;
            f->nips = r.nframes;
        }
        break;
    }
    default:
        add_u64(d, "type_id", h.type);
        break;
    }
    d->first_custom = d->nfields;
    return 0;
}

const struct q_field *q_decode_field(const struct q_decoded *d, const char *name)
{
    for (unsigned i = 0; i < d->nfields; i++)
        if (strcmp(d->f[i].name, name) == 0)
            return &d->f[i];
    return NULL;
}

static uint64_t ip_at(const struct q_field *f, unsigned i)
{
    uint64_t v;
    memcpy(&v, f->ips + (size_t)i * sizeof v, sizeof v);
    return v;
}

/* Text values are bare unless that would be ambiguous: empty, spaces, '=',
 * quotes, backslashes or non-printable bytes. */
static bool needs_quotes(const char *s, size_t n)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f)
            return true;
    }
    return false;
}

static void print_value_text(FILE *out, const struct q_field *f)
{
    switch (f->type) {
    case Q_V_U64:
        fprintf(out, "%" PRIu64, f->u);
        break;
    case Q_V_I64:
        fprintf(out, "%" PRId64, f->i);
        break;
    case Q_V_F64:
        fprintf(out, "%.6g", f->f);
        break;
    case Q_V_BOOL:
        fputs(f->u ? "true" : "false", out);
        break;
    case Q_V_STR:
        q_text_escaped(out, f->s, f->slen, needs_quotes(f->s, f->slen));
        break;
    case Q_V_HEX:
        fprintf(out, "0x%" PRIx64, f->u);
        break;
    case Q_V_IPS:
        for (unsigned i = 0; i < f->nips; i++)
            fprintf(out, "%s0x%" PRIx64, i ? "," : "", ip_at(f, i));
        if (f->nips == 0)
            fputs("-", out);
        break;
    }
}

static void print_value_json(FILE *out, const struct q_field *f)
{
    switch (f->type) {
    case Q_V_U64:
        fprintf(out, "%" PRIu64, f->u);
        break;
    case Q_V_I64:
        fprintf(out, "%" PRId64, f->i);
        break;
    case Q_V_F64:
        if (isfinite(f->f)) {
            /* shortest of %.15g / %.17g that reads back as the same double */
            char b[40];
            snprintf(b, sizeof b, "%.15g", f->f);
            if (strtod(b, NULL) != f->f)
                snprintf(b, sizeof b, "%.17g", f->f);
            fputs(b, out);
        } else
            fputs("null", out);     /* JSON has no NaN/Inf */
        break;
    case Q_V_BOOL:
        fputs(f->u ? "true" : "false", out);
        break;
    case Q_V_STR:
        q_text_json(out, f->s, f->slen);
        break;
    case Q_V_HEX:
        fprintf(out, "\"0x%" PRIx64 "\"", f->u);
        break;
    case Q_V_IPS:
        fputc('[', out);
        for (unsigned i = 0; i < f->nips; i++)
            fprintf(out, "%s\"0x%" PRIx64 "\"", i ? "," : "", ip_at(f, i));
        fputc(']', out);
        break;
    }
}

void q_decode_print_text(FILE *out, const struct q_line_ctx *c, const struct q_decoded *d)
{
    char tbuf[64];
    q_text_time(d->ts, c->boot_realtime_ns, c->have_wall, 9, false, tbuf, sizeof tbuf);
    fprintf(out, "%s %" PRIu32 "/%" PRIu32, tbuf, c->pid, c->tid);
    if (c->show_uid)
        fprintf(out, " uid=%" PRIu32, c->uid);
    fprintf(out, " %s", d->type_name);
    if (d->type == D9_REC_CUSTOM) {
        fputc(' ', out);
        if (d->event)
            q_text_escaped(out, d->event, strlen(d->event), false);
        else
            fputs("?", out);
    }
    for (unsigned i = 0; i < d->nfields; i++) {
        fputc(' ', out);
        q_text_escaped(out, d->f[i].name, strlen(d->f[i].name), false);
        fputc('=', out);
        print_value_text(out, &d->f[i]);
    }
    if (d->error)
        fprintf(out, " error=\"%s\"", d->error);
    fputc('\n', out);
}

unsigned q_decode_print_json_members(FILE *out, const struct q_decoded *d, unsigned from,
                                       unsigned to, bool leading_comma)
{
    unsigned n = 0;
    if (to > d->nfields)
        to = d->nfields;
    for (unsigned i = from; i < to; i++, n++) {
        if (leading_comma || n > 0)
            fputc(',', out);
        q_text_json(out, d->f[i].name, strlen(d->f[i].name));
        fputc(':', out);
        print_value_json(out, &d->f[i]);
    }
    return n;
}

void q_decode_print_json(FILE *out, const struct q_line_ctx *c, const struct q_decoded *d)
{
    fprintf(out, "{\"ts_ns\":%" PRIu64, d->ts);
    if (c->have_wall) {
        char tbuf[64];
        q_text_time(d->ts, c->boot_realtime_ns, true, 9, true, tbuf, sizeof tbuf);
        fputs(",\"time\":", out);
        q_text_json(out, tbuf, strlen(tbuf));
    }
    fprintf(out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, c->pid, c->tid);
    if (c->show_uid)
        fprintf(out, ",\"uid\":%" PRIu32, c->uid);
    if (c->comm) {
        fputs(",\"comm\":", out);
        q_text_json(out, c->comm, strlen(c->comm));
    }
    if (c->thread) {
        fputs(",\"thread\":", out);
        q_text_json(out, c->thread, strlen(c->thread));
    }
    fputs(",\"type\":", out);
    q_text_json(out, d->type_name, strlen(d->type_name));
    q_decode_print_json_members(out, d, 0, d->first_custom, true);
    if (d->type == D9_REC_CUSTOM) {
        if (d->event) {
            fputs(",\"event\":", out);
            q_text_json(out, d->event, strlen(d->event));
        }
        fputs(",\"fields\":{", out);
        q_decode_print_json_members(out, d, d->first_custom, d->nfields, false);
        fputc('}', out);
    }
    if (d->error) {
        fputs(",\"error\":", out);
        q_text_json(out, d->error, strlen(d->error));
    }
    fputs("}\n", out);
}
