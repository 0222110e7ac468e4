/*
 * test_q_find.c — q_find.c: the rules of each kind of finding on synthetic
 * records (over the threshold and not; what counts as evidence), the
 * samples a poll gets (those of its thread inside it, nested polls too), the
 * ranking (crashes, lost records, then time lost), and the spawned-task
 * table under many spawns and terminations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "collector/query/q_find.h"

#define MS 1000000ull
#define US 1000ull

static struct q_rec_src src_of(uint32_t tid)
{
    return (struct q_rec_src){ .process_id = 1, .pid = 10, .tid = tid, .ring = tid,
                               .generation = 1 };
}

static void feed(struct q_find *f, uint32_t tid, const void *rec, size_t len)
{
    struct q_rec_src s = src_of(tid);
    assert_int_equal(q_find_feed(f, &s, rec, len), 0);
}

static void poll_start(struct q_find *f, uint32_t tid, uint16_t wk, uint64_t task, uint32_t loc,
                       uint64_t ts)
{
    struct d9_rec_poll_start a = { { sizeof a, D9_REC_POLL_START, 0, ts }, task, loc, 1, wk };
    feed(f, tid, &a, sizeof a);
}

static void poll_end(struct q_find *f, uint32_t tid, uint16_t wk, uint64_t task, uint64_t ts)
{
    struct d9_rec_poll_end e = { { sizeof e, D9_REC_POLL_END, 0, ts }, task, 1, wk, 0 };
    feed(f, tid, &e, sizeof e);
}

static void poll(struct q_find *f, uint32_t tid, uint16_t wk, uint64_t task, uint32_t loc,
                 uint64_t start, uint64_t end)
{
    poll_start(f, tid, wk, task, loc, start);
    poll_end(f, tid, wk, task, end);
}

static void worker(struct q_find *f, uint32_t tid, uint16_t type, uint16_t wk, uint64_t ts,
                   uint32_t flags, uint64_t wait)
{
    struct d9_rec_worker r = { { sizeof r, type, 0, ts }, 1, wk, flags, ts, wait };
    feed(f, tid, &r, sizeof r);
}

static void sample(struct q_find *f, uint32_t tid, uint64_t ts, uint64_t ip)
{
    uint8_t rec[sizeof(struct d9_rec_stack) + 8];
    struct d9_rec_stack s = { .h = { sizeof rec, D9_REC_CPU_SAMPLE, 0, ts }, .tid = tid,
                              .nframes = 1, .weight = 1 };
    memcpy(rec, &s, sizeof s);
    memcpy(rec + sizeof s, &ip, 8);
    feed(f, 99, rec, sizeof rec);       /* the perf pseudo ring of the process */
}

static void task_rec(struct q_find *f, uint16_t type, uint64_t ts, uint64_t task, uint32_t loc)
{
    struct d9_rec_task k = { { sizeof k, type, 0, ts }, task, loc, 1, 0 };
    feed(f, 1, &k, sizeof k);
}

static void depth(struct q_find *f, uint64_t ts, uint64_t d)
{
    struct d9_rec_queue_depth q = { { sizeof q, D9_REC_QUEUE_DEPTH, 0, ts }, d, 1, 3, 0 };
    feed(f, 1, &q, sizeof q);
}

static const char *frame_name(void *arg, int64_t pr, uint64_t ip, char *buf, size_t cap)
{
    (void)arg, (void)pr;
    snprintf(buf, cap, "%s", ip < 0x200 ? "hot" : "cold");    /* 0x100, 0x101: one function */
    return buf;
}

static const struct q_find_namer namer = { NULL, NULL, NULL, frame_name };

static struct q_find *fresh(void)
{
    struct q_find *f;
    assert_int_equal(q_find_new(&f, NULL), 0);
    return f;
}

static const struct q_finding *finish(struct q_find *f, size_t *n)
{
    assert_int_equal(q_find_finish(f, &namer), 0);
    return q_find_list(f, n);
}

