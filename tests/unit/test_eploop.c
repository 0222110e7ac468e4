/*
 * test_eploop.c — any epoll loop as a worker (DIAL9_LOOP=epoll): the time
 * between two waits is one poll (task = the iteration, unique and
 * increasing; location = the place that called epoll_wait), the wait a
 * park/unpark (not for a zero timeout), the ready events the worker's
 * queue depth; epoll_pwait and epoll_pwait2 alike; results and errno as
 * the kernel's; threads as distinct workers; an exit inside an iteration
 * ends it; a libevent base's waits counted once, by its own kind while
 * "event" is traced and as iterations when only "epoll" is.
 *
 * The wrappers are linked into this binary and exported (-rdynamic), as
 * libd9preload.so interposes them; auto mode is turned on as its
 * constructor would with DIAL9_LOOP=event,epoll. The process traces
 * itself into a temp DIAL9_SHM_DIR (no collector).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <event2/event.h>
#include "agent/uv/eploop.h"
#include "agent/uv/loopcfg.h"
#include "selfring.h"

static char g_dir[64];

/* The function that contains code address a (0 when unknown). */
static uint64_t function_of(uint64_t a)
{
    Dl_info di;
    if (!a || !dladdr((void *)(uintptr_t)a, &di))
        return 0;
    return (uint64_t)(uintptr_t)di.dli_saddr;
}

static int iteration_task(uint64_t task)
{
    return (task & EPLOOP_TASK_TAG) != 0 && (task >> 63) == 0;
}

/* ---- a loop of its own ------------------------------------------------------------ */

struct own_loop {
    int ep, pipe[2];
    int rounds, peek;
    int waits;
    int got[8];                 /* ready events per wait */
};

void *own_loop(void *arg);
__attribute__((noinline)) void *own_loop(void *arg)
{
    struct own_loop *l = arg;
    struct epoll_event ev[8];
    for (int i = 0; i < l->rounds; i++) {
        int n = epoll_wait(l->ep, ev, 8, l->peek ? 0 : 1000);
        l->got[i] = n;
        l->waits++;
        char c;
        for (int k = 0; k < n; k++)
            if (read(ev[k].data.fd, &c, 1) != 1)
                return NULL;
    }
    return NULL;
}

static void loop_init(struct own_loop *l, int rounds)
{
    memset(l, 0, sizeof *l);
    l->rounds = rounds;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    assert_true(l->ep >= 0);
    assert_int_equal(pipe(l->pipe), 0);
    struct epoll_event e = { .events = EPOLLIN, .data.fd = l->pipe[0] };
    assert_int_equal(epoll_ctl(l->ep, EPOLL_CTL_ADD, l->pipe[0], &e), 0);
}

static void loop_close(struct own_loop *l)
{
    close(l->ep);
    close(l->pipe[0]);
    close(l->pipe[1]);
}

static void test_iterations_are_polls_at_the_wait_site(void **state)
{
    (void)state;
    struct own_loop l;
    loop_init(&l, 5);
    drain(0);
    pthread_t th;
    pthread_create(&th, NULL, own_loop, &l);
    for (int i = 0; i < 5; i++) {
        usleep(5000);
        assert_int_equal(write(l.pipe[1], "x", 1), 1);
    }
    pthread_join(th, NULL);
    assert_int_equal(l.waits, 5);
    drain(1);
    /* five waits: five iterations started, four ended (the last one ran until
     * the thread stopped waiting: still open) */
    assert_int_equal(count(D9_REC_POLL_START, 0), 5);
    assert_int_equal(count(D9_REC_POLL_END, 0), 4);
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), 5);
    assert_int_equal(count(D9_REC_WORKER_UNPARK, 0), 5);
    int worker = -1;
    uint64_t iter = 0;
    for (size_t i = 0; i < g_nrecs; i++) {
        const struct rec *r = &g_recs[i];
        if (r->type != D9_REC_POLL_START)
            continue;
        if (worker < 0)
            worker = r->worker;
        assert_int_equal(r->worker, worker);
        /* the thread's iterations, numbered from 1: one task each */
        assert_int_equal(r->task, EPLOOP_TASK_TAG | (uint64_t)worker << EPLOOP_TASK_SHIFT | ++iter);
        assert_int_equal(function_of(loc_addr((uint32_t)r->a)), FN(own_loop));
        assert_int_equal(r->rt, d9_runtime_default().id);
    }
    /* each iteration ends at the next wait: end(k) before park before start(k+1) */
    uint64_t open = 0;
    for (size_t i = 0; i < g_nrecs; i++) {
        const struct rec *r = &g_recs[i];
        if (r->type == D9_REC_POLL_START) {
            assert_int_equal(open, 0);
            open = r->task;
        } else if (r->type == D9_REC_POLL_END) {
            assert_int_equal(r->task, open);
            open = 0;
        } else if (r->type == D9_REC_WORKER_PARK) {
            assert_int_equal(open, 0);
        }
    }
    /* one ready event per wait: depth 1, recorded once (it never changed) */
    assert_int_equal(count(D9_REC_QUEUE_DEPTH, 0), 1);
    assert_int_equal(find(D9_REC_QUEUE_DEPTH, 0)->a, 1);
    loop_close(&l);
}

