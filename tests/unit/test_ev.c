/*
 * test_ev.c — the libevent wrappers against the real libevent 2.1: every
 * callback is called exactly once per dispatch with the program's
 * arguments and recorded as one poll (task = the argument, the
 * bufferevent, the listener or the request; location = the callback's code
 * address); park/unpark around the base's backend wait (epoll and poll
 * backends); event_active from
 * another thread as a wake; events freed in their own callbacks; bases on
 * threads and nested loops as distinct workers; libevent's own callbacks
 * left unwrapped; the getters returning the program's functions; with
 * "event" not traced, nothing wrapped.
 *
 * The wrappers are linked into this binary and exported (-rdynamic), so
 * they interpose libevent's entry points exactly as libd9preload.so does
 * (auto mode turned on here as its constructor would). The process traces
 * itself into a temp DIAL9_SHM_DIR (no collector).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include "agent/uv/evloop.h"
#include "agent/uv/evwrap.h"
#include "agent/uv/loopcfg.h"
#include "selfring.h"

static char g_dir[64];

/* The worker of the first poll of task, or -1. */
static int worker_of(uint64_t task)
{
    const struct rec *r = find(D9_REC_POLL_START, task);
    return r ? r->worker : -1;
}

/* ---- timers: polls at the code address, re-armed from their callback ---------- */

static int g_fired, g_rearms;
static struct event *g_rearm_ev;

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    if (++g_fired == 5)
        event_del(*(struct event **)arg);
}

static void rearm_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    struct timeval tv = { 0, 1000 };
    if (++g_rearms < 4)
        assert_int_equal(evtimer_add(g_rearm_ev, &tv), 0);      /* from its own callback */
}

static void test_timer_callbacks_are_polls_at_their_code_address(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_non_null(base);
    struct event *tick;
    struct timeval tv = { 0, 1000 };
    tick = event_new(base, -1, EV_PERSIST, tick_cb, &tick);
    g_rearm_ev = evtimer_new(base, rearm_cb, &g_rearms);
    drain(0);
    g_fired = g_rearms = 0;
    event_add(tick, &tv);
    evtimer_add(g_rearm_ev, &tv);
    assert_int_equal(event_base_dispatch(base), 1);     /* no events left: as libevent says */
    assert_int_equal(g_fired, 5);
    assert_int_equal(g_rearms, 4);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&tick)), 5);
    assert_int_equal(count(D9_REC_POLL_END, ID(&tick)), 5);
    assert_int_equal(count(D9_REC_POLL_START, ID(&g_rearms)), 4);
    assert_int_equal(count(D9_REC_POLL_END, ID(&g_rearms)), 4);
    const struct rec *r = find(D9_REC_POLL_START, ID(&tick));
    assert_int_equal(loc_addr((uint32_t)r->a), FN(tick_cb));
    assert_int_equal(loc_addr((uint32_t)find(D9_REC_POLL_START, ID(&g_rearms))->a), FN(rearm_cb));
    assert_int_equal(worker_of(ID(&g_rearms)), r->worker);
    assert_int_equal(r->rt, d9_runtime_default().id);
    /* the timers slept in epoll_wait: park and unpark of the base's worker */
    assert_true(count(D9_REC_WORKER_PARK, 0) >= 1);
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), count(D9_REC_WORKER_UNPARK, 0));
    assert_int_equal(find(D9_REC_WORKER_PARK, 0)->worker, r->worker);
    assert_non_null(find(D9_REC_QUEUE_DEPTH, 0));
    event_free(tick);
    event_free(g_rearm_ev);
    event_base_free(base);
}

/* ---- the poll backend (EVENT_NOEPOLL, as tmux sets it) ------------------------- */

static void test_poll_backend_wait_is_a_park(void **state)
{
    (void)state;
    struct event_config *cfg = event_config_new();
    assert_non_null(cfg);
    assert_int_equal(event_config_avoid_method(cfg, "epoll"), 0);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    assert_non_null(base);
    assert_string_equal(event_base_get_method(base), "poll");
    struct event *tick;
    struct timeval tv = { 0, 1000 };
    tick = event_new(base, -1, EV_PERSIST, tick_cb, &tick);
    drain(0);
    g_fired = 0;
    event_add(tick, &tv);
    assert_int_equal(event_base_dispatch(base), 1);
    assert_int_equal(g_fired, 5);
    drain(1);
    const struct rec *r = find(D9_REC_POLL_START, ID(&tick));
    assert_non_null(r);
    assert_int_equal(count(D9_REC_POLL_START, ID(&tick)), 5);
    /* the timer slept in poll(): park and unpark of the base's worker */
    assert_true(count(D9_REC_WORKER_PARK, 0) >= 1);
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), count(D9_REC_WORKER_UNPARK, 0));
    assert_int_equal(find(D9_REC_WORKER_PARK, 0)->worker, r->worker);
    event_free(tick);
    event_base_free(base);
}

