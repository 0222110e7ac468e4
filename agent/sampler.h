/*
 * sampler.h — the in-process CPU profiler fallback: per-thread
 * CPU-time timers deliver SIGPROF, the handler walks frame pointers and
 * writes a D9_REC_CPU_SAMPLE record. Used only when the collector cannot
 * sample the process with perf_event_open (collector/daemon/perf.c).
 *
 * Handshake over d9_region_hdr.sampler (enum d9_sampler_mode), decided by
 * one compare-and-swap from NONE, so exactly one side ever samples:
 *   collector: after perf_proc_open() succeeded for the process,
 *              CAS(NONE -> PERF); if it finds ITIMER it closes its perf
 *              events (the agent samples). PERF left over from an earlier
 *              collector is taken as its own.
 *   agent:     DIAL9_SAMPLER=itimer  CAS(NONE -> ITIMER) at d9_init;
 *              DIAL9_SAMPLER=auto    (default) the housekeeping thread does
 *                                    CAS(NONE -> ITIMER) once
 *                                    DIAL9_SAMPLER_WAIT_MS (default 3000)
 *                                    passed without the collector claiming
 *                                    PERF (not running, perf not permitted);
 *              DIAL9_SAMPLER=perf    never falls back (wait for the collector);
 *              DIAL9_SAMPLER=off     the agent never samples (the collector
 *                                    still may: it owns perf sampling).
 *   DIAL9_SAMPLER_HZ (1..1000, default 99) is the fallback's frequency.
 *   A bad value disables the fallback only (one stderr line), never tracing.
 *   Known limitation: if the collector claimed PERF and then goes away, the
 *   agent does not take over (a restarted collector samples again).
 *
 * Rings: a sampled thread gets a second ring of its own, produced only by
 * the SIGPROF handler running on that thread (claimed with the thread's tid
 * and name), so the handler never touches the ring the thread itself is
 * writing. See the SPSC argument at on_sigprof() in sampler.c. Each sampled
 * thread therefore uses two of the DIAL9_MAX_THREADS rings; with no ring left
 * the thread is simply not sampled.
 *
 * Hooks (called by agent/api.c and the housekeeping thread, never hot path):
 *   ag_sampler_start       d9_init, after ag_agent_start succeeded
 *   ag_sampler_thread_start a thread's first event, after its ring claim
 *   ag_sampler_thread_stop  thread exit, before its ring is released
 *   ag_sampler_tick        housekeeping thread, every tick
 *   ag_sampler_stop        d9_shutdown, before ag_agent_stop
 *   ag_sampler_fork_child  fork child handler: the child does not sample
 *
 * Global state: one process-wide sampler (a signal handler can only reach
 * globals and TLS), part of the agent's sanctioned process singleton.
 * Never: allocate, lock, do IO or symbolize in the signal handler; never
 * dereference a stack address not proved inside the interrupted thread's
 * stack; never install over an application's SIGPROF handler.
 */
#ifndef D9_AGENT_SAMPLER_H
#define D9_AGENT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include "shm/d9_abi.h"

#define AG_SAMPLER_HZ_DEFAULT      99u
#define AG_SAMPLER_HZ_MAX          1000u
#define AG_SAMPLER_WAIT_MS_DEFAULT 3000u
#define AG_SAMPLER_WAIT_MS_MAX     3600000u
#define AG_SAMPLER_MAX_FRAMES      D9_STACK_MAX_FRAMES

enum ag_sampler_want {
    AG_SAMPLER_AUTO = 0,
    AG_SAMPLER_WANT_ITIMER = 1,
    AG_SAMPLER_WANT_PERF = 2,
    AG_SAMPLER_OFF = 3,
};

struct ag_sampler_config {
    uint32_t want;              /* enum ag_sampler_want */
    uint32_t hz;
    uint32_t wait_ms;
};

struct ag_agent;

/* Parse DIAL9_SAMPLER, DIAL9_SAMPLER_HZ, DIAL9_SAMPLER_WAIT_MS through get
 * (NULL = unset). 0, or -EINVAL with one line in err. Pure. */
int ag_sampler_config_parse(struct ag_sampler_config *c,
                            const char *(*get)(const char *name, void *ctx), void *ctx,
                            char *err, size_t errcap);

/* The handshake decision, pure: 1 if the agent should try CAS(NONE ->
 * ITIMER) now. mode = current d9_region_hdr.sampler, waited_ns = time since
 * ag_sampler_start. */
int ag_sampler_should_fallback(const struct ag_sampler_config *c, uint32_t mode,
                               uint64_t waited_ns);

/*
 * Walk frame pointers: out[0] = ip, then return addresses found by following
 * the saved-rbp chain from fp. A frame address is dereferenced only if it is
 * 8-aligned and [fp, fp + 16) lies inside [max(sp, lo), hi); the chain must
 * strictly grow. Returns the frame count (>= 1 when ip != 0); *flags gets
 * D9_STACK_TRUNCATED when max was reached.
 */
uint16_t ag_sampler_fp_walk(uint64_t ip, uint64_t fp, uint64_t sp, uint64_t lo, uint64_t hi,
                            uint64_t *out, uint16_t max, uint16_t *flags);

/* Hooks, see the header comment. getenv_fn as for the agent's env. */
void ag_sampler_start(struct ag_agent *a, const char *(*get)(const char *name, void *ctx));
void ag_sampler_thread_start(struct ag_agent *a);
void ag_sampler_thread_stop(struct ag_agent *a);
void ag_sampler_tick(struct ag_agent *a);
void ag_sampler_stop(struct ag_agent *a);
void ag_sampler_fork_child(void);

/* Counters (tests, status): samples written, dropped (ring full or no ring),
 * threads armed now. */
struct ag_sampler_stats {
    uint64_t samples;
    uint64_t dropped;
    uint32_t threads_armed;
    uint32_t mode;              /* what this agent runs: enum d9_sampler_mode */
};
void ag_sampler_get_stats(struct ag_sampler_stats *out);

#endif /* D9_AGENT_SAMPLER_H */
