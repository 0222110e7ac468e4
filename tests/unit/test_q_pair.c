/*
 * test_q_pair.c — q_pair.c: poll_start/poll_end pairing per thread
 * and task, nesting, window edges, dropped ends, parked intervals, gaps
 * (blocks not read), seeded open polls.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include "collector/query/q_pair.h"

static const struct q_rec_src T1 = { .process_id = 1, .pid = 10, .tid = 11, .ring = 0,
                                       .generation = 1 };
static const struct q_rec_src T2 = { .process_id = 1, .pid = 10, .tid = 12, .ring = 1,
                                       .generation = 1 };

static int start(struct q_pair *p, const struct q_rec_src *s, uint64_t ts, uint64_t task)
{
    struct d9_rec_poll_start r = { .h = { sizeof r, D9_REC_POLL_START, 0, ts }, .task = task,
                                   .loc = 3, .runtime = 1, .worker = 2 };
    struct q_poll done;
    return q_pair_feed(p, s, &r.h, sizeof r, &done);
}

static int end(struct q_pair *p, const struct q_rec_src *s, uint64_t ts, uint64_t task,
               struct q_poll *done)
{
    struct d9_rec_poll_end r = { .h = { sizeof r, D9_REC_POLL_END, 0, ts }, .task = task,
                                 .runtime = 1, .worker = 2 };
    return q_pair_feed(p, s, &r.h, sizeof r, done);
}

static void start_then_end_is_one_poll(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct q_poll d;
    assert_int_equal(start(p, &T1, 100, 7), 0);
    assert_int_equal(end(p, &T1, 350, 7, &d), 1);
    assert_int_equal(d.task, 7);
    assert_int_equal(d.start_ns, 100);
    assert_int_equal(d.end_ns, 350);
    assert_int_equal(d.loc, 3);
    assert_int_equal(d.tid, 11);
    assert_int_equal(q_pair_stats(p)->paired, 1);
    q_pair_free(p);
}

/* start@100 [gap: the end@101 and a new start@200 lost] end@700: pairing
 * across the gap would be a phantom 600 ns poll */
static void a_gap_ends_the_thread_s_open_polls_unpaired(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct q_poll d;
    assert_int_equal(start(p, &T1, 100, 7), 0);
    assert_int_equal(start(p, &T2, 150, 8), 0);
    assert_int_equal(q_pair_feed(p, &T1, NULL, 0, &d), 0);
    assert_int_equal(end(p, &T1, 700, 7, &d), 0);
    assert_int_equal(q_pair_stats(p)->broken, 1);
    assert_int_equal(q_pair_stats(p)->gaps, 1);
    assert_int_equal(q_pair_stats(p)->unpaired_ends, 1);
    assert_int_equal(end(p, &T2, 800, 8, &d), 1);       /* the other thread's poll is whole */
    assert_int_equal(d.start_ns, 150);
    q_pair_free(p);
}

static void a_seeded_open_poll_pairs_with_its_end(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct q_poll open = { .process_id = 1, .pid = 10, .tid = 11, .ring = 0, .generation = 1,
                           .task = 7, .loc = 5, .start_ns = 40 };
    assert_int_equal(q_pair_seed(p, &open), 0);
    struct q_poll d;
    assert_int_equal(end(p, &T1, 90, 7, &d), 1);
    assert_int_equal(d.start_ns, 40);
    assert_int_equal(d.end_ns, 90);
    assert_int_equal(d.loc, 5);
    q_pair_free(p);
}

static void threads_are_paired_separately(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct q_poll d;
    assert_int_equal(start(p, &T1, 100, 7), 0);
    assert_int_equal(end(p, &T2, 200, 7, &d), 0);      /* same task, other thread */
    assert_int_equal(q_pair_stats(p)->unpaired_ends, 1);
    assert_int_equal(end(p, &T1, 300, 7, &d), 1);
    assert_int_equal(d.end_ns, 300);
    q_pair_free(p);
}

static void nested_polls_pair_by_task(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct q_poll d;
    assert_int_equal(start(p, &T1, 100, 1), 0);
    assert_int_equal(start(p, &T1, 150, 2), 0);        /* block_on inside a poll */
    assert_int_equal(end(p, &T1, 180, 2, &d), 1);
    assert_int_equal(d.start_ns, 150);
    assert_int_equal(end(p, &T1, 400, 1, &d), 1);
    assert_int_equal(d.start_ns, 100);
    q_pair_free(p);
}

