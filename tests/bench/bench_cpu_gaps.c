/*
 * bench_cpu_gaps.c — how long a CPU goes away from a thread that never
 * yields: the floor under any drain deadline on this machine.
 *
 * Pins itself to CPU C, asks for SCHED_FIFO (priority 1: no task of the
 * guest preempts it; falls back to SCHED_OTHER without the privilege, and
 * says so), then reads CLOCK_MONOTONIC in a tight loop for MS milliseconds
 * and counts the gaps between consecutive reads: a gap is time the thread
 * did not run. Under SCHED_FIFO on an otherwise idle CPU what remains is
 * interrupts and, on a virtual machine, the host taking the virtual CPU.
 * Prints one line of key=value:
 *
 *   cpu_gaps cpu=C policy=fifo|other ms=MS over_1ms=N over_limit=N limit_us=L max_us=M
 *
 * where limit_us is --limit-us (default 3277: what a 1 MiB ring of 32-byte
 * records holds at 10 M events/s). Run by tests/bench/run-bench.sh on the
 * collector's CPU before the loss-onset steps. Never part of make test.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tests/bench/bench_util.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    unsigned long ms = 5000, limit_us = 3277;
    int cpu = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: bench_cpu_gaps [--cpu C] [--ms MS] [--limit-us L]\n"
                   "  Spins on CPU C (default 1) for MS ms (default 5000) under SCHED_FIFO\n"
                   "  when allowed and counts the times the CPU went away for over 1 ms and\n"
                   "  over L us (default 3277).\n");
            return 0;
        }
        if (!v) { fprintf(stderr, "bench_cpu_gaps: %s needs a value (try --help)\n", a); return 2; }
        if (!strcmp(a, "--cpu")) cpu = (int)bench_arg_ulong(a, v, 0, 4095);
        else if (!strcmp(a, "--ms")) ms = bench_arg_ulong(a, v, 10, 600000);
        else if (!strcmp(a, "--limit-us")) limit_us = bench_arg_ulong(a, v, 1, 10000000);
        else { fprintf(stderr, "bench_cpu_gaps: unknown option '%s' (try --help)\n", a); return 2; }
    }
    if (bench_pin(cpu) != 0) {
        fprintf(stderr, "bench_cpu_gaps: cannot pin to cpu %d\n", cpu);
        return 1;
    }
    struct sched_param sp = { .sched_priority = 1 };
    int fifo = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    uint64_t over_1ms = 0, over_limit = 0, max = 0;
    uint64_t prev = mono_ns(), end = prev + (uint64_t)ms * 1000000ull;
    while (prev < end) {
        uint64_t t = mono_ns(), gap = t - prev;
        over_1ms += gap > 1000000ull;
        over_limit += gap > (uint64_t)limit_us * 1000ull;
        max = gap > max ? gap : max;
        prev = t;
    }
    printf("cpu_gaps cpu=%d policy=%s ms=%lu over_1ms=%llu over_limit=%llu limit_us=%lu max_us=%llu\n",
           cpu, fifo ? "fifo" : "other", ms, (unsigned long long)over_1ms,
           (unsigned long long)over_limit, limit_us, (unsigned long long)(max / 1000));
    return 0;
}
