/*
 * evwrap.h — libevent's callbacks as d9 polls: the registration wrappers
 * (the libevent 2.1 entry points that take a callback) and the
 * trampolines they hand libevent in place of the program's functions.
 *
 * Design (as uvwrap.h, per callback function, never per event): for each
 * kind of callback (one per C signature) a table of CBSLOT_N slots
 * (cbslot.h) and as many compiled trampolines in the d9_tramp section; the
 * k-th trampoline of a kind calls the function in slot k. So nothing is
 * stored in an event, a bufferevent or a listener (their callback
 * arguments stay the program's), an object freed inside its own callback
 * is never touched again, and the per-callback path takes no lock, makes
 * no syscall and allocates nothing: one thread-local line (evloop_tls),
 * the slot, and the poll's two records.
 *
 * What is a poll, by kind (task = the poll's task id, location = the
 * program's function, a code location named out of process):
 *   event       event_new, event_assign, event_set, event_base_once,
 *               event_once (so evtimer_*, evsignal_*, evuser_* too):
 *               task = the callback's argument, or EVWRAP_FD_TASK + fd
 *               when it is NULL (event_self_cbarg: the event itself);
 *   bev_data    bufferevent_setcb's read and write callbacks: task = the
 *               bufferevent;
 *   bev_event   bufferevent_setcb's event callback: task = the bufferevent;
 *   listener    evconnlistener_new, _new_bind, _set_cb: task = the listener;
 *   listener_err evconnlistener_set_error_cb: task = the listener;
 *   http        evhttp_set_cb, evhttp_set_gencb: task = the request.
 * A callback runs as a poll only inside a traced event_base_loop on its
 * thread (evloop.h); elsewhere (a bufferevent callback libevent runs
 * synchronously from a call outside the loop) it is called unrecorded. A
 * callback nested in a poll of the same task (libevent calling a second
 * callback of one bufferevent from within the first) is part of that poll.
 *
 * libevent's own callbacks (it registers them through the same entry
 * points: a bufferevent's socket events, a listener's accept event, the
 * signal and notification events) are recognised by address (dladdr,
 * once per function: the object is a libevent library) and passed
 * unwrapped; the program's callback they call is wrapped where the program
 * registered it. The getters that return a callback (event_get_callback,
 * event_get_assignment, bufferevent_getcb) return the program's function,
 * never a trampoline. With "event" not in DIAL9_LOOP, or tracing off,
 * every wrapper forwards unchanged.
 *
 * Called by: the program and libevent (the wrappers), libevent (the
 * trampolines). Must never: read or write an event's, a bufferevent's or
 * a listener's fields, change a return value or errno, call a callback
 * twice or skip one.
 */
#ifndef D9_UV_EVWRAP_H
#define D9_UV_EVWRAP_H

#include <stdint.h>

#pragma GCC visibility push(hidden)

/* Task ids of event callbacks whose argument is NULL: this plus the fd
 * (as 32 bits; a timer's -1 is 0xffffffff). Above any user-space pointer. */
#define EVWRAP_FD_TASK (1ull << 63)

static inline uint64_t evwrap_event_task(int fd, const void *arg)
{
    return arg ? (uint64_t)(uintptr_t)arg : EVWRAP_FD_TASK | (uint32_t)fd;
}

struct evwrap_stats {
    uint64_t callbacks;                 /* distinct program functions wrapped */
    uint64_t callbacks_internal;        /* libevent's own, passed unwrapped */
    uint64_t callbacks_untraced;        /* registrations left unwrapped: a table was full */
};
void evwrap_get_stats(struct evwrap_stats *out);

#pragma GCC visibility pop

#endif /* D9_UV_EVWRAP_H */
