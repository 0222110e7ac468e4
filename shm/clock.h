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

static inline uint64_t shm_clock_to_ns(const struct shm_clock_cal *c, uint64_t t)
{
    if (c->ns_per_tick == 0.0)
        return t;
    double d = ((double)(int64_t)(t - c->tsc0)) * c->ns_per_tick;
    return (uint64_t)((int64_t)c->ns0 + (int64_t)d);
}

#endif /* D9_SHM_CLOCK_H */
