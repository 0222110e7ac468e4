/*
 * ring_claim.c — claiming a ring of the agent's region (see ring_claim.h):
 * slot, pages, mapping, producer.
 *
 * Called by agent.c and sampler.c; calls only shm/. Slow path: it may make
 * syscalls (fallocate, madvise) but never takes a lock of its own and never
 * writes into a ring other than the one it just claimed.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/ring_claim.h"
#include "shm/bell.h"
#include "shm/region.h"

int ag_ring_claim_reserve(int fd, uint64_t off, uint64_t len)
{
    if (fd < 0)
        return 0;
    if (fallocate(fd, 0, (off_t)off, (off_t)len) == 0)
        return 0;
    int err = errno;
    return (err == EOPNOTSUPP || err == ENOSYS) ? 0 : -err;
}

/* Map the ring's pages now, on the claim (slow path), instead of taking a
 * page fault every 4 KiB on the thread's first pass through the ring.
 * madvise wants a page-aligned start and a ring is not page-aligned (the
 * stride is the data size plus the 256-byte ring header), so the range is
 * widened to whole pages; at most one page at each end belongs to a
 * neighbouring ring, and populating it early is harmless. Best effort:
 * older kernels lack MADV_POPULATE_WRITE (EINVAL), and a failure only
 * costs the page faults this avoids. */
static void prefault(void *addr, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)addr & ~(page - 1);
    uintptr_t hi = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
    madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)addr;
    (void)len;
#endif
}

int ag_ring_claim(struct ag_agent *a, uint32_t tid, const char *name, struct shm_producer *p)
{
    struct d9_region_hdr *h = a->region.hdr;
    int idx = shm_slot_claim(&a->region, tid, name);
    if (idx < 0)
        return -ENOSPC;
    uint64_t off = h->rings_offset + (uint64_t)idx * h->ring_stride;
    if (ag_ring_claim_reserve(a->region_fd, off, h->ring_stride) != 0) {
        shm_slot_release(&a->region, (uint32_t)idx);    /* untouched: head == tail */
        return -ENOMEM;
    }
    struct d9_ring_hdr *rh = (struct d9_ring_hdr *)(a->region.base + off);
    prefault(rh, h->ring_stride);
    /* relaxed: a statistic's bound, not a publication */
    uint32_t hw = atomic_load_explicit(&a->rings_hw, memory_order_relaxed);
    while (hw < (uint32_t)idx + 1 &&
           !atomic_compare_exchange_weak_explicit(&a->rings_hw, &hw, (uint32_t)idx + 1,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    shm_producer_attach(p, rh, (uint8_t *)rh + D9_RING_HDR_SIZE, h->ring_data_size);
    shm_producer_bell(p, shm_bell_of(a->region.base));
    return idx;
}
