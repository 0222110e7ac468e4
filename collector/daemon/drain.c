/*
 * drain.c — copy records from hostile shared memory into segment files
 * (see drain.h for the contract).
 *
 * Per ring and pass (drain_ring, one function per step):
 *   1. snapshot (acquire head, then slot fields) under the guard;
 *   2. resume_cursor: first sight of a ring starts at the published tail;
 *      track_generation: a new generation means the previous owner thread
 *      ended: THREAD_END;
 *   3. measure_backlog, batch_pending: a live thread's ring waits for a
 *      batch (drain_batch) unless forced;
 *   4. copy_records: metadata entries published before those records
 *      (their meta_head store happened-before the records' head store, and
 *      we acquire meta_head after head) go into the segment first;
 *      read_block reserves room for up to DRAIN_MAX bytes of records,
 *      packed, plus a scratch chunk in the segment writer's buffer;
 *      shm_ring_read() copies records into the scratch a DRAIN_CHUNK at a
 *      time and, in one walk over each chunk, validates, converts
 *      (timestamps) and counts them; pack_records() packs the chunk while
 *      it is still in cache, and seg_writer_rollup_feed() adds it to the
 *      segment's live rollups (rollup.h; with the store's rollup thread the
 *      chunk is read into that thread's buffer, seg_writer_rollup_slot, and
 *      handed over);
 *   5. commit_block: seg_writer_data_commit() makes it a packed DATA block
 *      (CRC over the packed bytes); the shm tail moves (shm_ring_consume,
 *      in commit() or drain_seal()) only once the writer has flushed or
 *      sealed it;
 *   6. finish_drained: RELEASED (or the process ended) and fully drained:
 *      final drops; RELEASED: THREAD_END, recycle the slot.
 *
 * Every shm access is one small g_* function: sigsetjmp's frame must stay
 * alive while the guard (guard.h) is armed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "collector/daemon/crashpt.h"
#include "collector/daemon/drain.h"
#include "collector/daemon/guard.h"
#include "collector/daemon/met.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/col_log.h"
#include "collector/store/pack.h"
#include "collector/store/ru_pipe.h"
#include "collector/daemon/proc.h"
#include "collector/store/seg_writer.h"
#include "collector/daemon/storedir.h"
#include "shm/meta.h"
#include "shm/record.h"
#include "shm/ring.h"

#define DRAIN_CAL_TRIES 8         /* seqlock retries before giving up on a pass */

/* one reservation: the packed payload of DRAIN_MAX bytes of records and a scratch chunk */
_Static_assert(((PACK_BOUND(DRAIN_MAX) + 7) & ~7u) + DRAIN_CHUNK <=
               SEG_WRITE_BUF - sizeof(struct seg_block_hdr), "drain reservation fits the writer");
_Static_assert(DRAIN_CHUNK <= RU_PIPE_SLOT, "a chunk fits the rollup pipe's buffer");

/* ---- calibration ------------------------------------------------------------------ */

int drain_read_calibration(const struct d9_region_hdr *hc, struct shm_clock_cal *cal)
{
    struct d9_region_hdr *h = (struct d9_region_hdr *)hc;
    for (int i = 0; i < DRAIN_CAL_TRIES; i++) {
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

/* ---- guarded shm accesses (each is one small function: sigsetjmp's frame
 * must stay alive while the guard is armed) ------------------------------------- */

static int g_snapshot(const struct proc *p, const struct d9_ring_hdr *rh,
                      struct shm_ring_snapshot *s)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    shm_ring_snapshot(rh, s);
    guard_disarm();
    return 0;
}

/* 1 if the page holding ring i's slot state is in memory: a ring whose header
 * page never was is a hole of the sparse file, all zeros, FREE. On error, 1
 * (then it is read). */
static int ring_page_resident(struct proc *p, uint32_t i)
{
    p->probes++;
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)&shm_ring_hdr(&p->region, &p->geo, i)->state;
    unsigned char v = 0;
    return mincore((void *)(a & ~((uintptr_t)page - 1)), 1, &v) != 0 || (v & 1);
}

/* The region's ring_hint (where the agent's next claim starts looking;
 * every claim stores the index after the ring it took), under the guard. */
static int g_hint(const struct proc *p, uint32_t *hint)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    *hint = atomic_load_explicit(&p->region.hdr->ring_hint, memory_order_relaxed);
    guard_disarm();
    return 0;
}

/* 1 when unseen ring i is in the circular window that claims since the
 * last pass can have taken: from the hint seen then up to DRAIN_PROBE_AHEAD
 * rings past the hint now (concurrent claims can store their hints out of
 * order, the later claim's first). */
static int in_claim_window(uint32_t i, uint32_t old_hint, uint32_t new_hint, uint32_t count)
{
    uint32_t from = old_hint % count;
    uint64_t span = ((uint64_t)new_hint % count + count - from) % count + DRAIN_PROBE_AHEAD;
    return ((uint64_t)i + count - from) % count <= span;
}

/* Which rings to look at this pass (want[i] = 1): reading a never-touched
 * ring header would allocate its page (tmpfs has no shared zero page), so a
 * region of DIAL9_MAX_THREADS=4096 rings cost 16 MiB and a page fault per
 * ring. A ring is read once its header page was seen in memory (the agent
 * touched it). The others are checked (mincore, one system call each) only
 * when the region's ring_hint moved since the last pass (a claim: the
 * rings from the old hint to a few past the new one), every one of them
 * every DRAIN_PROBE_NS (a hint that lies), and every ring is read once the
 * process ended (a swapped-out header page must not hide a ring's data).
 * A pass without a claim makes no system call here: the hint sits in the
 * header page the pass reads anyway. The ring page becomes resident at the
 * claim's CAS, before the claim stores the hint. */
