/*
 * bell.c — the doorbell listener thread and the loop's side of it (see
 * bell.h).
 *
 * Handshake between the loop and the thread, both under mu:
 *   loop:   changes the watch list or acknowledges words, then gen + 1 and
 *           FUTEX_WAKE(gen) (private): the thread rebuilds its list;
 *   thread: snapshot (gen, list); futex_waitv(gen word + every bell word);
 *           woken by gen: rebuild; woken by a bell, or a word that already
 *           differs (EAGAIN), or a region gone (EFAULT): write the eventfd,
 *           then wait on gen alone until the loop collected (it bumps gen).
 * So the thread wakes the loop at most once per collect, and a word the
 * loop acknowledged does not wake anybody until it changes again.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "collector/daemon/bell.h"
#include "collector/daemon/guard.h"
#include "collector/store/col_log.h"
#include "shm/bell.h"

#ifndef FUTEX_32
#define FUTEX_32 2
#endif

struct bell_entry {
    void *cookie;
    uint32_t pid;
    uint8_t *base;              /* the region's mapping, for the guard */
    size_t size;
    struct d9_bell *bell;
    uint32_t acked;             /* word as the loop last read it */
    int faulted;
    uint64_t window_ns;         /* start of the spurious-ring window */
    uint32_t window_spurious;
    uint64_t records_seen;      /* the region's drained records at the last judgement */
    uint64_t credit;            /* records not yet spent on rings */
    uint64_t muted_until;       /* 0: not muted */
    uint64_t mute_ns;           /* length of the next mute */
};

struct bell {
    pthread_t thr;
    int thr_started;
    int efd;
    pthread_mutex_t mu;
    _Atomic uint32_t gen;       /* the thread's own futex word (private) */
    int stop;
    struct bell_entry *e;
    size_t n, cap;
    struct bell_stats st;
};

static long futex_waitv(struct futex_waitv *w, unsigned n)
{
    return syscall(SYS_futex_waitv, w, n, 0, NULL, CLOCK_MONOTONIC);
}

