/*
 * q_sched.h — the scheduling facts of a worker (process, runtime, worker id)
 * in a window: its polls, parks, run-queue waits, CPU time, parked and busy
 * time. The one definition every reader uses: `d9 sched`, d9 sql's
 * `workers` and `sched_waits` tables, d9 serve's worker summaries and
 * scheduling-delay histograms, the exports' "sched_wait" counters.
 *
 * Scheduling wait (the definition). The agent reads the thread's run-queue
 * wait (schedstat: time runnable but not running) at a worker_park and at a
 * worker_unpark, at most once per DIAL9_SCHED_SAMPLE_US; a record that read
 * it ("sampled", no D9_WORKER_UNSAMPLED) carries the wait since the
 * thread's previous sampled record. Every sampled park AND unpark record is
 * one wait sample:
 *   - an unpark's sample covers the parked interval, mostly the wake-up
 *     latency (woken, then waiting for a CPU);
 *   - a park's sample covers the busy interval before it: a poll preempted
 *     by another thread, a long poll that outran its time slice.
 * Counting only unparks would hide the second kind, which on a saturated
 * host is most of it. The samples of a worker add up to its whole run-queue
 * wait from its first sampled record to its last, whatever the sampling
 * interval (the counter is cumulative; an unsampled record's wait is in the
 * next sampled one). waits = the number of samples, wait_sum their sum,
 * wait_max the largest; percentiles come from a log-linear histogram (16
 * sub-buckets per power of two: within 1/16 = 6%), and are per wake-up only
 * with DIAL9_SCHED_SAMPLE_US=0.
 *
 * The other facts:
 *   polls     poll_start records of the worker;
 *   parks     worker_park records (unparks: worker_unpark records);
 *   parked_ns sum of unpark.ts - park.ts over the park intervals that close
 *             in the window (a park still open at the end adds nothing);
 *   span_ns   from the worker's first poll_start, poll_end, park or unpark
 *             record in the window to the last such record of any worker
 *             of its process: the time the worker existed, so a pool thread
 *             that ran one job and then waited for more (a uv-threadpool
 *             thread) is not busy for the whole of it;
 *   busy_ns   the time in polls: the union of the worker's finished polls
 *             (start and end in the window, paired as q_pair pairs them:
 *             an end closes the latest open start of its task), so a poll
 *             nested in a finished one (block_on inside a poll) adds
 *             nothing of its own, and a poll without an end (still open at
 *             the end, its end dropped) adds nothing itself but stops
 *             nothing: the finished polls inside or after it count;
 *             busy_pct = 100 * busy_ns / span_ns;
 *   cpu_ns    thread CPU time: last - first cpu_ns of the sampled
 *             park/unpark records, or, when the CPU profile's samples of
 *             the worker's thread weigh more (a worker that stops
 *             parking), their total weight.
 *
 * Called from scan callbacks in time order (q_scan.h). Memory: one entry and
 * one histogram (about 4 KiB) per worker, its open polls (at most 64: past
 * that the oldest leaves as if its end were dropped) and one entry per
 * sampled thread, never per record.
 */
#ifndef D9_COL_Q_SCHED_H
#define D9_COL_Q_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_scan.h"

/* The record types q_sched_feed uses: scan these. */
#define Q_SCHED_TYPES (1u << D9_REC_WORKER_PARK | 1u << D9_REC_WORKER_UNPARK |                \
                       1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END | 1u << D9_REC_CPU_SAMPLE)

struct q_sched_worker {
    int64_t process_id;
    uint32_t pid, tid;              /* tid: the thread of its latest record */
    uint16_t runtime, worker;
    uint64_t polls, parks, unparks;
    uint64_t waits, wait_sum_ns, wait_max_ns, wait_p50_ns, wait_p99_ns;
    uint64_t cpu_ns, parked_ns, span_ns, busy_ns;
    uint64_t t_first, t_last;       /* its first and last record */
    double busy_pct;                /* 100 * busy_ns / span_ns (0 when span_ns is 0) */
};

struct q_sched;
int q_sched_new(struct q_sched **out);
void q_sched_free(struct q_sched *s);

/* One record, in scan order (other types are ignored). 0 or -ENOMEM. */
int q_sched_feed(struct q_sched *s, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                 size_t len);

/* The workers seen, sorted by pid, process, runtime, worker: call after the
 * last record. *n = how many; valid until q_sched_free. NULL on -ENOMEM. */
const struct q_sched_worker *q_sched_workers(struct q_sched *s, size_t *n);

/* The wait sample of one record: true and *ns when rec is a sampled
 * worker_park or worker_unpark (see the definition above). */
bool q_sched_wait(const struct d9_rec_hdr *rec, size_t len, uint64_t *ns);

#endif /* D9_COL_Q_SCHED_H */
