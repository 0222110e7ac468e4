/*
 * prog_uvtramp.c — a plain libuv program (no d9 in it) for
 * test_uv_stacks.sh: one repeating timer whose callback, tramp_tick(),
 * spends most of the run's CPU time in tramp_spin(), so CPU samples taken
 * under the preload shim land inside a callback that libuv calls through one
 * of the shim's trampolines. tramp_deep() in between keeps 40 KiB on the
 * stack, every page touched (more than d9collectd's default DWARF stack
 * copy: main is past it); tramp_spin() sorts with libc's qsort (whose
 * static merge sort is named only by libc's debug file). With --hole,
 * tramp_hole() instead: 12 KiB on the stack that nothing touches, as
 * libuv's uv__io_poll keeps its epoll_event array (its pages stay absent
 * unless something made them present). With --small-stack KB, the loop runs on
 * a thread of a KB KiB stack and the callback only sorts (the shim must
 * not use that stack up). Runs for --seconds S (default 2) of wall time,
 * prints the ticks and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

static volatile unsigned long sink;
static int ticks;
static long long end_ns;

static long long now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ms of this thread's CPU time, spent here and in qsort */
__attribute__((noinline)) static void tramp_spin(long ms)
{
    long long end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000ll;
    int v[256];
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end) {
        for (int i = 0; i < 256; i++)
            v[i] = (int)((sink = sink * 6364136223846793005ul + 1442695040888963407ul) >> 33);
        qsort(v, 256, sizeof v[0], cmp_int);
    }
}

/* 40 KiB of stack between the callback and the work */
__attribute__((noinline)) static void tramp_deep(long ms)
{
    volatile char pad[40960];
    for (size_t i = 0; i < sizeof pad; i += 512)  /* every page present: perf copies */
        pad[i] = 1;                                 /* only present pages of a stack */
    tramp_spin(ms);
    pad[1] = pad[0];
}

/* 12 KiB of stack between the callback and the work, untouched */
__attribute__((noinline)) static void tramp_hole(long ms)
{
    volatile char pad[12288];
    pad[0] = 1;
    tramp_spin(ms);
    pad[1] = pad[0];
}

static int hole, small;

__attribute__((noinline)) static void tramp_tick(uv_timer_t *t)
{
    ticks++;
    if (small)
        tramp_spin(1);
    else if (hole)
        tramp_hole(20);
    else
        tramp_deep(20);
    if (now_ns(CLOCK_MONOTONIC) >= end_ns)
        uv_timer_stop(t);
}

/* The loop: on main's stack, or (--hole) on a new thread's, whose pages
 * nothing touched before (main's were, by the program's start-up). */
static void *loop_run(void *arg)
{
    int *rc = arg;
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_timer_t timer;
    uv_timer_init(&loop, &timer);
    uv_timer_start(&timer, tramp_tick, 1, 1);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&timer, NULL);
    *rc = uv_run(&loop, UV_RUN_DEFAULT);
    *rc |= uv_loop_close(&loop);
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--hole") == 0)
            hole = 1;
        else if (strcmp(argv[i], "--small-stack") == 0 && i + 1 < argc)
            small = atoi(argv[++i]);
    }
    end_ns = now_ns(CLOCK_MONOTONIC) + (long long)(seconds * 1e9);
    int rc = 0;
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (small && pthread_attr_setstacksize(&attr, (size_t)small * 1024) != 0)
        return 1;
    if (!hole && !small)
        loop_run(&rc);
    else if (pthread_create(&th, &attr, loop_run, &rc) != 0 || pthread_join(th, NULL) != 0)
        return 1;
    pthread_attr_destroy(&attr);
    printf("ticks=%d\n", ticks);
    return rc;
}
