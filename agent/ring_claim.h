/*
 * ring_claim.h — claiming a ring of the agent's region for one producer.
 *
 * Called by agent.c (a thread's event ring, on its first event; the region's
 * header pages at creation) and sampler.c (a sampled thread's second ring).
 * Both depend on this module, never the other way round, so calls go one
 * way: api -> agent -> ring_claim, sampler -> ring_claim.
 *
 * Slow path only: fallocate and madvise here. Takes no lock; the caller
 * holds the one that orders a claim against the region's teardown.
 * Must never touch a ring it did not claim, nor leave a failed claim's slot
 * taken.
 */
#ifndef D9_AGENT_RING_CLAIM_H
#define D9_AGENT_RING_CLAIM_H

#include <stdint.h>
#include "shm/ring.h"

struct ag_agent;

/* Claim a ring of a's region for thread tid (name: its comm): the slot
 * (shm_slot_claim), the pages behind it (fallocate, so a full /dev/shm is
 * an error here, not a SIGBUS later) and their mapping (MADV_POPULATE_WRITE,
 * so the first lap takes no page faults), then attach p to it. Returns the
 * ring index; -ENOSPC when no ring is free (shm_slot_claim counted the
 * thread in threads_untraced); -ENOMEM when no memory is behind the ring
 * (given back untouched, not counted). Shared by the event rings
 * (ag_agent_thread_attach) and the SIGPROF sampler's rings. */
int ag_ring_claim(struct ag_agent *a, uint32_t tid, const char *name, struct shm_producer *p);

/* Reserve the pages of [off, off + len) of the region file fd, so a full
 * /dev/shm shows up as an error here instead of SIGBUS on a later store.
 * 0, or -errno of fallocate; fd < 0 and filesystems that cannot preallocate
 * are accepted as they are (0). */
int ag_ring_claim_reserve(int fd, uint64_t off, uint64_t len);

#endif /* D9_AGENT_RING_CLAIM_H */
