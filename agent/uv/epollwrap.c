/*
 * epollwrap.c — epoll_wait, epoll_pwait, epoll_pwait2 handed to the loop
 * kinds (see epollwrap.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>
#include "eploop.h"
#include "epollwrap.h"
#include "evloop.h"
#include "loopcfg.h"
#include "uvloop.h"
#include "uvreal.h"

#define EPOLLWRAP_EXPORT __attribute__((visibility("default")))

enum epollwrap_kind { EPOLLWRAP_NONE = 0, EPOLLWRAP_UV, EPOLLWRAP_EVENT, EPOLLWRAP_EPOLL };

struct epollwrap_wait {
    int kind;
    union {
        struct uvloop_wait uv;
        struct evloop_wait ev;
        struct eploop_wait ep;
    } u;
};

/* Which kind's wait this is (and its park, recorded). peek: a zero timeout. */
static inline int wait_begin(struct epollwrap_wait *w, int epfd, int peek, uintptr_t site)
{
    if (uvloop_backend_begin(&w->u.uv, epfd, !peek))
        return w->kind = EPOLLWRAP_UV;
    if (evloop_backend_begin(&w->u.ev, !peek))
        return w->kind = EPOLLWRAP_EVENT;
    /* the thread runs a traced loop (a wait inside one of its callbacks): not a loop of its own */
    if (uvloop_tls.cur || evloop_tls.rt)
        return w->kind = EPOLLWRAP_NONE;
    if ((loopcfg_auto() & LOOPCFG_EPOLL) && eploop_begin(&w->u.ep, site, peek))
        return w->kind = EPOLLWRAP_EPOLL;
    return w->kind = EPOLLWRAP_NONE;
}

static inline void wait_end(struct epollwrap_wait *w, int n)
{
    if (w->kind == EPOLLWRAP_UV)
        uvloop_backend_end(&w->u.uv, n);
    else if (w->kind == EPOLLWRAP_EVENT)
        evloop_backend_end(&w->u.ev, n);
    else
        eploop_end(&w->u.ep, n);
}

EPOLLWRAP_EXPORT LOOPCFG_TRAMP int epoll_wait(int epfd, struct epoll_event *events, int maxevents,
                                              int timeout)
{
    UVREAL(epoll_wait);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    struct epollwrap_wait w;
    if (!wait_begin(&w, epfd, timeout == 0, (uintptr_t)__builtin_return_address(0)))
        return real(epfd, events, maxevents, timeout);
    int n = real(epfd, events, maxevents, timeout);
    wait_end(&w, n);
    return n;
}

EPOLLWRAP_EXPORT LOOPCFG_TRAMP int epoll_pwait(int epfd, struct epoll_event *events,
                                               int maxevents, int timeout, const sigset_t *sigmask)
{
    UVREAL(epoll_pwait);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    struct epollwrap_wait w;
    if (!wait_begin(&w, epfd, timeout == 0, (uintptr_t)__builtin_return_address(0)))
        return real(epfd, events, maxevents, timeout, sigmask);
    int n = real(epfd, events, maxevents, timeout, sigmask);
    wait_end(&w, n);
    return n;
}

EPOLLWRAP_EXPORT LOOPCFG_TRAMP int epoll_pwait2(int epfd, struct epoll_event *events,
                                                int maxevents, const struct timespec *timeout,
                                                const sigset_t *sigmask)
{
    UVREAL(epoll_pwait2);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    /* NULL: wait for ever; a zero timespec: peek */
    int peek = timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0;
    struct epollwrap_wait w;
    if (!wait_begin(&w, epfd, peek, (uintptr_t)__builtin_return_address(0)))
        return real(epfd, events, maxevents, timeout, sigmask);
    int n = real(epfd, events, maxevents, timeout, sigmask);
    wait_end(&w, n);
    return n;
}
