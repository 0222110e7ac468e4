/*
 * test_perf_host.c — collector/daemon/perf_host.c: argument checks, real per-CPU
 * sampling routed by pid, and switching the events off and on (skipped with
 * a message where per-CPU perf events are not permitted: they need
 * CAP_PERFMON, root or perf_event_paranoid <= 0); sampling on the tick
 * (skipped with perf_tick_probe's reason where the tick cannot be sampled):
 * the weights, and no frame of the tick's own interrupt left in a stack.
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
#include <fcntl.h>
#include "collector/daemon/perf_host.h"
#include "collector/store/sym.h"
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
    assert_int_equal(perf_host_open(&h, 0, 8, NULL), -EINVAL);
    assert_null(h);
    assert_int_equal(perf_host_open(&h, PERF_FREQ_MAX + 1, 8, NULL), -EINVAL);
    assert_int_equal(perf_host_open(&h, 99, 0, NULL), -EINVAL);
    assert_int_equal(perf_host_open(&h, 99, 3, NULL), -EINVAL);
    assert_int_equal(perf_host_open(&h, 99, 2048, NULL), -EINVAL);
    struct perf_tick t = { .tp_id = 1, .handler = 0xffffffff81000000ull, .tick_ns = 4000000 };
    struct perf_tick bad = t;
    bad.tp_id = 0;
    assert_int_equal(perf_host_open(&h, 99, 8, &bad), -EINVAL);
    bad = t;
    bad.handler = 0;
    assert_int_equal(perf_host_open(&h, 99, 8, &bad), -EINVAL);
    bad = t;
    bad.tick_ns = 100;
    assert_int_equal(perf_host_open(&h, 99, 8, &bad), -EINVAL);
    assert_null(h);
}

/* A thread that burns CPU until told to stop. */
struct burner {
    volatile int stop;
    volatile uint32_t tid;
    volatile int fd;            /* >= 0: read from it instead (time in the kernel) */
};

static void *burn_main(void *arg)
{
    struct burner *b = arg;
    b->tid = (uint32_t)syscall(SYS_gettid);
    uint64_t x = 7;
    static char buf[1 << 20];
    while (!b->stop) {
        if (b->fd >= 0) {       /* nearly all of its time in read(2): the raw
                                 * system call, not ASan's interceptor, whose
                                 * check of the buffer takes as long in user
                                 * mode as the kernel takes to fill it */
            if (syscall(SYS_read, b->fd, buf, sizeof buf) < 0)
                break;
            continue;
        }
        for (int i = 0; i < 100000; i++)
            x = x * 2862933555777941757ull + 3037000493ull;
        __asm__ volatile("" : "+r"(x));
    }
    return NULL;
}

/* Start a burner thread and wait until it knows its tid. */
static void burner_start(struct burner *b, pthread_t *th)
{
    *b = (struct burner){ .fd = -1 };
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
    uint64_t min_time, max_time, min_period, max_period;
    long kernel;                /* of want_tid: samples with kernel frames */
    long in_tick;               /* of want_tid: kernel frames inside the tick's interrupt */
    const struct perf_tick *tick;   /* for in_tick: the entry stubs */
    const struct sym_kernel *ks;    /* for in_tick: the handler's functions by name */
};

/* 1 if ip is a frame of the tick interrupt's own path: its entry stub or
 * the hrtimer code between the entry and the tracepoint. */
static int tick_frame(const struct route_log *l, uint64_t ip)
{
    for (int i = 0; i < (int)PERF_TICK_ENTRIES_MAX; i++)
        if (l->tick && l->tick->entry[i].lo && ip >= l->tick->entry[i].lo &&
            ip < l->tick->entry[i].hi)
            return 1;
    uint64_t off;
    const char *name = l->ks ? sym_kernel_lookup(l->ks, ip, &off) : NULL;
    return name && (!strcmp(name, "__hrtimer_run_queues") || !strcmp(name, "hrtimer_interrupt"));
}

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
        if (s->period > l->max_period)
            l->max_period = s->period;
        uint64_t ips[D9_STACK_MAX_FRAMES];
        uint16_t flags;
        uint16_t n = perf_callchain_to_frames(s->ips, s->nr, ips, D9_STACK_MAX_FRAMES, &flags);
        if (flags & D9_STACK_KERNEL)
            l->kernel++;
        for (uint16_t i = 0; i < n; i++)
            if (ips[i] >= 0xffff800000000000ull && tick_frame(l, ips[i])) {
                l->in_tick++;
                break;
            }
    }
    return l->take;
}

