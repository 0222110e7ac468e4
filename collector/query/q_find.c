/*
 * q_find.c — findings (q_find.h): one pass over the records feeds the
 * pairing (q_pair), the wake rule (q_wake), the worker facts (q_sched) and
 * small tables of its own (per location, worker, queue, thread, spawned
 * task); q_find_finish turns them into ranked findings.
 *
 * The tables are one open-addressing hash (linear probing, backward-shift
 * deletion) with the value inline, keyed by two 64-bit words. A value's
 * address holds until the next insertion into the same table.
 */
#include "collector/query/q_find.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/idx_trig.h"
#include "collector/store/store_hash.h"
#include "collector/query/q_findru.h"
#include "collector/query/q_loopwork.h"
#include "collector/query/q_names.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_sched.h"
#include "collector/query/q_sym.h"
#include "collector/query/q_text.h"
#include "collector/query/q_wake.h"
#include "collector/store/sym.h"

#define TAB_MIN_CAP   64u       /* slots of a table's first allocation (power of two) */
#define TAB_LOAD_PCT  50u       /* grow past this load */
#define NS_PER_US     1000ull
#define NS_PER_MS     1000000ull
#define NS_PER_S      1000000000ull
#define NS_PER_MIN    60000000000ull
#define MARK_POLLS    (1ull << 40)   /* marks' keys beside runtime << 16 | worker */
#define MARK_ALL      (1ull << 41)

/* ---- the table ------------------------------------------------------------ */

struct slot_hdr {
    uint64_t a, b;
    uint64_t used;
};

struct tab {
    uint8_t *s;
    size_t cap, n, esz, ssz;    /* esz: value bytes; ssz: slot bytes */
};

static void tab_init(struct tab *t, size_t esz)
{
    memset(t, 0, sizeof *t);
    t->esz = esz;
    t->ssz = (sizeof(struct slot_hdr) + esz + 7) & ~(size_t)7;
}

static struct slot_hdr *tab_slot(const struct tab *t, size_t i)
{
    return (struct slot_hdr *)(void *)(t->s + i * t->ssz);
}

static void *tab_val(struct slot_hdr *h) { return h + 1; }

static size_t tab_home(const struct tab *t, uint64_t a, uint64_t b)
{
    return (size_t)store_hash2(a, b) & (t->cap - 1);
}

static void *tab_get(const struct tab *t, uint64_t a, uint64_t b)
{
    if (!t->cap)
        return NULL;
    for (size_t i = tab_home(t, a, b);; i = (i + 1) & (t->cap - 1)) {
        struct slot_hdr *h = tab_slot(t, i);
        if (!h->used)
            return NULL;
        if (h->a == a && h->b == b)
            return tab_val(h);
    }
}

static int tab_grow(struct tab *t)
{
    size_t ncap = t->cap ? t->cap * 2 : TAB_MIN_CAP;
    uint8_t *ns = calloc(ncap, t->ssz);
    if (!ns)
        return -ENOMEM;
    struct tab o = *t;
    t->s = ns;
    t->cap = ncap;
    for (size_t i = 0; i < o.cap; i++) {
        struct slot_hdr *h = tab_slot(&o, i);
        if (!h->used)
            continue;
        size_t j = tab_home(t, h->a, h->b);
        while (tab_slot(t, j)->used)
            j = (j + 1) & (t->cap - 1);
        memcpy(tab_slot(t, j), h, t->ssz);
    }
    free(o.s);
    return 0;
}

/* The value of (a, b), created zeroed when absent. NULL on -ENOMEM. */
static void *tab_put(struct tab *t, uint64_t a, uint64_t b)
{
    void *v = tab_get(t, a, b);
    if (v)
        return v;
    if ((t->n + 1) * 100 > t->cap * TAB_LOAD_PCT && tab_grow(t) < 0)
        return NULL;
    size_t i = tab_home(t, a, b);
    while (tab_slot(t, i)->used)
        i = (i + 1) & (t->cap - 1);
    struct slot_hdr *h = tab_slot(t, i);
    memset(h, 0, t->ssz);
    *h = (struct slot_hdr){ a, b, 1 };
    t->n++;
    return tab_val(h);
}

/* Remove (a, b), shifting back the entries of its probe run. */
static void tab_del(struct tab *t, uint64_t a, uint64_t b)
{
    if (!t->cap)
        return;
    size_t i = tab_home(t, a, b);
    for (;; i = (i + 1) & (t->cap - 1)) {
        struct slot_hdr *h = tab_slot(t, i);
        if (!h->used)
            return;
        if (h->a == a && h->b == b)
            break;
    }
    size_t hole = i;
    for (size_t j = (i + 1) & (t->cap - 1);; j = (j + 1) & (t->cap - 1)) {
        struct slot_hdr *h = tab_slot(t, j);
        if (!h->used)
            break;
        size_t home = tab_home(t, h->a, h->b);
        /* h may move into the hole when its home is not in (hole, j] */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            memcpy(tab_slot(t, hole), h, t->ssz);
            hole = j;
        }
    }
    tab_slot(t, hole)->used = 0;
    t->n--;
}

static void tab_free(struct tab *t)
{
    free(t->s);
    t->s = NULL;
    t->cap = t->n = 0;
}

/* ---- the entries ---------------------------------------------------------- */

struct ip_count {
    uint64_t ip, n;
};

struct worst {                  /* the worst instance of a finding */
    uint64_t ns, from, to, task;
    uint32_t tid;
};

struct loc_ent {                /* key (process_id, loc) */
    uint32_t pid;
    uint64_t polls, long_polls, long_ns;
    struct worst lp;
    uint64_t samples;           /* inside the long polls */
    struct ip_count *ips;       /* Q_FIND_FRAME_IPS, by innermost address */
    size_t nips;
    uint64_t wakes, late_wakes, late_ns;
    struct worst wk;
};

struct wrk_ent {                /* key (process_id, runtime << 16 | worker) */
    uint32_t pid, tid;
    uint64_t samples, over, over_ns, prev_ts;
    struct worst w;
};

struct queue_ent {              /* key (process_id, runtime << 16 | worker) */
    uint32_t pid;
    uint64_t n, low, low_ts, rise, rise_from, rise_to, rise_lo, rise_hi, last;
};

struct lw_ent {                 /* key (process_id, runtime << 16 | worker) */
    uint32_t pid;
    uint64_t all, over, over_ns;    /* loop-work intervals; those >= loop_work_ns */
    struct worst w;
    struct loc_ent s;           /* the CPU samples inside (samples, ips) */
};

struct thr_sample {
    uint64_t ts, ip;
};

