/*
 * ru_pipe.c — live rollups fed on a thread of their own (contract, callers
 * and invariants in ru_pipe.h).
 *
 * The ring: msgs[] and bufs[] indexed by sequence number modulo
 * RU_PIPE_SLOTS; `head` (the next to publish) is written by the producer
 * only, `tail` (the next to consume) by the consumer only. Publishing and
 * consuming are seq_cst stores followed by a seq_cst load of the other
 * side's sleeping flag, and a side that goes to sleep sets its flag under
 * the mutex and then re-reads the other side's counter: of a store and
 * the other side's flag at least one is seen, so no wake-up is lost, and
 * the mutex is taken only by a side that has to wait or wake the other.
 * The side that wakes the other clears its flag under the mutex, and a
 * waiter sets it again before each wait: one wake-up per sleep, not one
 * per message published (or consumed) until the sleeper runs.
 * The producer wakes a sleeping consumer only once RP_WAKE messages wait
 * (or for a finish, or to stop it), so the consumer works in batches: one
 * wake-up per RP_WAKE chunks, not one per chunk, and it runs as SCHED_BATCH
 * (no wake-up preemption of the drain when they share a core). Records
 * waiting below the mark only wait: rollups are needed at the seal, which
 * wakes it.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/rollup.h"
#include "collector/store/ru_pipe.h"

enum { RP_RECORDS = 1, RP_META, RP_DROP, RP_FINISH };
#define RP_WAKE (RU_PIPE_SLOTS / 4)    /* messages waiting before a sleeping consumer is woken */

struct ru_stream {
    struct rollup *ru;
    int err;                    /* the consumer's: a feed failed (rollups freed) */
};

struct ru_done {                /* ru_pipe_finish's answer, on its stack */
    int done, rc;
    uint8_t *out;
    size_t len;
};

struct rp_msg {
    int op;
    uint32_t ring, generation;
    struct ru_stream *s;
    const uint8_t *data;
    size_t len;
    uint8_t *heap;              /* data's own copy (freed when consumed), or NULL */
    struct ru_done *done;       /* RP_FINISH */
};

struct ru_pipe {
    _Atomic uint64_t head, tail;
    _Atomic int consumer_sleeps, producer_waits;
    int stop;                   /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t work, room, finished;
    pthread_t thr;
    struct rp_msg msgs[RU_PIPE_SLOTS];
    uint8_t *bufs;              /* RU_PIPE_SLOTS x RU_PIPE_SLOT */
    struct ru_pipe_stats st;    /* the producer's */
};

static uint8_t *buf_of(struct ru_pipe *p, uint64_t seq)
{
    return p->bufs + (size_t)(seq % RU_PIPE_SLOTS) * RU_PIPE_SLOT;
}

/* ---- the consumer ---- */

static void stream_free(struct ru_stream *s)
{
    rollup_free(s->ru);
    free(s);
}

static void stream_break(struct ru_stream *s)
{
    rollup_free(s->ru);
    s->ru = NULL;
    s->err = 1;
}

static void consume(struct ru_pipe *p, struct rp_msg *m)
{
    struct ru_stream *s = m->s;
    switch (m->op) {
    case RP_RECORDS:
        if (!s->err && rollup_feed_records(s->ru, m->ring, m->generation, m->data, m->len) < 0)
            stream_break(s);
        break;
    case RP_META:
        if (!s->err && rollup_feed_meta(s->ru, m->data, m->len) < 0)
            stream_break(s);
        break;
    case RP_DROP:
        stream_free(s);
        break;
    case RP_FINISH: {
        struct ru_done *d = m->done;
        uint8_t *out = NULL;
        size_t len = 0;
        int rc = s->err ? -ESTALE : rollup_finish(s->ru, &out, &len);
        stream_free(s);
        pthread_mutex_lock(&p->mu);
        d->rc = rc;
        d->out = out;
        d->len = len;
        d->done = 1;
        pthread_cond_broadcast(&p->finished);
        pthread_mutex_unlock(&p->mu);
        break;
    }
    }
    free(m->heap);
    m->heap = NULL;
}