static void restart_of_an_open_task_replaces_it_and_is_counted(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct q_poll d;
    assert_int_equal(start(p, &T1, 100, 1), 0);
    assert_int_equal(start(p, &T1, 500, 1), 0);        /* the end at ~300 was dropped */
    assert_int_equal(q_pair_stats(p)->replaced_starts, 1);
    assert_int_equal(end(p, &T1, 600, 1, &d), 1);
    assert_int_equal(d.start_ns, 500);
    q_pair_free(p);
}

static void open_polls_are_listed_at_the_end(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    assert_int_equal(start(p, &T1, 100, 1), 0);
    assert_int_equal(start(p, &T2, 200, 2), 0);
    size_t it = 0;
    struct q_poll o;
    int n = 0;
    uint64_t tasks = 0;
    while (q_pair_next_open(p, &it, &o)) {
        n++;
        tasks += o.task;
        assert_int_equal(o.end_ns, 0);
    }
    assert_int_equal(n, 2);
    assert_int_equal(tasks, 3);
    q_pair_free(p);
}

static void many_threads_grow_the_table(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct q_poll d;
    for (uint32_t r = 0; r < 1000; r++) {
        struct q_rec_src s = T1;
        s.ring = r;
        assert_int_equal(start(p, &s, 10 + r, r), 0);
    }
    for (uint32_t r = 0; r < 1000; r++) {
        struct q_rec_src s = T1;
        s.ring = r;
        assert_int_equal(end(p, &s, 5000, r, &d), 1);
        assert_int_equal(d.start_ns, 10 + r);
    }
    q_pair_free(p);
}

static void parks_pair_only_when_asked(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct d9_rec_worker w = { .h = { sizeof w, D9_REC_WORKER_PARK, 0, 100 }, .runtime = 1 };
    struct q_poll d;
    assert_int_equal(q_pair_feed(p, &T1, &w.h, sizeof w, &d), 0);
    w.h.type = D9_REC_WORKER_UNPARK;
    w.h.ts = 900;
    assert_int_equal(q_pair_feed(p, &T1, &w.h, sizeof w, &d), 0);   /* not tracked */
    q_pair_track_parks(p);
    w.h.type = D9_REC_WORKER_PARK;
    w.h.ts = 1000;
    assert_int_equal(q_pair_feed(p, &T1, &w.h, sizeof w, &d), 0);
    w.h.type = D9_REC_WORKER_UNPARK;
    w.h.ts = 1700;
    assert_int_equal(q_pair_feed(p, &T1, &w.h, sizeof w, &d), 2);
    assert_true(d.task == Q_POLL_PARKED);
    assert_int_equal(d.end_ns - d.start_ns, 700);
    q_pair_free(p);
}

static void malformed_records_are_ignored(void **state)
{
    (void)state;
    struct q_pair *p;
    assert_int_equal(q_pair_new(&p), 0);
    struct d9_rec_poll_start r = { .h = { sizeof r - 8, D9_REC_POLL_START, 0, 1 }, .task = 1 };
    struct q_poll d;
    assert_int_equal(q_pair_feed(p, &T1, &r.h, sizeof r, &d), 0);
    size_t it = 0;
    assert_int_equal(q_pair_next_open(p, &it, &d), 0);
    q_pair_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(start_then_end_is_one_poll),
        cmocka_unit_test(threads_are_paired_separately),
        cmocka_unit_test(a_gap_ends_the_thread_s_open_polls_unpaired),
        cmocka_unit_test(a_seeded_open_poll_pairs_with_its_end),
        cmocka_unit_test(nested_polls_pair_by_task),
        cmocka_unit_test(restart_of_an_open_task_replaces_it_and_is_counted),
        cmocka_unit_test(open_polls_are_listed_at_the_end),
        cmocka_unit_test(many_threads_grow_the_table),
        cmocka_unit_test(parks_pair_only_when_asked),
        cmocka_unit_test(malformed_records_are_ignored),
    };
    return cmocka_run_group_tests_name("q_pair", tests, NULL, NULL);
}