static void long_polls_per_location_with_samples_inside(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    sample(f, 7, 1 * MS, 0x300);                    /* before any poll: not counted */
    poll_start(f, 7, 0, 1, 5, 2 * MS);
    sample(f, 7, 3 * MS, 0x100);
    sample(f, 7, 4 * MS, 0x101);                    /* another address, same function */
    sample(f, 8, 4 * MS, 0x300);                    /* another thread: not counted */
    sample(f, 7, 5 * MS, 0x300);
    poll_end(f, 7, 0, 1, 22 * MS);                  /* 20 ms */
    poll(f, 7, 0, 2, 5, 23 * MS, 24 * MS);          /* 1 ms: short */
    poll_start(f, 7, 0, 3, 5, 30 * MS);
    sample(f, 7, 31 * MS, 0x100);
    poll_end(f, 7, 0, 3, 45 * MS);                  /* 15 ms */
    poll_start(f, 7, 0, 4, 6, 50 * MS);
    sample(f, 7, 51 * MS, 0x100);                   /* inside a short poll: not counted */
    poll_end(f, 7, 0, 4, 52 * MS);
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(x->kind, Q_FIND_LONG_POLL);
    assert_int_equal(x->loc, 5);
    assert_int_equal(x->count, 2);
    assert_int_equal(x->of, 3);
    assert_int_equal(x->total_ns, 35 * MS);
    assert_int_equal(x->lost_ns, 35 * MS);
    assert_int_equal(x->max_ns, 20 * MS);
    assert_int_equal(x->task, 1);
    assert_int_equal(x->from_ns, 2 * MS);
    assert_int_equal(x->to_ns, 22 * MS);
    assert_int_equal(x->samples, 4);
    assert_int_equal(x->nframes, 2);
    assert_string_equal(x->frames[0].name, "hot");
    assert_int_equal(x->frames[0].samples, 3);
    assert_string_equal(x->frames[1].name, "cold");
    assert_int_equal(x->frames[1].samples, 1);
    assert_non_null(strstr(x->evidence, "hot 3, cold 1"));
    assert_string_equal(x->where, "#5");            /* no location namer */
    q_find_free(f);
}

static void a_nested_poll_gets_only_the_samples_inside_it(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    poll_start(f, 7, 0, 1, 5, 0);                   /* outer, 30 ms */
    sample(f, 7, 5 * MS, 0x300);                    /* before the inner poll */
    poll_start(f, 7, 0, 2, 6, 10 * MS);             /* inner (block_on), 15 ms */
    sample(f, 7, 12 * MS, 0x100);
    poll_end(f, 7, 0, 2, 25 * MS);
    poll_end(f, 7, 0, 1, 30 * MS);
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 2);
    assert_int_equal(x[0].loc, 5);                  /* 30 ms lost ranks first */
    assert_int_equal(x[0].samples, 2);
    assert_int_equal(x[1].loc, 6);
    assert_int_equal(x[1].samples, 1);
    assert_string_equal(x[1].frames[0].name, "hot");
    q_find_free(f);
}

static void sched_delay_counts_sampled_waits_over_the_threshold(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    worker(f, 7, D9_REC_WORKER_PARK, 2, 10 * MS, 0, 100 * US);
    worker(f, 7, D9_REC_WORKER_UNPARK, 2, 20 * MS, 0, 3 * MS);
    worker(f, 7, D9_REC_WORKER_PARK, 2, 25 * MS, D9_WORKER_UNSAMPLED, 9 * MS); /* not a sample */
    worker(f, 7, D9_REC_WORKER_UNPARK, 2, 30 * MS, 0, 2 * MS);
    worker(f, 7, D9_REC_WORKER_PARK, 2, 31 * MS, 0, 999 * US);                 /* under 1 ms */
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(x->kind, Q_FIND_SCHED_DELAY);
    assert_int_equal(x->worker, 2);
    assert_int_equal(x->count, 2);
    assert_int_equal(x->of, 4);
    assert_int_equal(x->total_ns, 5 * MS);
    assert_int_equal(x->max_ns, 3 * MS);
    assert_int_equal(x->from_ns, 10 * MS);          /* since the previous sampled record */
    assert_int_equal(x->to_ns, 20 * MS);
    q_find_free(f);
}

static void wake_delay_is_wake_to_the_wakees_next_poll(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    struct d9_rec_wake w = { { sizeof w, D9_REC_WAKE, 0, 1 * MS }, 1, 50, 1, 0, 0 };
    feed(f, 7, &w, sizeof w);
    w.h.ts = 2 * MS;
    w.wakee = 51;
    feed(f, 7, &w, sizeof w);
    poll(f, 8, 1, 51, 4, 2 * MS + 50 * US, 2 * MS + 60 * US);  /* 50 us: fine */
    poll(f, 8, 1, 50, 4, 3 * MS, 3 * MS + 10 * US);            /* 2 ms late */
    poll(f, 8, 1, 50, 4, 9 * MS, 9 * MS + 10 * US);            /* not woken again */
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(x->kind, Q_FIND_WAKE_DELAY);
    assert_int_equal(x->loc, 4);
    assert_int_equal(x->count, 1);
    assert_int_equal(x->of, 2);
    assert_int_equal(x->lost_ns, 2 * MS);
    assert_int_equal(x->task, 50);
    assert_int_equal(x->tid, 8);
    assert_int_equal(x->from_ns, 1 * MS);
    assert_int_equal(x->to_ns, 3 * MS);
    q_find_free(f);
}

