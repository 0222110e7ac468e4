/*
 * test_uv.c — libd9uv's wrappers against the real libuv: every callback is
 * called exactly once per libuv call with the program's arguments, and is
 * recorded as one poll (task = handle or request, location = the callback's
 * code address); park/unpark around the backend poll; uv_async_send as a
 * wake; uv_queue_work as a spawn and a poll on uv-threadpool; handles closed
 * or re-armed from their own callbacks; many loops on many threads; fork;
 * return values, errno and the loop's own view (uv_walk, uv_loop_close)
 * unchanged.
 *
 * The wrappers are linked into this binary and exported (-rdynamic), so they
 * interpose libuv's entry points exactly as libd9uv.so does. The process
 * traces itself into a temp DIAL9_SHM_DIR (no collector); each test drains
 * every ring first and then reads back only what its scenario recorded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>
#include "agent/d9.h"
#include "agent/uv/d9uv.h"
#include "shm/meta.h"
#include "shm/region.h"
#include "shm/ring.h"
#include "selfring.h"

static char g_dir[64];

/* ---- timers: polls, re-arm from the callback, location ------------------------ */

static int g_fired;

static void repeat_cb(uv_timer_t *t)
{
    if (++g_fired == 5)
        uv_timer_stop(t);
}

static int g_rearms;
static void rearm_cb(uv_timer_t *t)
{
    if (++g_rearms < 4)
        assert_int_equal(uv_timer_start(t, rearm_cb, 0, 0), 0);    /* from its own callback */
}