static void gen_wait(_Atomic uint32_t *w, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/* Under mu: the list changed or was acknowledged. */
static void gen_bump(struct bell *b)
{
    atomic_fetch_add_explicit(&b->gen, 1u, memory_order_seq_cst);
    syscall(SYS_futex, (uint32_t *)&b->gen, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *bell_thread(void *arg)
{
    struct bell *b = arg;
    struct futex_waitv w[BELL_WATCH_MAX + 1];
    for (;;) {
        pthread_mutex_lock(&b->mu);
        if (b->stop) {
            pthread_mutex_unlock(&b->mu);
            return NULL;
        }
        uint32_t g = atomic_load_explicit(&b->gen, memory_order_relaxed);
        unsigned n = 0;
        memset(w, 0, sizeof w);
        w[n].uaddr = (uint64_t)(uintptr_t)&b->gen;
        w[n].val = g;
        w[n++].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
        for (size_t i = 0; i < b->n && n <= BELL_WATCH_MAX; i++) {
            struct bell_entry *e = &b->e[i];
            if (e->faulted || e->muted_until)
                continue;
            w[n].uaddr = (uint64_t)(uintptr_t)&e->bell->word;
            w[n].val = e->acked;
            w[n++].flags = FUTEX_32;        /* shared: the producers map the file too */
        }
        pthread_mutex_unlock(&b->mu);

        long rc = futex_waitv(w, n);
        if (rc == 0)
            continue;                           /* gen: the list changed */
        if (rc < 0 && errno == EINTR)
            continue;
        if (atomic_load_explicit(&b->gen, memory_order_relaxed) != g)
            continue;                           /* EAGAIN on gen itself, or a stale list */
        /* a bell rang (rc > 0), a word differs from its acknowledged value
         * (EAGAIN) or a region went away (EFAULT): the loop looks, and we
         * sleep until it acknowledged */
        uint64_t one = 1;
        if (write(b->efd, &one, sizeof one) < 0) {
            /* the counter is full: the loop has not read it; nothing to add */
        }
        while (atomic_load_explicit(&b->gen, memory_order_acquire) == g) {
            pthread_mutex_lock(&b->mu);
            int stop = b->stop;
            pthread_mutex_unlock(&b->mu);
            if (stop)
                return NULL;
            gen_wait(&b->gen, g);
        }
    }
}

int bell_open(struct bell **out)
{
    *out = NULL;
    /* probe: expected value wrong on purpose, so a kernel that has the call
     * answers EAGAIN at once */
    _Atomic uint32_t probe = 1;
    struct futex_waitv w = { .val = 0, .uaddr = (uint64_t)(uintptr_t)&probe,
                             .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG };
    if (futex_waitv(&w, 1) == 0 || errno != EAGAIN)
        return errno == ENOSYS ? -ENOSYS : -(errno ? errno : EINVAL);
    struct bell *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (b->efd < 0) {
        int err = errno;
        free(b);
        return -err;
    }
    pthread_mutex_init(&b->mu, NULL);
    /* the thread must not take the daemon's signals (signalfd, SIGBUS guard) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&b->thr, NULL, bell_thread, b);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        close(b->efd);
        pthread_mutex_destroy(&b->mu);
        free(b);
        return -rc;
    }
    b->thr_started = 1;
    *out = b;
    return 0;
}

void bell_close(struct bell *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    gen_bump(b);
    pthread_mutex_unlock(&b->mu);
    if (b->thr_started)
        pthread_join(b->thr, NULL);
    close(b->efd);
    pthread_mutex_destroy(&b->mu);
    free(b->e);
    free(b);
}

int bell_fd(const struct bell *b)
{
    return b->efd;
}

/* Guarded: store listener (seq_cst) if set_listener >= 0, then read word.
 * 0 or -EFAULT. */
static int shm_touch(struct bell_entry *e, int listener, uint32_t *word)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0)) {
        guard_disarm();
        return -EFAULT;
    }
    guard_arm(&jb, e->base, e->size);
    if (listener >= 0)
        atomic_store_explicit(&e->bell->listener, listener ? D9_BELL_LISTENING : 0u,
                              memory_order_seq_cst);
    *word = atomic_load_explicit(&e->bell->word, memory_order_relaxed);
    guard_disarm();
    return 0;
}

static struct bell_entry *find(struct bell *b, const void *cookie)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->e[i].cookie == cookie)
            return &b->e[i];
    return NULL;
}

static void count_watched(struct bell *b)
{
    uint32_t w = 0, u = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->e[i].faulted || b->e[i].muted_until)
            continue;
        if (w < BELL_WATCH_MAX)
            w++;
        else
            u++;
    }
    b->st.watched = w;
    b->st.unwatched = u;
}

int bell_watch(struct bell *b, void *cookie, uint32_t pid, uint8_t *base, size_t size)
{
    if (size < D9_REGION_HDR_SIZE)
        return -EFAULT;
    struct bell_entry ne = { .cookie = cookie, .pid = pid, .base = base, .size = size,
                             .records_seen = 0, .credit = 0,
                             .bell = shm_bell_of(base), .mute_ns = BELL_MUTE_NS };
    /* listener first, then the word: a ring after our read of word is seen
     * by futex_waitv as a changed word, one before it is acknowledged here */
    if (shm_touch(&ne, 1, &ne.acked))
        return -EFAULT;
    pthread_mutex_lock(&b->mu);
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        struct bell_entry *e = realloc(b->e, cap * sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&b->mu);
            return -ENOMEM;
        }
        b->e = e;
        b->cap = cap;
    }
    b->e[b->n++] = ne;
    count_watched(b);
    gen_bump(b);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

void bell_forget(struct bell *b, void *cookie, int touch)
{
    pthread_mutex_lock(&b->mu);
    struct bell_entry *e = find(b, cookie);
    if (e) {
        uint32_t word;
        if (touch && !e->faulted)
            (void)shm_touch(e, 0, &word);
        *e = b->e[--b->n];
        count_watched(b);
        /* the thread may sleep on this word: it must drop it before the
         * region is unmapped (a wait on an unmapped word is only EFAULT,
         * but a new mapping at the same address is somebody else's) */
        gen_bump(b);
    }
    pthread_mutex_unlock(&b->mu);
}

