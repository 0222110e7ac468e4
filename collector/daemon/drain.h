/*
 * drain.h — the drain step: copy committed records out of a traced
 * process's rings into its open segment, plus the pure pieces it is built
 * from (adaptive sleep, timestamp conversion, rotation decision, calibration
 * read) and the SIGBUS guard that makes touching a mapped region safe.
 *
 * Called by d9collectd.c (every loop iteration) and proc.c (final drain of
 * an ended process), on the collector's single drain thread.
 *
 * Invariants:
 *   - shm is hostile: records are copied into private memory (the segment
 *     writer's buffer, reserved with seg_writer_data_reserve) by
 *     shm_ring_read(), which validates the copy and, in the same walk,
 *     converts its timestamps and counts it; nothing else is read from a
 *     ring's data area. Each chunk (DRAIN_CHUNK) is packed into the
 *     DATA block while it is in cache. Every read or write of a mapped region happens
 *     between guard_arm() and guard_disarm(), so a SIGBUS (the owner
 *     truncated the file) quarantines that region instead of killing us.
 *   - A ring's shm tail is advanced (shm_ring_consume) only after the
 *     records before it were written to the segment file (writer flushed
 *     with write(2), or sealed). Reading uses a collector-private cursor
 *     (read_tail); a failed write leaves both alone: the data stays in the
 *     ring and is retried later.
 *   - New metadata entries reach the segment before any data block written
 *     after they were seen.
 * Must never: block on the traced process, trust a length it did not
 * validate, or keep draining a quarantined ring or region.
 */
#ifndef D9_COL_DRAIN_H
#define D9_COL_DRAIN_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include "shm/clock.h"
#include "shm/d9_abi.h"

struct proc;
struct storedir;
struct seg_data_stats;

/* ---- adaptive sleep ---------------------------------------------------------- */
struct pace {
    uint32_t min_us, max_us;
    uint32_t cur_us;            /* next idle sleep */
};
void pace_init(struct pace *b, uint32_t min_us, uint32_t max_us);
/* After a pass: returns how long to sleep (0 = poll again now). A pass with
 * work resets the sleep to min; each idle pass doubles it up to max. */
uint32_t pace_next(struct pace *b, int had_work);

/* Pace the next pass by pressure instead of by "found anything": lag is the
 * backlog the pass found in its fullest ring (relative to that ring's size,
 * size bytes), dt_us the time since the previous pass began, more whether a
 * ring still held data when the pass stopped.
 *   - the sleep is the idle backoff (x2 per pass up to max), capped so that
 *     at the rate just seen (lag per dt) the fullest ring stays under
 *     1/PACE_TARGET_DIV full: the other three quarters absorb a
 *     stall of the collector or a burst;
 *   - more, or the fullest ring at least 1/PACE_BUSY_DIV full: 0 (go
 *     again), and the next sleep keeps that cap (not min: restarting from
 *     min made a steady producer a sawtooth of short sleeps), unless data
 *     was left behind or the cap is under PACE_STALL_US: then the
 *     sleep restarts from min.
 * A trickle of events therefore costs a wakeup every few ms, not a busy loop,
 * a steady stream one wakeup per quarter ring, and a ring filling fast is
 * drained before it overflows. */
#define PACE_BUSY_DIV 8u
#define PACE_TARGET_DIV 4u
/* A ring that fills a quarter in less than this is polled from min_us after
 * a busy pass (the old pacing): a sleep of the collector's CPU can stretch
 * to 4 ms on a VM (the vCPU halts), which must fit in three quarters. */
#define PACE_STALL_US 2000u
uint32_t pace_by_pressure(struct pace *b, uint64_t lag, uint64_t size, uint64_t dt_us,
                          int more);

/*
 * The timer of a sleep of ns: wake no later than ns, but let the kernel fire
 * the timer at any interrupt in the sleep's second half (timer slack,
 * PR_SET_TIMERSLACK: the largest power of two up to ns / 2; a power of two
 * because the paced sleeps vary from pass to pass and each change of the
 * slack is a system call). On a busy CPU the scheduler tick (4 ms apart at
 * Debian's HZ=250) lands in the window of any sleep from ~8 ms up, so the
 * wake-up needs no timer interrupt of its own, which costs the interrupted
 * CPU ~20 us on a VM, as a profile sample does. Measured on the demo: 80
 * fewer local timer interrupts a second, ~20 % more wake-ups (they come
 * earlier), the collector's CPU the same. *request_ns = ns - slack,
 * *slack_ns = the slack; sleeps shorter than 2^17 ns (131 us) keep the
 * kernel's default slack and are requested whole, as before.
 */
