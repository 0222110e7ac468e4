/*
 * proc.h — a traced process in d9collectd: its private state and its
 * lifecycle (adoption of a region, liveness checks, the end of a process,
 * status).
 *
 * Called by d9collectd.c (adopt, liveness, header refresh, end, status).
 * struct proc is also the state drain.c (rings, cursors, the open segment)
 * and prof.c (profiling) keep for the process; they use its fields, never
 * the functions here. proc.c calls drain.c and prof.c, not the reverse.
 *
 * Lifecycle:  adopted (index row upserted) -> alive (drained every pass)
 *   -> ended (kill(pid,0) == ESRCH, /proc start time changed, or goodbye
 *      with the region CLOSED) -> final drain, THREAD_END for live rings,
 *      EXIT block (clean if the region says CLOSED, else crashed), seal,
 *      index the end, unlink the region file -> freed.
 *   A region that faulted (SIGBUS) is quarantined: its shm is never touched
 *   again; what was already written is sealed and the process ends as
 *   'quarantined' when it is gone.
 * Invariants: only fields of the private shm_geometry are used to address
 * shm; every shm access is guarded (guard.h); the region is unlinked only
 * after its data is sealed and indexed.
 */
#ifndef D9_DAEMON_PROC_H
#define D9_DAEMON_PROC_H

#include <stdint.h>
#include "collector/store/col_log.h"
#include "collector/store/seg_writer.h"
#include "collector/daemon/trigd.h"
#include "shm/clock.h"
#include "shm/region.h"
#include "proto/d9.pb-c.h"

struct storedir;
struct prof;
struct met_proc;

/* Collector-private view of one ring: never re-derived from shm. */
struct proc_ring {
    uint32_t generation;        /* generation being tracked (valid if active) */
    uint32_t tid;
    char name[17];
    uint32_t state;             /* slot state at the last snapshot */
    int active;                 /* a generation has been seen and not ended */
    int quarantined;            /* corrupt framing: never read again */
    uint64_t lost_seen;         /* ring 'lost' counter already reported */
    uint64_t lost;              /* drops reported for this ring (status) */
    uint64_t lag_bytes;         /* head - read_tail found by the last pass (backlog) */
    uint64_t head_prev;         /* head at the previous look (valid if head_known) */
    int head_known;
    uint64_t fill_bytes;        /* what the producer wrote since that look (drain.c) */
    uint64_t backlog_ns;        /* when the unread backlog began (0: none at the last look) */
    int tail_known;             /* read_tail/consumed_tail initialised from shm */
    uint64_t read_tail;         /* collector-private cursor: copied into the writer up to here */
    uint64_t consumed_tail;     /* the tail we last published to shm */
    int pend;                   /* read_tail > consumed_tail: waiting for the writer flush */
    uint64_t pend_records;      /* records in [consumed_tail, read_tail) */
    uint64_t first_ns, last_ns; /* time range of the tracked generation; last_ns is
                                 * also the floor of the ring's next stamp */
    uint64_t last_ns_pub;       /* last_ns as of consumed_tail (a failed seal rewinds to it) */
    int thread_dirty;           /* index row needs a refresh */
    int hdr_seen;               /* its header page was in memory once: read every pass */
    int counters_bad;           /* its drop counters were impossible once (counted) */
    struct trigd_ring trig;     /* poll pairing for --trigger-poll-ms (trigd.h) */
    /* The last record of this slot that an earlier collector run persisted
     * (proc_adopt, from the index and that record's segment): records of
     * generation stored_gen up to seq stored_seq are in the store already,
     * even if that run died before it published their tail (drain.c skips
     * them at the first look). */
    int stored_known;
    uint32_t stored_gen, stored_seq;
    uint64_t stored_ts;
};

struct proc {
    struct proc *next;
    uint32_t pid, uid;
    uint64_t start_time;
    char file[128];             /* region file basename */
    struct shm_region region;
    struct shm_geometry geo;
    int64_t process_id;         /* index row */
    uint64_t first_ns;
    uint64_t start_floor_ns;    /* the process's start in CLOCK_MONOTONIC, a tick early:
                                 * no stamp of it can be older (see drain.h) */
    uint64_t ts_clamped;        /* stamps going backwards, raised to the one before */
    uint64_t ts_bad;            /* stamps before the start or after now (drain.h) */
    uint64_t counters_bad;      /* rings whose drop counters could not be true */
    uint32_t hint_seen;         /* the region's ring_hint at the last pass (drain.c) */
    uint64_t probe_ns;          /* when every unseen ring was last checked (drain.c) */
    uint64_t probes;            /* unseen ring header pages checked (mincore), all passes */
    uint64_t fill_rung;         /* full_fill of this loop iteration's doorbell pass, for
                                 * the pacing of the pass after it (d9collectd.c) */

