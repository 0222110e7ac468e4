/*
 * clock.c — TSC detection and TSC -> CLOCK_MONOTONIC calibration.
 * Not on any hot path: called once at agent init and by the collector.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "shm/clock.h"

int shm_tsc_invariant(void)
{
#if defined(__x86_64__) || defined(__i386__)
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    char line[4096];
    int constant = 0, nonstop = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
#else
    return 0;
#endif
}

#define CAL_MIN_HZ 100e6
#define CAL_MAX_HZ 20e9

int shm_clock_cal_from_pairs(struct shm_clock_cal *c, uint64_t tsc0, uint64_t ns0,
                             uint64_t tsc1, uint64_t ns1)
{
    if (tsc1 <= tsc0 || ns1 <= ns0)
        return -EINVAL;
    double npt = (double)(ns1 - ns0) / (double)(tsc1 - tsc0);
    if (npt < 1e9 / CAL_MAX_HZ || npt > 1e9 / CAL_MIN_HZ)
        return -EINVAL;
    c->tsc0 = tsc0;
    c->ns0 = ns0;
    c->ns_per_tick = npt;
    return 0;
}

/* One (tsc, ns) pair with the TSC read bracketing the clock read as tightly
 * as possible: the narrowest of a few tries wins. */
static void cal_pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint64_t a = shm_rdtsc();
        uint64_t n = shm_mono_ns();
        uint64_t b = shm_rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

int shm_clock_calibrate(struct shm_clock_cal *c, unsigned ms)
{
    uint64_t t0, n0, t1, n1;
    cal_pair(&t0, &n0);
    struct timespec d = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    cal_pair(&t1, &n1);
    return shm_clock_cal_from_pairs(c, t0, n0, t1, n1);
}