static void test_timer_callbacks_are_polls_at_their_code_address(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_timer_t a, b;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, "uvtest"), 0);
    int worker = d9_uv_worker(&loop);
    assert_true(worker >= 0);
    drain(0);
    g_fired = g_rearms = 0;
    uv_timer_init(&loop, &a);
    uv_timer_init(&loop, &b);
    assert_int_equal(uv_timer_start(&a, repeat_cb, 1, 1), 0);
    assert_int_equal(uv_timer_start(&b, rearm_cb, 0, 0), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(g_fired, 5);
    assert_int_equal(g_rearms, 4);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&a)), 5);
    assert_int_equal(count(D9_REC_POLL_END, ID(&a)), 5);
    assert_int_equal(count(D9_REC_POLL_START, ID(&b)), 4);
    assert_int_equal(count(D9_REC_POLL_END, ID(&b)), 4);
    const struct rec *r = find(D9_REC_POLL_START, ID(&a));
    assert_int_equal(r->worker, worker);
    assert_int_equal(loc_addr((uint32_t)r->a), FN(repeat_cb));
    assert_int_equal(loc_addr((uint32_t)find(D9_REC_POLL_START, ID(&b))->a), FN(rearm_cb));
    /* the timer slept in epoll: park and unpark of this loop's worker */
    assert_true(count(D9_REC_WORKER_PARK, 0) >= 1);
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), count(D9_REC_WORKER_UNPARK, 0));
    assert_int_equal(find(D9_REC_WORKER_PARK, 0)->worker, worker);
    uv_close((uv_handle_t *)&a, NULL);
    uv_close((uv_handle_t *)&b, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- close from inside the callback; the close callback frees the handle ---- */

static int g_closed;
static void free_close_cb(uv_handle_t *h)
{
    g_closed++;
    free(h);                    /* ASan: the wrapper must not touch it after this */
}
static void close_self_cb(uv_timer_t *t)
{
    uv_close((uv_handle_t *)t, free_close_cb);
}

static void test_handle_closed_and_freed_from_its_own_callbacks(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    drain(0);
    g_closed = 0;
    uint64_t ids[8];
    for (int i = 0; i < 8; i++) {
        uv_timer_t *t = malloc(sizeof *t);
        ids[i] = ID(t);
        uv_timer_init(&loop, t);
        uv_timer_start(t, close_self_cb, 0, 0);
    }
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(g_closed, 8);
    drain(1);
    for (int i = 0; i < 8; i++) {
        /* the timer callback, then the close callback: two polls of the same task */
        assert_int_equal(count(D9_REC_POLL_START, ids[i]), 2);
        assert_int_equal(count(D9_REC_POLL_END, ids[i]), 2);
    }
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- async from another thread: a wake; idle/prepare/check ------------------- */

static uv_async_t g_async;
static int g_async_calls, g_idle, g_prep, g_check;
static void async_cb(uv_async_t *h)
{
    g_async_calls++;
    uv_close((uv_handle_t *)h, NULL);
}
static void *sender(void *arg)
{
    (void)arg;
    assert_int_equal(uv_async_send(&g_async), 0);
    return NULL;
}
static void idle_cb(uv_idle_t *h) { if (++g_idle == 3) uv_idle_stop(h); }
static void prep_cb(uv_prepare_t *h) { g_prep++; uv_prepare_stop(h); }
static void check_cb(uv_check_t *h) { g_check++; uv_check_stop(h); }

static void test_async_send_is_a_wake_of_the_loops_worker(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_idle_t idle;
    uv_prepare_t prep;
    uv_check_t chk;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    int worker = d9_uv_worker(&loop);
    drain(0);
    g_async_calls = g_idle = g_prep = g_check = 0;
    assert_int_equal(uv_async_init(&loop, &g_async, async_cb), 0);
    uv_idle_init(&loop, &idle);
    uv_prepare_init(&loop, &prep);
    uv_check_init(&loop, &chk);
    uv_idle_start(&idle, idle_cb);
    uv_prepare_start(&prep, prep_cb);
    uv_check_start(&chk, check_cb);
    pthread_t th;
    pthread_create(&th, NULL, sender, NULL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    pthread_join(th, NULL);
    assert_int_equal(g_async_calls, 1);
    assert_int_equal(g_idle, 3);
    assert_int_equal(g_prep, 1);
    assert_int_equal(g_check, 1);
    drain(1);
    const struct rec *w = NULL;
    for (size_t i = 0; i < g_nrecs; i++)
        if (g_recs[i].type == D9_REC_WAKE && g_recs[i].a == ID(&g_async))
            w = &g_recs[i];
    assert_non_null(w);
    assert_int_equal(w->worker, worker);
    assert_int_equal(count(D9_REC_POLL_START, ID(&g_async)), 1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&idle)), 3);
    assert_int_equal(count(D9_REC_POLL_START, ID(&prep)), 1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&chk)), 1);
    uv_close((uv_handle_t *)&idle, NULL);
    uv_close((uv_handle_t *)&prep, NULL);
    uv_close((uv_handle_t *)&chk, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- uv_queue_work: spawn and poll on uv-threadpool, after_work on the loop --- */

static _Atomic int g_work, g_after;
static void work_cb(uv_work_t *r) { (void)r; atomic_fetch_add(&g_work, 1); }
static void after_cb(uv_work_t *r, int status)
{
    (void)r;
    assert_int_equal(status, 0);
    atomic_fetch_add(&g_after, 1);
}

static void test_queue_work_is_a_spawn_and_a_poll_on_the_threadpool(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_work_t reqs[6];
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    int worker = d9_uv_worker(&loop);
    drain(0);
    atomic_store(&g_work, 0);
    atomic_store(&g_after, 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(uv_queue_work(&loop, &reqs[i], work_cb, after_cb), 0);
    assert_int_equal(uv_queue_work(&loop, &reqs[0], NULL, after_cb), UV_EINVAL);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(atomic_load(&g_work), 6);
    assert_int_equal(atomic_load(&g_after), 6);
    drain(1);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(count(D9_REC_TASK_SPAWN, ID(&reqs[i])), 1);
        assert_int_equal(count(D9_REC_TASK_TERMINATE, ID(&reqs[i])), 1);
        /* one poll on the pool (work), one on the loop (after_work) */
        assert_int_equal(count(D9_REC_POLL_START, ID(&reqs[i])), 2);
        assert_int_equal(count(D9_REC_POLL_END, ID(&reqs[i])), 2);
        const struct rec *s = find(D9_REC_TASK_SPAWN, ID(&reqs[i]));
        assert_int_equal(loc_addr((uint32_t)s->a), FN(work_cb));
        int pool = 0, onloop = 0;
        for (size_t k = 0; k < g_nrecs; k++)
            if (g_recs[k].type == D9_REC_POLL_START && g_recs[k].task == ID(&reqs[i])) {
                pool += g_recs[k].rt == s->rt;
                onloop += g_recs[k].rt != s->rt && g_recs[k].worker == worker;
            }
        assert_int_equal(pool, 1);
        assert_int_equal(onloop, 1);
    }
    /* libuv's own completion handle (uv_async_init inside uv_loop_init) is not wrapped */
    struct d9_uv_stats st;
    d9_uv_get_stats(&st);
    assert_true(st.callbacks_internal >= 1);
    assert_int_equal(st.callbacks_untraced, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- streams: alloc/read, write, shutdown, close --------------------------- */

static int g_reads, g_writes, g_shut, g_allocs, g_eof;
static char g_rbuf[256];
static size_t g_rlen;
static void alloc_cb(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
    (void)h;
    (void)sz;
    g_allocs++;
    *b = uv_buf_init(g_rbuf + g_rlen, (unsigned)(sizeof g_rbuf - g_rlen));
}
static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    g_reads++;
    if (n > 0) {
        g_rlen += (size_t)n;
    } else if (n == UV_EOF) {
        g_eof++;
        uv_close((uv_handle_t *)s, NULL);
    }
}
static void write_cb(uv_write_t *r, int status) { (void)r; assert_int_equal(status, 0); g_writes++; }
static void shutdown_cb(uv_shutdown_t *r, int status)
{
    assert_int_equal(status, 0);
    g_shut++;
    uv_close((uv_handle_t *)r->handle, NULL);
}

static void test_stream_read_write_shutdown_are_polls_of_their_objects(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_pipe_t a, b;
    uv_write_t wr;
    uv_shutdown_t sh;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    drain(0);
    g_reads = g_writes = g_shut = g_allocs = g_eof = 0;
    g_rlen = 0;
    uv_pipe_init(&loop, &a, 0);
    uv_pipe_init(&loop, &b, 0);
    uv_pipe_open(&a, sv[0]);
    uv_pipe_open(&b, sv[1]);
    assert_int_equal(uv_read_start((uv_stream_t *)&b, alloc_cb, read_cb), 0);
    assert_int_equal(uv_read_start((uv_stream_t *)&b, alloc_cb, read_cb), UV_EALREADY);
    uv_buf_t buf = uv_buf_init((char *)"hello libuv", 11);
    assert_int_equal(uv_write(&wr, (uv_stream_t *)&a, &buf, 1, write_cb), 0);
    assert_int_equal(uv_shutdown(&sh, (uv_stream_t *)&a, shutdown_cb), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(g_writes, 1);
    assert_int_equal(g_shut, 1);
    assert_int_equal(g_eof, 1);
    assert_int_equal(g_rlen, 11);
    assert_memory_equal(g_rbuf, "hello libuv", 11);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&wr)), 1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&sh)), 1);
    /* each read callback and each alloc callback is a poll of the stream */
    assert_int_equal(count(D9_REC_POLL_START, ID(&b)), (size_t)(g_reads + g_allocs));
    assert_int_equal(count(D9_REC_POLL_END, ID(&b)), (size_t)(g_reads + g_allocs));
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- fs request with a callback; synchronous ones pass through -------------- */

