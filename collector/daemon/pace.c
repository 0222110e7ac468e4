/*
 * pace.c — the drain loop's sleep between passes (see pace.h).
 */
#include <stdint.h>
#include "collector/daemon/pace.h"

void pace_init(struct pace *b, uint32_t min_us, uint32_t max_us)
{
    if (min_us == 0)
        min_us = 1;
    if (max_us < min_us)
        max_us = min_us;
    b->min_us = min_us;
    b->max_us = max_us;
    b->cur_us = min_us;
}

uint32_t pace_next(struct pace *b, int had_work)
{
    if (had_work) {
        b->cur_us = b->min_us;
        return 0;
    }
    uint32_t s = b->cur_us;
    b->cur_us = s > b->max_us / 2 ? b->max_us : s * 2;
    return s;
}

uint32_t pace_by_pressure(struct pace *b, uint64_t fill, uint64_t size, uint64_t dt_us,
                          int more)
{
    uint32_t s = pace_next(b, 0);
    uint64_t cap = UINT64_MAX;
    if (fill != 0 && size != 0) {
        /* time for the fullest ring to go from empty to 1/PACE_TARGET_DIV
         * full at fill per dt: the rest of the ring absorbs a stall of the
         * collector (a seal, a preemption) or a faster burst */
        cap = dt_us * (size / PACE_TARGET_DIV) / fill;
        if (cap < s) {
            s = cap < b->min_us ? b->min_us : (uint32_t)cap;
            b->cur_us = s;      /* grow again from here, not from a long sleep */
        }
    }
    if (more || (size && fill * PACE_BUSY_DIV >= size)) {
        /* Go again at once. The sleep after that pass keeps the pace just
         * computed: restarting it from min_us made a steady producer a
         * sawtooth of short sleeps doubling back up (835 wake-ups/s at
         * 1 M events/s into a 1 MiB ring, where 125 keep it under a
         * quarter full). Only data left behind, or a ring filling a
         * quarter faster than PACE_STALL_US, restarts it from
         * min_us (pace_next's "had work"): there one stall of the
         * collector's CPU can fill the other three quarters. */
        return more || cap < PACE_STALL_US ? pace_next(b, 1) : 0;
    }
    return s;
}

void pace_sleep_window(uint64_t ns, uint64_t *request_ns, uint64_t *slack_ns)
{
    uint64_t slack = ns / 2 ? 1ull << (63 - __builtin_clzll(ns / 2)) : 0;
    if (slack <= PACE_SLACK_MIN_NS) {
        *request_ns = ns;
        *slack_ns = PACE_SLACK_MIN_NS;
        return;
    }
    *request_ns = ns - slack;
    *slack_ns = slack;
}
