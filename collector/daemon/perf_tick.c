/*
 * perf_tick.c — finding and checking the scheduler tick as a sampling
 * source, and cutting the tick interrupt's frames off its samples (see
 * perf_tick.h for why and what it gives up).
 *
 * Invariants:
 *   - A probe that returns 0 filled every field of t: tp_id, handler and
 *     tick_ns non-zero, tick_ns within PERF_TICK_NS_MIN..MAX, each entry
 *     range either empty (lo = 0) or lo < hi <= lo + PERF_TICK_ENTRY_SPAN.
 *   - perf_tick_strip writes at most cap entries and reads at most nr.
 * Never: trust a file's contents beyond what is parsed and range-checked.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/perf_event.h>
#include <unistd.h>
#include "collector/daemon/perf.h"
#include "collector/daemon/perf_tick.h"
#include "shm/clock.h"

#define PERF_TICK_ENTRY_SPAN   4096u    /* an entry stub is a few dozen bytes */
#define PERF_TICK_CHECK_TICKS  4u       /* the live check spins this many tick lengths */

static const char *const tp_id_paths[] = {
    "/sys/kernel/tracing/events/timer/hrtimer_expire_entry/id",
    "/sys/kernel/debug/tracing/events/timer/hrtimer_expire_entry/id",
};
/* the tick's hrtimer function: since Linux 6.10, then before */
static const char *const handler_names[] = { "tick_nohz_handler", "tick_sched_timer" };
/* where a timer interrupt enters the kernel on x86-64: IDT, then FRED */
static const char *const entry_names[PERF_TICK_ENTRIES_MAX] = {
    "asm_sysvec_apic_timer_interrupt", "asm_fred_entrypoint_kernel", "asm_fred_entrypoint_user",
};

