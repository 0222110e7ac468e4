/*
 * ring.h — single-producer single-consumer byte ring over shared memory.
 *
 * Producer side (agent threads): shm_ring_reserve() / shm_ring_commit() are
 * inline, lock-free, syscall-free and allocation-free. The producer owns
 * head and lost; it caches the consumer's tail privately and re-reads it only
 * when the cached value says the ring is full. Full ring: the record is
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

/* Producer-private state; lives in the agent's thread-local storage. */
struct shm_producer {
    struct d9_ring_hdr *hdr;    /* NULL = this thread has no ring */
    uint8_t *data;
    uint32_t size;              /* ring_data_size, power of two */
    uint32_t seq;               /* next record sequence number */
    uint64_t head;              /* private copy of hdr->head */
    uint64_t cached_tail;       /* last tail seen; refreshed only when full */
};

/* Attach a producer to a ring the caller has just claimed. */
void shm_producer_attach(struct shm_producer *p, struct d9_ring_hdr *hdr,
                         uint8_t *data, uint32_t size);

/*
 * Reserve len bytes (multiple of 8, 16..D9_REC_MAX). Returns a pointer where
 * the caller writes the record, or NULL when the ring is full (the drop has
 * already been counted). Writes a PAD record first if the record would
 * straddle the end of the ring.
 */
static inline void *shm_ring_reserve(struct shm_producer *p, uint32_t len)
{
    uint64_t head = p->head;
    uint32_t pos = (uint32_t)head & (p->size - 1);
    uint32_t contig = p->size - pos;
    uint32_t need = len <= contig ? len : len + contig;

    if (__builtin_expect(p->size - (head - p->cached_tail) < need, 0)) {
        /* acquire: the consumer finished copying everything before tail */
        p->cached_tail = atomic_load_explicit(&p->hdr->tail, memory_order_acquire);
        if (p->size - (head - p->cached_tail) < need) {
            uint64_t lost = atomic_load_explicit(&p->hdr->lost, memory_order_relaxed);
            /* single writer: a relaxed load+store is exact */
            atomic_store_explicit(&p->hdr->lost, lost + 1, memory_order_relaxed);
            p->seq++;
            return NULL;
        }
    }
    if (len > contig) {
        struct d9_pad_hdr *pad = (struct d9_pad_hdr *)(p->data + pos);
        pad->len = (uint16_t)contig;
        pad->type = D9_REC_PAD;
        pad->_zero = 0;
        head += contig;
        p->head = head;
        pos = 0;
    }
    return p->data + pos;
}

/* Publish the record reserved last: fills len/type/seq and release-stores head. */
static inline void shm_ring_commit(struct shm_producer *p, void *rec,
                                   uint32_t len, uint16_t type, uint64_t ts)
{
    struct d9_rec_hdr *h = (struct d9_rec_hdr *)rec;
    h->len = (uint16_t)len;
    h->type = type;
    h->seq = p->seq++;
    h->ts = ts;
    p->head += len;
    /* release: every byte of the record (and any pad) happens-before head */
    atomic_store_explicit(&p->hdr->head, p->head, memory_order_release);
}

/* ---- consumer --------------------------------------------------------- */

/* What the consumer saw of a ring, copied out of shm (values unvalidated
 * except where noted). */
struct shm_ring_snapshot {
    uint32_t state;
    uint32_t tid;
    uint32_t generation;        /* read after head: the owner of [tail, head) */
    char thread_name[17];       /* always NUL-terminated */
    uint64_t head;
    uint64_t tail;
    uint64_t lost;
};

/* Take a snapshot of ring idx: head (acquire), then slot fields. */
void shm_ring_snapshot(const struct d9_ring_hdr *hdr, struct shm_ring_snapshot *s);

/* Work shm_ring_read can do in the walk that validates the copy, so that
 * the consumer touches each record once: convert timestamps and gather the
 * statistics of a DATA block. The statistics accumulate over calls (zero
 * the struct first); they describe the converted timestamps. */
struct shm_read_xform {
    const struct shm_clock_cal *cal;    /* non-NULL: ts of the copy converted to ns */
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
