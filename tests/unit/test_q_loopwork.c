/*
 * test_q_loopwork.c — q_loopwork.c: the one definition of loop work. A
 * stretch of a loop worker's thread outside polls and the wait, from the
 * record that leaves one to the record that enters one, >= the minimum, is
 * an interval with the thread's CPU samples inside; nested polls, short
 * stretches, threads that never park, stretches open at the start or the
 * end, and stretches cut by a gap are not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "collector/query/q_loopwork.h"

#define MS 1000000ull

static struct q_rec_src src = { .process_id = 1, .pid = 10, .tid = 11, .ring = 2,
                                .generation = 3 };
static struct q_loopwork_iv got[16];
static size_t ngot;
static uint64_t got_ips[16][4];

static void feed(struct q_loopwork *w, const struct d9_rec_hdr *h, size_t len)
{
    struct q_loopwork_iv iv;
    int r = q_loopwork_feed(w, &src, h, len, &iv);
    assert_true(r == 0 || r == 1);
    if (r == 1) {
        if (ngot < 16) {
            for (uint32_t i = 0; i < iv.nips && i < 4; i++)
                got_ips[ngot][i] = iv.ips[i];
            got[ngot] = iv;
        }
        ngot++;
    }
}

static void worker(struct q_loopwork *w, uint16_t type, uint64_t ts)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, ts }, 4, 5, 0, 0, 0 };
    feed(w, &r.h, sizeof r);
}
static void park(struct q_loopwork *w, uint64_t ts) { worker(w, D9_REC_WORKER_PARK, ts); }
static void unpark(struct q_loopwork *w, uint64_t ts) { worker(w, D9_REC_WORKER_UNPARK, ts); }

static void poll_start(struct q_loopwork *w, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start a = { { sizeof a, D9_REC_POLL_START, 0, ts }, task, 0, 4, 5 };
    feed(w, &a.h, sizeof a);
}
static void poll_end(struct q_loopwork *w, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, ts }, task, 4, 5, 0 };
    feed(w, &e.h, sizeof e);
}
static void poll(struct q_loopwork *w, uint64_t start, uint64_t end)
{
    poll_start(w, start, 7);
    poll_end(w, end, 7);
}
static void sample(struct q_loopwork *w, uint64_t ts, uint32_t tid, uint64_t ip)
{
    struct { struct d9_rec_stack s; uint64_t ip; } r = {
        { { sizeof r, D9_REC_CPU_SAMPLE, 0, ts }, tid, 1, 0, 10 * MS }, ip };
    struct q_rec_src perf = src;
    perf.tid = 99;              /* the collector's pseudo thread: the record names the tid */
    struct q_loopwork_iv iv;
    assert_int_equal(q_loopwork_feed(w, &perf, &r.s.h, sizeof r, &iv), 0);
}

static struct q_loopwork *fresh(uint64_t min)
{
    struct q_loopwork *w;
    assert_int_equal(q_loopwork_new(&w, min), 0);
    ngot = 0;
    memset(got_ips, 0, sizeof got_ips);
    src.tid = 11;
    return w;
}

/* uv_run(ONCE); work; uv_run(ONCE): the work between a callback and the
 * next wait, and between a wake-up and the next callback */
