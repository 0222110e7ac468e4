/*
 * bench_util.h — shared harness for the d9 benchmarks (tests/bench/).
 *
 * What it is for: CPU pinning, TSC -> ns calibration against CLOCK_MONOTONIC,
 * order statistics, and the two timing loops every hot-path variant uses, so
 * the baseline, d9 and LTTng-UST are measured by exactly the same code:
 *
 *   BENCH_BATCHES(r, body)  times r->nbatches batches of r->batch events with
 *                           one rdtsc pair per batch; stores ticks per batch.
 *   BENCH_SINGLES(r, body)  times r->nsingle events one by one with
 *                           lfence;rdtsc ... rdtscp;lfence and stores the ticks
 *                           minus nothing (the empty-pair cost is measured
 *                           separately and subtracted when reporting).
 *
 * `body` is a statement that records one event; it sees `bench_i`, the index
 * of the event (used as the task id). The macros are loops written out in the
 * caller so the event code can be inlined exactly as an application would
 * inline it (the baseline, -DD9_DISABLE, LTTng's tracepoint macro).
 *
 * Pacing: r->gap_ticks > 0 makes the batch loop wait (untimed) until at
 * least gap_ticks after the previous batch started, so a concurrent consumer
 * (d9collectd, lttng-consumerd) sees a bounded offered rate.
 * r->between(r->between_arg) runs (untimed) after every batch.
 *
 * Who calls it: bench_hot.c, bench_lttng.c, bench_drain.c. Never used by the
 * product; never part of `make test`.
 */
#ifndef D9_BENCH_UTIL_H
#define D9_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t bench_tsc_begin(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}
static inline uint64_t bench_tsc_end(void)
{
    unsigned aux;
    uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    return t;
}
static inline uint64_t bench_tsc(void) { return __rdtsc(); }
#else
#error "the d9 benchmarks need an x86 TSC"
#endif

/* Compiler barrier: keeps the compiler from moving or merging stores across it. */
#define BENCH_BARRIER() __asm__ __volatile__("" ::: "memory")

struct bench_run {
    unsigned batch;             /* events per timed batch */
    unsigned nbatches;          /* timed batches (after warm-up) */
    unsigned warm_batches;      /* untimed batches first */
    unsigned nsingle;           /* individually timed events */
    uint64_t gap_ticks;         /* min ticks between batch starts, 0 = back to back */
    void (*between)(void *);    /* untimed, after each batch; may be NULL */
    void *between_arg;
    uint64_t *batch_ticks;      /* [nbatches] */
    uint64_t *single_ticks;     /* [nsingle] */
};

/* Allocate the sample arrays; 0 or -ENOMEM. */
int bench_run_alloc(struct bench_run *r);
void bench_run_free(struct bench_run *r);

static inline void bench_wait_until(uint64_t t)
{
    while (bench_tsc() < t)
        __builtin_ia32_pause();
}

#define BENCH_BATCHES(r, body) do {                                           \
        uint64_t bench_i = 0, bench_next_ = 0;                               \
        unsigned bench_total_ = (r)->warm_batches + (r)->nbatches;           \
        for (unsigned bench_b_ = 0; bench_b_ < bench_total_; bench_b_++) {   \
            if ((r)->gap_ticks) {                                            \
                bench_wait_until(bench_next_);                               \
                bench_next_ = bench_tsc() + (r)->gap_ticks;                  \
            }                                                                \
            uint64_t bench_t0_ = bench_tsc_begin();                          \
            for (unsigned bench_k_ = 0; bench_k_ < (r)->batch; bench_k_++) { \
                body;                                                        \
                bench_i++;                                                   \
            }                                                                \
            uint64_t bench_t1_ = bench_tsc_end();                            \
            if (bench_b_ >= (r)->warm_batches)                               \
                (r)->batch_ticks[bench_b_ - (r)->warm_batches] =             \
                    bench_t1_ - bench_t0_;                                   \
            if ((r)->between)                                                \
                (r)->between((r)->between_arg);                              \
        }                                                                    \
    } while (0)

