/*
 * drain.c — copy records from hostile shared memory into segment files
 * (see drain.h for the contract).
 *
 * Per ring and pass:
 *   1. snapshot (acquire head, then slot fields) under the guard;
 *   2. a new generation means the previous owner thread ended: THREAD_END;
 *   3. metadata entries published before those records (their meta_head
 *      store happened-before the records' head store, and we acquire
 *      meta_head after head) go into the segment first;
 *   4. room for up to COL_DRAIN_MAX bytes of records, packed, plus a
 *      scratch chunk is reserved in the segment writer's buffer;
 *      shm_ring_read() copies records into the scratch a COL_DRAIN_CHUNK at
 *      a time and, in one walk over each chunk, validates, converts
 *      (timestamps) and counts them; pack_records() packs the chunk while it
 *      is still in cache;
 *   5. seg_writer_data_commit() makes it a packed DATA block (CRC over the
 *      packed bytes); the shm tail moves
 *      (shm_ring_consume) only once the writer has flushed it.
 *   6. RELEASED and fully drained: THREAD_END, recycle the slot.
 *
 * The SIGBUS guard: the one piece of process-wide state here. A signal
 * handler can only find its way back through a static, so the armed jump
 * buffer and address range live in three statics, written only by the drain
 * thread around each access (signal fences order them against the handler).
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "collector/daemon/drain.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/col_log.h"
#include "collector/store/pack.h"
#include "collector/daemon/proc.h"
#include "collector/store/seg_writer.h"
#include "collector/daemon/store.h"
#include "shm/meta.h"
#include "shm/record.h"
#include "shm/ring.h"

#define COL_CAL_TRIES 8         /* seqlock retries before giving up on a pass */

/* one reservation: the packed payload of COL_DRAIN_MAX bytes of records and a scratch chunk */
_Static_assert(((PACK_BOUND(COL_DRAIN_MAX) + 7) & ~7u) + COL_DRAIN_CHUNK <=
               SEG_WRITE_BUF - sizeof(struct seg_block_hdr), "drain reservation fits the writer");

/* ---- adaptive sleep ------------------------------------------------------------ */

void col_backoff_init(struct col_backoff *b, uint32_t min_us, uint32_t max_us)
{
    if (min_us == 0)
        min_us = 1;
    if (max_us < min_us)
        max_us = min_us;
    b->min_us = min_us;
    b->max_us = max_us;
    b->cur_us = min_us;
}

uint32_t col_backoff_next(struct col_backoff *b, int had_work)
{
    if (had_work) {
        b->cur_us = b->min_us;
        return 0;
    }
    uint32_t s = b->cur_us;
    b->cur_us = s > b->max_us / 2 ? b->max_us : s * 2;
    return s;
}

uint32_t col_backoff_pace(struct col_backoff *b, uint64_t lag, uint64_t size, uint64_t dt_us,
                          int more)
{
    uint32_t s = col_backoff_next(b, 0);
    uint64_t cap = UINT64_MAX;
    if (lag != 0 && size != 0) {
        /* time for the fullest ring to go from empty to 1/COL_BACKOFF_TARGET_DIV
         * full at lag per dt: the rest of the ring absorbs a stall of the
         * collector (a seal, a preemption) or a faster burst */
        cap = dt_us * (size / COL_BACKOFF_TARGET_DIV) / lag;
        if (cap < s) {
            s = cap < b->min_us ? b->min_us : (uint32_t)cap;
            b->cur_us = s;      /* grow again from here, not from a long sleep */
        }
    }
    if (more || (size && lag * COL_BACKOFF_BUSY_DIV >= size)) {
        /* Go again at once. The sleep after that pass keeps the pace just
         * computed: restarting it from min_us made a steady producer a
         * sawtooth of short sleeps doubling back up (835 wake-ups/s at
         * 1 M events/s into a 1 MiB ring, where 125 keep it under a
         * quarter full). Only data left behind, or a ring filling a
         * quarter faster than COL_BACKOFF_STALL_US, restarts it from
         * min_us (col_backoff_next's "had work"): there one stall of the
         * collector's CPU can fill the other three quarters. */
        return more || cap < COL_BACKOFF_STALL_US ? col_backoff_next(b, 1) : 0;
    }
    return s;
}