/* ---- an event freed by its own callback; event_self_cbarg; NULL argument ------- */

static int g_freed;
static void free_self_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_free(arg);            /* ASan: the trampoline must not touch it after this */
    g_freed++;
}

static int g_null_calls;
static void null_arg_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    assert_null(arg);
    g_null_calls++;
}

static void test_event_freed_in_its_own_callback_and_null_arguments(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct event *evs[4];
    drain(0);
    g_freed = g_null_calls = 0;
    struct timeval zero = { 0, 0 };
    for (int i = 0; i < 4; i++) {
        evs[i] = event_new(base, -1, 0, free_self_cb, event_self_cbarg());
        event_add(evs[i], &zero);
    }
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct event *rd = event_new(base, sv[0], EV_READ, null_arg_cb, NULL);
    struct event *tm = evtimer_new(base, null_arg_cb, NULL);
    event_add(rd, NULL);
    event_add(tm, &zero);
    assert_int_equal(write(sv[1], "x", 1), 1);
    event_base_dispatch(base);
    assert_int_equal(g_freed, 4);
    assert_int_equal(g_null_calls, 2);
    drain(1);
    for (int i = 0; i < 4; i++)         /* the argument is the event itself */
        assert_int_equal(count(D9_REC_POLL_START, ID(evs[i])), 1);
    /* a NULL argument: the task is the fd (a timer's -1 as 32 bits) */
    assert_int_equal(count(D9_REC_POLL_START, EVWRAP_FD_TASK | (uint32_t)sv[0]), 1);
    assert_int_equal(count(D9_REC_POLL_START, EVWRAP_FD_TASK | 0xffffffffu), 1);
    event_free(rd);
    event_free(tm);
    close(sv[0]);
    close(sv[1]);
    event_base_free(base);
}

/* ---- bufferevents: read, write and event callbacks are polls of the bufferevent -- */

static struct bufferevent *g_a, *g_b;
static int g_a_read, g_a_write, g_b_read, g_b_event;
static char g_reply[16];

static void b_read(struct bufferevent *bev, void *ctx)
{
    assert_ptr_equal(ctx, &g_b_read);
    char buf[16] = { 0 };
    size_t n = bufferevent_read(bev, buf, sizeof buf - 1);
    assert_int_equal(n, 4);
    g_b_read++;
    bufferevent_write(bev, "pong", 4);
}
static void b_event(struct bufferevent *bev, short what, void *ctx)
{
    (void)bev, (void)ctx;
    assert_true(what & BEV_EVENT_EOF);
    g_b_event++;
}
static void a_read(struct bufferevent *bev, void *ctx)
{
    (void)ctx;
    size_t n = bufferevent_read(bev, g_reply, sizeof g_reply - 1);
    g_reply[n] = 0;
    g_a_read++;
    bufferevent_free(bev);      /* closes the socket: b sees EOF */
}
static void a_write(struct bufferevent *bev, void *ctx)
{
    (void)bev, (void)ctx;
    g_a_write++;
}

