/*
 * prof.h — d9collectd's per-process profiling: glue between a traced
 * process (struct proc) and perf.c (sampling) / sym.c (memory map
 * snapshots). One struct prof per adopted process, hung off proc.prof.
 *
 * What it writes into the process's open segment (drain_writer), as DATA
 * blocks of pseudo rings (generation 0, block tid = pid):
 *   PERF_SEG_RING  CPU_SAMPLE and SCHED_SWITCH records from perf (ts already
 *                  CLOCK_MONOTONIC ns): the perf rings are read on every
 *                  drain pass, blocks written every PROF_FLUSH_NS (or
 *                  earlier when PROF_PENDING_MAX samples wait);
 *   SYM_SEG_RING   "d9.map" records: the executable mappings, at adoption,
 *                  when they change (checked every PROF_MAPS_NS, the
 *                  interval doubling up to PROF_MAPS_MAX_NS while they
 *                  stay the same: reading /proc/<pid>/maps is most of an
 *                  idle process's fixed cost), and
 *                  again at the start of every new segment; each new segment
 *                  also gets the META schema entry describing "d9.map".
 * So every segment symbolizes on its own, and maps are recorded for
 * processes sampled by the agent's fallback too (their samples come
 * through the normal rings).
 *
 * Sampler handshake (see agent/sampler.h): after perf_proc_open() worked,
 * CAS(region sampler: NONE -> PERF) under the SIGBUS guard; ITIMER there
 * means the agent samples itself and the perf events are closed.
 * perf not permitted: logged once per process, nothing written to the
 * header, the agent falls back after its wait; status shows what the
 * header says ("none" until the agent switches to "itimer").
 *
 * On-CPU samples come from the process's per-thread events, or, when the
 * daemon samples per CPU (cfg.host_cpu), from prof_add_cpu_sample, which
 * the daemon calls before each drain pass and before p's final pass.
 *
 * Called on the collector's drain thread only: prof_attach by d9collectd.c
 * after proc_adopt, prof_pass from every drain pass (throttled inside) and
 * with final = 1 from proc_finish before the exit block, prof_free from
 * proc_free. Calls perf.c, sym.c, drain.c (drain_writer) and guard.c,
 * never proc.c.
 * Never: fail an adoption or a drain because profiling failed; touch shm
 * outside the guard.
 */
#ifndef D9_DAEMON_PROF_H
#define D9_DAEMON_PROF_H

#include <stdint.h>
#include "collector/daemon/perf.h"

#define PROF_FLUSH_NS  100000000ull    /* perf samples -> segment every 100 ms */
#define PROF_MAPS_NS   1000000000ull   /* /proc/<pid>/maps re-read after 1 s, */
#define PROF_MAPS_MAX_NS 8000000000ull /* ... up to 8 s while it did not change */
#define PROF_BUF_SIZE  (256u * 1024u)  /* one DATA block of samples at most */
#define PROF_PENDING_MAX 2048          /* write early when this many samples wait */

struct proc;
struct storedir;
struct prof;

/* Start profiling p (cfg: NULL or freq 0 and switch_period 0 = maps only). */
void prof_attach(struct proc *p, const struct perf_config *cfg);

/* Write what is due (everything when final). */
void prof_pass(struct proc *p, struct storedir *st, uint64_t now_ns, int final);

void prof_free(struct proc *p);

/* Hand p an on-CPU sample of its pid read by the host sampler (perf_host.h).
 * Returns 1 if p samples with perf and kept (or counted) it, else 0. */
int prof_add_cpu_sample(struct proc *p, const struct perf_sample *s);

/* For status: 1 when this collector samples p with perf. */
int prof_sampling(const struct proc *p);

#endif /* D9_DAEMON_PROF_H */