static int g_fs;
static void fs_cb(uv_fs_t *r)
{
    g_fs++;
    assert_int_equal(r->result, 0);
    uv_fs_req_cleanup(r);
}

static void test_fs_callback_is_a_poll_and_sync_calls_are_untouched(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_fs_t req, sync;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    drain(0);
    g_fs = 0;
    assert_int_equal(uv_fs_stat(&loop, &req, "/", fs_cb), 0);
    assert_int_equal(uv_fs_stat(&loop, &sync, "/nonexistent-d9uv", NULL), UV_ENOENT);
    uv_fs_req_cleanup(&sync);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(g_fs, 1);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&req)), 1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&sync)), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- return values, errno and the loop's view are unchanged ------------------ */

static void walk_cb(uv_handle_t *h, void *arg) { (void)h; ++*(int *)arg; }
static void never_cb(uv_timer_t *t) { (void)t; fail_msg("a stopped timer fired"); }

static void test_errno_return_values_and_walk_are_unchanged(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_timer_t t;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    uv_timer_init(&loop, &t);
    errno = 4242;
    assert_int_equal(uv_timer_start(&t, never_cb, 100000, 0), 0);   /* first registration */
    assert_int_equal(errno, 4242);
    assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 1);              /* still alive */
    assert_int_equal(errno, 4242);
    int n = 0;
    uv_walk(&loop, walk_cb, &n);
    assert_int_equal(n, 1);                                         /* no handle of ours */
    assert_int_equal(uv_loop_close(&loop), UV_EBUSY);
    uv_timer_stop(&t);
    assert_int_equal(uv_loop_alive(&loop), 0);
    uv_close((uv_handle_t *)&t, NULL);
    assert_int_equal(uv_timer_start(&t, never_cb, 0, 0), UV_EINVAL); /* closing */
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(d9_uv_worker(&loop), -ENOENT);                 /* forgotten at close */
}

/* ---- untrace: callbacks still run, nothing is recorded ----------------------- */

static int g_untraced_calls;
static void untraced_cb(uv_timer_t *t) { (void)t; g_untraced_calls++; }

