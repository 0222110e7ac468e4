/*
 * drain.h — the ring protocol on the collector's side: copy committed
 * records out of a traced process's rings into its open segment, publish
 * the rings' tails once the segment holds them, and seal that segment.
 *
 * drain.c owns a traced process's open segment (struct proc's writer and
 * the ring cursors that depend on it): drain_writer opens it on the first
 * write, by whoever writes (the ring pass here, the profiler in prof.c, the
 * end of the process in proc.c); drain_seal seals it, because a seal is the
 * point where the tails of the records it holds may be published.
 *
 * Called by proc.c (the final drain and the end of a process), prof.c
 * (drain_writer) and d9collectd.c (a pass per loop iteration, flush,
 * rotation), on the collector's single drain thread. Calls guard.c and
 * storedir.c only: it never calls back into proc.c or prof.c.
 *
 * Invariants:
 *   - shm is hostile: records are copied into private memory (the segment
 *     writer's buffer, reserved with seg_writer_data_reserve) by
 *     shm_ring_read(), which validates the copy and, in the same walk,
 *     converts its timestamps and counts it; nothing else is read from a
 *     ring's data area. Each chunk (DRAIN_CHUNK) is packed into the DATA
 *     block while it is in cache. Every read or write of a mapped region
 *     happens between guard_arm() and guard_disarm() (guard.h), so a SIGBUS
 *     (the owner truncated the file) quarantines that region instead of
 *     killing us.
 *   - A ring's shm tail is advanced (shm_ring_consume) only after the
 *     records before it were written to the segment file (writer flushed
 *     with write(2), or sealed). Reading uses a collector-private cursor
 *     (read_tail); a failed write leaves both alone: the data stays in the
 *     ring and is retried later. A failed seal rewinds read_tail to the
 *     published tail, so those records are read again.
 *   - New metadata entries reach the segment before any data block written
 *     after they were seen.
 *   - Stamps are the producer's word: a converted stamp before the process
 *     started (proc.start_floor_ns) or after now (+ DRAIN_TS_SLACK_NS) is
 *     bad: it gets the time of the ring's record before it and is counted
 *     (proc.ts_bad), and the records after it keep their own times; one
 *     before the ring's previous stamp is raised to it and counted
 *     (proc.ts_clamped); one rate-limited warning each (shm_read_xform).
 *     So a ring's stamps never go backwards, across passes and calibration
 *     updates too, and no block or segment gets a time range outside the
 *     process's life.
 *   - Drop counters are the producer's word too: each ring's causes are
 *     clamped into its lost count when they are read (for the index at a
 *     seal, for --metrics at each pass), a ring whose counters could not
 *     be true is counted once (proc.counters_bad), and proc.drops never
 *     goes down whatever the counters do.
 * Must never: block on the traced process, trust a length it did not
 * validate, or keep draining a quarantined ring or region.
 */
#ifndef D9_DAEMON_DRAIN_H
#define D9_DAEMON_DRAIN_H

#include <stdint.h>
#include "collector/daemon/pace.h"
#include "shm/clock.h"
#include "shm/d9_abi.h"

struct proc;
struct storedir;

/* ---- calibration ------------------------------------------------------------ */

/* Read the region's calibration pairs under its seqlock into *cal.
 * -EAGAIN if a writer kept the seqlock odd/changing, -EINVAL if the pairs
 * are unusable (the caller then uses its own shm_clock_calibrate()).
 * Must run under the guard. */
int drain_read_calibration(const struct d9_region_hdr *h, struct shm_clock_cal *cal);

/* ---- the drain step --------------------------------------------------------- */
/* At most this many bytes of records per ring and pass (a busy ring cannot
 * starve the others); PACK_BOUND of it plus a chunk must fit the segment
 * writer's buffer with a block header. */