#define PACE_SLACK_MIN_NS 50000u     /* the kernel's default timer slack */
void pace_sleep_window(uint64_t ns, uint64_t *request_ns, uint64_t *slack_ns);

/* ---- rotation ------------------------------------------------------------- */
/* 1 when a segment of bytes opened at opened_ns must be sealed at now_ns. */
int storedir_rotate_due(uint64_t bytes, uint64_t opened_ns, uint64_t now_ns,
                        uint64_t max_bytes, uint64_t max_age_ns);

/* ---- calibration ------------------------------------------------------------ */

/* Read the region's calibration pairs under its seqlock into *cal.
 * -EAGAIN if a writer kept the seqlock odd/changing, -EINVAL if the pairs
 * are unusable (the caller then uses its own shm_clock_calibrate()).
 * Must run under the guard. */
int drain_read_calibration(const struct d9_region_hdr *h, struct shm_clock_cal *cal);

/* ---- SIGBUS guard ---------------------------------------------------------- */
/* Install the SIGBUS/SIGSEGV handler once at start-up. A fault inside an armed
 * range jumps back to the armed sigjmp_buf (sigsetjmp(jb, 0): no syscall);
 * any other fault is re-raised with the default action (a real bug). */
int guard_install(void);
void guard_arm(sigjmp_buf *jb, const void *base, size_t size);
/* Arm for any address: around a call that maps a region and reads it before
 * we know where it is (shm_region_map). */
void guard_arm_any(sigjmp_buf *jb);
void guard_disarm(void);

/* ---- the drain step --------------------------------------------------------- */
/* At most this many bytes of records per ring and pass (a busy ring cannot
 * starve the others); PACK_BOUND of it plus a chunk must fit the segment
 * writer's buffer with a block header. */
#define DRAIN_MAX      (512u * 1024u)
/* A ring is read once it holds a batch (drain_batch: DRAIN_BATCH
 * bytes for rings of 1 MiB and more) or a backlog older than
 * DRAIN_BATCH_NS; always when its thread ended, its process ended or a
 * flush asks, and a thread's first records at once. Reading every ring at
 * every pass made one small block per ring per pass: a row each in the
 * index, thousands per segment, committed in one transaction at the seal
 * (9 ms for a 64 MiB segment: a 1 MiB ring overflows in 8 ms at 4 M
 * events/s). */
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
/* Copy-and-validate granule: small enough that packing finds it in L1/L2. */
#define DRAIN_CHUNK    (32u * 1024u)

/* Outcome counters of one pass over a process, added to its totals too. */
struct drain_result {
    uint64_t bytes;             /* DATA payload bytes written to the segment (packed) */
    uint64_t records;
    int more;                   /* some ring still had data when we stopped */
    int fresh;                  /* a thread's first records were read this pass */
    int write_failed;           /* a segment write failed (data left in the ring) */
    uint64_t full_lag;          /* backlog of the process's fullest ring at this pass; */
    uint64_t full_size;         /*   its ring size (all rings of a region are one size) */
};

/* One pass over every ring of p: metadata first, then each ring's new
 * records (at most DRAIN_MAX bytes per ring so a busy ring cannot starve
 * the others), of the rings that hold a batch (drain_batch) or all of
 * them with force. Opens p's segment writer when there is something to
 * write. Returns 0 or -EFAULT when the region faulted (p is now quarantined). */
int drain_proc(struct proc *p, struct storedir *st, uint64_t now_ns, int force,
               struct drain_result *res);

/* Flush p's writer and, if that worked, publish the tails of every ring
 * whose records it now holds (shm_ring_consume). 0 or the write error. */
int drain_commit(struct proc *p, struct storedir *st, uint64_t now_ns);
/* Publish pending tails without flushing (the writer was just sealed). */
void drain_publish(struct proc *p);
/* The writer holding pending records is gone (seal failed): rewind the
 * private cursors so those records are read again; returns their count. */
uint64_t drain_rewind(struct proc *p);

/* Drain p until its rings are empty (or a write fails / the region faults):
 * used at process end, flush and shutdown. */
int drain_proc_all(struct proc *p, struct storedir *st, struct drain_result *res);

#endif /* D9_COL_DRAIN_H */
