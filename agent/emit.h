/*
 * emit.h — encoding of agent events into a thread's ring.
 *
 * Hot path. Every function here writes one record through a producer the
 * calling thread owns (shm/ring.h): no locks, no syscalls, no allocation.
 * Built-in events are inline (a reserve, a few stores, a release-store of
 * head); custom events are encoded out of line in emit.c because their size
 * depends on the values. Callers have already checked that the thread has a
 * ring; these functions only fail by dropping the record (counted in the
 * ring's lost counter with a seq gap, see ag_emit_drop). The record
 * functions in api.c also check shm_ring_fits() first, so that the reserve
 * inlined here folds into that one compare.
 *
 * src is the region's clock source; the timestamp is read only once space is
 * reserved, so a dropped record (full ring) costs no clock read.
 */
#ifndef D9_AGENT_EMIT_H
#define D9_AGENT_EMIT_H

#include <stdint.h>
#include "agent/d9.h"
#include "shm/clock.h"
#include "shm/ring.h"

/*
 * The public header states some ABI values a second time (d9.h is installed
 * alone and cannot include shm/d9_abi.h); they are pinned here, where public
 * values become records. Changing one side without the other fails the build.
 */
_Static_assert(D9_WORKER_NONE_ID == D9_WORKER_NONE, "d9.h: D9_WORKER_NONE_ID is D9_WORKER_NONE");
/* agent.c publishes a field's enum d9_type as its enum d9_field_type */
#define AG_EMIT_SAME_TYPE(t) ((int)D9_T_##t == (int)D9_FT_##t)
_Static_assert(AG_EMIT_SAME_TYPE(U64) && AG_EMIT_SAME_TYPE(I64) && AG_EMIT_SAME_TYPE(F64) &&
               AG_EMIT_SAME_TYPE(BOOL) && AG_EMIT_SAME_TYPE(STR),
               "d9.h: enum d9_type is enum d9_field_type");
#undef AG_EMIT_SAME_TYPE
_Static_assert(sizeof(((d9_runtime *)0)->id) == sizeof(((struct d9_rec_task *)0)->runtime),
               "d9.h: a runtime id is a record's runtime field");
_Static_assert(sizeof(d9_loc) == sizeof(((struct d9_rec_task *)0)->loc),
               "d9.h: d9_loc is a record's loc field");
_Static_assert(D9_SCHEMA_MAX_FIELDS == 16u && D9_STR_MAX == 255u,
               "d9.h documents up to 16 fields and strings cut to 255 bytes");

/* A timestamp in the region's clock source. */
static inline uint64_t ag_emit_now(uint32_t clock_source)
{
    return clock_source == D9_CLOCK_TSC ? shm_rdtsc() : shm_mono_ns();
}

/* Why a custom event was dropped (a full ring counts itself in shm_ring_reserve). */
enum ag_emit_drop_cause {
    AG_DROP_MISMATCH,           /* values do not match the schema, or the schema is bad */
    AG_DROP_TOO_BIG,            /* larger than D9_REC_MAX */
};

/* Count one dropped record exactly as a full ring does (lost + 1 and a seq
 * gap), and its cause in the ring's per-cause counter. */
static inline void ag_emit_drop(struct shm_producer *p, enum ag_emit_drop_cause why)
{
    /* single writer (the owning thread): relaxed load + store is exact */
    _Atomic uint64_t *c = why == AG_DROP_TOO_BIG ? &p->hdr->lost_too_big : &p->hdr->lost_mismatch;
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    uint64_t lost = atomic_load_explicit(&p->hdr->lost, memory_order_relaxed);
    atomic_store_explicit(&p->hdr->lost, lost + 1, memory_order_relaxed);
    p->seq++;
}

static inline void ag_emit_poll_start(struct shm_producer *p, uint32_t src, uint16_t rt,
                                      uint16_t worker, uint64_t task, uint32_t loc)
{
    struct d9_rec_poll_start *r = shm_ring_reserve(p, sizeof *r);
    if (__builtin_expect(!r, 0))
        return;
    r->task = task;
    r->loc = loc;
    r->runtime = rt;
    r->worker = worker;
    shm_ring_commit(p, r, sizeof *r, D9_REC_POLL_START, ag_emit_now(src));
}