static void rings_to_read(struct proc *p, uint64_t now, uint8_t *want)
{
    int all = now - p->probe_ns >= DRAIN_PROBE_NS;
    if (all)
        p->probe_ns = now;
    uint32_t hint = p->hint_seen;
    int claimed = p->ended || g_hint(p, &hint) != 0 || hint != p->hint_seen;
    uint32_t old_hint = p->hint_seen;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct proc_ring *r = &p->rings[i];
        if (!r->hdr_seen && !p->ended &&
            ((!all && !(claimed && in_claim_window(i, old_hint, hint, p->geo.ring_count))) ||
             !ring_page_resident(p, i))) {
            want[i] = 0;
            continue;
        }
        r->hdr_seen = 1;
        want[i] = 1;
    }
    p->hint_seen = hint;
}

/* A ring's drop counters as they can be true: each cause is part of lost,
 * so mismatch + too_big <= lost. The producer counts a cause just before
 * lost, so a reader may see the cause one ahead (DRAIN_CAUSE_SLACK); more
 * than that is a hostile or broken producer. Causes are clamped into lost
 * either way; 1 when the values were impossible. */
static int causes_clamp(uint64_t lost, uint64_t *mismatch, uint64_t *too_big)
{
    uint64_t mm = *mismatch, tb = *too_big;
    uint64_t room = lost > UINT64_MAX - DRAIN_CAUSE_SLACK ? UINT64_MAX : lost + DRAIN_CAUSE_SLACK;
    int bad = mm > room || tb > room - mm;
    *mismatch = mm < lost ? mm : lost;
    *too_big = tb < lost - *mismatch ? tb : lost - *mismatch;
    return bad;
}

/* The region's drop counters by cause, summed over its rings, under one
 * guard, each ring's causes clamped into its lost (causes_clamp); bad[i]
 * (bad may be NULL) is set for a ring whose counters could not be true.
 * Hostile values are only numbers: the index keeps the largest seen, and
 * drops_raise too.
 *
 * full, a ring's drops beyond its other causes, is read as a lower bound
 * so that the counter never has to go back: lost first, then the causes.
 * The producer counts a cause before its lost, so every drop in that lost
 * has its cause in the causes read after it; full = lost - causes is then
 * at most the ring's true full count (a drop whose cause comes between
 * the two reads is counted by its cause only). Read again while the ring
 * is quiet, it is exact. */
static int g_drops(const struct proc *p, struct proc_drops *d, uint8_t *bad)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    memset(d, 0, sizeof *d);
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        if (bad)
            bad[i] = 0;
        if (!p->rings[i].hdr_seen)
            continue;           /* never claimed: reading it would allocate its page */
        struct d9_ring_hdr *rh = (struct d9_ring_hdr *)shm_ring_hdr(&p->region, &p->geo, i);
        /* lost, then the causes (the producer counts them before lost),
         * then lost again: the causes are clamped into the second */
        uint64_t lost0 = atomic_load_explicit(&rh->lost, memory_order_relaxed);
        uint64_t mm = atomic_load_explicit(&rh->lost_mismatch, memory_order_relaxed);
        uint64_t tb = atomic_load_explicit(&rh->lost_too_big, memory_order_relaxed);
        uint64_t lost = atomic_load_explicit(&rh->lost, memory_order_relaxed);
        int b = causes_clamp(lost, &mm, &tb);
        if (bad)
            bad[i] = (uint8_t)b;
        /* mm + tb <= lost (clamped); lost0 may be anything below lost */
        uint64_t full = lost0 > mm + tb ? lost0 - mm - tb : 0;
        /* sums of clamped values: each at most its ring's lost, a u64 each */
        d->mismatch = mm > UINT64_MAX - d->mismatch ? UINT64_MAX : d->mismatch + mm;
        d->too_big = tb > UINT64_MAX - d->too_big ? UINT64_MAX : d->too_big + tb;
        d->full = full > UINT64_MAX - d->full ? UINT64_MAX : d->full + full;
    }
    d->no_ring = atomic_load_explicit(&p->region.hdr->lost_no_ring, memory_order_relaxed);
    guard_disarm();
    return 0;
}

static uint64_t u64_max(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The process's drops by cause (proc.drops) raised to a new read: each is
 * a counter (--metrics) and never goes down, whatever the region says. */
static void drops_raise(struct proc *p, const struct proc_drops *d)
{
    p->drops.full = u64_max(p->drops.full, d->full);
    p->drops.mismatch = u64_max(p->drops.mismatch, d->mismatch);
    p->drops.too_big = u64_max(p->drops.too_big, d->too_big);
    p->drops.no_ring = u64_max(p->drops.no_ring, d->no_ring);
}

/* After a seal: why the process's records were dropped, into the index,
 * with its bad stamps. A ring whose drop counters could not be true is
 * counted once (proc.counters_bad) and logged. */
static void index_drops(struct proc *p, struct storedir *st)
{
    struct proc_drops now;
    uint8_t *bad = p->quarantined || p->process_id <= 0 ? NULL : calloc(p->geo.ring_count, 1);
    if (!bad)
        return;
    int rc = g_drops(p, &now, bad);
    for (uint32_t i = 0; rc == 0 && i < p->geo.ring_count; i++) {
        if (!bad[i] || p->rings[i].counters_bad)
            continue;
        p->rings[i].counters_bad = 1;
        p->counters_bad++;
        col_log_limited(&p->rl, COL_LOG_WARN, "pid %u (%s): ring %u: drop counters by cause "
                        "exceed its lost count: clamped (%" PRIu64 " rings so far)", p->pid,
                        p->file, i, p->counters_bad);
    }
    free(bad);
    if (rc != 0)
        return;
    drops_raise(p, &now);
    struct idx_drops d = { .mismatch = p->drops.mismatch, .too_big = p->drops.too_big,
                           .no_ring = p->drops.no_ring, .bad_stamps = p->ts_bad };
    if (d.mismatch || d.too_big || d.no_ring || d.bad_stamps)
        (void)idx_process_drops(st->idx, p->process_id, &d);   /* best effort */
}

/* --metrics: the drops by cause read at the end of each pass, from the
 * same counters a seal reads (g_drops), so a scrape sees each cause when
 * the ring counts it, not at the next seal. A fault here changes nothing:
 * the next pass's own reads find it and quarantine the region. */
static void live_drops(struct proc *p)
{
    struct proc_drops now;
    if (p->met && !p->quarantined && g_drops(p, &now, NULL) == 0)
        drops_raise(p, &now);
}

/* The slot state of the rings to read, under one guard (the others are
 * FREE): most rings of a region are FREE, and a full guarded snapshot of
 * each was most of an idle pass. *no_ring gets the region's count of
 * events lost by threads without a ring (untrusted: any value). */
static int g_states(const struct proc *p, uint8_t *states, uint64_t *no_ring)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        if (!states[i])
            continue;
        const struct d9_ring_hdr *rh = shm_ring_hdr(&p->region, &p->geo, i);
        uint32_t st = atomic_load_explicit(&((struct d9_ring_hdr *)rh)->state,
                                           memory_order_relaxed);
        states[i] = st > UINT8_MAX ? UINT8_MAX : (uint8_t)st;     /* untrusted: any value */
    }
    *no_ring = atomic_load_explicit(&p->region.hdr->lost_no_ring, memory_order_relaxed);
    guard_disarm();
    return 0;
}

