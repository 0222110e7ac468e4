/*
 * serve_workers.h — d9 serve's /api/workers: the facts of every worker of a
 * process in a window, as `d9 sched --totals` answers them (collector/
 * query/q_agg.h: the stored rollups of the 1 s buckets the window covers
 * whole plus the records of its two edges, each edge reading only the
 * blocks it needs), so a zoomed-out window costs what its buckets cost, not
 * a scan of its records:
 *   polls, parks, waits, sched_wait_sum_ns, sched_wait_max_ns, parked_ns,
 *   busy_ns: exactly `d9 sched --totals --raw`'s (a poll counts in the
 *   window of its start, its whole duration; a park interval in its park's;
 *   polls are paired per segment);
 *   tid, unparks, sched_wait_p50_ns, sched_wait_p99_ns, cpu_ns, span_ns,
 *   busy_pct: the rollups do not hold them. They come from a scan of the
 *   window's records (q_sched.h, as plain `d9 sched`) when the index says
 *   the window holds at most SERVE_API_SCAN_MAX records ("scanned": true);
 *   past that they are null ("scanned": false). busy_pct = 100 * busy_ns /
 *   span_ns (busy_ns as above, so a poll longer than the rest of the window
 *   can take it past 100).
 *
 * Called by serve_api.c (it checks pid and the window first). Must never:
 * scan more than SERVE_API_SCAN_MAX records of the index's count.
 */
#ifndef D9_COL_SERVE_WORKERS_H
#define D9_COL_SERVE_WORKERS_H

#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_store.h"

/* Write the JSON answer for pid's workers in [from, to] to out; returns the
 * HTTP status (200, or 500 with {"error": ...}). */
int serve_workers(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to, FILE *out);

#endif /* D9_COL_SERVE_WORKERS_H */