static void test_untraced_loop_runs_its_callbacks_unrecorded(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_timer_t t;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    assert_int_equal(d9_uv_untrace(&loop), 0);
    drain(0);
    g_untraced_calls = 0;
    uv_timer_init(&loop, &t);
    uv_timer_start(&t, untraced_cb, 1, 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    assert_int_equal(g_untraced_calls, 1);
    drain(1);
    assert_int_equal(count(D9_REC_POLL_START, ID(&t)), 0);
    assert_int_equal(count(D9_REC_WORKER_PARK, 0), 0);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- many loops on many threads ------------------------------------------------ */

#define NTHREADS 6
#define NTICKS 50
struct th_loop {
    uv_loop_t loop;
    uv_timer_t t;
    int ticks, worker;
};
static void tick_cb(uv_timer_t *t)
{
    struct th_loop *l = (struct th_loop *)((char *)t - offsetof(struct th_loop, t));
    if (++l->ticks == NTICKS)
        uv_close((uv_handle_t *)t, NULL);
}
static void *loop_thread(void *arg)
{
    struct th_loop *l = arg;
    uv_loop_init(&l->loop);
    d9_uv_trace(&l->loop, "uvthreads");
    l->worker = d9_uv_worker(&l->loop);
    uv_timer_init(&l->loop, &l->t);
    uv_timer_start(&l->t, tick_cb, 0, 1);
    uv_run(&l->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void test_loops_on_threads_are_distinct_workers(void **state)
{
    (void)state;
    struct th_loop *l = calloc(NTHREADS, sizeof *l);
    pthread_t th[NTHREADS];
    drain(0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, loop_thread, &l[i]);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    drain(1);
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(l[i].ticks, NTICKS);
        assert_true(l[i].worker >= 0);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(l[i].worker, l[j].worker);
        /* every tick and the close: polls of this timer on this loop's worker only */
        size_t n = 0;
        for (size_t k = 0; k < g_nrecs; k++)
            if (g_recs[k].type == D9_REC_POLL_START && g_recs[k].task == ID(&l[i].t)) {
                assert_int_equal(g_recs[k].worker, l[i].worker);
                n++;
            }
        assert_int_equal(n, NTICKS);
        assert_int_equal(uv_loop_close(&l[i].loop), 0);
    }
    free(l);
}

/* ---- fork: the child's loop records into the child's own region --------------- */

static int g_child_ticks;
static void child_tick(uv_timer_t *t)
{
    if (++g_child_ticks == 3)
        uv_close((uv_handle_t *)t, NULL);
}

static void test_forked_child_traces_its_loop_into_its_own_region(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(d9_uv_trace(&loop, NULL), 0);
    int worker = d9_uv_worker(&loop);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uv_timer_t t;
        if (uv_loop_fork(&loop) != 0)
            _exit(2);
        uv_timer_init(&loop, &t);
        uv_timer_start(&t, child_tick, 0, 1);
        uv_run(&loop, UV_RUN_DEFAULT);
        if (g_child_ticks != 3)
            _exit(3);
        d9_stats st;
        d9_get_stats(&st);
        /* the child's own region: one ring (this thread), nothing lost */
        _exit(st.rings_in_use == 1 && st.lost == 0 ? 0 : 4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* the child's region (named by its pid): its timer's polls, same worker id */
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
    size_t polls = 0;
    for (size_t k = 0; k < g_nrecs; k++)
        if (g_recs[k].type == D9_REC_POLL_START) {
            assert_int_equal(g_recs[k].worker, worker);
            polls++;
        }
    assert_int_equal(polls, 3);         /* three ticks (the close has no callback) */
    shm_region_close(&r);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    strcpy(g_dir, "/tmp/d9-test-uv.XXXXXX");
    if (!mkdtemp(g_dir))
        return 1;
    setenv("DIAL9_SHM_DIR", g_dir, 1);
    setenv("DIAL9_COLLECTOR", "none", 1);
    setenv("DIAL9_SAMPLER", "off", 1);
    setenv("DIAL9_RING_KB", "4096", 1);
    if (d9_init() != 0)
        return 1;
    g_recs = calloc(SELFRING_MAXREC, sizeof *g_recs);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forked_child_traces_its_loop_into_its_own_region),
        cmocka_unit_test(test_timer_callbacks_are_polls_at_their_code_address),
        cmocka_unit_test(test_handle_closed_and_freed_from_its_own_callbacks),
        cmocka_unit_test(test_async_send_is_a_wake_of_the_loops_worker),
        cmocka_unit_test(test_stream_read_write_shutdown_are_polls_of_their_objects),
        cmocka_unit_test(test_fs_callback_is_a_poll_and_sync_calls_are_untouched),
        cmocka_unit_test(test_errno_return_values_and_walk_are_unchanged),
        cmocka_unit_test(test_untraced_loop_runs_its_callbacks_unrecorded),
        cmocka_unit_test(test_loops_on_threads_are_distinct_workers),
        cmocka_unit_test(test_queue_work_is_a_spawn_and_a_poll_on_the_threadpool),
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
