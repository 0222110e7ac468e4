/*
 * prog_hot.c — traced workload with a known CPU hot spot and a known
 * off-CPU spot, for the profiling tests.
 *
 *   prog_hot [--seconds S] [--threads N] [--sleep-every K] [--kernel-busy] [--no-d9]
 *   prog_hot --sleeps N [--threads T]
 *
 * Each worker thread loops: d9_poll_start(task) -> d9test_hot_spin() ->
 * d9_poll_end(task). Task ids: worker w polls task HOT_TASK_BASE + w for hot
 * work; every K-th iteration it polls task SLEEPY_TASK, which sleeps in
 * d9test_sleepy() (nanosleep: off-CPU with a known stack). Compiled with
 * frame pointers, leaf functions included (tests/integration/profile.mk);
 * the functions are noinline so they appear as frames.
 *
 * At exit prints one line: "prog_hot: iterations N seconds S rate R/s cpu C
 * per-cpu-second P", the throughput used to measure sampling overhead (P,
 * iterations per second of the process's CPU time, is the stable one on a
 * loaded machine: sampling costs show up as CPU time of the process).
 * --no-d9 skips d9_init (the baseline without any agent). --kernel-busy: the
 * main thread reads /dev/zero until the end instead of sleeping, so that CPU
 * samples land in the kernel (a sampler only sees kernel frames where the
 * thread really runs kernel code).
 *
 * --sleeps N: a known off-CPU time. The workers start only at SIGUSR1 (so
 * the test can wait until the collector samples them); then each sleeps N
 * times in d9test_sleepy (one poll of SLEEPY_TASK each) and nothing else,
 * and the program exits printing "prog_hot: slept NS ns in K sleeps", NS
 * the time spent in d9test_sleepy (CLOCK_MONOTONIC) summed over workers.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

#define HOT_TASK_BASE   1000u
#define SLEEPY_TASK     99u
#define SPIN_ROUNDS     200000u
#define TICK_MASK       0xffffu
#define SLEEP_NS        2000000L    /* 2 ms */
#define MAX_THREADS     64

static double g_seconds = 2.0;
static unsigned g_sleep_every = 0;
static unsigned g_sleeps = 0;
static int g_use_d9 = 1;
static volatile int g_stop;

struct worker {
    pthread_t th;
    unsigned idx;
    uint64_t iterations;
    uint64_t slept_ns;
};

__attribute__((noinline)) uint64_t d9test_hot_spin(uint64_t seed);
__attribute__((noinline)) void d9test_sleepy(void);

/* gcc 12 sets up no frame in leaf functions even with
 * -fno-omit-frame-pointer, which would hide the hot function's caller from
 * frame-pointer walks; the rare call to this empty function keeps
 * d9test_hot_spin a non-leaf with a real frame. */
__attribute__((noinline)) void d9test_hot_tick(uint64_t x);
__attribute__((noinline)) void d9test_hot_tick(uint64_t x)
{
    __asm__ volatile("" : : "r"(x) : "memory");
}

__attribute__((noinline)) uint64_t d9test_hot_spin(uint64_t seed)
{
    uint64_t x = seed | 1;
    for (unsigned i = 0; i < SPIN_ROUNDS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        __asm__ volatile("" : "+r"(x));
        if ((i & TICK_MASK) == 0)
            d9test_hot_tick(x);
    }
    return x;
}

/* libc's nanosleep has no frame pointer, so a frame-pointer walk from inside
 * it skips its direct caller: d9test_sleepy_inner is that sacrificial
 * caller, and d9test_sleepy (the name tests look for) stays visible. */
