/*
 * serve_edge.c — the look-back states of d9 serve's timelines (see
 * serve_edge.h). Fixed tables (states, claims) under one mutex, a
 * condition variable for the waiters; entries are copied in and out, never
 * handed out by pointer.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "collector/serve/serve_edge.h"

struct edge_slot {
    bool used;
    struct serve_edge_key k;
    uint64_t t;
    uint64_t stamp;                 /* last use: the least recent is replaced */
    bool partial;
    size_t n;
    struct q_poll open[SERVE_EDGE_OPEN_MAX];
    struct q_loopwork_thr lw;       /* lw.used: kept */
};

struct edge_claim {
    bool used;
    struct serve_edge_key k;
    uint64_t t;
};
#define EDGE_CLAIMS 64u             /* more at once: the rest look back unclaimed */

static pthread_mutex_t edge_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t edge_cv = PTHREAD_COND_INITIALIZER;
static struct edge_slot edge_slots[SERVE_EDGE_SLOTS];
static struct edge_claim edge_claims[EDGE_CLAIMS];
static uint64_t edge_clock;

uint64_t serve_edge_dir_hash(const char *dir)
{
    uint64_t h = 1469598103934665603ull;        /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)(dir ? dir : ""); *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

static bool key_eq(const struct serve_edge_key *a, const struct serve_edge_key *b)
{
    return a->dir_hash == b->dir_hash && a->process_id == b->process_id &&
           a->proc_first == b->proc_first && a->proc_last == b->proc_last && a->tid == b->tid;
}

/* the kept state to use, or NULL. Lock held. */
static struct edge_slot *find(const struct serve_edge_key *k, uint64_t at, uint64_t reach)
{
    struct edge_slot *best = NULL;
    for (size_t i = 0; i < SERVE_EDGE_SLOTS; i++) {
        struct edge_slot *e = &edge_slots[i];
        if (e->used && key_eq(&e->k, k) && e->t <= at && at - e->t <= reach &&
            (!best || e->t > best->t))
            best = e;
    }
    return best;
}

/* a claim in progress whose state would be used. Lock held. */
static bool claimed(const struct serve_edge_key *k, uint64_t at, uint64_t reach)
{
    for (size_t i = 0; i < EDGE_CLAIMS; i++)
        if (edge_claims[i].used && key_eq(&edge_claims[i].k, k) && edge_claims[i].t <= at &&
            at - edge_claims[i].t <= reach)
            return true;
    return false;
}

enum serve_edge_got serve_edge_take(const struct serve_edge_key *k, uint64_t at, uint64_t reach,
                                    uint64_t *t, struct q_poll open[SERVE_EDGE_OPEN_MAX],
                                    size_t *n, bool *partial, struct q_loopwork_thr *lw,
                                    bool (*gone)(void))
{
    enum serve_edge_got got = SERVE_EDGE_CLAIMED;
    unsigned waited = 0;
    pthread_mutex_lock(&edge_mu);
    for (;;) {
        struct edge_slot *best = find(k, at, reach);
        if (best) {
            best->stamp = ++edge_clock;
            *t = best->t;
            *n = best->n;
            *partial = best->partial;
            memcpy(open, best->open, best->n * sizeof open[0]);
            if (lw)
                *lw = best->lw;
            got = SERVE_EDGE_FOUND;
            break;
        }
        if (!claimed(k, at, reach) || waited >= SERVE_EDGE_WAIT_MAX_MS) {
            for (size_t i = 0; i < EDGE_CLAIMS; i++)
                if (!edge_claims[i].used) {
                    edge_claims[i] = (struct edge_claim){ .used = true, .k = *k, .t = at };
                    break;
                }
            break;
        }
        pthread_mutex_unlock(&edge_mu);
        bool left = gone && gone();
        pthread_mutex_lock(&edge_mu);
        if (left) {
            got = SERVE_EDGE_GONE;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)SERVE_EDGE_WAIT_MS * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&edge_cv, &edge_mu, &ts);
        waited += SERVE_EDGE_WAIT_MS;
    }
    pthread_mutex_unlock(&edge_mu);
    return got;
}

void serve_edge_release(const struct serve_edge_key *k, uint64_t at)
{
    pthread_mutex_lock(&edge_mu);
    for (size_t i = 0; i < EDGE_CLAIMS; i++)
        if (edge_claims[i].used && key_eq(&edge_claims[i].k, k) && edge_claims[i].t == at) {
            edge_claims[i].used = false;
            break;
        }
    pthread_cond_broadcast(&edge_cv);
    pthread_mutex_unlock(&edge_mu);
}

void serve_edge_put(const struct serve_edge_key *k, uint64_t t, const struct q_poll *open,
                    size_t n, bool partial, const struct q_loopwork_thr *lw)
{
    if (n > SERVE_EDGE_OPEN_MAX)
        return;
    pthread_mutex_lock(&edge_mu);
    struct edge_slot *e = NULL;
    for (size_t i = 0; i < SERVE_EDGE_SLOTS && !e; i++)
        if (edge_slots[i].used && key_eq(&edge_slots[i].k, k) && edge_slots[i].t == t)
            e = &edge_slots[i];
    for (size_t i = 0; i < SERVE_EDGE_SLOTS && !e; i++)
        if (!edge_slots[i].used)
            e = &edge_slots[i];
    if (!e) {
        e = &edge_slots[0];
        for (size_t i = 1; i < SERVE_EDGE_SLOTS; i++)
            if (edge_slots[i].stamp < e->stamp)
                e = &edge_slots[i];
    }
    e->used = true;
    e->k = *k;
    e->t = t;
    e->stamp = ++edge_clock;
    e->partial = partial;
    e->n = n;
    if (n)
        memcpy(e->open, open, n * sizeof open[0]);
    if (lw)
        e->lw = *lw;
    else
        e->lw.used = false;
    pthread_mutex_unlock(&edge_mu);
}

void serve_edge_clear(void)
{
    pthread_mutex_lock(&edge_mu);
    memset(edge_slots, 0, sizeof edge_slots);
    memset(edge_claims, 0, sizeof edge_claims);
    pthread_mutex_unlock(&edge_mu);
}
