/*
 * ring.h — single-producer single-consumer byte ring over shared memory.
 *
 * Producer side (agent threads): shm_ring_reserve() / shm_ring_commit() are
 * inline, lock-free, syscall-free and allocation-free; the fast path is one
 * compare (head + len <= limit), everything else is in shm_ring_make_room()
 * out of line. The producer owns head and lost; it caches the consumer's
 * tail privately and re-reads it only when the cached value says the ring
 * is full. Full ring: the record is
 * dropped, lost is incremented and the sequence number still advances, so the
 * consumer sees the drop as a gap (drop-newest; unread data is never
 * overwritten).
 *
 * Consumer side (collector): shm_ring_read() copies committed records out of
 * a ring it does not trust and validates the framing of the copy;
 * shm_ring_consume() release-stores the new tail. See ring.c.
 *
 * Memory ordering:
 *   producer: write record bytes; store(head, release)  -- publishes the bytes
 *   consumer: load(head, acquire); copy bytes; store(tail, release)
 *   producer: load(tail, acquire) before reusing space   -- consumer is done with it
 */
#ifndef D9_SHM_RING_H
#define D9_SHM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdatomic.h>
#include "shm/clock.h"
#include "shm/d9_abi.h"

/* Producer-private state; lives in the agent's thread-local storage.
 * limit folds every reason to leave the fast path into one compare: a
 * record of len bytes can be written at head iff head + len <= limit, where
 * limit = min(end of the current lap of the data area, cached_tail + size,
 * bell_at). It is 0 while detached, so a thread without a ring takes the
 * slow path too. bell_at is the next doorbell threshold (SHM_BELL_DIV):
 * folding it into limit keeps the fast path one compare, and the slow
 * path, reached about once per half ring, re-reads tail and rings the
 * region's doorbell (shm/bell.h) when the ring is half full or more. */
struct shm_producer {
    uint8_t *data;
    uint64_t head;              /* private copy of hdr->head */
    uint64_t limit;             /* see above; recomputed only on the slow path */
    uint32_t mask;              /* ring_data_size - 1 */
    uint32_t seq;               /* next record sequence number */
    struct d9_ring_hdr *hdr;    /* NULL = this thread has no ring */
    uint64_t cached_tail;       /* last tail seen; refreshed only on the slow path */
    uint32_t size;              /* ring_data_size, power of two */
    struct d9_bell *bell;       /* the region's doorbell; NULL = never ring */
    uint64_t bell_at;           /* ring when a record would end past this */
    uint64_t bells;             /* times this producer rang (tests, bench) */
};

/* Doorbell thresholds, in quarters of the ring: a commit that takes the
 * ring's fill (from the tail read on the slow path) to at least
 * SHM_BELL_FIRST quarters rings, and so does each further quarter while
 * the tail has not moved. Below the first one the slow path is entered
 * once per SHM_BELL_FIRST quarters of data written, for one acquire load of
 * tail. */
#define SHM_BELL_DIV   4u
#define SHM_BELL_FIRST 2u

/* How far ahead of head shm_ring_commit prefetches for writing: about 32
 * records, far enough that the line is owned before the store reaches it
 * while the consumer reads behind (chosen with bench_hot; tests/bench/RESULTS.md). */
#define SHM_PREFETCH_AHEAD 1024u

/* Attach a producer to a ring the caller has just claimed. */
void shm_producer_attach(struct shm_producer *p, struct d9_ring_hdr *hdr,
                         uint8_t *data, uint32_t size);

/* Give an attached producer its region's doorbell (NULL: none). */
void shm_producer_bell(struct shm_producer *p, struct d9_bell *bell);

/*
 * Slow path of the producer (out of line): make room for a len-byte record
 * at head (len a multiple of 8, 16..D9_REC_MAX). Re-reads the consumer's
 * tail, writes a PAD record if the record would straddle the end of the
 * ring, rings the doorbell when the record crosses a threshold (the ring is
 * then half full or more: see SHM_BELL_DIV) and recomputes limit. Returns
 * 1 when the record now fits
 * (head + len <= limit), 0 when the ring is full: the drop has been counted
 * (lost + 1, seq + 1). Must not be called on a detached producer.
 */
int shm_ring_make_room(struct shm_producer *p, uint32_t len);

/* 1 when a len-byte record fits at head without the slow path. */
static inline int shm_ring_fits(const struct shm_producer *p, uint32_t len)
{
    return __builtin_expect(p->head + len <= p->limit, 1);
}

/* Where the next record goes; only valid when shm_ring_fits(). */
static inline void *shm_ring_slot(const struct shm_producer *p)
{
    return p->data + ((uint32_t)p->head & p->mask);
}

/*
 * Reserve len bytes (multiple of 8, 16..D9_REC_MAX). Returns a pointer where
 * the caller writes the record, or NULL when the ring is full (the drop has
 * already been counted). Writes a PAD record first if the record would
 * straddle the end of the ring.
 */
