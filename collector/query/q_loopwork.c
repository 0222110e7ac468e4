/*
 * q_loopwork.c — loop-work intervals (the definition is in q_loopwork.h):
 * per thread, where it is (depth of open polls, parked or not) and since
 * when it has been neither; a record that enters a poll or the wait closes
 * the stretch and hands it out when it is long enough.
 *
 * The threads are an open-addressing hash (linear probing, no deletion)
 * keyed by (process_id, tid), the value inline with its sample buffer.
 */
#include "collector/query/q_loopwork.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/store_hash.h"

#define LW_MIN_CAP   32u        /* slots of the first allocation (power of two) */
#define LW_LOAD_PCT  50u        /* grow past this load */

struct lw_thr {
    bool used;
    bool worker;                /* a park or unpark of it was seen */
    bool parked;
    int64_t process_id;
    uint32_t tid, pid, ring, generation;
    uint32_t depth;             /* polls open */
    uint16_t runtime, worker_id;
    uint64_t free_since;        /* 0 = not known to be outside polls and the wait */
    uint64_t samples;           /* since free_since */
    uint32_t nips;
    uint64_t ips[Q_LOOPWORK_SAMPLES];
};

struct q_loopwork {
    uint64_t min_ns;
    struct lw_thr *t;
    size_t cap, n;
    uint64_t out_ips[Q_LOOPWORK_SAMPLES];
};

int q_loopwork_new(struct q_loopwork **out, uint64_t min_ns)
{
    struct q_loopwork *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->min_ns = min_ns ? min_ns : Q_LOOPWORK_DEF_MIN_NS;
    *out = w;
    return 0;
}

void q_loopwork_free(struct q_loopwork *w)
{
    if (!w)
        return;
    free(w->t);
    free(w);
}

static size_t home(size_t cap, int64_t pid, uint32_t tid)
{
    return (size_t)store_hash2((uint64_t)pid, tid) & (cap - 1);
}

static struct lw_thr *thr_get(const struct q_loopwork *w, int64_t process_id, uint32_t tid)
{
    if (!w->cap)
        return NULL;
    for (size_t i = home(w->cap, process_id, tid);; i = (i + 1) & (w->cap - 1)) {
        struct lw_thr *t = &w->t[i];
        if (!t->used)
            return NULL;
        if (t->process_id == process_id && t->tid == tid)
            return t;
    }
}

static int grow(struct q_loopwork *w)
{
    size_t ncap = w->cap ? w->cap * 2 : LW_MIN_CAP;
    struct lw_thr *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -ENOMEM;
    for (size_t i = 0; i < w->cap; i++) {
        if (!w->t[i].used)
            continue;
        size_t j = home(ncap, w->t[i].process_id, w->t[i].tid);
        while (nt[j].used)
            j = (j + 1) & (ncap - 1);
        nt[j] = w->t[i];
    }
    free(w->t);
    w->t = nt;
    w->cap = ncap;
    return 0;
}

static struct lw_thr *thr_put(struct q_loopwork *w, int64_t process_id, uint32_t tid)
{
    struct lw_thr *t = thr_get(w, process_id, tid);
    if (t)
        return t;
    if ((w->n + 1) * 100 > w->cap * LW_LOAD_PCT && grow(w) < 0)
        return NULL;
    size_t i = home(w->cap, process_id, tid);
    while (w->t[i].used)
        i = (i + 1) & (w->cap - 1);
    t = &w->t[i];
    memset(t, 0, sizeof *t);
    t->used = true;
    t->process_id = process_id;
    t->tid = tid;
    w->n++;
    return t;
}

/* The thread leaves polls and the wait at ts. */
static void set_free(struct lw_thr *t, uint64_t ts)
{
    t->free_since = ts ? ts : 1;
    t->samples = 0;
    t->nips = 0;
}

/* The thread enters a poll or the wait at ts: 1 and *done when the stretch
 * since free_since is loop work. */