static void test_bufferevent_callbacks_are_polls_of_the_bufferevent(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    int sv[2];
    assert_int_equal(evutil_socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    evutil_make_socket_nonblocking(sv[0]);
    evutil_make_socket_nonblocking(sv[1]);
    drain(0);
    g_a_read = g_a_write = g_b_read = g_b_event = 0;
    g_a = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
    g_b = bufferevent_socket_new(base, sv[1], BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(g_a, a_read, a_write, NULL, NULL);
    bufferevent_setcb(g_b, b_read, NULL, b_event, &g_b_read);
    bufferevent_enable(g_a, EV_READ | EV_WRITE);
    bufferevent_enable(g_b, EV_READ | EV_WRITE);
    bufferevent_write(g_a, "ping", 4);
    event_base_dispatch(base);
    assert_string_equal(g_reply, "pong");
    assert_int_equal(g_a_read, 1);
    assert_int_equal(g_a_write, 1);
    assert_int_equal(g_b_read, 1);
    assert_int_equal(g_b_event, 1);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(g_a)), 2);    /* write done, read */
    assert_int_equal(count(D9_REC_POLL_START, ID(g_b)), 2);    /* read, EOF */
    assert_int_equal(count(D9_REC_POLL_END, ID(g_b)), 2);
    /* every poll is at the program's function, never inside libevent */
    for (size_t i = 0; i < g_nrecs; i++) {
        if (g_recs[i].type != D9_REC_POLL_START)
            continue;
        uint64_t a = loc_addr((uint32_t)g_recs[i].a);
        assert_true(a == FN(a_read) || a == FN(a_write) || a == FN(b_read) || a == FN(b_event));
    }
    struct evwrap_stats st;
    evwrap_get_stats(&st);
    assert_true(st.callbacks_internal >= 1);    /* the bufferevents' socket events */
    bufferevent_free(g_b);
    event_base_free(base);
}

/* ---- a listener: accept is a poll of the listener --------------------------------- */

static int g_accepted, g_connected;
static struct evconnlistener *g_lst;
static struct bufferevent *g_client;

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int socklen, void *ctx)
{
    assert_ptr_equal(l, g_lst);
    assert_ptr_equal(ctx, &g_accepted);
    assert_true(socklen > 0 && sa != NULL);
    g_accepted++;
    evutil_closesocket(fd);
    evconnlistener_disable(l);
}
static void on_connect(struct bufferevent *bev, short what, void *ctx)
{
    (void)ctx;
    if (what & BEV_EVENT_CONNECTED)
        g_connected++;
    bufferevent_free(bev);
}

static void test_listener_accept_is_a_poll_of_the_listener(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    drain(0);
    g_accepted = g_connected = 0;
    g_lst = evconnlistener_new_bind(base, on_accept, &g_accepted,
                                    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                                    (struct sockaddr *)&sin, sizeof sin);
    assert_non_null(g_lst);
    socklen_t sl = sizeof sin;
    assert_int_equal(getsockname(evconnlistener_get_fd(g_lst), (struct sockaddr *)&sin, &sl), 0);
    g_client = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(g_client, NULL, NULL, on_connect, NULL);
    assert_int_equal(bufferevent_socket_connect(g_client, (struct sockaddr *)&sin, sizeof sin), 0);
    event_base_dispatch(base);
    assert_int_equal(g_accepted, 1);
    assert_int_equal(g_connected, 1);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(g_lst)), 1);
    assert_int_equal(loc_addr((uint32_t)find(D9_REC_POLL_START, ID(g_lst))->a), FN(on_accept));
    assert_int_equal(count(D9_REC_POLL_START, ID(g_client)), 1);
    evconnlistener_free(g_lst);
    event_base_free(base);
}

/* ---- the getters return the program's functions ------------------------------------ */

static void getter_cb(evutil_socket_t fd, short what, void *arg) { (void)fd, (void)what, (void)arg; }
static void getter_data(struct bufferevent *b, void *c) { (void)b, (void)c; }
static void getter_event(struct bufferevent *b, short w, void *c) { (void)b, (void)w, (void)c; }

static void test_getters_return_the_programs_functions(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct event *ev = event_new(base, -1, 0, getter_cb, NULL);
    /* what libevent holds is the trampoline ... */
    assert_true(ev->ev_evcallback.evcb_cb_union.evcb_callback != getter_cb);
    /* ... what the program asks for is its own function */
    assert_ptr_equal(event_get_callback(ev), getter_cb);
    event_callback_fn cb = NULL;
    event_get_assignment(ev, NULL, NULL, NULL, &cb, NULL);
    assert_ptr_equal(cb, getter_cb);
    struct bufferevent *bev = bufferevent_socket_new(base, -1, 0);
    bufferevent_setcb(bev, getter_data, getter_data, getter_event, NULL);
    bufferevent_data_cb r = NULL, w = NULL;
    bufferevent_event_cb e = NULL;
    bufferevent_getcb(bev, &r, &w, &e, NULL);
    assert_ptr_equal(r, getter_data);
    assert_ptr_equal(w, getter_data);
    assert_ptr_equal(e, getter_event);
    /* re-registering what the getter returned wraps it the same way */
    event_callback_fn held = ev->ev_evcallback.evcb_cb_union.evcb_callback;
    assert_int_equal(event_assign(ev, base, -1, 0, event_get_callback(ev), NULL), 0);
    assert_ptr_equal(ev->ev_evcallback.evcb_cb_union.evcb_callback, held);
    bufferevent_free(bev);
    event_free(ev);
    event_base_free(base);
}

