/*
 * test_q_sched.c — q_sched.c: the one definition of a worker's scheduling
 * facts. Every sampled park and unpark is a wait sample (an unsampled one is
 * not); parked time is the closed park intervals; busy time is the time in
 * polls, over a span that lasts to the end of the process's records; a
 * worker that only polls (a saturated pool) is a worker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "collector/query/q_sched.h"

static const struct q_rec_src src = { .process_id = 1, .pid = 10, .tid = 11, .ring = 0,
                                      .generation = 1 };

static void worker(struct q_sched *s, uint16_t type, uint64_t ts, uint16_t wk, uint32_t flags,
                   uint64_t cpu, uint64_t wait)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, ts }, 1, wk, flags, cpu, wait };
    assert_int_equal(q_sched_feed(s, &src, &r.h, sizeof r), 0);
}

static void poll_start(struct q_sched *s, uint64_t ts, uint16_t rt, uint16_t wk, uint64_t task)
{
    struct d9_rec_poll_start a = { { sizeof a, D9_REC_POLL_START, 0, ts }, task, 0, rt, wk };
    assert_int_equal(q_sched_feed(s, &src, &a.h, sizeof a), 0);
}

static void poll_end(struct q_sched *s, uint64_t ts, uint16_t rt, uint16_t wk, uint64_t task)
{
    struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, ts }, task, rt, wk, 0 };
    assert_int_equal(q_sched_feed(s, &src, &e.h, sizeof e), 0);
}

static void poll(struct q_sched *s, uint64_t start, uint64_t end, uint16_t wk)
{
    poll_start(s, start, 1, wk, 7);
    poll_end(s, end, 1, wk, 7);
}

static void park_and_unpark_samples_are_both_waits(void **state)
{
    (void)state;
    struct q_sched *s;
    assert_int_equal(q_sched_new(&s), 0);
    poll(s, 100, 600, 0);                                   /* a long, preempted poll */
    worker(s, D9_REC_WORKER_PARK, 700, 0, 0, 5000, 400);    /* its preemption: 400 */
    worker(s, D9_REC_WORKER_UNPARK, 1700, 0, 0, 5100, 30);  /* the wake-up: 30 */
    worker(s, D9_REC_WORKER_PARK, 1800, 0, D9_WORKER_UNSAMPLED, 0, 0);
    worker(s, D9_REC_WORKER_UNPARK, 2000, 0, 0, 5300, 7);
    poll(s, 2100, 2200, 0);
    size_t n;
    const struct q_sched_worker *w = q_sched_workers(s, &n);
    assert_non_null(w);
    assert_int_equal(n, 1);
    assert_int_equal(w->polls, 2);
    assert_int_equal(w->parks, 2);
    assert_int_equal(w->unparks, 2);
    assert_int_equal(w->waits, 3);                          /* the unsampled park is none */
    assert_int_equal(w->wait_sum_ns, 437);
    assert_int_equal(w->wait_max_ns, 400);
    assert_int_equal(w->parked_ns, 1000 + 200);
    assert_int_equal(w->span_ns, 2100);                     /* 100 .. 2200 */
    assert_int_equal(w->busy_ns, 500 + 100);                /* its two polls */
    assert_int_equal(w->cpu_ns, 300);                       /* 5300 - 5000 */
    uint64_t ns;
    struct d9_rec_worker u = { { sizeof u, D9_REC_WORKER_UNPARK, 0, 1 }, 1, 0,
                               D9_WORKER_UNSAMPLED, 0, 0 };
    assert_false(q_sched_wait(&u.h, sizeof u, &ns));
    u.h.type = D9_REC_WORKER_PARK;
    u.flags = 0;
    u.sched_wait_ns = 9;
    assert_true(q_sched_wait(&u.h, sizeof u, &ns));
    assert_int_equal(ns, 9);
    q_sched_free(s);
}

static void a_worker_that_only_polls_is_a_worker(void **state)
{
    (void)state;
    struct q_sched *s;
    assert_int_equal(q_sched_new(&s), 0);
    poll(s, 100, 300, 3);
    poll(s, 300, 900, 3);
    size_t n;
    const struct q_sched_worker *w = q_sched_workers(s, &n);
    assert_int_equal(n, 1);
    assert_int_equal(w->worker, 3);
    assert_int_equal(w->polls, 2);
    assert_int_equal(w->waits, 0);
    assert_int_equal(w->busy_ns, 800);
    assert_true(w->busy_pct > 99.9);
    q_sched_free(s);
}

#define MS 1000000ull

/* A uv-threadpool thread that ran one 5 ms job in a process that lived
 * 1.3 s: busy 5 ms of the 1.2 s from its job to the process's last record,
 * not 100 % of the 5 ms its own records span. */
static void a_pool_thread_with_one_job_is_busy_for_that_job_only(void **state)
{
    (void)state;
    struct q_sched *s;
    assert_int_equal(q_sched_new(&s), 0);
    worker(s, D9_REC_WORKER_PARK, 1 * MS, 0, 0, 0, 0);      /* the loop: runtime 1 */
    poll_start(s, 100 * MS, 2, 0, 42);                      /* the pool: runtime 2 */
    poll_end(s, 105 * MS, 2, 0, 42);
    worker(s, D9_REC_WORKER_UNPARK, 1300 * MS, 0, 0, 0, 0);
    size_t n;
    const struct q_sched_worker *w = q_sched_workers(s, &n);
    assert_int_equal(n, 2);
    assert_int_equal(w[1].runtime, 2);
    assert_int_equal(w[1].polls, 1);
    assert_int_equal(w[1].busy_ns, 5 * MS);
    assert_int_equal(w[1].span_ns, 1200 * MS);
    assert_true(w[1].busy_pct > 0.41 && w[1].busy_pct < 0.42);
    assert_int_equal(w[0].busy_ns, 0);                      /* parked the whole time */
    assert_int_equal(w[0].parked_ns, 1299 * MS);
    q_sched_free(s);
}

/* Nested polls (block_on inside a poll) count once; a poll whose end was
 * dropped (the same task starts again) adds nothing; one open at the end
 * adds nothing. */
static void busy_time_counts_the_outermost_polls_that_ended(void **state)
{
    (void)state;
    struct q_sched *s;
    assert_int_equal(q_sched_new(&s), 0);
    poll_start(s, 100, 1, 0, 1);
    poll_start(s, 150, 1, 0, 2);                            /* nested */
    poll_end(s, 250, 1, 0, 2);
    poll_end(s, 400, 1, 0, 1);                              /* 300 */
    poll_start(s, 500, 1, 0, 3);                            /* its end is lost */
    poll_start(s, 600, 1, 0, 3);
    poll_end(s, 650, 1, 0, 3);                              /* 50 */
    poll_start(s, 700, 1, 0, 4);                            /* open at the end */
    size_t n;
    const struct q_sched_worker *w = q_sched_workers(s, &n);
    assert_int_equal(n, 1);
    assert_int_equal(w->polls, 5);
    assert_int_equal(w->busy_ns, 300 + 50);
    assert_int_equal(w->span_ns, 600);
    q_sched_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_pool_thread_with_one_job_is_busy_for_that_job_only),
        cmocka_unit_test(busy_time_counts_the_outermost_polls_that_ended),
        cmocka_unit_test(park_and_unpark_samples_are_both_waits),
        cmocka_unit_test(a_worker_that_only_polls_is_a_worker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
