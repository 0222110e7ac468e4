/*
 * perf_tick.h — sampling the CPU profile on the scheduler tick: what the
 * host sampler (perf_host.h) needs to take its samples from the tick's own
 * interrupt instead of a timer of its own.
 *
 * Why: a cpu-clock event arms an hrtimer per CPU, so each sample is an
 * interrupt of its own. On a virtual machine every such interrupt is a
 * timer exit (tens of microseconds, an order of magnitude more than on bare
 * metal), which at 99 Hz is a few tenths of a percent of every busy CPU. A busy CPU takes
 * the scheduler tick anyway (HZ times a second), and the tick's hrtimer
 * expiry is a tracepoint (timer:hrtimer_expire_entry with function = the
 * tick handler): a perf event on it, 1 in `period` hits sampled, costs the
 * sample's work (the callchain, the ring write) but no interrupt.
 *
 * What it gives up, and how the rest is kept equal to cpu-clock:
 *   - The rate is HZ / period, the divisor of the tick rate nearest to the
 *     requested frequency (99 Hz at HZ = 250 becomes 83.3 Hz); each sample
 *     weighs period x tick_ns.
 *   - The samples are taken in the tick's interrupt, whose handler frames
 *     lead the kernel callchain: perf_tick_strip cuts them off at the timer
 *     interrupt's entry stub, so what is left is the interrupted context's,
 *     as a cpu-clock sample would have it. Where the stub's address is not
 *     known, kernel callchains are not collected.
 *   - Tick sampling is what the kernel's own CPU accounting does; a thread
 *     whose runs are in step with the tick would be mis-sampled, as it is
 *     mis-accounted by the kernel.
 *   - It is not used when a CPU may run without a tick (nohz_full), where a
 *     busy CPU could go unsampled.
 *
 * perf_tick_probe finds the tracepoint (tracefs), the tick handler and the
 * entry stub (kallsyms) and the tick length (the resolution of
 * CLOCK_MONOTONIC_COARSE is one jiffy), then checks the whole chain on the
 * calling thread: a counting event with the filter must see the tick within
 * a few tick lengths of spinning. Errors are -errno with a reason in why.
 *
 * Never: trust a file's contents beyond what is parsed and range-checked.
 */
#ifndef D9_DAEMON_PERF_TICK_H
#define D9_DAEMON_PERF_TICK_H
#include <stddef.h>
#include <stdint.h>

#define PERF_TICK_NS_MIN        1000000ull      /* HZ 1000 */
#define PERF_TICK_NS_MAX       10000000ull      /* HZ 100 */
#define PERF_TICK_FILTER_MAX   96u
#define PERF_TICK_ENTRIES_MAX  3u

/* [lo, hi) of an interrupt entry stub; lo = 0: none */
struct perf_tick_range {
    uint64_t lo, hi;
};

struct perf_tick {
    uint64_t tp_id;             /* timer:hrtimer_expire_entry's id */
    uint64_t handler;           /* the tick's hrtimer function */
    /* the timer interrupt's entry stubs (IDT and FRED entry points); none
     * found: kernel callchains cannot be cut and are not collected */
    struct perf_tick_range entry[PERF_TICK_ENTRIES_MAX];
    uint64_t tick_ns;           /* one jiffy */
    char handler_name[32];
};

/* Where perf_tick_probe looks; NULL fields (or a NULL struct) mean the system's. */
struct perf_tick_paths {
    const char *tp_id;          /* .../events/timer/hrtimer_expire_entry/id */
    const char *kallsyms;       /* /proc/kallsyms */
    const char *nohz_full;      /* /sys/devices/system/cpu/nohz_full */
    uint64_t tick_ns;           /* 0: from clock_getres(CLOCK_MONOTONIC_COARSE) */
    int no_check;               /* 1: skip the live check (unit tests on fake files) */
};

/*
 * Fill t or say why not: -ENOENT (no tracefs or tracepoint, no tick handler
 * in kallsyms), -EACCES (kallsyms hides addresses), -EOPNOTSUPP (nohz_full
 * CPUs, or a tick length outside 1..10 ms), -ENODEV (the live check saw no
 * tick), or perf_event_open's -errno. why gets one line (why may be NULL).
 */
int perf_tick_probe(struct perf_tick *t, const struct perf_tick_paths *paths, char *why,
                    size_t whycap);

/* The sampling period in ticks for freq_hz (>= 1): the divisor of the tick
 * rate nearest to freq_hz (by ratio), at least 1. */
uint32_t perf_tick_period(uint64_t tick_ns, uint32_t freq_hz);

/* The tracepoint filter: the tick handler only, never the idle task.
 * Returns the length, or -ENAMETOOLONG. */
int perf_tick_filter(const struct perf_tick *t, char *buf, size_t cap);

/* 1 if t knows an entry stub, so kernel callchains can be cut. */
int perf_tick_has_entry(const struct perf_tick *t);

/*
 * Cut the tick interrupt's own frames off a raw perf callchain (ips: nr
 * unaligned u64s, PERF_CONTEXT_* markers included): the kernel frames up
 * to and including the first one inside an entry stub of t are dropped.
 * When no kernel frame is inside one, the kernel frames are all dropped
 * (they cannot be told from the handler's) and *unanchored is set to 1
 * (else 0). out (cap entries) gets the rest, markers kept; returns its
 * length (entries past cap are dropped). Pure: for unit tests and fuzzing.
 */
size_t perf_tick_strip(const struct perf_tick *t, const uint8_t *ips, uint64_t nr,
                       uint64_t *out, size_t cap, int *unanchored);

#endif /* D9_DAEMON_PERF_TICK_H */