struct thr_ent {                /* key (process_id, tid) */
    uint32_t depth;             /* polls open on the thread */
    uint32_t nbuf;
    uint64_t dropped;           /* samples past the buffer, in the open polls */
    struct thr_sample buf[Q_FIND_POLL_SAMPLES];
};

struct spawn_ent {              /* key (process_id, task) */
    uint32_t pid, loc;
    uint64_t ts;
};

struct proc_ent {               /* key (process_id, 0) */
    uint32_t pid;
    bool flt_known;             /* the marks below were looked up (filtered runs) */
    bool polls, waits;          /* track every poll / every worker's waits (not filtered) */
    uint64_t first_ts, last_ts; /* its first and last record in the scan */
    bool have_info;
    struct q_find_proc info;
};

struct q_find {
    struct q_find_opts o;
    struct q_pair *pair;
    struct q_wake *wake;
    struct q_sched *sched;
    struct q_loopwork *lw;
    struct tab lws;
    struct tab locs, wrks, queues, thrs, spawns, procs;
    struct proc_ent *lastp;     /* the procs entry of the last record (valid until the
                                   next insertion into procs: q_find_process clears it) */
    int64_t lastp_id;
    /* the rollups' filter (q_findru.h): marks keyed (process_id, MARK_*) or
     * (process_id, runtime << 16 | worker); missed: an instance where the
     * marks said none can be (q_find_run then reads again without them) */
    bool filter, raw, missed;
    struct tab marks;
    struct q_finding *v;
    size_t n, cap;
};

const char *q_find_kind_name(enum q_find_kind k)
{
    static const char *const names[Q_FIND_KIND_COUNT] = {
        [Q_FIND_CRASH] = "crash",
        [Q_FIND_LOST] = "lost-records",
        [Q_FIND_LONG_POLL] = "long-poll",
        [Q_FIND_SCHED_DELAY] = "sched-delay",
        [Q_FIND_WAKE_DELAY] = "wake-delay",
        [Q_FIND_IMBALANCE] = "imbalance",
        [Q_FIND_QUEUE_GROWTH] = "queue-growth",
        [Q_FIND_TASK_LEAK] = "task-leak",
        [Q_FIND_LOOP_WORK] = "loop-work",
        [Q_FIND_TRIGGER] = "trigger",
    };
    return (unsigned)k < Q_FIND_KIND_COUNT ? names[k] : "?";
}

void q_find_opts_default(struct q_find_opts *o)
{
    *o = (struct q_find_opts){
        .long_poll_ns = Q_FIND_DEF_LONG_POLL_NS, .sched_wait_ns = Q_FIND_DEF_SCHED_WAIT_NS,
        .wake_delay_ns = Q_FIND_DEF_WAKE_DELAY_NS, .busy_pct = Q_FIND_DEF_BUSY_PCT,
        .idle_pct = Q_FIND_DEF_IDLE_PCT, .queue_growth = Q_FIND_DEF_QUEUE_RISE,
        .leak_age_ns = Q_FIND_DEF_LEAK_AGE_NS, .lost_min = Q_FIND_DEF_LOST_MIN,
        .loop_work_ns = Q_FIND_DEF_LOOP_WORK_NS,
    };
}

static void fini(struct q_find *f);

/* f zeroed, f->o set: the tables and the feeders. 0 or -ENOMEM (fini frees). */
static int init(struct q_find *f)
{
    tab_init(&f->locs, sizeof(struct loc_ent));
    tab_init(&f->wrks, sizeof(struct wrk_ent));
    tab_init(&f->queues, sizeof(struct queue_ent));
    tab_init(&f->thrs, sizeof(struct thr_ent));
    tab_init(&f->spawns, sizeof(struct spawn_ent));
    tab_init(&f->procs, sizeof(struct proc_ent));
    tab_init(&f->lws, sizeof(struct lw_ent));
    tab_init(&f->marks, sizeof(uint64_t));
    if (!f->o.loop_work_ns)             /* 0 = the default */
        f->o.loop_work_ns = Q_FIND_DEF_LOOP_WORK_NS;
    if (q_pair_new(&f->pair) < 0 || q_wake_new(&f->wake) < 0 || q_sched_new(&f->sched) < 0 ||
        q_loopwork_new(&f->lw, 0) < 0)
        return -ENOMEM;
    return 0;
}

int q_find_new(struct q_find **out, const struct q_find_opts *o)
{
    struct q_find *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    if (o)
        f->o = *o;
    else
        q_find_opts_default(&f->o);
    if (init(f) < 0) {
        q_find_free(f);
        return -ENOMEM;
    }
    *out = f;
    return 0;
}

/* Back to what q_find_new made (the options and raw kept). 0 or -ENOMEM. */
static int reset(struct q_find *f)
{
    struct q_find_opts o = f->o;
    bool raw = f->raw;
    fini(f);
    memset(f, 0, sizeof *f);
    f->o = o;
    f->raw = raw;
    return init(f);
}

void q_find_raw(struct q_find *f, bool raw)
{
    f->raw = raw;
}

/* q_findru_plan's marks (before the scan). */
static int mark(void *arg, int64_t process_id, enum q_findru_mark what, uint16_t runtime,
                uint16_t worker)
{
    struct q_find *f = arg;
    uint64_t key = what == Q_FINDRU_POLLS ? MARK_POLLS : what == Q_FINDRU_ALL ? MARK_ALL
                                          : (uint64_t)runtime << 16 | worker;
    f->lastp = NULL;            /* a process's flags are looked up again */
    for (size_t i = 0; i < f->procs.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->procs, i);
        if (h->used)
            ((struct proc_ent *)tab_val(h))->flt_known = false;
    }
    return tab_put(&f->marks, (uint64_t)process_id, key) ? 0 : -ENOMEM;
}

void q_find_free(struct q_find *f)
{
    if (!f)
        return;
    fini(f);
    free(f);
}

static void fini(struct q_find *f)
{
    for (size_t i = 0; i < f->locs.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->locs, i);
        if (h->used)
            free(((struct loc_ent *)tab_val(h))->ips);
    }
    tab_free(&f->locs);
    for (size_t i = 0; i < f->lws.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->lws, i);
        if (h->used)
            free(((struct lw_ent *)tab_val(h))->s.ips);
    }
    tab_free(&f->lws);
    q_loopwork_free(f->lw);
    tab_free(&f->wrks);
    tab_free(&f->queues);
    tab_free(&f->thrs);
    tab_free(&f->spawns);
    tab_free(&f->procs);
    q_pair_free(f->pair);
    q_wake_free(f->wake);
    q_sched_free(f->sched);
    tab_free(&f->marks);
    free(f->v);
}

/* ---- feeding -------------------------------------------------------------- */

static void worst_keep(struct worst *w, uint64_t ns, uint64_t from, uint64_t to, uint64_t task,
                       uint32_t tid)
{
    if (ns > w->ns || w->to == 0)
        *w = (struct worst){ ns, from, to, task, tid };
}

