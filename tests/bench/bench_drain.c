/*
 * bench_drain.c — offered load for d9collectd: N producer threads calling
 * d9_poll_start() (32-byte records) at a given total rate (0 = flat out) for
 * a given time. Prints one line
 *
 *   load tracer=d9 threads=N rate=R offered=E elapsed=S lost=L attach_ms=A pid=P
 *
 * where lost is the agent's own drop counter (ring full) summed over the
 * producer rings, read while the producers are still alive. Before the timed
 * load it records one event from the main thread and waits (up to
 * --attach-timeout-ms) until a collector has drained it: attach_ms is how
 * long adoption took (-1 = no collector), and the load then measures steady
 * state. What the collector persisted is measured by run-bench.sh from the
 * collector's counters.
 *
 * --mix demo offers d9demo's mix of record types instead of poll starts
 * alone (per 20 events: 7 queue depths, 3 poll starts and 3 poll ends, 2
 * wakes, 2 spawns, 2 terminates and one custom event with a path string),
 * so the drain's flat-out cost can be set against its cost at the demo's
 * rate for the same records.
 *
 * Who runs it: tests/bench/run-bench.sh (with DIAL9_* pointing at the bench's
 * private collector socket and shm dir). Never part of make test.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/d9.h"
#include "shm/bell.h"
#include "tests/bench/bench_own_ring.h"
#include "tests/bench/bench_util.h"

static d9_runtime bench_rt;
static d9_loc bench_loc;

D9_SCHEMA(bench_request, "request_done", D9_FIELD_STR("path"), D9_FIELD_U64("status"),
          D9_FIELD_U64("latency_ms"), D9_FIELD_U64("worker"));

static void d9_chunk(uint64_t first, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        d9_poll_start(bench_rt, 0, first + k, bench_loc);
}

/* d9demo's mix, one event per index: see the header comment */
static void d9_chunk_demo(uint64_t first, unsigned n)
{
    static const char *const paths[4] = { "/api/users", "/api/orders/42", "/health", "/static/app.js" };
    for (unsigned k = 0; k < n; k++) {
        uint64_t i = first + k, task = i / 20;
        switch (i % 20) {
        case 0: d9_task_spawn(bench_rt, task, bench_loc); break;
        case 1: case 4: case 7: case 10: case 13: case 15: case 17:
            d9_queue_depth(bench_rt, (uint16_t)(task & 3), i & 31);
            break;
        case 2: case 8: case 14: d9_poll_start(bench_rt, (uint16_t)(task & 3), task, bench_loc); break;
        case 3: case 9: case 16: d9_poll_end(bench_rt, (uint16_t)(task & 3), task); break;
        case 5: case 11: d9_wake(bench_rt, task + 1, task, (uint16_t)(task & 3)); break;
        case 6: d9_task_spawn(bench_rt, task + (1ull << 40), bench_loc); break;
        case 12: d9_task_terminate(bench_rt, task + (1ull << 40)); break;
        case 18:
            d9_emit(&bench_request, D9_STR(paths[task & 3]), D9_U64(200), D9_U64(task % 97),
                    D9_U64(task & 3));
            break;
        default: d9_task_terminate(bench_rt, task); break;
        }
    }
}

static void read_lost(void *arg)
{
    d9_stats st;
    d9_get_stats(&st);
    *(uint64_t *)arg = st.lost;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: bench_drain [--threads N] [--rate EV_PER_S] [--seconds-ms MS] [--cpu C]\n"
        "                   [--attach-timeout-ms MS] [--burst N --pause-us U] [--mix demo|polls]\n"
        "  Offers RATE poll-start events/s in total (0 = as fast as possible, the\n"
        "  default) from N threads (default 1) pinned to CPU C (default 0) for MS\n"
        "  milliseconds (default 1000), then prints one 'load tracer=d9 ...' line.\n"
        "  First waits up to --attach-timeout-ms (default 5000) for a collector to\n"
        "  drain a first event, and reports how long that took (attach_ms).\n"
        "  --burst N: N events at once, then a U us sleep, instead of a rate.\n"
        "  --mix demo: d9demo's mix of record types instead of poll starts only.\n"
        "  bells= is the number of doorbell rings of the process (shm/bell.h).\n"
        "Environment: DIAL9_* as for any traced program.\n");
}