static inline void ag_emit_poll_end(struct shm_producer *p, uint32_t src, uint16_t rt,
                                    uint16_t worker, uint64_t task)
{
    struct d9_rec_poll_end *r = shm_ring_reserve(p, sizeof *r);
    if (__builtin_expect(!r, 0))
        return;
    r->task = task;
    r->runtime = rt;
    r->worker = worker;
    r->_pad = 0;
    shm_ring_commit(p, r, sizeof *r, D9_REC_POLL_END, ag_emit_now(src));
}

static inline void ag_emit_wake(struct shm_producer *p, uint32_t src, uint16_t rt,
                                uint64_t waker, uint64_t wakee, uint16_t target_worker)
{
    struct d9_rec_wake *r = shm_ring_reserve(p, sizeof *r);
    if (__builtin_expect(!r, 0))
        return;
    r->waker = waker;
    r->wakee = wakee;
    r->runtime = rt;
    r->target_worker = target_worker;
    r->_pad = 0;
    shm_ring_commit(p, r, sizeof *r, D9_REC_WAKE, ag_emit_now(src));
}

/* type: D9_REC_WORKER_PARK or D9_REC_WORKER_UNPARK */
static inline void ag_emit_worker(struct shm_producer *p, uint32_t src, uint16_t type,
                                  uint16_t rt, uint16_t worker, uint32_t flags,
                                  uint64_t cpu_ns, uint64_t sched_wait_ns)
{
    struct d9_rec_worker *r = shm_ring_reserve(p, sizeof *r);
    if (__builtin_expect(!r, 0))
        return;
    r->runtime = rt;
    r->worker = worker;
    r->flags = flags;
    r->cpu_ns = cpu_ns;
    r->sched_wait_ns = sched_wait_ns;
    shm_ring_commit(p, r, sizeof *r, type, ag_emit_now(src));
}

/* type: D9_REC_TASK_SPAWN or D9_REC_TASK_TERMINATE (loc 0) */
static inline void ag_emit_task(struct shm_producer *p, uint32_t src, uint16_t type,
                                uint16_t rt, uint64_t task, uint32_t loc)
{
    struct d9_rec_task *r = shm_ring_reserve(p, sizeof *r);
    if (__builtin_expect(!r, 0))
        return;
    r->task = task;
    r->loc = loc;
    r->runtime = rt;
    r->_pad = 0;
    shm_ring_commit(p, r, sizeof *r, type, ag_emit_now(src));
}

static inline void ag_emit_queue_depth(struct shm_producer *p, uint32_t src, uint16_t rt,
                                       uint16_t worker, uint64_t depth)
{
    struct d9_rec_queue_depth *r = shm_ring_reserve(p, sizeof *r);
    if (__builtin_expect(!r, 0))
        return;
    r->depth = depth;
    r->runtime = rt;
    r->worker = worker;
    r->_pad = 0;
    shm_ring_commit(p, r, sizeof *r, D9_REC_QUEUE_DEPTH, ag_emit_now(src));
}

/* Bytes a custom record with these values needs (header included) into *len.
 * Returns 0, -EINVAL when the values do not match the schema (count or
 * types), -EMSGSIZE when the record would exceed D9_REC_MAX. Pure. */
int ag_emit_custom_size(const d9_schema *s, const d9_value *v, unsigned n, uint32_t *len);

/* Encode and commit one custom event with schema id schema_id, emitted in
 * task's poll (D9_TASK_NONE: outside polls); a mismatch or
 * an oversized record is dropped and counted (ag_emit_drop). Returns 0 when
 * committed, -EINVAL mismatch, -EMSGSIZE too big, -ENOSPC ring full. */
int ag_emit_custom(struct shm_producer *p, uint32_t src, uint32_t schema_id, uint64_t task,
                   const d9_schema *s, const d9_value *v, unsigned n);

#endif /* D9_AGENT_EMIT_H */
