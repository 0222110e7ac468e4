/*
 * guard.h — the SIGBUS guard: makes touching a mapped region that its owner
 * may truncate at any moment survivable.
 *
 * A traced process owns its region file and can shrink it under us; the
 * next access to a page past the new end raises SIGBUS. Every read or write
 * of a mapped region therefore happens between guard_arm() and
 * guard_disarm(), inside a small function of its own that called
 * sigsetjmp(jb, 0) first: a fault inside the armed range jumps back there
 * (the caller returns -EFAULT and quarantines the region) instead of
 * killing the collector.
 *
 * Called by drain.c (rings, metadata, calibration), proc.c (mapping and the
 * header) and prof.c (the sampler handshake), on the collector's single
 * drain thread; guard_install once by d9collectd.c at start-up.
 *
 * Invariants: one guard armed at a time (one thread arms it); the jump
 * buffer's frame is alive while armed (arm and disarm in the function that
 * called sigsetjmp). A signal handler can only find its way back through a
 * static, so the armed jump buffer and address range live in three statics,
 * written only by the drain thread; signal fences order them against the
 * handler.
 * Must never: swallow a fault outside the armed range (that is a bug of
 * ours: it is re-raised with the default action), or call anything but
 * siglongjmp from the handler.
 */
#ifndef D9_DAEMON_GUARD_H
#define D9_DAEMON_GUARD_H

#include <setjmp.h>
#include <stddef.h>

/* Install the SIGBUS handler once at start-up. A fault inside an armed
 * range jumps back to the armed sigjmp_buf (sigsetjmp(jb, 0): no syscall);
 * any other fault is re-raised with the default action (a real bug).
 * 0 or -errno. */
int guard_install(void);
void guard_arm(sigjmp_buf *jb, const void *base, size_t size);
/* Arm for any address: around a call that maps a region and reads it before
 * we know where it is (shm_region_map). */
void guard_arm_any(sigjmp_buf *jb);
void guard_disarm(void);

#endif /* D9_DAEMON_GUARD_H */
