/*
 * evwrap.c — libevent callback slots, trampolines and the registration
 * wrappers (see evwrap.h for the design).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_compat.h>
#include <event2/http.h>
#include <event2/listener.h>
#include "agent/d9.h"
#include "cbslot.h"
#include "evloop.h"
#include "evwrap.h"
#include "loopcfg.h"
#include "uvreal.h"

#define EVWRAP_EXPORT __attribute__((visibility("default")))
#define EVWRAP_UNPAREN(...) __VA_ARGS__
#define EVWRAP_LIBEVENT "libevent"      /* libevent*.so: libevent's own code */

/* Section bounds, defined by the linker for a section named like a C identifier. */
extern const char __start_d9_tramp[] __attribute__((visibility("hidden")));
extern const char __stop_d9_tramp[] __attribute__((visibility("hidden")));

static _Atomic uint64_t g_callbacks, g_internal, g_untraced;

/* ---- slots ------------------------------------------------------------------------- */

static int is_trampoline(uintptr_t fn)
{
    return fn >= (uintptr_t)__start_d9_tramp && fn < (uintptr_t)__stop_d9_tramp;
}

/* 1 when code lies in one of libevent's libraries (libevent, _core, _extra,
 * _pthreads, _openssl). */
static int in_libevent(uintptr_t fn)
{
    Dl_info di;
    if (!dladdr((const void *)fn, &di) || !di.dli_fname)
        return 0;
    const char *base = strrchr(di.dli_fname, '/');
    base = base ? base + 1 : di.dli_fname;
    return strncmp(base, EVWRAP_LIBEVENT, strlen(EVWRAP_LIBEVENT)) == 0;
}

static uint32_t classify(uintptr_t fn, uint32_t *loc)
{
    if (in_libevent(fn)) {
        atomic_fetch_add_explicit(&g_internal, 1, memory_order_relaxed);
        return CBSLOT_PASS;
    }
    *loc = d9_loc_register_code((const void *)fn);
    atomic_fetch_add_explicit(&g_callbacks, 1, memory_order_relaxed);
    return CBSLOT_TRACE;
}

/* The slot of fn in table, or -1: pass fn unwrapped (NULL, already a
 * trampoline, libevent's own, "event" not traced, tracing off, table full). */
static int slot_of(struct cbslot *table, uintptr_t fn)
{
    if (!fn || is_trampoline(fn))
        return -1;
    if (!(loopcfg_auto() & LOOPCFG_EVENT))
        return -1;
    loopcfg_ensure_init();
    if (!d9_enabled())
        return -1;
    int full = 0;
    /* another thread classifying fn finishes in a few microseconds: wait for
     * it rather than hand libevent an unwrapped callback for good */
    int k = cbslot_find_wait(table, fn, classify, &full);
    if (full)
        atomic_fetch_add_explicit(&g_untraced, 1, memory_order_relaxed);
    return k;
}

/* ---- the per-callback path --------------------------------------------------------------
 * A trampoline: the slot's function, the task from the arguments, and when
 * this thread runs a traced base and the task is not already being polled
 * here, a poll around the call. evloop_tls carries runtime and worker; the
 * record functions keep errno. */

#define EVWRAP_POLL(K, idx, A, TASK)                                                        \
    {                                                                                       \
        const struct cbslot *s_ = &evwrap_slots_##K[idx];                                   \
        evwrap_fn_##K fn_ = (evwrap_fn_##K)atomic_load_explicit(&s_->key,                   \
                                                                memory_order_relaxed);      \
        struct evloop_tls *t_ = &evloop_tls;                                                \
        uint64_t task_ = (TASK);                                                            \
        d9_runtime rt_ = { t_->rt };                                                        \
        if (__builtin_expect(rt_.id == 0 || task_ == t_->task, 0)) {                        \
            fn_ A;                                                                          \
            return;                                                                         \
        }                                                                                   \
        uint16_t worker_ = t_->worker;                                                      \
        uint64_t prev_ = t_->task;                                                          \
        t_->task = task_;                                                                   \
        t_->depth++;                                                                        \
        d9_poll_start(rt_, worker_, task_, atomic_load_explicit(&s_->loc,                   \
                                                                memory_order_relaxed));     \
        fn_ A;                                                                              \
        d9_poll_end(rt_, worker_, task_);                                                   \
        t_->depth--;                                                                        \
        t_->task = prev_;                                                                   \
    }

