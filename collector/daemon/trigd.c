/*
 * trigd.c — the collector's triggers (see trigd.h): one trig_state for the
 * daemon, fired by every source, each trigger recorded in the index and
 * counted.
 */
#include "collector/daemon/trigd.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/col_log.h"
#include "collector/store/idx_trig.h"
#include "shm/d9_abi.h"
#include "shm/meta.h"

static struct trigd {
    struct trig_state st;
    struct idx *idx;
    uint64_t count[TRIGD_SRC_COUNT][TRIGD_VERDICT_COUNT];
    uint64_t index_errors;
    struct col_ratelimit rl;
    /* triggers waiting for a safe point to go into their process's segment */
    struct seg_trigger pend[TRIGD_PENDING_MAX];
    unsigned npend;
    uint64_t pend_dropped;
} td;

static const char *const src_names[TRIGD_SRC_COUNT] = {
    "marker", "shell", "poll", "crash", "sched", "lost", "field",
};
static const char *const verdict_names[TRIGD_VERDICT_COUNT] = {
    "kept", "merged", "debounced", "rate-limited",
};

const char *trigd_source_name(int source)
{
    return source >= 0 && source < TRIGD_SRC_COUNT ? src_names[source] : "?";
}

const char *trigd_verdict_name(int verdict)
{
    return verdict >= 0 && (unsigned)verdict < TRIGD_VERDICT_COUNT ? verdict_names[verdict] : "?";
}

void trigd_init(const struct trig_cfg *c)
{
    memset(&td, 0, sizeof td);
    trig_init(&td.st, c);
}

void trigd_set_index(struct idx *x) { td.idx = x; }

struct trig_state *trigd_state(void) { return &td.st; }

uint64_t trigd_count(int source, int verdict)
{
    if (source < 0 || source >= TRIGD_SRC_COUNT || verdict < 0 ||
        (unsigned)verdict >= TRIGD_VERDICT_COUNT)
        return 0;
    return td.count[source][verdict];
}

uint64_t trigd_index_errors(void) { return td.index_errors; }

/* The kept window holding t (windows are sorted and disjoint). */
static int find_win(uint64_t t, struct trig_win *out)
{
    for (unsigned i = 0; i < td.st.nwin; i++)
        if (td.st.win[i].t0_ns <= t && t <= td.st.win[i].t1_ns) {
            *out = td.st.win[i];
            return 1;
        }
    return 0;
}

static void name_copy(char *dst, size_t cap, const char *src)
{
    memset(dst, 0, cap);
    size_t n = strlen(src);
    memcpy(dst, src, n < cap - 1 ? n : cap - 1);
}

/* Queue the trigger for its process's segment (trigd_write_blocks); the
 * oldest leaves when the queue is full. */
static void pend_add(uint32_t pid, uint64_t t_ns, int source, int v, const char *why,
                     const struct trig_win *w)
{
    if (td.npend == TRIGD_PENDING_MAX) {
        memmove(&td.pend[0], &td.pend[1], (TRIGD_PENDING_MAX - 1) * sizeof td.pend[0]);
        td.npend--;
        td.pend_dropped++;
        col_log_limited(&td.rl, COL_LOG_WARN, "triggers: %u wait for their segments; the "
                        "oldest will not survive a re-index (%" PRIu64 " so far)",
                        TRIGD_PENDING_MAX, td.pend_dropped);
    }
    struct seg_trigger *t = &td.pend[td.npend++];
    memset(t, 0, sizeof *t);
    t->t_ns = t_ns;
    t->pid = pid;
    t->win_t0_ns = w->t0_ns;
    t->win_t1_ns = w->t1_ns;
    name_copy(t->source, sizeof t->source, trigd_source_name(source));
    name_copy(t->verdict, sizeof t->verdict, trigd_verdict_name(v));
    name_copy(t->reason, sizeof t->reason, why);
}

int trigd_write_blocks(uint32_t pid, struct seg_writer *w)
{
    unsigned keep = 0;
    int rc = 0;
    for (unsigned i = 0; i < td.npend; i++) {
        if (td.pend[i].pid == pid && !rc)
            rc = seg_writer_add_trigger(w, &td.pend[i]);
        if (td.pend[i].pid != pid || rc)
            td.pend[keep++] = td.pend[i];
    }
    td.npend = keep;
    return rc;
}

