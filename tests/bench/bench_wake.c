/*
 * bench_wake.c — q_wake's cost per lookup (collector/query/q_wake.h), the
 * pattern `d9 findings` and the exports put on it: every poll_start takes
 * (most find no wake: a miss), one wake per six polls is put, and a backlog
 * of wakes never answered (woken tasks that are not polled again in the
 * window) stays in the table and grows it. The bench store's findings run
 * looks like BACKLOG = 1 M..2 M.
 *
 * Usage: bench_wake [POLLS] [BACKLOG]   (defaults 20 M polls, 2 M backlog)
 * Prints "wake.<key> <value>" lines: CPU ns per poll (its take, and a put
 * every sixth), takes that hit, wakes pending at the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "collector/query/q_wake.h"

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);   /* CPU time: the machine may be shared */
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
    uint64_t polls = argc > 1 ? strtoull(argv[1], NULL, 10) : 20000000ull;
    uint64_t backlog = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000ull;
    struct q_wake *w;
    if (q_wake_new(&w) < 0)
        return 1;
    /* the backlog: tasks of a range no poll below ever takes */
    for (uint64_t i = 0; i < backlog; i++) {
        struct q_wake_pending p = { i, 0 };
        if (q_wake_put(w, 1, (1ull << 41) + i * 7919u, &p) < 0)
            return 1;
    }
    uint64_t hits = 0, puts = 0, sum = 0;
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < polls; i++) {
        uint64_t task = (i & 7u) << 40 | i;     /* 8 workers' task ids */
        struct q_wake_pending p;
        if (q_wake_take(w, 1, task, &p) == 1) {
            hits++;
            sum += p.ts;
        }
        if (i % 6 == 2) {                       /* a wake of a task polled a little later */
            struct q_wake_pending np = { i, i };
            uint64_t later = i + 40;
            if (q_wake_put(w, 1, (later & 7u) << 40 | later, &np) < 0)
                return 1;
            puts++;
        }
    }
    uint64_t t1 = now_ns();
    printf("wake.polls %" PRIu64 "\nwake.backlog %" PRIu64 "\nwake.hits %" PRIu64 "\n", polls,
           backlog, hits);
    printf("wake.ns_per_poll %.1f\nwake.pending_end %" PRIu64 "\nwake.check %" PRIu64 "\n",
           (double)(t1 - t0) / (double)(polls ? polls : 1), q_wake_pending_count(w), sum);
    (void)puts;
    q_wake_free(w);
    return 0;
}
