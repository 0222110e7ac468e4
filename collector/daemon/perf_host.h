/*
 * perf_host.h — host-wide on-CPU sampling for d9collectd: one sampling
 * perf event per CPU (pid = -1, cpu = c) instead of one per traced thread,
 * either on the scheduler tick (perf_tick.h: no interrupt of its own, the
 * daemon's choice where available) or a cpu-clock timer.
 * The daemon routes each sample by pid to the traced process it belongs to
 * (perf_proc_add_cpu_sample); samples of other processes are dropped and
 * counted.
 *
 * Why: a per-thread event is scheduled out and in at every context switch of
 * its thread (a cpu-clock event cancels and re-arms its hrtimer, a timer
 * reprogramming each time: a VM exit on a virtual machine). That made the
 * demo workload measurably slower on a VM at 99 Hz, where a per-CPU event,
 * whose timer does not care about switches, costs nothing per switch
 * (tests/bench/RESULTS.md). It also samples a new thread from its first instruction, where
 * per-thread events miss up to one /proc rescan of its life.
 *
 * Cost and scope: each CPU gets freq_hz samples per second of non-idle time
 * (exclude_idle; on the tick: the nearest divisor of the tick rate, and an
 * idle CPU has no tick), whoever runs; a traced thread thus gets freq_hz samples
 * per second of its CPU time, as with per-thread events. Because every busy
 * CPU pays for its samples whoever runs there, the daemon switches the
 * events off while no traced process is live (perf_host_enable): an idle
 * sidecar must not interrupt the host's CPUs for samples it drops.
 * Opening per-CPU events needs CAP_PERFMON or CAP_SYS_ADMIN (or
 * perf_event_paranoid <= 0); when refused, the daemon falls back to
 * per-thread events. CPUs that are offline at open are skipped and not
 * picked up later.
 *
 * The perf rings are written by the kernel but read as untrusted input like
 * every other ring (perf_ring_walk, perf_parse_sample): a ring whose framing
 * is corrupt is resynchronised (tail = head) and counted.
 *
 * Called by the daemon's single loop only. Never: block, or read outside the
 * mappings.
 */
#ifndef D9_DAEMON_PERF_HOST_H
#define D9_DAEMON_PERF_HOST_H
#include <stdint.h>
#include "collector/daemon/perf.h"
#include "collector/daemon/perf_tick.h"

#define PERF_HOST_RING_PAGES_DEFAULT 32u   /* data pages per CPU, power of two */
#define PERF_HOST_CPUS_MAX           4096u

enum { PERF_HOST_CLOCK_CPU, PERF_HOST_CLOCK_TICK };

struct perf_host_stats {
    uint32_t cpus;              /* CPUs with an open event */
    int clock;                  /* PERF_HOST_CLOCK_*: what the samples are taken on */
    uint32_t period_ticks;      /* tick clock: 1 sample in this many ticks */
    uint64_t sample_ns;         /* time between two samples of a busy CPU (nominal) */
    uint64_t unanchored;        /* tick clock: samples whose kernel frames were dropped
                                   (no entry stub in their callchain) */
    int enabled;                /* 1 while the events sample (perf_host_enable) */
    uint64_t switches;          /* times perf_host_enable changed the state */
    int kernel_frames;          /* 1 if kernel callchains are collected */
    uint64_t samples;           /* samples read (routed or not) */
    uint64_t routed;            /* samples the route function took */
    uint64_t lost;              /* PERF_RECORD_LOST counts (whose process is unknown) */
    uint64_t bad;               /* malformed records / ring resyncs */
};

struct perf_host;

/*
 * Open a sampling event at freq_hz (1..PERF_FREQ_MAX) on every online CPU,
 * each with a ring of ring_pages data pages (power of two,
 * 1..PERF_RING_PAGES_MAX). tick NULL: a cpu-clock event, its own timer;
 * else (perf_tick_probe filled it) the tick's tracepoint, 1 in
 * perf_tick_period(tick_ns, freq_hz) ticks, each sample's kernel frames cut
 * at the interrupt entry (perf_tick_strip) and its period rewritten to the
 * time it stands for, so the daemon sees the same samples either way.
 * Kernel frames are given up, then sample_max_stack, when the kernel
 * refuses them (perf_open_event). Errors: -EACCES / -EPERM not permitted (the caller falls
 * back to per-thread events), -ENOSYS, -EINVAL bad arguments, -ENOMEM,
 * -EMFILE, or what perf_event_open or mmap said for the first CPU.
 */
int perf_host_open(struct perf_host **out, uint32_t freq_hz, uint32_t ring_pages,
                   const struct perf_tick *tick);
void perf_host_close(struct perf_host *h);

/*
 * Switch every CPU's event on (on = 1) or off (PERF_EVENT_IOC_ENABLE /
 * PERF_EVENT_IOC_DISABLE). The events are on after perf_host_open. A call
 * that does not change the state makes no system call, so the daemon can
 * call it on every pass. The rings keep what was sampled before a switch
 * off; perf_host_poll still reads them. Returns 0, or the first failing
 * ioctl's -errno: the state is then unchanged as far as stats are
 * concerned, and a later call tries every CPU again.
 */
int perf_host_enable(struct perf_host *h, int on);

/* Called for each well-formed sample; returns 1 if it took the sample. */
typedef int (*perf_host_route_fn)(void *ctx, const struct perf_sample *s);

/*
 * Read every CPU ring to its head, calling route for each sample, then hand
 * the space back to the kernel. Returns the number of samples read (0 when
 * idle: one load of data_head per CPU).
 */
long perf_host_poll(struct perf_host *h, perf_host_route_fn route, void *ctx);

void perf_host_stats(const struct perf_host *h, struct perf_host_stats *out);

#endif /* D9_DAEMON_PERF_HOST_H */
