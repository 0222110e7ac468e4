/*
 * evloop.h — libevent's event bases as d9 workers: which bases are traced
 * (a fixed table), the calling thread's traced base (thread-local), the
 * park/unpark around the base's backend wait, and event_active as a wake.
 *
 * With libd9preload (DIAL9_LOOP lists "event", the default) every
 * event_base is traced at its first event_base_loop (event_base_dispatch,
 * event_dispatch and event_loop call it too) as its own worker of the
 * default runtime. The event_base_loop wrapper makes the base the thread's
 * current one for the duration of the call, restoring the previous one
 * after (a loop run from a callback of another base is attributed right),
 * so a trampoline (evwrap.c) finds its runtime and worker in evloop_tls
 * without a lookup. libevent runs every callback of a base inside
 * event_base_loop on the thread that called it.
 *
 * Park/unpark: libevent's epoll backend waits in epoll_wait, its poll
 * backend (EVENT_NOEPOLL, which tmux sets) in poll; the epoll wrappers
 * (epollwrap.c) and the poll wrapper (evloop.c) ask evloop_backend_begin/
 * end, which record a park and an unpark (and the number of ready events
 * as the worker's queue depth, when it changed) for a wait made by a
 * thread inside a traced event_base_loop and outside any of its callbacks
 * (depth 0): that is the backend's wait. A wait with a zero timeout is a
 * peek: no park. The select backend (EVENT_NOEPOLL and EVENT_NOPOLL) is
 * not seen: the callbacks are still polls, the loop's sleep is not a park.
 *
 * event_active(ev) from any thread is a wake of the task that ev's callback
 * will run as (see evwrap.h), aimed at the worker of ev's base.
 *
 * Table: EVLOOP_BASES_MAX entries, claimed under a mutex (first loop of a
 * base, event_base_free: slow paths) and read without one: an entry's
 * fields are written before the release-store of its base pointer. A
 * freed entry may serve another base at once; a concurrent event_active
 * then attributes one wake to the new base's worker at worst.
 *
 * Called by: the event_base_loop / event_base_free / event_active wrappers
 * (here), epollwrap.c, evwrap.c (evloop_tls). Must never: allocate, lock
 * or make a syscall on the per-callback path, touch an event or base
 * except through libevent's own functions, or change errno.
 */
#ifndef D9_UV_EVLOOP_H
#define D9_UV_EVLOOP_H

#include <stdatomic.h>
#include <stdint.h>
#include "agent/d9.h"

#pragma GCC visibility push(hidden)

#define EVLOOP_BASES_MAX 256u           /* bases traced at the same time */

struct event_base;

struct evloop_ent {
    _Atomic(struct event_base *) base;  /* NULL = free; release-stored last */
    _Atomic uint16_t rt;                /* d9 runtime id */
    _Atomic uint16_t worker;
    uint64_t last_depth;                /* loop thread only: the last depth recorded */
};

/* The calling thread's view. rt and worker are copies of cur's, so a
 * trampoline reads one thread-local line. */
struct evloop_tls {
    struct evloop_ent *cur;             /* the traced base this thread is running, or NULL */
    uint16_t rt;                        /* cur's runtime; 0 = not inside a traced base */
    uint16_t worker;
    uint32_t depth;                     /* traced callbacks running on this thread */
    uint64_t task;                      /* the innermost of them (0: none) */

} __attribute__((aligned(32)));   /* one cache line, whatever the TLS layout */

extern __thread struct evloop_tls evloop_tls __attribute__((tls_model("initial-exec")));

/* The traced entry of base, or NULL (lock-free scan, any thread). */
struct evloop_ent *evloop_find(const struct event_base *base);

/* Around an epoll wait: begin returns 1 when it is the backend wait of the
 * base this thread runs (see above) and records the park (timeout != 0);
 * end records the unpark and the depth. Neither changes errno. */
struct evloop_wait {
    struct evloop_ent *e;
    d9_runtime rt;
    uint16_t worker;
    int parked;
};
int evloop_backend_begin(struct evloop_wait *w, int timeout);
void evloop_backend_end(struct evloop_wait *w, int n);

/* Bases ever traced (tests). */
uint64_t evloop_bases_traced(void);

#pragma GCC visibility pop

#endif /* D9_UV_EVLOOP_H */