static int loc_sample(struct loc_ent *l, uint64_t ip)
{
    l->samples++;
    if (!l->ips && !(l->ips = calloc(Q_FIND_FRAME_IPS, sizeof *l->ips)))
        return -ENOMEM;
    for (size_t i = 0; i < l->nips; i++)
        if (l->ips[i].ip == ip) {
            l->ips[i].n++;
            return 0;
        }
    if (l->nips < Q_FIND_FRAME_IPS)
        l->ips[l->nips++] = (struct ip_count){ ip, 1 };
    return 0;                   /* past the table: counted in samples only */
}

static int on_poll_done(struct q_find *f, const struct q_poll *p)
{
    struct loc_ent *l = tab_put(&f->locs, (uint64_t)p->process_id, p->loc);
    if (!l)
        return -ENOMEM;
    l->pid = p->pid;
    l->polls++;
    uint64_t dur = p->end_ns - p->start_ns;
    if (dur < f->o.long_poll_ns)
        return 0;
    l->long_polls++;
    l->long_ns += dur;
    worst_keep(&l->lp, dur, p->start_ns, p->end_ns, p->task, p->tid);
    struct thr_ent *t = tab_get(&f->thrs, (uint64_t)p->process_id, p->tid);
    if (!t)
        return 0;
    for (uint32_t i = 0; i < t->nbuf; i++)
        if (t->buf[i].ts >= p->start_ns && t->buf[i].ts <= p->end_ns && loc_sample(l, t->buf[i].ip) < 0)
            return -ENOMEM;
    l->samples += t->dropped;
    return 0;
}

/* A poll_start answers its task's pending wake (wake-delay). */
static int feed_wake_answer(struct q_find *f, const struct q_rec_src *src,
                            const struct d9_rec_hdr *rec)
{
    struct d9_rec_poll_start s;
    memcpy(&s, rec, sizeof s);
    struct q_wake_pending w;
    if (q_wake_take(f->wake, src->process_id, s.task, &w) != 1)
        return 0;
    struct loc_ent *l = tab_put(&f->locs, (uint64_t)src->process_id, s.loc);
    if (!l)
        return -ENOMEM;
    l->pid = src->pid;
    l->wakes++;
    uint64_t d = rec->ts > w.ts ? rec->ts - w.ts : 0;
    if (d >= f->o.wake_delay_ns) {
        l->late_wakes++;
        l->late_ns += d;
        worst_keep(&l->wk, d, w.ts, rec->ts, s.task, src->tid);
    }
    return 0;
}

static int feed_poll(struct q_find *f, const struct proc_ent *p, const struct q_rec_src *src,
                     const struct d9_rec_hdr *rec, size_t len)
{
    struct q_poll done;
    int r = q_pair_feed(f->pair, src, rec, len, &done);
    if (r < 0)
        return r;
    if (!p->polls) {            /* filtered: the rollups say no poll here is long */
        if (r == 1 && done.end_ns - done.start_ns >= f->o.long_poll_ns)
            f->missed = true;
        return rec->type == D9_REC_POLL_START ? feed_wake_answer(f, src, rec) : 0;
    }
    struct thr_ent *t = tab_put(&f->thrs, (uint64_t)src->process_id, src->tid);
    if (!t)
        return -ENOMEM;
    if (rec->type == D9_REC_POLL_START) {
        if (t->depth++ == 0)
            t->nbuf = 0, t->dropped = 0;
        return feed_wake_answer(f, src, rec);
    }
    if (r == 1 && (r = on_poll_done(f, &done)) < 0)   /* inserts into locs only: t holds */
        return r;
    if (t->depth > 0 && --t->depth == 0)
        t->nbuf = 0, t->dropped = 0;
    return 0;
}

static int feed_worker(struct q_find *f, const struct proc_ent *p, const struct q_rec_src *src,
                       const struct d9_rec_hdr *rec, size_t len)
{
    uint64_t ns;
    if (!q_sched_wait(rec, len, &ns))
        return 0;
    struct d9_rec_worker r;
    memcpy(&r, rec, sizeof r);
    if (!p->waits && !tab_get(&f->marks, (uint64_t)src->process_id,
                              (uint64_t)r.runtime << 16 | r.worker)) {
        if (ns >= f->o.sched_wait_ns)   /* filtered: the rollups say no wait here is long */
            f->missed = true;
        return 0;
    }
    struct wrk_ent *w = tab_put(&f->wrks, (uint64_t)src->process_id,
                                (uint64_t)r.runtime << 16 | r.worker);
    if (!w)
        return -ENOMEM;
    w->pid = src->pid;
    w->tid = src->tid;
    w->samples++;
    if (ns >= f->o.sched_wait_ns) {
        w->over++;
        w->over_ns += ns;
        /* the sample covers the time since the worker's previous sampled record */
        uint64_t from = w->prev_ts ? w->prev_ts : (rec->ts > ns ? rec->ts - ns : 0);
        worst_keep(&w->w, ns, from, rec->ts, 0, src->tid);
    }
    w->prev_ts = rec->ts;
    return 0;
}

static int feed_queue(struct q_find *f, const struct q_rec_src *src, const struct d9_rec_hdr *rec)
{
    struct d9_rec_queue_depth d;
    memcpy(&d, rec, sizeof d);
    struct queue_ent *q = tab_put(&f->queues, (uint64_t)src->process_id,
                                  (uint64_t)d.runtime << 16 | d.worker);
    if (!q)
        return -ENOMEM;
    q->pid = src->pid;
    if (q->n++ == 0 || d.depth < q->low) {
        q->low = d.depth;
        q->low_ts = rec->ts;
    }
    if (d.depth - q->low > q->rise) {
        q->rise = d.depth - q->low;
        q->rise_from = q->low_ts;
        q->rise_to = rec->ts;
        q->rise_lo = q->low;
        q->rise_hi = d.depth;
    }
    q->last = d.depth;
    return 0;
}

static int feed_task(struct q_find *f, const struct q_rec_src *src, const struct d9_rec_hdr *rec)
{
    struct d9_rec_task k;
    memcpy(&k, rec, sizeof k);
    if (rec->type == D9_REC_TASK_TERMINATE) {
        tab_del(&f->spawns, (uint64_t)src->process_id, k.task);
        return 0;
    }
    struct spawn_ent *e = tab_put(&f->spawns, (uint64_t)src->process_id, k.task);
    if (!e)
        return -ENOMEM;
    *e = (struct spawn_ent){ src->pid, k.loc, rec->ts };
    return 0;
}