#define BENCH_SINGLES(r, body) do {                                           \
        uint64_t bench_i = 0;                                                \
        for (unsigned bench_s_ = 0; bench_s_ < (r)->nsingle; bench_s_++) {   \
            uint64_t bench_t0_ = bench_tsc_begin();                          \
            body;                                                            \
            uint64_t bench_t1_ = bench_tsc_end();                            \
            (r)->single_ticks[bench_s_] = bench_t1_ - bench_t0_;             \
            bench_i++;                                                       \
            if ((r)->between && (bench_s_ % (r)->batch) == (r)->batch - 1)   \
                (r)->between((r)->between_arg);                              \
        }                                                                    \
    } while (0)

/* Pin the calling thread to cpu; 0 or a negative errno. */
int bench_pin(int cpu);

/* Measure ns per TSC tick against CLOCK_MONOTONIC over about ms milliseconds. */
double bench_ns_per_tick(unsigned ms);

/* Median-of-runs cost in ticks of an empty bench_tsc_begin/bench_tsc_end pair. */
uint64_t bench_empty_pair_ticks(void);

/* Sort v[0..n) in place and return the value at quantile q (0..1, nearest rank). */
uint64_t bench_quantile(uint64_t *v, size_t n, double q);

/* Result of one variant, printed as one machine-readable line. */
struct bench_hot_result {
    const char *name;
    double batch_med_ns, batch_p99_ns;      /* per-event, from batch means */
    double single_med_ns, single_p99_ns;    /* per event, empty pair subtracted */
    uint64_t events;                        /* events issued in timed batches */
    uint64_t lost;                          /* dropped by the tracer, if known */
};

/* Reduce r's samples into res (sorts the sample arrays). */
void bench_hot_reduce(struct bench_run *r, double ns_per_tick, uint64_t empty_ticks,
                      struct bench_hot_result *res);

/* "hot name=... batch_med=... batch_p99=... single_med=... single_p99=... events=... lost=..." */
void bench_hot_print(FILE *f, const struct bench_hot_result *res);

/* ---- offered-load generator (drain and loss-onset runs) -------------------
 * nthreads producer threads, all pinned to cpu (or unpinned if cpu < 0),
 * each emitting rate/nthreads events/s (rate 0 = as fast as possible) for
 * `seconds`, in chunks of BENCH_LOAD_CHUNK events through chunk() (or, with
 * burst, `burst` events in one chunk() call then a pause_us sleep); a thread
 * that was preempted catches up at most BENCH_LOAD_MAX_CATCHUP_S worth of
 * events and skips the rest (offered counts what was issued). After the
 * last chunk every thread waits at a barrier; at_end() runs in the main
 * thread while the producers are still alive (so their rings are still
 * theirs), then the threads exit. */
#define BENCH_LOAD_CHUNK 64u
#define BENCH_LOAD_MAX_CATCHUP_S 0.0005   /* catch up at most 0.5 ms of events after a stall */
#define BENCH_LOAD_MAX_THREADS 64u

struct bench_load {
    unsigned nthreads;
    double rate;                /* events/s over all threads, 0 = flat out */
    double seconds;
    int cpu;
    unsigned burst;             /* > 0: bursts of this many events (rate ignored), */
    unsigned pause_us;          /*   each followed by a sleep of pause_us */
    void (*chunk)(uint64_t first, unsigned n);
    void (*at_end)(void *);
    void *at_end_arg;
    /* results */
    uint64_t offered;           /* events issued, all threads */
    double elapsed_s;           /* first start to last finish */
};

/* 0 or a negative errno (thread creation). */
int bench_load_run(struct bench_load *L);

/* Parse an unsigned option value; exits with a one-line error when invalid. */
unsigned long bench_arg_ulong(const char *opt, const char *val, unsigned long min,
                              unsigned long max);

#endif /* D9_BENCH_UTIL_H */
