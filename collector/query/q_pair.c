/*
 * q_pair.c — poll and park pairing (see q_pair.h).
 *
 * Threads live in an open-addressing hash table keyed by (process_id, ring,
 * generation), grown at 50% load; each holds a small array of open polls.
 * A scan's merge interleaves a few threads' records, so a small direct-mapped
 * cache of threads (p->recent, indexed by a cheap fold of the key) is tried
 * before the table's two-mix hash: it holds used slots only, and is cleared
 * when the table grows (slots are never emptied, so an entry stays that
 * thread's until then). The table, and so q_pair_next_open's order, is as
 * without the cache.
 * Never reads a record beyond the length shm_record_check would accept
 * (fixed_fits: the same test for the fixed-size types read here).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/store_hash.h"
#include "collector/query/q_loc.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_store.h"
#include "shm/record.h"

struct thr {
    bool used;
    int64_t process_id;
    uint32_t ring, generation;
    struct q_poll *open;
    size_t nopen, capopen;
};

#define PAIR_RECENT 16u            /* a power of two */

struct q_pair {
    struct thr *t;
    size_t cap, n;                  /* cap is a power of two */
    struct thr *recent[PAIR_RECENT];    /* used slots by recent_ix(); NULL = none */
    struct q_pair_stats st;
    bool parks;
    const char *only_rt, *only_loc;     /* q_pair_only; NULL = any */
};

#define POLLS_INITIAL_CAP 64u

int q_pair_new(struct q_pair **out)
{
    struct q_pair *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->cap = POLLS_INITIAL_CAP;
    p->t = calloc(p->cap, sizeof *p->t);
    if (!p->t) {
        free(p);
        return -ENOMEM;
    }
    *out = p;
    return 0;
}

void q_pair_free(struct q_pair *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->cap; i++)
        free(p->t[i].open);
    free(p->t);
    free(p);
}

static struct thr *slot(struct thr *t, size_t cap, int64_t pid, uint32_t ring, uint32_t gen)
{
    size_t i = (size_t)store_hash2((uint64_t)ring << 32 | gen, (uint64_t)pid) & (cap - 1);
    while (t[i].used &&
           !(t[i].process_id == pid && t[i].ring == ring && t[i].generation == gen))
        i = (i + 1) & (cap - 1);
    return &t[i];
}

static int grow(struct q_pair *p)
{
    size_t nc = p->cap * 2;
    struct thr *n = calloc(nc, sizeof *n);
    if (!n)
        return -ENOMEM;
    for (size_t i = 0; i < p->cap; i++)
        if (p->t[i].used)
            *slot(n, nc, p->t[i].process_id, p->t[i].ring, p->t[i].generation) = p->t[i];
    free(p->t);
    p->t = n;
    p->cap = nc;
    memset(p->recent, 0, sizeof p->recent);
    return 0;
}

static size_t recent_ix(const struct q_rec_src *src)
{
    return ((size_t)src->ring ^ (size_t)src->generation ^ (size_t)src->process_id) &
           (PAIR_RECENT - 1);
}

/* lookup() past the cache: the table (its answer cached when used) */
static __attribute__((noinline)) struct thr *lookup_slow(struct q_pair *p, struct thr **r,
                                                        const struct q_rec_src *src)
{
    struct thr *t = slot(p->t, p->cap, src->process_id, src->ring, src->generation);
    if (t->used)
        *r = t;
    return t;
}

/* The slot of src's thread (used), or the free slot it would take (unused). */
static inline struct thr *lookup(struct q_pair *p, const struct q_rec_src *src)
{
    struct thr **r = &p->recent[recent_ix(src)];
    struct thr *t = *r;
    if (t && t->process_id == src->process_id && t->ring == src->ring &&
        t->generation == src->generation)
        return t;
    return lookup_slow(p, r, src);
}