/* The kinds: name, parameters, arguments, the task id. One kind per C signature. */
#define EVWRAP_KINDS(X)                                                                     \
    X(event, (evutil_socket_t fd, short what, void *arg), (fd, what, arg),                  \
      evwrap_event_task(fd, arg))                                                           \
    X(bev_data, (struct bufferevent *bev, void *ctx), (bev, ctx), (uintptr_t)bev)           \
    X(bev_event, (struct bufferevent *bev, short what, void *ctx), (bev, what, ctx),        \
      (uintptr_t)bev)                                                                       \
    X(listener, (struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,         \
                 int socklen, void *ctx), (l, fd, sa, socklen, ctx), (uintptr_t)l)          \
    X(listener_err, (struct evconnlistener *l, void *ctx), (l, ctx), (uintptr_t)l)          \
    X(http, (struct evhttp_request *req, void *arg), (req, arg), (uintptr_t)req)

/* 64 = 8 x 8 trampolines per kind; slot index hi * 8 + lo. */
#define EVWRAP_REP8(M, K, P, A, T, hi)                                                      \
    M(K, P, A, T, hi, 0) M(K, P, A, T, hi, 1) M(K, P, A, T, hi, 2) M(K, P, A, T, hi, 3)     \
    M(K, P, A, T, hi, 4) M(K, P, A, T, hi, 5) M(K, P, A, T, hi, 6) M(K, P, A, T, hi, 7)
#define EVWRAP_REP64(M, K, P, A, T)                                                         \
    EVWRAP_REP8(M, K, P, A, T, 0) EVWRAP_REP8(M, K, P, A, T, 1)                             \
    EVWRAP_REP8(M, K, P, A, T, 2) EVWRAP_REP8(M, K, P, A, T, 3)                             \
    EVWRAP_REP8(M, K, P, A, T, 4) EVWRAP_REP8(M, K, P, A, T, 5)                             \
    EVWRAP_REP8(M, K, P, A, T, 6) EVWRAP_REP8(M, K, P, A, T, 7)
_Static_assert(CBSLOT_N == 64, "EVWRAP_REP64 makes CBSLOT_N trampolines per kind");

#define EVWRAP_TRAMPOLINE(K, P, A, T, hi, lo)                                               \
    static LOOPCFG_TRAMP void evwrap_t_##K##_##hi##lo P                                     \
    EVWRAP_POLL(K, (hi) * 8 + (lo), A, T)
#define EVWRAP_TRAMPOLINE_ADDR(K, P, A, T, hi, lo) evwrap_t_##K##_##hi##lo,

/* Per kind: the function type, the slots, the trampolines, their table,
 * evwrap_pick_<kind>(fn) (what to hand libevent for fn) and
 * evwrap_unwrap_<kind>(fn) (the program's function behind what libevent holds). */