/* trigd_fire with a typed trigger's fields (JSON text, NULL: none). */
static int fire(uint32_t pid, int64_t process_id, uint64_t t_ns, int source, const char *reason,
                const char *fields, struct trig_win *win)
{
    int v = trig_fire(&td.st, pid, t_ns);
    struct trig_win w;
    memset(&w, 0, sizeof w);
    if (v == TRIG_KEPT || v == TRIG_MERGED)
        find_win(t_ns, &w);
    if (win)
        *win = w;
    if (source >= 0 && source < TRIGD_SRC_COUNT && (unsigned)v < TRIGD_VERDICT_COUNT)
        td.count[source][v]++;
    char why[TRIGD_REASON_MAX + 1];
    snprintf(why, sizeof why, "%s", reason ? reason : "");
    for (unsigned char *p = (unsigned char *)why; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
    col_log(COL_LOG_INFO, "trigger: pid %" PRIu32 " %s '%s' at %" PRIu64 ": %s", pid,
            trigd_source_name(source), why, t_ns, trigd_verdict_name(v));
    pend_add(pid, t_ns, source, v, why, &w);
    if (td.idx) {
        struct idx_trigger row = {
            .pid = pid, .process_id = process_id, .t_ns = t_ns,
            .source = trigd_source_name(source), .reason = why,
            .verdict = trigd_verdict_name(v), .win_t0_ns = w.t0_ns, .win_t1_ns = w.t1_ns,
            .fields = fields,
        };
        int rc = idx_trig_add(td.idx, &row);
        if (rc) {
            td.index_errors++;
            col_log_limited(&td.rl, COL_LOG_WARN, "pid %" PRIu32 ": cannot index a trigger: %s",
                            pid, strerror(-rc));
        }
    }
    return v;
}

int trigd_fire(uint32_t pid, int64_t process_id, uint64_t t_ns, int source, const char *reason,
               struct trig_win *win)
{
    return fire(pid, process_id, t_ns, source, reason, NULL, win);
}

int trigd_wants(const struct trigd_proc *tp)
{
    return tp->nbind > 0 || td.st.cfg.poll_ms > 0 || td.st.cfg.sched_ms > 0;
}

void trigd_proc_free(struct trigd_proc *tp)
{
    free(tp->names);
    tp->names = NULL;
    tp->names_len = tp->names_cap = 0;
}

/* A typed marker's field names after "reason", NUL-ended one after the
 * other in tp->names, from b->names on. Without memory the marker fires
 * without its fields (logged). */
static void names_add(struct trigd_proc *tp, uint32_t pid, const struct shm_meta_entry *e,
                      struct trigd_bind *b)
{
    size_t need = trig_rec_names(e, b->nfields, NULL);
    if (need > UINT32_MAX - 1 - tp->names_len)
        return;
    if (tp->names_len + need > tp->names_cap) {
        size_t cap = (tp->names_len + need) * 2;
        char *n = cap <= UINT32_MAX ? realloc(tp->names, cap) : NULL;
        if (!n) {
            col_warn("pid %" PRIu32 ": no memory for the field names of trigger schema "
                     "(id %" PRIu32 "); its triggers are indexed without fields", pid, e->id);
            return;
        }
        tp->names = n;
        tp->names_cap = (uint32_t)cap;
    }
    b->names = tp->names_len;
    tp->names_len += (uint32_t)trig_rec_names(e, b->nfields, tp->names + tp->names_len);
}

static void bind_add(struct trigd_proc *tp, uint32_t pid, const struct shm_meta_entry *e,
                     unsigned rule, unsigned field)
{
    if (tp->nbind == TRIGD_BIND_MAX) {
        if (!tp->full_logged)
            col_warn("pid %" PRIu32 ": more than %u schemas fire triggers; schema '%.64s' "
                     "(id %" PRIu32 ") and later ones fire none", pid, TRIGD_BIND_MAX, e->name,
                     e->id);
        tp->full_logged = 1;
        return;
    }
    struct trigd_bind *b = &tp->bind[tp->nbind++];
    memset(b, 0, sizeof *b);
    b->schema = e->id;
    b->rule = (uint8_t)rule;
    b->field = (uint8_t)field;
    b->nfields = (uint8_t)trig_rec_types(e, b->types);
    b->names = UINT32_MAX;
    if (rule == TRIGD_BIND_MARKER && b->nfields > 1)
        names_add(tp, pid, e, b);
}

void trigd_meta(struct trigd_proc *tp, uint32_t pid, const struct shm_meta_entry *e)
{
    if (e->kind != D9_META_SCHEMA || !e->name)
        return;
    if (trig_rec_is_marker(e))
        bind_add(tp, pid, e, TRIGD_BIND_MARKER, 0);
    const struct trig_cfg *c = &td.st.cfg;
    for (uint32_t r = 0; r < c->nfield && r < TRIG_FIELD_MAX; r++) {
        const struct trig_field *f = &c->field[r];
        if (strcmp(e->name, f->schema) != 0)
            continue;
        unsigned k = 0;
        while (k < e->nfields && k < D9_SCHEMA_MAX_FIELDS &&
               !(e->fields[k].name && strcmp(e->fields[k].name, f->field) == 0))
            k++;
        if (k == e->nfields || k == D9_SCHEMA_MAX_FIELDS)
            col_warn("pid %" PRIu32 ": --trigger-field %s: schema '%s' (id %" PRIu32 ") has no "
                     "field '%s'; the rule is ignored for it", pid, f->text, f->schema, e->id,
                     f->field);
        else if (e->fields[k].type == D9_FT_STR || e->fields[k].type < D9_FT_U64 ||
                 e->fields[k].type > D9_FT_BOOL)
            col_warn("pid %" PRIu32 ": --trigger-field %s: field '%s' of schema '%s' (id %" PRIu32
                     ") is not numeric; the rule is ignored for it", pid, f->text, f->field,
                     f->schema, e->id);
        else
            bind_add(tp, pid, e, r, k);
    }
}

/* An event of a --trigger-field binding: fires when its field passes. */
static void field_check(uint32_t pid, int64_t process_id, const struct trigd_bind *b,
                        const uint8_t *r, size_t len, uint64_t ts)
{
    long off = trig_rec_field_at(r, len, b->nfields, b->types, b->field);
    if (off < 0 || b->rule >= td.st.cfg.nfield)
        return;
    const struct trig_field *f = &td.st.cfg.field[b->rule];
    uint64_t w;
    memcpy(&w, r + sizeof(struct d9_rec_custom) + off, sizeof w);
    double x;
    char val[32];
    switch (b->types[b->field]) {
    case D9_FT_U64:
        x = (double)w;
        snprintf(val, sizeof val, "%" PRIu64, w);
        break;
    case D9_FT_I64:
        x = (double)(int64_t)w;
        snprintf(val, sizeof val, "%" PRId64, (int64_t)w);
        break;
    case D9_FT_F64:
        memcpy(&x, &w, sizeof x);
        snprintf(val, sizeof val, "%g", x);
        break;
    case D9_FT_BOOL:
        x = w != 0;
        snprintf(val, sizeof val, "%u", (unsigned)(w != 0));
        break;
    default:
        return;
    }
    if (!trig_field_match(f, x))      /* a NaN passes no rule */
        return;
    char why[TRIGD_REASON_MAX + 1];
    snprintf(why, sizeof why, "%s.%s=%s %s %g", f->schema, f->field, val, trig_op_name(f->op),
             f->value);
    trigd_fire(pid, process_id, ts, TRIGD_SRC_FIELD, why, NULL);
}

int trigd_lost(uint32_t pid, int64_t process_id, uint32_t ring, uint64_t delta, uint64_t t_ns)
{
    if (!td.st.cfg.lost || !delta)
        return -1;
    char why[80];
    if (ring == TRIGD_RING_NONE)
        snprintf(why, sizeof why, "threads without a ring lost %" PRIu64 " records", delta);
    else
        snprintf(why, sizeof why, "ring %" PRIu32 " lost %" PRIu64 " records", ring, delta);
    return trigd_fire(pid, process_id, t_ns, TRIGD_SRC_LOST, why, NULL);
}

/* A record whose seq is not the next one: records were dropped (or are
 * read again), so no open poll is known to enclose what comes next. */
static void seq_check(struct trigd_ring *tr, uint32_t seq)
{
    if (tr->seq_known && seq != tr->next_seq)
        for (uint32_t i = 0; i < tr->nopen; i++)
            tr->open[i].sure = 0;
    tr->seq_known = 1;
    tr->next_seq = seq + 1;
}

static void open_remove(struct trigd_ring *tr, uint32_t i)
{
    if (i + 1 < tr->nopen)
        memmove(&tr->open[i], &tr->open[i + 1], (tr->nopen - i - 1) * sizeof tr->open[0]);
    tr->nopen--;
}

static uint64_t poll_task(const uint8_t *r)
{
    uint64_t task;      /* at the same offset in POLL_START and POLL_END */
    memcpy(&task, r + offsetof(struct d9_rec_poll_start, task), sizeof task);
    return task;
}

/* A new start of an open task replaces it (its end was lost); a full stack
 * loses its bottom poll. */
static void poll_start(struct trigd_ring *tr, const uint8_t *r, uint64_t ts)
{
    uint64_t task = poll_task(r);
    for (uint32_t i = tr->nopen; i-- > 0;)
        if (tr->open[i].task == task) {
            open_remove(tr, i);
            break;
        }
    if (tr->nopen == TRIGD_OPEN_MAX)
        open_remove(tr, 0);
    tr->open[tr->nopen++] = (struct trigd_open){ task, ts, 1 };
}

/* Closes the latest open start of the end's task and the polls still open
 * inside it. Returns the poll's duration when it is outermost (no sure open
 * poll below it), else 0 (also for an end without a start). */
static uint64_t poll_end(struct trigd_ring *tr, const uint8_t *r, uint64_t ts)
{
    uint64_t task = poll_task(r);
    uint32_t i = tr->nopen;
    while (i-- > 0)
        if (tr->open[i].task == task)
            break;
    if (i == UINT32_MAX)
        return 0;       /* its start was lost, or came before the collector */
    int outermost = 1;
    for (uint32_t j = 0; j < i; j++)
        if (tr->open[j].sure)
            outermost = 0;
    uint64_t t0 = tr->open[i].ts;
    tr->nopen = i;
    return outermost && ts >= t0 ? ts - t0 : 0;
}

void trigd_feed(uint32_t pid, int64_t process_id, const struct trigd_proc *tp,
                struct trigd_ring *tr, const uint8_t *buf, size_t n)
{
    uint64_t poll_ns = (uint64_t)td.st.cfg.poll_ms * 1000000ull;
    uint64_t sched_ns = (uint64_t)td.st.cfg.sched_ms * 1000000ull;
    size_t off = 0;
    while (off + D9_REC_HDR_SIZE <= n) {
        struct d9_rec_hdr h;
        memcpy(&h, buf + off, sizeof h);
        if (h.len < D9_REC_HDR_SIZE || h.len > n - off)
            return;         /* the drain validated the framing: cannot happen */
        const uint8_t *r = buf + off;
        if (poll_ns)
            seq_check(tr, h.seq);
        if (h.type == D9_REC_CUSTOM && tp->nbind && h.len >= sizeof(struct d9_rec_custom)) {
            uint32_t id;
            memcpy(&id, r + offsetof(struct d9_rec_custom, schema), sizeof id);
            for (uint32_t i = 0; i < tp->nbind && i < TRIGD_BIND_MAX; i++) {
                const struct trigd_bind *b = &tp->bind[i];
                if (b->schema != id)
                    continue;
                if (b->rule == TRIGD_BIND_MARKER) {
                    char why[TRIGD_REASON_MAX + 1], fields[TRIGD_FIELDS_MAX];
                    trig_rec_reason(r, h.len, why, sizeof why);
                    trig_rec_fields(r, h.len, b->nfields, b->types,
                                    b->names == UINT32_MAX || !tp->names ? NULL
                                                                         : tp->names + b->names,
                                    fields, sizeof fields);
                    fire(pid, process_id, h.ts, TRIGD_SRC_MARKER, why,
                         fields[0] ? fields : NULL, NULL);
                } else {
                    field_check(pid, process_id, b, r, h.len, h.ts);
                }
            }
        } else if (h.type == D9_REC_POLL_START && poll_ns && h.len >= D9_REC_HDR_SIZE + 8) {
            poll_start(tr, r, h.ts);
        } else if (h.type == D9_REC_POLL_END && poll_ns && h.len >= D9_REC_HDR_SIZE + 8) {
            uint64_t d = poll_end(tr, r, h.ts);
            if (d > poll_ns) {
                char why[64];
                snprintf(why, sizeof why, "poll of %" PRIu64 " ms", (uint64_t)(d / 1000000ull));
                trigd_fire(pid, process_id, h.ts, TRIGD_SRC_POLL, why, NULL);
            }
        } else if ((h.type == D9_REC_WORKER_PARK || h.type == D9_REC_WORKER_UNPARK) && sched_ns &&
                   h.len >= sizeof(struct d9_rec_worker)) {
            struct d9_rec_worker w;
            memcpy(&w, r, sizeof w);
            if (!(w.flags & D9_WORKER_UNSAMPLED) && w.sched_wait_ns > sched_ns) {
                char why[64];
                snprintf(why, sizeof why, "sched wait of %" PRIu64 " ms",
                         (uint64_t)(w.sched_wait_ns / 1000000ull));
                trigd_fire(pid, process_id, h.ts, TRIGD_SRC_SCHED, why, NULL);
            }
        }
        off += h.len;
    }
}
