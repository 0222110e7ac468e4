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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>
#include <cmocka.h>
#include "collector/ctl/ctl_client.h"
#include "collector/ctl/ctl_server.h"
#include "collector/ctl/ctl_zmtp.h"
#include "collector/store/col_log.h"
#include "shm/clock.h"

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
    const char *ep = ctl_server_endpoint(&c);
    assert_int_equal(strncmp(ep, "tcp://127.0.0.1:", 16), 0);
    assert_true(atoi(ep + 16) > 0);
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

/* ---- connections as a bounded resource ------------------------------------------ */

#define SMALL_NOFILE 128        /* conn_max 32, uid_max 8 */
#define FLOOD 40

static uint64_t load64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static uint32_t load32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* A server whose table is sized by a descriptor limit of SMALL_NOFILE. */
static int setup_small(void **state)
{
    struct rlimit rl, small;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    small = rl;
    small.rlim_cur = SMALL_NOFILE;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &small), 0);
    int rc = setup(state);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    struct fx *fx = *state;
    assert_int_equal(fx->ctl.conn_max, SMALL_NOFILE / CTL_SERVER_CONN_FD_DIV);
    assert_int_equal(fx->ctl.uid_max, fx->ctl.conn_max / CTL_SERVER_UID_DIV);
    return rc;
}

static int raw_connect(const char *ep)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    const char *path = ep + strlen("ipc://");
    assert_true(strlen(path) < sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

/* A connection that did what a libzmq DEALER does: greeting and READY. */
static int dealer_connect(const char *ep)
{
    int fd = raw_connect(ep);
    if (fd < 0)
        return fd;
    static const uint8_t hello[] = {
        0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 1, 'N', 'U', 'L', 'L',
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0x04, 28, 5, 'R', 'E', 'A', 'D', 'Y', 11, 'S', 'o', 'c', 'k', 'e', 't', '-', 'T', 'y', 'p',
        'e', 0, 0, 0, 6, 'D', 'E', 'A', 'L', 'E', 'R',
    };
    if (write(fd, hello, sizeof hello) != (ssize_t)sizeof hello) {
        close(fd);
        return -EIO;
    }
    return fd;
}

/* 1 when the server closed fd (EOF or reset), after reading what it sent. */
static int closed_by_server(int fd, int wait_ms)
{
    uint8_t b[256];
    for (int i = 0; i < wait_ms / 10 + 1; i++) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 10) <= 0)
            continue;
        ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN))
            return 1;
    }
    return 0;
}

/* Serve from this thread for ms: answer every request with a status. */
static void pump(struct ctl_server *c, int ms)
{
    for (int i = 0; i < ms / 5 + 1; i++) {
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        poll(&p, 1, 5);
        ctl_server_tick(c, shm_mono_ns());
        struct ctl_server_msg m;
        while (ctl_server_recv(c, &m) == 1) {
            D9__Reply rep = D9__REPLY__INIT;
            D9__CollectorStatus cs = D9__COLLECTOR_STATUS__INIT;
            cs.store = (char *)"test";
            rep.status = &cs;
            ctl_server_reply(c, &m, &rep);
            ctl_server_msg_done(&m);
        }
    }
}

static int wait_u64(const uint64_t *v, uint64_t want, int ms)
{
    for (int i = 0; i < ms / 10 + 1 && load64(v) < want; i++)
        usleep(10000);
    return load64(v) >= want;
}

/* A child of uid 65534 runs fn (connections it holds until told to go). */
static pid_t as_nobody(struct fx *fx, int (*fn)(struct fx *, int), int *go)
{
    chmod(fx->dir, 0755);
    char p[256];
    snprintf(p, sizeof p, "%s/sub", fx->dir);
    chmod(p, 0755);
    int pp[2];
    assert_int_equal(pipe(pp), 0);
    pid_t k = fork();
    assert_true(k >= 0);
    if (k == 0) {
        close(pp[1]);
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(3);
        _exit(fn(fx, pp[0]));
    }
    close(pp[0]);
    *go = pp[1];
    return k;
}

