/*
 * q_find.h — findings: what is wrong in a window, ranked, each with its
 * evidence and the time range to look at. `d9 findings` prints them; the
 * facts come from the other modules of query/ (q_pair's polls, q_sched's
 * waits and busy time, q_wake's wake -> poll rule, q_sym's frame names,
 * q_store's processes and drops), so a finding says what those say.
 *
 * The kinds and their rules (thresholds in struct q_find_opts):
 *   crash        a process that crashed (index state "crashed") while a
 *                poll was open: a poll_start with no poll_end by the end of
 *                the process's records, the process's end in the window.
 *                One finding per open poll. Time lost: from the poll's start
 *                to the process's last record.
 *   lost-records a process of the window whose rings dropped >= lost_min
 *                records (the index's drops, by cause; the index keeps them
 *                per process, not per time, so they are the whole process's).
 *                No time: every other finding of that process may be short
 *                of records. Its range: the process's records in the window.
 *   long-poll    polls of one location (process, location) lasting >=
 *                long_poll_ns; the CPU samples of the poll's thread inside
 *                those polls, by innermost frame (the top Q_FIND_FRAMES
 *                names). Time lost: the sum of those polls' durations.
 *   sched-delay  a worker's scheduling wait samples (q_sched.h: every
 *                sampled park and unpark; time runnable, not running)
 *                >= sched_wait_ns. Time lost: the sum of those samples.
 *   wake-delay   wake -> poll delays (q_wake.h: a wake answered by the
 *                wakee's next poll) >= wake_delay_ns, per location of the
 *                answering poll. Time lost: the sum of those delays.
 *   imbalance    a runtime with >= 2 workers where one is busy >= busy_pct
 *                of its span while another is busy <= idle_pct and parks
 *                (q_sched.h's busy_pct, parks). One finding per busy
 *                worker. Time lost: its busy time minus the mean busy time
 *                of its runtime's workers (what sharing would have spared it).
 *   queue-growth a queue (process, runtime, worker or the global queue)
 *                whose depth rose by >= queue_growth from a low to a later
 *                high. Time lost: the time the rise took.
 *   task-leak    tasks spawned in the window and never terminated in it,
 *                spawned >= leak_age_ns before their process's last record
 *                in the window, per spawn location. Time lost: the age of
 *                the oldest one at that last record.
 *   loop-work    a worker's loop-work intervals (q_loopwork.h: its
 *                thread's time outside callbacks and outside its wait, as
 *                Neovim's scheduled work) lasting >= loop_work_ns, with the
 *                thread's CPU samples inside them by innermost frame (the
 *                top Q_FIND_FRAMES names). Time lost: the sum of those
 *                intervals.
 *
 *   trigger      a trigger of the window (the index's triggers table,
 *                idx_trig.h: a d9_trigger() marker, d9 trigger --pid, a long
 *                poll or a crash seen by the collector) that kept a window
 *                (verdict kept or merged); its range: the kept window. No
 *                time lost: a trigger points at a window, it is not a cost;
 *                ranked after the others. Added by q_find_run (the store's
 *                index), not by q_find_finish.
 *
 * Ranking (q_find_list): crashes first, then lost records (they qualify
 * every other finding), then by time lost, largest first; ties by kind,
 * pid, then location/worker.
 *
 * Called by: collector/cli/cli_findings.c (and any reader that wants
 * findings: q_find_run does the whole query against a store). Memory: one
 * entry per location, worker, queue and woken task, per task spawned and
 * not yet terminated, and a bounded sample buffer per thread with a poll
 * open: never per record. Must never: write to the store.
 */
#ifndef D9_COL_Q_FIND_H
#define D9_COL_Q_FIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_scan.h"

/* Defaults of the thresholds. */
#define Q_FIND_DEF_LONG_POLL_NS   (10ull * 1000000ull)     /* a poll this long blocks its worker */
#define Q_FIND_DEF_SCHED_WAIT_NS  (1ull * 1000000ull)      /* runnable, not running, this long */
#define Q_FIND_DEF_WAKE_DELAY_NS  (100ull * 1000ull)       /* woken, not polled, this long */
#define Q_FIND_DEF_BUSY_PCT       90.0
#define Q_FIND_DEF_IDLE_PCT       50.0
#define Q_FIND_DEF_QUEUE_RISE   100ull                   /* tasks */
#define Q_FIND_DEF_LEAK_AGE_NS    (1000ull * 1000000ull)
#define Q_FIND_DEF_LOST_MIN     1ull
#define Q_FIND_DEF_LOOP_WORK_NS   (10ull * 1000000ull)     /* outside callbacks and the wait */

#define Q_FIND_FRAMES         3u       /* top frames kept per long-poll location */
#define Q_FIND_POLL_SAMPLES   64u      /* samples buffered per open poll (more: counted only) */
#define Q_FIND_FRAME_IPS      256u     /* distinct innermost addresses per location */
#define Q_FIND_TEXT_MAX       512u
#define Q_FIND_NAME_MAX       192u

enum q_find_kind {
    Q_FIND_CRASH = 0,
    Q_FIND_LOST,
    Q_FIND_LONG_POLL,
    Q_FIND_SCHED_DELAY,
    Q_FIND_WAKE_DELAY,
    Q_FIND_IMBALANCE,
    Q_FIND_QUEUE_GROWTH,
    Q_FIND_TASK_LEAK,
    Q_FIND_LOOP_WORK,
    Q_FIND_TRIGGER,
    Q_FIND_KIND_COUNT,
};
/* "crash", "lost-records", "long-poll", ... (as above). */
const char *q_find_kind_name(enum q_find_kind k);

