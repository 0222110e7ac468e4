/*
 * prog_trigseq.c — a traced program for test_triggers.sh that runs a script
 * of steps given as arguments, in order, after printing "pid=PID":
 *   t:REASON   d9_trigger(REASON)
 *   s:MS       sleep MS milliseconds
 *   p:MS       one poll (d9_poll_start, sleep MS ms, d9_poll_end)
 *   w:FILE     wait (at most 60 s) until FILE exists
 *   lose       one d9_emit whose value does not match its schema's type:
 *              the agent drops it, and the ring counts it lost
 *   big        one d9_emit larger than a record may be (16 strings of 255
 *              bytes): the agent drops it, the ring counts it lost (too_big)
 *   F:N        N poll starts back to back: with a small ring
 *              (DIAL9_RING_KB=4) and no collector draining it (stopped),
 *              most are dropped by the full ring
 *   o:TEXT     prints the line TEXT on stdout (a step's end, for the test)
 *   crash      abort(): the process ends on SIGABRT
 *   f:V        one event of schema "req" (path "/f", latency_ms V)
 *   k:V:REASON a typed trigger (D9_TRIGGER_EVENT) with latency_ms V and
 *              path "/k/V"
 *   r:N        a thread of its own emits N events of schema "req" and ends;
 *              run with DIAL9_MAX_THREADS=1 after a step that gave the main
 *              thread the one ring, it has none: its N events are lost
 *              by a thread without a ring
 *   q:MS       worker 0 unparks, then runs pinned to one CPU beside a busy
 *              thread pinned to the same CPU until its own run-queue wait
 *              (schedstat) grew by MS ms, then parks: the park record's
 *              sampled wait is at least MS ms (with DIAL9_SCHED_SAMPLE_US=0);
 *              exits 3 when schedstat is missing or 20 s did not make it
 * then exits 0.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "agent/d9.h"

D9_SCHEMA(trigseq_ev, "trigseq", D9_FIELD_I64("delta"));
D9_SCHEMA(wide_ev, "wide", D9_FIELD_STR("a"), D9_FIELD_STR("b"), D9_FIELD_STR("c"),
          D9_FIELD_STR("d"), D9_FIELD_STR("e"), D9_FIELD_STR("f"), D9_FIELD_STR("g"),
          D9_FIELD_STR("h"), D9_FIELD_STR("i"), D9_FIELD_STR("j"), D9_FIELD_STR("k"),
          D9_FIELD_STR("l"), D9_FIELD_STR("m"), D9_FIELD_STR("n"), D9_FIELD_STR("o"),
          D9_FIELD_STR("p"));
D9_EVENT(req_ev, "req", (STR, path), (U64, latency_ms));
D9_TRIGGER_EVENT(slow_tg, (U64, latency_ms), (STR, path));

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void *req_thread(void *arg)
{
    unsigned long n = (unsigned long)(uintptr_t)arg;
    for (unsigned long i = 0; i < n; i++)
        req_ev_emit("/r", i);
    return NULL;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's run-queue wait so far (schedstat field 2); 0 and
 * *ok = 0 when it cannot be read. */
static uint64_t own_wait_ns(int *ok)
{
    char path[64], buf[128];
    unsigned long long exec = 0, wait = 0;
    snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", (long)syscall(SYS_gettid));
    FILE *f = fopen(path, "r");
    *ok = f && fgets(buf, sizeof buf, f) && sscanf(buf, "%llu %llu", &exec, &wait) == 2;
    if (f)
        fclose(f);
    return wait;
}

static atomic_int spin_stop;

static void *spin_thread(void *arg)
{
    cpu_set_t *one = arg;
    sched_setaffinity(0, sizeof *one, one);
    uint64_t end = mono_ns() + 30ull * 1000000000u;     /* bounded even if never stopped */
    while (!atomic_load(&spin_stop) && mono_ns() < end)
        ;
    return NULL;
}

