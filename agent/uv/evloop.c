/*
 * evloop.c — traced event bases, the event_base_loop / event_base_free /
 * event_active wrappers and the backend wait's park/unpark, for the epoll
 * backend (epollwrap.c) and the poll backend (poll, here) (see evloop.h).
 */
/* This file defines poll() itself: glibc's fortified inline poll (with
 * _FORTIFY_SOURCE, as the Debian build sets it) would collide with that
 * definition. Nothing here calls a fortified function. */
#undef _FORTIFY_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <event2/event.h>
#include "agent/d9.h"
#include "evloop.h"
#include "evwrap.h"
#include "loopcfg.h"
#include "uvreal.h"

#define EVLOOP_EXPORT __attribute__((visibility("default")))
#define EVLOOP_DEPTH_NONE UINT64_MAX

__thread struct evloop_tls evloop_tls __attribute__((tls_model("initial-exec")));
_Static_assert(_Alignof(struct evloop_tls) >= sizeof(struct evloop_tls), "evloop_tls fits one cache line");

static struct evloop_ent g_bases[EVLOOP_BASES_MAX];
static _Atomic uint32_t g_nbases;           /* entries ever used: scans stop here */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;  /* claims and frees */
static _Atomic uint64_t g_traced;

/* ---- the table ------------------------------------------------------------------ */

struct evloop_ent *evloop_find(const struct event_base *base)
{
    /* acquire: g_nbases covers entries whose fields were written before */
    uint32_t n = atomic_load_explicit(&g_nbases, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        if (atomic_load_explicit(&g_bases[i].base, memory_order_acquire) == base)
            return &g_bases[i];
    return NULL;
}

/* The entry of base, claimed on its first loop. NULL when the table or the
 * worker ids are used up (the base runs untraced). */
static struct evloop_ent *trace(struct event_base *base)
{
    int err = errno;
    d9_runtime rt = d9_runtime_default();
    struct evloop_ent *e = NULL;
    pthread_mutex_lock(&g_lock);
    if ((e = evloop_find(base)) == NULL && rt.id != 0) {
        uint32_t n = atomic_load_explicit(&g_nbases, memory_order_relaxed);
        for (uint32_t i = 0; i < n && !e; i++)
            if (atomic_load_explicit(&g_bases[i].base, memory_order_relaxed) == NULL)
                e = &g_bases[i];
        if (!e && n < EVLOOP_BASES_MAX)
            e = &g_bases[n];
        uint16_t worker = e ? loopcfg_worker_next() : D9_WORKER_NONE_ID;
        if (worker == D9_WORKER_NONE_ID) {
            e = NULL;
        } else {
            atomic_store_explicit(&e->rt, rt.id, memory_order_relaxed);
            atomic_store_explicit(&e->worker, worker, memory_order_relaxed);
            e->last_depth = EVLOOP_DEPTH_NONE;
            /* release: the fields above happen-before any reader that finds base */
            atomic_store_explicit(&e->base, base, memory_order_release);
            if (e == &g_bases[n])
                atomic_store_explicit(&g_nbases, n + 1, memory_order_release);
            atomic_fetch_add_explicit(&g_traced, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&g_lock);
    errno = err;
    return e;
}

static void untrace(const struct event_base *base)
{
    pthread_mutex_lock(&g_lock);
    struct evloop_ent *e = evloop_find(base);
    if (e)
        atomic_store_explicit(&e->base, NULL, memory_order_release);
    pthread_mutex_unlock(&g_lock);
}

uint64_t evloop_bases_traced(void)
{
    return atomic_load_explicit(&g_traced, memory_order_relaxed);
}

/* ---- wrappers ------------------------------------------------------------------------ */

/* event_base_dispatch, event_dispatch and event_loop reach libevent's
 * event_base_loop through this one (libevent calls its exported functions
 * through its PLT). */
EVLOOP_EXPORT LOOPCFG_TRAMP int event_base_loop(struct event_base *base, int flags)
{
    UVREAL(event_base_loop);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    struct evloop_ent *e = base ? evloop_find(base) : NULL;
    if (!e && base && (loopcfg_auto() & LOOPCFG_EVENT)) {
        loopcfg_ensure_init();
        if (d9_enabled())
            e = trace(base);
    }
    if (!e)
        return real(base, flags);
    struct evloop_tls *t = &evloop_tls;
    struct evloop_tls saved = *t;
    t->cur = e;
    t->rt = atomic_load_explicit(&e->rt, memory_order_relaxed);
    t->worker = atomic_load_explicit(&e->worker, memory_order_relaxed);
    t->depth = 0;
    t->task = 0;
    int rc = real(base, flags);
    *t = saved;
    return rc;
}

EVLOOP_EXPORT void event_base_free(struct event_base *base)
{
    UVREAL(event_base_free);
    if (!real)
        return;
    real(base);
    if (base)           /* the address may serve the next base */
        untrace(base);
}

EVLOOP_EXPORT void event_base_free_nofinalize(struct event_base *base)
{
    UVREAL(event_base_free_nofinalize);
    if (!real)
        return;
    real(base);
    if (base)
        untrace(base);
}

/* A wake of the task ev's callback runs as, aimed at the worker of ev's
 * base; waker = the poll running on this thread (0 outside a callback). */
EVLOOP_EXPORT void event_active(struct event *ev, int res, short ncalls)
{
    UVREAL(event_active);
    if (!real)
        return;
    if (ev && d9_enabled()) {
        UVREAL_AS(event_get_base, get_base);
        UVREAL_AS(event_get_callback_arg, get_arg);
        UVREAL_AS(event_get_fd, get_fd);
        struct evloop_ent *e = get_base ? evloop_find(get_base(ev)) : NULL;
        if (e && get_arg && get_fd) {
            d9_runtime rt = { atomic_load_explicit(&e->rt, memory_order_relaxed) };
            d9_wake(rt, evloop_tls.task, evwrap_event_task(get_fd(ev), get_arg(ev)),
                    atomic_load_explicit(&e->worker, memory_order_relaxed));
        }
    }
    real(ev, res, ncalls);
}

/* ---- the backend wait ---------------------------------------------------------------- */

int evloop_backend_begin(struct evloop_wait *w, int timeout)
{
    struct evloop_tls *t = &evloop_tls;
    if (__builtin_expect(t->rt == 0 || t->depth != 0, 1))
        return 0;
    w->e = t->cur;
    w->rt.id = t->rt;
    w->worker = t->worker;
    w->parked = timeout != 0;       /* a zero timeout peeks: no sleep, no park */
    if (w->parked)
        d9_worker_park(w->rt, w->worker);
    return 1;
}

void evloop_backend_end(struct evloop_wait *w, int n)
{
    if (w->parked)
        d9_worker_unpark(w->rt, w->worker);
    uint64_t depth = n > 0 ? (uint64_t)n : 0;
    if (depth != w->e->last_depth) {
        w->e->last_depth = depth;
        d9_queue_depth(w->rt, w->worker, depth);
    }
}

/* libevent's poll backend (EVENT_NOEPOLL: tmux sets it; or a kernel
 * without epoll): the same park/unpark as the epoll wrappers record. Any
 * other poll() (outside a traced base's loop, or inside a callback) is
 * forwarded untouched. */
EVLOOP_EXPORT LOOPCFG_TRAMP int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    UVREAL(poll);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    struct evloop_wait w;
    if (!evloop_backend_begin(&w, timeout))
        return real(fds, nfds, timeout);
    int n = real(fds, nfds, timeout);
    evloop_backend_end(&w, n);
    return n;
}
