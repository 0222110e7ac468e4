/*
 * ring.c — the consumer side of the SPSC ring, plus producer attach.
 *
 * The consumer reads rings written by processes it does not trust. It
 * copies bytes out first and validates the copy, so a producer that changes
 * bytes under it cannot make a checked length go stale (no TOCTOU). It only
 * ever reads data[pos & (size-1)] for lengths proved to fit before the end
 * of the data area.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "shm/ring.h"
#include "shm/bell.h"
#include "shm/record.h"
#include "shm/region.h"

/* min(end of head's lap, cached_tail + size, bell_at): see struct shm_producer. */
static void producer_limit(struct shm_producer *p)
{
    uint64_t lap_end = (p->head | p->mask) + 1;
    uint64_t full_at = p->cached_tail + p->size;
    uint64_t limit = lap_end < full_at ? lap_end : full_at;
    if (p->bell && p->bell_at < limit)
        limit = p->bell_at;
    p->limit = limit;
}

/* A record ending at end crosses bell_at: read the consumer's tail, ring
 * if the ring will be at least SHM_BELL_FIRST quarters full, and set the
 * next threshold at the first quarter mark past end (from that tail). So a
 * collector that keeps up is never rung, one that sleeps through the first
 * ring is rung again a quarter later, and once more by the first record
 * that does not fit; then not again until the tail moves. */
static void producer_bell(struct shm_producer *p, uint64_t end)
{
    /* acquire: as in make_room, the consumer is done with what is before tail */
    uint64_t tail = atomic_load_explicit(&p->hdr->tail, memory_order_acquire);
    uint64_t q = p->size / SHM_BELL_DIV;
    if (tail > p->head)
        tail = p->head;                 /* a hostile tail: ring from our own view */
    p->cached_tail = tail;
    uint64_t used = end - tail;
    if (used >= SHM_BELL_FIRST * q) {
        shm_bell_ring(p->bell);
        p->bells++;
    }
    uint64_t k = used / q + 1;
    if (k < SHM_BELL_FIRST)
        k = SHM_BELL_FIRST;
    p->bell_at = tail + k * q;          /* > end; past full_at only when already 3/4+ full */
}

void shm_producer_bell(struct shm_producer *p, struct d9_bell *bell)
{
    p->bell = bell;
    p->bell_at = p->cached_tail + SHM_BELL_FIRST * (uint64_t)(p->size / SHM_BELL_DIV);
    producer_limit(p);
}

void shm_producer_attach(struct shm_producer *p, struct d9_ring_hdr *hdr,
                         uint8_t *data, uint32_t size)
{
    p->hdr = hdr;
    p->data = data;
    p->size = size;
    p->mask = size - 1;
    p->seq = 0;
    p->bell = NULL;
    p->bell_at = 0;
    p->bells = 0;
    p->head = atomic_load_explicit(&hdr->head, memory_order_relaxed);
    p->cached_tail = atomic_load_explicit(&hdr->tail, memory_order_acquire);
    producer_limit(p);
}

int shm_ring_make_room(struct shm_producer *p, uint32_t len)
{
    uint64_t head = p->head;
    uint32_t pos = (uint32_t)head & p->mask;
    uint32_t contig = p->size - pos;
    uint32_t need = len <= contig ? len : len + contig;     /* a PAD first if it straddles */
    if (p->bell && head + need > p->bell_at)
        producer_bell(p, head + need);
    if (p->size - (head - p->cached_tail) < need) {
        /* acquire: the consumer finished copying everything before tail */
        p->cached_tail = atomic_load_explicit(&p->hdr->tail, memory_order_acquire);
        if (p->size - (head - p->cached_tail) < need) {
            uint64_t lost = atomic_load_explicit(&p->hdr->lost, memory_order_relaxed);
            /* single writer: a relaxed load+store is exact */
            atomic_store_explicit(&p->hdr->lost, lost + 1, memory_order_relaxed);
            p->seq++;
            producer_limit(p);
            return 0;
        }
    }
    if (len > contig) {
        /* published with the record's own release-store of head */
        struct d9_pad_hdr *pad = (struct d9_pad_hdr *)(p->data + pos);
        pad->len = (uint16_t)contig;
        pad->type = D9_REC_PAD;
        pad->_zero = 0;
        p->head = head + contig;
    }
    producer_limit(p);
    return 1;
}

void shm_ring_snapshot(const struct d9_ring_hdr *hdr, struct shm_ring_snapshot *s)
{
    struct d9_ring_hdr *h = (struct d9_ring_hdr *)hdr;
    /* acquire head first: a record published by a newer generation's
     * release-store makes that generation's slot fields visible below */
    s->head = atomic_load_explicit(&h->head, memory_order_acquire);
    s->state = atomic_load_explicit(&h->state, memory_order_acquire);
    s->tid = __atomic_load_n(&h->tid, __ATOMIC_RELAXED);
    s->generation = __atomic_load_n(&h->generation, __ATOMIC_RELAXED);
    shm_copy_name(s->thread_name, sizeof s->thread_name, h->thread_name,
                  sizeof h->thread_name);
    s->tail = atomic_load_explicit(&h->tail, memory_order_relaxed);
    s->lost = atomic_load_explicit(&h->lost, memory_order_relaxed);
}

