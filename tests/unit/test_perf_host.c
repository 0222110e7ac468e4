/*
 * test_perf_host.c — collector/perf_host.c: argument checks, real per-CPU
 * sampling routed by pid, and switching the events off and on (skipped with
 * a message where per-CPU perf events are not permitted: they need
 * CAP_PERFMON, root or perf_event_paranoid <= 0).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "collector/perf_host.h"
#include "shm/clock.h"

static int denied(int rc)
{
    if (rc == -EACCES || rc == -EPERM || rc == -ENOSYS || rc == -ENOENT) {
        printf("skipped: per-CPU perf events not permitted here (%s)\n", strerror(-rc));
        return 1;
    }
    return 0;
}

static void test_open_rejects_bad_arguments(void **state)
{
    (void)state;
    struct perf_host *h = (void *)1;
    assert_int_equal(perf_host_open(&h, 0, 8), -EINVAL);
    assert_null(h);
    assert_int_equal(perf_host_open(&h, PERF_FREQ_MAX + 1, 8), -EINVAL);
    assert_int_equal(perf_host_open(&h, 99, 0), -EINVAL);
    assert_int_equal(perf_host_open(&h, 99, 3), -EINVAL);
    assert_int_equal(perf_host_open(&h, 99, 2048), -EINVAL);
}

/* A thread that burns CPU until told to stop. */
struct burner {
    volatile int stop;
    volatile uint32_t tid;
};

static void *burn_main(void *arg)
{
    struct burner *b = arg;
    b->tid = (uint32_t)syscall(SYS_gettid);
    uint64_t x = 7;
    while (!b->stop) {
        for (int i = 0; i < 100000; i++)
            x = x * 2862933555777941757ull + 3037000493ull;
        __asm__ volatile("" : "+r"(x));
    }
    return NULL;
}

/* Start a burner thread and wait until it knows its tid. */
static void burner_start(struct burner *b, pthread_t *th)
{
    *b = (struct burner){ 0 };
    assert_int_equal(pthread_create(th, NULL, burn_main, b), 0);
    while (!b->tid)
        ;
}

static void burner_stop(struct burner *b, pthread_t th)
{
    b->stop = 1;
    pthread_join(th, NULL);
}

struct route_log {
    uint32_t want_pid, want_tid;
    int take;                   /* what the route function answers */
    long calls, mine;           /* samples seen, of want_tid */
    uint64_t min_time, max_time, min_period;
};

static int route(void *ctx, const struct perf_sample *s)
{
    struct route_log *l = ctx;
    l->calls++;
    if (s->pid == l->want_pid && s->tid == l->want_tid) {
        l->mine++;
        if (!l->min_time || s->time < l->min_time)
            l->min_time = s->time;
        if (s->time > l->max_time)
            l->max_time = s->time;
        if (!l->min_period || s->period < l->min_period)
            l->min_period = s->period;
    }
    return l->take;
}

/* Poll h until the burner's thread was sampled 3 times (or ~10 s: only
 * there so a broken kernel cannot hang the test). */
static void poll_until_sampled(struct perf_host *h, struct route_log *l)
{
    for (int round = 0; round < 1000 && l->mine < 3; round++) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
        assert_true(perf_host_poll(h, route, l) >= 0);
    }
}

/* Sample a burning thread with a fresh 999 Hz host sampler until it was
 * sampled 3 times, the route answering take; *st gets the sampler's stats.
 * Returns 0, or 1 when per-CPU events are not permitted (skipped). */
static int sample_burner(int take, struct route_log *l, struct perf_host_stats *st,
                         uint64_t *t0)
{
    struct burner b;
    pthread_t th;
    burner_start(&b, &th);
    struct perf_host *h;
    *t0 = shm_mono_ns();
    int rc = perf_host_open(&h, 999, 8);
    int skipped = denied(rc);
    if (!skipped) {
        assert_int_equal(rc, 0);
        *l = (struct route_log){ .want_pid = (uint32_t)getpid(), .want_tid = b.tid, .take = take };
        poll_until_sampled(h, l);
        perf_host_stats(h, st);
        perf_host_close(h);
    }
    burner_stop(&b, th);
    return skipped;
}

