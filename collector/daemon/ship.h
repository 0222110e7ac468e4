/*
 * ship.h — shipping sealed segments to S3 (--ship s3://BUCKET/PREFIX).
 *
 * Purpose: upload every indexed segment, then its manifest, under the keys
 * of collector/s3/s3_key.h, and keep each segment's upload state in the
 * index (idx_upload_*), so a restart resumes and nothing is skipped.
 *
 * Called by: d9collectd.c (start, kick after a seal, stats for d9 status,
 * stop). The uploads run in --ship-jobs threads of their own, each with its
 * own S3 client and its own index connection: the drain thread never waits
 * for the network, and only shares the ship's mutex for ship_kick/ship_stats.
 *
 * Invariants:
 *   - Before a PUT the segment's row records the attempt (attempts + 1), so
 *     after a crash the next run knows an earlier attempt may have landed: it
 *     first asks the server (HEAD) and does not upload again an object that is
 *     there with the same size and MD5 ETag. The manifest goes up after its
 *     segment: a manifest in the bucket means its segment is whole there.
 *   - A segment is in flight in at most one thread (the in-flight set).
 *   - Failures back off exponentially per segment (SHIP_BACKOFF_MIN_NS ..
 *     SHIP_BACKOFF_MAX_NS); 5xx, 429, timeouts and refused connections stay
 *     'pending', refusals (403, 404 bucket, ...) become 'failed' and are
 *     still retried at the longest backoff (the user may fix the bucket).
 *   - A segment deleted by retention meanwhile is simply dropped.
 *   - While the drain thread is saturated (it slept under a tenth of the
 *     last SHIP_DRAIN_WINDOW_NS) and uploads are not catching up, no new
 *     upload starts: reading, hashing and sending a segment would take the
 *     CPU time and cache the drain needs; an upload in flight finishes.
 *   - The upload threads take no signals and run below the drain thread:
 *     SCHED_IDLE (only CPU time nothing else wants) while the backlog is
 *     short, SCHED_OTHER at nice SHIP_NICE while it catches up. Catching up
 *     starts when the unshipped bytes pass half the store cap (later the
 *     disk cap would delete unshipped segments) or the oldest segment
 *     waiting has records older than SHIP_CATCHUP_AGE_NS, and ends when the
 *     backlog is back under a quarter of the cap and younger than that.
 *
 *   - --ship-parquet (parquet_bin set): before a segment's first PUT its
 *     companions are staged in STORE/parquet/ID-TMIN: `d9 export --format
 *     parquet` of the segment's process and window (at least SHIP_PQ_SETTLE_NS
 *     after its last record, so the drain has written what it still held,
 *     such as the end of a poll begun in it), run as a child process
 *     (the daemon links no query layer) under the upload thread's own rule
 *     (SCHED_IDLE at nice SHIP_NICE, or nice SHIP_NICE while catching up),
 *     written to a ".tmp" directory renamed when whole. The window is
 *     (newest record of the process's earlier segments, t_max of this one],
 *     so each row of a process is in one companion. Tables with no row are
 *     not kept. An export that fails holds the segment back like a failed
 *     PUT until SHIP_PQ_TRIES attempts; after that the segment goes
 *     without companions (logged, counted): segments are the record.
 *   - A staged directory is uploaded, each file once (the SHIP_PQ_ATTEMPTED
 *     mark, then HEAD + MD5 as for segments), after its segment has left
 *     the in-flight set or whenever no segment waits, and removed when all
 *     its files are there; so companions survive a crash or an outage as
 *     segments do. Staging holds at most 1/SHIP_PQ_CAP_DIV of the store's
 *     cap; a segment sealed while it is full goes without (logged, counted).
 *
 * Must never: block the drain thread on the network or on a lock held across
 * I/O, log credentials, or delete anything locally (retention is storedir's).
 */
#ifndef D9_DAEMON_SHIP_H
#define D9_DAEMON_SHIP_H

#include <stddef.h>
#include <stdint.h>
#include "collector/s3/s3_cfg.h"