static int feed_sample(struct q_find *f, const struct proc_ent *p, const struct q_rec_src *src,
                       const struct d9_rec_hdr *rec, size_t len)
{
    if (!p->polls)
        return 0;
    struct d9_rec_stack s;
    memcpy(&s, rec, sizeof s);
    if (s.nframes == 0 || len < sizeof s + 8)
        return 0;
    struct thr_ent *t = tab_get(&f->thrs, (uint64_t)src->process_id, s.tid);
    if (!t || t->depth == 0)
        return 0;
    if (t->nbuf == Q_FIND_POLL_SAMPLES) {
        t->dropped++;
        return 0;
    }
    uint64_t ip;
    memcpy(&ip, (const uint8_t *)rec + sizeof s, sizeof ip);
    t->buf[t->nbuf++] = (struct thr_sample){ rec->ts, ip };
    return 0;
}

static int on_loopwork(struct q_find *f, const struct q_loopwork_iv *iv)
{
    struct lw_ent *l = tab_put(&f->lws, (uint64_t)iv->process_id,
                               (uint64_t)iv->runtime << 16 | iv->worker);
    if (!l)
        return -ENOMEM;
    l->pid = iv->pid;
    l->all++;
    uint64_t d = iv->end_ns - iv->start_ns;
    if (d < f->o.loop_work_ns)
        return 0;
    l->over++;
    l->over_ns += d;
    worst_keep(&l->w, d, iv->start_ns, iv->end_ns, 0, iv->tid);
    for (uint32_t i = 0; i < iv->nips; i++)
        if (loc_sample(&l->s, iv->ips[i]) < 0)
            return -ENOMEM;
    l->s.samples += iv->samples - iv->nips;     /* past the interval's buffer: counted only */
    return 0;
}

static size_t rec_min_len(uint16_t type)
{
    switch (type) {
    case D9_REC_POLL_START: return sizeof(struct d9_rec_poll_start);
    case D9_REC_POLL_END: return sizeof(struct d9_rec_poll_end);
    case D9_REC_WAKE: return sizeof(struct d9_rec_wake);
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: return sizeof(struct d9_rec_worker);
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE: return sizeof(struct d9_rec_task);
    case D9_REC_QUEUE_DEPTH: return sizeof(struct d9_rec_queue_depth);
    case D9_REC_CPU_SAMPLE: return sizeof(struct d9_rec_stack);
    default: return SIZE_MAX;
    }
}

int q_find_feed(struct q_find *f, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                size_t len)
{
    if (len < sizeof *rec || len < rec_min_len(rec->type))
        return 0;
    struct proc_ent *p = f->lastp;
    if (!p || f->lastp_id != src->process_id) {
        if (!(p = tab_put(&f->procs, (uint64_t)src->process_id, 0)))
            return -ENOMEM;
        p->pid = src->pid;
        f->lastp = p;
        f->lastp_id = src->process_id;
    }
    if (!p->flt_known) {
        bool all = !f->filter || tab_get(&f->marks, (uint64_t)src->process_id, MARK_ALL);
        p->polls = all || tab_get(&f->marks, (uint64_t)src->process_id, MARK_POLLS);
        p->waits = all;
        p->flt_known = true;
    }
    if (p->first_ts == 0 || rec->ts < p->first_ts)
        p->first_ts = rec->ts;
    if (rec->ts > p->last_ts)
        p->last_ts = rec->ts;
    int r = q_sched_feed(f->sched, src, rec, len);
    if (r < 0)
        return r;
    struct q_loopwork_iv iv;
    r = q_loopwork_feed(f->lw, src, rec, len, &iv);
    if (r < 0 || (r == 1 && (r = on_loopwork(f, &iv)) < 0))
        return r;
    switch (rec->type) {
    case D9_REC_POLL_START:
    case D9_REC_POLL_END:
        return feed_poll(f, p, src, rec, len);
    case D9_REC_WAKE: {
        struct d9_rec_wake w;
        memcpy(&w, rec, sizeof w);
        struct q_wake_pending pend = { rec->ts, 0 };
        return q_wake_put(f->wake, src->process_id, w.wakee, &pend);
    }
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK:
        return feed_worker(f, p, src, rec, len);
    case D9_REC_TASK_SPAWN:
    case D9_REC_TASK_TERMINATE:
        return feed_task(f, src, rec);
    case D9_REC_QUEUE_DEPTH:
        return feed_queue(f, src, rec);
    case D9_REC_CPU_SAMPLE:
        return feed_sample(f, p, src, rec, len);
    default:
        return 0;
    }
}

int q_find_process(struct q_find *f, const struct q_find_proc *info)
{
    f->lastp = NULL;
    struct proc_ent *p = tab_put(&f->procs, (uint64_t)info->process_id, 0);
    if (!p)
        return -ENOMEM;
    p->pid = info->pid;
    p->have_info = true;
    p->info = *info;
    return 0;
}

/* ---- the findings --------------------------------------------------------- */

/* A duration as the d9 commands print it (cli_fmt_dur's form). */
static const char *dur(uint64_t ns, char *buf, size_t cap)
{
    if (ns < NS_PER_US)
        snprintf(buf, cap, "%" PRIu64 "ns", ns);
    else if (ns < NS_PER_MS)
        snprintf(buf, cap, "%.1fus", (double)ns / (double)NS_PER_US);
    else if (ns < NS_PER_S)
        snprintf(buf, cap, "%.2fms", (double)ns / (double)NS_PER_MS);
    else if (ns < NS_PER_MIN)
        snprintf(buf, cap, "%.3fs", (double)ns / (double)NS_PER_S);
    else
        snprintf(buf, cap, "%" PRIu64 "m%02" PRIu64 "s", (uint64_t)(ns / NS_PER_MIN),
                 (uint64_t)((ns / NS_PER_S) % 60));
    return buf;
}