static void test_samples_of_a_busy_thread_carry_its_pid_tid_and_time(void **state)
{
    (void)state;
    struct route_log l;
    struct perf_host_stats st;
    uint64_t t0;
    if (sample_burner(1, &l, &st, &t0))
        return;
    assert_true(l.mine >= 3);
    assert_true(l.min_time >= t0);              /* CLOCK_MONOTONIC, like segments */
    assert_true(l.max_time <= shm_mono_ns());
    assert_true(l.min_period > 0);              /* ns of CPU per sample */
    assert_true(st.cpus >= 1);
    assert_int_equal(st.samples, (uint64_t)l.calls);
    assert_int_equal(st.routed, (uint64_t)l.calls);
}

static void test_samples_the_route_refuses_are_not_counted_as_routed(void **state)
{
    (void)state;
    struct route_log l;
    struct perf_host_stats st;
    uint64_t t0;
    if (sample_burner(0, &l, &st, &t0))
        return;
    assert_true(l.mine >= 3);
    assert_int_equal(st.samples, (uint64_t)l.calls);
    assert_int_equal(st.routed, 0);
}

static void test_poll_returns_the_number_of_samples_it_read(void **state)
{
    (void)state;
    struct perf_host *h;
    int rc = perf_host_open(&h, 99, 8);
    if (denied(rc))
        return;
    assert_int_equal(rc, 0);
    struct route_log l = { 0 };
    /* whatever the CPUs sampled meanwhile: the count returned is the
     * number of samples handed to the route, poll after poll */
    long n = perf_host_poll(h, route, &l);
    assert_true(n >= 0);
    assert_int_equal(n, l.calls);
    long before = l.calls;
    n = perf_host_poll(h, route, &l);
    assert_int_equal(n, l.calls - before);
    perf_host_close(h);
}

/* Switched off, a busy CPU is not sampled at all; switched on again, it is;
 * a call that changes nothing is not a switch. */
static void test_switched_off_events_take_no_samples(void **state)
{
    (void)state;
    struct burner b;
    pthread_t th;
    burner_start(&b, &th);
    struct perf_host *h;
    int rc = perf_host_open(&h, 999, 8);
    if (!denied(rc)) {
        assert_int_equal(rc, 0);
        struct perf_host_stats st;
        perf_host_stats(h, &st);
        assert_int_equal(st.enabled, 1);                /* on after open */
        assert_int_equal(perf_host_enable(h, 1), 0);    /* no change: not a switch */
        perf_host_stats(h, &st);
        assert_int_equal(st.switches, 0);

        assert_int_equal(perf_host_enable(h, 0), 0);
        perf_host_stats(h, &st);
        assert_int_equal(st.enabled, 0);
        assert_int_equal(st.switches, 1);
        struct route_log l = { 0 };
        perf_host_poll(h, route, &l);       /* what was sampled before the switch */
        l = (struct route_log){ .want_pid = (uint32_t)getpid(), .want_tid = b.tid, .take = 1 };
        /* 300 ms of a burning thread: about 300 samples if the events were on */
        for (int i = 0; i < 30; i++) {
            struct timespec ts = { 0, 10000000 };
            nanosleep(&ts, NULL);
            perf_host_poll(h, route, &l);
        }
        assert_int_equal(l.calls, 0);

        assert_int_equal(perf_host_enable(h, 1), 0);
        perf_host_stats(h, &st);
        assert_int_equal(st.enabled, 1);
        assert_int_equal(st.switches, 2);
        poll_until_sampled(h, &l);
        assert_true(l.mine >= 3);
        perf_host_close(h);
    }
    burner_stop(&b, th);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_rejects_bad_arguments),
        cmocka_unit_test(test_samples_of_a_busy_thread_carry_its_pid_tid_and_time),
        cmocka_unit_test(test_samples_the_route_refuses_are_not_counted_as_routed),
        cmocka_unit_test(test_poll_returns_the_number_of_samples_it_read),
        cmocka_unit_test(test_switched_off_events_take_no_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