#define EVWRAP_DEFINE_KIND(K, P, A, T)                                                      \
    typedef void (*evwrap_fn_##K) P;                                                        \
    static struct cbslot evwrap_slots_##K[CBSLOT_N];                                        \
    EVWRAP_REP64(EVWRAP_TRAMPOLINE, K, P, A, T)                                             \
    static const evwrap_fn_##K evwrap_tramps_##K[CBSLOT_N] = {                              \
        EVWRAP_REP64(EVWRAP_TRAMPOLINE_ADDR, K, P, A, T)                                    \
    };                                                                                      \
    static inline __attribute__((unused)) evwrap_fn_##K evwrap_pick_##K(evwrap_fn_##K fn)   \
    {                                                                                       \
        int k = slot_of(evwrap_slots_##K, (uintptr_t)fn);                                   \
        if (k < 0)                                                                          \
            return fn;                                                                      \
        cbslot_tell(evwrap_slots_##K, k, (uintptr_t)evwrap_tramps_##K[k]);                  \
        return evwrap_tramps_##K[k];                                                        \
    }                                                                                       \
    static inline __attribute__((unused)) evwrap_fn_##K evwrap_unwrap_##K(evwrap_fn_##K fn) \
    {                                                                                       \
        if (!fn || !is_trampoline((uintptr_t)fn))                                           \
            return fn;                                                                      \
        for (int k = 0; k < (int)CBSLOT_N; k++)                                             \
            if (evwrap_tramps_##K[k] == fn)                                                 \
                return (evwrap_fn_##K)cbslot_key(evwrap_slots_##K, k);                      \
        return fn;                                                                          \
    }

EVWRAP_KINDS(EVWRAP_DEFINE_KIND)

/* ---- registration wrappers --------------------------------------------------------------
 * Each forwards to libevent with the program's arguments, callbacks
 * replaced by their trampolines. A missing libevent function fails the call
 * as libevent's own failure would (NULL / -1, errno ENOSYS). */

#define EVWRAP_REAL_OR(fn, fail)                                                            \
    UVREAL(fn);                                                                             \
    if (__builtin_expect(real == NULL, 0)) {                                                \
        errno = ENOSYS;                                                                     \
        return fail;                                                                        \
    }
#define EVWRAP_REAL_VOID(fn)                                                                \
    UVREAL(fn);                                                                             \
    if (__builtin_expect(real == NULL, 0))                                                  \
        return

EVWRAP_EXPORT struct event *event_new(struct event_base *base, evutil_socket_t fd, short events,
                                      event_callback_fn cb, void *arg)
{
    EVWRAP_REAL_OR(event_new, NULL);
    return real(base, fd, events, evwrap_pick_event(cb), arg);
}

EVWRAP_EXPORT int event_assign(struct event *ev, struct event_base *base, evutil_socket_t fd,
                               short events, event_callback_fn cb, void *arg)
{
    EVWRAP_REAL_OR(event_assign, -1);
    return real(ev, base, fd, events, evwrap_pick_event(cb), arg);
}

EVWRAP_EXPORT void event_set(struct event *ev, evutil_socket_t fd, short events,
                             void (*cb)(evutil_socket_t, short, void *), void *arg)
{
    EVWRAP_REAL_VOID(event_set);
    real(ev, fd, events, evwrap_pick_event(cb), arg);
}

EVWRAP_EXPORT int event_base_once(struct event_base *base, evutil_socket_t fd, short events,
                                  event_callback_fn cb, void *arg, const struct timeval *tv)
{
    EVWRAP_REAL_OR(event_base_once, -1);
    return real(base, fd, events, evwrap_pick_event(cb), arg, tv);
}

EVWRAP_EXPORT int event_once(evutil_socket_t fd, short events,
                             void (*cb)(evutil_socket_t, short, void *), void *arg,
                             const struct timeval *tv)
{
    EVWRAP_REAL_OR(event_once, -1);
    return real(fd, events, evwrap_pick_event(cb), arg, tv);
}

EVWRAP_EXPORT void bufferevent_setcb(struct bufferevent *bev, bufferevent_data_cb readcb,
                                     bufferevent_data_cb writecb, bufferevent_event_cb eventcb,
                                     void *cbarg)
{
    EVWRAP_REAL_VOID(bufferevent_setcb);
    real(bev, evwrap_pick_bev_data(readcb), evwrap_pick_bev_data(writecb),
         evwrap_pick_bev_event(eventcb), cbarg);
}

EVWRAP_EXPORT struct evconnlistener *evconnlistener_new(struct event_base *base,
                                                        evconnlistener_cb cb, void *ptr,
                                                        unsigned flags, int backlog,
                                                        evutil_socket_t fd)
{
    EVWRAP_REAL_OR(evconnlistener_new, NULL);
    return real(base, evwrap_pick_listener(cb), ptr, flags, backlog, fd);
}

EVWRAP_EXPORT struct evconnlistener *evconnlistener_new_bind(struct event_base *base,
                                                             evconnlistener_cb cb, void *ptr,
                                                             unsigned flags, int backlog,
                                                             const struct sockaddr *sa,
                                                             int socklen)
{
    EVWRAP_REAL_OR(evconnlistener_new_bind, NULL);
    return real(base, evwrap_pick_listener(cb), ptr, flags, backlog, sa, socklen);
}

EVWRAP_EXPORT void evconnlistener_set_cb(struct evconnlistener *lev, evconnlistener_cb cb,
                                         void *arg)
{
    EVWRAP_REAL_VOID(evconnlistener_set_cb);
    real(lev, evwrap_pick_listener(cb), arg);
}

EVWRAP_EXPORT void evconnlistener_set_error_cb(struct evconnlistener *lev,
                                               evconnlistener_errorcb errorcb)
{
    EVWRAP_REAL_VOID(evconnlistener_set_error_cb);
    real(lev, evwrap_pick_listener_err(errorcb));
}

EVWRAP_EXPORT int evhttp_set_cb(struct evhttp *http, const char *path,
                                void (*cb)(struct evhttp_request *, void *), void *cb_arg)
{
    EVWRAP_REAL_OR(evhttp_set_cb, -1);
    return real(http, path, evwrap_pick_http(cb), cb_arg);
}

EVWRAP_EXPORT void evhttp_set_gencb(struct evhttp *http,
                                    void (*cb)(struct evhttp_request *, void *), void *arg)
{
    EVWRAP_REAL_VOID(evhttp_set_gencb);
    real(http, evwrap_pick_http(cb), arg);
}

/* ---- getters: the program's functions, never a trampoline ----------------------------- */

EVWRAP_EXPORT event_callback_fn event_get_callback(const struct event *ev)
{
    EVWRAP_REAL_OR(event_get_callback, NULL);
    return evwrap_unwrap_event(real(ev));
}

EVWRAP_EXPORT void event_get_assignment(const struct event *event, struct event_base **base_out,
                                        evutil_socket_t *fd_out, short *events_out,
                                        event_callback_fn *callback_out, void **arg_out)
{
    EVWRAP_REAL_VOID(event_get_assignment);
    real(event, base_out, fd_out, events_out, callback_out, arg_out);
    if (callback_out)
        *callback_out = evwrap_unwrap_event(*callback_out);
}

EVWRAP_EXPORT void bufferevent_getcb(struct bufferevent *bev, bufferevent_data_cb *readcb_ptr,
                                     bufferevent_data_cb *writecb_ptr,
                                     bufferevent_event_cb *eventcb_ptr, void **cbarg_ptr)
{
    EVWRAP_REAL_VOID(bufferevent_getcb);
    real(bev, readcb_ptr, writecb_ptr, eventcb_ptr, cbarg_ptr);
    if (readcb_ptr)
        *readcb_ptr = evwrap_unwrap_bev_data(*readcb_ptr);
    if (writecb_ptr)
        *writecb_ptr = evwrap_unwrap_bev_data(*writecb_ptr);
    if (eventcb_ptr)
        *eventcb_ptr = evwrap_unwrap_bev_event(*eventcb_ptr);
}

/* ---- stats ----------------------------------------------------------------------------- */

void evwrap_get_stats(struct evwrap_stats *out)
{
    memset(out, 0, sizeof *out);
    out->callbacks = atomic_load_explicit(&g_callbacks, memory_order_relaxed);
    out->callbacks_internal = atomic_load_explicit(&g_internal, memory_order_relaxed);
    out->callbacks_untraced = atomic_load_explicit(&g_untraced, memory_order_relaxed);
}