void col_sleep_window(uint64_t ns, uint64_t *request_ns, uint64_t *slack_ns)
{
    uint64_t slack = ns / 2 ? 1ull << (63 - __builtin_clzll(ns / 2)) : 0;
    if (slack <= COL_SLACK_MIN_NS) {
        *request_ns = ns;
        *slack_ns = COL_SLACK_MIN_NS;
        return;
    }
    *request_ns = ns - slack;
    *slack_ns = slack;
}

/* ---- rotation ------------------------------------------------------------------ */

int col_rotate_due(uint64_t bytes, uint64_t opened_ns, uint64_t now_ns,
                   uint64_t max_bytes, uint64_t max_age_ns)
{
    if (max_bytes && bytes >= max_bytes)
        return 1;
    /* a clock that appears to go back (opened_ns > now) is not "old" */
    if (max_age_ns && now_ns > opened_ns && now_ns - opened_ns >= max_age_ns)
        return 1;
    return 0;
}

/* ---- calibration ------------------------------------------------------------------ */

int col_read_calibration(const struct d9_region_hdr *hc, struct shm_clock_cal *cal)
{
    struct d9_region_hdr *h = (struct d9_region_hdr *)hc;
    for (int i = 0; i < COL_CAL_TRIES; i++) {
        /* seqlock read: acquire seq, copy, acquire fence, re-read seq */
        uint32_t s1 = atomic_load_explicit(&h->cal_seq, memory_order_acquire);
        if (s1 & 1u)
            continue;
        uint64_t t0 = __atomic_load_n(&h->cal_tsc0, __ATOMIC_RELAXED);
        uint64_t n0 = __atomic_load_n(&h->cal_ns0, __ATOMIC_RELAXED);
        uint64_t t1 = __atomic_load_n(&h->cal_tsc1, __ATOMIC_RELAXED);
        uint64_t n1 = __atomic_load_n(&h->cal_ns1, __ATOMIC_RELAXED);
        atomic_thread_fence(memory_order_acquire);
        uint32_t s2 = atomic_load_explicit(&h->cal_seq, memory_order_relaxed);
        if (s1 != s2)
            continue;
        return shm_clock_cal_from_pairs(cal, t0, n0, t1, n1);
    }
    return -EAGAIN;
}

/* ---- SIGBUS guard ------------------------------------------------------------------ */

static sigjmp_buf *volatile g_guard_jb;
static const uint8_t *volatile g_guard_lo;
static const uint8_t *volatile g_guard_hi;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    sigjmp_buf *jb = g_guard_jb;
    const uint8_t *a = si ? (const uint8_t *)si->si_addr : NULL;
    if (jb && a >= g_guard_lo && a < g_guard_hi) {
        g_guard_jb = NULL;
        siglongjmp(*jb, 1);
    }
    /* not ours: a genuine bug; die with the default action */
    signal(sig, SIG_DFL);
    raise(sig);
}

int col_guard_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    /* NODEFER: siglongjmp with savemask 0 must not leave SIGBUS blocked */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGBUS, &sa, NULL) ? -errno : 0;
}

void col_guard_arm(sigjmp_buf *jb, const void *base, size_t size)
{
    g_guard_lo = base;
    g_guard_hi = (const uint8_t *)base + size;
    atomic_signal_fence(memory_order_seq_cst);
    g_guard_jb = jb;
    atomic_signal_fence(memory_order_seq_cst);
}

void col_guard_arm_any(sigjmp_buf *jb)
{
    g_guard_lo = (const uint8_t *)(uintptr_t)0;
    g_guard_hi = (const uint8_t *)UINTPTR_MAX;
    atomic_signal_fence(memory_order_seq_cst);
    g_guard_jb = jb;
    atomic_signal_fence(memory_order_seq_cst);
}

