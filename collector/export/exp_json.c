/*
 * exp_json.c — Chrome trace-event JSON writer (see exp_json.h).
 *
 * Called by `d9 export`. Polls and parked intervals come from q_pair
 * (paired per thread); everything else maps one record to one event. The
 * "already named" sets are open-addressing hash sets of 64-bit keys.
 * Never buffers events: each is printed as soon as it is complete.
 *
 * Wake flows: a wake emits a flow start ("s") on the waker's thread; the
 * poll that answers it (q_wake.h: the wakee's next poll_start) ends the
 * flow ("f", binding to the poll slice that starts there).
 * CPU samples: one "i" event per sample on the sampled thread, named by its
 * innermost frame, with the whole stack (outermost first, as d9 flame
 * prints it) in args; frames are q_sym_frames', as every reader names
 * them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_text.h"
#include "collector/query/q_loc.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_sched.h"
#include "collector/query/q_sym.h"
#include "collector/query/q_wake.h"
#include "collector/query/q_decode.h"
#include "collector/store/store_hash.h"
#include "collector/export/exp_json.h"
#include "collector/store/sym.h"
#include "shm/record.h"

#define EXP_SET_INITIAL 64u

struct keyset {
    uint64_t *k;                    /* 0 = empty slot; keys are stored + 1 */
    size_t cap, n;
};

struct exp_json {
    FILE *f;
    bool first;
    struct q_pair *polls;
    struct keyset procs, threads;
    struct q_wake *flows;           /* pending wakes: their flow ids */
    uint64_t next_flow;
    struct q_sym *sym;              /* frame names (the caller's) */
    struct exp_json_stats st;
};

/* 1 if key was added, 0 if present, -ENOMEM. */
static int set_add(struct keyset *s, uint64_t key)
{
    uint64_t k = key + 1;
    if (k == 0)
        k = 1;                      /* UINT64_MAX aliases 0: harmless for names */
    if ((s->n + 1) * 2 > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : EXP_SET_INITIAL;
        uint64_t *n = calloc(nc, sizeof *n);
        if (!n)
            return -ENOMEM;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->k[i])
                continue;
            size_t j = (size_t)store_hash64(s->k[i]) & (nc - 1);
            while (n[j])
                j = (j + 1) & (nc - 1);
            n[j] = s->k[i];
        }
        free(s->k);
        s->k = n;
        s->cap = nc;
    }
    size_t j = (size_t)store_hash64(k) & (s->cap - 1);
    while (s->k[j]) {
        if (s->k[j] == k)
            return 0;
        j = (j + 1) & (s->cap - 1);
    }
    s->k[j] = k;
    s->n++;
    return 1;
}

static void us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000u, (unsigned)(ns % 1000u));
}

/* Start an event object: {"name":..,"cat":..,"ph":..,"ts":..,"pid":..,"tid":.. */
static void ev_begin(struct exp_json *x, const char *name, size_t nlen, const char *cat,
                     const char *ph, uint64_t ts, uint32_t pid, uint32_t tid)
{
    FILE *f = x->f;
    fputs(x->first ? "\n" : ",\n", f);
    x->first = false;
    fputs("{\"name\":", f);
    q_text_json(f, name, nlen);
    if (cat)
        fprintf(f, ",\"cat\":\"%s\"", cat);
    fprintf(f, ",\"ph\":\"%s\",\"ts\":", ph);
    us(f, ts);
    fprintf(f, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, pid, tid);
    x->st.events++;
}

static int name_meta(struct exp_json *x, const struct q_rec_src *src)
{
    int rc = set_add(&x->procs, src->pid);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        ev_begin(x, "process_name", 12, NULL, "M", 0, src->pid, src->pid);
        fputs(",\"args\":{\"name\":", x->f);
        const char *c = src->comm && *src->comm ? src->comm : "?";
        q_text_json(x->f, c, strlen(c));
        fputs("}}", x->f);
    }
    rc = set_add(&x->threads, (uint64_t)src->pid << 32 | src->tid);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        ev_begin(x, "thread_name", 11, NULL, "M", 0, src->pid, src->tid);
        fputs(",\"args\":{\"name\":", x->f);
        char buf[64];
        if (src->thread && *src->thread)
            snprintf(buf, sizeof buf, "%s (%" PRIu32 ")", src->thread, src->tid);
        else
            snprintf(buf, sizeof buf, "%" PRIu32, src->tid);
        q_text_json(x->f, buf, strlen(buf));
        fputs("}}", x->f);
    }
    return 0;
}

int exp_json_begin(struct exp_json **out, FILE *f, struct q_sym *sym)
{
    struct exp_json *x = calloc(1, sizeof *x);
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
    x->first = true;
    fputs("{\"traceEvents\":[", f);
    *out = x;
    return 0;
}

