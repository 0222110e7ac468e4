/*
 * sql_stack.h — the stacks table of d9 sql: the frames of every sampled
 * stack, depth 0 = innermost, named as d9 flame names them, and the
 * stack_id of a sample (cpu_samples.stack_id): a 63-bit hash of (process,
 * frames). The table is built once per connection by one scan of the
 * samples, after the memory maps ("d9.map", q_sym_load); its frames are
 * q_sym_frames' (those of d9 flame and the exports).
 *
 * Called by sql_vtab.c and sql_scan.c. Memory: one entry per distinct
 * stack, never per sample.
 */
#ifndef D9_COL_SQL_STACK_H
#define D9_COL_SQL_STACK_H

#include "collector/sql/sql_int.h"

/* stack_id of a CPU_SAMPLE / SCHED_SWITCH record (shm_record_check passed);
 * *nframes = its frames. */
uint64_t sql_stack_id(int64_t process_id, const struct d9_rec_hdr *rec, size_t len,
                      uint16_t *nframes);
/* Build the table (first use) and list stack want (set) or all. 0 or -errno. */
int sql_stack_fill(struct cur *c, uint64_t want, bool set);
int sql_stack_step(struct cur *c);
void sql_stack_column(struct cur *c, sqlite3_context *cx, int col);
/* The stack_id of the current row. */
uint64_t sql_stack_current(const struct cur *c);
void sql_stack_reset(struct cur *c);
void sql_stack_free(struct sql_vtab *v);

#endif /* D9_COL_SQL_STACK_H */