void col_guard_disarm(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    g_guard_jb = NULL;
    atomic_signal_fence(memory_order_seq_cst);
}

/* ---- guarded shm accesses (each is one small function: sigsetjmp's frame
 * must stay alive while the guard is armed) ------------------------------------- */

static int g_snapshot(const struct col_proc *p, const struct d9_ring_hdr *rh,
                      struct shm_ring_snapshot *s)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    col_guard_arm(&jb, p->region.base, p->region.size);
    shm_ring_snapshot(rh, s);
    col_guard_disarm();
    return 0;
}

/* The slot state of every ring, under one guard: most rings of a region are
 * FREE, and a full guarded snapshot of each was most of an idle pass. */
static int g_states(const struct col_proc *p, uint8_t *states)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    col_guard_arm(&jb, p->region.base, p->region.size);
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        const struct d9_ring_hdr *rh = shm_ring_hdr(&p->region, &p->geo, i);
        uint32_t st = atomic_load_explicit(&((struct d9_ring_hdr *)rh)->state,
                                           memory_order_relaxed);
        states[i] = st > UINT8_MAX ? UINT8_MAX : (uint8_t)st;     /* untrusted: any value */
    }
    col_guard_disarm();
    return 0;
}

static int g_read(const struct col_proc *p, const uint8_t *data,
                  const struct shm_ring_snapshot *s, uint8_t *buf, size_t cap,
                  uint64_t *new_tail, struct shm_read_xform *x, long *n)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    col_guard_arm(&jb, p->region.base, p->region.size);
    *n = shm_ring_read(data, p->geo.ring_data_size, s, buf, cap, new_tail, x);
    col_guard_disarm();
    return 0;
}

static int g_consume(const struct col_proc *p, struct d9_ring_hdr *rh, uint64_t tail)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    col_guard_arm(&jb, p->region.base, p->region.size);
    shm_ring_consume(rh, tail);
    col_guard_disarm();
    return 0;
}

static int g_recycle(const struct col_proc *p, struct d9_ring_hdr *rh)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    col_guard_arm(&jb, p->region.base, p->region.size);
    shm_slot_recycle(rh);
    col_guard_disarm();
    return 0;
}

/* Copy meta log bytes [from, head) into dst; *head gets the published end
 * (clamped to the geometry). Also refreshes the calibration. */
static int g_meta(const struct col_proc *p, uint32_t from, uint8_t *dst, uint32_t *head,
                  struct shm_clock_cal *cal, int *cal_ok)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    col_guard_arm(&jb, p->region.base, p->region.size);
    struct d9_region_hdr *h = p->region.hdr;
    uint32_t hd = atomic_load_explicit(&h->meta_head, memory_order_acquire);
    if (hd > p->geo.meta_size)
        hd = p->geo.meta_size;
    if (hd > from && dst)
        memcpy(dst, p->region.base + p->geo.meta_offset + from, hd - from);
    *head = hd;
    if (p->geo.clock_source == D9_CLOCK_TSC)
        *cal_ok = col_read_calibration(h, cal) == 0;
    col_guard_disarm();
    return 0;
}

/* ---- metadata ------------------------------------------------------------------------ */