__attribute__((noinline)) static void d9test_sleepy_inner(void)
{
    struct timespec ts = { 0, SLEEP_NS };
    nanosleep(&ts, NULL);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void d9test_sleepy(void)
{
    d9test_sleepy_inner();
    __asm__ volatile("" ::: "memory");
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }

static pthread_mutex_t g_go_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_go_cv = PTHREAD_COND_INITIALIZER;
static int g_go;

/* --sleeps: wait for the start, then only sleep, timing each sleep */
static void *sleeper_main(struct worker *w)
{
    pthread_mutex_lock(&g_go_mu);
    while (!g_go)
        pthread_cond_wait(&g_go_cv, &g_go_mu);
    pthread_mutex_unlock(&g_go_mu);
    d9_runtime rt = g_use_d9 ? d9_runtime_default() : (d9_runtime){ 0 };
    for (unsigned i = 0; i < g_sleeps; i++) {
        double t0 = now_s();
        if (g_use_d9)
            d9_poll_start(rt, (uint16_t)w->idx, SLEEPY_TASK, D9_LOC());
        d9test_sleepy();
        if (g_use_d9)
            d9_poll_end(rt, (uint16_t)w->idx, SLEEPY_TASK);
        w->slept_ns += (uint64_t)((now_s() - t0) * 1e9);
        w->iterations++;
    }
    return NULL;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (g_sleeps)
        return sleeper_main(w);
    d9_runtime rt = g_use_d9 ? d9_runtime_default() : (d9_runtime){ 0 };
    uint64_t acc = 0, task = HOT_TASK_BASE + w->idx;
    while (!g_stop) {
        if (g_sleep_every && w->iterations % g_sleep_every == g_sleep_every - 1) {
            if (g_use_d9)
                d9_poll_start(rt, (uint16_t)w->idx, SLEEPY_TASK, D9_LOC());
            d9test_sleepy();
            if (g_use_d9)
                d9_poll_end(rt, (uint16_t)w->idx, SLEEPY_TASK);
        }
        if (g_use_d9)
            d9_poll_start(rt, (uint16_t)w->idx, task, D9_LOC());
        acc += d9test_hot_spin(acc + w->iterations);
        if (g_use_d9)
            d9_poll_end(rt, (uint16_t)w->idx, task);
        w->iterations++;
    }
    return (void *)(uintptr_t)(acc & 1);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: prog_hot [--seconds S] [--threads N] [--sleep-every K] [--kernel-busy] "
            "[--no-d9]\n       prog_hot --sleeps N [--threads T]\n");
}

int main(int argc, char **argv)
{
    unsigned nthreads = 1;
    int kernel_busy = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            g_seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sleep-every") && i + 1 < argc)
            g_sleep_every = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sleeps") && i + 1 < argc)
            g_sleeps = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kernel-busy"))
            kernel_busy = 1;
        else if (!strcmp(argv[i], "--no-d9"))
            g_use_d9 = 0;
        else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > MAX_THREADS || g_seconds <= 0) {
        usage(stderr);
        return 2;
    }
    /* --sleeps: the workers exist before the collector can see the process,
     * so its per-thread events are open from the start */
    if (g_use_d9 && !g_sleeps)
        d9_init();
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    if (g_sleeps)
        pthread_sigmask(SIG_BLOCK, &usr1, NULL);    /* the workers inherit it */
    struct worker w[MAX_THREADS];
    memset(w, 0, sizeof w);
    double t0 = now_s();
    for (unsigned i = 0; i < nthreads; i++) {
        w[i].idx = i;
        if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
            perror("prog_hot: pthread_create");
            return 1;
        }
    }
    if (g_sleeps) {
        if (g_use_d9)
            d9_init();
        int sig;
        sigwait(&usr1, &sig);
        pthread_mutex_lock(&g_go_mu);
        g_go = 1;
        pthread_cond_broadcast(&g_go_cv);
        pthread_mutex_unlock(&g_go_mu);
        uint64_t slept = 0, n = 0;
        for (unsigned i = 0; i < nthreads; i++) {
            pthread_join(w[i].th, NULL);
            slept += w[i].slept_ns;
            n += w[i].iterations;
        }
        printf("prog_hot: slept %llu ns in %llu sleeps\n", (unsigned long long)slept,
               (unsigned long long)n);
        fflush(stdout);
        if (g_use_d9)
            d9_shutdown();
        return 0;
    }
    int zfd = kernel_busy ? open("/dev/zero", O_RDONLY | O_CLOEXEC) : -1;
    if (zfd >= 0) {
        static char buf[1 << 20];
        while (now_s() - t0 < g_seconds)
            if (read(zfd, buf, sizeof buf) < 0)
                break;
        close(zfd);
    } else {
        struct timespec ts = { (time_t)g_seconds,
                               (long)((g_seconds - (double)(time_t)g_seconds) * 1e9) };
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    g_stop = 1;
    uint64_t total = 0;
    for (unsigned i = 0; i < nthreads; i++) {
        pthread_join(w[i].th, NULL);
        total += w[i].iterations;
    }
    double el = now_s() - t0;
    double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    printf("prog_hot: iterations %llu seconds %.3f rate %.1f/s cpu %.3f per-cpu-second %.1f\n",
           (unsigned long long)total, el, (double)total / el, cpu, cpu > 0 ? (double)total / cpu : 0.0);
    fflush(stdout);
    if (g_use_d9)
        d9_shutdown();
    return 0;
}
