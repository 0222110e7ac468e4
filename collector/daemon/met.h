/*
 * met.h — the collector's metrics (--metrics): per traced process and
 * worker counters computed from the records the drain already copies, and
 * the collector's health, rendered as Prometheus text (met_text.h).
 *
 * How it is fed: drain.c hands every chunk of records it has just copied,
 * validated and converted (timestamps in CLOCK_MONOTONIC ns, PAD records
 * gone) to met_feed while the chunk is in cache; only poll, park, unpark
 * and wake records are decoded, and only their runtime, worker, task,
 * flags and wait fields. Nothing is rescanned: a record is looked at once.
 * With --metrics off no met_proc exists and the drain calls nothing.
 *
 * The definitions are q_sched.h's (the facts `d9 sched` and `d9 sql`'s
 * workers table give), so a scrape and a query of the same store agree:
 *   polls       poll_start records of the worker (runtime, worker id);
 *   poll duration: every finished poll, from its poll_start to its
 *               poll_end, paired as q_pair pairs them (d9 sql's polls
 *               table): an end closes the latest open start of its task
 *               (on the worker); an end without an open start, and a start
 *               whose end was dropped (a new start of its task replaces
 *               it), add nothing;
 *   busy        the union of the worker's finished polls: a poll nested
 *               in a finished one adds nothing of its own, and a poll
 *               that never ends adds nothing itself but stops nothing (the
 *               finished polls inside or after it count). Counted when a
 *               poll ends, so the counter equals q_sched's busy_ns for the
 *               records fed so far (without its clamp to the span);
 *   parks       worker_park records; parked: unpark.ts - park.ts;
 *   sched wait  every sampled park and unpark record is one sample of
 *               its sched_wait_ns (count and sum);
 *   wakes       wake records, counted for their target worker (a wake
 *               without one counts for worker "none").
 * Labels: pid, comm (the process's), runtime (its registered name, else
 * its id), worker (the worker id).
 *
 * Bounds (label cardinality): a process's first MET_WORKERS_MAX workers
 * have their own series, the others share worker="other" (its counts are
 * exact, its durations need per-worker pairing and are left out); the
 * first MET_PROCS_MAX processes (in adoption order) have their own series,
 * the others are summed into pid="other", comm="other". An exited process
 * keeps its series for MET_EXITED_KEEP_NS, then they are dropped.
 *
 * Pairing state: at most MET_OPEN_MAX open polls per worker (past them
 * the oldest leaves as if its end were dropped, where q_sched keeps 64 and
 * q_pair all: only deeper nesting than that differs).
 *
 * Lost records by cause are not fed: they are the drain's read of the
 * rings' and the region's drop counters (proc.h's proc_drops, the same
 * read a seal puts in the index), at every pass, copied in before each
 * render; each only goes up.
 *
 * Accuracy: a record is counted when the drain copies it. A segment that
 * fails to seal is read from the ring again (drain.h), and a ring
 * quarantined in the middle of a block loses that block: in both cases the
 * metrics count what the store does not hold.
 *
 * Called by drain.c (met_feed) and d9collectd.c (the rest), on the drain
 * thread only; the HTTP side (met_http.h) sees only published text.
 * Must never: allocate or make a system call in met_feed, or keep a
 * pointer into a region.
 */
#ifndef D9_DAEMON_MET_H
#define D9_DAEMON_MET_H

#include <stddef.h>
#include <stdint.h>
#include "collector/daemon/met_text.h"
#include "collector/daemon/trigd.h"

#define MET_WORKERS_MAX    64u
#define MET_PROCS_MAX      32u
#define MET_EXITED_KEEP_NS (300ull * 1000000000ull)    /* 5 minutes */
/* Poll duration buckets: 2^(10 + 2k) ns, k = 0..MET_HIST_BOUNDS-1
 * (1.024 us, 4.096 us, ..., 1.07 s), then +Inf. */
#define MET_HIST_BOUNDS    11u
/* Open polls kept per worker (polls nest: block_on inside a poll); past
 * them the oldest leaves as if its end were dropped. */
#define MET_OPEN_MAX       8u
#define MET_COMM_MAX       17u
/* Runtime names kept per process (the runtime label); a runtime past them,
 * or without a name, is labelled by its id. */
#define MET_RUNTIMES_MAX   16u
#define MET_RUNTIME_NAME_MAX 48u
/* The loop renders and publishes the text at most this often. */
#define MET_PUBLISH_NS     (250ull * 1000000ull)