/* Pull new metadata entries into p->meta (validated); index runtimes. */
static int pull_meta(struct col_proc *p, struct col_store *st)
{
    uint32_t head = 0;
    struct shm_clock_cal cal;
    int cal_ok = 0;
    /* probe first (no copy), then grow and copy */
    if (g_meta(p, p->meta_len, NULL, &head, &cal, &cal_ok))
        return -EFAULT;
    if (p->geo.clock_source == D9_CLOCK_TSC) {
        if (cal_ok) {
            p->cal = cal;
            p->cal_from_region = 1;
        } else if (!p->cal_from_region && p->host_cal) {
            p->cal = *p->host_cal;
        }
    }
    if (p->meta_bad || head <= p->meta_len)
        return 0;
    if (head > p->meta_cap) {
        uint32_t ncap = p->meta_cap ? p->meta_cap : 4096u;
        while (ncap < head)
            ncap *= 2;
        uint8_t *nb = realloc(p->meta, ncap);
        if (!nb)
            return -ENOMEM;
        p->meta = nb;
        p->meta_cap = ncap;
    }
    uint32_t from = p->meta_len;
    if (g_meta(p, from, p->meta + from, &head, &cal, &cal_ok))
        return -EFAULT;
    if (head > p->meta_cap)     /* a hostile meta_head moved up again: ignore the rest */
        head = p->meta_cap;
    size_t off = from;
    struct shm_meta_entry e;
    int rc;
    while ((rc = shm_meta_next(p->meta, head, &off, &e)) == 1) {
        if (e.kind == D9_META_RUNTIME && p->process_id > 0 && st->idx) {
            int irc = idx_runtime_upsert(st->idx, p->process_id, e.id, e.name);
            if (irc)
                col_log_limited(&p->rl, COL_LOG_WARN, "pid %u: cannot index runtime %u: %s",
                                p->pid, e.id, strerror(-irc));
        }
    }
    if (rc < 0) {
        p->meta_bad = 1;
        col_warn("pid %u (%s): malformed metadata entry at offset %zu; ignoring the rest "
                 "of its metadata log", p->pid, p->file, off);
    }
    p->meta_len = (uint32_t)off;
    return 0;
}

static int write_pending_meta(struct col_proc *p, struct col_store *st, uint64_t now)
{
    if (p->meta_in_writer >= p->meta_len)
        return 0;
    int rc = seg_writer_add_meta(p->writer, p->meta + p->meta_in_writer,
                                 p->meta_len - p->meta_in_writer);
    if (rc) {
        col_store_write_failed(st, rc, "metadata block", p->pid, now);
        return rc;
    }
    p->meta_in_writer = p->meta_len;
    return 0;
}

/* ---- threads ---------------------------------------------------------------------------- */

/* The thread tracked on ring i ended: THREAD_END block + index row. */
static int end_thread(struct col_proc *p, struct col_store *st, uint32_t i, uint64_t now)
{
    struct col_ring *r = &p->rings[i];
    if (!r->active)
        return 0;
    int rc = col_proc_writer(p, st, now);
    if (rc)
        return rc;
    uint64_t t = r->last_ns ? r->last_ns : now;
    rc = seg_writer_add_thread_end(p->writer, r->tid, i, r->generation, t);
    if (rc) {
        col_store_write_failed(st, rc, "thread-end block", p->pid, now);
        return rc;
    }
    if (st->idx && p->process_id > 0) {
        int irc = idx_thread_upsert(st->idx, p->process_id, r->tid, i, r->generation, r->name,
                                    r->first_ns ? r->first_ns : t, t, 1);
        if (irc)
            col_log_limited(&p->rl, COL_LOG_WARN, "pid %u: cannot index thread %u: %s",
                            p->pid, r->tid, strerror(-irc));
    }
    r->active = 0;
    r->thread_dirty = 0;
    return 0;
}

/* Drops of ring slot `ring` of process_id already recorded in indexed
 * segments, over all generations (the slot's lost counter is never reset by
 * a claim): where a previous collector run left the ring's lost counter. A
 * restarted collector starts from there, so drops are not counted twice
 * (the temp segments of a crashed run are salvaged and indexed before any
 * region is adopted). 0 when unknown (fresh ring, no index). */
static uint64_t indexed_lost(struct col_store *st, int64_t process_id, uint32_t ring)
{
    uint64_t lost = 0;
    if (st->idx)
        (void)idx_read_ring_lost(st->idx, process_id, ring, &lost);
    return lost;
}

static void quarantine_ring(struct col_proc *p, uint32_t i, const struct shm_ring_snapshot *s)
{
    struct col_ring *r = &p->rings[i];
    r->quarantined = 1;
    p->quarantined_rings++;
    col_warn("pid %u (%s): ring %u (tid %u, generation %u) has corrupt framing "
             "(head %llu tail %llu); quarantined, other rings keep draining",
             p->pid, p->file, i, s->tid, s->generation, (unsigned long long)s->head,
             (unsigned long long)s->tail);
}

