/*
 * q_flame.h — CPU (or off-CPU) samples of a window as folded stacks
 * ("root;...;leaf N", outermost frame first, sorted), the input of
 * flamegraph.pl, inferno and speedscope: `d9 flame` and d9 serve's flame
 * graph.
 *
 * Must never write to the store; memory is per distinct stack and address,
 * never per sample.
 */
#ifndef D9_COL_Q_FLAME_H
#define D9_COL_Q_FLAME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_scan.h"

struct q_flame_opts {
    bool off_cpu;               /* SCHED_SWITCH samples instead of CPU_SAMPLE */
    bool weight;                /* sum the samples' weights (ns), else count them */
    bool no_kernel;             /* leave kernel frames out */
    bool addresses;             /* raw addresses (0x...), no names */
    bool have_task;             /* only samples inside the polls of task, on their thread */
    uint64_t task;
    uint32_t tid;               /* only samples of this thread (0 = any) */
};

struct q_flame;
int q_flame_new(struct q_flame **out, const struct q_flame_opts *o);
void q_flame_free(struct q_flame *f);

/* Fold the samples of pid (0 = all) in [from, to]; *st (may be NULL) gets
 * the sample scan's counts, prog prefixes the scan's warnings. 0 or -errno. */
int q_flame_run(struct q_flame *f, struct q_store *s, uint32_t pid, uint64_t from, uint64_t to,
                struct q_scan_stats *st, const char *prog);

/* The stacks as sorted folded lines on out. 0 or -ENOMEM. */
int q_flame_print(const struct q_flame *f, FILE *out);

struct q_flame_counts {
    uint64_t samples;           /* samples of the wanted kind read */
    uint64_t kept;              /* of them, folded (after tid/task) */
    uint64_t stacks;            /* distinct folded stacks */
    uint64_t processes;         /* processes with a resolver */
    uint64_t maps;              /* memory maps (and agent objects) loaded */
};
void q_flame_counts(const struct q_flame *f, struct q_flame_counts *c);

/* All in one: CPU (or off-CPU, weighted by the time off CPU) samples of pid
 * in [from, to] as sorted folded lines on out. *samples (may be NULL) =
 * samples kept. 0 or -errno. */
int q_flame_folded(struct q_store *s, uint32_t pid, uint64_t from, uint64_t to, bool off_cpu,
                   FILE *out, uint64_t *samples);

#endif /* D9_COL_Q_FLAME_H */
