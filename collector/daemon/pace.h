/*
 * pace.h — how long the drain loop sleeps between passes: an idle backoff,
 * capped by the pressure the last pass found in the fullest ring, and the
 * timer window of that sleep.
 *
 * Called by d9collectd.c after every pass (pace_by_pressure, pace_next) and
 * before every sleep (pace_sleep_window); drain.h sizes its batches from
 * PACE_BUSY_DIV.
 *
 * Pure functions of their arguments and of struct pace: no clock, no
 * system call, so they are tested as plain arithmetic.
 */
#ifndef D9_DAEMON_PACE_H
#define D9_DAEMON_PACE_H

#include <stdint.h>

struct pace {
    uint32_t min_us, max_us;
    uint32_t cur_us;            /* next idle sleep */
};
void pace_init(struct pace *b, uint32_t min_us, uint32_t max_us);
/* After a pass: returns how long to sleep (0 = poll again now). A pass with
 * work resets the sleep to min; each idle pass doubles it up to max. */
uint32_t pace_next(struct pace *b, int had_work);

/* Pace the next pass by pressure instead of by "found anything": fill is
 * what the fastest ring received since the previous pass (its head's
 * advance, relative to that ring's size, size bytes; not its backlog: a
 * batch left waiting for the next pass is not new data, and counting it
 * made a trickle look fast), dt_us the time since the previous pass began,
 * more whether a ring still held data when the pass stopped.
 *   - the sleep is the idle backoff (x2 per pass up to max), capped so that
 *     at the rate just seen (fill per dt) the fullest ring stays under
 *     1/PACE_TARGET_DIV full: the other three quarters absorb a
 *     stall of the collector or a burst;
 *   - more, or the fastest ring filled 1/PACE_BUSY_DIV or more: 0 (go
 *     again), and the next sleep keeps that cap (not min: restarting from
 *     min made a steady producer a sawtooth of short sleeps), unless data
 *     was left behind or the cap is under PACE_STALL_US: then the
 *     sleep restarts from min.
 * A trickle of events therefore costs a wakeup every few ms, not a busy loop,
 * a steady stream one wakeup per quarter ring, and a ring filling fast is
 * drained before it overflows. */
#define PACE_BUSY_DIV 8u
#define PACE_TARGET_DIV 4u
/* A ring that fills a quarter in less than this is polled from min_us after
 * a busy pass: a stall of the collector's CPU (a virtual CPU halted by its
 * host) can last milliseconds, and must fit in the other three quarters. */
#define PACE_STALL_US 2000u
/* The idle backoff's ceiling while every live region's producers ring
 * their doorbell and the collector listens (bell.h): a burst then wakes
 * the collector at half a ring, so the timer only bounds how long a trickle
 * waits (a ring's backlog is read once it is DRAIN_BATCH_NS old anyway) and
 * need not wake the collector every --poll-max-us for data that is not
 * there. --poll-max-us above this still wins. */
#define PACE_BELL_MAX_US 200000u
uint32_t pace_by_pressure(struct pace *b, uint64_t fill, uint64_t size, uint64_t dt_us,
                          int more);

/*
 * The timer of a sleep of ns: wake no later than ns, but let the kernel fire
 * the timer at any interrupt in the sleep's second half (timer slack,
 * PR_SET_TIMERSLACK: the largest power of two up to ns / 2; a power of two
 * because the paced sleeps vary from pass to pass and each change of the
 * slack is a system call). On a busy CPU the scheduler tick lands in the
 * window of any sleep longer than two ticks, so the wake-up needs no timer
 * interrupt of its own (an interrupt costs the CPU it lands on as much as a
 * profile sample does; tests/bench/README.md has the numbers).
 * *request_ns = ns - slack, *slack_ns = the slack; sleeps shorter than
 * 2^17 ns (131 us) keep the kernel's default slack and are requested whole.
 */
#define PACE_SLACK_MIN_NS 50000u     /* the kernel's default timer slack */
void pace_sleep_window(uint64_t ns, uint64_t *request_ns, uint64_t *slack_ns);

#endif /* D9_DAEMON_PACE_H */