static int g_read(const struct proc *p, const uint8_t *data,
                  const struct shm_ring_snapshot *s, uint8_t *buf, size_t cap,
                  uint64_t *new_tail, struct shm_read_xform *x, long *n)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    *n = shm_ring_read(data, p->geo.ring_data_size, s, buf, cap, new_tail, x);
    guard_disarm();
    return 0;
}

static int g_consume(const struct proc *p, struct d9_ring_hdr *rh, uint64_t tail)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    shm_ring_consume(rh, tail);
    guard_disarm();
    return 0;
}

static int g_recycle(const struct proc *p, struct d9_ring_hdr *rh)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    shm_slot_recycle(rh);
    guard_disarm();
    return 0;
}

/* Copy meta log bytes [from, head) into dst; *head gets the published end
 * (clamped to the geometry). Also refreshes the calibration. */
static int g_meta(const struct proc *p, uint32_t from, uint8_t *dst, uint32_t *head,
                  struct shm_clock_cal *cal, int *cal_ok)
{
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0))
        return -EFAULT;
    guard_arm(&jb, p->region.base, p->region.size);
    struct d9_region_hdr *h = p->region.hdr;
    uint32_t hd = atomic_load_explicit(&h->meta_head, memory_order_acquire);
    if (hd > p->geo.meta_size)
        hd = p->geo.meta_size;
    if (hd > from && dst)
        memcpy(dst, p->region.base + p->geo.meta_offset + from, hd - from);
    *head = hd;
    if (p->geo.clock_source == D9_CLOCK_TSC)
        *cal_ok = drain_read_calibration(h, cal) == 0;
    guard_disarm();
    return 0;
}

/* ---- the process's open segment ------------------------------------------------ */

int drain_writer(struct proc *p, struct storedir *st, uint64_t now_ns)
{
    if (p->writer)
        return 0;
    struct seg_proc_info pi = {
        .pid = p->pid, .uid = p->uid, .start_time = p->start_time,
        .clock_source = p->geo.clock_source,
        .ns_per_tick = p->cal.ns_per_tick, .cal_tsc0 = p->cal.tsc0, .cal_ns0 = p->cal.ns0,
        .host = st->host, .comm = p->geo.comm, .exe = p->geo.exe,
    };
    int rc = storedir_writer_open(st, &pi, p->meta, p->meta_len, &p->writer);
    if (rc) {
        p->writer = NULL;
        storedir_write_failed(st, rc, "segment open", p->pid, now_ns);
        return rc;
    }
    p->meta_in_writer = p->meta_len;
    p->writer_records = 0;
    return 0;
}

void drain_quarantine(struct proc *p, const char *why)
{
    if (p->quarantined)
        return;
    p->quarantined = 1;
    col_warn("pid %u (%s): region quarantined: %s; it is not read again", p->pid, p->file, why);
}

/* ---- metadata ------------------------------------------------------------------------ */

/* Pull new metadata entries into p->meta (validated); index runtimes. */
static int pull_meta(struct proc *p, struct storedir *st)
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
        if (e.kind == D9_META_RUNTIME && p->met)
            met_runtime_name(p->met, e.id, e.name);
        trigd_meta(&p->trig, p->pid, &e);  /* markers and --trigger-field (trigd.h) */
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

static int write_pending_meta(struct proc *p, struct storedir *st, uint64_t now)
{
    if (p->meta_in_writer >= p->meta_len)
        return 0;
    int rc = seg_writer_add_meta(p->writer, p->meta + p->meta_in_writer,
                                 p->meta_len - p->meta_in_writer);
    if (rc) {
        storedir_write_failed(st, rc, "metadata block", p->pid, now);
        return rc;
    }
    p->meta_in_writer = p->meta_len;
    return 0;
}

/* ---- threads ---------------------------------------------------------------------------- */

