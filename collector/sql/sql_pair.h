/*
 * sql_pair.h — the paired tables of d9 sql (polls, parks): the scan fed to
 * a pairing (start/end per thread, as top-polls pairs them), a row when an
 * interval closes. With a time window on start_ns, the scan goes on past
 * the window's end in growing steps (its length, doubled each time) only
 * while an interval opened in the window is still open, and only ends are
 * used there; what never closes is yielded last with end_ns NULL. Polls
 * asked for grouped by loc or location are bucketed as they close and
 * served bucket by bucket (sql_group.h).
 *
 * Called by sql_vtab.c. Memory: the intervals open at the same time, or the
 * grouped polls under the ceiling the planner checked (SQL_GROUP_MEM).
 */
#ifndef D9_COL_SQL_PAIR_H
#define D9_COL_SQL_PAIR_H

#include "collector/sql/sql_int.h"

/* Start the cursor's pairing and serve the first row (idx_num: grouped or
 * not). 0, -E2BIG (grouped polls over the memory ceiling) or -errno. */
int sql_pair_begin(struct cur *c, int idx_num);
int sql_pair_step(struct cur *c);
void sql_pair_column(struct cur *c, sqlite3_context *cx, int col);
/* The current interval's identity (thread, task, start). */
int64_t sql_pair_key(const struct cur *c);
/* May the polls of this plan be held for grouped serving? */
bool sql_pair_group_fits(struct vt *v, sqlite3_index_info *ii);
void sql_pair_reset(struct cur *c);
void sql_pair_close(struct cur *c);

#endif /* D9_COL_SQL_PAIR_H */