static void imbalance_needs_a_busy_worker_and_an_idle_one_that_parks(void **state)
{
    (void)state;
    struct q_find_opts o;
    q_find_opts_default(&o);
    o.long_poll_ns = 1000 * MS;
    struct q_find *f;
    assert_int_equal(q_find_new(&f, &o), 0);      /* 96 ms is no long poll here */
    poll(f, 7, 0, 1, 1, 1 * MS, 97 * MS);           /* w0: busy 96 of 100 ms */
    poll(f, 8, 1, 2, 1, 1 * MS, 2 * MS);            /* w1: busy 2 of 100 ms, parks */
    worker(f, 8, D9_REC_WORKER_PARK, 1, 2 * MS, 0, 0);
    worker(f, 8, D9_REC_WORKER_UNPARK, 1, 100 * MS, 0, 0);
    poll(f, 8, 1, 3, 1, 100 * MS, 101 * MS);
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(x->kind, Q_FIND_IMBALANCE);
    assert_int_equal(x->worker, 0);
    assert_int_equal(x->total_ns, 96 * MS);
    assert_int_equal(x->lost_ns, 96 * MS - 49 * MS);   /* busy - mean (96 + 2) / 2 */
    q_find_free(f);

    /* the same busy worker with a peer that never parks: no imbalance */
    assert_int_equal(q_find_new(&f, &o), 0);
    poll(f, 7, 0, 1, 1, 1 * MS, 97 * MS);
    poll(f, 8, 1, 2, 1, 1 * MS, 2 * MS);
    poll(f, 8, 1, 3, 1, 100 * MS, 101 * MS);
    x = finish(f, &n);
    assert_int_equal(n, 0);
    q_find_free(f);
}

static void queue_growth_is_the_largest_rise_from_a_low_to_a_later_high(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    const uint64_t d[] = { 50, 180, 20, 60, 140, 30 };  /* rises: 130, then 120 */
    for (unsigned k = 0; k < 6; k++)
        depth(f, (k + 1) * MS, d[k]);
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(x->kind, Q_FIND_QUEUE_GROWTH);
    assert_int_equal(x->count, 130);
    assert_int_equal(x->from_ns, 1 * MS);
    assert_int_equal(x->to_ns, 2 * MS);
    assert_int_equal(x->worker, 3);
    q_find_free(f);

    f = fresh();
    for (unsigned k = 0; k < 6; k++)
        depth(f, (k + 1) * MS, 20 + k * 19);           /* rises by 95 */
    x = finish(f, &n);
    assert_int_equal(n, 0);
    q_find_free(f);
}

static void task_leak_counts_old_tasks_never_terminated(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    for (uint64_t k = 0; k < 10000; k++)
        task_rec(f, D9_REC_TASK_SPAWN, 1 * MS + k, k + 1, k < 3 ? 8 : 9);
    /* terminate all but tasks 1..3, in an order that is not the spawn order */
    for (uint64_t k = 0; k < 10000; k++) {
        uint64_t task = (k * 7919) % 10000 + 1;
        if (task > 3)
            task_rec(f, D9_REC_TASK_TERMINATE, 500 * MS + k, task, 0);
    }
    task_rec(f, D9_REC_TASK_SPAWN, 1900 * MS, 20000, 9);    /* young */
    task_rec(f, D9_REC_TASK_SPAWN, 2000 * MS, 20001, 9);
    task_rec(f, D9_REC_TASK_TERMINATE, 2001 * MS, 20001, 0);
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 1);
    assert_int_equal(x->kind, Q_FIND_TASK_LEAK);
    assert_int_equal(x->loc, 8);
    assert_int_equal(x->count, 3);
    assert_int_equal(x->task, 1);
    assert_int_equal(x->from_ns, 1 * MS);
    assert_int_equal(x->to_ns, 2001 * MS);
    assert_int_equal(x->lost_ns, 2000 * MS);
    q_find_free(f);
}