/* One ring, one buffer at most. 0, -EFAULT (region fault) or a write error.
 * Records go into the writer and the private read_tail advances; the shm
 * tail is published by col_drain_commit() once the writer flushed them. */
static int drain_ring(struct col_proc *p, struct col_store *st, uint32_t i, uint64_t now,
                      int force, struct col_drain_result *res)
{
    struct col_ring *r = &p->rings[i];
    if (r->quarantined)
        return 0;
    struct d9_ring_hdr *rh = shm_ring_hdr(&p->region, &p->geo, i);
    const uint8_t *data = shm_ring_data(&p->region, &p->geo, i);
    struct shm_ring_snapshot s;
    if (g_snapshot(p, rh, &s))
        return -EFAULT;
    r->state = s.state;
    if (s.state != D9_RING_OWNED && s.state != D9_RING_RELEASED) {
        r->lag_bytes = 0;
        return 0;           /* FREE or CLAIMING: nothing of ours in it */
    }
    if (!r->tail_known) {
        /* first sight (or collector restart): resume where the last consumer stopped */
        r->read_tail = r->consumed_tail = s.tail;
        r->tail_known = 1;
        /* nothing reported yet by this run: start from what an earlier
         * collector run reported (after a recycle lost_seen is already right) */
        if (r->lost_seen == 0)
            r->lost_seen = indexed_lost(st, p->process_id, i);
    }
    if (r->active && s.generation != r->generation) {
        /* re-claimed only after it was drained: the previous thread is over */
        int rc = end_thread(p, st, i, now);
        if (rc)
            return rc;
    }
    if (!r->active) {
        r->active = 1;
        r->generation = s.generation;
        r->tid = s.tid;
        memcpy(r->name, s.thread_name, sizeof r->name);
        r->first_ns = r->last_ns = 0;
        r->thread_dirty = 1;
    }
    /* our own cursor, never the shm tail (which the owner could rewrite) */
    s.tail = r->read_tail;
    /* lag = the backlog this pass found (what the producer is ahead of us) */
    r->lag_bytes = s.head >= s.tail ? s.head - s.tail : 0;
    if (s.head == s.tail)
        r->backlog_ns = 0;
    else if (!r->backlog_ns)
        r->backlog_ns = now;
    /* a live thread's ring waits for a batch (see col_drain_batch), except
     * for its first records: they name the thread and show it is traced */
    int wait = !force && !p->ended && s.state == D9_RING_OWNED && s.head > s.tail &&
               r->first_ns != 0 && r->lag_bytes < col_drain_batch(p->geo.ring_data_size) &&
               now - r->backlog_ns < COL_DRAIN_BATCH_NS;
    if (s.head != s.tail && !wait) {
        int rc = pull_meta(p, st);
        if (rc)
            return rc;
        if ((rc = col_proc_writer(p, st, now)) || (rc = write_pending_meta(p, st, now)))
            return rc;
        /* The block is built in the writer's buffer: one reservation holds
         * the packed payload and, behind it, a scratch chunk. shm_ring_read
         * copies records into the scratch and, in the same walk, validates,
         * converts and counts them; pack_records then packs them (still in
         * cache) into the payload. */
        uint64_t lag = s.head - s.tail;
        size_t want = s.head < s.tail || lag > COL_DRAIN_MAX ? COL_DRAIN_MAX : (size_t)lag;
        size_t bound = (PACK_BOUND(want) + 7) & ~(size_t)7;
        uint8_t *dst = NULL;
        rc = seg_writer_data_reserve(p->writer, bound + COL_DRAIN_CHUNK, &dst);
        if (rc) {
            col_store_write_failed(st, rc, "data block", p->pid, now);
            return rc;      /* cursor untouched: the records stay in the ring */
        }
        uint8_t *scratch = dst + bound;
        struct shm_read_xform x = { .cal = &p->cal };
        struct pack_state pk;
        pack_init(&pk);
        uint64_t new_tail = s.tail;
        size_t got = 0, packed = 0;
        while (got < want) {
            size_t chunk = want - got < COL_DRAIN_CHUNK ? want - got : COL_DRAIN_CHUNK;
            long n = 0;
            if (g_read(p, data, &s, scratch, chunk, &new_tail, &x, &n))
                return -EFAULT;
            if (n == -ENOBUFS && got > 0)
                break;          /* the next record did not fit what is left: next pass */
            if (n < 0) {
                quarantine_ring(p, i, &s);
                return 0;       /* the reservation is dropped with everything in it */
            }
            long e = pack_records(&pk, scratch, (size_t)n, dst + PACK_PREFIX + packed,
                                  bound - PACK_PREFIX - packed);
            if (e < 0) {        /* cannot happen within PACK_BOUND: a bug, not the ring */
                col_log_limited(&p->rl, COL_LOG_ERROR, "pid %u: ring %u: packing overflowed "
                                "its bound; records left in the ring", p->pid, i);
                return -EIO;
            }
            packed += (size_t)e;
            got += (size_t)n;
            s.tail = new_tail;  /* the next chunk starts after what was read */
            if (n == 0 || new_tail == s.head)
                break;
        }
        if (got > 0) {
            uint64_t delta = s.lost >= r->lost_seen ? s.lost - r->lost_seen : 0;
            struct seg_data_stats stats = { .nrec = x.nrec, .t_min = x.t_min, .t_max = x.t_max };
            memcpy(stats.counts, x.counts, sizeof stats.counts);
            size_t plen = pack_finish(dst, packed, (uint32_t)got);
            rc = seg_writer_data_commit(p->writer, s.tid, i, s.generation, delta, plen, &stats,
                                        crc32c_update(0, dst, plen), SEG_BF_PACKED);
            if (rc) {
                col_store_write_failed(st, rc, "data block", p->pid, now);
                return rc;  /* cursor untouched: the records stay in the ring */
            }
            uint64_t nrec = stats.nrec;
            r->lost_seen = s.lost;
            r->lost += delta;
            p->lost += delta;
            p->records += nrec;
            p->writer_records += nrec;
            p->bytes_written += plen;
            r->pend_records += nrec;
            res->records += nrec;
            res->bytes += plen;
            if (!r->first_ns) {
                r->first_ns = x.t_first;
                res->fresh = 1;
            }
            r->last_ns = x.t_last;
            r->thread_dirty = 1;
        }
        if (new_tail != r->read_tail) {
            r->read_tail = new_tail;
            r->pend = 1;
        }
        if (new_tail != s.head)
            res->more = 1;
        r->backlog_ns = new_tail == s.head ? 0 : now;
    }
    int drained = !r->pend && r->consumed_tail == s.head;
    if (drained && (s.state == D9_RING_RELEASED || p->ended)) {
        /* the thread (or the whole process, which may have died with the
         * ring still OWNED) wrote its last record and everything is in a
         * flushed segment: drops after the last record are now final */
        uint64_t delta = s.lost > r->lost_seen ? s.lost - r->lost_seen : 0;
        if (delta) {
            /* drops after its last record: a record-less DATA block carries them */
            int rc = col_proc_writer(p, st, now);
            if (!rc)
                rc = seg_writer_add_data(p->writer, s.tid, i, s.generation, delta, NULL, 0);
            if (rc) {
                col_store_write_failed(st, rc, "data block", p->pid, now);
                return rc;
            }
            r->lost_seen = s.lost;
            r->lost += delta;
            p->lost += delta;
        }
    }
    if (drained && s.state == D9_RING_RELEASED) {
        int rc = end_thread(p, st, i, now);
        if (rc)
            return rc;
        if (g_recycle(p, rh))
            return -EFAULT;
        r->tail_known = 0;      /* the next owner starts from the shm tail again */
    }
    return 0;
}