/* The thread tracked on ring i ended: THREAD_END block + index row. */
static int end_thread(struct proc *p, struct storedir *st, uint32_t i, uint64_t now)
{
    struct proc_ring *r = &p->rings[i];
    if (!r->active)
        return 0;
    int rc = drain_writer(p, st, now);
    if (rc)
        return rc;
    uint64_t t = r->last_ns ? r->last_ns : now;
    rc = seg_writer_add_thread_end(p->writer, r->tid, i, r->generation, t);
    if (rc) {
        storedir_write_failed(st, rc, "thread-end block", p->pid, now);
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

static void index_threads(struct proc *p, struct storedir *st)
{
    if (!st->idx || p->process_id <= 0)
        return;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct proc_ring *r = &p->rings[i];
        if (!r->active || !r->thread_dirty || !r->first_ns)
            continue;
        int rc = idx_thread_upsert(st->idx, p->process_id, r->tid, i, r->generation, r->name,
                                   r->first_ns, r->last_ns, 0);
        if (rc)
            col_log_limited(&p->rl, COL_LOG_WARN, "pid %u: cannot index thread %u: %s",
                            p->pid, r->tid, strerror(-rc));
        else
            r->thread_dirty = 0;
    }
}

/* Drops of ring slot `ring` of process_id already recorded in indexed
 * segments, over all generations (the slot's lost counter is never reset by
 * a claim): where a previous collector run left the ring's lost counter. A
 * restarted collector starts from there, so drops are not counted twice
 * (the temp segments of a crashed run are salvaged and indexed before any
 * region is adopted). 0 when unknown (fresh ring, no index). */
static uint64_t indexed_lost(struct storedir *st, int64_t process_id, uint32_t ring)
{
    uint64_t lost = 0;
    if (st->idx)
        (void)idx_read_rings_lost(st->idx, process_id, ring, 1, &lost);
    return lost;
}

static void quarantine_ring(struct proc *p, uint32_t i, const struct shm_ring_snapshot *s)
{
    struct proc_ring *r = &p->rings[i];
    r->quarantined = 1;
    p->quarantined_rings++;
    col_warn("pid %u (%s): ring %u (tid %u, generation %u) has corrupt framing "
             "(head %llu tail %llu); quarantined, other rings keep draining",
             p->pid, p->file, i, s->tid, s->generation, (unsigned long long)s->head,
             (unsigned long long)s->tail);
}

/* ---- one ring: the steps of a pass ------------------------------------------------------
 *
 * drain_ring() below is the whole step for ring i; each function before it
 * is one part of it, in the order they run. They share the snapshot s taken
 * at the start: s.head is the producer's head as acquired then (every
 * record before it is complete), s.tail is replaced by our private cursor
 * (read_tail) before anything is read, and s.lost, s.state, s.tid and
 * s.generation are the slot's fields as read after head.
 */

/* First sight of a tracked ring (or collector restart): resume where the
 * last consumer stopped, the published shm tail. */
static void resume_cursor(struct proc *p, struct storedir *st, uint32_t i,
                          const struct shm_ring_snapshot *s)
{
    struct proc_ring *r = &p->rings[i];
    if (r->tail_known)
        return;
    r->read_tail = r->consumed_tail = s->tail;
    r->tail_known = 1;
    /* nothing reported yet by this run: start from what an earlier
     * collector run reported (after a recycle lost_seen is already right) */
    if (r->lost_seen == 0)
        r->lost_seen = indexed_lost(st, p->process_id, i);
}

/* Follow the slot's owner thread: a new generation means the previous
 * owner ended (THREAD_END), and the new one is tracked from here. 0 or a
 * write error. */
static int track_generation(struct proc *p, struct storedir *st, uint32_t i,
                            const struct shm_ring_snapshot *s, uint64_t now)
{
    struct proc_ring *r = &p->rings[i];
    if (r->active && s->generation != r->generation) {
        /* re-claimed only after it was drained: the previous thread is over */
        int rc = end_thread(p, st, i, now);
        if (rc)
            return rc;
    }
    if (!r->active) {
        r->active = 1;
        r->generation = s->generation;
        r->tid = s->tid;
        memcpy(r->name, s->thread_name, sizeof r->name);
        r->first_ns = r->last_ns = r->last_ns_pub = 0;
        r->thread_dirty = 1;
    }
    return 0;
}

/* Bytes [0, *skip) of the n record bytes at buf hold the leading records
 * whose seq is at most `upto` (seq counts a generation's records and may
 * wrap: compared as a 32-bit difference; a ring holds far fewer than 2^31
 * records). 1 when a later record follows them in buf (the skip ends
 * here). */
static int stored_prefix(const uint8_t *buf, size_t n, uint32_t upto, size_t *skip)
{
    size_t off = 0;
    while (off < n) {
        int len = shm_record_check(buf + off, n - off);     /* checked by the read already */
        if (len <= 0)
            break;
        struct d9_rec_hdr h;
        memcpy(&h, buf + off, sizeof h);
        if ((int32_t)(h.seq - upto) > 0) {
            *skip = off;
            return 1;
        }
        off += (size_t)len;
    }
    *skip = off;
    return 0;
}

/* First look at a ring this collector run, when an earlier run persisted
 * records of the same generation (proc_ring.stored_*, from proc_adopt):
 * that run may have died after writing records into a segment and before
 * publishing their tail, so the ring still holds them. Move the cursor
 * past every record whose seq the store already has and publish that
 * tail; either way the stored stamp is the ring's time floor. 0 or -EFAULT.
 * Records are read raw (no conversion) into a scratch buffer; a framing
 * error stops the skip and leaves the ring to copy_records, which
 * quarantines it. */
static int skip_stored(struct proc *p, uint32_t i, const struct shm_ring_snapshot *s)
{
    struct proc_ring *r = &p->rings[i];
    if (!r->stored_known)
        return 0;
    r->stored_known = 0;        /* once: a later generation starts fresh */
    if (s->generation != r->stored_gen)
        return 0;
    /* the stored stamp (CLOCK_MONOTONIC, as written) is the ring's time
     * floor: without it a stamp found impossible in the first block after a
     * restart took the process's start, a step back by the process's age */
    if (r->stored_ts > r->last_ns)
        r->last_ns = r->last_ns_pub = r->stored_ts;
    if (r->read_tail == s->head)
        return 0;
    uint8_t *buf = malloc(DRAIN_CHUNK);
    if (!buf)
        return 0;               /* at worst the old behaviour: written twice */
    const uint8_t *data = shm_ring_data(&p->region, &p->geo, i);
    struct shm_ring_snapshot t = *s;
    uint64_t pos = r->read_tail, skipped_bytes = 0;
    int rc = 0;
    /* each round moves past a whole chunk of stored records or ends */
    for (uint64_t k = 0; k <= p->geo.ring_data_size / DRAIN_CHUNK + 2 && pos != s->head; k++) {
        t.tail = pos;
        uint64_t nt = pos;
        long n = 0;
        if (g_read(p, data, &t, buf, DRAIN_CHUNK, &nt, NULL, &n)) {
            rc = -EFAULT;
            break;
        }
        if (n <= 0)
            break;
        size_t skip = 0;
        int ends = stored_prefix(buf, (size_t)n, r->stored_seq, &skip);
        if (ends && skip > 0) {
            /* read exactly the stored records again: the cursor after them */
            if (g_read(p, data, &t, buf, skip, &nt, NULL, &n)) {
                rc = -EFAULT;
                break;
            }
            if (n != (long)skip)
                break;
        }
        if (skip > 0) {
            skipped_bytes += nt - pos;
            pos = nt;
        }
        if (ends || skip == 0)
            break;
    }
    free(buf);
    if (rc || pos == r->read_tail)
        return rc;
    if (g_consume(p, shm_ring_hdr(&p->region, &p->geo, i), pos))
        return -EFAULT;
    r->read_tail = r->consumed_tail = pos;
    col_info("pid %u (%s): ring %u: %" PRIu64 " bytes of records up to seq %" PRIu32 " are in "
             "the store already (an earlier collector stopped before publishing their tail): "
             "not written again", p->pid, p->file, i, skipped_bytes, r->stored_seq);
    return 0;
}

/* Point s at our own cursor, never the shm tail (which the owner could
 * rewrite), and record the backlog this pass found: lag_bytes (what the
 * producer is ahead of us), since when some of it waits (backlog_ns) and
 * how much of it arrived since the previous look (fill_bytes). */
static void measure_backlog(struct proc_ring *r, struct shm_ring_snapshot *s, uint64_t now)
{
    s->tail = r->read_tail;
    r->lag_bytes = s->head >= s->tail ? s->head - s->tail : 0;
    /* the rate the pacing needs: what arrived since the last look, not the
     * backlog (a batch left waiting is not new data) */
    uint64_t delta = s->head - r->head_prev;
    r->fill_bytes = r->head_known && s->head >= r->head_prev && delta <= r->lag_bytes
                        ? delta : r->lag_bytes;
    r->head_prev = s->head;
    r->head_known = 1;
    if (s->head == s->tail)
        r->backlog_ns = 0;
    else if (!r->backlog_ns)
        r->backlog_ns = now;
}

/* 1 when the ring's backlog waits for a batch (see drain_batch): a live
 * thread's ring with less than a batch, younger than DRAIN_BATCH_NS.
 * Never when forced, when the process ended or the thread released the
 * ring, and never for a thread's first records: they name the thread and
 * show it is traced. */
static int batch_pending(const struct proc *p, const struct proc_ring *r,
                         const struct shm_ring_snapshot *s, uint64_t now, int force)
{
    return !force && !p->ended && s->state == D9_RING_OWNED && s->head > s->tail &&
           r->first_ns != 0 && r->lag_bytes < drain_batch(p->geo.ring_data_size) &&
           now - r->backlog_ns < DRAIN_BATCH_NS;
}

/* A DATA block being built in the segment writer's buffer: one reservation
 * holds the packed payload (dst[PACK_PREFIX, bound)) and, behind it, a
 * scratch chunk that shm_ring_read fills. */
struct ring_block {
    uint8_t *dst;
    size_t bound;               /* PACK_BOUND of what is wanted, rounded to 8 */
    struct shm_read_xform x;    /* conversion in, counts and time range out */
    struct pack_state pk;
    size_t got;                 /* raw record bytes read */
    size_t packed;              /* packed bytes written behind PACK_PREFIX */
    uint64_t new_tail;          /* the read cursor after what was read */
};

/* Reserve room for up to DRAIN_MAX bytes of s's records and read them into
 * b: shm_ring_read copies a DRAIN_CHUNK at a time into the scratch and, in
 * the same walk, validates, converts and counts the records; pack_records
 * then packs them (still in cache) into the payload. 0 (b->got may be 0),
 * 1 when the ring's framing is corrupt (the ring is now quarantined and the
 * reservation dropped with everything in it), -EFAULT (region fault),
 * -EIO (packing overflowed its bound: a bug) or the reservation's write
 * error. Nothing here moves a cursor: on any error the records stay in the
 * ring. */
static int read_block(struct proc *p, struct storedir *st, uint32_t i,
                      struct shm_ring_snapshot *s, uint64_t now, struct ring_block *b)
{
    const uint8_t *data = shm_ring_data(&p->region, &p->geo, i);
    uint64_t lag = s->head - s->tail;
    size_t want = s->head < s->tail || lag > DRAIN_MAX ? DRAIN_MAX : (size_t)lag;
    b->bound = (PACK_BOUND(want) + 7) & ~(size_t)7;
    b->dst = NULL;
    int rc = seg_writer_data_reserve(p->writer, b->bound + DRAIN_CHUNK, &b->dst);
    if (rc) {
        storedir_write_failed(st, rc, "data block", p->pid, now);
        return rc;      /* cursor untouched: the records stay in the ring */
    }
    uint8_t *scratch;
    /* a stamp is possible only in [the process's start, now], and a ring's
     * stamps never go backwards: the floor is the ring's last stamp */
    struct proc_ring *r = &p->rings[i];
    b->x = (struct shm_read_xform){
        .cal = &p->cal,
        .t_start = p->start_floor_ns,
        .t_lo = r->last_ns > p->start_floor_ns ? r->last_ns : p->start_floor_ns,
        .t_hi = shm_mono_ns() + DRAIN_TS_SLACK_NS,
    };
    pack_init(&b->pk);
    b->new_tail = s->tail;
    b->got = b->packed = 0;
    while (b->got < want) {
        size_t chunk = want - b->got < DRAIN_CHUNK ? want - b->got : DRAIN_CHUNK;
        /* with a rollup thread the chunk is read into the buffer that
         * carries it there: handing it over copies nothing */
        uint8_t *slot = seg_writer_rollup_slot(p->writer);
        scratch = slot ? slot : b->dst + b->bound;
        long n = 0;
        if (g_read(p, data, s, scratch, chunk, &b->new_tail, &b->x, &n))
            return -EFAULT;
        if (n == -ENOBUFS && b->got > 0)
            break;          /* the next record did not fit what is left: next pass */
        if (n < 0) {
            quarantine_ring(p, i, s);
            return 1;       /* the reservation is dropped with everything in it */
        }
        if (p->met)         /* --metrics: the chunk while it is in cache */
            met_feed(p->met, scratch, (size_t)n);
        if (trigd_wants(&p->trig))  /* triggers: markers, fields, long polls, sched */
            trigd_feed(p->pid, p->process_id, &p->trig, &r->trig, scratch, (size_t)n);
        long e = pack_records(&b->pk, scratch, (size_t)n, b->dst + PACK_PREFIX + b->packed,
                              b->bound - PACK_PREFIX - b->packed);
        if (e < 0) {        /* cannot happen within PACK_BOUND: a bug, not the ring */
            col_log_limited(&p->rl, COL_LOG_ERROR, "pid %u: ring %u: packing overflowed "
                            "its bound; records left in the ring", p->pid, i);
            return -EIO;
        }
        /* the segment's live rollups: the chunk handed to the rollup
         * thread in the buffer it was read into, or fed here while it is in
         * cache (a failure only interrupts them: the seal reads the file
         * back) */
        (void)seg_writer_rollup_feed(p->writer, i, s->generation, scratch, (size_t)n);
        b->packed += (size_t)e;
        b->got += (size_t)n;
        s->tail = b->new_tail;  /* the next chunk starts after what was read */
        if (n == 0 || b->new_tail == s->head)
            break;
    }
    return 0;
}

/* Make b a packed DATA block of the segment (CRC over the packed bytes),
 * carrying the drops the ring counted since the last block, and count it.
 * 0 or the write error (cursor untouched: the records stay in the ring). */
static int commit_block(struct proc *p, struct storedir *st, uint32_t i,
                        const struct shm_ring_snapshot *s, struct ring_block *b, uint64_t now,
                        struct drain_result *res)
{
    struct proc_ring *r = &p->rings[i];
    uint64_t delta = s->lost >= r->lost_seen ? s->lost - r->lost_seen : 0;
    struct seg_data_stats stats = { .nrec = b->x.nrec, .t_min = b->x.t_min, .t_max = b->x.t_max };
    memcpy(stats.counts, b->x.counts, sizeof stats.counts);
    size_t plen = pack_finish(b->dst, b->packed, (uint32_t)b->got);
    int rc = seg_writer_data_commit(p->writer, s->tid, i, s->generation, delta, plen, &stats,
                                    crc32c_update(0, b->dst, plen), SEG_BF_PACKED);
    if (rc) {
        storedir_write_failed(st, rc, "data block", p->pid, now);
        return rc;
    }
    uint64_t nrec = stats.nrec;
    if (b->x.clamped) {
        p->ts_clamped += b->x.clamped;
        col_log_limited(&p->rl, COL_LOG_WARN, "pid %u (%s): ring %u: %" PRIu64 " timestamps "
                        "going backwards were raised to the one before (%" PRIu64 " so far)",
                        p->pid, p->file, i, b->x.clamped, p->ts_clamped);
    }
    if (b->x.bad) {
        p->ts_bad += b->x.bad;
        col_log_limited(&p->rl, COL_LOG_WARN, "pid %u (%s): ring %u: %" PRIu64 " timestamps "
                        "before the process started or after now were given the time of the "
                        "record before them (%" PRIu64 " bad stamps so far)", p->pid, p->file,
                        i, b->x.bad, p->ts_bad);
    }
    r->lost_seen = s->lost;
    r->lost += delta;
    p->lost += delta;
    (void)trigd_lost(p->pid, p->process_id, i, delta, now);     /* --trigger-lost */
    p->records += nrec;
    p->writer_records += nrec;
    p->bytes_written += plen;
    r->pend_records += nrec;
    res->records += nrec;
    res->bytes += plen;
    if (!r->first_ns) {
        r->first_ns = b->x.t_first;
        res->fresh = 1;
    }
    r->last_ns = b->x.t_last;
    r->thread_dirty = 1;
    return 0;
}

/* Copy ring i's backlog into the segment: the metadata entries published
 * before these records first (their meta_head store happened-before the
 * records' head store, and pull_meta acquires meta_head after we acquired
 * head), then one DATA block. The private cursor (read_tail) moves past what
 * the block holds and the ring is marked pending: the shm tail is published
 * by commit() once the writer flushed them (or by drain_seal). 0, 1 (ring
 * quarantined), -EFAULT or a write error. */
static int copy_records(struct proc *p, struct storedir *st, uint32_t i,
                        struct shm_ring_snapshot *s, uint64_t now, struct drain_result *res)
{
    struct proc_ring *r = &p->rings[i];
    int rc = pull_meta(p, st);
    if (rc)
        return rc;
    if ((rc = drain_writer(p, st, now)) || (rc = write_pending_meta(p, st, now)))
        return rc;
    struct ring_block b;
    if ((rc = read_block(p, st, i, s, now, &b)))
        return rc;
    if (b.got > 0 && (rc = commit_block(p, st, i, s, &b, now, res)))
        return rc;
    if (b.new_tail != r->read_tail) {
        r->read_tail = b.new_tail;
        r->pend = 1;
    }
    if (b.new_tail != s->head)
        res->more = 1;
    r->backlog_ns = b.new_tail == s->head ? 0 : now;
    return 0;
}

/* The thread (or the whole process, which may have died with the ring still
 * OWNED) wrote its last record and everything is in a flushed segment:
 * drops counted after its last record are now final, and a record-less
 * DATA block carries them. 0 or a write error. */
static int write_final_drops(struct proc *p, struct storedir *st, uint32_t i,
                             const struct shm_ring_snapshot *s, uint64_t now)
{
    struct proc_ring *r = &p->rings[i];
    uint64_t delta = s->lost > r->lost_seen ? s->lost - r->lost_seen : 0;
    if (!delta)
        return 0;
    int rc = drain_writer(p, st, now);
    if (!rc)
        rc = seg_writer_add_data(p->writer, s->tid, i, s->generation, delta, NULL, 0);
    if (rc) {
        storedir_write_failed(st, rc, "data block", p->pid, now);
        return rc;
    }
    r->lost_seen = s->lost;
    r->lost += delta;
    p->lost += delta;
    (void)trigd_lost(p->pid, p->process_id, i, delta, now);     /* --trigger-lost */
    return 0;
}

/* A ring is drained when nothing read from it waits for a flush and its
 * published tail is the head we saw. A drained RELEASED ring (or any ring
 * of an ended process) gets its final drops; a drained RELEASED ring ends
 * its thread and goes back to FREE (shm_slot_recycle), and its next owner
 * is read from the shm tail again. 0, -EFAULT or a write error. */
static int finish_drained(struct proc *p, struct storedir *st, uint32_t i,
                          const struct shm_ring_snapshot *s, uint64_t now)
{
    struct proc_ring *r = &p->rings[i];
    if (r->pend || r->consumed_tail != s->head)
        return 0;
    int rc;
    if ((s->state == D9_RING_RELEASED || p->ended) && (rc = write_final_drops(p, st, i, s, now)))
        return rc;
    if (s->state != D9_RING_RELEASED)
        return 0;
    if ((rc = end_thread(p, st, i, now)))
        return rc;
    if (g_recycle(p, shm_ring_hdr(&p->region, &p->geo, i)))
        return -EFAULT;
    r->tail_known = 0;      /* the next owner starts from the shm tail again */
    return 0;
}

/* One ring, one block at most: snapshot it (head acquired first, then the
 * slot fields, under the guard), follow its owner, and copy its backlog
 * unless that waits for a batch. 0, -EFAULT (region fault) or a write
 * error. Records go into the writer and the private read_tail advances;
 * the shm tail is published by commit() once the writer flushed them. */
static int drain_ring(struct proc *p, struct storedir *st, uint32_t i, uint64_t now,
                      int force, struct drain_result *res)
{
    struct proc_ring *r = &p->rings[i];
    if (r->quarantined)
        return 0;
    struct shm_ring_snapshot s;
    if (g_snapshot(p, shm_ring_hdr(&p->region, &p->geo, i), &s))
        return -EFAULT;
    r->state = s.state;
    if (s.state != D9_RING_OWNED && s.state != D9_RING_RELEASED) {
        r->lag_bytes = r->fill_bytes = 0;
        r->head_known = 0;
        return 0;           /* FREE or CLAIMING: nothing of ours in it */
    }
    resume_cursor(p, st, i, &s);
    int rc = track_generation(p, st, i, &s, now);
    if (rc)
        return rc;
    if ((rc = skip_stored(p, i, &s)))
        return rc;
    measure_backlog(r, &s, now);
    if (s.head != s.tail && !batch_pending(p, r, &s, now, force)) {
        rc = copy_records(p, st, i, &s, now, res);
        if (rc == 1)
            return 0;       /* ring quarantined: nothing more of it this pass */
        if (rc)
            return rc;
    }
    return finish_drained(p, st, i, &s, now);
}

/* ---- tails: published only once the segment holds their records ------------------------
 *
 * A ring read this pass is pending (pend, pend_records) until its records
 * are in the segment file: commit() after a successful write(2) of the
 * writer's buffer, drain_seal() after a successful seal. Only then does
 * shm_ring_consume (a release store of the tail) give the space back to
 * the producer; a failed seal rewinds read_tail instead. */

/* Publish pending tails without flushing (the writer was just sealed). */
static void publish(struct proc *p)
{
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct proc_ring *r = &p->rings[i];
        if (!r->pend)
            continue;
        if (!p->quarantined && !r->quarantined && g_consume(p, shm_ring_hdr(&p->region, &p->geo, i),
                                                            r->read_tail)) {
            drain_quarantine(p, "SIGBUS while publishing a ring tail (file truncated?)");
        }
        r->consumed_tail = r->read_tail;
        r->last_ns_pub = r->last_ns;
        r->pend = 0;
        r->pend_records = 0;
    }
}

