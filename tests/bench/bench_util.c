/*
 * bench_util.c — pinning, calibration and statistics for the benchmarks.
 * See bench_util.h. Benchmark-only code: may allocate, may print, may exit
 * on bad command-line input; never linked into the product.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/bench/bench_util.h"

int bench_run_alloc(struct bench_run *r)
{
    r->batch_ticks = calloc(r->nbatches ? r->nbatches : 1, sizeof *r->batch_ticks);
    r->single_ticks = calloc(r->nsingle ? r->nsingle : 1, sizeof *r->single_ticks);
    if (!r->batch_ticks || !r->single_ticks) {
        bench_run_free(r);
        return -ENOMEM;
    }
    return 0;
}

void bench_run_free(struct bench_run *r)
{
    free(r->batch_ticks);
    free(r->single_ticks);
    r->batch_ticks = r->single_ticks = NULL;
}

int bench_pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return -errno;
    return 0;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A (tsc, ns) pair whose TSC reads bracket the clock read most tightly. */
static void cal_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 64; i++) {
        uint64_t a = bench_tsc_begin();
        uint64_t n = mono_ns();
        uint64_t b = bench_tsc_end();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

double bench_ns_per_tick(unsigned ms)
{
    uint64_t t0, n0, t1, n1;
    cal_pair(&t0, &n0);
    struct timespec d = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    cal_pair(&t1, &n1);
    if (t1 <= t0 || n1 <= n0)
        return 0.0;
    return (double)(n1 - n0) / (double)(t1 - t0);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t bench_quantile(uint64_t *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_u64);
    size_t k = (size_t)(q * (double)n);
    if (k >= n)
        k = n - 1;
    return v[k];
}

#define EMPTY_PAIR_SAMPLES 4096u

uint64_t bench_empty_pair_ticks(void)
{
    static uint64_t v[EMPTY_PAIR_SAMPLES];
    for (unsigned i = 0; i < EMPTY_PAIR_SAMPLES; i++) {
        uint64_t a = bench_tsc_begin();
        uint64_t b = bench_tsc_end();
        v[i] = b - a;
    }
    return bench_quantile(v, EMPTY_PAIR_SAMPLES, 0.5);
}

void bench_hot_reduce(struct bench_run *r, double ns_per_tick, uint64_t empty_ticks,
                      struct bench_hot_result *res)
{
    /* per-event batch means: (batch ticks - one empty pair) / batch */
    double b = (double)r->batch;
    double e = (double)empty_ticks;
    double med = (double)bench_quantile(r->batch_ticks, r->nbatches, 0.5);
    double p99 = (double)bench_quantile(r->batch_ticks, r->nbatches, 0.99);
    res->batch_med_ns = (med - e) / b * ns_per_tick;
    res->batch_p99_ns = (p99 - e) / b * ns_per_tick;
    if (r->nsingle) {
        double smed = (double)bench_quantile(r->single_ticks, r->nsingle, 0.5);
        double sp99 = (double)bench_quantile(r->single_ticks, r->nsingle, 0.99);
        res->single_med_ns = (smed - e) * ns_per_tick;
        res->single_p99_ns = (sp99 - e) * ns_per_tick;
    } else {
        res->single_med_ns = res->single_p99_ns = -1.0;
    }
    /* the empty pair is a median: a sample can undercut it by a tick or two */
    if (res->batch_med_ns < 0) res->batch_med_ns = 0;
    if (res->batch_p99_ns < 0) res->batch_p99_ns = 0;
    if (r->nsingle && res->single_med_ns < 0) res->single_med_ns = 0;
    if (r->nsingle && res->single_p99_ns < 0) res->single_p99_ns = 0;
    res->events = (uint64_t)r->nbatches * r->batch;
}

void bench_hot_print(FILE *f, const struct bench_hot_result *res)
{
    fprintf(f, "hot name=%s batch_med=%.3f batch_p99=%.3f single_med=%.3f "
               "single_p99=%.3f events=%llu lost=%llu\n",
            res->name, res->batch_med_ns, res->batch_p99_ns, res->single_med_ns,
            res->single_p99_ns, (unsigned long long)res->events,
            (unsigned long long)res->lost);
    fflush(f);
}

unsigned long bench_arg_ulong(const char *opt, const char *val, unsigned long min,
                              unsigned long max)
{
    char *end = NULL;
    errno = 0;
    unsigned long v = val ? strtoul(val, &end, 10) : 0;
    if (!val || errno || end == val || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "bench: %s wants an integer in [%lu, %lu], got '%s'\n", opt, min,
                max, val ? val : "");
        exit(2);
    }
    return v;
}