static int child_exit(pid_t k, int go)
{
    close(go);
    int st;
    assert_int_equal(waitpid(k, &st, 0), k);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* FLOOD bare connections, held until the parent closes the pipe. */
static int flood_raw(struct fx *fx, int go)
{
    int fds[FLOOD], n = 0;
    for (int i = 0; i < FLOOD; i++)
        if ((fds[i] = raw_connect(fx->ep)) >= 0)
            n++;
    char b;
    (void)!read(go, &b, 1);
    for (int i = 0; i < FLOOD; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return n == FLOOD ? 0 : 4;
}

/* Another user holding connections it never uses: past its cap they are
 * refused and counted, the collector keeps its table and root still gets an
 * answer. (libzmq's listener would have aborted the process at EMFILE.) */
static void a_user_s_connections_over_its_cap_are_refused_and_others_still_served(void **state)
{
    struct fx *fx = *state;
    if (geteuid() != 0) {
        skip();
        return;
    }
    int go;
    pid_t k = as_nobody(fx, flood_raw, &go);
    uint32_t cap = fx->ctl.uid_max;
    assert_true(wait_u64(&fx->ctl.refused, FLOOD - cap, 5000));
    assert_int_equal(load32(&fx->ctl.nconns), cap);
    int rc;
    D9__Reply *rep = ask_status(fx->ep, &rc);          /* root: not that user's cap */
    assert_int_equal(rc, 0);
    ctl_client_reply_free(rep);
    assert_int_equal(child_exit(k, go), 0);
    assert_int_equal(load64(&fx->ctl.refused), FLOOD - cap);
}

/* uid_max idle handshaken connections, then a status request of its own. */
static int fill_then_ask(struct fx *fx, int go)
{
    int fds[64], n = 0;
    for (uint32_t i = 0; i < fx->ctl.uid_max && i < 64; i++)
        if ((fds[n] = dealer_connect(fx->ep)) >= 0)
            n++;
    usleep((useconds_t)(CTL_SERVER_EVICT_IDLE_NS / 1000 + 300000));
    int rc;
    D9__Reply *rep = ask_status(fx->ep, &rc);
    ctl_client_reply_free(rep);
    char b;
    (void)!read(go, &b, 1);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return rc == 0 ? 0 : 5;
}

/* A user whose idle agents hold its whole share still gets its d9 status:
 * the new connection takes the place of the longest idle one. */
static void a_new_connection_over_the_cap_replaces_the_user_s_longest_idle_one(void **state)
{
    struct fx *fx = *state;
    if (geteuid() != 0) {
        skip();
        return;
    }
    int go;
    pid_t k = as_nobody(fx, fill_then_ask, &go);
    assert_true(wait_u64(&fx->ctl.closed, 1, 5000));
    assert_int_equal(child_exit(k, go), 0);
    assert_int_equal(load64(&fx->ctl.refused), 0);
}

/* Deadlines: no handshake, a message never finished, idleness. */
static void slow_half_finished_and_idle_connections_are_closed(void **s)
{
    (void)s;
    char dir[] = "/tmp/d9ctldl.XXXXXX", ep[128], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(ep, sizeof ep, "ipc://%s/c.sock", dir);
    struct ctl_server c;
    assert_int_equal(ctl_server_open(&c, ep, err, sizeof err), 0);
    int silent = raw_connect(ep), idle = dealer_connect(ep), half = dealer_connect(ep);
    assert_true(silent >= 0 && idle >= 0 && half >= 0);
    assert_int_equal(write(half, "\x01\x00\x00\x0a", 4), 4);   /* delimiter, then 0 of 10 */
    pump(&c, 100);
    assert_int_equal(c.nconns, 3);
    uint64_t now = shm_mono_ns();
    ctl_server_tick(&c, now + CTL_SERVER_HANDSHAKE_NS + 1);
    assert_true(closed_by_server(silent, 1000));
    assert_int_equal(c.closed, 2);          /* the silent one and the half message */
    assert_true(closed_by_server(half, 1000));
    assert_false(closed_by_server(idle, 50));
    ctl_server_tick(&c, now + CTL_SERVER_IDLE_NS + CTL_SERVER_SWEEP_NS * 4);
    assert_true(closed_by_server(idle, 1000));
    assert_int_equal(c.closed, 3);
    assert_int_equal(c.nconns, 0);
    close(silent), close(idle), close(half);
    ctl_server_close(&c);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* Out of descriptors: accept gives up the spare descriptor to take the
 * pending connection and close it, stops accepting for a while, and the
 * process lives on. */
static void no_descriptor_left_pauses_accepting_instead_of_aborting(void **s)
{
    (void)s;
    char dir[] = "/tmp/d9ctlmf.XXXXXX", ep[128], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(ep, sizeof ep, "ipc://%s/c.sock", dir);
    struct ctl_server c;
    assert_int_equal(ctl_server_open(&c, ep, err, sizeof err), 0);
    struct rlimit rl, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    int probe = dup(0);
    assert_true(probe >= 0);
    close(probe);
    low = rl;
    low.rlim_cur = (rlim_t)probe + 40;      /* room for a few clients, not their accepts */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fds[64], n = 0;
    while (n < 64 && (fds[n] = raw_connect(ep)) >= 0)
        n++;
    pump(&c, 50);                           /* every accept fails: EMFILE */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    assert_true(c.refused >= 1);
    assert_int_equal(c.listening, 0);
    assert_true(c.spare_fd >= 0);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    pump(&c, 20);
    ctl_server_tick(&c, shm_mono_ns() + CTL_SERVER_PAUSE_NS);
    assert_int_equal(c.listening, 1);
    uint32_t before = c.nconns;
    int again = dealer_connect(ep);
    assert_true(again >= 0);
    pump(&c, 50);
    assert_int_equal(c.nconns, before + 1);
    close(again);
    ctl_server_close(&c);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* A flood of requests is handed out CTL_SERVER_BATCH per tick, and the set
 * stays readable while requests wait in the server's buffers. */
static void requests_are_handed_out_a_batch_per_tick(void **s)
{
    (void)s;
    char dir[] = "/tmp/d9ctlbt.XXXXXX", ep[128], err[256];
    assert_non_null(mkdtemp(dir));
    snprintf(ep, sizeof ep, "ipc://%s/c.sock", dir);
    struct ctl_server c;
    assert_int_equal(ctl_server_open(&c, ep, err, sizeof err), 0);
    int fd = dealer_connect(ep);
    assert_true(fd >= 0);
    pump(&c, 50);
    D9__Request req = D9__REQUEST__INIT;
    D9__Hello h = D9__HELLO__INIT;
    req.body_case = D9__REQUEST__BODY_HELLO;
    req.hello = &h;
    uint8_t one[64];
    size_t n = d9__request__pack(&req, one + 4);
    one[0] = 0x01, one[1] = 0, one[2] = 0, one[3] = (uint8_t)n;   /* [empty][hello] */
    const int total = CTL_SERVER_BATCH + 36;
    for (int i = 0; i < total; i++)
        assert_int_equal(write(fd, one, n + 4), (ssize_t)(n + 4));
    usleep(20000);
    ctl_server_tick(&c, shm_mono_ns());
    int got = 0;
    struct ctl_server_msg m;
    while (ctl_server_recv(&c, &m) == 1) {
        got++;
        ctl_server_msg_done(&m);
    }
    assert_int_equal(got, CTL_SERVER_BATCH);
    struct pollfd p = { .fd = c.fd, .events = POLLIN };
    assert_int_equal(poll(&p, 1, 0), 1);    /* the rest is waiting: come back */
    ctl_server_tick(&c, shm_mono_ns());
    while (ctl_server_recv(&c, &m) == 1) {
        got++;
        ctl_server_msg_done(&m);
    }
    assert_int_equal(got, total);
    assert_int_equal(c.requests, (uint64_t)total);
    close(fd);
    ctl_server_close(&c);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
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
        cmocka_unit_test(root_sees_every_process_a_user_its_own_an_unknown_caller_none),
        cmocka_unit_test_setup_teardown(malformed_messages_are_counted_and_dropped, setup, teardown),
        cmocka_unit_test(asking_a_missing_collector_says_so),
        cmocka_unit_test(a_dead_socket_times_out),
        cmocka_unit_test_setup_teardown(a_second_server_on_a_live_endpoint_refuses_to_bind, setup, teardown),
        cmocka_unit_test_setup_teardown(a_user_s_connections_over_its_cap_are_refused_and_others_still_served,
                                        setup_small, teardown),
        cmocka_unit_test_setup_teardown(a_new_connection_over_the_cap_replaces_the_user_s_longest_idle_one,
                                        setup_small, teardown),
        cmocka_unit_test(slow_half_finished_and_idle_connections_are_closed),
        cmocka_unit_test(no_descriptor_left_pauses_accepting_instead_of_aborting),
        cmocka_unit_test(requests_are_handed_out_a_batch_per_tick),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
