/*
 * exp_perfetto.c — Perfetto protobuf trace writer (see exp_perfetto.h).
 *
 * Called by `d9 export --format perfetto`. Each record becomes at most one
 * TracePacket, built on the stack with protobuf-c (generated from
 * proto/perfetto_trace.proto), packed into a reused buffer and written as
 * field 1 of Trace (tag, varint length, bytes), so the file is a Trace
 * message however long it gets. Interned entries are sent in the interned_data
 * of the first packet that uses them. Tables are open-addressing hashes
 * grown at 50% load. Never buffers packets.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_text.h"
#include "collector/query/q_decode.h"
#include "collector/store/store_hash.h"
#include "collector/query/q_loc.h"
#include "collector/export/exp_perfetto.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_sched.h"
#include "collector/query/q_sym.h"
#include "collector/query/q_wake.h"
#include "collector/export/exp_json.h"
#include "collector/store/sym.h"
#include "proto/perfetto_trace.pb-c.h"
#include "shm/record.h"

#define PF_MAP_INITIAL   64u
#define PF_MAX_ANN       (Q_DEC_MAX_FIELDS + 2u)
#define PF_MAX_FRAMES    (D9_STACK_MAX_FRAMES + 1u)
#define PF_STR_MAX       1024u       /* a string annotation is cut here */

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent TrackEvent;
typedef Perfetto__Protos__DebugAnnotation Ann;

/* ---- u64 -> u64 map ------------------------------------------------------ */
struct u64map {
    uint64_t *k, *v;                /* k: key + 1, 0 = empty */
    size_t cap, n;
};

static bool map_get(const struct u64map *m, uint64_t key, uint64_t *v)
{
    if (!m->cap)
        return false;
    uint64_t k = key + 1 ? key + 1 : 1;
    for (size_t j = (size_t)store_hash64(k) & (m->cap - 1); m->k[j]; j = (j + 1) & (m->cap - 1)) {
        if (m->k[j] == k) {
            *v = m->v[j];
            return true;
        }
    }
    return false;
}

static int map_put(struct u64map *m, uint64_t key, uint64_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : PF_MAP_INITIAL;
        uint64_t *nk = calloc(nc, sizeof *nk), *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -ENOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->k[i])
                continue;
            size_t j = (size_t)store_hash64(m->k[i]) & (nc - 1);
            while (nk[j])
                j = (j + 1) & (nc - 1);
            nk[j] = m->k[i];
            nv[j] = m->v[i];
        }
        free(m->k);
        free(m->v);
        m->k = nk;
        m->v = nv;
        m->cap = nc;
    }
    uint64_t k = key + 1 ? key + 1 : 1;
    size_t j = (size_t)store_hash64(k) & (m->cap - 1);
    while (m->k[j] && m->k[j] != k)
        j = (j + 1) & (m->cap - 1);
    if (!m->k[j])
        m->n++;
    m->k[j] = k;
    m->v[j] = v;
    return 0;
}

static void map_free(struct u64map *m)
{
    free(m->k);
    free(m->v);
}

/* ---- string -> iid ---------------------------------------------------------- */
struct strent {
    char *s;
    uint64_t iid;
};
struct strmap {
    struct strent *e;
    size_t cap, n;
    uint64_t next;                  /* last iid handed out */
};

/* The entry of s (its iid and a copy that lives as long as m); *added =
 * true when it is new (the caller sends it). NULL = -ENOMEM. */
static const struct strent *str_iid(struct strmap *m, const char *s, bool *added)
{
    *added = false;
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : PF_MAP_INITIAL;
        struct strent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].s)
                continue;
            size_t j = (size_t)store_hash_str(m->e[i].s, strlen(m->e[i].s)) & (nc - 1);
            while (ne[j].s)
                j = (j + 1) & (nc - 1);
            ne[j] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = nc;
    }
    size_t j = (size_t)store_hash_str(s, strlen(s)) & (m->cap - 1);
    for (; m->e[j].s; j = (j + 1) & (m->cap - 1))
        if (strcmp(m->e[j].s, s) == 0)
            return &m->e[j];
    char *c = strdup(s);
    if (!c)
        return NULL;
    m->e[j].s = c;
    m->e[j].iid = ++m->next;
    m->n++;
    *added = true;
    return &m->e[j];
}