static struct thr *thread_of(struct q_pair *p, const struct q_rec_src *src)
{
    struct thr *t = lookup(p, src);
    if (t->used)
        return t;
    if ((p->n + 1) * 2 > p->cap) {
        if (grow(p) < 0)
            return NULL;
        t = slot(p->t, p->cap, src->process_id, src->ring, src->generation);
    }
    memset(t, 0, sizeof *t);
    t->used = true;
    t->process_id = src->process_id;
    t->ring = src->ring;
    t->generation = src->generation;
    p->n++;
    p->recent[recent_ix(src)] = t;
    return t;
}

void q_pair_track_parks(struct q_pair *p) { p->parks = true; }

void q_pair_only(struct q_pair *p, const char *runtime, const char *location)
{
    p->only_rt = runtime && *runtime ? runtime : NULL;
    p->only_loc = location && *location ? location : NULL;
}

/* Whether q_pair_only() leaves out a poll_start, by the names of its segment. */
static bool left_out(const struct q_pair *p, const struct q_rec_src *src,
                     const struct d9_rec_poll_start *r)
{
    if (r->task == Q_POLL_PARKED)
        return false;
    const struct q_meta_src *m = src->meta;
    if (p->only_rt) {
        const char *rt = m && m->runtime ? m->runtime(m->ctx, r->runtime) : NULL;
        if (!rt || strcmp(rt, p->only_rt) != 0)
            return true;
    }
    if (p->only_loc) {
        const struct shm_meta_entry *e = m && m->location && r->loc
            ? m->location(m->ctx, r->loc) : NULL;
        char buf[Q_LOC_TEXT_MAX];
        if (!strstr(q_loc_text(e, r->loc, buf, sizeof buf), p->only_loc))
            return true;
    }
    return false;
}

static int open_poll(struct q_pair *p, const struct q_rec_src *src,
                     const struct d9_rec_poll_start *r)
{
    struct thr *t = thread_of(p, src);
    if (!t)
        return -ENOMEM;
    struct q_poll *slotp = NULL;
    for (size_t i = 0; i < t->nopen; i++) {
        if (t->open[i].task == r->task) {
            slotp = &t->open[i];
            if (r->task != Q_POLL_PARKED)
                p->st.replaced_starts++;
            break;
        }
    }
    if (!slotp) {
        if (t->nopen == t->capopen) {
            size_t nc = t->capopen ? t->capopen * 2 : 2;
            struct q_poll *n = realloc(t->open, nc * sizeof *n);
            if (!n)
                return -ENOMEM;
            t->open = n;
            t->capopen = nc;
        }
        slotp = &t->open[t->nopen++];
    }
    *slotp = (struct q_poll){
        .process_id = src->process_id, .pid = src->pid, .tid = src->tid,
        .ring = src->ring, .generation = src->generation, .task = r->task, .loc = r->loc,
        .runtime = r->runtime, .worker = r->worker, .start_ns = r->h.ts,
        .hidden = (p->only_rt || p->only_loc) && left_out(p, src, r),
    };
    return 0;
}

static int close_poll(struct q_pair *p, const struct q_rec_src *src, uint64_t task,
                      uint64_t ts, struct q_poll *done)
{
    struct thr *t = lookup(p, src);
    if (t->used) {
        for (size_t i = t->nopen; i-- > 0;) {
            if (t->open[i].task != task)
                continue;
            *done = t->open[i];
            done->end_ns = ts < done->start_ns ? done->start_ns : ts;
            t->open[i] = t->open[--t->nopen];
            return 1;
        }
    }
    return 0;
}

int q_pair_seed(struct q_pair *p, const struct q_poll *open)
{
    struct q_rec_src src = { .process_id = open->process_id, .pid = open->pid, .tid = open->tid,
                             .ring = open->ring, .generation = open->generation };
    struct d9_rec_poll_start r = { .h = { .ts = open->start_ns }, .task = open->task,
                                   .loc = open->loc, .runtime = open->runtime,
                                   .worker = open->worker };
    return open_poll(p, &src, &r);
}

/* shm_record_check for a fixed-size type of size want (len >= the header) */
static inline bool fixed_fits(const struct d9_rec_hdr *rec, size_t len, size_t want)
{
    return rec->len == want && len >= want;
}