static struct q_finding *add(struct q_find *f, enum q_find_kind kind, int64_t process_id,
                             uint32_t pid)
{
    if (f->n == f->cap) {
        size_t ncap = f->cap ? f->cap * 2 : 16;
        struct q_finding *nv = realloc(f->v, ncap * sizeof *nv);
        if (!nv)
            return NULL;
        f->v = nv;
        f->cap = ncap;
    }
    struct q_finding *x = &f->v[f->n++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->process_id = process_id;
    x->pid = pid;
    x->worker = D9_WORKER_NONE;
    return x;
}

static const char *loc_name(const struct q_find_namer *nm, int64_t process_id, uint32_t loc,
                            char *buf, size_t cap)
{
    if (loc == 0)
        snprintf(buf, cap, "?");
    else if (!nm || !nm->location || !nm->location(nm->arg, process_id, loc, buf, cap))
        snprintf(buf, cap, "#%" PRIu32, loc);
    return buf;
}

static const char *rt_name(const struct q_find_namer *nm, int64_t process_id, uint16_t rt,
                           char *buf, size_t cap)
{
    if (!nm || !nm->runtime || !nm->runtime(nm->arg, process_id, rt, buf, cap))
        snprintf(buf, cap, "#%u", (unsigned)rt);
    return buf;
}

static void worker_where(const struct q_find_namer *nm, struct q_finding *x, char *rtbuf,
                         size_t rtcap)
{
    rt_name(nm, x->process_id, x->runtime, rtbuf, rtcap);
    if (x->worker == D9_WORKER_NONE)
        snprintf(x->where, sizeof x->where, "runtime %s global queue", rtbuf);
    else
        snprintf(x->where, sizeof x->where, "runtime %s worker %u", rtbuf, (unsigned)x->worker);
}

static int by_samples(const void *a, const void *b)
{
    const struct q_find_frame *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The top frames of a location's samples: addresses named, merged by name. */
static int top_frames(const struct q_find_namer *nm, const struct loc_ent *l, int64_t process_id,
                      struct q_finding *x)
{
    if (!l->nips)
        return 0;
    struct q_find_frame *v = calloc(l->nips, sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < l->nips; i++) {
        char name[Q_FIND_NAME_MAX];
        if (!nm || !nm->frame || !nm->frame(nm->arg, process_id, l->ips[i].ip, name, sizeof name))
            snprintf(name, sizeof name, "0x%" PRIx64, l->ips[i].ip);
        size_t k = 0;
        while (k < n && strcmp(v[k].name, name))
            k++;
        if (k == n)
            snprintf(v[n++].name, sizeof v->name, "%s", name);
        v[k].samples += l->ips[i].n;
    }
    qsort(v, n, sizeof *v, by_samples);
    x->nframes = n < Q_FIND_FRAMES ? (unsigned)n : Q_FIND_FRAMES;
    memcpy(x->frames, v, x->nframes * sizeof *v);
    free(v);
    return 0;
}

static int find_locs(struct q_find *f, const struct q_find_namer *nm)
{
    char a[32], b[32], c[32];
    for (size_t i = 0; i < f->locs.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->locs, i);
        if (!h->used)
            continue;
        const struct loc_ent *l = tab_val(h);
        int64_t pr = (int64_t)h->a;
        uint32_t loc = (uint32_t)h->b;
        if (l->long_polls) {
            struct q_finding *x = add(f, Q_FIND_LONG_POLL, pr, l->pid);
            if (!x)
                return -ENOMEM;
            *x = (struct q_finding){ .kind = Q_FIND_LONG_POLL, .process_id = pr, .pid = l->pid,
                                     .tid = l->lp.tid, .worker = D9_WORKER_NONE, .loc = loc,
                                     .task = l->lp.task, .count = l->long_polls, .of = l->polls,
                                     .total_ns = l->long_ns, .max_ns = l->lp.ns,
                                     .lost_ns = l->long_ns, .from_ns = l->lp.from,
                                     .to_ns = l->lp.to, .samples = l->samples };
            loc_name(nm, pr, loc, x->where, sizeof x->where);
            if (top_frames(nm, l, pr, x) < 0)
                return -ENOMEM;
            int o = snprintf(x->evidence, sizeof x->evidence,
                             "%" PRIu64 " of %" PRIu64 " polls >= %s (total %s, longest %s: task %"
                             PRIu64 " on tid %" PRIu32 "); %" PRIu64 " CPU samples inside",
                             x->count, x->of, dur(f->o.long_poll_ns, a, sizeof a),
                             dur(x->total_ns, b, sizeof b), dur(x->max_ns, c, sizeof c), x->task,
                             x->tid, x->samples);
            for (unsigned k = 0; k < x->nframes && o > 0 && (size_t)o < sizeof x->evidence; k++)
                o += snprintf(x->evidence + o, sizeof x->evidence - (size_t)o, "%s%s %" PRIu64,
                              k ? ", " : ": ", x->frames[k].name, x->frames[k].samples);
        }
        if (l->late_wakes) {
            struct q_finding *x = add(f, Q_FIND_WAKE_DELAY, pr, l->pid);
            if (!x)
                return -ENOMEM;
            x->tid = l->wk.tid;
            x->loc = loc;
            x->task = l->wk.task;
            x->count = l->late_wakes;
            x->of = l->wakes;
            x->total_ns = x->lost_ns = l->late_ns;
            x->max_ns = l->wk.ns;
            x->from_ns = l->wk.from;
            x->to_ns = l->wk.to;
            loc_name(nm, pr, loc, x->where, sizeof x->where);
            snprintf(x->evidence, sizeof x->evidence,
                     "%" PRIu64 " of %" PRIu64 " wakes polled >= %s after the wake (total %s, "
                     "longest %s: task %" PRIu64 ", polled on tid %" PRIu32 ")",
                     x->count, x->of, dur(f->o.wake_delay_ns, a, sizeof a),
                     dur(x->total_ns, b, sizeof b), dur(x->max_ns, c, sizeof c), x->task, x->tid);
        }
    }
    return 0;
}

static int find_waits(struct q_find *f, const struct q_find_namer *nm)
{
    char a[32], b[32], c[32], rt[Q_FIND_NAME_MAX];
    for (size_t i = 0; i < f->wrks.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->wrks, i);
        if (!h->used)
            continue;
        const struct wrk_ent *w = tab_val(h);
        if (!w->over)
            continue;
        struct q_finding *x = add(f, Q_FIND_SCHED_DELAY, (int64_t)h->a, w->pid);
        if (!x)
            return -ENOMEM;
        x->runtime = (uint16_t)(h->b >> 16);
        x->worker = (uint16_t)h->b;
        x->tid = w->w.tid;
        x->count = w->over;
        x->of = w->samples;
        x->total_ns = x->lost_ns = w->over_ns;
        x->max_ns = w->w.ns;
        x->from_ns = w->w.from;
        x->to_ns = w->w.to;
        worker_where(nm, x, rt, sizeof rt);
        snprintf(x->evidence, sizeof x->evidence,
                 "%" PRIu64 " of %" PRIu64 " scheduling wait samples >= %s: runnable, not "
                 "running for %s in all (longest %s, tid %" PRIu32 ")",
                 x->count, x->of, dur(f->o.sched_wait_ns, a, sizeof a),
                 dur(x->total_ns, b, sizeof b), dur(x->max_ns, c, sizeof c), x->tid);
    }
    return 0;
}

