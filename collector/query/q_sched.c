/*
 * q_sched.c — per-worker scheduling facts (see q_sched.h for the
 * definitions).
 *
 * Workers are few (one per worker thread of each runtime): a vector, not a
 * hash table, with a small direct-mapped cache by the record's thread
 * (a worker is one thread, and the scan's merge interleaves the threads
 * record by record, so a one-entry cache of the last hit would mostly
 * miss). The histogram is log-linear: values below 16 exact, then 16
 * sub-buckets per power of two.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_sched.h"

#define HIST_SUB_BITS 4u
#define HIST_SUB      (1u << HIST_SUB_BITS)
#define HIST_BUCKETS  (HIST_SUB + (64u - HIST_SUB_BITS) * HIST_SUB)
#define Q_SCHED_INITIAL 16u

#define Q_SCHED_OPEN_MAX 64u         /* open polls kept per worker (a hostile store's nesting) */

struct qs_open {                    /* an open poll */
    uint64_t task;
    uint64_t from;                  /* its busy time starts here (its start, or a poll's end
                                       that covered it so far) */
    uint64_t pend;                  /* busy time of finished polls inside it, not counted yet */
};

struct acc {                        /* a worker while records come in */
    struct q_sched_worker w;
    uint32_t ring, generation;
    uint64_t cpu_first, cpu_last;
    bool have_cpu;
    uint64_t park_ts;               /* 0 = not parked */
    struct qs_open *open;           /* the worker's open polls, in start order */
    uint32_t nopen, capopen;
    uint32_t *hist;
};

struct thread_cpu {                 /* CPU profile weight of a thread */
    int64_t process_id;
    uint32_t tid;
    uint64_t weight_ns;
};

#define Q_SCHED_RECENT 64u           /* a power of two */

struct q_sched {
    struct acc *a;
    size_t n, cap;
    uint32_t recent[Q_SCHED_RECENT];    /* index + 1 into a by recent_ix(); 0 = none */
    struct thread_cpu *t;
    size_t tn, tcap;
    struct q_sched_worker *out;     /* q_sched_workers' answer */
};

static unsigned bucket_of(uint64_t v)
{
    if (v < HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);       /* >= HIST_SUB_BITS */
    unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
    return HIST_SUB + (e - HIST_SUB_BITS) * HIST_SUB + sub;
}

static uint64_t bucket_mid(unsigned b)
{
    if (b < HIST_SUB)
        return b;
    unsigned e = (b - HIST_SUB) / HIST_SUB + HIST_SUB_BITS;
    uint64_t sub = (b - HIST_SUB) % HIST_SUB;
    uint64_t lo = (1ull << e) + (sub << (e - HIST_SUB_BITS));
    uint64_t width = 1ull << (e - HIST_SUB_BITS);
    return lo + width / 2;
}

static uint64_t percentile(const struct acc *a, double q)
{
    if (a->w.waits == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)(a->w.waits - 1)) + 1, seen = 0;
    for (unsigned b = 0; b < HIST_BUCKETS; b++) {
        seen += a->hist[b];
        if (seen >= rank) {
            uint64_t v = bucket_mid(b);
            return v > a->w.wait_max_ns ? a->w.wait_max_ns : v;
        }
    }
    return a->w.wait_max_ns;
}

int q_sched_new(struct q_sched **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void q_sched_free(struct q_sched *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->a[i].hist);
        free(s->a[i].open);
    }
    free(s->a);
    free(s->t);
    free(s->out);
    free(s);
}

static size_t recent_ix(const struct q_rec_src *src)
{
    return ((size_t)src->ring ^ (size_t)src->generation ^ (size_t)src->process_id) &
           (Q_SCHED_RECENT - 1);
}

/* find() past its cache: the vector, or a new worker */
static __attribute__((noinline)) struct acc *find_slow(struct q_sched *s, uint32_t *r,
                                                      const struct q_rec_src *src, uint16_t rt,
                                                      uint16_t wk)
{
    for (size_t i = 0; i < s->n; i++) {
        struct acc *a = &s->a[i];
        if (a->w.process_id == src->process_id && a->w.runtime == rt && a->w.worker == wk) {
            *r = (uint32_t)(i + 1);
            return a;
        }
    }
    if (s->n >= UINT32_MAX - 1)
        return NULL;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : Q_SCHED_INITIAL;
        struct acc *n = realloc(s->a, nc * sizeof *n);
        if (!n)
            return NULL;
        s->a = n;
        s->cap = nc;
    }
    struct acc *a = &s->a[s->n];
    memset(a, 0, sizeof *a);
    a->hist = calloc(HIST_BUCKETS, sizeof *a->hist);
    if (!a->hist)
        return NULL;
    a->w.process_id = src->process_id;
    a->w.pid = src->pid;
    a->w.tid = src->tid;
    a->ring = src->ring;
    a->generation = src->generation;
    a->w.runtime = rt;
    a->w.worker = wk;
    *r = (uint32_t)++s->n;
    return a;
}