int q_pair_feed(struct q_pair *p, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                   size_t len, struct q_poll *done)
{
    if (!rec) {
        struct thr *t = lookup(p, src);
        p->st.gaps++;
        if (t->used) {
            p->st.broken += t->nopen;
            t->nopen = 0;
        }
        return 0;
    }
    /* the types read here are fixed-size: shm_record_check's test for them
     * (the header's length is the type's, within len), and nothing for the
     * types ignored */
    if (len < D9_REC_HDR_SIZE)
        return 0;
    switch (rec->type) {
    case D9_REC_POLL_START: {
        struct d9_rec_poll_start r;
        if (!fixed_fits(rec, len, sizeof r))
            return 0;
        memcpy(&r, rec, sizeof r);
        return open_poll(p, src, &r);
    }
    case D9_REC_POLL_END: {
        struct d9_rec_poll_end r;
        if (!fixed_fits(rec, len, sizeof r))
            return 0;
        memcpy(&r, rec, sizeof r);
        if (close_poll(p, src, r.task, r.h.ts, done)) {
            if (done->hidden)
                return 0;
            p->st.paired++;
            return 1;
        }
        p->st.unpaired_ends++;
        return 0;
    }
    case D9_REC_WORKER_PARK:
    case D9_REC_WORKER_UNPARK: {
        struct d9_rec_worker w;
        if (!p->parks || !fixed_fits(rec, len, sizeof w))
            return 0;
        memcpy(&w, rec, sizeof w);
        if (rec->type == D9_REC_WORKER_UNPARK)
            return close_poll(p, src, Q_POLL_PARKED, w.h.ts, done) ? 2 : 0;
        struct d9_rec_poll_start r = { .h = w.h, .task = Q_POLL_PARKED,
                                       .runtime = w.runtime, .worker = w.worker };
        return open_poll(p, src, &r);
    }
    default:
        return 0;
    }
}

int q_pair_next_open(const struct q_pair *p, size_t *it, struct q_poll *out)
{
    /* *it encodes (thread slot, index in its open list) */
    size_t ti = *it >> 16, oi = *it & 0xffff;
    for (; ti < p->cap; ti++, oi = 0) {
        const struct thr *t = &p->t[ti];
        if (!t->used)
            continue;
        while (oi < t->nopen && oi < 0xffff && t->open[oi].hidden)
            oi++;
        if (oi >= t->nopen || oi >= 0xffff)
            continue;
        *out = t->open[oi];
        *it = (ti << 16) | (oi + 1);
        return 1;
    }
    *it = ti << 16;
    return 0;
}

const struct q_pair_stats *q_pair_stats(const struct q_pair *p) { return &p->st; }

enum q_open_why q_pair_end_open(struct q_store *s, uint64_t to, struct q_poll *p)
{
    struct idx_read_process_end pe;
    enum q_open_why why = Q_OPEN_WINDOW;
    uint64_t end = to;
    if (s && q_store_process_end(s, p->process_id, &pe) < 0) {
        why = Q_OPEN_ENDED;             /* nothing known: no more than its start */
        end = p->start_ns;
    } else if (s) {
        uint64_t last = pe.rec_last_ns ? pe.rec_last_ns : pe.last_ns;
        if (last <= to) {
            end = last;
            why = strcmp(pe.state, "crashed") == 0  ? Q_OPEN_CRASHED
                : strcmp(pe.state, "exited") == 0   ? Q_OPEN_EXITED
                : strcmp(pe.state, "alive") == 0    ? Q_OPEN_ALIVE
                                                    : Q_OPEN_ENDED;
        }
    }
    p->end_ns = end > p->start_ns ? end : p->start_ns;
    return why;
}

const char *q_pair_open_text(enum q_open_why why)
{
    switch (why) {
    case Q_OPEN_CRASHED: return "process crashed";
    case Q_OPEN_EXITED:  return "process exited";
    case Q_OPEN_ENDED:   return "process ended";
    case Q_OPEN_WINDOW:  return "open at the window's end";
    case Q_OPEN_ALIVE:   break;
    }
    return "still open";
}