    struct proc_ring *rings;     /* geo.ring_count entries */
    struct seg_writer *writer;  /* open segment, NULL if none */
    uint64_t writer_records;    /* records in the open writer */

    struct shm_clock_cal cal;   /* used for conversion (region pairs or fallback) */
    const struct shm_clock_cal *host_cal;  /* the collector's own calibration */
    int cal_from_region;

    uint8_t *meta;              /* every validated metadata entry so far */
    uint32_t meta_len, meta_cap;
    uint32_t meta_in_writer;    /* meta[0, meta_in_writer) is in the open segment */
    int meta_bad;               /* a malformed entry stopped the walk for good */
    struct trigd_proc trig;     /* schemas that fire triggers (trigd.h) */

    int quarantined;            /* region faulted: shm is off limits */
    int ended;                  /* the process is gone: finish it */
    int goodbye;                /* the agent said goodbye */
    int crash_fired;            /* its crash trigger fired (once, before its exit block) */
    int32_t exit_code;          /* exit code (exited) or signal (crashed), -1 unknown:
                                   from the goodbye or the region's exit_status */
    uint32_t exit_status;       /* d9_region_hdr.exit_status, last read (untrusted) */
    int pidfd;                  /* pexit.h: the kernel's exit status, -1 = none */
    uint64_t image;             /* pexit_image at adoption, 0 = unknown */
    int execd;                  /* the process called execve since (proc_execd) */
    uint32_t region_state;      /* last seen d9_region_state */

    uint64_t records, bytes_written, lost, lag_bytes;
    uint32_t quarantined_rings, rings_in_use, threads_untraced, sampler;
    struct col_ratelimit rl;
    struct prof *prof;          /* profiler (prof.h): perf sampling + maps, NULL = none */
    struct met_proc *met;       /* --metrics (met.h): owned by struct met, NULL = off */
    /* Drops by cause, read from the rings' and the region's counters (the
     * same read as the index's drops row: drain.c's g_drops) at each seal,
     * and at each drain pass when --metrics is on (met.h); no_ring also at
     * each pass. Each only goes up: a read lower than the one before (a
     * hostile region) changes nothing. full counts the drops of each ring
     * beyond its other causes, read as a lower bound (drain.c). */
    struct proc_drops {
        uint64_t full, mismatch, too_big, no_ring;
    } drops;
    uint64_t no_ring_seen;      /* highest lost_no_ring a pass read (or an earlier run
                                   indexed): the lost trigger's base */
};

/* Map and adopt the region file path (basename file) of (uid, pid, start)
 * owned by expected_uid; upsert the process in the index. Errors from
 * shm_region_map (-EPERM owner mismatch, -EBADMSG bad header, -EAGAIN not
 * ready), -ENOMEM, idx_process_adopt's -EEXIST (the index has this process
 * as another uid's) and -EALREADY (the index has it ended: a late region
 * never rewrites it), or the index's error. */
int proc_adopt(const char *path, const char *file, uint32_t expected_uid,
               struct storedir *st, const struct shm_clock_cal *host_cal,
               struct proc **out);

/* 1 if the process still runs (same pid and start time, not a zombie), 0 if gone. */
/* 1 when the process runs another program image than at adoption (it
 * called execve: its agent is gone, pexit_image); remembered. */
int proc_execd(struct proc *p);
int proc_alive(const struct proc *p);

/* Read state/threads_untraced/sampler from the header (guarded). 0 or -EFAULT. */
int proc_refresh_header(struct proc *p);

/* The end of the traced process: final drain, exit record, seal, index,
 * unlink the region. 0 when done (p may be freed), -EAGAIN when a write
 * failed and it must be retried later. */
int proc_finish(struct proc *p, struct storedir *st);

/* At shutdown, when the open segment could not be sealed (write errors):
 * free the writer (seg_writer_abandon) without deleting its temp file, so
 * the next start salvages it. */
void proc_abandon_writer(struct proc *p);

void proc_free(struct proc *p);

/* Fill a status message (allocates rings; free with proc_status_free). Lag
 * and drops are read live from the rings (guarded), not from the last pass:
 * while the store cannot be written the passes stop, the rings do not. */
int proc_status(const struct proc *p, D9__ProcessStatus *ps);
void proc_status_free(D9__ProcessStatus *ps);

#endif /* D9_DAEMON_PROC_H */