struct q_find_opts {
    uint64_t long_poll_ns, sched_wait_ns, wake_delay_ns;
    double busy_pct, idle_pct;
    uint64_t queue_growth, leak_age_ns, lost_min;
    uint64_t loop_work_ns;
};
void q_find_opts_default(struct q_find_opts *o);

struct q_find_frame {
    char name[Q_FIND_NAME_MAX];
    uint64_t samples;
};

struct q_finding {
    enum q_find_kind kind;
    int64_t process_id;
    uint32_t pid, tid;              /* tid 0 = not one thread's */
    uint16_t runtime, worker;       /* worker D9_WORKER_NONE = none / the global queue */
    uint32_t loc;                   /* location id, 0 = none */
    uint64_t task;                  /* the worst instance's task, 0 = none */
    uint64_t count;                 /* instances over the threshold (polls, samples, wakes,
                                       tasks, records lost; depth rise for queue-growth) */
    uint64_t of;                    /* out of how many (polls at the location, ...), 0 = n/a */
    uint64_t total_ns, max_ns;      /* sum and largest of the instances */
    uint64_t lost_ns;               /* the ranking key (see the kinds) */
    uint64_t from_ns, to_ns;        /* the worst instance: where to look */
    uint64_t samples;               /* long-poll, loop-work: CPU samples inside */
    unsigned nframes;
    struct q_find_frame frames[Q_FIND_FRAMES];
    char where[Q_FIND_NAME_MAX];    /* location, "runtime web worker 2", "pid 10" */
    char evidence[Q_FIND_TEXT_MAX]; /* one line */
};

/* What the scan cannot see about a process: its end and its drops. */
struct q_find_proc {
    int64_t process_id;
    uint32_t pid;
    bool crashed;                   /* index state "crashed" */
    int64_t signal;                 /* the crash's signal, 0 = unknown */
    uint64_t last_ns;               /* its last record (index), 0 = unknown */
    uint64_t lost;                  /* records dropped, and by cause: */
    uint64_t full, mismatch, too_big, no_ring;
};

/* Names for the findings' texts; any callback may be NULL ("#id", hex). */
struct q_find_namer {
    void *arg;
    const char *(*location)(void *arg, int64_t process_id, uint32_t loc, char *buf, size_t cap);
    const char *(*runtime)(void *arg, int64_t process_id, uint16_t rt, char *buf, size_t cap);
    /* an innermost frame's address; NULL = leave the address */
    const char *(*frame)(void *arg, int64_t process_id, uint64_t ip, char *buf, size_t cap);
};

/* The record types q_find_feed uses: scan these. */
#define Q_FIND_TYPES (1u << D9_REC_POLL_START | 1u << D9_REC_POLL_END | 1u << D9_REC_WAKE |     \
                      1u << D9_REC_WORKER_PARK | 1u << D9_REC_WORKER_UNPARK |                   \
                      1u << D9_REC_TASK_SPAWN | 1u << D9_REC_TASK_TERMINATE |                   \
                      1u << D9_REC_QUEUE_DEPTH | 1u << D9_REC_CPU_SAMPLE)

struct q_find;
int q_find_new(struct q_find **out, const struct q_find_opts *o);
void q_find_free(struct q_find *f);

/* One record, in scan (time) order; other types are ignored. 0 or -ENOMEM. */
int q_find_feed(struct q_find *f, const struct q_rec_src *src, const struct d9_rec_hdr *rec,
                size_t len);
/* A process of the window (once each, any time before q_find_finish).
 * 0 or -ENOMEM. */
int q_find_process(struct q_find *f, const struct q_find_proc *p);
/* After the last record: derive, name and rank the findings. 0 or -ENOMEM. */
int q_find_finish(struct q_find *f, const struct q_find_namer *nm);
/* The findings, ranked (valid until q_find_free). */
const struct q_finding *q_find_list(const struct q_find *f, size_t *n);

/* The whole query: processes of pid (0 = all) in [from, to] with their
 * drops, the rollups' filter (q_findru.h; not with q_find_raw), one scan of
 * Q_FIND_TYPES, names from the store (locations, runtimes, frames by
 * q_sym), then q_find_finish. The scan still reads every block of the
 * window: wake-delay, imbalance, queue-growth, task-leak, loop-work and
 * crash need every record of their types; the filter only spares the
 * long-poll and sched-delay work (pairing kept, per-thread sample buffers,
 * per-worker wait tables) of the processes and workers whose rollups prove
 * no instance. If the scan meets an instance the filter ruled out (a poll
 * paired across a segment rotation, a block that could not be read), the
 * window is read again without it, with one line on stderr: the findings
 * are always the raw scan's. *st (may be NULL) gets the scan's counts;
 * prog prefixes its warnings. 0 or -errno. */
int q_find_run(struct q_find *f, struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
               struct q_scan_stats *st, const char *prog);
/* raw: q_find_run without the rollups' filter (`d9 findings --raw`, tests). */
void q_find_raw(struct q_find *f, bool raw);

/* One finding as a JSON object (no newline); url (may be NULL) is added as
 * "url". */
void q_find_json(FILE *out, const struct q_finding *x, unsigned rank, const char *url);

#endif /* D9_COL_Q_FIND_H */
