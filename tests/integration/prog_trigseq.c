/*
 * prog_trigseq.c — a traced program for test_triggers.sh that runs a script
 * of steps given as arguments, in order, after printing "pid=PID":
 *   t:REASON   d9_trigger(REASON)
 *   s:MS       sleep MS milliseconds
 *   p:MS       one poll (d9_poll_start, sleep MS ms, d9_poll_end)
 *   w:FILE     wait (at most 60 s) until FILE exists
 *   lose       one d9_emit whose value does not match its schema's type:
 *              the agent drops it, and the ring counts it lost
 *   crash      abort(): the process ends on SIGABRT
 *   f:V        one event of schema "req" (path "/f", latency_ms V)
 *   k:V:REASON a typed trigger (D9_TRIGGER_EVENT) with latency_ms V and
 *              path "/k/V"
 * then exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent/d9.h"

D9_SCHEMA(trigseq_ev, "trigseq", D9_FIELD_I64("delta"));
D9_EVENT(req_ev, "req", (STR, path), (U64, latency_ms));
D9_TRIGGER_EVENT(slow_tg, (U64, latency_ms), (STR, path));

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
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
        } else if (strcmp(a, "lose") == 0) {
            d9_emit(&trigseq_ev, D9_U64(1));    /* U64 for an I64 field: lost */
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
