/*
 * prog_uvcrash.c — a plain libuv program (no d9 in it) for the preload's
 * reliability test (test_rel_preload.sh): a repeating timer whose callback
 * on_tick counts ticks, and then
 *   --crash            after --ticks N ticks, a timer callback crash_cb
 *                      dereferences NULL (SIGSEGV) while it runs, so the
 *                      poll it is in never ends;
 *   --stop-file FILE   (no --ticks) ticks until FILE exists, then closes
 *                      its handles and returns from main.
 * Prints "pid=P" first and "ticks=N rc=R" at a normal end. --count-file F:
 * the number of completed ticks, rewritten in place after each tick, so a
 * kill or a crash leaves it there. --interval-ms I (default 1).
 * Not part of the product.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

static uv_timer_t timer, crasher;
static long ticks, max_ticks;
static const char *stop_file, *count_file;
static int crash, count_fd = -1;

static void save_count(void)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%020ld\n", ticks);
    if (count_fd >= 0 && pwrite(count_fd, buf, (size_t)n, 0) != n)
        perror("prog_uvcrash: count file");
}

static void crash_cb(uv_timer_t *t)
{
    (void)t;
    *(volatile int *)0 = 1;     /* SIGSEGV inside the callback */
}

static void on_close(uv_handle_t *h) { (void)h; }

static void on_tick(uv_timer_t *t)
{
    ticks++;
    save_count();
    if (max_ticks && ticks >= max_ticks) {
        uv_timer_stop(t);
        if (crash)
            uv_timer_start(&crasher, crash_cb, 1, 0);
        else
            uv_close((uv_handle_t *)t, on_close);
        return;
    }
    if (stop_file && access(stop_file, F_OK) == 0) {
        uv_timer_stop(t);
        uv_close((uv_handle_t *)t, on_close);
    }
}

int main(int argc, char **argv)
{
    long interval = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--crash"))
            crash = 1;
        else if (!strcmp(argv[i], "--ticks") && i + 1 < argc)
            max_ticks = atol(argv[++i]);
        else if (!strcmp(argv[i], "--interval-ms") && i + 1 < argc)
            interval = atol(argv[++i]);
        else if (!strcmp(argv[i], "--stop-file") && i + 1 < argc)
            stop_file = argv[++i];
        else if (!strcmp(argv[i], "--count-file") && i + 1 < argc)
            count_file = argv[++i];
        else {
            fprintf(stderr, "usage: prog_uvcrash [--ticks N [--crash]] [--stop-file F] "
                    "[--count-file F] [--interval-ms I]\n");
            return 2;
        }
    }
    if ((!max_ticks && !stop_file) || (crash && !max_ticks) || interval < 1)
        return 2;
    if (count_file && (count_fd = open(count_file, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
        perror(count_file);
        return 1;
    }
    printf("pid=%ld\n", (long)getpid());
    fflush(stdout);
    uv_loop_t *loop = uv_default_loop();
    uv_timer_init(loop, &timer);
    uv_timer_init(loop, &crasher);
    uv_timer_start(&timer, on_tick, (uint64_t)interval, (uint64_t)interval);
    int rc = uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&crasher, on_close);
    uv_run(loop, UV_RUN_DEFAULT);
    rc += uv_loop_close(loop);
    printf("ticks=%ld rc=%d\n", ticks, rc);
    return rc;
}