static void work_between_runs_is_loop_work(void **state)
{
    (void)state;
    struct q_loopwork *w = fresh(MS);
    park(w, 0);
    unpark(w, 5 * MS);
    poll(w, 5 * MS + 100, 6 * MS);          /* the timer's callback */
    sample(w, 20 * MS, 11, 0xabc);          /* the work, on the loop's thread */
    sample(w, 30 * MS, 12, 0xdef);          /* another thread: not its work */
    sample(w, 40 * MS, 11, 0xabc);
    park(w, 56 * MS);                       /* the next uv_run waits */
    assert_int_equal(ngot, 1);
    assert_int_equal(got[0].start_ns, 6 * MS);
    assert_int_equal(got[0].end_ns, 56 * MS);
    assert_int_equal(got[0].pid, 10);
    assert_int_equal(got[0].tid, 11);
    assert_int_equal(got[0].ring, 2);
    assert_int_equal(got[0].generation, 3);
    assert_int_equal(got[0].runtime, 4);
    assert_int_equal(got[0].worker, 5);
    assert_int_equal(got[0].samples, 2);
    assert_int_equal(got[0].nips, 2);
    assert_int_equal(got_ips[0][0], 0xabc);
    unpark(w, 60 * MS);
    sample(w, 65 * MS, 11, 0x123);
    poll(w, 75 * MS, 76 * MS);              /* from the wake-up to a callback */
    assert_int_equal(ngot, 2);
    assert_int_equal(got[1].start_ns, 60 * MS);
    assert_int_equal(got[1].end_ns, 75 * MS);
    assert_int_equal(got[1].samples, 1);
    assert_int_equal(got_ips[1][0], 0x123);
    q_loopwork_free(w);
}

static void short_stretches_and_callbacks_are_not(void **state)
{
    (void)state;
    struct q_loopwork *w = fresh(MS);
    park(w, 0);
    unpark(w, 10 * MS);
    poll(w, 10 * MS + 500, 30 * MS);        /* a long callback: a poll, not loop work */
    poll(w, 30 * MS + 900, 31 * MS);        /* 0.9 ms between: under the minimum */
    poll_start(w, 31 * MS + 500, 8);        /* nested polls: outside only after the outer */
    poll_start(w, 33 * MS, 9);
    poll_end(w, 34 * MS, 9);
    poll_end(w, 50 * MS, 8);
    park(w, 50 * MS + 999999);              /* 0.999999 ms */
    assert_int_equal(ngot, 0);
    unpark(w, 60 * MS);
    park(w, 61 * MS);                       /* exactly the minimum: counts */
    assert_int_equal(ngot, 1);
    assert_int_equal(got[0].end_ns - got[0].start_ns, MS);
    q_loopwork_free(w);
}

static void a_thread_that_never_parks_has_none(void **state)
{
    (void)state;
    struct q_loopwork *w = fresh(MS);       /* a thread pool: jobs as polls, waits unrecorded */
    poll(w, 0, 5 * MS);
    poll(w, 100 * MS, 105 * MS);
    poll(w, 200 * MS, 205 * MS);
    assert_int_equal(ngot, 0);
    park(w, 300 * MS);                      /* its first park makes it a loop worker */
    assert_int_equal(ngot, 1);
    assert_int_equal(got[0].start_ns, 205 * MS);
    q_loopwork_free(w);
}

static void stretches_not_known_whole_are_left_out(void **state)
{
    (void)state;
    struct q_loopwork *w = fresh(MS);
    park(w, 50 * MS);                       /* open at the start: unknown since when */
    assert_int_equal(ngot, 0);
    unpark(w, 60 * MS);
    struct q_loopwork_iv iv;
    assert_int_equal(q_loopwork_feed(w, &src, NULL, 0, &iv), 0);   /* a gap */
    poll(w, 100 * MS, 101 * MS);
    assert_int_equal(ngot, 0);              /* not across the gap */
    park(w, 150 * MS);
    assert_int_equal(ngot, 1);              /* after the poll that followed it: known */
    assert_int_equal(got[0].start_ns, 101 * MS);
    unpark(w, 200 * MS);                    /* open at the end: never delivered */
    assert_int_equal(ngot, 1);
    q_loopwork_free(w);
}