static inline struct acc *find(struct q_sched *s, const struct q_rec_src *src, uint16_t rt,
                               uint16_t wk)
{
    uint32_t *r = &s->recent[recent_ix(src)];
    if (*r) {
        struct acc *a = &s->a[*r - 1];
        if (a->w.process_id == src->process_id && a->w.runtime == rt && a->w.worker == wk)
            return a;
    }
    return find_slow(s, r, src, rt, wk);
}

static void seen_at(struct acc *a, const struct q_rec_src *src, uint64_t ts)
{
    if (a->w.t_first == 0 || ts < a->w.t_first)
        a->w.t_first = ts;
    if (ts > a->w.t_last)
        a->w.t_last = ts;
    a->w.tid = src->tid;
}

static int on_cpu_sample(struct q_sched *s, const struct q_rec_src *src,
                         const struct d9_rec_hdr *rec, size_t len)
{
    struct d9_rec_stack st;
    if (len < sizeof st)
        return 0;
    memcpy(&st, rec, sizeof st);
    for (size_t i = 0; i < s->tn; i++) {
        if (s->t[i].process_id == src->process_id && s->t[i].tid == st.tid) {
            s->t[i].weight_ns += st.weight;
            return 0;
        }
    }
    if (s->tn == s->tcap) {
        size_t nc = s->tcap ? s->tcap * 2 : Q_SCHED_INITIAL;
        struct thread_cpu *n = realloc(s->t, nc * sizeof *n);
        if (!n)
            return -ENOMEM;
        s->t = n;
        s->tcap = nc;
    }
    s->t[s->tn++] = (struct thread_cpu){ src->process_id, st.tid, st.weight };
    return 0;
}

/*
 * Busy time is the union of the worker's finished polls (q_sched.h). A
 * finished poll inside an open one (block_on) adds its time to the open
 * one's pend: counted when that one leaves without an end (its end
 * dropped, replaced by a new start of its task, or still open at the end
 * of the window), dropped when it ends (its own duration covers it). So a
 * poll that never ends stops nothing: the polls after it still count.
 */
static void open_remove(struct acc *a, uint32_t i)
{
    if (i + 1 < a->nopen)       /* mostly the last (the poll ending) */
        memmove(&a->open[i], &a->open[i + 1], (a->nopen - i - 1) * sizeof a->open[0]);
    a->nopen--;
}

/* Busy time d of a poll that ended, or the pend of one that left without
 * an end, goes to the open poll below index i, else into busy_ns. */
static void busy_add(struct acc *a, uint32_t i, uint64_t d)
{
    if (i > 0)
        a->open[i - 1].pend += d;
    else
        a->w.busy_ns += d;
}

/* Open poll i leaves without an end. */
static void open_drop(struct acc *a, uint32_t i)
{
    uint64_t pend = a->open[i].pend;
    open_remove(a, i);
    busy_add(a, i, pend);
}

static int poll_open(struct acc *a, uint64_t task, uint64_t ts)
{
    for (uint32_t i = a->nopen; i-- > 0;) {
        if (a->open[i].task == task) {
            open_drop(a, i);    /* its end was dropped: how long it ran is unknown */
            break;
        }
    }
    if (a->nopen == Q_SCHED_OPEN_MAX)
        open_drop(a, 0);
    if (a->nopen == a->capopen) {
        uint32_t c = a->capopen ? a->capopen * 2 : 4;
        struct qs_open *o = realloc(a->open, c * sizeof *o);
        if (!o)
            return -ENOMEM;
        a->open = o;
        a->capopen = c;
    }
    a->open[a->nopen++] = (struct qs_open){ task, ts, 0 };
    return 0;
}

/* q_pair's rule: an end closes the latest open start of its task. Polls
 * opened inside it and still open stay open; their time up to ts is its. */
static void poll_close(struct acc *a, uint64_t task, uint64_t ts)
{
    uint32_t i = a->nopen;
    while (i-- > 0)
        if (a->open[i].task == task)
            break;
    if (i == UINT32_MAX)
        return;                 /* its start is not in the window */
    uint64_t d = ts >= a->open[i].from ? ts - a->open[i].from : 0;
    for (uint32_t j = i + 1; j < a->nopen; j++) {
        a->open[j].pend = 0;
        if (a->open[j].from < ts)
            a->open[j].from = ts;
    }
    open_remove(a, i);
    busy_add(a, i, d);
}

/* A poll is activity of its worker: the worker exists, and its time is
 * busy time. */
static int on_poll(struct q_sched *s, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                   size_t len)
{
    uint16_t rt, wk;
    uint64_t task;
    if (rec->type == D9_REC_POLL_START && len == sizeof(struct d9_rec_poll_start)) {
        struct d9_rec_poll_start r;
        memcpy(&r, rec, sizeof r);
        rt = r.runtime;
        wk = r.worker;
        task = r.task;
    } else if (rec->type == D9_REC_POLL_END && len == sizeof(struct d9_rec_poll_end)) {
        struct d9_rec_poll_end r;
        memcpy(&r, rec, sizeof r);
        rt = r.runtime;
        wk = r.worker;
        task = r.task;
    } else {
        return 0;
    }
    struct acc *a = find(s, src, rt, wk);
    if (!a)
        return -ENOMEM;
    seen_at(a, src, rec->ts);
    if (rec->type == D9_REC_POLL_START) {
        a->w.polls++;
        return poll_open(a, task, rec->ts);
    }
    poll_close(a, task, rec->ts);
    return 0;
}

