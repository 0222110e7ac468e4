/*
 * test_agent_control.c — the agent's control channel (agent/control.c and
 * the housekeeping thread in agent/agent.c): Request packing, hello at start
 * and goodbye at stop as a ZMQ_ROUTER collector receives them, and a missing
 * collector that is not an error. Sockets live in a temp dir.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>
#include "agent/agent.h"
#include "agent/control.h"
#include "proto/d9.pb-c.h"

#define RECV_GUARD_MS 10000     /* only so a broken agent cannot hang the suite */

struct fx {
    char dir[64];
    char endpoint[128];
    void *ctx, *router;
    struct ag_config cfg;
    struct ag_agent a;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/d9-test-ctl.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->endpoint, sizeof f->endpoint, "ipc://%s/c.sock", f->dir);
    ag_env_defaults(&f->cfg, 1000, NULL, "ctl");
    snprintf(f->cfg.shm_dir, sizeof f->cfg.shm_dir, "%s", f->dir);
    snprintf(f->cfg.collector, sizeof f->cfg.collector, "%s", f->endpoint);
    f->cfg.ring_data_size = D9_RING_DATA_MIN;
    f->cfg.max_threads = 2;
    f->ctx = zmq_ctx_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    ag_agent_destroy(&f->a);
    if (f->router)
        zmq_close(f->router);
    zmq_ctx_term(f->ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static void bind_router(struct fx *f)
{
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    int t = RECV_GUARD_MS, linger = 0;
    zmq_setsockopt(f->router, ZMQ_RCVTIMEO, &t, sizeof t);
    zmq_setsockopt(f->router, ZMQ_LINGER, &linger, sizeof linger);
    assert_int_equal(zmq_bind(f->router, f->endpoint), 0);
}

/* Receive [identity][empty][Request] and unpack the Request. */
static D9__Request *recv_request(struct fx *f)
{
    uint8_t id[256], empty[8], body[AG_CONTROL_MSG_MAX];
    assert_true(zmq_recv(f->router, id, sizeof id, 0) > 0);
    int more;
    size_t ml = sizeof more;
    zmq_getsockopt(f->router, ZMQ_RCVMORE, &more, &ml);
    assert_true(more);
    assert_int_equal(zmq_recv(f->router, empty, sizeof empty, 0), 0);
    int n = zmq_recv(f->router, body, sizeof body, 0);
    assert_true(n > 0);
    D9__Request *r = d9__request__unpack(NULL, (size_t)n, body);
    assert_non_null(r);
    return r;
}

static void test_hello_packs_and_unpacks(void **state)
{
    (void)state;
    uint8_t buf[AG_CONTROL_MSG_MAX];
    struct ag_hello_info h = { .pid = 42, .uid = 7, .start_time = 123456789,
                               .region_path = "/dev/shm/d9.7.42.123456789",
                               .comm = "srv", .exe = "/usr/bin/srv" };
    long n = ag_control_pack_hello(&h, buf, sizeof buf);
    assert_true(n > 0);
    D9__Request *r = d9__request__unpack(NULL, (size_t)n, buf);
    assert_non_null(r);
    assert_int_equal(r->body_case, D9__REQUEST__BODY_HELLO);
    assert_int_equal(r->hello->abi_version, D9_ABI_VERSION);
    assert_int_equal(r->hello->pid, 42);
    assert_int_equal(r->hello->uid, 7);
    assert_int_equal(r->hello->start_time, 123456789);
    assert_string_equal(r->hello->region_path, "/dev/shm/d9.7.42.123456789");
    assert_string_equal(r->hello->comm, "srv");
    assert_string_equal(r->hello->exe, "/usr/bin/srv");
    d9__request__free_unpacked(r, NULL);
}

static void test_goodbye_packs_and_unpacks(void **state)
{
    (void)state;
    uint8_t buf[AG_CONTROL_MSG_MAX];
    long n = ag_control_pack_goodbye(42, 99, -1, buf, sizeof buf);
    assert_true(n > 0);
    D9__Request *r = d9__request__unpack(NULL, (size_t)n, buf);
    assert_non_null(r);
    assert_int_equal(r->body_case, D9__REQUEST__BODY_GOODBYE);
    assert_int_equal(r->goodbye->pid, 42);
    assert_int_equal(r->goodbye->start_time, 99);
    assert_int_equal(r->goodbye->exit_code, -1);
    d9__request__free_unpacked(r, NULL);
}

static void test_pack_into_small_buffer_is_enobufs(void **state)
{
    (void)state;
    uint8_t buf[8];
    struct ag_hello_info h = { .pid = 1, .region_path = "/a/very/long/path/indeed" };
    assert_int_equal(ag_control_pack_hello(&h, buf, sizeof buf), -ENOBUFS);
}

static void test_missing_collector_send_fails_fast_and_queues_nothing(void **state)
{
    struct fx *f = *state;
    struct ag_control c;
    assert_int_equal(ag_control_open(&c, f->endpoint), 0);     /* nobody listens */
    uint8_t msg[] = { 1, 2, 3 };
    assert_int_equal(ag_control_send(&c, msg, sizeof msg), -EAGAIN);
    ag_control_close(&c, AG_CONTROL_LINGER_MS);
    ag_control_close(&c, AG_CONTROL_LINGER_MS);     /* idempotent */
    assert_int_equal(ag_control_send(&c, msg, sizeof msg), -ENOTCONN);
}

static void test_bad_endpoint_is_an_error_not_a_crash(void **state)
{
    (void)state;
    struct ag_control c;
    assert_true(ag_control_open(&c, "nonsense://x") < 0);
    assert_null(c.sock);
    ag_control_close(&c, 0);
}

static void test_agent_says_hello_at_start_and_goodbye_at_stop(void **state)
{
    struct fx *f = *state;
    bind_router(f);
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    D9__Request *r = recv_request(f);
    assert_int_equal(r->body_case, D9__REQUEST__BODY_HELLO);
    assert_int_equal(r->hello->pid, (uint32_t)getpid());
    assert_int_equal(r->hello->uid, (uint32_t)getuid());
    assert_string_equal(r->hello->region_path, ag_agent_region_path(&f->a));
    assert_string_equal(r->hello->comm, "test_agent_cont");  /* comm is cut to 15 bytes */
    assert_int_equal(r->hello->start_time, f->a.region.hdr->start_time);
    d9__request__free_unpacked(r, NULL);

    /* the housekeeping thread notes the hello right after zmq took it, which
     * may be after the router already received it: wait for the note */
    for (int i = 0; i < 5000 && !__atomic_load_n(&f->a.hello_sent, __ATOMIC_ACQUIRE); i++)
        usleep(1000);
    assert_int_equal(__atomic_load_n(&f->a.hello_sent, __ATOMIC_ACQUIRE), 1);
    ag_agent_stop(&f->a);
    r = recv_request(f);
    assert_int_equal(r->body_case, D9__REQUEST__BODY_GOODBYE);
    assert_int_equal(r->goodbye->pid, (uint32_t)getpid());
    assert_int_equal(r->goodbye->start_time, f->a.region.hdr->start_time);
    d9__request__free_unpacked(r, NULL);
}

static void test_agent_hello_reaches_a_collector_that_starts_later(void **state)
{
    struct fx *f = *state;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    usleep(100 * 1000);          /* give the agent time to (fail to) reach it first */
    bind_router(f);
    D9__Request *r = recv_request(f);
    assert_int_equal(r->body_case, D9__REQUEST__BODY_HELLO);
    d9__request__free_unpacked(r, NULL);
}

static void test_agent_with_no_collector_starts_and_stops_without_goodbye(void **state)
{
    struct fx *f = *state;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    assert_int_equal(atomic_load(&f->a.live) != 0, 1);
    usleep(50 * 1000);                       /* let a few hello retries fail */
    ag_agent_stop(&f->a);
    assert_int_equal(f->a.hello_sent, 0);    /* so it closed without lingering */
    assert_int_equal(atomic_load(&f->a.region.hdr->state), D9_REGION_CLOSED);
}

/* No collector listens: the channel is never opened (libzmq never loaded
 * for it); the agent only probes. Stop waits for the housekeeping thread,
 * which probed at its start before anything else. */
static void test_agent_with_no_collector_never_opens_the_channel(void **state)
{
    struct fx *f = *state;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    ag_agent_stop(&f->a);
    assert_int_equal(f->a.ctl_state, 0);
    assert_null(f->a.ctl.ctx);
}

static int region_exists(struct fx *f) { return access(f->a.region.path, F_OK) == 0; }

/* Clean exit, no collector at DIAL9_COLLECTOR: the region goes with the process. */
static void test_agent_without_a_collector_removes_its_region_at_stop(void **state)
{
    struct fx *f = *state;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    assert_true(region_exists(f));
    ag_agent_stop(&f->a);
    assert_false(region_exists(f));
    assert_int_equal(atomic_load(&f->a.region.hdr->adopted), D9_ADOPT_ABANDONED);
}

/* A collector listens: it will adopt and drain the region, so it stays. */
static void test_agent_with_a_collector_listening_keeps_its_region(void **state)
{
    struct fx *f = *state;
    bind_router(f);
    assert_int_equal(ag_control_reachable(f->endpoint), 1);
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    ag_agent_stop(&f->a);
    assert_true(region_exists(f));
}

/* A collector adopted the region and is gone now: the file stays, so the
 * next collector drains the tail. */
static void test_agent_keeps_an_adopted_region_with_no_collector_left(void **state)
{
    struct fx *f = *state;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    shm_region_mark_adopted(f->a.region.hdr);
    ag_agent_stop(&f->a);
    assert_true(region_exists(f));
}

/* DIAL9_COLLECTOR=none: nothing to ask, a scanning collector may come. */
static void test_agent_without_a_control_channel_keeps_its_region(void **state)
{
    struct fx *f = *state;
    f->cfg.control = 0;
    f->cfg.collector[0] = 0;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
    ag_agent_stop(&f->a);
    assert_true(region_exists(f));
}

static void test_reachable_probes_ipc_endpoints_only(void **state)
{
    struct fx *f = *state;
    assert_int_equal(ag_control_reachable(f->endpoint), 0);     /* no socket file */
    assert_int_equal(ag_control_reachable("tcp://127.0.0.1:1"), -EPROTONOSUPPORT);
    assert_int_equal(ag_control_reachable("ipc://"), 0);
    bind_router(f);
    assert_int_equal(ag_control_reachable(f->endpoint), 1);
}

/* DIAL9_SHM_CAP_MB: past the cap no region is made (-EDQUOT, untraced). */
static void test_agent_refuses_a_region_past_the_cap(void **state)
{
    struct fx *f = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/d9.%u.%u.1", f->dir, (unsigned)getuid(), 0x7ffffffeu);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    assert_true(fd >= 0);
    static char mib[AG_MIB];
    memset(mib, 1, sizeof mib);
    assert_int_equal(write(fd, mib, sizeof mib), (ssize_t)sizeof mib);
    close(fd);
    f->cfg.shm_cap_mb = 2;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);     /* 1 MiB < 2 MiB */
    ag_agent_destroy(&f->a);
    f->cfg.shm_cap_mb = 1;
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), -EDQUOT);
    assert_int_equal(atomic_load(&f->a.live), 0);
    ag_agent_destroy(&f->a);                    /* a failed start still owns its tables */
    f->cfg.shm_cap_mb = 0;                                      /* no cap */
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_hello_packs_and_unpacks),
        T(test_goodbye_packs_and_unpacks),
        T(test_pack_into_small_buffer_is_enobufs),
        T(test_missing_collector_send_fails_fast_and_queues_nothing),
        T(test_bad_endpoint_is_an_error_not_a_crash),
        T(test_agent_says_hello_at_start_and_goodbye_at_stop),
        T(test_agent_hello_reaches_a_collector_that_starts_later),
        T(test_agent_with_no_collector_starts_and_stops_without_goodbye),
        T(test_agent_with_no_collector_never_opens_the_channel),
        T(test_agent_without_a_collector_removes_its_region_at_stop),
        T(test_agent_with_a_collector_listening_keeps_its_region),
        T(test_agent_keeps_an_adopted_region_with_no_collector_left),
        T(test_agent_without_a_control_channel_keeps_its_region),
        T(test_reachable_probes_ipc_endpoints_only),
        T(test_agent_refuses_a_region_past_the_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