#define DRAIN_MAX      (512u * 1024u)
/* A ring is read once it holds a batch (drain_batch: DRAIN_BATCH
 * bytes for rings of 1 MiB and more) or a backlog older than
 * DRAIN_BATCH_NS; always when its thread ended, its process ended or a
 * flush asks, and a thread's first records at once. Reading every ring at
 * every pass would make one small block per ring per pass: a row each in
 * the index, thousands per segment, and a seal that commits them all at
 * once stalls the loop for longer than a fast ring takes to fill. */
#define DRAIN_BATCH    (64u * 1024u)
#define DRAIN_BATCH_NS (100u * 1000000ull)
/* The batch of a ring of size bytes: DRAIN_BATCH, at most half of what
 * makes pace_by_pressure go again at once (size / PACE_BUSY_DIV). A
 * batch above that made a small ring (DIAL9_RING_KB=128) a busy loop: the
 * pacing saw the ring 1/8 full and went again, the drain waited for 64 KiB. */
static inline uint64_t drain_batch(uint64_t ring_size)
{
    uint64_t cap = ring_size / (2u * PACE_BUSY_DIV);
    return cap < DRAIN_BATCH ? cap : DRAIN_BATCH;
}
/* Rings whose header page was never in memory (see rings_to_read in
 * drain.c): checked when the region's ring_hint moved (a claim), from the
 * hint seen before to DRAIN_PROBE_AHEAD past the new one, and all of them
 * every DRAIN_PROBE_NS. */
#define DRAIN_PROBE_AHEAD 8u
#define DRAIN_PROBE_NS    (10000u * 1000000ull)
/* A stamp may lie this far after the drain's own clock read (calibration
 * error of a TSC stamp); later ones are clamped. */
#define DRAIN_TS_SLACK_NS (1000000ull)
/* A ring's drop causes may be read this far ahead of its lost count (the
 * producer counts a cause, then lost); more is a producer lying. */
#define DRAIN_CAUSE_SLACK 1u
/* Copy-and-validate granule: small enough that packing finds it in L1/L2. */
#define DRAIN_CHUNK    (32u * 1024u)

/* Outcome counters of one pass over a process, added to its totals too. */
struct drain_result {
    uint64_t bytes;             /* DATA payload bytes written to the segment (packed) */
    uint64_t records;
    int more;                   /* some ring still had data when we stopped */
    int fresh;                  /* a thread's first records were read this pass */
    int write_failed;           /* a segment write failed (data left in the ring) */
    uint64_t full_fill;         /* the most bytes one ring received since the previous
                                 * look (the pacing's rate: see pace_by_pressure); */
    uint64_t full_size;         /*   the ring size (all rings of a region are one size) */
};

/* One pass over every ring of p: metadata first, then each ring's new
 * records (at most DRAIN_MAX bytes per ring so a busy ring cannot starve
 * the others), of the rings that hold a batch (drain_batch) or all of
 * them with force. Opens p's segment writer when there is something to
 * write, and seals it inside the pass once it reaches the store's
 * segment_max_bytes. Returns 0 or -EFAULT when the region faulted (p is now
 * quarantined). */
int drain_proc(struct proc *p, struct storedir *st, uint64_t now_ns, int force,
               struct drain_result *res);

/* Drain p until its rings are empty (or a write fails / the region faults):
 * used at process end, flush and shutdown. */
int drain_proc_all(struct proc *p, struct storedir *st, struct drain_result *res);

/* ---- the process's open segment ---------------------------------------------- */

/* Make sure p has an open segment writer. 0 or -errno (write error counted). */
int drain_writer(struct proc *p, struct storedir *st, uint64_t now_ns);

/* Seal and index p's open segment (if any), then publish the tails of the
 * records it held (or, if the seal failed, rewind the cursors so they are
 * read again), and refresh p's thread rows. 0 or -errno. */
int drain_seal(struct proc *p, struct storedir *st);

/* Quarantine the whole region (after a fault): its shm is never touched
 * again; logged once. */
void drain_quarantine(struct proc *p, const char *why);

#endif /* D9_DAEMON_DRAIN_H */