void col_drain_publish(struct col_proc *p)
{
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct col_ring *r = &p->rings[i];
        if (!r->pend)
            continue;
        if (!p->quarantined && !r->quarantined && g_consume(p, shm_ring_hdr(&p->region, &p->geo, i),
                                                            r->read_tail)) {
            col_proc_quarantine(p, "SIGBUS while publishing a ring tail (file truncated?)");
        }
        r->consumed_tail = r->read_tail;
        r->pend = 0;
        r->pend_records = 0;
    }
}

uint64_t col_drain_rewind(struct col_proc *p)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct col_ring *r = &p->rings[i];
        if (!r->pend)
            continue;
        n += r->pend_records;
        r->read_tail = r->consumed_tail;
        r->pend = 0;
        r->pend_records = 0;
    }
    return n;
}

int col_drain_commit(struct col_proc *p, struct col_store *st, uint64_t now_ns)
{
    int any = 0;
    for (uint32_t i = 0; i < p->geo.ring_count && !any; i++)
        any = p->rings[i].pend;
    if (!any)
        return 0;
    if (p->writer) {
        int rc = seg_writer_flush(p->writer);
        if (rc) {
            col_store_write_failed(st, rc, "segment write", p->pid, now_ns);
            return rc;
        }
        col_store_write_ok(st);
    }
    col_drain_publish(p);
    return 0;
}