long shm_ring_read(const uint8_t *data, uint32_t size,
                   const struct shm_ring_snapshot *snap,
                   uint8_t *out, size_t out_cap, uint64_t *new_tail,
                   struct shm_read_xform *x)
{
    /* The x part of the walk works on locals, stored back on success:
     * stores into the copy (uint8_t) may alias anything, and through
     * pointers the compiler would reload the calibration and the
     * statistics on every record. */
    const struct shm_clock_cal cal = x && x->cal ? *x->cal : (struct shm_clock_cal){ 0 };
    const int conv = cal.ns_per_tick != 0.0;
    uint32_t nrec = x ? x->nrec : 0;
    uint64_t t_first = x ? x->t_first : 0, t_last = x ? x->t_last : 0;
    uint64_t t_min = x && nrec ? x->t_min : UINT64_MAX, t_max = x && nrec ? x->t_max : 0;
    const uint64_t t_hi = x ? x->t_hi : 0;
    uint64_t floor = x ? (nrec && x->t_last > x->t_lo ? x->t_last : x->t_lo) : 0;
    uint64_t clamped = x ? x->clamped : 0, bad = x ? x->bad : 0;
    const uint64_t t_start = x ? x->t_start : 0;
    uint64_t counts[D9_REC_TYPE_COUNT];
    if (x)
        memcpy(counts, x->counts, sizeof counts);
    uint64_t head = snap->head, pos = snap->tail;
    *new_tail = pos;
    if (size < D9_RING_DATA_MIN || (size & (size - 1)))
        return -EINVAL;
    if (head < pos || head - pos > size || (head | pos) % D9_REC_ALIGN)
        return -EBADMSG;

    /* Copy a contiguous run in one memcpy, then walk the private copy. The
     * walk keeps whole records only; a PAD ends the run (it reaches the end
     * of the data area) and is not kept; a record cut by out_cap is left in
     * the ring for the next call. */
    size_t copied = 0;
    while (pos < head) {
        uint32_t off = (uint32_t)pos & (size - 1);
        uint64_t avail = head - pos;
        if (avail > size - off)
            avail = size - off;
        size_t room = out_cap - copied;
        if (room == 0)
            break;                                      /* out is full of whole records */
        size_t chunk = avail < room ? (size_t)avail : room;
        uint8_t *dst = out + copied;
        memcpy(dst, data + off, chunk);

        size_t p = 0;
        int pad = 0, cut = 0;
        while (p < chunk) {
            if (chunk - p < D9_PAD_MIN) {               /* only when cut by out_cap */
                cut = 1;
                break;
            }
            struct d9_pad_hdr ph;
            memcpy(&ph, dst + p, sizeof ph);
            if (ph.type == D9_REC_PAD) {
                /* a pad always runs exactly to the end of the data area */
                if (ph.len < D9_PAD_MIN || ph.len != avail - p || off + p + ph.len != size)
                    return -EBADMSG;
                pad = 1;
                break;
            }
            if (ph.len > chunk - p) {
                if (ph.len > avail - p || ph.len > D9_REC_MAX)
                    return -EBADMSG;                    /* claims bytes never committed */
                cut = 1;                                /* whole in shm, not in out */
                break;
            }
            int len = shm_record_check(dst + p, chunk - p);
            if (len <= 0)
                return -EBADMSG;
            if (x) {
                uint64_t ts, type = (uint16_t)(ph.type);
                memcpy(&ts, dst + p + offsetof(struct d9_rec_hdr, ts), sizeof ts);
                if (conv)
                    ts = shm_clock_to_ns(&cal, ts);
                if (t_hi) {
                    if (ts < t_start || ts > t_hi) {
                        bad++;              /* impossible: the floor's time, floor kept */
                        ts = floor;
                    } else if (ts < floor) {
                        clamped++;          /* backwards: raised to the floor */
                        ts = floor;
                    } else {
                        floor = ts;
                    }
                }
                if (conv || t_hi)
                    memcpy(dst + p + offsetof(struct d9_rec_hdr, ts), &ts, sizeof ts);
                t_first = nrec ? t_first : ts;
                t_min = ts < t_min ? ts : t_min;
                t_max = ts > t_max ? ts : t_max;
                t_last = ts;
                counts[type]++;             /* < D9_REC_TYPE_COUNT: checked above */
                nrec++;
            }
            p += (size_t)len;
        }
        copied += p;
        pos += p;
        if (pad) {
            pos += avail - p;
            continue;
        }
        if (cut) {
            if (copied == 0)
                return -ENOBUFS;
            break;
        }
    }
    *new_tail = pos;
    if (x) {
        x->nrec = nrec;
        x->t_first = t_first;
        x->t_last = t_last;
        x->t_min = nrec ? t_min : 0;
        x->t_max = t_max;
        x->clamped = clamped;
        x->bad = bad;
        memcpy(x->counts, counts, sizeof counts);
    }
    return (long)copied;
}

void shm_ring_consume(struct d9_ring_hdr *hdr, uint64_t new_tail)
{
    /* release: our copies of the bytes before new_tail are complete */
    atomic_store_explicit(&hdr->tail, new_tail, memory_order_release);
}
