/*
 * pkg_uvhello.c — a libuv program that traces its own loop, built the way a
 * user builds one: `cc pkg_uvhello.c $(pkg-config --cflags --libs d9uv)`
 * against an installed d9 (test_install.sh). Not linked by the Makefile.
 * It includes d9uv.h alone (which brings d9.h) and calls d9_uv_trace
 * without calling d9_init first: d9_uv_trace starts d9 itself. Prints the
 * result and d9_enabled(), runs a timer 3 times; exits 0 when all held.
 */
#include <stdio.h>
#include "d9uv.h"

static int g_ticks;

static void on_tick(uv_timer_t *t)
{
    if (++g_ticks == 3)
        uv_timer_stop(t);
}

int main(void)
{
    uv_loop_t *loop = uv_default_loop();
    int rc = d9_uv_trace(loop, "uvhello");
    printf("trace=%d enabled=%d\n", rc, d9_enabled());
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, on_tick, 1, 1);
    uv_run(loop, UV_RUN_DEFAULT);
    struct d9_uv_stats st;
    d9_uv_get_stats(&st);
    printf("ticks=%d loops_traced=%llu\n", g_ticks, (unsigned long long)st.loops_traced);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    return rc == 0 && d9_enabled() && g_ticks == 3 && st.loops_traced == 1 ? 0 : 1;
}