int main(int argc, char **argv)
{
    unsigned long threads = 1, rate = 0, ms = 1000, attach_timeout = 5000, burst = 0, pause_us = 0;
    int cpu = 0, mix_demo = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!v) { fprintf(stderr, "bench_drain: %s needs a value (try --help)\n", a); return 2; }
        if (!strcmp(a, "--threads")) threads = bench_arg_ulong(a, v, 1, BENCH_LOAD_MAX_THREADS);
        else if (!strcmp(a, "--rate")) rate = bench_arg_ulong(a, v, 0, 4000000000ul);
        else if (!strcmp(a, "--seconds-ms")) ms = bench_arg_ulong(a, v, 10, 600000);
        else if (!strcmp(a, "--cpu")) cpu = (int)bench_arg_ulong(a, v, 0, 4095);
        else if (!strcmp(a, "--attach-timeout-ms")) attach_timeout = bench_arg_ulong(a, v, 0, 600000);
        else if (!strcmp(a, "--burst")) burst = bench_arg_ulong(a, v, 1, 1000000);
        else if (!strcmp(a, "--pause-us")) pause_us = bench_arg_ulong(a, v, 0, 1000000);
        else if (!strcmp(a, "--mix")) {
            if (strcmp(v, "demo") && strcmp(v, "polls")) {
                fprintf(stderr, "bench_drain: --mix is demo or polls, not '%s'\n", v);
                return 2;
            }
            mix_demo = !strcmp(v, "demo");
        }
        else { fprintf(stderr, "bench_drain: unknown option '%s' (try --help)\n", a); return 2; }
    }
    int rc = d9_init();
    if (rc != 0) {
        fprintf(stderr, "bench_drain: tracing is not on (d9_init = %d): nothing to measure\n", rc);
        return 1;
    }
    rc = d9_runtime_register("bench", &bench_rt);
    if (rc < 0) {
        fprintf(stderr, "bench_drain: d9_runtime_register: %s\n", strerror(-rc));
        return 1;
    }
    bench_loc = d9_loc_register(__FILE__, __LINE__, __func__);

    /* adoption: one event from this thread, then wait for a consumer */
    long attach_ms = -1;
    d9_poll_start(bench_rt, 0, 0, bench_loc);
    struct bench_own_ring own;
    int have_own = bench_own_ring_find(&own) == 0;
    uint32_t bells0 = have_own ? atomic_load(&shm_bell_of(own.region.base)->word) : 0;
    if (have_own) {
        attach_ms = bench_own_ring_wait_drained(&own, (unsigned)attach_timeout);
        if (attach_ms < 0) {
            fprintf(stderr, "bench_drain: no collector drained the ring within %lu ms\n",
                    attach_timeout);
            attach_ms = -1;
        }
    }

    uint64_t lost = 0;
    struct bench_load L = { .nthreads = (unsigned)threads, .rate = (double)rate,
                            .seconds = (double)ms / 1000.0, .cpu = cpu, .chunk = mix_demo ? d9_chunk_demo : d9_chunk,
                            .burst = (unsigned)burst, .pause_us = (unsigned)pause_us,
                            .at_end = read_lost, .at_end_arg = &lost };
    if (bench_load_run(&L) < 0) {
        fprintf(stderr, "bench_drain: bad load parameters\n");
        return 2;
    }
    uint32_t bells = have_own ? atomic_load(&shm_bell_of(own.region.base)->word) - bells0 : 0;
    printf("load tracer=d9 threads=%lu rate=%lu offered=%llu elapsed=%.6f lost=%llu "
           "attach_ms=%ld pid=%ld bells=%u\n", threads, rate, (unsigned long long)L.offered,
           L.elapsed_s, (unsigned long long)lost, attach_ms, (long)getpid(), bells);
    return 0;
}