#define SHIP_BACKOFF_MIN_NS 500000000ULL     /* first retry after 0.5 s */
#define SHIP_BACKOFF_MAX_NS 30000000000ULL   /* then doubling up to 30 s */
#define SHIP_IDLE_NS 1000000000ULL           /* look for work at least this often */
#define SHIP_ERR_MAX 512
#define SHIP_NICE 10                         /* upload threads' nice value: the drain comes first */
#define SHIP_CATCHUP_AGE_NS 300000000000ULL  /* a segment waiting 5 min makes uploads compete */
#define SHIP_DRAIN_WINDOW_NS 100000000ULL    /* the drain's load is judged over 100 ms */
#define SHIP_DRAIN_IDLE_DIV 10u              /* saturated: asleep under a tenth of that */
#define SHIP_DEFER_NS 20000000ULL            /* a deferred upload looks again after 20 ms */
#define SHIP_PQ_DIR "parquet"                /* STORE/parquet: staged companions */
#define SHIP_PQ_DIR_MODE 0750
#define SHIP_PQ_TMP_SUFFIX ".tmp"            /* ".ID-TMIN.tmp" while written */
#define SHIP_PQ_LOG ".export.log"            /* the child's output, in the .tmp directory */
#define SHIP_PQ_ATTEMPTED ".attempted"       /* a staged directory some PUT was tried for */
#define SHIP_PQ_TRIES 3u                     /* attempts an export failure holds a segment back */
#define SHIP_PQ_CAP_DIV 8u                   /* staging holds at most 1/8 of the store cap */
#define SHIP_PQ_EXPORT_MAX_NS 600000000000ULL /* an export running 10 min is killed */
#define SHIP_PQ_SETTLE_NS 1000000000ULL      /* export a segment 1 s after its last record */

struct ship;

struct ship_stats {
    uint64_t backlog, backlog_bytes;    /* from the index: segments not shipped yet */
    uint64_t shipped, shipped_bytes;    /* from the index: all shipped segments */
    uint64_t failed;                    /* backlog segments refused by the server */
    uint64_t uploaded, uploaded_bytes;  /* by this run: segments (+manifests) PUT */
    uint64_t failures;                  /* by this run: failed attempts */
    int catching_up;                    /* uploads compete for CPU (see above), else idle */
    int waiting_for_drain;              /* no new upload starts: the drain is saturated */
    char last_error[SHIP_ERR_MAX];      /* of the last failed attempt, "" if none */
    /* --ship-parquet */
    uint64_t pq_staged, pq_staged_bytes; /* segments' companions waiting in STORE/parquet */
    uint64_t pq_segments;               /* by this run: segments whose companions are all up */
    uint64_t pq_uploaded;               /* by this run: Parquet files PUT */
    uint64_t pq_skipped, pq_failed;     /* by this run: segments gone without (cap, export) */
};

/* Start jobs upload threads for the store (cfg holds bucket, endpoint,
 * region and credentials; host names the store in keys; store_cap is the
 * store's disk cap in bytes, 0 for none; parquet_bin the d9 program that
 * writes Parquet companions, NULL or "" for none). -errno with one line in
 * err on failure. */
int ship_start(struct ship **out, const struct s3_cfg *cfg, const char *store_dir,
               const char *host, unsigned jobs, uint64_t store_cap, const char *parquet_bin,
               char *err, size_t err_cap);
/* The flight recorder (--retain triggered): uploaders started after this
 * call with on = 1 ship kept windows' segments only (idx_upload_kept_only),
 * each manifest naming its trigger. Call before ship_start. */
void ship_kept_only(int on);

/* Whether uploads should compete for CPU: the backlog's bytes and the age
 * of its oldest records against the cap, with the hysteresis above
 * (was: the current answer). */
int ship_catching_up(int was, uint64_t backlog_bytes, uint64_t oldest_age_ns, uint64_t store_cap);

/* The drain loop's load, judged per SHIP_DRAIN_WINDOW_NS: the loop notes
 * each pass (slept_ns: how long it slept before it, 0 for none); after
 * each full window, saturated says whether it slept under
 * 1/SHIP_DRAIN_IDLE_DIV of it. Pure arithmetic. */
struct ship_drain_load {
    uint64_t window_start, slept;
    int saturated;
};
void ship_drain_load_note(struct ship_drain_load *l, uint64_t now_ns, uint64_t slept_ns);

/* The drain thread says whether it is saturated (no lock, no wait). */
void ship_drain_saturated(struct ship *s, int saturated);

/* A segment was sealed: wake an idle upload thread. Never blocks on I/O. */
void ship_kick(struct ship *s);

/* Counters for d9 status (index totals are refreshed by the upload threads). */
void ship_stats(struct ship *s, struct ship_stats *out);

/* The URL shipped to, "s3://BUCKET/PREFIX". */
const char *ship_url(const struct ship *s);

/* Stop: abort transfers in progress, join the threads, free. NULL is a no-op. */
void ship_stop(struct ship *s);

#endif /* D9_DAEMON_SHIP_H */
