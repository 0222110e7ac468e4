/*
 * prog_metbusy.c — a traced program whose polls test the busy-time rule
 * (test_metrics.sh): worker 0 of runtime "busyrt" (the main thread) starts
 * a poll that never ends, then polls SHORT_POLLS tasks that each busy-loop
 * POLL_US, a poll with a nested one, an outer poll that ends before its
 * inner one, and a poll_end whose start never came; then exits. Busy time
 * is the union of the finished polls, so every poll after the one that
 * never ends counts. Prints its pid on stdout first.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

#define SHORT_POLLS 50
#define POLL_US     20

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void busy_us(uint64_t us)
{
    volatile uint64_t x = 0;
    uint64_t end = now_ns() + us * 1000u;
    while (now_ns() < end)
        x++;
}

int main(void)
{
    printf("%d\n", (int)getpid());
    fflush(stdout);
    d9_runtime rt;
    if (d9_init() != 0 || d9_runtime_register("busyrt", &rt) != 0) {
        fprintf(stderr, "prog_metbusy: tracing did not start\n");
        return 1;
    }
    d9_poll_start(rt, 0, 1, D9_LOC());          /* never ends */
    for (uint64_t i = 0; i < SHORT_POLLS; i++) {
        d9_poll_start(rt, 0, 100 + i, D9_LOC());
        busy_us(POLL_US);
        d9_poll_end(rt, 0, 100 + i);
    }
    d9_poll_start(rt, 0, 2, D9_LOC());          /* outer */
    busy_us(POLL_US);
    d9_poll_start(rt, 0, 3, D9_LOC());          /* nested */
    busy_us(POLL_US);
    d9_poll_end(rt, 0, 3);
    d9_poll_end(rt, 0, 2);
    d9_poll_start(rt, 0, 4, D9_LOC());          /* outer, ends first */
    d9_poll_start(rt, 0, 5, D9_LOC());
    busy_us(POLL_US);
    d9_poll_end(rt, 0, 4);
    busy_us(POLL_US);
    d9_poll_end(rt, 0, 5);
    d9_poll_end(rt, 0, 6);                      /* no start */
    return 0;
}
