/*
 * clock.h — timestamps. The agent stamps records with rdtsc where the TSC is
 * invariant (constant_tsc + nonstop_tsc in /proc/cpuinfo) and with
 * CLOCK_MONOTONIC (vDSO, no syscall) otherwise; the collector converts TSC
 * stamps to CLOCK_MONOTONIC ns with a linear calibration, so events from all
 * processes of the host share one time base.
 */
#ifndef D9_SHM_CLOCK_H
#define D9_SHM_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t shm_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static inline uint64_t shm_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 1 if this CPU has an invariant TSC usable across cores and processes. */
int shm_tsc_invariant(void);

/* A linear TSC -> ns mapping from two (tsc, ns) pairs. */
struct shm_clock_cal {
    uint64_t tsc0, ns0;
    double ns_per_tick;         /* 0 = identity (CLOCK_MONOTONIC source) */
};

/* Build a mapping from two pairs; -EINVAL if they are unusable
 * (tsc1 <= tsc0, or implied frequency outside 100 MHz..20 GHz). */
int shm_clock_cal_from_pairs(struct shm_clock_cal *c, uint64_t tsc0, uint64_t ns0,
                             uint64_t tsc1, uint64_t ns1);

/* Measure a calibration on this host over about ms milliseconds. */
int shm_clock_calibrate(struct shm_clock_cal *c, unsigned ms);

/* Beyond this distance from the calibration point (ns, about 146 years)
 * a converted stamp saturates instead of being computed. */
#define SHM_CLOCK_SPAN_MAX 0x1p62

/* t in CLOCK_MONOTONIC ns. Defined for every t (a stamp is the producer's
 * word: 0, UINT64_MAX, anything): the distance from the calibration point
 * is taken on the right side of it, the ns offset rounded to nearest and
 * added with saturation, so the result is monotonic in t, 0 for stamps far
 * before the calibration and UINT64_MAX far after it; never a signed
 * overflow or an out-of-range float conversion. */
static inline uint64_t shm_clock_to_ns(const struct shm_clock_cal *c, uint64_t t)
{
    if (c->ns_per_tick == 0.0)
        return t;
    double dt = t >= c->tsc0 ? (double)(t - c->tsc0) : -(double)(c->tsc0 - t);
    double d = dt * c->ns_per_tick;
    if (d >= SHM_CLOCK_SPAN_MAX)
        return UINT64_MAX;
    if (!(d > -SHM_CLOCK_SPAN_MAX))     /* NaN too (never from shm_clock_cal_from_pairs) */
        return 0;
    int64_t di = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);     /* |d| < 2^62: in range */
    if (di >= 0)
        return (uint64_t)di > UINT64_MAX - c->ns0 ? UINT64_MAX : c->ns0 + (uint64_t)di;
    uint64_t back = (uint64_t)-di;                          /* di > -2^62: no overflow */
    return back > c->ns0 ? 0 : c->ns0 - back;
}

#endif /* D9_SHM_CLOCK_H */