static int find_loopwork(struct q_find *f, const struct q_find_namer *nm)
{
    char a[32], b[32], c[32], rt[Q_FIND_NAME_MAX];
    for (size_t i = 0; i < f->lws.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->lws, i);
        if (!h->used)
            continue;
        const struct lw_ent *l = tab_val(h);
        if (!l->over)
            continue;
        struct q_finding *x = add(f, Q_FIND_LOOP_WORK, (int64_t)h->a, l->pid);
        if (!x)
            return -ENOMEM;
        x->runtime = (uint16_t)(h->b >> 16);
        x->worker = (uint16_t)h->b;
        x->tid = l->w.tid;
        x->count = l->over;
        x->of = l->all;
        x->total_ns = x->lost_ns = l->over_ns;
        x->max_ns = l->w.ns;
        x->from_ns = l->w.from;
        x->to_ns = l->w.to;
        x->samples = l->s.samples;
        worker_where(nm, x, rt, sizeof rt);
        if (top_frames(nm, &l->s, x->process_id, x) < 0)
            return -ENOMEM;
        int o = snprintf(x->evidence, sizeof x->evidence,
                         "%" PRIu64 " of %" PRIu64 " loop-work intervals >= %s: the loop's "
                         "thread outside its callbacks and its wait (total %s, longest %s on "
                         "tid %" PRIu32 "); %" PRIu64 " CPU samples inside",
                         x->count, x->of, dur(f->o.loop_work_ns, a, sizeof a),
                         dur(x->total_ns, b, sizeof b), dur(x->max_ns, c, sizeof c), x->tid,
                         x->samples);
        for (unsigned k = 0; k < x->nframes && o > 0 && (size_t)o < sizeof x->evidence; k++)
            o += snprintf(x->evidence + o, sizeof x->evidence - (size_t)o, "%s%s %" PRIu64,
                          k ? ", " : ": ", x->frames[k].name, x->frames[k].samples);
    }
    return 0;
}

static int find_queues(struct q_find *f, const struct q_find_namer *nm)
{
    char a[32], rt[Q_FIND_NAME_MAX];
    for (size_t i = 0; i < f->queues.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->queues, i);
        if (!h->used)
            continue;
        const struct queue_ent *q = tab_val(h);
        if (q->rise < f->o.queue_growth || q->rise == 0)
            continue;
        struct q_finding *x = add(f, Q_FIND_QUEUE_GROWTH, (int64_t)h->a, q->pid);
        if (!x)
            return -ENOMEM;
        x->runtime = (uint16_t)(h->b >> 16);
        x->worker = (uint16_t)h->b;
        x->count = q->rise;
        x->of = q->n;
        x->total_ns = x->max_ns = x->lost_ns = q->rise_to - q->rise_from;
        x->from_ns = q->rise_from;
        x->to_ns = q->rise_to;
        worker_where(nm, x, rt, sizeof rt);
        snprintf(x->evidence, sizeof x->evidence,
                 "depth rose by %" PRIu64 " (from %" PRIu64 " to %" PRIu64 ") in %s; last "
                 "depth %" PRIu64 " (%" PRIu64 " depth samples)",
                 q->rise, q->rise_lo, q->rise_hi, dur(x->total_ns, a, sizeof a), q->last, q->n);
    }
    return 0;
}

struct leak_ent {               /* key (process_id, loc) */
    uint32_t pid;
    uint64_t n, oldest, task;
};

static int find_leaks(struct q_find *f, const struct q_find_namer *nm)
{
    struct tab g;
    tab_init(&g, sizeof(struct leak_ent));
    int r = 0;
    for (size_t i = 0; i < f->spawns.cap && r == 0; i++) {
        struct slot_hdr *h = tab_slot(&f->spawns, i);
        if (!h->used)
            continue;
        const struct spawn_ent *s = tab_val(h);
        const struct proc_ent *p = tab_get(&f->procs, h->a, 0);
        if (!p || s->ts + f->o.leak_age_ns > p->last_ts)
            continue;
        struct leak_ent *e = tab_put(&g, h->a, s->loc);
        if (!e) {
            r = -ENOMEM;
            break;
        }
        e->pid = s->pid;
        if (e->n++ == 0 || s->ts < e->oldest || (s->ts == e->oldest && h->b < e->task)) {
            e->oldest = s->ts;
            e->task = h->b;
        }
    }
    char a[32], b[32];
    for (size_t i = 0; i < g.cap && r == 0; i++) {
        struct slot_hdr *h = tab_slot(&g, i);
        if (!h->used)
            continue;
        const struct leak_ent *e = tab_val(h);
        const struct proc_ent *p = tab_get(&f->procs, h->a, 0);
        struct q_finding *x = add(f, Q_FIND_TASK_LEAK, (int64_t)h->a, e->pid);
        if (!x) {
            r = -ENOMEM;
            break;
        }
        x->loc = (uint32_t)h->b;
        x->task = e->task;
        x->count = e->n;
        x->max_ns = x->lost_ns = x->total_ns = p->last_ts - e->oldest;
        x->from_ns = e->oldest;
        x->to_ns = p->last_ts;
        loc_name(nm, x->process_id, x->loc, x->where, sizeof x->where);
        snprintf(x->evidence, sizeof x->evidence,
                 "%" PRIu64 " tasks spawned here never terminated (spawned >= %s before the "
                 "process's last record); oldest: task %" PRIu64 ", %s old",
                 x->count, dur(f->o.leak_age_ns, a, sizeof a), x->task,
                 dur(x->max_ns, b, sizeof b));
    }
    tab_free(&g);
    return r;
}

static int find_crashes(struct q_find *f, const struct q_find_namer *nm)
{
    size_t it = 0;
    struct q_poll op;
    char a[32], lb[Q_FIND_NAME_MAX];
    while (q_pair_next_open(f->pair, &it, &op) == 1) {
        const struct proc_ent *p = tab_get(&f->procs, (uint64_t)op.process_id, 0);
        if (!p || !p->have_info || !p->info.crashed)
            continue;
        struct q_finding *x = add(f, Q_FIND_CRASH, op.process_id, op.pid);
        if (!x)
            return -ENOMEM;
        x->tid = op.tid;
        x->runtime = op.runtime;
        x->worker = op.worker;
        x->loc = op.loc;
        x->task = op.task;
        x->count = 1;
        x->from_ns = op.start_ns;
        x->to_ns = p->last_ts > op.start_ns ? p->last_ts : op.start_ns;
        x->max_ns = x->total_ns = x->lost_ns = x->to_ns - op.start_ns;
        snprintf(x->where, sizeof x->where, "pid %" PRIu32, op.pid);
        char sig[32] = "";
        if (p->info.signal > 0)
            snprintf(sig, sizeof sig, " (signal %" PRId64 ")", p->info.signal);
        snprintf(x->evidence, sizeof x->evidence,
                 "crashed%s inside a poll: task %" PRIu64 " at %s on tid %" PRIu32 ", started "
                 "%s before the process's last record and never ended",
                 sig, op.task, loc_name(nm, op.process_id, op.loc, lb, sizeof lb), op.tid,
                 dur(x->max_ns, a, sizeof a));
    }
    return 0;
}

