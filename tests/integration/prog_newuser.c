/*
 * prog_newuser.c — the situations a new user ran into, one mode each
 * (test_newuser.sh runs them against a real d9collectd):
 *
 *   saturated SECONDS  a pool of 3 workers "satw0..2" of runtime "pool"
 *                      that never parks after start-up: workers 0 and 1
 *                      park/unpark once at start, worker 2 never parks; then
 *                      each polls 1 ms busy tasks for SECONDS. Prints per
 *                      worker "worker=W tid=T cpu_ns=N" (its own thread CPU
 *                      time, CLOCK_THREAD_CPUTIME_ID) for d9 sched to match.
 *   drops              a 4 KiB ring and no collector while it runs: TYPED
 *                      typed events (D9_EVENT, C), MISMATCH custom events
 *                      whose value type does not match the schema, TOOBIG
 *                      events larger than a record may be, then FLOOD polls
 *                      that fill the ring. Prints "lost_full=N" (what
 *                      d9_get_stats counted for the ring-full cause).
 *   exit CODE          exits with CODE after one event.
 *   signal             raises SIGSEGV after one event (default action: it dies).
 *
 * Prints its pid on the first line.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

#define WORKERS  3
#define TYPED    5
#define MISMATCH 3
#define TOOBIG   2
#define FLOOD    2000

D9_EVENT(shipment, "shipment", (STR, item), (U64, qty), (I64, delta), (F64, price), (BOOL, ok));
D9_SCHEMA(signed_ev, "signed", D9_FIELD_I64("delta"));
D9_SCHEMA(wide_ev, "wide", D9_FIELD_STR("a"), D9_FIELD_STR("b"), D9_FIELD_STR("c"),
          D9_FIELD_STR("d"), D9_FIELD_STR("e"), D9_FIELD_STR("f"), D9_FIELD_STR("g"),
          D9_FIELD_STR("h"), D9_FIELD_STR("i"), D9_FIELD_STR("j"), D9_FIELD_STR("k"),
          D9_FIELD_STR("l"), D9_FIELD_STR("m"), D9_FIELD_STR("n"), D9_FIELD_STR("o"),
          D9_FIELD_STR("p"));

static d9_runtime rt;
static double seconds;

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin_ms(uint64_t ms)
{
    uint64_t end = clock_ns(CLOCK_MONOTONIC) + ms * 1000000u;
    while (clock_ns(CLOCK_MONOTONIC) < end)
        ;
}

static void *sat_worker(void *arg)
{
    uint16_t w = (uint16_t)(uintptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "satw%u", (unsigned)w);
    pthread_setname_np(pthread_self(), name);
    if (w < 2) {                        /* start-up: wait once for work */
        d9_worker_park(rt, w);
        d9_worker_unpark(rt, w);
    }
    uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
    d9_loc l = D9_LOC();
    for (uint64_t task = (uint64_t)w << 32; clock_ns(CLOCK_MONOTONIC) < end; task++) {
        d9_poll_start(rt, w, task, l);
        spin_ms(1);
        d9_poll_end(rt, w, task);
    }
    printf("worker=%u tid=%d cpu_ns=%llu\n", (unsigned)w, (int)gettid(),
           (unsigned long long)clock_ns(CLOCK_THREAD_CPUTIME_ID));
    return NULL;
}

static int saturated(void)
{
    pthread_t t[WORKERS];
    for (uintptr_t i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, sat_worker, (void *)i);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    return 0;
}

static int drops(void)
{
    for (int i = 0; i < TYPED; i++)
        shipment_emit("crate", (uint64_t)i, -i, 2.5, i % 2);
    for (int i = 0; i < MISMATCH; i++)
        d9_emit(&signed_ev, D9_U64(i));             /* U64 for an I64 field */
    static char big[256];            /* strings are cut to 255 bytes (d9.h) */
    memset(big, 'x', 255);
    for (int i = 0; i < TOOBIG; i++)                /* 16 x 264 bytes > a record's 4096 */
        d9_emit(&wide_ev, D9_STR(big), D9_STR(big), D9_STR(big), D9_STR(big), D9_STR(big),
                D9_STR(big), D9_STR(big), D9_STR(big), D9_STR(big), D9_STR(big), D9_STR(big),
                D9_STR(big), D9_STR(big), D9_STR(big), D9_STR(big), D9_STR(big));
    d9_stats before;
    d9_get_stats(&before);
    for (uint64_t i = 0; i < FLOOD; i++)
        d9_poll_start(rt, 0, i, 0);
    d9_stats st;
    d9_get_stats(&st);
    printf("lost_full=%llu\n", (unsigned long long)(st.lost - before.lost));
    return 0;
}

int main(int argc, char **argv)
{
    printf("%d\n", (int)getpid());
    fflush(stdout);
    if (argc < 2 || d9_init() != 0) {
        fprintf(stderr, "prog_newuser: usage or tracing did not start\n");
        return 1;
    }
    d9_runtime_register("pool", &rt);
    int rc = 2;
    if (strcmp(argv[1], "saturated") == 0 && argc > 2) {
        seconds = atof(argv[2]);
        rc = saturated();
    } else if (strcmp(argv[1], "drops") == 0) {
        rc = drops();
    } else if (strcmp(argv[1], "exit") == 0 && argc > 2) {
        d9_task_spawn(rt, 1, 0);
        rc = atoi(argv[2]);
    } else if (strcmp(argv[1], "signal") == 0) {
        d9_task_spawn(rt, 1, 0);
        fflush(stdout);
        raise(SIGSEGV);                 /* dies of it: d9 must not change that */
    }
    fflush(stdout);
    return rc;
}
