/*
 * profile.h — d9collectd's per-process profiling: glue between the daemon's
 * process lifecycle (proc.c) and perf.c (sampling) / sym.c (memory map
 * snapshots). One struct perf_prof per adopted process, hung off
 * col_proc.prof.
 *
 * What it writes into the process's open segment, as DATA blocks of pseudo
 * rings (generation 0, block tid = pid):
 *   PERF_SEG_RING  CPU_SAMPLE and SCHED_SWITCH records from perf (ts already
 *                  CLOCK_MONOTONIC ns): the perf rings are read on every
 *                  drain pass, blocks written every PERF_PROF_FLUSH_NS (or
 *                  earlier when PERF_PROF_PENDING_MAX samples wait);
 *   SYM_SEG_RING   "d9.map" records: the executable mappings, at adoption,
 *                  when they change (checked every PERF_PROF_MAPS_NS), and
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
 * daemon samples per CPU (cfg.host_cpu), from perf_prof_add_cpu_sample,
 * which the daemon calls before each drain pass and before p's final pass.
 *
 * Called on the collector's drain thread only: perf_prof_attach after
 * col_proc_adopt, perf_prof_pass from every drain pass (throttled inside)
 * and with final = 1 from col_proc_finish before the exit block,
 * perf_prof_free from col_proc_free.
 * Never: fail an adoption or a drain because profiling failed; touch shm
 * outside the guard.
 */
#ifndef D9_COL_PROFILE_H
#define D9_COL_PROFILE_H

#include <stdint.h>
#include "collector/daemon/perf.h"

#define PERF_PROF_FLUSH_NS  100000000ull    /* perf samples -> segment every 100 ms */
#define PERF_PROF_MAPS_NS   1000000000ull   /* /proc/<pid>/maps re-read every 1 s */
#define PERF_PROF_BUF_SIZE  (256u * 1024u)  /* one DATA block of samples at most */
#define PERF_PROF_PENDING_MAX 2048          /* write early when this many samples wait */

struct col_proc;
struct col_store;
struct perf_prof;

/* Start profiling p (cfg: NULL or freq 0 and switch_period 0 = maps only). */
void perf_prof_attach(struct col_proc *p, const struct perf_config *cfg);

/* Write what is due (everything when final). */
void perf_prof_pass(struct col_proc *p, struct col_store *st, uint64_t now_ns, int final);

void perf_prof_free(struct col_proc *p);

/* Hand p an on-CPU sample of its pid read by the host sampler (perf_host.h).
 * Returns 1 if p samples with perf and kept (or counted) it, else 0. */
int perf_prof_add_cpu_sample(struct col_proc *p, const struct perf_sample *s);

/* For status: 1 when this collector samples p with perf. */
int perf_prof_sampling(const struct col_proc *p);

#endif /* D9_COL_PROFILE_H */
