/*
 * q_findru.h — the rollups as a filter for `d9 findings` (q_find.h): which
 * processes may hold a long poll and which workers a long scheduling wait
 * in a window, read from the segments' stored rollups
 * (collector/store/rollup.h, format 3) before the scan, so that the scan
 * skips the work those two kinds cost everywhere else.
 *
 * The rule, per segment of pid (0 = all) meeting [from, to], per 1 s bucket
 * meeting the window:
 *   - a poll entry (runtime, worker, location, bucket) whose max_ns (its
 *     finished polls' longest) is >= the long-poll threshold marks its
 *     process (Q_FINDRU_POLLS): every poll of that process is paired,
 *     counted and sampled as without the filter;
 *   - a worker entry whose wait_max_ns is >= the sched-wait threshold marks
 *     that worker (Q_FINDRU_WORKER): all its wait samples are counted;
 *   - a segment whose rollups are missing or do not check marks its process
 *     Q_FINDRU_ALL (no filter there), with one line on stderr.
 * What the rollups cannot prove: a poll unfinished in its segment (open at
 * a rotation) that the scan pairs with an end in the next segment, or a
 * pairing changed by a block the scan could not read. q_find checks every
 * poll and wait it filters out; one over a threshold sets its "missed" flag
 * and q_find_run reads the window again without the filter, so the output
 * is always the raw scan's.
 *
 * Nothing else is filtered: wake -> poll delays, imbalance, queue growth,
 * task leaks, loop work and crashes need every poll, wake, park, spawn,
 * queue-depth and CPU-sample record of the window, which format 3 rollups
 * do not bound (their wake counts say nothing about delays): the scan still
 * reads every block of the window.
 *
 * Called by q_find.c (q_find_run). Must never: write to the store, or
 * trust rollup bytes rollup_decode has not checked.
 */
#ifndef D9_COL_Q_FINDRU_H
#define D9_COL_Q_FINDRU_H

#include <stdint.h>
#include "collector/query/q_store.h"

/* What must be scanned in full. */
enum q_findru_mark {
    Q_FINDRU_POLLS,                 /* every poll of the process (long-poll) */
    Q_FINDRU_WORKER,                /* every wait sample of (runtime, worker) */
    Q_FINDRU_ALL,                   /* no filter for the process */
};

struct q_findru_stats {
    uint64_t segments;              /* segments whose stored rollups were used */
    uint64_t unfiltered;            /* segments without valid rollups (process marked all) */
    uint64_t marks;                 /* marks set */
};

/* Hand mark() what the rollups of the window cannot rule out, for the
 * thresholds long_poll_ns and sched_wait_ns (runtime and worker: with
 * Q_FINDRU_WORKER only); mark returns < 0 to stop with that error. prog
 * prefixes the stderr lines. 0 or -errno. */
int q_findru_plan(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                  uint64_t long_poll_ns, uint64_t sched_wait_ns,
                  int (*mark)(void *arg, int64_t process_id, enum q_findru_mark what,
                              uint16_t runtime, uint16_t worker),
                  void *arg, struct q_findru_stats *st, const char *prog);

#endif /* D9_COL_Q_FINDRU_H */