static inline void *shm_ring_reserve(struct shm_producer *p, uint32_t len)
{
    if (!shm_ring_fits(p, len) && !shm_ring_make_room(p, len))
        return NULL;
    return shm_ring_slot(p);
}

/* Publish the record reserved last: fills len/type/seq and release-stores head. */
static inline void shm_ring_commit(struct shm_producer *p, void *rec,
                                   uint32_t len, uint16_t type, uint64_t ts)
{
    /* len, type and seq are one 8-byte store; struct d9_rec_hdr order */
    uint32_t seq = p->seq;
    uint64_t w = (uint64_t)len | (uint64_t)type << 16 | (uint64_t)seq << 32;
    uint64_t head = p->head + len;
    struct d9_ring_hdr *hdr = p->hdr;
    p->seq = seq + 1;
    p->head = head;
    memcpy(rec, &w, sizeof w);
    memcpy((uint8_t *)rec + 8, &ts, sizeof ts);
    /* Ask for the line SHM_PREFETCH_AHEAD bytes on, for writing: the
     * collector's copy left it shared (or evicted it) since the last lap,
     * and the ownership transfer then overlaps the records in between.
     * Masked, so it never touches memory outside this ring's data. */
    __builtin_prefetch(p->data + ((uint32_t)(head + SHM_PREFETCH_AHEAD) & p->mask), 1, 3);
    /* release: every byte of the record (and any pad) happens-before head */
    atomic_store_explicit(&hdr->head, head, memory_order_release);
}

/* ---- consumer --------------------------------------------------------- */

/* What the consumer saw of a ring, copied out of shm (values unvalidated
 * except where noted). */
struct shm_ring_snapshot {
    uint32_t state;
    uint32_t tid;
    uint32_t generation;        /* read after head: the owner of [tail, head) */
    char thread_name[D9_COMM_MAX + 1]; /* always NUL-terminated */
    uint64_t head;
    uint64_t tail;
    uint64_t lost;
};

/* Take a snapshot of ring idx: head (acquire), then slot fields. */
void shm_ring_snapshot(const struct d9_ring_hdr *hdr, struct shm_ring_snapshot *s);

/* Work shm_ring_read can do in the walk that validates the copy, so that
 * the consumer touches each record once: convert timestamps and gather the
 * statistics of a DATA block. The statistics accumulate over calls (zero
 * the struct first); they describe the converted timestamps.
 *
 * Bounds (t_hi != 0): a stamp is the producer's word. A converted stamp
 * that cannot be true, before t_start (the process's start) or after t_hi
 * (now), is bad: it gets the time of the record before it (the floor) and
 * is counted in bad, and the floor stays where it was, so one bad stamp
 * never moves its neighbours (a stamp far in the future used to become the
 * floor of every record after it). A stamp before the floor (t_lo, the
 * ring's previous record, at first; then each record's) goes backwards: it
 * is raised to the floor and counted in clamped. So a ring's time never
 * goes backwards (calibration updates between passes included: the caller
 * passes the ring's last stamp as t_lo) and good stamps keep their own
 * times. */
struct shm_read_xform {
    const struct shm_clock_cal *cal;    /* non-NULL: ts of the copy converted to ns */
    uint64_t t_start;                   /* no stamp is earlier (0: none) */
    uint64_t t_lo, t_hi;                /* the floor and the latest stamp (see above);
                                         * t_hi == 0: no bounds */
    uint64_t bad;                       /* impossible stamps, given the floor's time */
    uint64_t clamped;                   /* stamps going backwards, raised to the floor */
    uint32_t nrec;
    uint64_t t_first, t_last;           /* first / last record (valid when nrec > 0) */
    uint64_t t_min, t_max;
    uint64_t counts[D9_REC_TYPE_COUNT];
};

/*
 * Copy committed records starting at snap->tail into out (at most out_cap
 * bytes), dropping PAD records, and validate the framing of the copy; with
 * x, also convert and count the copied records (see struct shm_read_xform).
 * On success returns the number of bytes written to out (0 = nothing new)
 * and stores in *new_tail the ring position just past the last copied
 * record; only whole records are copied.
 * Errors: -EBADMSG corrupt cursors or framing (quarantine the ring; out and
 *                  *x are then unspecified);
 *         -ENOBUFS out_cap is smaller than the next record (<D9_REC_MAX never happens).
 */
long shm_ring_read(const uint8_t *data, uint32_t size,
                   const struct shm_ring_snapshot *snap,
                   uint8_t *out, size_t out_cap, uint64_t *new_tail,
                   struct shm_read_xform *x);

/* Release-store tail: the space before it may be reused by the producer. */
void shm_ring_consume(struct d9_ring_hdr *hdr, uint64_t new_tail);

#endif /* D9_SHM_RING_H */