/* ---- event_active from another thread: a wake aimed at the base's worker -------- */

static struct event *g_user_ev;
static int g_user_calls;
static void user_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    g_user_calls++;
    event_base_loopbreak(arg);
}
static void *activator(void *arg)
{
    (void)arg;
    usleep(20000);              /* the loop is waiting by then */
    event_active(g_user_ev, EV_READ, 0);
    return NULL;
}

static void test_event_active_from_another_thread_is_a_wake(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    g_user_ev = event_new(base, -1, 0, user_cb, base);
    drain(0);
    g_user_calls = 0;
    pthread_t th;
    pthread_create(&th, NULL, activator, NULL);
    assert_int_equal(event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY), 0);
    pthread_join(th, NULL);
    assert_int_equal(g_user_calls, 1);
    drain(1);
    const struct rec *w = NULL;
    for (size_t i = 0; i < g_nrecs; i++)
        if (g_recs[i].type == D9_REC_WAKE && g_recs[i].a == ID(base))
            w = &g_recs[i];
    assert_non_null(w);
    assert_int_equal(w->task, 0);                       /* waker: no poll on that thread */
    assert_int_equal(w->worker, worker_of(ID(base)));   /* the poll it woke */
    assert_true(w->ts <= find(D9_REC_POLL_START, ID(base))->ts);
    event_free(g_user_ev);
    event_base_free(base);
}

/* ---- bases on threads, and a loop nested in a callback, are distinct workers ---- */

static void once_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    (*(int *)arg)++;
}
static void *base_thread(void *arg)
{
    struct event_base *base = event_base_new();
    struct timeval tv = { 0, 1000 };
    event_base_once(base, -1, EV_TIMEOUT, once_cb, arg, &tv);
    event_base_dispatch(base);
    event_base_free(base);
    return NULL;
}

static struct event_base *g_inner;
static int g_inner_calls, g_outer_calls;
static void outer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    struct timeval zero = { 0, 0 };
    event_base_once(g_inner, -1, EV_TIMEOUT, once_cb, &g_inner_calls, &zero);
    event_base_loop(g_inner, EVLOOP_ONCE);
    g_outer_calls++;
}

static void test_bases_on_threads_and_nested_loops_are_distinct_workers(void **state)
{
    (void)state;
    int hits[3] = { 0 };
    pthread_t th[3];
    drain(0);
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, base_thread, &hits[i]);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    struct event_base *outer = event_base_new();
    g_inner = event_base_new();
    g_inner_calls = g_outer_calls = 0;
    struct timeval zero = { 0, 0 };
    event_base_once(outer, -1, EV_TIMEOUT, outer_cb, &g_outer_calls, &zero);
    event_base_dispatch(outer);
    assert_int_equal(g_inner_calls, 1);
    assert_int_equal(g_outer_calls, 1);
    drain(1);
    int w[5];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(hits[i], 1);
        w[i] = worker_of(ID(&hits[i]));
    }
    w[3] = worker_of(ID(&g_outer_calls));
    w[4] = worker_of(ID(&g_inner_calls));
    for (int i = 0; i < 5; i++) {
        assert_true(w[i] >= 0);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(w[i], w[j]);
    }
    /* the inner poll lies inside the outer one, on the same thread */
    const struct rec *o = find(D9_REC_POLL_START, ID(&g_outer_calls));
    const struct rec *in = find(D9_REC_POLL_START, ID(&g_inner_calls));
    assert_int_equal(o->ring, in->ring);
    assert_true(o->ts <= in->ts && in->ts <= find(D9_REC_POLL_END, ID(&g_outer_calls))->ts);
    event_base_free(g_inner);
    event_base_free(outer);
}

/* ---- evhttp: a request is a poll of the request ------------------------------------ */

static int g_served, g_answered;
static struct evhttp_request *g_served_req;
static void http_handler(struct evhttp_request *req, void *arg)
{
    assert_ptr_equal(arg, &g_served);
    g_served++;
    g_served_req = req;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, "hi", 2);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}
static void http_done(struct evhttp_request *req, void *arg)
{
    assert_non_null(req);
    assert_int_equal(evhttp_request_get_response_code(req), 200);
    g_answered++;
    event_base_loopexit(arg, NULL);
}

