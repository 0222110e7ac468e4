/*
 * bench_irq.c — what one CPU-profile sample costs the CPU it interrupts:
 * d9collectd's host sampler (perf_host_open, so the very events the
 * collector opens: one per CPU, callchains, kernel frames when allowed, on
 * the scheduler tick or on cpu-clock timers) against a compute loop pinned
 * to every CPU.
 *
 * Method: the events are switched on and off (perf_host_enable) in
 * alternating slices (default 200 ms: 20 ms to settle, then 180 ms
 * measured), and the loops' iteration rate is compared between the on and
 * the off slices. The slices are short next to the drift of a VM's CPU
 * speed, so the drift cancels and a cost far below a run-to-run noise of
 * several percent can be measured. The samples are counted as the
 * collector reads them (perf_host_poll, plus what PERF_RECORD_LOST
 * reports), so the cost per sample does not trust the nominal frequency:
 *
 *   us_per_sample = (1 - rate_on / rate_off) x CPUs x measured on-time / samples
 *
 * Prints one line of key=value pairs (run-bench.sh parses it):
 *   irq clock=tick|cpu-clock hz=H rate=R cpus=N slices=S samples=K overhead_pct=P
 *       us_per_sample=U kernel=0|1
 * (rate: the nominal samples per second of a busy CPU, which on the tick is
 * the tick rate's divisor nearest to H), or "irq skipped=REASON" (exit 0)
 * when the events are refused (per-CPU events need CAP_PERFMON,
 * CAP_SYS_ADMIN or perf_event_paranoid <= 0; the tick needs tracefs and
 * kallsyms, see perf_tick.h).
 *
 * Who runs it: tests/bench/run-bench.sh. Never part of make test.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "collector/daemon/perf.h"
#include "collector/daemon/perf_host.h"
#include "collector/daemon/perf_tick.h"
#include "tests/bench/bench_util.h"

#define IRQ_CPUS_MAX     256
#define IRQ_RING_PAGES   64u        /* data pages per CPU: 256 KiB, > a slice of samples */
#define IRQ_SETTLE_MS    20
#define IRQ_USAGE \
    "usage: bench_irq [--clock tick|cpu-clock] [--hz N] [--seconds S] [--slice-ms M]\n" \
    "  Cost per CPU-profile sample: d9collectd's per-CPU sampling events switched\n" \
    "  on and off in alternating slices over a compute loop on every CPU.\n" \
    "  --clock C     tick (the scheduler tick's tracepoint) or cpu-clock (a timer\n" \
    "                per CPU); default cpu-clock\n" \
    "  --hz N        sampling frequency per CPU (default 999; on the tick, the\n" \
    "                nearest divisor of the tick rate)\n" \
    "  --seconds S   total run time (default 10)\n" \
    "  --slice-ms M  length of one on or off slice, >= 50 (default 200)\n"

struct worker {
    _Atomic uint64_t iters;
    int cpu;
    char pad[64 - sizeof(uint64_t) - sizeof(int)];
};

static struct worker g_w[IRQ_CPUS_MAX];
static atomic_int g_stop;

