/*
 * prog_uvloopwork.c — a plain libuv program (no d9 in it) whose loop does
 * work outside its callbacks, for test_uv_loopwork.sh: ROUNDS times, one
 * uv_run(UV_RUN_ONCE) (a 2 ms timer: a wait and a callback), then
 * WORK_MS ms of the thread's CPU time in loopwork_spin() outside any
 * callback, as Neovim does its scheduled work between uv_run calls; a last
 * uv_run closes the last round. Prints the rounds and ticks and exits 0.
 * With --hold it waits for a line on stdin before the rounds (so the
 * collector has adopted it and samples it from the first round) and for EOF
 * before exiting (so the collector reads its mappings, which name
 * loopwork_spin, while it lives).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#define ROUNDS 8
#define WORK_MS 50

static int ticks;
static volatile unsigned long sink;

static void on_tick(uv_timer_t *t)
{
    (void)t;
    ticks++;
}

static long long cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* ms of this thread's CPU time, spent here (the samples' innermost frame) */
__attribute__((noinline)) static void loopwork_spin(long ms)
{
    long long end = cpu_ns() + ms * 1000000ll;
    while (cpu_ns() < end)
        for (int i = 0; i < 20000; i++)
            sink = sink * 31 + (unsigned long)i;
}

int main(int argc, char **argv)
{
    uv_loop_t *loop = uv_default_loop();
    uv_timer_t timer;
    uv_timer_init(loop, &timer);
    uv_timer_start(&timer, on_tick, 2, 2);
    bool hold = argc > 1 && strcmp(argv[1], "--hold") == 0;
    char line[64];
    if (hold && !fgets(line, sizeof line, stdin))
        line[0] = 0;
    int rounds = 0;
    for (; rounds < ROUNDS; rounds++) {
        uv_run(loop, UV_RUN_ONCE);
        loopwork_spin(WORK_MS);
    }
    uv_run(loop, UV_RUN_ONCE);
    uv_timer_stop(&timer);
    uv_close((uv_handle_t *)&timer, NULL);
    int rc = uv_run(loop, UV_RUN_DEFAULT);
    printf("rounds=%d ticks>=%d\n", rounds, ticks >= rounds ? rounds : ticks);
    fflush(stdout);
    while (hold && fgets(line, sizeof line, stdin))
        ;
    return rc | uv_loop_close(loop);
}