static void test_ready_events_are_the_depth_and_a_zero_timeout_is_no_park(void **state)
{
    (void)state;
    struct own_loop l;
    loop_init(&l, 3);
    l.peek = 1;
    int p2[2];
    assert_int_equal(pipe(p2), 0);
    struct epoll_event e = { .events = EPOLLIN, .data.fd = p2[0] };
    assert_int_equal(epoll_ctl(l.ep, EPOLL_CTL_ADD, p2[0], &e), 0);
    assert_int_equal(write(l.pipe[1], "x", 1), 1);
    assert_int_equal(write(p2[1], "y", 1), 1);
    drain(0);
    own_loop(&l);               /* this thread: 2 ready, then 0, then 0 */
    assert_int_equal(l.got[0], 2);
    assert_int_equal(l.got[1], 0);
    drain(1);
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), 0);         /* peeks */
    assert_int_equal(count(D9_REC_POLL_START, 0), 3);
    uint64_t depths[4];
    size_t nd = 0;
    for (size_t i = 0; i < g_nrecs && nd < 4; i++)
        if (g_recs[i].type == D9_REC_QUEUE_DEPTH)
            depths[nd++] = g_recs[i].a;
    assert_int_equal(nd, 2);
    assert_int_equal(depths[0], 2);
    assert_int_equal(depths[1], 0);
    /* this thread's loop is open: end it with one more wait before going on */
    struct epoll_event ev;
    epoll_wait(l.ep, &ev, 1, 0);
    close(p2[0]);
    close(p2[1]);
    loop_close(&l);
}

/* ---- epoll_pwait, epoll_pwait2; results and errno ----------------------------------- */

void pwaits(int ep);
__attribute__((noinline)) void pwaits(int ep)
{
    struct epoll_event ev;
    sigset_t none;
    sigemptyset(&none);
    struct timespec ms = { 0, 1000000 };
    assert_int_equal(epoll_pwait(ep, &ev, 1, 1, &none), 0);
    assert_int_equal(epoll_pwait2(ep, &ev, 1, &ms, &none), 0);
    assert_int_equal(epoll_pwait2(ep, &ev, 1, &(struct timespec){ 0, 0 }, NULL), 0);
}

static void test_pwait_and_pwait2_are_waits_and_results_are_the_kernels(void **state)
{
    (void)state;
    int ep = epoll_create1(0);
    drain(0);
    pwaits(ep);
    errno = 0;
    struct epoll_event ev;
    assert_int_equal(epoll_wait(-1, &ev, 1, 0), -1);
    assert_int_equal(errno, EBADF);
    assert_int_equal(epoll_wait(ep, &ev, 0, 0), -1);
    assert_int_equal(errno, EINVAL);
    errno = ERANGE;
    assert_int_equal(epoll_wait(ep, &ev, 1, 0), 0);
    assert_int_equal(errno, ERANGE);                    /* a success leaves errno alone */
    drain(1);
    /* pwait and pwait2 with 1 ms: parks; pwait2 with a zero timespec: a peek */
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), 2);
    size_t from_pwaits = 0;
    for (size_t i = 0; i < g_nrecs; i++)
        if (g_recs[i].type == D9_REC_POLL_START &&
            function_of(loc_addr((uint32_t)g_recs[i].a)) == FN(pwaits))
            from_pwaits++;
    assert_int_equal(from_pwaits, 3);
    close(ep);
}

/* ---- threads are distinct workers ---------------------------------------------------------- */

