/*
 * test_serve_pool.c — d9 serve's workers (serve_pool.h) on an empty store:
 * a job is answered by serve_api; a job whose client closed its socket is
 * not run (status 0); heavy jobs never hold the last worker, so a light job
 * queued behind them is answered while they run; stopping ends queued jobs
 * with status 0; flame graphs, findings and the events table are heavy.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/serve/serve_pool.h"
#include "collector/store/idx.h"

#define WAIT_MS 10000

struct tjob {
    struct serve_job j;
    sem_t done;             /* posted by done() */
    sem_t *hold;            /* done() waits on it first, when set: the worker stays busy */
};

static char dir[64];

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/d9-pool-XXXXXX");
    assert_non_null(mkdtemp(dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, dir), 0);
    idx_close(x);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void tdone(struct serve_job *j)
{
    struct tjob *t = j->arg;
    if (t->hold)
        sem_wait(t->hold);
    sem_post(&t->done);
}

static void tjob_init(struct tjob *t, const char *path, int fd)
{
    memset(t, 0, sizeof *t);
    snprintf(t->j.path, sizeof t->j.path, "%s", path);
    serve_api_params_init(&t->j.p);
    t->j.heavy = serve_pool_is_heavy(path);
    t->j.fd = fd;
    t->j.done = tdone;
    t->j.arg = t;
    sem_init(&t->done, 0, 0);
}

/* true when t finished within ms */
static bool finished(struct tjob *t, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (sem_timedwait(&t->done, &ts) != 0)
        if (errno != EINTR)
            return false;
    return true;
}

static void a_job_is_answered(void **st)
{
    (void)st;
    struct serve_pool *pl;
    char why[256];
    assert_int_equal(serve_pool_start(&pl, dir, 2, why, sizeof why), 0);
    struct tjob t;
    tjob_init(&t, "/api/processes", -1);
    serve_pool_submit(pl, &t.j);
    assert_true(finished(&t, WAIT_MS));
    assert_int_equal(t.j.status, 200);
    assert_non_null(strstr(t.j.body, "\"processes\""));
    free(t.j.body);
    serve_pool_stop(pl);
}

static void a_job_whose_client_left_is_not_run(void **st)
{
    (void)st;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);                           /* the browser aborted the fetch */
    struct serve_pool *pl;
    char why[256];
    assert_int_equal(serve_pool_start(&pl, dir, 1, why, sizeof why), 0);
    struct tjob t;
    tjob_init(&t, "/api/processes", sv[0]);
    serve_pool_submit(pl, &t.j);
    assert_true(finished(&t, WAIT_MS));
    assert_int_equal(t.j.status, 0);
    assert_null(t.j.body);
    /* a client still there is answered */
    int sv2[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2), 0);
    struct tjob u;
    tjob_init(&u, "/api/processes", sv2[0]);
    serve_pool_submit(pl, &u.j);
    assert_true(finished(&u, WAIT_MS));
    assert_int_equal(u.j.status, 200);
    free(u.j.body);
    serve_pool_stop(pl);
    close(sv[0]);
    close(sv2[0]);
    close(sv2[1]);
}

static void heavy_jobs_never_hold_the_last_worker(void **st)
{
    (void)st;
    struct serve_pool *pl;
    char why[256];
    assert_int_equal(serve_pool_start(&pl, dir, 2, why, sizeof why), 0);
    sem_t hold;
    sem_init(&hold, 0, 0);
    struct tjob h1, h2, l;
    tjob_init(&h1, "/api/flame", -1);
    tjob_init(&h2, "/api/flame", -1);
    tjob_init(&l, "/api/processes", -1);
    h1.hold = &hold;                        /* h1's worker stays busy until posted */
    serve_pool_submit(pl, &h1.j);
    serve_pool_submit(pl, &h2.j);           /* heavy: waits, one worker must stay free */
    serve_pool_submit(pl, &l.j);            /* light: taken past h2 by the free worker */
    assert_true(finished(&l, WAIT_MS));
    assert_int_equal(l.j.status, 200);
    assert_false(finished(&h2, 200));       /* still queued behind h1 */
    sem_post(&hold);
    assert_true(finished(&h1, WAIT_MS));
    assert_true(finished(&h2, WAIT_MS));
    assert_int_equal(h2.j.status, 400);     /* no pid: the API's answer, so it ran */
    free(h1.j.body);
    free(h2.j.body);
    free(l.j.body);
    serve_pool_stop(pl);
    sem_destroy(&hold);
}

static void stop_ends_queued_jobs_unanswered(void **st)
{
    (void)st;
    struct serve_pool *pl;
    char why[256];
    assert_int_equal(serve_pool_start(&pl, dir, 1, why, sizeof why), 0);
    sem_t hold;
    sem_init(&hold, 0, 0);
    struct tjob busy, queued;
    tjob_init(&busy, "/api/processes", -1);
    tjob_init(&queued, "/api/processes", -1);
    busy.hold = &hold;
    serve_pool_submit(pl, &busy.j);
    serve_pool_submit(pl, &queued.j);
    assert_false(finished(&queued, 100));
    sem_post(&hold);                        /* stop joins the worker: let it finish */
    serve_pool_stop(pl);
    assert_true(finished(&busy, WAIT_MS));
    assert_true(finished(&queued, WAIT_MS));
    assert_int_equal(busy.j.status, 200);
    assert_true(queued.j.status == 0 || queued.j.status == 200);
    free(busy.j.body);
    free(queued.j.body);
    sem_destroy(&hold);
}

/* what reads every record of its window is heavy (never holds the last
 * worker); what the index answers or bounds is light */
static void reading_whole_windows_is_heavy(void **st)
{
    (void)st;
    assert_true(serve_pool_is_heavy("/api/flame"));
    assert_true(serve_pool_is_heavy("/api/findings"));
    assert_true(serve_pool_is_heavy("/api/events"));
    assert_false(serve_pool_is_heavy("/api/timeline"));
    assert_false(serve_pool_is_heavy("/api/processes"));
}

static void bad_worker_counts_and_stores_are_refused(void **st)
{
    (void)st;
    struct serve_pool *pl;
    char why[256];
    assert_int_equal(serve_pool_start(&pl, dir, 0, why, sizeof why), -EINVAL);
    assert_int_equal(serve_pool_start(&pl, dir, SERVE_POOL_WORKERS_MAX + 1, why, sizeof why),
                     -EINVAL);
    assert_true(serve_pool_start(&pl, "/nonexistent/store", 2, why, sizeof why) < 0);
    assert_null(pl);
    assert_true(why[0] != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_job_is_answered),
        cmocka_unit_test(a_job_whose_client_left_is_not_run),
        cmocka_unit_test(heavy_jobs_never_hold_the_last_worker),
        cmocka_unit_test(stop_ends_queued_jobs_unanswered),
        cmocka_unit_test(bad_worker_counts_and_stores_are_refused),
        cmocka_unit_test(reading_whole_windows_is_heavy),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
