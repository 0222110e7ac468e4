/*
 * prog_nofp.c — traced workload built WITHOUT frame pointers (-O2
 * -fomit-frame-pointer, tests/integration/nofp.mk), for the DWARF unwinding
 * test (test_profile_dwarf.sh): main -> nofp_outer -> nofp_middle ->
 * nofp_inner, nested CPU work, so that a sample reaches main only when its
 * stack is unwound with CFI (d9collectd --stack-mode dwarf).
 *
 *   prog_nofp [--seconds S]
 *
 * Built twice: prog_nofp (with .eh_frame) and prog_nofp_dbg (no .eh_frame
 * for its own code, -g, stripped; the CFI is in .debug_frame of the debug
 * file, installed under a build-id tree by the test). Prints
 * "prog_nofp: sum N" at exit (keeps the work from being optimised away).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agent/d9.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* volatile state and many live values: the compiler uses rbp as a general
 * register, so a frame-pointer walk finds nothing useful */
static volatile uint64_t g_sink;

__attribute__((noinline)) static uint64_t nofp_inner(uint64_t seed, unsigned n)
{
    uint64_t a = seed, b = seed ^ 0x9e3779b97f4a7c15ull, c = seed * 3, d = seed + 7;
    for (unsigned i = 0; i < n; i++) {
        a = a * 6364136223846793005ull + b;
        b ^= a >> 13;
        c += b * 0xff51afd7ed558ccdull;
        d ^= c << 7;
        g_sink = a ^ d;
    }
    return a + b + c + d;
}

__attribute__((noinline)) static uint64_t nofp_middle(uint64_t seed)
{
    uint64_t s = 0;
    for (unsigned i = 0; i < 64; i++)
        s += nofp_inner(seed + i, 2000);
    g_sink = s;
    return s;
}

__attribute__((noinline)) static uint64_t nofp_outer(uint64_t seed)
{
    uint64_t s = nofp_middle(seed);
    g_sink = s;
    return s ^ nofp_middle(s);
}

int main(int argc, char **argv)
{
    double seconds = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: prog_nofp [--seconds S]\n");
            return 2;
        }
    }
    d9_init();
    uint64_t sum = 0;
    double end = now_s() + seconds;
    while (now_s() < end)
        sum += nofp_outer(sum + 1);
    d9_shutdown();
    printf("prog_nofp: sum %llu\n", (unsigned long long)sum);
    return 0;
}