/* The writer holding pending records is gone (seal failed): rewind the
 * private cursors so those records are read again; returns their count. */
static uint64_t rewind_pending(struct proc *p)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < p->geo.ring_count; i++) {
        struct proc_ring *r = &p->rings[i];
        if (!r->pend)
            continue;
        n += r->pend_records;
        r->read_tail = r->consumed_tail;
        r->last_ns = r->last_ns_pub;
        r->pend = 0;
        r->pend_records = 0;
    }
    return n;
}

/* Flush p's writer and, if that worked, publish the tails of every ring
 * whose records it now holds (shm_ring_consume). 0 or the write error. */
static int commit(struct proc *p, struct storedir *st, uint64_t now_ns)
{
    int any = 0;
    for (uint32_t i = 0; i < p->geo.ring_count && !any; i++)
        any = p->rings[i].pend;
    if (!any)
        return 0;
    if (p->writer) {
        int rc = seg_writer_flush(p->writer);
        if (rc) {
            storedir_write_failed(st, rc, "segment write", p->pid, now_ns);
            return rc;
        }
        storedir_write_ok(st);
        crashpt(CRASHPT_FLUSHED);
    }
    publish(p);
    return 0;
}

int drain_seal(struct proc *p, struct storedir *st)
{
    if (!p->writer)
        return 0;
    int trc = trigd_write_blocks(p->pid, p->writer);    /* its triggers, in its segment */
    if (trc) {
        storedir_write_failed(st, trc, "trigger block", p->pid, shm_mono_ns());
        return trc;
    }
    /* write what is buffered first: if that fails (disk full) the writer
     * stays open and nothing is lost; a failed seal would delete the file */
    int frc = seg_writer_flush(p->writer);
    if (frc) {
        storedir_write_failed(st, frc, "segment write", p->pid, shm_mono_ns());
        return frc;
    }
    struct seg_writer *w = p->writer;
    uint64_t pending = 0;
    for (uint32_t i = 0; i < p->geo.ring_count; i++)
        pending += p->rings[i].pend_records;
    uint64_t recs = p->writer_records;
    p->writer = NULL;
    p->writer_records = 0;
    p->meta_in_writer = 0;
    /* records whose tails were already published are lost if sealing fails;
     * pending ones are not: their tails go out only after the seal */
    int rc = storedir_seal(st, w, p->process_id, p->pid, recs >= pending ? recs - pending : 0);
    if (rc == 0) {
        if (pending)
            crashpt(CRASHPT_SEALED);
        publish(p);
        index_drops(p, st);
    } else {
        uint64_t again = rewind_pending(p);
        p->records = p->records >= again ? p->records - again : 0;
    }
    index_threads(p, st);
    return rc;
}

