/*
 * test_ctl.c — the control channel (collector/ctl/ctl_server.c) as a
 * specification: ctl_client_request() against a ROUTER served by ctl_server_*, the
 * framing rules, malformed-message accounting and client errors, and who
 * the server says a request came from (the kernel's credentials of the
 * connection, never a message field).
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
#include <sys/wait.h>
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
    int cred_known;             /* the last request's sender, as ctl_server_recv said */
    uint32_t uid, pid;
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
            fx->cred_known = m.cred_known;
            fx->uid = m.uid;
            fx->pid = m.pid;
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

/* every user connects (agents announce themselves, users ask about their
 * own processes); no execute bit: a socket is not run */
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
    assert_int_equal(st.st_mode & 0777, 0666);
}

static void a_request_carries_the_kernel_s_credentials_of_its_sender(void **state)
{
    struct fx *fx = *state;
    int rc;
    D9__Reply *rep = ask_status(fx->ep, &rc);
    assert_int_equal(rc, 0);
    ctl_client_reply_free(rep);
    assert_int_equal(fx->cred_known, 1);
    assert_int_equal(fx->uid, (uint32_t)getuid());
    assert_int_equal(fx->pid, (uint32_t)getpid());
}

/* A child that became uid 65534 before connecting is seen as 65534: the
 * uid is the connection's, not the server's or the message's. */
static void a_request_from_another_user_carries_that_user_s_uid(void **state)
{
    struct fx *fx = *state;
    if (geteuid() != 0) {
        skip();
        return;
    }
    chmod(fx->dir, 0755);       /* the child must reach the socket */
    char p[256];
    snprintf(p, sizeof p, "%s/sub", fx->dir);
    chmod(p, 0755);
    pid_t k = fork();
    assert_true(k >= 0);
    if (k == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(3);
        int rc;
        D9__Reply *rep = ask_status(fx->ep, &rc);
        ctl_client_reply_free(rep);
        _exit(rc == 0 ? 0 : 4);
    }
    int st;
    assert_int_equal(waitpid(k, &st, 0), k);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(fx->cred_known, 1);
    assert_int_equal(fx->uid, 65534);
    assert_int_equal(fx->pid, (uint32_t)k);
}

static void a_tcp_peer_has_no_credentials(void **s)
{
    (void)s;
    struct ctl_server c;
    char err[256];
    assert_int_equal(ctl_server_open(&c, "tcp://127.0.0.1:*", err, sizeof err), 0);
    char ep[128];
    size_t len = sizeof ep;
    assert_int_equal(zmq_getsockopt(c.sock, ZMQ_LAST_ENDPOINT, ep, &len), 0);
    void *ctx = zmq_ctx_new();
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    assert_int_equal(zmq_connect(d, ep), 0);
    D9__Request req = D9__REQUEST__INIT;
    D9__StatusRequest sr = D9__STATUS_REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_STATUS;
    req.status = &sr;
    uint8_t buf[64];
    size_t n = d9__request__pack(&req, buf);
    zmq_send(d, "", 0, ZMQ_SNDMORE);
    zmq_send(d, buf, n, 0);
    int got = 0;
    struct ctl_server_msg m = { .cred_known = 1, .uid = 1 };
    for (int i = 0; i < 500 && !got; i++) {
        struct pollfd pfd = { .fd = c.fd, .events = POLLIN };
        poll(&pfd, 1, 10);
        if (ctl_server_recv(&c, &m) == 1) {
            got = 1;
            ctl_server_msg_done(&m);
        }
    }
    assert_int_equal(got, 1);
    assert_int_equal(m.cred_known, 0);
    assert_false(ctl_server_may_see(&m, 0));
    zmq_close(d);
    zmq_ctx_term(ctx);
    ctl_server_close(&c);
}

static void the_peer_address_yields_uid_and_pid_or_nothing(void **s)
{
    (void)s;
    uint32_t uid = 7, pid = 7;
    assert_int_equal(ctl_server_peer_cred("localhost:1000:100:4242", &uid, &pid), 0);
    assert_int_equal(uid, 1000);
    assert_int_equal(pid, 4242);
    assert_int_equal(ctl_server_peer_cred(":0:0:1", &uid, &pid), 0);
    assert_int_equal(uid, 0);
    assert_int_equal(pid, 1);
    static const char *const bad[] = {
        NULL, "", "localhost", "127.0.0.1", "1:2:3", "localhost:1000:100:", "h:x:1:2",
        "h:1:2:4294967296", "h:-1:2:3", "h: 1:2:3", "h:1:2:3 ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uid = pid = 7;
        assert_int_equal(ctl_server_peer_cred(bad[i], &uid, &pid), -EINVAL);
        assert_int_equal(uid, 7);
        assert_int_equal(pid, 7);
    }
}

static void root_sees_every_process_a_user_its_own_an_unknown_caller_none(void **s)
{
    (void)s;
    struct ctl_server_msg root = { .cred_known = 1, .uid = 0 };
    struct ctl_server_msg user = { .cred_known = 1, .uid = 1000 };
    struct ctl_server_msg unknown = { .cred_known = 0, .uid = 0 };
    assert_true(ctl_server_may_see(&root, 0));
    assert_true(ctl_server_may_see(&root, 1000));
    assert_true(ctl_server_may_see(&user, 1000));
    assert_false(ctl_server_may_see(&user, 0));
    assert_false(ctl_server_may_see(&user, 1001));
    assert_false(ctl_server_may_see(&unknown, 0));
    assert_false(ctl_server_may_see(&unknown, 1000));
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
        cmocka_unit_test_setup_teardown(a_request_carries_the_kernel_s_credentials_of_its_sender, setup, teardown),
        cmocka_unit_test_setup_teardown(a_request_from_another_user_carries_that_user_s_uid, setup, teardown),
        cmocka_unit_test(a_tcp_peer_has_no_credentials),
        cmocka_unit_test(the_peer_address_yields_uid_and_pid_or_nothing),
        cmocka_unit_test(root_sees_every_process_a_user_its_own_an_unknown_caller_none),
        cmocka_unit_test_setup_teardown(malformed_messages_are_counted_and_dropped, setup, teardown),
        cmocka_unit_test(asking_a_missing_collector_says_so),
        cmocka_unit_test(a_dead_socket_times_out),
        cmocka_unit_test_setup_teardown(a_second_server_on_a_live_endpoint_refuses_to_bind, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