/* Poll h until the burner's thread was sampled want times (or ~10 s: only
 * there so a broken kernel cannot hang the test). */
static void poll_until_sampled(struct perf_host *h, struct route_log *l, long want)
{
    for (int round = 0; round < 1000 && l->mine < want; round++) {
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
    int rc = perf_host_open(&h, 999, 8, NULL);
    int skipped = denied(rc);
    if (!skipped) {
        assert_int_equal(rc, 0);
        *l = (struct route_log){ .want_pid = (uint32_t)getpid(), .want_tid = b.tid, .take = take };
        poll_until_sampled(h, l, 3);
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
    int rc = perf_host_open(&h, 99, 8, NULL);
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
    int rc = perf_host_open(&h, 999, 8, NULL);
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
        poll_until_sampled(h, &l, 3);
        assert_true(l.mine >= 3);
        perf_host_close(h);
    }
    burner_stop(&b, th);
}

/* The tick, or a skip with perf_tick_probe's reason. */
static int tick_or_skip(struct perf_tick *t)
{
    char why[256];
    int rc = perf_tick_probe(t, NULL, why, sizeof why);
    if (rc) {
        printf("skipped: the tick cannot be sampled here (%s)\n", why);
        return 1;
    }
    return 0;
}

/* Sample a burner (reading /dev/zero instead when syscalls) on the tick, 1 in
 * 1, until 20 of its samples were seen. Returns 1 when skipped. */
static int tick_burner(int syscalls, struct perf_tick *t, struct sym_kernel **ks,
                       struct route_log *l, struct perf_host_stats *st)
{
    if (tick_or_skip(t))
        return 1;
    struct burner b;
    pthread_t th;
    *ks = NULL;
    assert_int_equal(sym_kernel_load("/proc/kallsyms", ks), 0);
    burner_start(&b, &th);
    if (syscalls) {
        b.fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        assert_true(b.fd >= 0);
    }
    struct perf_host *h;
    /* the tick rate itself: 1 in 1 */
    int rc = perf_host_open(&h, (uint32_t)(1000000000ull / t->tick_ns), 8, t);
    int skipped = denied(rc);
    if (!skipped) {
        assert_int_equal(rc, 0);
        *l = (struct route_log){ .want_pid = (uint32_t)getpid(), .want_tid = b.tid, .take = 1,
                                 .tick = t, .ks = *ks };
        poll_until_sampled(h, l, 20);
        perf_host_stats(h, st);
        perf_host_close(h);
    }
    burner_stop(&b, th);
    if (b.fd >= 0)
        close(b.fd);
    return skipped;
}

/* On the tick, a sample weighs period x tick length, and a thread that
 * never enters the kernel has no kernel frames: the tick's own interrupt
 * was cut off. */
static void test_tick_samples_weigh_their_ticks_and_carry_no_interrupt_frames(void **state)
{
    (void)state;
    struct perf_tick t;
    struct sym_kernel *ks;
    struct route_log l;
    struct perf_host_stats st;
    if (tick_burner(0, &t, &ks, &l, &st))
        return;
    printf("user burner: %ld samples, %ld with kernel frames, %ld in the tick; host: %llu samples, "
           "%llu unanchored\n", l.mine, l.kernel, l.in_tick, (unsigned long long)st.samples,
           (unsigned long long)st.unanchored);
    assert_int_equal(st.clock, PERF_HOST_CLOCK_TICK);
    assert_int_equal(st.period_ticks, 1);
    assert_int_equal(st.sample_ns, t.tick_ns);
    assert_true(l.mine >= 20);
    assert_int_equal(l.min_period, t.tick_ns);  /* the time it stands for, not 1 */
    assert_int_equal(l.max_period, t.tick_ns);
    assert_int_equal(l.in_tick, 0);
    if (st.kernel_frames && perf_tick_has_entry(&t)) {
        /* all but interrupts that caught it in the kernel (page faults and
         * the like are rare in this loop) */
        assert_true(l.kernel * 10 < l.mine);
        assert_true(st.unanchored * 10 < st.samples);
    }
    sym_kernel_free(ks);
}

/* A thread in a system call keeps the frames of the system call, and
 * still none of the tick's interrupt. */
static void test_tick_samples_keep_the_interrupted_kernel_frames(void **state)
{
    (void)state;
    struct perf_tick t;
    struct sym_kernel *ks;
    struct route_log l;
    struct perf_host_stats st;
    if (tick_burner(1, &t, &ks, &l, &st))
        return;
    assert_true(l.mine >= 20);
    printf("read(2) burner: %ld of %ld samples with kernel frames\n", l.kernel, l.mine);
    assert_int_equal(l.in_tick, 0);
    if (st.kernel_frames)
        assert_true(l.kernel * 2 > l.mine);     /* most samples caught it in read(2) */
    else
        printf("note: kernel frames not permitted: only the user side was checked\n");
    sym_kernel_free(ks);
}

/* 1 tick in N is 1 tick in N: a thread burning CPU gets about one sample
 * per N ticks of its CPU time (a fixed sample_period with
 * PERF_SAMPLE_PERIOD in the sample type samples nearly every tick). */
static void test_tick_samples_one_tick_in_period(void **state)
{
    (void)state;
    struct perf_tick t;
    if (tick_or_skip(&t))
        return;
    struct burner b;
    pthread_t th;
    burner_start(&b, &th);
    clockid_t cid;
    assert_int_equal(pthread_getcpuclockid(th, &cid), 0);
    struct perf_host *h;
    uint32_t hz = (uint32_t)(1000000000ull / t.tick_ns / 3);  /* 83 at HZ 250: 1 in 3 */
    int rc = perf_host_open(&h, hz, 8, &t);
    if (!denied(rc)) {
        assert_int_equal(rc, 0);
        struct perf_host_stats st;
        perf_host_stats(h, &st);
        assert_int_equal(st.period_ticks, 3);
        struct route_log l = { .want_pid = (uint32_t)getpid(), .want_tid = b.tid, .take = 1 };
        perf_host_poll(h, route, &l);           /* from here on */
        l = (struct route_log){ .want_pid = (uint32_t)getpid(), .want_tid = b.tid, .take = 1 };
        struct timespec c0, c1;
        clock_gettime(cid, &c0);
        for (int i = 0; i < 60; i++) {          /* 600 ms: ~50 samples of a busy thread */
            struct timespec ts = { 0, 10000000 };
            nanosleep(&ts, NULL);
            perf_host_poll(h, route, &l);
        }
        clock_gettime(cid, &c1);
        perf_host_close(h);
        double cpu_ns = (double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec);
        double expect = cpu_ns / (3.0 * (double)t.tick_ns);
        printf("tick 1 in 3: %ld samples for %.0f ms of CPU, %.1f expected\n", l.mine,
               cpu_ns / 1e6, expect);
        assert_true(expect >= 10);
        assert_true((double)l.mine <= 1.6 * expect + 3);    /* every tick would be 3x */
        assert_true((double)l.mine >= 0.4 * expect - 3);
        assert_int_equal(l.min_period, 3 * t.tick_ns);
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
        cmocka_unit_test(test_tick_samples_weigh_their_ticks_and_carry_no_interrupt_frames),
        cmocka_unit_test(test_tick_samples_keep_the_interrupted_kernel_frames),
        cmocka_unit_test(test_tick_samples_one_tick_in_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
