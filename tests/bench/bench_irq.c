/*
 * bench_irq.c — what one CPU-profile sample costs the CPU it interrupts:
 * d9collectd's host sampler (one cpu-clock event per CPU, opened by the
 * collector's own perf_open_event, so with the same attributes: frequency
 * mode, callchains, kernel frames when allowed, idle excluded) against a
 * compute loop pinned to every CPU.
 *
 * Method: the events are switched on and off (ioctl) in alternating slices
 * (default 200 ms: 20 ms to settle, then 180 ms measured), and the loops'
 * iteration rate is compared between the on and the off slices. The slices
 * are short next to the drift of a VM's CPU speed, so the drift cancels and
 * a cost far below a run-to-run noise of several percent can be measured.
 * The samples are counted from the rings (PERF_RECORD_SAMPLE plus what
 * PERF_RECORD_LOST reports), so the cost per sample does not trust the
 * nominal frequency:
 *
 *   us_per_sample = (1 - rate_on / rate_off) x CPUs x measured on-time / samples
 *
 * Prints one line of key=value pairs (run-bench.sh parses it):
 *   irq hz=H cpus=N slices=S samples=K overhead_pct=P us_per_sample=U kernel=0|1
 * or "irq skipped=REASON" (exit 0) when per-CPU events are refused (needs
 * CAP_PERFMON, CAP_SYS_ADMIN or perf_event_paranoid <= 0).
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "collector/perf.h"
#include "tests/bench/bench_util.h"

#define IRQ_CPUS_MAX     256
#define IRQ_RING_PAGES   64u        /* data pages per CPU: 256 KiB, > a slice of samples */
#define IRQ_SETTLE_MS    20
#define IRQ_USAGE \
    "usage: bench_irq [--hz N] [--seconds S] [--slice-ms M]\n" \
    "  Cost per CPU-profile sample interrupt: d9collectd's per-CPU cpu-clock events\n" \
    "  switched on and off in alternating slices over a compute loop on every CPU.\n" \
    "  --hz N        sampling frequency per CPU (default 999)\n" \
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

/* perf_ring_consume callback: count samples, and the ones a
 * PERF_RECORD_LOST says the ring had no room for (each was an interrupt). */
static int count_rec(void *ctx, const struct perf_event_header *h, const uint8_t *rec, size_t len)
{
    uint64_t *n = ctx, lost;
    if (h->type == PERF_RECORD_SAMPLE)
        (*n)++;
    else if (h->type == PERF_RECORD_LOST && perf_parse_lost(rec, len, &lost) == 0)
        *n += lost;
    return 0;
}

/* The samples in one CPU's ring since the last call; the ring is handed back
 * (the collector's own walk: perf_ring_consume). */
static uint64_t ring_count(uint8_t *base, size_t page, uint64_t size)
{
    static uint8_t scratch[PERF_REC_SCRATCH];
    uint64_t n = 0;
    perf_ring_consume(base, page, size, scratch, count_rec, &n);
    return n;
}

int main(int argc, char **argv)
{
    long hz = 999, secs = 10, slice = 200;
    for (int i = 1; i < argc; i += 2) {     /* every option takes a value */
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(IRQ_USAGE, stdout);
            return 0;
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
    int fds[IRQ_CPUS_MAX];
    uint8_t *rings[IRQ_CPUS_MAX];
    long page = sysconf(_SC_PAGESIZE);
    uint64_t ring_size = (uint64_t)IRQ_RING_PAGES * (uint64_t)page;
    int kernel = 1, max_stack = 1;
    for (int c = 0; c < n; c++) {
        fds[c] = perf_open_event(1, (uint32_t)hz, 0, 1, -1, c, 1, &kernel, &max_stack);
        if (fds[c] < 0) {
            printf("irq skipped=per-CPU-events-refused:%s\n", strerror(-fds[c]));
            return 0;
        }
        void *m = mmap(NULL, (size_t)page * (IRQ_RING_PAGES + 1), PROT_READ | PROT_WRITE,
                       MAP_SHARED, fds[c], 0);
        if (m == MAP_FAILED) {
            printf("irq skipped=mmap:%s\n", strerror(errno));
            return 0;
        }
        rings[c] = m;
        ioctl(fds[c], PERF_EVENT_IOC_DISABLE, 0);
    }
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
        for (int c = 0; c < n; c++)
            ioctl(fds[c], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
        sleep_ms(IRQ_SETTLE_MS);
        for (int c = 0; c < n; c++)
            ring_count(rings[c], (size_t)page, ring_size);    /* the settle time's samples do not count */
        double t0 = now_s();
        uint64_t i0 = total_iters(n);
        sleep_ms(slice - IRQ_SETTLE_MS);
        uint64_t i1 = total_iters(n);
        double t1 = now_s();
        uint64_t k = 0;
        for (int c = 0; c < n; c++)
            k += ring_count(rings[c], (size_t)page, ring_size);
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
    for (int c = 0; c < n; c++) {
        pthread_join(th[c], NULL);
        close(fds[c]);
    }
    double r_on = on_iters / on_t, r_off = off_iters / off_t;
    double ovh = 1.0 - r_on / r_off;
    double us = samples ? ovh * (double)n * on_t * 1e6 / (double)samples : 0.0;
    printf("irq hz=%ld cpus=%d slices=%d samples=%llu overhead_pct=%.3f us_per_sample=%.2f kernel=%d\n",
           hz, n, slices, (unsigned long long)samples, 100.0 * ovh, us, kernel);
    return 0;
}