static void crash_needs_a_crashed_process_and_an_open_poll(void **state)
{
    (void)state;
    for (int crashed = 0; crashed < 2; crashed++) {
        struct q_find *f = fresh();
        struct q_find_proc p = { .process_id = 1, .pid = 10, .crashed = crashed, .signal = 6 };
        assert_int_equal(q_find_process(f, &p), 0);
        poll(f, 7, 0, 1, 2, 1 * MS, 2 * MS);
        poll_start(f, 7, 0, 77, 2, 3 * MS);
        sample(f, 7, 8 * MS, 0x100);
        size_t n;
        const struct q_finding *x = finish(f, &n);
        assert_int_equal(n, crashed ? 1 : 0);
        if (crashed) {
            assert_int_equal(x->kind, Q_FIND_CRASH);
            assert_int_equal(x->task, 77);
            assert_int_equal(x->from_ns, 3 * MS);
            assert_int_equal(x->to_ns, 8 * MS);
            assert_int_equal(x->lost_ns, 5 * MS);
            assert_non_null(strstr(x->evidence, "signal 6"));
        }
        q_find_free(f);
    }
}

static void lost_records_by_cause_from_lost_min(void **state)
{
    (void)state;
    struct q_find_opts o;
    q_find_opts_default(&o);
    o.lost_min = 5;
    for (uint64_t lost = 4; lost <= 5; lost++) {
        struct q_find *f;
        assert_int_equal(q_find_new(&f, &o), 0);
        struct q_find_proc p = { .process_id = 1, .pid = 10, .lost = lost, .full = lost - 1,
                                 .too_big = 1 };
        assert_int_equal(q_find_process(f, &p), 0);
        size_t n;
        const struct q_finding *x = finish(f, &n);
        assert_int_equal(n, lost == 5 ? 1 : 0);
        if (n) {
            assert_int_equal(x->kind, Q_FIND_LOST);
            assert_int_equal(x->count, 5);
            assert_non_null(strstr(x->evidence, "4 ring full, 1 too large"));
        }
        q_find_free(f);
    }
}

static void ranked_crash_then_lost_then_time_lost(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    struct q_find_proc p = { .process_id = 1, .pid = 10, .crashed = true, .lost = 1, .full = 1 };
    assert_int_equal(q_find_process(f, &p), 0);
    worker(f, 9, D9_REC_WORKER_PARK, 4, 1 * MS, 0, 30 * MS);   /* sched-delay 30 ms */
    poll(f, 7, 0, 1, 5, 2 * MS, 14 * MS);                      /* long-poll 12 ms */
    poll_start(f, 8, 1, 2, 5, 50 * MS);                        /* crash, 0 ns */
    size_t n;
    const struct q_finding *x = finish(f, &n);
    assert_int_equal(n, 4);
    assert_int_equal(x[0].kind, Q_FIND_CRASH);
    assert_int_equal(x[1].kind, Q_FIND_LOST);
    assert_int_equal(x[2].kind, Q_FIND_SCHED_DELAY);
    assert_int_equal(x[3].kind, Q_FIND_LONG_POLL);
    char buf[2048];
    FILE *m = fmemopen(buf, sizeof buf, "w");
    assert_non_null(m);
    q_find_json(m, &x[3], 4, "http://h/?pid=10");
    fclose(m);
    assert_non_null(strstr(buf, "{\"rank\":4,\"kind\":\"long-poll\",\"pid\":10,"));
    assert_non_null(strstr(buf, "\"lost_ns\":12000000,\"from_ns\":2000000,\"to_ns\":14000000"));
    assert_non_null(strstr(buf, "\"url\":\"http://h/?pid=10\"}"));
    q_find_free(f);
}

static void short_records_are_ignored(void **state)
{
    (void)state;
    struct q_find *f = fresh();
    struct d9_rec_poll_start a = { { sizeof a, D9_REC_POLL_START, 0, 1 }, 1, 1, 1, 0 };
    feed(f, 7, &a, sizeof a - 8);
    struct d9_rec_task k = { { sizeof k, D9_REC_TASK_SPAWN, 0, 1 }, 5, 1, 1, 0 };
    feed(f, 7, &k, sizeof k - 8);
    size_t n;
    finish(f, &n);
    assert_int_equal(n, 0);
    q_find_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(long_polls_per_location_with_samples_inside),
        cmocka_unit_test(a_nested_poll_gets_only_the_samples_inside_it),
        cmocka_unit_test(sched_delay_counts_sampled_waits_over_the_threshold),
        cmocka_unit_test(wake_delay_is_wake_to_the_wakees_next_poll),
        cmocka_unit_test(imbalance_needs_a_busy_worker_and_an_idle_one_that_parks),
        cmocka_unit_test(queue_growth_is_the_largest_rise_from_a_low_to_a_later_high),
        cmocka_unit_test(task_leak_counts_old_tasks_never_terminated),
        cmocka_unit_test(crash_needs_a_crashed_process_and_an_open_poll),
        cmocka_unit_test(lost_records_by_cause_from_lost_min),
        cmocka_unit_test(ranked_crash_then_lost_then_time_lost),
        cmocka_unit_test(short_records_are_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
