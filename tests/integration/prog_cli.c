/*
 * prog_cli.c — a small deterministic traced program for the d9 CLI
 * integration tests (test_cli*.sh). Two worker threads "cliw0"/"cliw1" of
 * runtime "clirt" each:
 *   - spawn and poll SHORT_POLLS short tasks (no work) from spawn_short_task,
 *   - worker 0 additionally polls one long task (long_poll_body busy-loops
 *     LONG_POLL_MS) spawned from spawn_long_task: top-polls must list it first,
 *   - park/unpark around real 2 ms sleeps, record queue depths and a wake,
 *   - emit the custom event "order" {item: str, qty: u64, price: f64,
 *     delta: i64, ok: bool} ORDERS times, item = "widget-<i> \"q\"".
 * Usage: prog_cli [--crash | --crash-in-poll]   (--crash: abort() after the
 * events, with a poll left open, so the store must show the process as
 * crashed; --crash-in-poll: the poll left open busy-loops CRASH_POLL_MS and
 * emits one "order" (item "in-poll") inside it before the abort).
 * Prints its pid on stdout first.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

#define SHORT_POLLS   200
#define LONG_POLL_MS  120
#define ORDERS        5
#define PARKS         3
#define PARK_SLEEP_NS 2000000L
#define CRASH_POLL_MS 1

D9_SCHEMA(order_ev, "order", D9_FIELD_STR("item"), D9_FIELD_U64("qty"), D9_FIELD_F64("price"),
          D9_FIELD_I64("delta"), D9_FIELD_BOOL("ok"));

static d9_runtime rt;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void busy_ms(uint64_t ms)
{
    volatile uint64_t x = 0;
    uint64_t end = now_ns() + ms * 1000000u;
    while (now_ns() < end)
        x++;
}

static __attribute__((noinline)) void long_poll_body(void)
{
    volatile uint64_t x = 0;
    uint64_t end = now_ns() + (uint64_t)LONG_POLL_MS * 1000000u;
    while (now_ns() < end)
        x++;
}

static d9_loc spawn_short_task(uint64_t id)
{
    d9_loc l = D9_LOC();
    d9_task_spawn(rt, id, l);
    return l;
}

static d9_loc spawn_long_task(uint64_t id)
{
    d9_loc l = D9_LOC();
    d9_task_spawn(rt, id, l);
    return l;
}

static void *worker(void *arg)
{
    uint16_t w = (uint16_t)(uintptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "cliw%u", (unsigned)w);
    pthread_setname_np(pthread_self(), name);
    uint64_t base = 1000u * (w + 1u);
    for (uint64_t i = 0; i < SHORT_POLLS; i++) {
        uint64_t id = base + i;
        d9_loc l = spawn_short_task(id);
        d9_queue_depth(rt, w, SHORT_POLLS - i);
        d9_poll_start(rt, w, id, l);
        d9_poll_end(rt, w, id);
        d9_task_terminate(rt, id);
    }
    if (w == 0) {
        uint64_t id = 999;
        d9_loc l = spawn_long_task(id);
        d9_poll_start(rt, w, id, l);
        long_poll_body();
        d9_poll_end(rt, w, id);
        d9_wake(rt, id, base, 1);
    }
    for (int i = 0; i < PARKS; i++) {
        d9_worker_park(rt, w);
        struct timespec ts = { 0, PARK_SLEEP_NS };
        nanosleep(&ts, NULL);
        d9_worker_unpark(rt, w);
    }
    for (int i = 0; i < ORDERS; i++) {
        char item[64];
        snprintf(item, sizeof item, "widget-%d \"q\"", i);
        d9_emit(&order_ev, D9_STR(item), D9_U64(3 + i), D9_F64(2.5), D9_I64(-5), D9_BOOL(i % 2));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int crash = argc > 1 && strcmp(argv[1], "--crash") == 0;
    int crash_in_poll = argc > 1 && strcmp(argv[1], "--crash-in-poll") == 0;
    printf("%d\n", (int)getpid());
    fflush(stdout);
    if (d9_init() != 0) {
        fprintf(stderr, "prog_cli: tracing did not start\n");
        return 1;
    }
    d9_runtime_register("clirt", &rt);
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    if (crash) {
        d9_poll_start(rt, 0, 4242, D9_LOC());   /* a poll that never ends */
        abort();
    }
    if (crash_in_poll) {
        d9_poll_start(rt, 0, 4343, D9_LOC());   /* dies CRASH_POLL_MS into it */
        busy_ms(CRASH_POLL_MS);
        d9_emit(&order_ev, D9_STR("in-poll"), D9_U64(1), D9_F64(1.0), D9_I64(0), D9_BOOL(1));
        abort();
    }
    return 0;
}