static int find_lost(struct q_find *f)
{
    for (size_t i = 0; i < f->procs.cap; i++) {
        struct slot_hdr *h = tab_slot(&f->procs, i);
        if (!h->used)
            continue;
        const struct proc_ent *p = tab_val(h);
        if (!p->have_info || p->info.lost == 0 || p->info.lost < f->o.lost_min)
            continue;
        struct q_finding *x = add(f, Q_FIND_LOST, (int64_t)h->a, p->pid);
        if (!x)
            return -ENOMEM;
        x->count = p->info.lost;
        x->from_ns = p->first_ts;
        x->to_ns = p->last_ts;
        snprintf(x->where, sizeof x->where, "pid %" PRIu32, p->pid);
        struct idx_read_drops d = { .lost = p->info.lost, .full = p->info.full,
                                    .mismatch = p->info.mismatch, .too_big = p->info.too_big,
                                    .no_ring = p->info.no_ring };
        char causes[160];
        snprintf(x->evidence, sizeof x->evidence,
                 "%" PRIu64 " records lost (%s): the other findings of this process may "
                 "miss events", x->count, q_store_drops_text(&d, causes, sizeof causes));
    }
    return 0;
}

static int find_imbalance(struct q_find *f, const struct q_find_namer *nm)
{
    size_t n;
    const struct q_sched_worker *w = q_sched_workers(f->sched, &n);
    if (!w)
        return -ENOMEM;
    char a[32], b[32], rt[Q_FIND_NAME_MAX];
    for (size_t g = 0; g < n;) {
        size_t e = g;
        while (e < n && w[e].process_id == w[g].process_id && w[e].runtime == w[g].runtime)
            e++;
        uint64_t busy_sum = 0, idle_parked = 0;
        size_t idle = 0;
        for (size_t i = g; i < e; i++) {
            busy_sum += w[i].busy_ns;
            if (w[i].busy_pct <= f->o.idle_pct && w[i].parks > 0) {
                idle++;
                idle_parked += w[i].parked_ns;
            }
        }
        uint64_t mean = e - g ? busy_sum / (e - g) : 0;
        for (size_t i = g; i < e && e - g >= 2 && idle; i++) {
            if (w[i].busy_pct < f->o.busy_pct || w[i].busy_ns <= mean)
                continue;
            struct q_finding *x = add(f, Q_FIND_IMBALANCE, w[i].process_id, w[i].pid);
            if (!x)
                return -ENOMEM;
            x->tid = w[i].tid;
            x->runtime = w[i].runtime;
            x->worker = w[i].worker;
            x->count = w[i].polls;
            x->of = e - g;
            x->total_ns = w[i].busy_ns;
            x->max_ns = x->lost_ns = w[i].busy_ns - mean;
            x->from_ns = w[i].t_first;
            x->to_ns = w[i].t_last;
            worker_where(nm, x, rt, sizeof rt);
            snprintf(x->evidence, sizeof x->evidence,
                     "busy %.0f%% of its span (%s in %" PRIu64 " polls, tid %" PRIu32 ") while "
                     "%zu of the runtime's %zu workers were busy <= %.0f%% and parked %s in all",
                     w[i].busy_pct, dur(w[i].busy_ns, a, sizeof a), w[i].polls, w[i].tid, idle,
                     e - g, f->o.idle_pct, dur(idle_parked, b, sizeof b));
        }
        g = e;
    }
    return 0;
}

static int kind_class(enum q_find_kind k)
{
    return k == Q_FIND_CRASH ? 0 : k == Q_FIND_LOST ? 1 : k == Q_FIND_TRIGGER ? 3 : 2;
}

static int by_rank(const void *pa, const void *pb)
{
    const struct q_finding *a = pa, *b = pb;
    if (kind_class(a->kind) != kind_class(b->kind))
        return kind_class(a->kind) - kind_class(b->kind);
    if (a->lost_ns != b->lost_ns)
        return a->lost_ns > b->lost_ns ? -1 : 1;
    if (a->kind != b->kind)
        return (int)a->kind - (int)b->kind;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->worker != b->worker)
        return a->worker < b->worker ? -1 : 1;
    if (a->from_ns != b->from_ns)
        return a->from_ns < b->from_ns ? -1 : 1;
    return strcmp(a->where, b->where);
}

int q_find_finish(struct q_find *f, const struct q_find_namer *nm)
{
    f->n = 0;
    int r;
    if ((r = find_crashes(f, nm)) < 0 || (r = find_lost(f)) < 0 || (r = find_locs(f, nm)) < 0 ||
        (r = find_waits(f, nm)) < 0 || (r = find_imbalance(f, nm)) < 0 ||
        (r = find_queues(f, nm)) < 0 || (r = find_leaks(f, nm)) < 0 ||
        (r = find_loopwork(f, nm)) < 0)
        return r;
    if (f->n)
        qsort(f->v, f->n, sizeof *f->v, by_rank);
    return 0;
}

const struct q_finding *q_find_list(const struct q_find *f, size_t *n)
{
    *n = f->n;
    return f->v;
}

/* ---- against a store ------------------------------------------------------ */

struct run_ctx {
    struct q_find *f;
    struct q_store *s;
    uint64_t to;
    int err;
};

static int on_proc(void *arg, const struct idx_read_process *r)
{
    struct run_ctx *c = arg;
    struct q_find_proc p = { .process_id = r->id, .pid = r->pid };
    p.crashed = strcmp(r->state, "crashed") == 0 && r->last_ns <= c->to;
    p.signal = p.crashed && r->has_exit_code ? r->exit_code : 0;
    p.last_ns = r->last_ns;
    struct idx_read_drops d;
    if (q_store_drops(c->s, r->id, 0, 0, UINT64_MAX, &d) == 0) {
        p.lost = d.lost;
        p.full = d.full;
        p.mismatch = d.mismatch;
        p.too_big = d.too_big;
        p.no_ring = d.no_ring;
    }
    if ((c->err = q_find_process(c->f, &p)) < 0)
        return c->err;
    return 0;
}

static int on_rec(void *arg, const struct q_rec_src *src, const struct d9_rec_hdr *rec, size_t len)
{
    struct q_find *f = arg;
    int r = q_find_feed(f, src, rec, len);
    return r < 0 ? r : f->missed ? 1 : 0;       /* missed: the filtered read is void */
}

struct names_ctx {
    struct q_names *names;
    struct q_sym *sym;
};

static const char *nm_location(void *arg, int64_t process_id, uint32_t loc, char *buf, size_t cap)
{
    struct names_ctx *c = arg;
    return c->names ? q_names_location(c->names, process_id, loc, buf, cap) : NULL;
}