static void threads_are_apart(void **state)
{
    (void)state;
    struct q_loopwork *w = fresh(0);        /* 0: the default minimum */
    park(w, 0);
    unpark(w, MS);
    src.tid = 12;
    park(w, 2 * MS);
    unpark(w, 3 * MS);
    src.tid = 11;
    park(w, 3 * MS + Q_LOOPWORK_DEF_MIN_NS / 2);    /* thread 11: 2.5 ms */
    src.tid = 12;
    park(w, 3 * MS + Q_LOOPWORK_DEF_MIN_NS / 2);    /* thread 12: 0.5 ms */
    assert_int_equal(ngot, 1);
    assert_int_equal(got[0].tid, 11);
    assert_int_equal(got[0].start_ns, MS);
    assert_int_equal(got[0].end_ns - got[0].start_ns, 2 * MS + Q_LOOPWORK_DEF_MIN_NS / 2);
    /* many threads: the table grows and keeps each one's state */
    for (uint32_t t = 100; t < 300; t++) {
        src.tid = t;
        unpark(w, 10 * MS);
    }
    for (uint32_t t = 100; t < 300; t++) {
        src.tid = t;
        park(w, 20 * MS);
    }
    assert_int_equal(ngot, 1 + 200);        /* each one's unpark .. park */
    for (uint32_t t = 100; t < 110; t++) {
        src.tid = t;
        unpark(w, 30 * MS);
        poll_start(w, 30 * MS + 10, 1);     /* too short */
        poll_end(w, 31 * MS, 1);
    }
    for (uint32_t t = 100; t < 300; t++) {
        src.tid = t;
        park(w, 40 * MS);                   /* only the ten that left a poll */
    }
    assert_int_equal(ngot, 1 + 200 + 10);
    q_loopwork_free(w);
}

static void short_records_are_ignored(void **state)
{
    (void)state;
    struct q_loopwork *w = fresh(MS);
    park(w, 0);
    unpark(w, MS);
    struct d9_rec_worker r = { { sizeof r, D9_REC_WORKER_PARK, 0, 100 * MS }, 4, 5, 0, 0, 0 };
    struct q_loopwork_iv iv;
    assert_int_equal(q_loopwork_feed(w, &src, &r.h, sizeof r - 8, &iv), 0);
    assert_int_equal(q_loopwork_feed(w, &src, &r.h, 4, &iv), 0);
    struct d9_rec_stack s = { { sizeof s, D9_REC_CPU_SAMPLE, 0, 50 * MS }, 11, 1, 0, 1 };
    assert_int_equal(q_loopwork_feed(w, &src, &s.h, sizeof s, &iv), 0);    /* no frame */
    park(w, 100 * MS);
    assert_int_equal(ngot, 1);
    assert_int_equal(got[0].samples, 1);
    assert_int_equal(got[0].nips, 0);
    q_loopwork_free(w);
}

/* A look-back's state carried into the scan after it: a stretch open at
 * the boundary ends whole; open_since says where it started. */
static void carried_state_ends_a_stretch_whole(void **state)
{
    (void)state;
    struct q_loopwork *before = fresh(MS), *w;
    assert_int_equal(q_loopwork_new(&w, MS), 0);
    park(before, 1 * MS);
    unpark(before, 2 * MS);
    poll(before, 3 * MS, 4 * MS);           /* free from 4 ms on */
    assert_int_equal(q_loopwork_open_since(before, 1, 11), 4 * MS);
    assert_int_equal(q_loopwork_open_since(w, 1, 11), 0);
    assert_int_equal(q_loopwork_carry(w, before), 0);
    assert_int_equal(q_loopwork_open_since(w, 1, 11), 4 * MS);
    assert_int_equal(q_loopwork_open_since(w, 1, 12), 0);
    ngot = 0;
    park(w, 9 * MS);                        /* the window's first record */
    assert_int_equal(ngot, 1);
    assert_int_equal(got[0].start_ns, 4 * MS);
    assert_int_equal(got[0].end_ns, 9 * MS);
    assert_int_equal(q_loopwork_open_since(w, 1, 11), 0);    /* parked */
    q_loopwork_free(before);
    q_loopwork_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(work_between_runs_is_loop_work),
        cmocka_unit_test(short_stretches_and_callbacks_are_not),
        cmocka_unit_test(a_thread_that_never_parks_has_none),
        cmocka_unit_test(stretches_not_known_whole_are_left_out),
        cmocka_unit_test(threads_are_apart),
        cmocka_unit_test(short_records_are_ignored),
        cmocka_unit_test(carried_state_ends_a_stretch_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