static void strmap_free(struct strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->e[i].s);
    free(m->e);
}

/* ---- callstacks: frame-iid sequences ---------------------------------------- */
struct stackent {
    uint64_t h, iid;
    uint64_t *frames;
    size_t n;
};
struct stackmap {
    struct stackent *e;
    size_t cap, n;
};

static uint64_t stack_iid(struct stackmap *m, const uint64_t *fr, size_t n, bool *added)
{
    *added = false;
    uint64_t h = 0x84222325cbf29ce4ull ^ n;
    for (size_t i = 0; i < n; i++)
        h = store_hash64(h ^ fr[i]);
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : PF_MAP_INITIAL;
        struct stackent *ne = calloc(nc, sizeof *ne);
        if (!ne)
            return 0;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].iid)
                continue;
            size_t j = (size_t)m->e[i].h & (nc - 1);
            while (ne[j].iid)
                j = (j + 1) & (nc - 1);
            ne[j] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = nc;
    }
    size_t j = (size_t)h & (m->cap - 1);
    for (; m->e[j].iid; j = (j + 1) & (m->cap - 1))
        if (m->e[j].h == h && m->e[j].n == n && memcmp(m->e[j].frames, fr, n * sizeof *fr) == 0)
            return m->e[j].iid;
    uint64_t *c = malloc((n ? n : 1) * sizeof *c);
    if (!c)
        return 0;
    memcpy(c, fr, n * sizeof *fr);
    m->e[j] = (struct stackent){ .h = h, .iid = ++m->n, .frames = c, .n = n };
    *added = true;
    return m->e[j].iid;
}

static void stackmap_free(struct stackmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->e[i].frames);
    free(m->e);
}

/* ---- the writer ----------------------------------------------------------------- */
struct exp_perfetto {
    FILE *f;
    uint8_t *buf;
    size_t bufcap;
    bool started;                   /* clock snapshot + defaults written */
    uint64_t last_ts;               /* value of the incremental clock */
    uint64_t next_uuid, next_flow, next_frame;
    struct q_pair *polls;
    struct u64map procs;            /* process_id -> track uuid */
    struct u64map threads;          /* hash of (process_id, tid) -> track uuid */
    struct u64map counters;         /* hash of (process_id, runtime, worker) -> track uuid */
    struct q_wake *flows;           /* pending wakes: their flow ids */
    struct u64map frames;           /* hash of (process_id, ip) -> frame iid */
    struct strmap names, ann_names, funcs, ann_values;
    struct stackmap stacks;
    struct q_sym *sym;              /* frame names (the caller's) */
    /* interned data of the packet being built */
    Perfetto__Protos__InternedData idata;
    bool has_idata;
    Perfetto__Protos__EventName ev_name, *ev_names[1];
    Perfetto__Protos__DebugAnnotationName an_names[PF_MAX_ANN], *an_ptrs[PF_MAX_ANN];
    Perfetto__Protos__InternedString fn_names[PF_MAX_FRAMES], *fn_ptrs[PF_MAX_FRAMES];
    Perfetto__Protos__Frame fr[PF_MAX_FRAMES], *fr_ptrs[PF_MAX_FRAMES];
    Perfetto__Protos__Callstack cs, *cs_ptrs[1];
    Perfetto__Protos__InternedString av_str, *av_ptrs[1];
    char strs[PF_MAX_ANN][PF_STR_MAX];
    struct exp_perfetto_stats st;
    int err;
};

static void idata_reset(struct exp_perfetto *x)
{
    perfetto__protos__interned_data__init(&x->idata);
    x->has_idata = false;
}

