/*
 * test_ctl.c — the control channel (collector/ctl/ctl_server.c) as a
 * specification: ctl_client_request() against a ROUTER served by ctl_server_*, the
 * framing rules, malformed-message accounting and client errors.
 */
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>
#include <cmocka.h>
#include "collector/ctl/ctl_client.h"
#include "collector/ctl/ctl_server.h"
#include "collector/store/col_log.h"

#define TIMEOUT_MS 5000
#define SHORT_TIMEOUT_MS 200

struct fx {
    char dir[64];
    char ep[128];
    struct ctl_server ctl;
    pthread_t th;
    volatile int stop;
    int served;                 /* requests answered by the server thread */
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

/* Server thread: answers status with store "test" and flush with -ESRCH. */
static void *serve(void *arg)
{
    struct fx *fx = arg;
    while (!fx->stop) {
        struct pollfd pfd = { .fd = fx->ctl.fd, .events = POLLIN };
        poll(&pfd, 1, 10);
        struct ctl_server_msg m;
        while (ctl_server_recv(&fx->ctl, &m) == 1) {
            D9__Reply rep = D9__REPLY__INIT;
            D9__CollectorStatus cs = D9__COLLECTOR_STATUS__INIT;
            if (m.req->body_case == D9__REQUEST__BODY_STATUS) {
                cs.store = (char *)"test";
                rep.status = &cs;
            } else {
                rep.error = -ESRCH;
                rep.message = (char *)"no such pid";
            }
            ctl_server_reply(&fx->ctl, &m, &rep);
            ctl_server_msg_done(&m);
            fx->served++;
        }
    }
    return NULL;
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9ctltest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->ep, sizeof fx->ep, "ipc://%s/sub/dir/c.sock", fx->dir);
    col_log_init("test_ctl", COL_LOG_ERROR);
    char err[256];
    assert_int_equal(ctl_server_open(&fx->ctl, fx->ep, err, sizeof err), 0);
    assert_int_equal(pthread_create(&fx->th, NULL, serve, fx), 0);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    if (!pthread_equal(fx->th, pthread_self())) {
        fx->stop = 1;
        pthread_join(fx->th, NULL);
    }
    ctl_server_close(&fx->ctl);
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static D9__Reply *ask_status(const char *ep, int *rc)
{
    D9__Request req = D9__REQUEST__INIT;
    D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_STATUS;
    req.status = &sr;
    D9__Reply *rep = NULL;
    *rc = ctl_client_request(ep, &req, &rep, TIMEOUT_MS);
    return rep;
}

static void a_request_gets_its_reply(void **state)
{
    struct fx *fx = *state;
    int rc;
    D9__Reply *rep = ask_status(fx->ep, &rc);
    assert_int_equal(rc, 0);
    assert_non_null(rep->status);
    assert_string_equal(rep->status->store, "test");
    ctl_client_reply_free(rep);
}

static void the_reply_carries_the_server_s_error(void **state)
{
    struct fx *fx = *state;
    D9__Request req = D9__REQUEST__INIT;
    D9__Flush fl = D9__FLUSH__INIT;
    fl.pid = 42;
    req.body_case = D9__REQUEST__BODY_FLUSH;
    req.flush = &fl;
    D9__Reply *rep = NULL;
    assert_int_equal(ctl_client_request(fx->ep, &req, &rep, TIMEOUT_MS), 0);
    assert_int_equal(rep->error, -ESRCH);
    assert_string_equal(rep->message, "no such pid");
    ctl_client_reply_free(rep);
}

static void the_socket_directory_and_socket_are_open_to_every_user(void **state)
{
    struct fx *fx = *state;
    char p[256];
    struct stat st;
    snprintf(p, sizeof p, "%s/sub/dir", fx->dir);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0755);
    snprintf(p, sizeof p, "%s/sub/dir/c.sock", fx->dir);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0777);
}

static void malformed_messages_are_counted_and_dropped(void **state)
{
    struct fx *fx = *state;
    fx->stop = 1;                       /* serve from this thread from here on */
    pthread_join(fx->th, NULL);
    fx->th = pthread_self();
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    assert_int_equal(zmq_connect(s, fx->ep), 0);
    zmq_send(s, "garbage", 7, 0);                     /* no delimiter */
    zmq_send(s, "", 0, ZMQ_SNDMORE);
    zmq_send(s, "\xff\xff\xff", 3, 0);                /* undecodable */
    zmq_send(s, "x", 1, ZMQ_SNDMORE);
    zmq_send(s, "", 0, 0);                            /* non-empty delimiter */
    D9__Request req = D9__REQUEST__INIT;              /* then one good request */
    D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_STATUS;
    req.status = &sr;
    uint8_t buf[64];
    size_t n = d9__request__pack(&req, buf);
    zmq_send(s, "", 0, ZMQ_SNDMORE);
    zmq_send(s, buf, n, 0);
    int good = 0;
    for (int i = 0; i < 500 && !good; i++) {
        struct pollfd pfd = { .fd = fx->ctl.fd, .events = POLLIN };
        poll(&pfd, 1, 10);
        struct ctl_server_msg m;
        while (ctl_server_recv(&fx->ctl, &m) == 1) {
            good += m.req->body_case == D9__REQUEST__BODY_STATUS;
            ctl_server_msg_done(&m);
        }
    }
    assert_int_equal(good, 1);
    assert_int_equal(fx->ctl.malformed, 3);
    zmq_close(s);
    zmq_ctx_term(ctx);
}

static void asking_a_missing_collector_says_so(void **s)
{
    (void)s;
    int rc;
    D9__Reply *rep = ask_status("ipc:///nonexistent/d9/c.sock", &rc);
    assert_int_equal(rc, -ENOENT);
    assert_null(rep);
}

static void a_dead_socket_times_out(void **s)
{
    (void)s;
    char dir[] = "/tmp/d9ctldead.XXXXXX", ep[128], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(ep, sizeof ep, "ipc://%s/c.sock", dir);
    struct ctl_server c;
    assert_int_equal(ctl_server_open(&c, ep, err, sizeof err), 0);
    /* bound but never served: the request must not hang */
    D9__Request req = D9__REQUEST__INIT;
    D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_STATUS;
    req.status = &sr;
    D9__Reply *rep = NULL;
    assert_int_equal(ctl_client_request(ep, &req, &rep, SHORT_TIMEOUT_MS), -ETIMEDOUT);
    ctl_server_close(&c);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static void a_second_server_on_a_live_endpoint_refuses_to_bind(void **state)
{
    struct fx *fx = *state;
    struct ctl_server c2;
    char err[256] = "";
    assert_int_equal(ctl_server_open(&c2, fx->ep, err, sizeof err), -EADDRINUSE);
    assert_non_null(strstr(err, "already running"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_request_gets_its_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(the_reply_carries_the_server_s_error, setup, teardown),
        cmocka_unit_test_setup_teardown(the_socket_directory_and_socket_are_open_to_every_user, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed_messages_are_counted_and_dropped, setup, teardown),
        cmocka_unit_test(asking_a_missing_collector_says_so),
        cmocka_unit_test(a_dead_socket_times_out),
        cmocka_unit_test_setup_teardown(a_second_server_on_a_live_endpoint_refuses_to_bind, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
