/*
 * bench_lttng.c — the LTTng-UST side of the comparison: the same 32-byte
 * poll-start payload through an LTTng-UST tracepoint (provider d9bench,
 * bench_lttng_tp.h).
 *
 *   bench_lttng hot  [--name N] [--cpu C] [--batch N] [--batches N] [--warm N]
 *                    [--singles N] [--gap-ns N]
 *       times the tracepoint like bench_hot times d9 (same harness); whether
 *       a session is recording is up to the caller (run-bench.sh starts
 *       lttng-sessiond and a discard-mode session first, or not, for the
 *       "no session" row).
 *   bench_lttng load --threads N --rate EV_PER_S --seconds-ms MS [--cpu C] [--settle-ms MS]
 *       offered load for lttng-consumerd; prints "load tracer=lttng ...".
 *       --settle-ms: sleep first, so the session daemon and consumer have
 *       finished setting up this process's buffers (LTTng's adoption delay).
 *       Discarded events are read by the caller from `lttng list`.
 *
 * Who runs it: tests/bench/run-bench.sh, as an unprivileged user with a
 * private LTTNG_HOME so it talks only to the bench's own session daemon.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/bench/bench_util.h"
#include "tests/bench/bench_lttng_tp.h"

#define DEF_BATCH      1000u
#define DEF_BATCHES    5000u
#define DEF_WARM       200u
#define DEF_SINGLES    200000u
#define CAL_MS         200u

static const uint32_t bench_loc = 7;

static void lt_chunk(uint64_t first, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        lttng_ust_tracepoint(d9bench, poll_start, first + k, bench_loc, 1, 0);
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: bench_lttng hot [--name N] [--cpu C] [--batch N] [--batches N] [--warm N]\n"
        "                       [--singles N] [--gap-ns N]\n"
        "       bench_lttng load --threads N --rate EV_PER_S --seconds-ms MS [--cpu C]\n"
        "                        [--burst N --pause-us U]\n"
        "                        [--settle-ms MS]\n"
        "  hot   times the d9bench:poll_start tracepoint (32-byte payload incl. timestamp)\n"
        "  load  offers RATE events/s (0 = flat out) from N threads for MS milliseconds\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *mode = argv[1];
    const char *name = "lttng";
    int cpu = 0;
    unsigned long gap_ns = 0, threads = 1, rate = 0, seconds_ms = 1000, settle_ms = 0;
    unsigned long burst = 0, pause_us = 0;
    struct bench_run r = { .batch = DEF_BATCH, .nbatches = DEF_BATCHES,
                           .warm_batches = DEF_WARM, .nsingle = DEF_SINGLES };
    for (int i = 2; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "bench_lttng: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "--name")) name = v;
        else if (!strcmp(a, "--cpu")) cpu = (int)bench_arg_ulong(a, v, 0, 4095);
        else if (!strcmp(a, "--batch")) r.batch = (unsigned)bench_arg_ulong(a, v, 1, 1u << 20);
        else if (!strcmp(a, "--batches")) r.nbatches = (unsigned)bench_arg_ulong(a, v, 1, 1u << 24);
        else if (!strcmp(a, "--warm")) r.warm_batches = (unsigned)bench_arg_ulong(a, v, 0, 1u << 24);
        else if (!strcmp(a, "--singles")) r.nsingle = (unsigned)bench_arg_ulong(a, v, 0, 1u << 26);
        else if (!strcmp(a, "--gap-ns")) gap_ns = bench_arg_ulong(a, v, 0, 1000000000ul);
        else if (!strcmp(a, "--threads")) threads = bench_arg_ulong(a, v, 1, BENCH_LOAD_MAX_THREADS);
        else if (!strcmp(a, "--rate")) rate = bench_arg_ulong(a, v, 0, 4000000000ul);
        else if (!strcmp(a, "--seconds-ms")) seconds_ms = bench_arg_ulong(a, v, 10, 600000);
        else if (!strcmp(a, "--settle-ms")) settle_ms = bench_arg_ulong(a, v, 0, 60000);
        else if (!strcmp(a, "--burst")) burst = bench_arg_ulong(a, v, 1, 1000000);
        else if (!strcmp(a, "--pause-us")) pause_us = bench_arg_ulong(a, v, 0, 1000000);
        else { fprintf(stderr, "bench_lttng: unknown option '%s' (try --help)\n", a); return 2; }
    }

    if (!strcmp(mode, "load")) {
        if (settle_ms) {
            lttng_ust_tracepoint(d9bench, poll_start, 0, bench_loc, 1, 0);
            struct timespec ts = { (time_t)(settle_ms / 1000), (long)(settle_ms % 1000) * 1000000L };
            nanosleep(&ts, NULL);
        }
        struct bench_load L = { .nthreads = (unsigned)threads, .rate = (double)rate,
                                .seconds = (double)seconds_ms / 1000.0, .cpu = cpu,
                                .chunk = lt_chunk, .burst = (unsigned)burst,
                                .pause_us = (unsigned)pause_us };
        if (bench_load_run(&L) < 0) { fprintf(stderr, "bench_lttng: bad load\n"); return 2; }
        printf("load tracer=lttng threads=%lu rate=%lu offered=%llu elapsed=%.6f lost=-1\n",
               threads, rate, (unsigned long long)L.offered, L.elapsed_s);
        return 0;
    }
    if (strcmp(mode, "hot") != 0) {
        fprintf(stderr, "bench_lttng: unknown mode '%s' (try --help)\n", mode);
        return 2;
    }

    int rc = bench_pin(cpu);
    if (rc < 0)
        fprintf(stderr, "bench_lttng: cannot pin to cpu %d: %s (running unpinned)\n", cpu,
                strerror(-rc));
    double npt = bench_ns_per_tick(CAL_MS);
    if (npt <= 0.0) { fprintf(stderr, "bench_lttng: TSC calibration failed\n"); return 1; }
    r.gap_ticks = (uint64_t)((double)gap_ns / npt);
    if (bench_run_alloc(&r) < 0) { fprintf(stderr, "bench_lttng: out of memory\n"); return 1; }
    uint64_t empty = bench_empty_pair_ticks();
    int enabled = lttng_ust_tracepoint_enabled(d9bench, poll_start) ? 1 : 0;
    printf("info variant=lttng tracepoint_enabled=%d\n", enabled);

    BENCH_BATCHES(&r, lttng_ust_tracepoint(d9bench, poll_start, bench_i, bench_loc, 1, 0));
    BENCH_SINGLES(&r, lttng_ust_tracepoint(d9bench, poll_start, bench_i, bench_loc, 1, 0));

    struct bench_hot_result res = { .name = name };
    bench_hot_reduce(&r, npt, empty, &res);
    printf("info ns_per_tick=%.6f empty_pair_ticks=%llu issued=%llu\n", npt,
           (unsigned long long)empty,
           (unsigned long long)((uint64_t)(r.warm_batches + r.nbatches) * r.batch + r.nsingle));
    bench_hot_print(stdout, &res);
    bench_run_free(&r);
    return 0;
}