static const char *runtime_name(const struct q_rec_src *src, uint16_t id, char *buf, size_t cap)
{
    const char *n = src->meta && src->meta->runtime ? src->meta->runtime(src->meta->ctx, id) : NULL;
    if (n)
        return n;
    snprintf(buf, cap, "#%u", (unsigned)id);
    return buf;
}

/* unfinished: NULL for a finished interval, else why it is open */
static void emit_interval(struct exp_json *x, const struct q_rec_src *src,
                          const struct q_poll *p, const char *unfinished)
{
    FILE *f = x->f;
    char rtb[24];
    const char *rt = src ? runtime_name(src, p->runtime, rtb, sizeof rtb) : NULL;
    if (!rt) {
        snprintf(rtb, sizeof rtb, "#%u", (unsigned)p->runtime);
        rt = rtb;
    }
    if (p->task == Q_POLL_PARKED) {
        ev_begin(x, "parked", 6, "park", "X", p->start_ns, p->pid, p->tid);
        x->st.parks++;
    } else {
        const struct shm_meta_entry *loc = src && src->meta && src->meta->location && p->loc
            ? src->meta->location(src->meta->ctx, p->loc) : NULL;
        const char *name = loc && loc->func && *loc->func ? loc->func : "poll";
        ev_begin(x, name, strlen(name), "poll", "X", p->start_ns, p->pid, p->tid);
        x->st.polls++;
        fputs(",\"dur\":", f);
        us(f, p->end_ns - p->start_ns);
        fprintf(f, ",\"args\":{\"task\":%" PRIu64 ",\"runtime\":", p->task);
        q_text_json(f, rt, strlen(rt));
        fprintf(f, ",\"worker\":%u", (unsigned)p->worker);
        if (loc) {
            char lb[Q_LOC_TEXT_MAX];
            q_loc_text(loc, p->loc, lb, sizeof lb);
            fputs(",\"loc\":", f);
            q_text_json(f, lb, strlen(lb));
        }
        if (unfinished)
            fprintf(f, ",\"unfinished\":true,\"unfinished_why\":\"%s\"", unfinished);
        fputs("}}", f);
        return;
    }
    fputs(",\"dur\":", f);
    us(f, p->end_ns - p->start_ns);
    fputs(",\"args\":{\"runtime\":", f);
    q_text_json(f, rt, strlen(rt));
    fprintf(f, ",\"worker\":%u", (unsigned)p->worker);
    if (unfinished)
        fprintf(f, ",\"unfinished\":true,\"unfinished_why\":\"%s\"", unfinished);
    fputs("}}", f);
}

static int cpu_sample(struct exp_json *x, const struct q_rec_src *src,
                      const struct d9_rec_hdr *rec, size_t len)
{
    if (shm_record_check(rec, len) <= 0) {
        x->st.skipped++;
        return 0;
    }
    struct d9_rec_stack k;
    memcpy(&k, rec, sizeof k);
    struct q_frame fr[D9_STACK_MAX_FRAMES];
    int n = q_sym_frames(x->sym, src->process_id, rec, len, fr);
    if (n < 0)
        return n;
    const char *leaf = n ? fr[0].name : "[no frames]";
    /* the sample's own thread: a collector's perf block holds many */
    int rc = set_add(&x->procs, src->pid);
    if (rc < 0)
        return rc;
    ev_begin(x, leaf, strlen(leaf), "cpu", "i", rec->ts, src->pid, k.tid);
    fprintf(x->f, ",\"s\":\"t\",\"args\":{\"weight_ns\":%" PRIu64 ",\"stack\":[", k.weight);
    for (int j = n - 1; j >= 0; j--) {          /* outermost first, as d9 flame prints them */
        if (j != n - 1)
            fputc(',', x->f);
        q_text_json(x->f, fr[j].name, strlen(fr[j].name));
    }
    fputs("]}}", x->f);
    x->st.samples++;
    return 0;
}

