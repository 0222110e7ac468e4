/*
 * bench_loop_cb.c — what the preload shim adds to one callback, measured
 * inside a running loop without the loop's own cost (a syscall per
 * iteration, about a microsecond on a VM, would hide tens of nanoseconds).
 *
 * A plain program (no d9 in it) registers a callback with libuv
 * (uv_idle_start) or libevent (event_new) as any program does, then, from
 * inside a callback of the running loop (so the shim sees a traced loop on
 * this thread), reads back what the library stored as the callback: under
 * LD_PRELOAD=libd9preload.so that is the shim's trampoline, without it the
 * program's own function. It calls the program's function directly
 * ("plain") and the stored callback ("stored"), both through a volatile
 * pointer so that neither is inlined, in two settings:
 *
 *   hot    back-to-back calls in alternating batches of BENCH_BATCH,
 *          timed per batch: the shim's instructions with warm caches;
 *   cold   each call after one system call (getppid), the state a loop's
 *          callback runs in (the loop waited in epoll_wait just before):
 *          the kernel entry evicts some of what the shim touches (TLB
 *          entries, cache lines); each call timed alone with the TSC,
 *          plain and stored alternating, the system call outside the
 *          timed part.
 *
 * With BENCH_EVICT_KB=N in the environment, each cold call (both kinds)
 * is preceded, before its system call and outside the timed part, by a
 * walk of an N KiB buffer (a write per 64-byte line): the state after a
 * loop iteration that did work of its own between two callbacks, where
 * the shim's lines are out of L1 (32..48 KiB) or L2 (a few MiB). Unset or
 * 0: no walk (the "cold" setting above, as before).
 *
 * Between rounds it sleeps BENCH_PAUSE_US so that a collector drains the
 * records (a full ring would measure the drop path instead). It prints,
 * per setting, the medians of plain and stored and the added cost, with
 * the spread over rounds. Without the preload "added" is the noise floor
 * (the same function twice); with it, the shim's cost per callback: the
 * trampoline and the poll's two records. Both come from the same run.
 *
 * Usage: bench_loop_cb uv|event [ROUNDS] (default 200).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <uv.h>

#define BENCH_BATCH     2000        /* hot: calls per timed batch (4000 records, 128 KiB) */
#define BENCH_COLD      500         /* cold: calls of each kind per round */
#define BENCH_PAUSE_US  2000        /* between rounds: the collector drains */
#define BENCH_START_US  500000      /* before the first round: the collector adopts us */
#define BENCH_ROUNDS    200

static unsigned g_rounds = BENCH_ROUNDS;
static double *g_hot_plain, *g_hot_stored, *g_cold_plain, *g_cold_stored;
static uint64_t *g_cyc_plain, *g_cyc_stored;   /* one round's cold calls, in TSC cycles */
static double g_ns_per_cycle;
static volatile uint64_t g_calls;
static volatile unsigned char *g_evict;        /* BENCH_EVICT_KB's buffer, or NULL */
static size_t g_evict_len;