static void test_http_request_is_a_poll_of_the_request(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    assert_int_equal(evhttp_set_cb(http, "/x", http_handler, &g_served), 0);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(http, "127.0.0.1", 0);
    assert_non_null(bs);
    struct sockaddr_in sin;
    socklen_t sl = sizeof sin;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sin, &sl);
    drain(0);
    g_served = g_answered = 0;
    struct evhttp_connection *c = evhttp_connection_base_new(base, NULL, "127.0.0.1",
                                                            ntohs(sin.sin_port));
    struct evhttp_request *req = evhttp_request_new(http_done, base);
    evhttp_make_request(c, req, EVHTTP_REQ_GET, "/x");
    event_base_dispatch(base);
    assert_int_equal(g_served, 1);
    assert_int_equal(g_answered, 1);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(g_served_req)), 1);
    assert_int_equal(loc_addr((uint32_t)find(D9_REC_POLL_START, ID(g_served_req))->a),
                     FN(http_handler));
    evhttp_connection_free(c);
    evhttp_free(http);
    event_base_free(base);
}

/* ---- "event" not traced: callbacks handed over as they are, nothing recorded ---- */

static int g_plain_calls;
static void plain_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    g_plain_calls++;
}

static void test_untraced_kind_leaves_callbacks_alone(void **state)
{
    (void)state;
    loopcfg_set_auto(LOOPCFG_UV, "off");
    struct event_base *base = event_base_new();
    struct event *ev = event_new(base, -1, 0, plain_cb, &g_plain_calls);
    assert_ptr_equal(ev->ev_evcallback.evcb_cb_union.evcb_callback, plain_cb);
    drain(0);
    g_plain_calls = 0;
    struct timeval zero = { 0, 0 };
    event_add(ev, &zero);
    event_base_dispatch(base);
    assert_int_equal(g_plain_calls, 1);
    drain(1);
    assert_int_equal(g_nrecs, 0);
    event_free(ev);
    event_base_free(base);
    loopcfg_set_auto(LOOPCFG_EVENT, "off");
}

/* ---- return values and errno as libevent's -------------------------------------------- */

static void errno_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    errno = EDOM;               /* the program's errno, kept by the trampoline */
}

static void test_return_values_and_errno_are_libevents(void **state)
{
    (void)state;
    struct event_base *base = event_base_new();
    assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1);   /* nothing to run */
    struct timeval zero = { 0, 0 };
    assert_int_equal(event_base_once(base, -1, EV_TIMEOUT, errno_cb, NULL, &zero), 0);
    errno = 0;
    event_base_loop(base, EVLOOP_ONCE);
    assert_int_equal(errno, EDOM);
    errno = ERANGE;
    assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1);
    event_base_free(base);
}

int main(void)
{
    strcpy(g_dir, "/tmp/d9-test-ev.XXXXXX");
    if (!mkdtemp(g_dir))
        return 1;
    setenv("DIAL9_SHM_DIR", g_dir, 1);
    setenv("DIAL9_COLLECTOR", "none", 1);
    setenv("DIAL9_SAMPLER", "off", 1);
    setenv("DIAL9_RING_KB", "4096", 1);
    if (d9_init() != 0 || evthread_use_pthreads() != 0)
        return 1;
    loopcfg_set_auto(LOOPCFG_EVENT, "off");     /* what libd9preload's constructor does */
    g_recs = calloc(SELFRING_MAXREC, sizeof *g_recs);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timer_callbacks_are_polls_at_their_code_address),
        cmocka_unit_test(test_poll_backend_wait_is_a_park),
        cmocka_unit_test(test_event_freed_in_its_own_callback_and_null_arguments),
        cmocka_unit_test(test_bufferevent_callbacks_are_polls_of_the_bufferevent),
        cmocka_unit_test(test_listener_accept_is_a_poll_of_the_listener),
        cmocka_unit_test(test_getters_return_the_programs_functions),
        cmocka_unit_test(test_event_active_from_another_thread_is_a_wake),
        cmocka_unit_test(test_bases_on_threads_and_nested_loops_are_distinct_workers),
        cmocka_unit_test(test_http_request_is_a_poll_of_the_request),
        cmocka_unit_test(test_untraced_kind_leaves_callbacks_alone),
        cmocka_unit_test(test_return_values_and_errno_are_libevents),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    d9_shutdown();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        rc = 1;
    free(g_recs);
    return rc;
}
