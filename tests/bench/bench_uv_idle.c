/*
 * bench_uv_idle.c — the cost of one traced libuv callback: a plain libuv
 * program (no d9 in it) whose idle callback runs N times on the default
 * loop; it prints the mean CPU time of the loop's thread per iteration
 * (CLOCK_THREAD_CPUTIME_ID around uv_run: robust to other tenants taking
 * the CPU away, and it leaves out the agent's start). Run with and
 * without LD_PRELOAD=libd9preload.so (bench_uv_named.sh does, in
 * alternating pairs): the difference is the trampoline plus the poll's two
 * records, per callback. Each iteration also runs libuv's loop (a zero
 * timeout epoll_wait: an idle handle keeps the loop from sleeping), so the
 * ratio is smaller than for the callback alone.
 *
 * Usage: bench_uv_idle [N] (default 2000000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <uv.h>

static unsigned long n_done, n_want;

static void on_idle(uv_idle_t *h)
{
    if (++n_done == n_want)
        uv_idle_stop(h);
}

int main(int argc, char **argv)
{
    n_want = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000ul;
    if (n_want == 0)
        return 2;
    uv_loop_t *loop = uv_default_loop();
    uv_idle_t idle;
    uv_idle_init(loop, &idle);
    uv_idle_start(&idle, on_idle);
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    uv_run(loop, UV_RUN_DEFAULT);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("%.1f CPU ns per callback (%lu callbacks)\n", ns / (double)n_done, n_done);
    uv_close((uv_handle_t *)&idle, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    return uv_loop_close(loop) == 0 ? 0 : 1;
}