static const char *nm_runtime(void *arg, int64_t process_id, uint16_t rt, char *buf, size_t cap)
{
    struct names_ctx *c = arg;
    return c->names ? q_names_runtime(c->names, process_id, rt, buf, cap) : NULL;
}

static const char *nm_frame(void *arg, int64_t process_id, uint64_t ip, char *buf, size_t cap)
{
    struct names_ctx *c = arg;
    if (!c->sym)
        return NULL;
    const char *n = q_sym_name(c->sym, process_id, ip, ip >= SYM_KERNEL_SPACE_MIN, NULL);
    if (!n)
        return NULL;
    snprintf(buf, cap, "%s", n);
    return buf;
}

struct trig_ctx {
    struct q_find *f;
    int err;
};

static int on_trigger(void *arg, const struct idx_trigger *t)
{
    struct trig_ctx *c = arg;
    if (strcmp(t->verdict, "kept") != 0 && strcmp(t->verdict, "merged") != 0)
        return 0;
    struct q_finding *x = add(c->f, Q_FIND_TRIGGER, t->process_id, t->pid);
    if (!x)
        return c->err = -ENOMEM;
    x->count = 1;
    x->from_ns = t->win_t0_ns;
    x->to_ns = t->win_t1_ns;
    snprintf(x->where, sizeof x->where, "%s: %.160s", t->source, t->reason);
    snprintf(x->evidence, sizeof x->evidence, "%s trigger at %" PRIu64 " (%s), keeping "
             "%" PRIu64 "..%" PRIu64, t->source, t->t_ns, t->verdict, t->win_t0_ns,
             t->win_t1_ns);
    return 0;
}

/* The triggers of the window that kept one (after q_find_finish). */
static int find_triggers(struct q_find *f, struct q_store *s, uint32_t pid, uint64_t from,
                         uint64_t to)
{
    struct trig_ctx c = { f, 0 };
    int r = idx_trig_foreach(q_store_idx(s), pid, from, to, on_trigger, &c);
    if (c.err < 0)
        return c.err;
    if (r < 0)
        return r;
    if (f->n)
        qsort(f->v, f->n, sizeof *f->v, by_rank);
    return 0;
}

/* The processes and the scan, filtered by the rollups or not. */
static int run_scan(struct q_find *f, struct q_store *s, uint32_t pid, uint64_t from,
                    uint64_t to, bool filter, struct q_scan_stats *st, const char *prog)
{
    struct run_ctx c = { .f = f, .s = s, .to = to };
    int r = q_store_processes(s, pid, from, to, on_proc, &c);
    if (r < 0)
        return c.err < 0 ? c.err : r;
    f->filter = filter;
    if (filter && (r = q_findru_plan(s, pid, from, to, f->o.long_poll_ns, f->o.sched_wait_ns,
                                     mark, f, NULL, prog)) < 0)
        return r;
    f->lastp = NULL;
    struct q_filter flt = { .from = from, .to = to, .pid = pid, .types = Q_FIND_TYPES };
    r = q_scan(s, &flt, on_rec, f, st, prog);
    return r < 0 ? r : 0;
}

int q_find_run(struct q_find *f, struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
               struct q_scan_stats *st, const char *prog)
{
    int r = run_scan(f, s, pid, from, to, !f->raw, st, prog);
    if (r == 0 && f->missed) {
        fprintf(stderr, "%s: a long poll or wait the rollups did not show (a poll across "
                "segments, or a block not read): reading the window again without them\n",
                prog ? prog : "d9");
        if ((r = reset(f)) == 0)
            r = run_scan(f, s, pid, from, to, false, st, prog);
    }
    if (r < 0)
        return r;
    struct names_ctx nc = { NULL, NULL };
    q_names_open(s, &nc.names);
    bool want_frames = false;
    for (size_t i = 0; i < f->locs.cap && !want_frames; i++) {
        struct slot_hdr *h = tab_slot(&f->locs, i);
        want_frames = h->used && ((struct loc_ent *)tab_val(h))->nips > 0;
    }
    for (size_t i = 0; i < f->lws.cap && !want_frames; i++) {
        struct slot_hdr *h = tab_slot(&f->lws, i);
        want_frames = h->used && ((struct lw_ent *)tab_val(h))->s.nips > 0;
    }
    if (want_frames && q_sym_new(&nc.sym, s) == 0 && q_sym_load(nc.sym, pid, from, to, prog) < 0) {
        q_sym_free(nc.sym);
        nc.sym = NULL;
    }
    struct q_find_namer nm = { &nc, nm_location, nm_runtime, nm_frame };
    r = q_find_finish(f, &nm);
    if (r == 0)
        r = find_triggers(f, s, pid, from, to);
    q_sym_free(nc.sym);
    q_names_close(nc.names);
    return r;
}

void q_find_json(FILE *out, const struct q_finding *x, unsigned rank, const char *url)
{
    fprintf(out, "{\"rank\":%u,\"kind\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, rank,
            q_find_kind_name(x->kind), x->pid, x->tid);
    if (x->worker != D9_WORKER_NONE || x->kind == Q_FIND_QUEUE_GROWTH)
        fprintf(out, ",\"runtime\":%u", (unsigned)x->runtime);
    if (x->worker != D9_WORKER_NONE)
        fprintf(out, ",\"worker\":%u", (unsigned)x->worker);
    fprintf(out, ",\"loc\":%" PRIu32 ",\"where\":", x->loc);
    q_text_json(out, x->where, strlen(x->where));
    fprintf(out, ",\"task\":%" PRIu64 ",\"count\":%" PRIu64 ",\"of\":%" PRIu64
            ",\"total_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",\"lost_ns\":%" PRIu64
            ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64,
            x->task, x->count, x->of, x->total_ns, x->max_ns, x->lost_ns, x->from_ns, x->to_ns);
    if (x->kind == Q_FIND_LONG_POLL || x->kind == Q_FIND_LOOP_WORK) {
        fprintf(out, ",\"samples\":%" PRIu64 ",\"frames\":[", x->samples);
        for (unsigned k = 0; k < x->nframes; k++) {
            fputs(k ? ",{\"name\":" : "{\"name\":", out);
            q_text_json(out, x->frames[k].name, strlen(x->frames[k].name));
            fprintf(out, ",\"samples\":%" PRIu64 "}", x->frames[k].samples);
        }
        fputc(']', out);
    }
    fputs(",\"evidence\":", out);
    q_text_json(out, x->evidence, strlen(x->evidence));
    if (url) {
        fputs(",\"url\":", out);
        q_text_json(out, url, strlen(url));
    }
    fputc('}', out);
}