bool q_sched_wait(const struct d9_rec_hdr *rec, size_t len, uint64_t *ns)
{
    struct d9_rec_worker r;
    if ((rec->type != D9_REC_WORKER_PARK && rec->type != D9_REC_WORKER_UNPARK) ||
        len != sizeof r)
        return false;
    memcpy(&r, rec, sizeof r);
    if (r.flags & D9_WORKER_UNSAMPLED)
        return false;           /* carries nothing: its wait is in the next sampled record */
    *ns = r.sched_wait_ns;
    return true;
}

int q_sched_feed(struct q_sched *s, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                 size_t len)
{
    if (rec->type == D9_REC_CPU_SAMPLE)
        return on_cpu_sample(s, src, rec, len);
    if (rec->type == D9_REC_POLL_START || rec->type == D9_REC_POLL_END)
        return on_poll(s, src, rec, len);
    struct d9_rec_worker r;
    if ((rec->type != D9_REC_WORKER_PARK && rec->type != D9_REC_WORKER_UNPARK) ||
        len != sizeof r)
        return 0;
    memcpy(&r, rec, sizeof r);
    struct acc *a = find(s, src, r.runtime, r.worker);
    if (!a)
        return -ENOMEM;
    seen_at(a, src, r.h.ts);
    uint64_t wait;
    if (q_sched_wait(rec, len, &wait)) {
        if (!a->have_cpu) {
            a->cpu_first = r.cpu_ns;
            a->have_cpu = true;
        }
        if (r.cpu_ns > a->cpu_last)
            a->cpu_last = r.cpu_ns;
        a->w.waits++;
        a->w.wait_sum_ns += wait;
        if (wait > a->w.wait_max_ns)
            a->w.wait_max_ns = wait;
        a->hist[bucket_of(wait)]++;
    }
    if (r.h.type == D9_REC_WORKER_PARK) {
        a->w.parks++;
        a->park_ts = r.h.ts;
    } else {
        a->w.unparks++;
        if (a->park_ts && r.h.ts >= a->park_ts)
            a->w.parked_ns += r.h.ts - a->park_ts;
        a->park_ts = 0;
    }
    return 0;
}

int q_sched_key_cmp(struct q_sched_key a, struct q_sched_key b)
{
    if (a.pid != b.pid)
        return a.pid < b.pid ? -1 : 1;
    if (a.process_id != b.process_id)
        return a.process_id < b.process_id ? -1 : 1;
    if (a.runtime != b.runtime)
        return a.runtime < b.runtime ? -1 : 1;
    return a.worker < b.worker ? -1 : a.worker > b.worker;
}

static int by_key(const void *x, const void *y)
{
    const struct q_sched_worker *a = x, *b = y;
    return q_sched_key_cmp((struct q_sched_key){ a->pid, a->process_id, a->runtime, a->worker },
                           (struct q_sched_key){ b->pid, b->process_id, b->runtime, b->worker });
}

/* The last record of w's process: the end of every one of its workers' spans. */
static uint64_t process_last(const struct q_sched *s, int64_t process_id)
{
    uint64_t last = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->a[i].w.process_id == process_id && s->a[i].w.t_last > last)
            last = s->a[i].w.t_last;
    return last;
}

/* CPU profile weight of the worker's thread */
static uint64_t profile_cpu(const struct q_sched *s, const struct q_sched_worker *w)
{
    for (size_t i = 0; i < s->tn; i++)
        if (s->t[i].process_id == w->process_id && s->t[i].tid == w->tid)
            return s->t[i].weight_ns;
    return 0;
}

const struct q_sched_worker *q_sched_workers(struct q_sched *s, size_t *n)
{
    free(s->out);
    s->out = malloc((s->n ? s->n : 1) * sizeof *s->out);
    if (!s->out)
        return NULL;
    for (size_t i = 0; i < s->n; i++) {
        const struct acc *a = &s->a[i];
        struct q_sched_worker *w = &s->out[i];
        *w = a->w;
        w->wait_p50_ns = percentile(a, 0.50);
        w->wait_p99_ns = percentile(a, 0.99);
        w->cpu_ns = a->cpu_last > a->cpu_first ? a->cpu_last - a->cpu_first : 0;
        uint64_t prof = profile_cpu(s, w);
        if (prof > w->cpu_ns)
            w->cpu_ns = prof;
        for (uint32_t k = 0; k < a->nopen; k++)
            w->busy_ns += a->open[k].pend;      /* still open: their pends count */
        w->span_ns = process_last(s, w->process_id) - w->t_first;
        if (w->busy_ns > w->span_ns)
            w->busy_ns = w->span_ns;    /* a hostile store's clock only */
        w->busy_pct = w->span_ns ? 100.0 * (double)w->busy_ns / (double)w->span_ns : 0.0;
    }
    qsort(s->out, s->n, sizeof *s->out, by_key);
    *n = s->n;
    return s->out;
}