/* ---- a pass over a process ------------------------------------------------------------- */

/* Events lost by the process's threads that have no ring (the agent counts
 * them per process, in the region header, not in any ring): when the count
 * passes the highest one seen, the growth is a lost-records trigger
 * (--trigger-lost) and the no_ring cause of --metrics. The count is
 * untrusted: one going back is ignored, and a hostile one that keeps
 * growing fires no more than the debounce and rate limit allow. */
static void lost_no_ring(struct proc *p, uint64_t no_ring, uint64_t now)
{
    if (no_ring <= p->no_ring_seen)
        return;
    uint64_t delta = no_ring - p->no_ring_seen;
    p->no_ring_seen = no_ring;
    p->drops.no_ring = u64_max(p->drops.no_ring, no_ring);
    (void)trigd_lost(p->pid, p->process_id, TRIGD_RING_NONE, delta, now);
}

int drain_proc(struct proc *p, struct storedir *st, uint64_t now_ns, int force,
               struct drain_result *res)
{
    if (p->quarantined)
        return 0;
    if (!storedir_writable(st, now_ns) || commit(p, st, now_ns)) {
        res->write_failed = 1;
        return 0;
    }
    uint64_t lag = 0;
    uint32_t in_use = 0;
    uint8_t states[D9_RINGS_MAX];
    uint64_t no_ring = 0;
    rings_to_read(p, now_ns, states);
    int rc = g_states(p, states, &no_ring);
    if (rc == 0)
        lost_no_ring(p, no_ring, now_ns);
    for (uint32_t i = 0; rc == 0 && i < p->geo.ring_count; i++) {
        if (states[i] != D9_RING_OWNED && states[i] != D9_RING_RELEASED) {
            /* FREE or CLAIMING: nothing of ours in it (drain_ring's own
             * snapshot decides for the others) */
            p->rings[i].state = states[i];
            p->rings[i].lag_bytes = p->rings[i].fill_bytes = 0;
            p->rings[i].head_known = 0;
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
        if (p->rings[i].fill_bytes > res->full_fill)
            res->full_fill = p->rings[i].fill_bytes;
        in_use += p->rings[i].state == D9_RING_OWNED;
        /* size rotation inside the pass: a segment overshoots by one buffer at most */
        if (p->writer && st->segment_max_bytes &&
            seg_writer_bytes(p->writer) >= st->segment_max_bytes && drain_seal(p, st)) {
            res->write_failed = 1;
            break;
        }
    }
    if (rc == -EFAULT) {
        drain_quarantine(p, "SIGBUS while reading its region (file truncated?)");
        /* what is already in the writer stays; tails are not published any more */
        return -EFAULT;
    }
    if (!rc) {
        p->lag_bytes = lag;
        p->rings_in_use = in_use;
        live_drops(p);
    }
    res->full_size = p->geo.ring_data_size;
    /* the triggers this pass fired, into its segment (no reservation open now) */
    if (p->writer && trigd_write_blocks(p->pid, p->writer))
        res->write_failed = 1;
    /* publish what this pass wrote before the caller sleeps */
    if (commit(p, st, now_ns))
        res->write_failed = 1;
    return 0;
}

int drain_proc_all(struct proc *p, struct storedir *st, struct drain_result *res)
{
    /* each pass takes up to DRAIN_MAX bytes per ring; a ring holds at most
     * ring_data_size, so this many passes empty what was there at the start
     * even if a producer keeps writing */
    uint64_t passes = p->geo.ring_data_size / DRAIN_MAX + 2;
    for (uint64_t k = 0; k < passes; k++) {
        struct drain_result one = { 0 };
        int rc = drain_proc(p, st, shm_mono_ns(), 1, &one);
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
