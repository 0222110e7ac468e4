/*
 * bell.h — the collector's side of the regions' doorbells (struct d9_bell,
 * shm/d9_abi.h): one thread sleeps on the doorbell words of every adopted
 * region at once and turns a ring into a readable eventfd, which the loop
 * polls beside its timer, its control socket and its signals.
 *
 * Why a thread: the loop sleeps in ppoll (file descriptors), a doorbell is
 * a futex word, and no system call waits on both. The thread only ever
 * waits: it builds its futex_waitv list (the words and the values the loop
 * last acknowledged) under a mutex, sleeps, and on any wake that is not its
 * own list changing writes the eventfd and sleeps again until the loop has
 * collected. It never reads or writes shm itself (the kernel reads the
 * words), so a truncated region cannot SIGBUS it.
 *
 * The loop (d9collectd.c, the drain thread) calls everything else:
 * bell_watch at adoption, bell_forget before a region is unmapped,
 * bell_collect when the eventfd is readable (reads each word under the
 * SIGBUS guard, reports the regions that rang, acknowledges), bell_judge
 * after it drained a region that rang, bell_pass once per pass.
 *
 * Invariants: a region makes the loop pass at most once per ring it made,
 * and a ring must be paid for with data: a producer rings at most a few
 * times per ring of data it writes, so each ring costs BELL_RING_RECORDS
 * of the records drained from the region since its previous ring (a
 * quarter ring of 64-byte records: a quarter of what a real ring at half
 * full brings). A ring without that credit is spurious: more than
 * BELL_SPURIOUS_MAX of those in a BELL_WINDOW_NS window mute the region's
 * doorbell (the timer still drains it) for BELL_MUTE_NS, doubling per mute
 * up to BELL_MUTE_MAX_NS; a mute is logged and counted. Credit is capped
 * at BELL_SPURIOUS_MAX rings, so a region cannot bank a long past. A word that does not change (a dead producer,
 * however it was left) never wakes anyone. At most BELL_WATCH_MAX regions
 * are watched at once (futex_waitv's limit); the rest are drained on the
 * timer and counted.
 * Must never: block the loop, let one region keep the loop busy, or touch
 * shm outside the guard.
 */
#ifndef D9_DAEMON_BELL_H
#define D9_DAEMON_BELL_H

#include <stddef.h>
#include <stdint.h>

#define BELL_WATCH_MAX     127u                 /* futex_waitv takes 128: one is ours */
#define BELL_RECORD_BYTES  64u                  /* a ring's credit: ring_size / 4 / this */
#define BELL_SPURIOUS_MAX  16u
#define BELL_WINDOW_NS     1000000000ull
#define BELL_MUTE_NS       1000000000ull
#define BELL_MUTE_MAX_NS   (64ull * 1000000000ull)

struct bell;

struct bell_stats {
    uint64_t wakes;             /* eventfd wake-ups of the loop */
    uint64_t rings;             /* word changes seen (each region counted once per collect) */
    uint64_t spurious;          /* rings with no backlog behind them */
    uint64_t mutes;             /* times a region's doorbell was muted */
    uint64_t faults;            /* regions whose doorbell faulted (truncated) */
    uint32_t watched;           /* regions watched now */
    uint32_t unwatched;         /* regions beyond BELL_WATCH_MAX now */
};

/* Start the thread. -ENOSYS when the kernel has no futex_waitv (Linux <
 * 5.16): the collector then runs on its timer alone. 0 or -errno. */
int bell_open(struct bell **out);
void bell_close(struct bell *b);

/* The eventfd the loop polls for POLLIN. */
int bell_fd(const struct bell *b);

/* Watch the doorbell of the region mapped at base (size bytes), on behalf
 * of cookie (pid names it in the log): tell its producers a collector listens (they then make the
 * wake-up call) and acknowledge its word as it is now. 0, -EFAULT (the
 * region faulted: not watched), -ENOMEM. */
int bell_watch(struct bell *b, void *cookie, uint32_t pid, uint8_t *base, size_t size);

/* Stop watching cookie's region (before it is unmapped). With touch, tell
 * its producers nobody listens any more (guarded); without (a quarantined
 * region), leave its shm alone. */
void bell_forget(struct bell *b, void *cookie, int touch);

/* The eventfd was readable: read it, then read every watched word; each
 * cookie whose word changed since it was acknowledged goes into rung (up to
 * cap; the rest are still acknowledged) and is acknowledged. Lets the
 * thread sleep again. Returns the number of rung cookies stored. */
size_t bell_collect(struct bell *b, uint64_t now_ns, void **rung, size_t cap);

/* After draining a region that rang: records is the total of records ever
 * drained from it (it only grows), ring_size its rings' size. Pays the
 * ring from the records since the last judgement, or counts it spurious
 * and mutes as above. */
void bell_judge(struct bell *b, void *cookie, uint64_t records, uint64_t ring_size,
                uint64_t now_ns);

/* 1 when cookie's doorbell would wake the loop now: watched, within
 * BELL_WATCH_MAX, not muted, not faulted. */
int bell_covers(struct bell *b, const void *cookie);

/* Once per pass: unmute regions whose mute has run out. */
void bell_pass(struct bell *b, uint64_t now_ns);

void bell_get_stats(const struct bell *b, struct bell_stats *s);

#endif /* D9_DAEMON_BELL_H */