int exp_json_record(struct exp_json *x, const struct q_rec_src *src,
                      const struct d9_rec_hdr *rec, size_t len)
{
    struct q_poll done;
    if (!rec)       /* a block not read: nothing is paired across it (q_pair.h) */
        return q_pair_feed(x->polls, src, NULL, 0, &done) < 0 ? -ENOMEM : 0;
    struct q_decoded d;
    if (q_decode(rec, len, src->meta, &d) < 0)
        return 0;
    bool internal = d.type == D9_REC_CUSTOM && d.event &&
                    strncmp(d.event, Q_DECODE_INTERNAL, strlen(Q_DECODE_INTERNAL)) == 0;
    if (internal || d.type == D9_REC_SCHED_SWITCH || d.type >= D9_REC_TYPE_COUNT) {
        x->st.skipped++;            /* collector bookkeeping, off-CPU stacks: not exported */
        return 0;
    }
    if (d.type == D9_REC_CPU_SAMPLE)
        return cpu_sample(x, src, rec, len);
    int rc = name_meta(x, src);
    if (rc < 0)
        return rc;
    FILE *f = x->f;
    switch (d.type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start ps;
        memcpy(&ps, rec, sizeof ps);
        struct q_wake_pending w;
        if (q_wake_take(x->flows, src->process_id, ps.task, &w)) {
            ev_begin(x, "wake", 4, "wake", "f", d.ts, src->pid, src->tid);
            fprintf(f, ",\"bp\":\"e\",\"id\":%" PRIu64 "}", w.data);
            x->st.flows++;
        }
    }
        /* fall through */
    case D9_REC_POLL_END:
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        uint64_t wait;
        if (q_sched_wait(rec, len, &wait)) {
            /* a wait sample (q_sched.h): a point of the worker's counter */
            struct d9_rec_worker w;
            memcpy(&w, rec, sizeof w);
            char rtb[24], name[128];
            snprintf(name, sizeof name, "sched_wait %s w%u",
                     runtime_name(src, w.runtime, rtb, sizeof rtb), (unsigned)w.worker);
            ev_begin(x, name, strlen(name), "sched", "C", d.ts, src->pid, src->tid);
            fprintf(f, ",\"args\":{\"wait_ns\":%" PRIu64 "}}", wait);
            x->st.waits++;
        }
    }
        rc = q_pair_feed(x->polls, src, rec, len, &done);
        if (rc < 0)
            return rc;
        if (rc > 0)
            emit_interval(x, src, &done, NULL);
        return 0;
    case D9_REC_WAKE:
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE:
    case D9_REC_CUSTOM: {
        const char *cat = d.type == D9_REC_WAKE ? "wake" : d.type == D9_REC_CUSTOM ? "custom"
                                                                                    : "task";
        const char *name = d.type == D9_REC_CUSTOM ? (d.event ? d.event : "custom") : d.type_name;
        ev_begin(x, name, strlen(name), cat, "i", d.ts, src->pid, src->tid);
        fputs(",\"s\":\"t\",\"args\":{", f);
        unsigned n = q_decode_print_json_members(f, &d, 0, d.nfields, false);
        if (d.error) {
            fputs(n ? ",\"error\":" : "\"error\":", f);
            q_text_json(f, d.error, strlen(d.error));
        }
        fputs("}}", f);
        x->st.instants++;
        if (d.type == D9_REC_WAKE) {
            struct d9_rec_wake w;
            memcpy(&w, rec, sizeof w);
            uint64_t id = ++x->next_flow;
            ev_begin(x, "wake", 4, "wake", "s", d.ts, src->pid, src->tid);
            fprintf(f, ",\"id\":%" PRIu64 "}", id);
            struct q_wake_pending pw = { .ts = d.ts, .data = id };
            if (q_wake_put(x->flows, src->process_id, w.wakee, &pw) < 0)
                return -ENOMEM;
        }
        return 0;
    }
    case D9_REC_QUEUE_DEPTH: {
        struct d9_rec_queue_depth q;
        memcpy(&q, rec, sizeof q);
        char rtb[24], name[128];
        const char *rt = runtime_name(src, q.runtime, rtb, sizeof rtb);
        if (q.worker == D9_WORKER_NONE)
            snprintf(name, sizeof name, "queue %s global", rt);
        else
            snprintf(name, sizeof name, "queue %s w%u", rt, (unsigned)q.worker);
        /* counters are per process in the trace viewers: tid is informative */
        ev_begin(x, name, strlen(name), "queue", "C", d.ts, src->pid, src->tid);
        fprintf(f, ",\"args\":{\"depth\":%" PRIu64 "}}", q.depth);
        x->st.counters++;
        return 0;
    }
    default:
        x->st.skipped++;
        return 0;
    }
}

int exp_json_finish(struct exp_json *x, struct q_store *s, uint64_t t_end,
                    struct exp_json_stats *st)
{
    size_t it = 0;
    struct q_poll p;
    while (q_pair_next_open(x->polls, &it, &p)) {
        enum q_open_why why = q_pair_end_open(s, t_end, &p);
        emit_interval(x, NULL, &p, q_pair_open_text(why));
        x->st.unfinished++;
    }
    fputs("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"d9 export\","
          "\"clock\":\"CLOCK_MONOTONIC\"}}\n", x->f);
    int rc = fflush(x->f) != 0 || ferror(x->f) ? -EIO : 0;
    if (st)
        *st = x->st;
    q_pair_free(x->polls);
    q_wake_free(x->flows);
    free(x->procs.k);
    free(x->threads.k);
    free(x);
    return rc;
}