size_t bell_collect(struct bell *b, uint64_t now_ns, void **rung, size_t cap)
{
    uint64_t cnt;
    (void)now_ns;
    if (read(b->efd, &cnt, sizeof cnt) == (ssize_t)sizeof cnt)
        b->st.wakes++;
    size_t k = 0;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < b->n; i++) {
        struct bell_entry *e = &b->e[i];
        uint32_t word;
        if (e->faulted)
            continue;
        if (shm_touch(e, -1, &word)) {
            e->faulted = 1;             /* the drain will quarantine the region */
            b->st.faults++;
            continue;
        }
        if (word == e->acked)
            continue;
        e->acked = word;
        b->st.rings++;
        if (e->muted_until)
            continue;                   /* muted: the timer drains it */
        if (k < cap)
            rung[k++] = e->cookie;
    }
    count_watched(b);
    gen_bump(b);
    pthread_mutex_unlock(&b->mu);
    return k;
}

void bell_judge(struct bell *b, void *cookie, uint64_t records, uint64_t ring_size,
                uint64_t now_ns)
{
    pthread_mutex_lock(&b->mu);
    struct bell_entry *e = find(b, cookie);
    if (!e) {
        pthread_mutex_unlock(&b->mu);
        return;
    }
    uint64_t cost = ring_size / 4u / BELL_RECORD_BYTES;
    uint64_t cap = cost * BELL_SPURIOUS_MAX;
    if (records > e->records_seen)
        e->credit += records - e->records_seen;
    e->records_seen = records;
    if (e->credit > cap)
        e->credit = cap;
    if (e->credit >= cost) {
        e->credit -= cost;
        pthread_mutex_unlock(&b->mu);
        return;
    }
    b->st.spurious++;
    if (now_ns - e->window_ns > BELL_WINDOW_NS) {
        e->window_ns = now_ns;
        e->window_spurious = 0;
    }
    if (++e->window_spurious > BELL_SPURIOUS_MAX && !e->muted_until) {
        e->muted_until = now_ns + e->mute_ns;
        col_warn("pid %u: its doorbell rings without data (%u times in %llu ms): muted for "
                 "%llu ms, drained on the timer", e->pid, e->window_spurious,
                 (unsigned long long)(BELL_WINDOW_NS / 1000000u),
                 (unsigned long long)(e->mute_ns / 1000000u));
        e->mute_ns = e->mute_ns * 2 > BELL_MUTE_MAX_NS ? BELL_MUTE_MAX_NS : e->mute_ns * 2;
        b->st.mutes++;
        count_watched(b);
        gen_bump(b);
    }
    pthread_mutex_unlock(&b->mu);
}

int bell_covers(struct bell *b, const void *cookie)
{
    pthread_mutex_lock(&b->mu);
    struct bell_entry *e = find(b, cookie);
    int yes = e && !e->faulted && !e->muted_until && b->st.unwatched == 0;
    pthread_mutex_unlock(&b->mu);
    return yes;
}

void bell_pass(struct bell *b, uint64_t now_ns)
{
    int changed = 0;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < b->n; i++) {
        struct bell_entry *e = &b->e[i];
        if (e->muted_until && now_ns >= e->muted_until) {
            e->muted_until = 0;
            e->window_spurious = 0;
            e->window_ns = now_ns;
            changed = 1;
        }
    }
    if (changed) {
        count_watched(b);
        gen_bump(b);
    }
    pthread_mutex_unlock(&b->mu);
}

void bell_get_stats(const struct bell *b, struct bell_stats *s)
{
    pthread_mutex_lock((pthread_mutex_t *)&b->mu);
    *s = b->st;
    pthread_mutex_unlock((pthread_mutex_t *)&b->mu);
}