static void test_loop_threads_are_distinct_workers(void **state)
{
    (void)state;
    struct own_loop l[3];
    pthread_t th[3];
    drain(0);
    for (int i = 0; i < 3; i++) {
        loop_init(&l[i], 2);
        l[i].peek = 1;
        pthread_create(&th[i], NULL, own_loop, &l[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    drain(1);
    int w[3], n = 0;
    for (size_t i = 0; i < g_nrecs; i++) {
        if (g_recs[i].type != D9_REC_POLL_START)
            continue;
        int seen = 0;
        for (int k = 0; k < n; k++)
            seen |= w[k] == g_recs[i].worker;
        if (!seen) {
            assert_true(n < 3);
            w[n++] = g_recs[i].worker;
        }
    }
    assert_int_equal(n, 3);
    assert_int_equal(count(D9_REC_POLL_START, 0), 6);
    for (int i = 0; i < 3; i++)
        loop_close(&l[i]);
}

/* ---- exit() inside an iteration ends it ------------------------------------------------- */

static void test_exit_inside_an_iteration_ends_it(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int ep = epoll_create1(0);
        struct epoll_event ev;
        epoll_wait(ep, &ev, 1, 0);
        epoll_wait(ep, &ev, 1, 0);
        exit(0);                /* in the second iteration */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    DIR *d = opendir(g_dir);
    struct dirent *de;
    char path[512] = "";
    uint32_t u, p;
    uint64_t st;
    while ((de = readdir(d)))
        if (shm_region_parse_name(de->d_name, &u, &p, &st) == 0 && p == (uint32_t)pid)
            snprintf(path, sizeof path, "%s/%s", g_dir, de->d_name);
    closedir(d);
    assert_true(path[0] != 0);
    struct shm_region r;
    struct shm_geometry g;
    assert_int_equal(shm_region_map(path, (uint32_t)getuid(), &r, &g), 0);
    drain_region(&r, &g, 1);
    assert_int_equal(count(D9_REC_POLL_START, 0), 2);
    assert_int_equal(count(D9_REC_POLL_END, 0), 2);
    shm_region_close(&r);
}

/* ---- libevent: counted once, by its own kind or as iterations ------------------------ */

static int g_ticks;
static struct event *g_tick_ev;
static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    if (++g_ticks == 3)
        event_del(g_tick_ev);
}

/* A base whose persistent 1 ms timer ticks three times: every tick follows
 * a wait of the loop (a peek when the tick is already due). */
static void run_base(void)
{
    struct event_base *base = event_base_new();
    struct timeval ms = { 0, 1000 };
    g_ticks = 0;
    g_tick_ev = event_new(base, -1, EV_PERSIST, tick_cb, &g_ticks);
    event_add(g_tick_ev, &ms);
    event_base_dispatch(base);
    assert_int_equal(g_ticks, 3);
    event_free(g_tick_ev);
    event_base_free(base);
}

static void test_a_libevent_loop_is_counted_once(void **state)
{
    (void)state;
    /* only "epoll" (first: a call site is classified once, at its first
     * wait, as DIAL9_LOOP is read once at start): the loop's waits are
     * iterations located in libevent, its callbacks no polls */
    loopcfg_set_auto(LOOPCFG_EPOLL, "off");
    drain(0);
    run_base();
    drain(1);
    loopcfg_set_auto(LOOPCFG_EVENT | LOOPCFG_EPOLL, "off");
    assert_int_equal(count(D9_REC_POLL_START, ID(&g_ticks)), 0);
    size_t iters = 0;
    for (size_t i = 0; i < g_nrecs; i++) {
        if (g_recs[i].type != D9_REC_POLL_START)
            continue;
        assert_true(iteration_task(g_recs[i].task));
        Dl_info di;
        assert_true(dladdr((void *)(uintptr_t)loc_addr((uint32_t)g_recs[i].a), &di));
        assert_non_null(strstr(di.dli_fname, "libevent"));
        iters++;
    }
    assert_true(iters >= 3);

    /* "event" traced too: its callbacks are polls, its waits parks, no iteration */
    drain(0);
    run_base();
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&g_ticks)), 3);
    for (size_t i = 0; i < g_nrecs; i++)
        assert_false(g_recs[i].type == D9_REC_POLL_START && iteration_task(g_recs[i].task));
    assert_true(count(D9_REC_WORKER_PARK, 0) >= 1);
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), count(D9_REC_WORKER_UNPARK, 0));
}

int main(void)
{
    strcpy(g_dir, "/tmp/d9-test-eploop.XXXXXX");
    if (!mkdtemp(g_dir))
        return 1;
    setenv("DIAL9_SHM_DIR", g_dir, 1);
    setenv("DIAL9_COLLECTOR", "none", 1);
    setenv("DIAL9_SAMPLER", "off", 1);
    setenv("DIAL9_RING_KB", "4096", 1);
    if (d9_init() != 0)
        return 1;
    loopcfg_set_auto(LOOPCFG_EVENT | LOOPCFG_EPOLL, "off");
    g_recs = calloc(SELFRING_MAXREC, sizeof *g_recs);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iterations_are_polls_at_the_wait_site),
        cmocka_unit_test(test_ready_events_are_the_depth_and_a_zero_timeout_is_no_park),
        cmocka_unit_test(test_pwait_and_pwait2_are_waits_and_results_are_the_kernels),
        cmocka_unit_test(test_loop_threads_are_distinct_workers),
        cmocka_unit_test(test_exit_inside_an_iteration_ends_it),
        cmocka_unit_test(test_a_libevent_loop_is_counted_once),
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