static int close_free(struct q_loopwork *w, struct lw_thr *t, uint64_t ts,
                      struct q_loopwork_iv *done)
{
    uint64_t from = t->free_since;
    t->free_since = 0;
    if (!from || !t->worker || ts < from || ts - from < w->min_ns)
        return 0;
    memcpy(w->out_ips, t->ips, t->nips * sizeof t->ips[0]);
    *done = (struct q_loopwork_iv){
        .process_id = t->process_id, .pid = t->pid, .tid = t->tid, .ring = t->ring,
        .generation = t->generation, .runtime = t->runtime, .worker = t->worker_id,
        .start_ns = from, .end_ns = ts, .samples = t->samples, .nips = t->nips,
        .ips = w->out_ips,
    };
    return 1;
}

static int feed_sample(struct q_loopwork *w, const struct q_rec_src *src,
                       const struct d9_rec_hdr *rec, size_t len)
{
    struct d9_rec_stack s;
    if (len < sizeof s)
        return 0;
    memcpy(&s, rec, sizeof s);
    struct lw_thr *t = thr_get(w, src->process_id, s.tid);
    if (!t || !t->free_since || rec->ts < t->free_since)
        return 0;
    t->samples++;
    if (s.nframes > 0 && len >= sizeof s + sizeof(uint64_t) && t->nips < Q_LOOPWORK_SAMPLES)
        memcpy(&t->ips[t->nips++], (const uint8_t *)rec + sizeof s, sizeof(uint64_t));
    return 0;
}

int q_loopwork_feed(struct q_loopwork *w, const struct q_rec_src *src,
                    const struct d9_rec_hdr *rec, size_t len, struct q_loopwork_iv *done)
{
    if (!rec) {                                 /* a gap: the thread's state is unknown */
        struct lw_thr *t = thr_get(w, src->process_id, src->tid);
        if (t) {
            t->depth = 0;
            t->parked = false;
            t->free_since = 0;
        }
        return 0;
    }
    if (len < sizeof *rec)
        return 0;
    if (rec->type == D9_REC_CPU_SAMPLE)
        return feed_sample(w, src, rec, len);
    uint16_t rt, wk;
    switch (rec->type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start p;
        if (len < sizeof p)
            return 0;
        memcpy(&p, rec, sizeof p);
        rt = p.runtime, wk = p.worker;
        break;
    }
    case D9_REC_POLL_END: {
        struct d9_rec_poll_end p;
        if (len < sizeof p)
            return 0;
        memcpy(&p, rec, sizeof p);
        rt = p.runtime, wk = p.worker;
        break;
    }
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        struct d9_rec_worker p;
        if (len < sizeof p)
            return 0;
        memcpy(&p, rec, sizeof p);
        rt = p.runtime, wk = p.worker;
        break;
    }
    default:
        return 0;
    }
    struct lw_thr *t = thr_put(w, src->process_id, src->tid);
    if (!t)
        return -ENOMEM;
    t->pid = src->pid;
    t->ring = src->ring;
    t->generation = src->generation;
    int r = 0;
    bool was_free = t->depth == 0 && !t->parked;
    switch (rec->type) {
    case D9_REC_POLL_START:
        if (was_free)
            r = close_free(w, t, rec->ts, done);
        t->depth++;
        break;
    case D9_REC_WORKER_PARK:
        t->worker = true;
        if (was_free)
            r = close_free(w, t, rec->ts, done);
        t->parked = true;
        break;
    case D9_REC_POLL_END:
        if (t->depth > 0)
            t->depth--;
        if (t->depth == 0 && !t->parked)    /* the outermost end, or an end without a start */
            set_free(t, rec->ts);
        break;
    case D9_REC_WORKER_UNPARK:
        t->worker = true;
        t->parked = false;
        if (t->depth == 0)
            set_free(t, rec->ts);
        break;
    default:
        break;
    }
    /* the interval (if any) is named by the records before this one */
    t->runtime = rt;
    t->worker_id = wk;
    return r;
}

int q_loopwork_carry(struct q_loopwork *w, const struct q_loopwork *from)
{
    for (size_t i = 0; i < from->cap; i++) {
        const struct lw_thr *f = &from->t[i];
        if (!f->used)
            continue;
        struct lw_thr *t = thr_put(w, f->process_id, f->tid);
        if (!t)
            return -ENOMEM;
        *t = *f;
    }
    return 0;
}

uint64_t q_loopwork_open_since(const struct q_loopwork *w, int64_t process_id, uint32_t tid)
{
    const struct lw_thr *t = thr_get(w, process_id, tid);
    return t && t->worker && t->depth == 0 && !t->parked ? t->free_since : 0;
}