/* Pack and write p as Trace.packet. */
static int emit(struct exp_perfetto *x, Packet *p)
{
    p->has_trusted_packet_sequence_id = 1;
    p->trusted_packet_sequence_id = EXP_PERFETTO_SEQ;
    if (x->has_idata)
        p->interned_data = &x->idata;
    size_t n = perfetto__protos__trace_packet__get_packed_size(p);
    if (n + 16 > x->bufcap) {
        size_t nc = x->bufcap ? x->bufcap : 4096;
        while (nc < n + 16)
            nc *= 2;
        uint8_t *b = realloc(x->buf, nc);
        if (!b)
            return -ENOMEM;
        x->buf = b;
        x->bufcap = nc;
    }
    size_t h = 0;
    x->buf[h++] = 0x0a;             /* field 1 (packet), wire type 2 */
    uint64_t v = n;
    while (v >= 0x80) {
        x->buf[h++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    x->buf[h++] = (uint8_t)v;
    perfetto__protos__trace_packet__pack(p, x->buf + h);
    if (fwrite(x->buf, 1, h + n, x->f) != h + n)
        x->err = -EIO;
    x->st.bytes += h + n;
    x->st.packets++;
    idata_reset(x);
    return 0;
}

/* Stamp p with ts: a delta on the incremental clock, or an absolute
 * MONOTONIC time when ts is before the clock's value. */
static void stamp(struct exp_perfetto *x, Packet *p, uint64_t ts)
{
    p->has_timestamp = 1;
    if (ts >= x->last_ts) {
        p->timestamp = ts - x->last_ts;
        x->last_ts = ts;
    } else {
        p->timestamp = ts;
        p->has_timestamp_clock_id = 1;
        p->timestamp_clock_id = EXP_PERFETTO_CLOCK_MONO;
    }
}

/* The first packet: incremental state cleared, the clocks, the defaults. */
static int start(struct exp_perfetto *x, uint64_t t0)
{
    Perfetto__Protos__ClockSnapshot__Clock mono = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
    Perfetto__Protos__ClockSnapshot__Clock inc = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
    Perfetto__Protos__ClockSnapshot__Clock *clocks[2] = { &mono, &inc };
    mono.has_clock_id = inc.has_clock_id = 1;
    mono.clock_id = EXP_PERFETTO_CLOCK_MONO;
    inc.clock_id = EXP_PERFETTO_CLOCK_INC;
    mono.has_timestamp = inc.has_timestamp = 1;
    mono.timestamp = inc.timestamp = t0;
    inc.has_is_incremental = 1;
    inc.is_incremental = 1;
    Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
    cs.n_clocks = 2;
    cs.clocks = clocks;
    cs.has_primary_trace_clock = 1;
    cs.primary_trace_clock = EXP_PERFETTO_CLOCK_MONO;
    Perfetto__Protos__TracePacketDefaults d = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
    d.has_timestamp_clock_id = 1;
    d.timestamp_clock_id = EXP_PERFETTO_CLOCK_INC;
    Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
    p.clock_snapshot = &cs;
    p.has_sequence_flags = 1;
    p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
    p.trace_packet_defaults = &d;
    p.has_timestamp = 1;
    p.timestamp = t0;
    p.has_timestamp_clock_id = 1;
    p.timestamp_clock_id = EXP_PERFETTO_CLOCK_MONO;
    x->last_ts = t0;
    x->started = true;
    return emit(x, &p);
}

static int emit_descriptor(struct exp_perfetto *x, Perfetto__Protos__TrackDescriptor *td)
{
    Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
    p.track_descriptor = td;
    return emit(x, &p);
}

static int process_track(struct exp_perfetto *x, const struct q_rec_src *src, uint64_t *uuid)
{
    if (map_get(&x->procs, (uint64_t)src->process_id, uuid))
        return 0;
    *uuid = ++x->next_uuid;
    if (map_put(&x->procs, (uint64_t)src->process_id, *uuid) < 0)
        return -ENOMEM;
    Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
    pd.has_pid = 1;
    pd.pid = (int32_t)src->pid;
    char comm[64];
    snprintf(comm, sizeof comm, "%s", src->comm && *src->comm ? src->comm : "?");
    pd.process_name = comm;
    Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    td.has_uuid = 1;
    td.uuid = *uuid;
    td.process = &pd;
    return emit_descriptor(x, &td);
}

static int thread_track(struct exp_perfetto *x, const struct q_rec_src *src, uint32_t tid,
                        uint64_t *uuid)
{
    uint64_t k = store_hash2(tid, (uint64_t)src->process_id);
    if (map_get(&x->threads, k, uuid))
        return 0;
    uint64_t parent;
    int rc = process_track(x, src, &parent);
    if (rc < 0)
        return rc;
    *uuid = ++x->next_uuid;
    if (map_put(&x->threads, k, *uuid) < 0)
        return -ENOMEM;
    Perfetto__Protos__ThreadDescriptor th = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
    th.has_pid = th.has_tid = 1;
    th.pid = (int32_t)src->pid;
    th.tid = (int32_t)tid;
    char name[64];
    if (tid == src->tid && src->thread && *src->thread) {
        snprintf(name, sizeof name, "%s", src->thread);
        th.thread_name = name;
    }
    Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    td.has_uuid = 1;
    td.uuid = *uuid;
    td.has_parent_uuid = 1;
    td.parent_uuid = parent;
    td.thread = &th;
    return emit_descriptor(x, &td);
}

/* iid of an event name, added to the packet's interned data when new. */
static uint64_t name_iid(struct exp_perfetto *x, const char *name)
{
    bool added;
    const struct strent *e = str_iid(&x->names, name, &added);
    if (!e)
        return 0;
    if (added) {
        perfetto__protos__event_name__init(&x->ev_name);
        x->ev_name.has_iid = 1;
        x->ev_name.iid = e->iid;
        x->ev_name.name = e->s;
        x->ev_names[0] = &x->ev_name;
        x->idata.n_event_names = 1;
        x->idata.event_names = x->ev_names;
        x->has_idata = true;
    }
    return e->iid;
}

/* Annotation i of te named name (interned). Returns the annotation or NULL. */
static Ann *ann_add(struct exp_perfetto *x, Ann *anns, Ann **ptrs, TrackEvent *te, const char *name)
{
    if (te->n_debug_annotations >= PF_MAX_ANN)
        return NULL;
    bool added;
    const struct strent *e = str_iid(&x->ann_names, name, &added);
    if (!e) {
        x->err = -ENOMEM;
        return NULL;
    }
    uint64_t iid = e->iid;
    if (added) {
        size_t k = x->idata.n_debug_annotation_names;
        Perfetto__Protos__DebugAnnotationName *n = &x->an_names[k];
        perfetto__protos__debug_annotation_name__init(n);
        n->has_iid = 1;
        n->iid = iid;
        n->name = e->s;
        x->an_ptrs[k] = n;
        x->idata.n_debug_annotation_names = k + 1;
        x->idata.debug_annotation_names = x->an_ptrs;
        x->has_idata = true;
    }
    Ann *a = &anns[te->n_debug_annotations];
    perfetto__protos__debug_annotation__init(a);
    a->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
    a->name_iid = iid;
    ptrs[te->n_debug_annotations++] = a;
    te->debug_annotations = ptrs;
    return a;
}

/* A string annotation whose value is interned (a location: few values, each
 * sent once). */
static void ann_interned(struct exp_perfetto *x, Ann *anns, Ann **ptrs, TrackEvent *te,
                         const char *name, const char *value)
{
    bool added;
    const struct strent *v = str_iid(&x->ann_values, value, &added);
    if (!v) {
        x->err = -ENOMEM;
        return;
    }
    Ann *a = ann_add(x, anns, ptrs, te, name);
    if (!a)
        return;
    if (added) {
        perfetto__protos__interned_string__init(&x->av_str);
        x->av_str.has_iid = x->av_str.has_str = 1;
        x->av_str.iid = v->iid;
        x->av_str.str.data = (uint8_t *)v->s;
        x->av_str.str.len = strlen(v->s);
        x->av_ptrs[0] = &x->av_str;
        x->idata.n_debug_annotation_string_values = 1;
        x->idata.debug_annotation_string_values = x->av_ptrs;
        x->has_idata = true;
    }
    a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID;
    a->string_value_iid = v->iid;
}

static void ann_uint(struct exp_perfetto *x, Ann *anns, Ann **ptrs, TrackEvent *te,
                     const char *name, uint64_t v)
{
    Ann *a = ann_add(x, anns, ptrs, te, name);
    if (a) {
        a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
        a->uint_value = v;
    }
}

/* Fields of a decoded record as annotations. */
static void ann_fields(struct exp_perfetto *x, Ann *anns, Ann **ptrs, TrackEvent *te,
                       const struct q_decoded *d)
{
    for (unsigned i = 0; i < d->nfields; i++) {
        const struct q_field *fl = &d->f[i];
        if (fl->type == Q_V_IPS)
            continue;
        Ann *a = ann_add(x, anns, ptrs, te, fl->name);
        if (!a)
            return;
        switch (fl->type) {
        case Q_V_U64:
        case Q_V_HEX:
            a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
            a->uint_value = fl->u;
            break;
        case Q_V_I64:
            a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_INT_VALUE;
            a->int_value = fl->i;
            break;
        case Q_V_F64:
            a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_DOUBLE_VALUE;
            a->double_value = fl->f;
            break;
        case Q_V_BOOL:
            a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
            a->bool_value = fl->u != 0;
            break;
        case Q_V_STR: {
            char *s = x->strs[te->n_debug_annotations - 1];
            size_t n = fl->slen < PF_STR_MAX - 1 ? fl->slen : PF_STR_MAX - 1;
            memcpy(s, fl->s, n);
            s[n] = 0;
            for (size_t k = 0; k < n; k++)      /* keep it printable text */
                if ((uint8_t)s[k] < 0x20 || (uint8_t)s[k] >= 0x7f)
                    s[k] = '?';
            a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
            a->string_value = s;
            break;
        }
        default:
            break;
        }
    }
}

static const char *runtime_name(const struct q_rec_src *src, uint16_t id, char *buf, size_t cap)
{
    const char *n = src->meta && src->meta->runtime ? src->meta->runtime(src->meta->ctx, id) : NULL;
    if (n)
        return n;
    snprintf(buf, cap, "#%u", (unsigned)id);
    return buf;
}

/* The counter track "queue <rt> w<N>" (queue depth; "... global") or
 * "sched_wait <rt> w<N>" (wait samples) of a runtime's worker. */
static int counter_track(struct exp_perfetto *x, const struct q_rec_src *src, bool waits,
                         uint16_t runtime, uint16_t worker, uint64_t *uuid)
{
    uint64_t k = store_hash2((uint64_t)waits << 32 | (uint64_t)runtime << 16 | worker,
                         (uint64_t)src->process_id);
    if (map_get(&x->counters, k, uuid))
        return 0;
    uint64_t parent;
    int rc = process_track(x, src, &parent);
    if (rc < 0)
        return rc;
    *uuid = ++x->next_uuid;
    if (map_put(&x->counters, k, *uuid) < 0)
        return -ENOMEM;
    char rtb[24], name[128];
    const char *rt = runtime_name(src, runtime, rtb, sizeof rtb);
    if (worker == D9_WORKER_NONE)
        snprintf(name, sizeof name, "%s %s global", waits ? "sched_wait" : "queue", rt);
    else
        snprintf(name, sizeof name, "%s %s w%u", waits ? "sched_wait" : "queue", rt,
                 (unsigned)worker);
    Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
    Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    td.has_uuid = 1;
    td.uuid = *uuid;
    td.has_parent_uuid = 1;
    td.parent_uuid = parent;
    td.name = name;
    td.counter = &cd;
    return emit_descriptor(x, &td);
}

/* A CPU sample: intern its frames and callstack, write a PerfSample. */
static int sample(struct exp_perfetto *x, const struct q_rec_src *src, const uint8_t *rec,
                  size_t len, uint64_t ts)
{
    struct d9_rec_stack s;
    memcpy(&s, rec, sizeof s);
    if (sizeof s + (size_t)s.nframes * 8 > len || s.nframes > D9_STACK_MAX_FRAMES)
        return 0;
    struct q_frame qf[D9_STACK_MAX_FRAMES];
    int n = q_sym_frames(x->sym, src->process_id, (const struct d9_rec_hdr *)rec, len, qf);
    if (n < 0)
        return n;
    uint64_t fids[PF_MAX_FRAMES];
    size_t nf = 0;
    /* Callstack.frame_ids go from the outermost frame to the innermost */
    for (int i = n - 1; i >= 0; i--) {
        uint64_t look = qf[i].look;
        uint64_t k = store_hash2(look, (uint64_t)src->process_id), fid;
        if (!map_get(&x->frames, k, &fid)) {
            bool added;
            const struct strent *e = str_iid(&x->funcs, qf[i].name, &added);
            if (!e)
                return -ENOMEM;
            uint64_t fn = e->iid;
            if (added) {
                size_t q = x->idata.n_function_names;
                Perfetto__Protos__InternedString *is = &x->fn_names[q];
                perfetto__protos__interned_string__init(is);
                is->has_iid = is->has_str = 1;
                is->iid = fn;
                is->str.data = (uint8_t *)e->s;
                is->str.len = strlen(e->s);
                x->fn_ptrs[q] = is;
                x->idata.n_function_names = q + 1;
                x->idata.function_names = x->fn_ptrs;
            }
            fid = ++x->next_frame;
            if (map_put(&x->frames, k, fid) < 0)
                return -ENOMEM;
            size_t q = x->idata.n_frames;
            Perfetto__Protos__Frame *fr = &x->fr[q];
            perfetto__protos__frame__init(fr);
            fr->has_iid = fr->has_function_name_id = fr->has_rel_pc = 1;
            fr->iid = fid;
            fr->function_name_id = fn;
            fr->rel_pc = look;
            x->fr_ptrs[q] = fr;
            x->idata.n_frames = q + 1;
            x->idata.frames = x->fr_ptrs;
            x->has_idata = true;
        }
        fids[nf++] = fid;
    }
    bool added;
    uint64_t csid = stack_iid(&x->stacks, fids, nf, &added);
    if (!csid)
        return -ENOMEM;
    if (added) {
        perfetto__protos__callstack__init(&x->cs);
        x->cs.has_iid = 1;
        x->cs.iid = csid;
        x->cs.n_frame_ids = nf;
        x->cs.frame_ids = fids;
        x->cs_ptrs[0] = &x->cs;
        x->idata.n_callstacks = 1;
        x->idata.callstacks = x->cs_ptrs;
        x->has_idata = true;
    }
    Perfetto__Protos__PerfSample ps = PERFETTO__PROTOS__PERF_SAMPLE__INIT;
    ps.has_pid = ps.has_tid = ps.has_callstack_iid = 1;
    ps.pid = src->pid;
    ps.tid = s.tid;
    ps.callstack_iid = csid;
    Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_PERF_SAMPLE;
    p.perf_sample = &ps;
    stamp(x, &p, ts);
    x->st.samples++;
    return emit(x, &p);
}

/* A track event on track at ts; te is filled by the caller. */
static int emit_event(struct exp_perfetto *x, TrackEvent *te, uint64_t track, uint64_t ts)
{
    te->has_track_uuid = 1;
    te->track_uuid = track;
    Packet p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
    p.track_event = te;
    stamp(x, &p, ts);
    return emit(x, &p);
}

int exp_perfetto_begin(struct exp_perfetto **out, FILE *f, struct q_sym *sym)
{
    struct exp_perfetto *x = calloc(1, sizeof *x);
    if (!x)
        return -ENOMEM;
    if (q_pair_new(&x->polls) < 0 || q_wake_new(&x->flows) < 0) {
        q_pair_free(x->polls);
        free(x);
        return -ENOMEM;
    }
    q_pair_track_parks(x->polls);
    x->sym = sym;
    x->f = f;
    idata_reset(x);
    *out = x;
    return 0;
}

/* A wait sample (q_sched.h) as a point of its worker's "sched_wait" counter. */
static int sched_wait(struct exp_perfetto *x, const struct q_rec_src *src,
                      const struct d9_rec_hdr *rec, size_t len)
{
    uint64_t ns, track;
    if (!q_sched_wait(rec, len, &ns))
        return 0;
    struct d9_rec_worker w;
    memcpy(&w, rec, sizeof w);
    int rc = counter_track(x, src, true, w.runtime, w.worker, &track);
    if (rc < 0)
        return rc;
    TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    te.has_type = 1;
    te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
    te.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
    te.counter_value = ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
    x->st.waits++;
    return emit_event(x, &te, track, rec->ts);
}

static int record(struct exp_perfetto *x, const struct q_rec_src *src,
                  const struct d9_rec_hdr *rec, size_t len)
{
    struct q_decoded d;
    if (q_decode(rec, len, src->meta, &d) < 0)
        return 0;
    bool internal = d.type == D9_REC_CUSTOM && d.event &&
                    strncmp(d.event, Q_DECODE_INTERNAL, strlen(Q_DECODE_INTERNAL)) == 0;
    if (internal || d.type == D9_REC_PAD || d.type >= D9_REC_TYPE_COUNT) {
        x->st.skipped++;
        return 0;
    }
    if (!x->started) {
        int rc = start(x, d.ts);
        if (rc < 0)
            return rc;
    }
    if (d.type == D9_REC_CPU_SAMPLE)
        return sample(x, src, (const uint8_t *)rec, len, d.ts);
    uint32_t tid = src->tid;
    if (d.type == D9_REC_SCHED_SWITCH) {
        struct d9_rec_stack s;
        memcpy(&s, rec, sizeof s);
        tid = s.tid;
    }
    uint64_t track;
    int rc = thread_track(x, src, tid, &track);
    if (rc < 0)
        return rc;
    TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
    Ann anns[PF_MAX_ANN], *ptrs[PF_MAX_ANN];
    uint64_t flow;
    struct q_poll done;
    switch (d.type) {
    case D9_REC_POLL_START: {
        rc = q_pair_feed(x->polls, src, rec, len, &done);
        if (rc < 0)
            return rc;
        struct d9_rec_poll_start ps;
        memcpy(&ps, rec, sizeof ps);
        const struct shm_meta_entry *loc = src->meta && src->meta->location && ps.loc
            ? src->meta->location(src->meta->ctx, ps.loc) : NULL;
        const char *name = loc && loc->func && *loc->func ? loc->func : "poll";
        te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
        te.name_iid = name_iid(x, name);
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
        ann_uint(x, anns, ptrs, &te, "task", ps.task);
        if (loc) {
            char lb[Q_LOC_TEXT_MAX];
            ann_interned(x, anns, ptrs, &te, "loc", q_loc_text(loc, ps.loc, lb, sizeof lb));
        }
        struct q_wake_pending pw;
        if (q_wake_take(x->flows, src->process_id, ps.task, &pw)) {
            flow = pw.data;
            te.n_terminating_flow_ids = 1;
            te.terminating_flow_ids = &flow;
            x->st.flows++;
        }
        x->st.polls++;
        break;
    }
    case D9_REC_WORKER_PARK:
        if ((rc = sched_wait(x, src, rec, len)) < 0)
            return rc;
        rc = q_pair_feed(x->polls, src, rec, len, &done);
        if (rc < 0)
            return rc;
        te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
        te.name_iid = name_iid(x, "parked");
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
        x->st.parks++;
        break;
    case D9_REC_POLL_END:
    case D9_REC_WORKER_UNPARK:
        if ((rc = sched_wait(x, src, rec, len)) < 0)
            return rc;
        rc = q_pair_feed(x->polls, src, rec, len, &done);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return 0;           /* no open slice: its start is outside the window */
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
        break;
    case D9_REC_QUEUE_DEPTH: {
        struct d9_rec_queue_depth q;
        memcpy(&q, rec, sizeof q);
        rc = counter_track(x, src, false, q.runtime, q.worker, &track);
        if (rc < 0)
            return rc;
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
        te.counter_value_field_case =
            PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
        te.counter_value = q.depth > INT64_MAX ? INT64_MAX : (int64_t)q.depth;
        x->st.counters++;
        break;
    }
    case D9_REC_WAKE: {
        struct d9_rec_wake w;
        memcpy(&w, rec, sizeof w);
        te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
        te.name_iid = name_iid(x, "wake");
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
        ann_uint(x, anns, ptrs, &te, "waker", w.waker);
        ann_uint(x, anns, ptrs, &te, "wakee", w.wakee);
        flow = ++x->next_flow;
        struct q_wake_pending pw = { .ts = d.ts, .data = flow };
        if (q_wake_put(x->flows, src->process_id, w.wakee, &pw) < 0)
            return -ENOMEM;
        te.n_flow_ids = 1;
        te.flow_ids = &flow;
        x->st.instants++;
        break;
    }
    case D9_REC_SCHED_SWITCH: {
        struct d9_rec_stack s;
        memcpy(&s, rec, sizeof s);
        te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
        te.name_iid = name_iid(x, "off_cpu");
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
        ann_uint(x, anns, ptrs, &te, "off_cpu_ns", s.weight);
        x->st.instants++;
        break;
    }
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE:
    case D9_REC_CUSTOM: {
        const char *name = d.type == D9_REC_CUSTOM ? (d.event ? d.event : "custom") : d.type_name;
        te.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
        te.name_iid = name_iid(x, name);
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
        if (d.type == D9_REC_CUSTOM)
            ann_fields(x, anns, ptrs, &te, &d);
        else
            ann_uint(x, anns, ptrs, &te, "task", q_decode_field(&d, "task")
                     ? q_decode_field(&d, "task")->u : 0);
        x->st.instants++;
        break;
    }
    default:
        x->st.skipped++;
        return 0;
    }
    if (!te.name_iid && te.name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID)
        return -ENOMEM;
    return emit_event(x, &te, track, d.ts);
}

int exp_perfetto_record(struct exp_perfetto *x, const struct q_rec_src *src,
                        const struct d9_rec_hdr *rec, size_t len)
{
    if (!rec) {     /* a block not read: nothing is paired across it (q_pair.h) */
        struct q_poll done;
        return q_pair_feed(x->polls, src, NULL, 0, &done) < 0 ? -ENOMEM : 0;
    }
    int rc = record(x, src, rec, len);
    if (rc == 0 && x->err == -ENOMEM)
        rc = -ENOMEM;
    return rc;
}

int exp_perfetto_finish(struct exp_perfetto *x, struct q_store *s, uint64_t t_end,
                        struct exp_perfetto_stats *st)
{
    int rc = 0;
    size_t it = 0;
    struct q_poll p;
    while (rc == 0 && q_pair_next_open(x->polls, &it, &p)) {
        uint64_t track;
        if (!map_get(&x->threads, store_hash2(p.tid, (uint64_t)p.process_id), &track))
            continue;
        TrackEvent te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
        te.has_type = 1;
        te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
        q_pair_end_open(s, t_end, &p);
        rc = emit_event(x, &te, track, p.end_ns);
        x->st.unfinished++;
    }
    if (rc == 0 && (fflush(x->f) != 0 || ferror(x->f) || x->err))
        rc = x->err ? x->err : -EIO;
    if (st)
        *st = x->st;
    q_pair_free(x->polls);
    map_free(&x->procs);
    map_free(&x->threads);
    map_free(&x->counters);
    q_wake_free(x->flows);
    map_free(&x->frames);
    strmap_free(&x->names);
    strmap_free(&x->ann_names);
    strmap_free(&x->funcs);
    strmap_free(&x->ann_values);
    stackmap_free(&x->stacks);
    free(x->buf);
    free(x);
    return rc;
}