static void *spin(void *arg)
{
    struct worker *w = arg;
    bench_pin(w->cpu);
    uint64_t x = 1, n = 0;
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        for (int i = 0; i < 1000; i++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ volatile("" : "+r"(x));
        atomic_store_explicit(&w->iters, ++n, memory_order_relaxed);
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t total_iters(int n)
{
    uint64_t s = 0;
    for (int i = 0; i < n; i++)
        s += atomic_load_explicit(&g_w[i].iters, memory_order_relaxed);
    return s;
}

static void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

/* perf_host_poll route: take nothing (the poll counts what it read). */
static int take_none(void *ctx, const struct perf_sample *smp)
{
    (void)ctx;
    (void)smp;
    return 0;
}

/* The samples read since the last call, with the ones PERF_RECORD_LOST
 * says the rings had no room for (each was an interrupt too). */
static uint64_t host_count(struct perf_host *h, uint64_t *lost_seen)
{
    uint64_t n = (uint64_t)perf_host_poll(h, take_none, NULL);
    struct perf_host_stats st;
    perf_host_stats(h, &st);
    n += st.lost - *lost_seen;
    *lost_seen = st.lost;
    return n;
}

int main(int argc, char **argv)
{
    long hz = 999, secs = 10, slice = 200;
    int tick = 0;
    for (int i = 1; i < argc; i += 2) {     /* every option takes a value */
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(IRQ_USAGE, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--clock")) {
            if (val && !strcmp(val, "tick")) {
                tick = 1;
            } else if (val && !strcmp(val, "cpu-clock")) {
                tick = 0;
            } else {
                fprintf(stderr, "bench_irq: --clock takes tick or cpu-clock\n%s", IRQ_USAGE);
                return 2;
            }
        } else if (!strcmp(argv[i], "--hz")) {
            hz = (long)bench_arg_ulong(argv[i], val, 1, PERF_FREQ_MAX);
        } else if (!strcmp(argv[i], "--seconds")) {
            secs = (long)bench_arg_ulong(argv[i], val, 1, 3600);
        } else if (!strcmp(argv[i], "--slice-ms")) {
            slice = (long)bench_arg_ulong(argv[i], val, 50, 10000);
        } else {
            fprintf(stderr, "bench_irq: unknown option '%s'\n%s", argv[i], IRQ_USAGE);
            return 2;
        }
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1 || ncpu > IRQ_CPUS_MAX) {
        fprintf(stderr, "bench_irq: %ld CPUs online: outside 1..%d\n", ncpu, IRQ_CPUS_MAX);
        return 1;
    }
    int n = (int)ncpu;
    struct perf_tick tk;
    char why[256];
    if (tick && perf_tick_probe(&tk, NULL, why, sizeof why) != 0) {
        for (char *c = why; *c; c++)
            if (*c == ' ')
                *c = '_';       /* one key=value token */
        printf("irq skipped=%s\n", why);
        return 0;
    }
    struct perf_host *h;
    int rc = perf_host_open(&h, (uint32_t)hz, IRQ_RING_PAGES, tick ? &tk : NULL);
    if (rc) {
        printf("irq skipped=per-CPU-events-refused:%s\n", strerror(-rc));
        return 0;
    }
    struct perf_host_stats st;
    perf_host_stats(h, &st);
    perf_host_enable(h, 0);
    uint64_t lost_seen = 0;
    pthread_t th[IRQ_CPUS_MAX];
    for (int c = 0; c < n; c++) {
        g_w[c].cpu = c;
        if (pthread_create(&th[c], NULL, spin, &g_w[c]) != 0) {
            fprintf(stderr, "bench_irq: cannot start a thread\n");
            return 1;
        }
    }
    sleep_ms(200);                      /* threads on their CPUs */
    double on_iters = 0, on_t = 0, off_iters = 0, off_t = 0;
    uint64_t samples = 0;
    int slices = 0, on = 0;
    double end = now_s() + (double)secs;
    while (now_s() < end || slices % 2) {   /* an even number: as many on as off */
        on = !on;
        if (perf_host_enable(h, on) != 0) {
            fprintf(stderr, "bench_irq: cannot switch the events %s\n", on ? "on" : "off");
            return 1;
        }
        sleep_ms(IRQ_SETTLE_MS);
        host_count(h, &lost_seen);      /* the settle time's samples do not count */
        double t0 = now_s();
        uint64_t i0 = total_iters(n);
        sleep_ms(slice - IRQ_SETTLE_MS);
        uint64_t i1 = total_iters(n);
        double t1 = now_s();
        uint64_t k = host_count(h, &lost_seen);
        if (on) {
            on_iters += (double)(i1 - i0);
            on_t += t1 - t0;
            samples += k;
        } else {
            off_iters += (double)(i1 - i0);
            off_t += t1 - t0;
        }
        slices++;
    }
    atomic_store(&g_stop, 1);
    for (int c = 0; c < n; c++)
        pthread_join(th[c], NULL);
    perf_host_close(h);
    double r_on = on_iters / on_t, r_off = off_iters / off_t;
    double ovh = 1.0 - r_on / r_off;
    double us = samples ? ovh * (double)n * on_t * 1e6 / (double)samples : 0.0;
    printf("irq clock=%s hz=%ld rate=%.1f cpus=%d slices=%d samples=%llu overhead_pct=%.3f "
           "us_per_sample=%.2f kernel=%d\n", tick ? "tick" : "cpu-clock", hz,
           1e9 / (double)st.sample_ns, n, slices, (unsigned long long)samples, 100.0 * ovh, us,
           st.kernel_frames);
    return 0;
}