struct met_open {               /* an open poll of a worker */
    uint64_t task;
    uint64_t ts;                /* its start */
    uint64_t from;              /* its busy time starts here (its start, or the end of a
                                   poll that covered it so far) */
    uint64_t inner;             /* busy time of finished polls inside it, already counted */
};

struct met_worker {
    uint16_t runtime, worker;
    uint64_t polls, parks, unparks, wakes;
    uint64_t waits, wait_sum_ns;
    uint64_t busy_ns, parked_ns;
    uint64_t hist[MET_HIST_BOUNDS + 1];
    uint64_t poll_sum_ns;       /* the histogram's sum: durations of the finished polls */
    /* pairing state: the open polls, in start order */
    struct met_open open[MET_OPEN_MAX];
    uint32_t nopen;
    uint64_t park_ts;
};

/* A traced process's metrics; owned by struct met, pointed to by its proc. */
struct met_proc {
    struct met_proc *next;
    uint32_t pid;
    char comm[MET_COMM_MAX];
    uint64_t ended_ns;          /* 0: live; else when the collector retired it */
    uint32_t n, last;           /* workers in w[]; the last one found */
    struct met_worker w[MET_WORKERS_MAX];
    struct met_worker other;    /* every worker past MET_WORKERS_MAX */
    int other_used;
    struct {
        uint32_t id;
        char name[MET_RUNTIME_NAME_MAX];
    } rt[MET_RUNTIMES_MAX];
    uint32_t nrt;
    /* copied from the process by the loop before each render */
    uint64_t records, bytes;
    /* drops by cause, as the drain last read them from the rings and the
     * region (proc.h's proc_drops): each a counter that never goes down */
    uint64_t lost_full, lost_mismatch, lost_too_big, lost_no_ring;
    uint64_t bad_stamps;
};

/* The collector's own state, filled by d9collectd.c before each render. */
struct met_health {
    uint64_t uptime_ns;
    uint64_t processes;         /* traced processes being drained */
    uint64_t rings_in_use, rings_quarantined, regions_quarantined, regions_rejected;
    uint64_t lag_bytes;         /* records committed but not yet drained, all rings */
    uint64_t pass_ns;           /* the last drain pass's duration */
    uint64_t passes;
    uint64_t records, bytes_written, lost;  /* since start, ended processes included */
    uint64_t segments_sealed, store_bytes, write_errors, dropped_records;
    int shipping;               /* the ship lines only when --ship is on */
    uint64_t ship_backlog, ship_backlog_bytes, ship_shipped, ship_shipped_bytes;
    uint64_t ship_failed, ship_failures;
    uint64_t triggers[TRIGD_SRC_COUNT][TRIGD_VERDICT_COUNT];   /* by source, verdict (trigd.h) */
    int flight;                 /* the flight recorder's lines only with --retain triggered */
    uint64_t flight_settled, flight_windows, flight_kept_bytes, flight_dropped_bytes;
};

struct met {
    struct met_proc *procs;     /* newest first */
    struct met_text text;       /* the last render */
};

void met_init(struct met *m);
void met_free(struct met *m);

/* A new process's metrics (NULL on -ENOMEM: that process goes unmeasured). */
struct met_proc *met_proc_new(struct met *m, uint32_t pid, const char *comm);
/* The process was retired at now_ns: its series stay MET_EXITED_KEEP_NS. */
void met_proc_ended(struct met_proc *mp, uint64_t now_ns);
/* Drop ended processes older than MET_EXITED_KEEP_NS. */
void met_prune(struct met *m, uint64_t now_ns);

/* A runtime's name from the process's metadata (the drain's walk of it):
 * its series get runtime="NAME" (cut to MET_RUNTIME_NAME_MAX - 1 bytes). */
void met_runtime_name(struct met_proc *mp, uint32_t id, const char *name);

/* The records of a chunk the drain just copied (buf holds n bytes of
 * validated records, back to back). */
void met_feed(struct met_proc *mp, const uint8_t *buf, size_t n);

/* Render everything into m->text. 0 or -ENOMEM. */
int met_render(struct met *m, const struct met_health *h);

/* The bucket of a poll of ns nanoseconds (0..MET_HIST_BOUNDS; the last is +Inf). */
unsigned met_bucket(uint64_t ns);

#endif /* D9_DAEMON_MET_H */