/* q:MS (see the header). 0, or 3 when the wait could not be made. */
static int sched_wait_step(d9_runtime rt, uint64_t ms)
{
    cpu_set_t all, one;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return 3;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        return 3;
    d9_worker_unpark(rt, 0);            /* the agent's baseline sample */
    int ok;
    uint64_t w0 = own_wait_ns(&ok), w = w0;
    if (!ok)
        return 3;
    pthread_t th;
    atomic_store(&spin_stop, 0);
    if (pthread_create(&th, NULL, spin_thread, &one) != 0)
        return 3;
    uint64_t end = mono_ns() + 20ull * 1000000000u;
    while (w - w0 < ms * 1000000u && mono_ns() < end)
        w = own_wait_ns(&ok);
    d9_worker_park(rt, 0);              /* its sampled wait covers w - w0 */
    atomic_store(&spin_stop, 1);
    pthread_join(th, NULL);
    sched_setaffinity(0, sizeof all, &all);
    return w - w0 >= ms * 1000000u ? 0 : 3;
}

int main(int argc, char **argv)
{
    if (d9_init() != 0)
        return 2;
    d9_runtime rt;
    if (d9_runtime_register("trigseq", &rt) != 0)
        return 2;
    printf("pid=%d\n", (int)getpid());
    fflush(stdout);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "t:", 2) == 0) {
            d9_trigger(a + 2);
        } else if (strncmp(a, "s:", 2) == 0) {
            sleep_ms(atol(a + 2));
        } else if (strncmp(a, "p:", 2) == 0) {
            d9_poll_start(rt, 0, 1, D9_LOC());
            sleep_ms(atol(a + 2));
            d9_poll_end(rt, 0, 1);
        } else if (strncmp(a, "w:", 2) == 0) {
            for (int k = 0; k < 6000 && access(a + 2, F_OK) != 0; k++)
                sleep_ms(10);
        } else if (strncmp(a, "f:", 2) == 0) {
            req_ev_emit("/f", strtoull(a + 2, NULL, 10));
        } else if (strncmp(a, "k:", 2) == 0) {
            char *end = NULL, path[64];
            unsigned long long v = strtoull(a + 2, &end, 10);
            snprintf(path, sizeof path, "/k/%llu", v);
            slow_tg_trigger(end && *end == ':' ? end + 1 : "", v, path);
        } else if (strncmp(a, "r:", 2) == 0) {
            pthread_t th;
            unsigned long n = strtoul(a + 2, NULL, 10);
            if (pthread_create(&th, NULL, req_thread, (void *)(uintptr_t)n) != 0)
                return 2;
            pthread_join(th, NULL);
        } else if (strncmp(a, "q:", 2) == 0) {
            if (sched_wait_step(rt, strtoull(a + 2, NULL, 10)) != 0) {
                fprintf(stderr, "prog_trigseq: no run-queue wait of %s ms\n", a + 2);
                return 3;
            }
        } else if (strcmp(a, "lose") == 0) {
            d9_emit(&trigseq_ev, D9_U64(1));    /* U64 for an I64 field: lost */
        } else if (strcmp(a, "big") == 0) {
            static char s[256];                 /* strings are cut to 255 bytes (d9.h) */
            memset(s, 'x', 255);
            d9_emit(&wide_ev, D9_STR(s), D9_STR(s), D9_STR(s), D9_STR(s), D9_STR(s), D9_STR(s),
                    D9_STR(s), D9_STR(s), D9_STR(s), D9_STR(s), D9_STR(s), D9_STR(s),
                    D9_STR(s), D9_STR(s), D9_STR(s), D9_STR(s));   /* > a record's 4096 */
        } else if (strncmp(a, "o:", 2) == 0) {
            printf("%s\n", a + 2);
            fflush(stdout);
        } else if (strncmp(a, "F:", 2) == 0) {
            unsigned long n = strtoul(a + 2, NULL, 10);
            for (unsigned long k = 0; k < n; k++)
                d9_poll_start(rt, 0, k, 0);
        } else if (strcmp(a, "crash") == 0) {
            signal(SIGABRT, SIG_DFL);
            abort();
        } else {
            fprintf(stderr, "prog_trigseq: bad step '%s'\n", a);
            return 2;
        }
    }
    d9_shutdown();
    return 0;
}