int col_drain_proc(struct col_proc *p, struct col_store *st, uint64_t now_ns, int force,
                   struct col_drain_result *res)
{
    if (p->quarantined)
        return 0;
    if (!col_store_writable(st, now_ns) || col_drain_commit(p, st, now_ns)) {
        res->write_failed = 1;
        return 0;
    }
    uint64_t lag = 0;
    uint32_t in_use = 0;
    uint8_t states[D9_RINGS_MAX];
    int rc = g_states(p, states);
    for (uint32_t i = 0; rc == 0 && i < p->geo.ring_count; i++) {
        if (states[i] != D9_RING_OWNED && states[i] != D9_RING_RELEASED) {
            /* FREE or CLAIMING: nothing of ours in it (drain_ring's own
             * snapshot decides for the others) */
            p->rings[i].state = states[i];
            p->rings[i].lag_bytes = 0;
            continue;
        }
        rc = drain_ring(p, st, i, now_ns, force, res);
        if (rc == -EFAULT)
            break;
        if (rc) {
            res->write_failed = 1;
            break;
        }
        lag += p->rings[i].lag_bytes;
        if (p->rings[i].lag_bytes > res->full_lag)
            res->full_lag = p->rings[i].lag_bytes;
        in_use += p->rings[i].state == D9_RING_OWNED;
        /* size rotation inside the pass: a segment overshoots by one buffer at most */
        if (p->writer && st->segment_max_bytes &&
            seg_writer_bytes(p->writer) >= st->segment_max_bytes && col_proc_seal(p, st)) {
            res->write_failed = 1;
            break;
        }
    }
    if (rc == -EFAULT) {
        col_proc_quarantine(p, "SIGBUS while reading its region (file truncated?)");
        /* what is already in the writer stays; tails are not published any more */
        return -EFAULT;
    }
    if (!rc) {
        p->lag_bytes = lag;
        p->rings_in_use = in_use;
    }
    res->full_size = p->geo.ring_data_size;
    /* publish what this pass wrote before the caller sleeps */
    if (col_drain_commit(p, st, now_ns))
        res->write_failed = 1;
    return 0;
}

int col_drain_proc_all(struct col_proc *p, struct col_store *st, struct col_drain_result *res)
{
    /* each pass takes up to COL_DRAIN_MAX bytes per ring; a ring holds at most
     * ring_data_size, so this many passes empty what was there at the start
     * even if a producer keeps writing */
    uint64_t passes = p->geo.ring_data_size / COL_DRAIN_MAX + 2;
    for (uint64_t k = 0; k < passes; k++) {
        struct col_drain_result one = { 0 };
        int rc = col_drain_proc(p, st, shm_mono_ns(), 1, &one);
        res->bytes += one.bytes;
        res->records += one.records;
        res->write_failed |= one.write_failed;
        res->more = one.more;
        if (rc)
            return rc;
        if (one.write_failed || !one.more)
            break;
    }
    return 0;
}