/* ---- offered-load generator --------------------------------------------- */
#include <pthread.h>

struct load_thread {
    struct bench_load *L;
    pthread_t th;
    pthread_barrier_t *start, *done, *release;
    uint64_t offered;
    uint64_t t_first, t_last;   /* CLOCK_MONOTONIC ns */
};

static void *load_main(void *arg)
{
    struct load_thread *t = arg;
    struct bench_load *L = t->L;
    if (L->cpu >= 0)
        bench_pin(L->cpu);
    pthread_barrier_wait(t->start);
    uint64_t t0 = mono_ns();
    uint64_t end = t0 + (uint64_t)(L->seconds * 1e9);
    double per_thread = L->rate > 0 ? L->rate / (double)L->nthreads : 0.0;
    uint64_t n = 0, now = t0, skipped = 0;
    /* a thread that fell behind (preempted) may catch up by at most this
     * many events; the rest is skipped, so the offered load stays smooth
     * instead of arriving as one burst that measures the ring size */
    uint64_t backlog = (uint64_t)(per_thread * BENCH_LOAD_MAX_CATCHUP_S);
    if (backlog < BENCH_LOAD_CHUNK)
        backlog = BENCH_LOAD_CHUNK;
    while (L->burst && now < end) {
        L->chunk(n, L->burst);
        n += L->burst;
        struct timespec ts = { 0, (long)L->pause_us * 1000 };
        nanosleep(&ts, NULL);
        now = mono_ns();
    }
    while (!L->burst && now < end) {
        if (per_thread > 0) {
            /* due = events that should have been issued by now */
            uint64_t due = (uint64_t)((double)(now - t0) * 1e-9 * per_thread) - skipped;
            if (due > n + backlog) {
                skipped += due - n - backlog;
                due = n + backlog;
            }
            if (n >= due) {
                __builtin_ia32_pause();
                now = mono_ns();
                continue;
            }
        }
        L->chunk(n, BENCH_LOAD_CHUNK);
        n += BENCH_LOAD_CHUNK;
        now = mono_ns();
    }
    t->offered = n;
    t->t_first = t0;
    t->t_last = now;
    pthread_barrier_wait(t->done);
    pthread_barrier_wait(t->release);
    return NULL;
}

int bench_load_run(struct bench_load *L)
{
    if (L->nthreads == 0 || L->nthreads > BENCH_LOAD_MAX_THREADS)
        return -EINVAL;
    struct load_thread th[BENCH_LOAD_MAX_THREADS];
    pthread_barrier_t start, done, release;
    pthread_barrier_init(&start, NULL, L->nthreads + 1);
    pthread_barrier_init(&done, NULL, L->nthreads + 1);
    pthread_barrier_init(&release, NULL, L->nthreads + 1);
    for (unsigned i = 0; i < L->nthreads; i++) {
        th[i] = (struct load_thread){ .L = L, .start = &start, .done = &done,
                                      .release = &release };
        int rc = pthread_create(&th[i].th, NULL, load_main, &th[i]);
        if (rc != 0) {
            fprintf(stderr, "bench: pthread_create: %s\n", strerror(rc));
            exit(1);   /* the barrier counts cannot be unwound: give up loudly */
        }
    }
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&done);
    uint64_t first = UINT64_MAX, last = 0;
    L->offered = 0;
    for (unsigned i = 0; i < L->nthreads; i++) {
        L->offered += th[i].offered;
        if (th[i].t_first < first) first = th[i].t_first;
        if (th[i].t_last > last) last = th[i].t_last;
    }
    L->elapsed_s = (double)(last - first) * 1e-9;
    if (L->at_end)
        L->at_end(L->at_end_arg);
    pthread_barrier_wait(&release);
    for (unsigned i = 0; i < L->nthreads; i++)
        pthread_join(th[i].th, NULL);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    pthread_barrier_destroy(&release);
    return 0;
}