static void evict(void)
{
    for (size_t o = 0; o < g_evict_len; o += 64)
        g_evict[o]++;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* TSC read ordered against the instructions around it. */
static inline uint64_t tsc(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static void calibrate(void)
{
    uint64_t n0 = now_ns(), c0 = tsc();
    usleep(50000);
    uint64_t n1 = now_ns(), c1 = tsc();
    g_ns_per_cycle = (double)(n1 - n0) / (double)(c1 - c0);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Mean of the middle half of one round's cold calls (in cycles): robust to
 * the few calls an interrupt or a preemption lands on, and finer than the
 * median where the TSC ticks coarsely (some hypervisors scale it). */
static double mid_mean(uint64_t *v)
{
    qsort(v, BENCH_COLD, sizeof *v, cmp_u);
    double s = 0;
    for (unsigned k = BENCH_COLD / 4; k < BENCH_COLD - BENCH_COLD / 4; k++)
        s += (double)v[k];
    return s / (double)(BENCH_COLD - 2 * (BENCH_COLD / 4));
}

static double pct(double *v, unsigned n, double p)
{
    qsort(v, n, sizeof *v, cmp_d);
    return v[(unsigned)(p * (n - 1) + 0.5)];
}

static void report_one(const char *mode, const char *setting, double *plain, double *stored)
{
    double *d = malloc(g_rounds * sizeof *d);
    if (!d)
        exit(1);
    for (unsigned i = 0; i < g_rounds; i++)
        d[i] = stored[i] - plain[i];
    double p10 = pct(d, g_rounds, 0.10), p90 = pct(d, g_rounds, 0.90);
    double add = pct(d, g_rounds, 0.50);
    printf("%-5s %-4s plain %7.1f ns  stored %7.1f ns  added %6.1f ns per callback "
           "(median of %u rounds, p10 %.1f .. p90 %.1f)\n",
           mode, setting, pct(plain, g_rounds, 0.5), pct(stored, g_rounds, 0.5), add,
           g_rounds, p10, p90);
    free(d);
}

static void report(const char *mode)
{
    report_one(mode, "hot", g_hot_plain, g_hot_stored);
    report_one(mode, "cold", g_cold_plain, g_cold_stored);
}

/* Round i: a hot batch of each kind (alternating order), then BENCH_COLD
 * cold calls of each kind (alternating), medians into the round's slots. */
#define BENCH_ROUND(i, PLAIN_CALL, STORED_CALL)                                  \
    do {                                                                         \
        uint64_t a_, b_, c_;                                                     \
        if ((i) % 2 == 0) {                                                      \
            a_ = now_ns();                                                       \
            for (int k_ = 0; k_ < BENCH_BATCH; k_++) PLAIN_CALL;                 \
            b_ = now_ns();                                                       \
            for (int k_ = 0; k_ < BENCH_BATCH; k_++) STORED_CALL;                \
            c_ = now_ns();                                                       \
            g_hot_plain[i] = (double)(b_ - a_) / BENCH_BATCH;                    \
            g_hot_stored[i] = (double)(c_ - b_) / BENCH_BATCH;                   \
        } else {                                                                 \
            a_ = now_ns();                                                       \
            for (int k_ = 0; k_ < BENCH_BATCH; k_++) STORED_CALL;                \
            b_ = now_ns();                                                       \
            for (int k_ = 0; k_ < BENCH_BATCH; k_++) PLAIN_CALL;                 \
            c_ = now_ns();                                                       \
            g_hot_stored[i] = (double)(b_ - a_) / BENCH_BATCH;                   \
            g_hot_plain[i] = (double)(c_ - b_) / BENCH_BATCH;                    \
        }                                                                        \
        usleep(BENCH_PAUSE_US);                                                  \
        for (int k_ = 0; k_ < BENCH_COLD; k_++) {                                \
            evict();                                                             \
            syscall(SYS_getppid);                                                \
            a_ = tsc();                                                          \
            PLAIN_CALL;                                                          \
            g_cyc_plain[k_] = tsc() - a_;                                        \
            evict();                                                             \
            syscall(SYS_getppid);                                                \
            a_ = tsc();                                                          \
            STORED_CALL;                                                         \
            g_cyc_stored[k_] = tsc() - a_;                                       \
        }                                                                        \
        g_cold_plain[i] = mid_mean(g_cyc_plain) * g_ns_per_cycle;                \
        g_cold_stored[i] = mid_mean(g_cyc_stored) * g_ns_per_cycle;              \
        usleep(BENCH_PAUSE_US);                                                  \
    } while (0)

/* ---- libuv ----------------------------------------------------------------- */

static __attribute__((noinline)) void uv_target(uv_idle_t *h)
{
    (void)h;
    g_calls++;
}

static void uv_driver(uv_idle_t *driver)
{
    uv_idle_t h;
    uv_idle_init(driver->loop, &h);
    uv_idle_start(&h, uv_target);
    void (*volatile stored)(uv_idle_t *) = h.idle_cb;   /* the trampoline under the shim */
    void (*volatile plain)(uv_idle_t *) = uv_target;
    uv_idle_stop(&h);
    usleep(BENCH_START_US);
    for (unsigned i = 0; i < g_rounds; i++)
        BENCH_ROUND(i, plain(&h), stored(&h));
    uv_close((uv_handle_t *)&h, NULL);
    uv_idle_stop(driver);
}

static int run_uv(void)
{
    uv_loop_t *loop = uv_default_loop();
    uv_idle_t driver;
    uv_idle_init(loop, &driver);
    uv_idle_start(&driver, uv_driver);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&driver, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    report("uv");
    return uv_loop_close(loop) == 0 ? 0 : 1;
}

/* ---- libevent --------------------------------------------------------------- */

static __attribute__((noinline)) void ev_target(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    g_calls++;
}

static void ev_driver(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct event_base *base = arg;
    struct event *ev = event_new(base, -1, 0, ev_target, (void *)&g_calls);
    if (!ev)
        exit(1);
    /* the callback libevent will call: read from the event itself (event_struct.h) */
    event_callback_fn volatile stored = ev->ev_evcallback.evcb_cb_union.evcb_callback;
    event_callback_fn volatile plain = ev_target;
    usleep(BENCH_START_US);
    for (unsigned i = 0; i < g_rounds; i++)
        BENCH_ROUND(i, plain(-1, EV_READ, (void *)&g_calls), stored(-1, EV_READ, (void *)&g_calls));
    event_free(ev);
}

static int run_event(void)
{
    struct event_base *base = event_base_new();
    if (!base)
        return 1;
    struct event *driver = event_new(base, -1, 0, ev_driver, base);
    event_active(driver, EV_READ, 0);
    event_base_loop(base, EVLOOP_ONCE);
    event_free(driver);
    event_base_free(base);
    report("event");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "uv") && strcmp(argv[1], "event"))) {
        fprintf(stderr, "usage: bench_loop_cb uv|event [ROUNDS]\n");
        return 2;
    }
    if (argc > 2)
        g_rounds = (unsigned)strtoul(argv[2], NULL, 10);
    if (g_rounds < 1)
        return 2;
    g_hot_plain = calloc(g_rounds, sizeof(double));
    g_hot_stored = calloc(g_rounds, sizeof(double));
    g_cold_plain = calloc(g_rounds, sizeof(double));
    g_cold_stored = calloc(g_rounds, sizeof(double));
    g_cyc_plain = calloc(BENCH_COLD, sizeof(uint64_t));
    g_cyc_stored = calloc(BENCH_COLD, sizeof(uint64_t));
    if (!g_hot_plain || !g_hot_stored || !g_cold_plain || !g_cold_stored || !g_cyc_plain ||
        !g_cyc_stored)
        return 1;
    const char *ev = getenv("BENCH_EVICT_KB");
    if (ev && *ev) {
        unsigned long kb = strtoul(ev, NULL, 10);
        if (kb > 1024 * 1024) {
            fprintf(stderr, "bench_loop_cb: BENCH_EVICT_KB above 1 GiB\n");
            return 2;
        }
        g_evict_len = (size_t)kb * 1024;
        if (g_evict_len && !(g_evict = calloc(1, g_evict_len)))
            return 1;
    }
    calibrate();
    int rc = strcmp(argv[1], "uv") == 0 ? run_uv() : run_event();
    free(g_hot_plain);
    free(g_hot_stored);
    free(g_cold_plain);
    free(g_cold_stored);
    free(g_cyc_plain);
    free(g_cyc_stored);
    free((void *)g_evict);
    return rc;
}