static void say(char *why, size_t cap, const char *fmt, ...)
{
    if (!why || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

static int read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    size_t n = fread(buf, 1, cap - 1, f);
    int err = ferror(f) ? -EIO : 0;
    fclose(f);
    buf[n] = 0;
    return err;
}

static int read_tp_id(const struct perf_tick_paths *pp, uint64_t *id, char *why, size_t cap)
{
    char buf[64];
    const char *path = NULL;
    int rc = -ENOENT;
    if (pp && pp->tp_id) {
        path = pp->tp_id;
        rc = read_small(path, buf, sizeof buf);
    } else {
        path = tp_id_paths[0];  /* the one named when neither is there */
        for (size_t i = 0; i < sizeof tp_id_paths / sizeof tp_id_paths[0]; i++) {
            int r = read_small(tp_id_paths[i], buf, sizeof buf);
            if (r == 0) {
                rc = 0;
                path = tp_id_paths[i];
                break;
            }
            if (i == 0)
                rc = r;
        }
    }
    if (rc) {
        say(why, cap, "no tracepoint timer:hrtimer_expire_entry (%s: %s; is tracefs mounted on "
            "/sys/kernel/tracing?)", path, strerror(-rc));
        return rc == -EACCES || rc == -EPERM ? rc : -ENOENT;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    while (*end == '\n' || *end == ' ')
        end++;
    if (errno || end == buf || *end || v == 0 || v > UINT32_MAX) {
        say(why, cap, "%s: not a tracepoint id", path);
        return -ENOENT;
    }
    *id = v;
    return 0;
}

/* 1 if the nohz_full list (a CPU list, "(null)" or empty when none) names a CPU. */
static int nohz_full_cpus(const char *path)
{
    char buf[256];
    if (read_small(path, buf, sizeof buf) != 0)
        return 0;               /* no such file: no nohz_full support */
    for (const char *p = buf; *p; p++)
        if (*p >= '0' && *p <= '9')
            return 1;
    return 0;
}

/* One pass over kallsyms: the tick handler's address and the entry stubs'
 * ranges (a stub ends where the next higher symbol starts; kallsyms lists
 * the kernel's symbols in address order). */
static int scan_kallsyms(const char *path, struct perf_tick *t, char *why, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        say(why, cap, "%s: %s", path, strerror(e));
        return e == EACCES || e == EPERM ? -e : -ENOENT;
    }
    char *line = NULL;
    size_t lcap = 0;
    int best = -1, zero = 0, open_entry = -1;
    while (getline(&line, &lcap, f) > 0) {
        char *end;
        errno = 0;
        unsigned long long addr = strtoull(line, &end, 16);
        if (errno || end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
            continue;           /* not "ADDR TYPE NAME" */
        char type = end[1];
        char *name = end + 3;
        name[strcspn(name, "\t\n [")] = 0;
        if (open_entry >= 0) {  /* the symbol after a stub bounds it */
            struct perf_tick_range *r = &t->entry[open_entry];
            if (addr > r->lo) {
                r->hi = addr - r->lo <= PERF_TICK_ENTRY_SPAN ? addr : r->lo + PERF_TICK_ENTRY_SPAN;
                open_entry = -1;
            }
        }
        if (type != 't' && type != 'T')
            continue;
        for (int i = 0; i < (int)(sizeof handler_names / sizeof handler_names[0]); i++)
            if (!strcmp(name, handler_names[i]) && (best < 0 || i < best)) {
                if (addr == 0) {
                    zero = 1;
                    continue;
                }
                best = i;
                t->handler = addr;
                snprintf(t->handler_name, sizeof t->handler_name, "%s", handler_names[i]);
            }
        for (int i = 0; i < (int)PERF_TICK_ENTRIES_MAX; i++)
            if (!strcmp(name, entry_names[i]) && addr && !t->entry[i].lo) {
                t->entry[i].lo = addr;
                open_entry = i;
            }
    }
    free(line);
    fclose(f);
    for (int i = 0; i < (int)PERF_TICK_ENTRIES_MAX; i++)
        if (t->entry[i].lo && !t->entry[i].hi)     /* the last symbol of the file */
            t->entry[i].hi = t->entry[i].lo + PERF_TICK_ENTRY_SPAN;
    if (best < 0) {
        say(why, cap, zero ? "%s hides kernel addresses (kernel.kptr_restrict)"
                           : "%s: no tick handler (tick_nohz_handler, tick_sched_timer)", path);
        return zero ? -EACCES : -ENOENT;
    }
    return 0;
}

/* Count the filtered tracepoint on this thread while it spins for a few
 * tick lengths: the tick must interrupt it at least once. The event is
 * opened as perf_host opens its own (perf_open_tracepoint, 1 in 1, no
 * ring: its samples are dropped, its count is read), so the check covers
 * the attributes and the filter the sampler will use. */
static int live_check(const struct perf_tick *t, char *why, size_t cap)
{
    char filter[PERF_TICK_FILTER_MAX];
    int rc = perf_tick_filter(t, filter, sizeof filter);
    int kernel = 0, max_stack = 1;
    int fd = rc < 0 ? rc : perf_open_tracepoint(t->tp_id, 1, filter, 0, -1, 0, &kernel,
                                                &max_stack);
    if (fd < 0) {
        say(why, cap, "perf_event_open(timer:hrtimer_expire_entry, filter \"%s\"): %s", filter,
            strerror(-fd));
        return fd;
    }
    uint64_t count = 0, end = shm_mono_ns() + PERF_TICK_CHECK_TICKS * t->tick_ns;
    while (shm_mono_ns() < end && count == 0) {
        for (volatile int spin = 0; spin < 20000; spin++)
            ;
        if (read(fd, &count, sizeof count) != (ssize_t)sizeof count)
            count = 0;
    }
    close(fd);
    if (count == 0) {
        say(why, cap, "the tick's timer (%s) never fired on a busy thread in %u ticks "
            "(periodic or low-resolution tick?)", t->handler_name, PERF_TICK_CHECK_TICKS);
        return -ENODEV;
    }
    return 0;
}

int perf_tick_probe(struct perf_tick *t, const struct perf_tick_paths *pp, char *why,
                    size_t cap)
{
    memset(t, 0, sizeof *t);
    say(why, cap, "%s", "");
    const char *nohz = pp && pp->nohz_full ? pp->nohz_full : "/sys/devices/system/cpu/nohz_full";
    if (nohz_full_cpus(nohz)) {
        say(why, cap, "nohz_full CPUs (%s): a busy CPU there may run without a tick", nohz);
        return -EOPNOTSUPP;
    }
    uint64_t tick_ns = pp ? pp->tick_ns : 0;
    if (!tick_ns) {
        struct timespec res;
        if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
            tick_ns = (uint64_t)res.tv_sec * 1000000000ull + (uint64_t)res.tv_nsec;
    }
    if (tick_ns < PERF_TICK_NS_MIN || tick_ns > PERF_TICK_NS_MAX) {
        say(why, cap, "tick length %llu ns outside 1..10 ms", (unsigned long long)tick_ns);
        return -EOPNOTSUPP;
    }
    t->tick_ns = tick_ns;
    int rc = read_tp_id(pp, &t->tp_id, why, cap);
    if (rc)
        return rc;
    rc = scan_kallsyms(pp && pp->kallsyms ? pp->kallsyms : "/proc/kallsyms", t, why, cap);
    if (rc)
        return rc;
    if (pp && pp->no_check)
        return 0;
    return live_check(t, why, cap);
}

uint32_t perf_tick_period(uint64_t tick_ns, uint32_t freq_hz)
{
    if (!tick_ns || !freq_hz)
        return 1;
    /* ticks per sample = (1e9 / tick_ns) / freq; nearest by ratio: p or p+1
     * around the exact value x, whichever is closer in log terms, i.e.
     * p+1 when x^2 > p (p+1) */
    double x = 1e9 / (double)tick_ns / (double)freq_hz;
    if (x <= 1.0)
        return 1;
    if (x > 1e6)
        return 1000000u;
    uint32_t p = (uint32_t)x;
    return x * x > (double)p * (double)(p + 1) ? p + 1 : p;
}

int perf_tick_filter(const struct perf_tick *t, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "function == 0x%llx && common_pid != 0",
                     (unsigned long long)t->handler);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : n;
}

int perf_tick_has_entry(const struct perf_tick *t)
{
    for (int i = 0; i < (int)PERF_TICK_ENTRIES_MAX; i++)
        if (t->entry[i].lo)
            return 1;
    return 0;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int in_entry(const struct perf_tick *t, uint64_t ip)
{
    for (int i = 0; i < (int)PERF_TICK_ENTRIES_MAX; i++)
        if (t->entry[i].lo && ip >= t->entry[i].lo && ip < t->entry[i].hi)
            return 1;
    return 0;
}

size_t perf_tick_strip(const struct perf_tick *t, const uint8_t *ips, uint64_t nr,
                       uint64_t *out, size_t cap, int *unanchored)
{
    /* the kernel part: from PERF_CONTEXT_KERNEL to the next marker */
    uint64_t kbeg = nr, kend = nr, cut = nr;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t ip = rd64(ips + i * 8);
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
            if (kbeg < nr) {
                kend = i;
                break;
            }
            if (ip == (uint64_t)PERF_CONTEXT_KERNEL)
                kbeg = i + 1;
            continue;
        }
        if (kbeg < nr && cut == nr && in_entry(t, ip))
            cut = i + 1;
    }
    *unanchored = kbeg < nr && kbeg < kend && cut == nr;
    size_t n = 0;
    for (uint64_t i = 0; i < nr && n < cap; i++) {
        int in_kernel = kbeg < nr && i >= kbeg && i < kend;
        if (in_kernel && (cut == nr || i < cut))
            continue;           /* the handler's frames, or all when unanchored */
        out[n++] = rd64(ips + i * 8);
    }
    return n;
}