static void *consumer_main(void *arg)
{
    struct ru_pipe *p = arg;
    /* batch work: it does not preempt the drain it shares a core with */
    struct sched_param sp = { .sched_priority = 0 };
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    uint64_t t = atomic_load_explicit(&p->tail, memory_order_relaxed);
    for (;;) {
        if (t == atomic_load_explicit(&p->head, memory_order_acquire)) {
            pthread_mutex_lock(&p->mu);
            while (t == atomic_load(&p->head) && !p->stop) {
                atomic_store(&p->consumer_sleeps, 1);   /* each wait: publish clears it */
                if (t != atomic_load(&p->head))
                    break;
                pthread_cond_wait(&p->work, &p->mu);
            }
            atomic_store(&p->consumer_sleeps, 0);
            int stop = p->stop && t == atomic_load(&p->head);
            pthread_mutex_unlock(&p->mu);
            if (stop)
                return NULL;
            continue;
        }
        consume(p, &p->msgs[t % RU_PIPE_SLOTS]);
        atomic_store(&p->tail, ++t);
        if (atomic_load(&p->producer_waits)) {
            pthread_mutex_lock(&p->mu);
            atomic_store(&p->producer_waits, 0);    /* woken once */
            pthread_cond_signal(&p->room);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* ---- the producer ---- */

/* The slot of the next message, once the consumer has made room. */
static struct rp_msg *next_msg(struct ru_pipe *p)
{
    uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed);
    if (h - atomic_load_explicit(&p->tail, memory_order_acquire) >= RU_PIPE_SLOTS) {
        p->st.waits++;
        pthread_mutex_lock(&p->mu);
        while (h - atomic_load(&p->tail) >= RU_PIPE_SLOTS) {
            atomic_store(&p->producer_waits, 1);    /* each wait: the consumer clears it */
            if (h - atomic_load(&p->tail) < RU_PIPE_SLOTS)
                break;
            pthread_cond_wait(&p->room, &p->mu);
        }
        atomic_store(&p->producer_waits, 0);
        pthread_mutex_unlock(&p->mu);
    }
    return &p->msgs[h % RU_PIPE_SLOTS];
}

/* force: wake a sleeping consumer whatever waits (a finish) */
static void publish(struct ru_pipe *p, int force)
{
    uint64_t h = atomic_load_explicit(&p->head, memory_order_relaxed) + 1;
    atomic_store(&p->head, h);
    p->st.sent++;
    if (atomic_load(&p->consumer_sleeps) &&
        (force || h - atomic_load_explicit(&p->tail, memory_order_relaxed) >= RP_WAKE)) {
        p->st.wakes++;
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->consumer_sleeps, 0);   /* woken once: the next publishes do not */
        pthread_cond_signal(&p->work);
        pthread_mutex_unlock(&p->mu);
    }
}

/* Everything but the thread (not running). */
static void pipe_release(struct ru_pipe *p)
{
    pthread_cond_destroy(&p->finished);
    pthread_cond_destroy(&p->room);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p->bufs);
    free(p);
}

int ru_pipe_new(struct ru_pipe **out)
{
    *out = NULL;
    struct ru_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->bufs = malloc((size_t)RU_PIPE_SLOTS * RU_PIPE_SLOT);
    if (!p->bufs) {
        free(p);
        return -ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->room, NULL);
    pthread_cond_init(&p->finished, NULL);
    /* the thread must not take the daemon's signals (signalfd, SIGBUS guard) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thr, NULL, consumer_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        pipe_release(p);
        return -rc;
    }
    (void)pthread_setname_np(p->thr, "d9-rollups");    /* top -H, perf */
    *out = p;
    return 0;
}

void ru_pipe_free(struct ru_pipe *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thr, NULL);
    pipe_release(p);
}

int ru_pipe_open(struct ru_pipe *p, struct ru_stream **out)
{
    (void)p;
    struct ru_stream *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    int rc = rollup_new(&s->ru);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

uint8_t *ru_pipe_slot(struct ru_pipe *p)
{
    next_msg(p);
    return buf_of(p, atomic_load_explicit(&p->head, memory_order_relaxed));
}

/* A message carrying data: in place when it is the slot's buffer, else a
 * copy. 0 or -ENOMEM (nothing sent). */
static int send_data(struct ru_pipe *p, int op, struct ru_stream *s, uint32_t ring,
                     uint32_t generation, const uint8_t *data, size_t len)
{
    struct rp_msg *m = next_msg(p);
    uint8_t *slot = buf_of(p, atomic_load_explicit(&p->head, memory_order_relaxed));
    uint8_t *heap = NULL;
    if (data != slot && data >= p->bufs && data < p->bufs + (size_t)RU_PIPE_SLOTS * RU_PIPE_SLOT)
        return -EINVAL;     /* an earlier slot, sent since (or the consumer's): not these records */
    if (data != slot) {
        if (len <= RU_PIPE_SLOT) {
            if (len)
                memcpy(slot, data, len);
        } else {
            if (!(heap = malloc(len)))
                return -ENOMEM;
            memcpy(heap, data, len);
        }
        p->st.copied++;
    }
    *m = (struct rp_msg){ .op = op, .ring = ring, .generation = generation, .s = s,
                          .data = heap ? heap : slot, .len = len, .heap = heap };
    publish(p, 0);
    return 0;
}

int ru_pipe_records(struct ru_pipe *p, struct ru_stream *s, uint32_t ring,
                    uint32_t generation, const uint8_t *records, size_t len)
{
    return send_data(p, RP_RECORDS, s, ring, generation, records, len);
}

int ru_pipe_meta(struct ru_pipe *p, struct ru_stream *s, const uint8_t *entries, size_t len)
{
    return send_data(p, RP_META, s, 0, 0, entries, len);
}

void ru_pipe_drop(struct ru_pipe *p, struct ru_stream *s)
{
    struct rp_msg *m = next_msg(p);
    *m = (struct rp_msg){ .op = RP_DROP, .s = s };
    publish(p, 0);
}

int ru_pipe_finish(struct ru_pipe *p, struct ru_stream *s, uint8_t **out, size_t *len)
{
    struct ru_done d = { 0 };
    struct rp_msg *m = next_msg(p);
    *m = (struct rp_msg){ .op = RP_FINISH, .s = s, .done = &d };
    publish(p, 1);
    pthread_mutex_lock(&p->mu);
    while (!d.done)
        pthread_cond_wait(&p->finished, &p->mu);
    pthread_mutex_unlock(&p->mu);
    *out = d.out;
    *len = d.len;
    return d.rc;
}

void ru_pipe_get_stats(const struct ru_pipe *p, struct ru_pipe_stats *out)
{
    *out = p->st;
}
