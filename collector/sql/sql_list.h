/*
 * sql_list.h — the listing tables of d9 sql: processes, threads, runtimes,
 * segments (the index's rows, through q_store.h) and locations (the
 * processes' metadata, through q_names.h). They are small (one row per
 * process, thread, location...): xFilter copies them into the cursor, each
 * row with a key that names its origin for the rowid.
 *
 * Called by sql_vtab.c (and sql_custom.c for the process list). Must never
 * write to the store.
 */
#ifndef D9_COL_SQL_LIST_H
#define D9_COL_SQL_LIST_H

#include "collector/sql/sql_int.h"

/* Fill the cursor with the rows of its listing table (c->f.pid, c->f.tid
 * applied). 0 or -errno. */
int sql_list_fill(struct cur *c);
int sql_list_step(struct cur *c);
void sql_list_column(struct cur *c, sqlite3_context *cx, int col);
/* The current row's key (its rowid's origin). */
int64_t sql_list_key(const struct cur *c);
void sql_list_reset(struct cur *c);

/* Building rows (for the other listing modules, sql_rollup.c): a new zeroed
 * row of c->ncols values (NULL: out of memory); values; the row's key. */
struct mval *sql_list_row_add(struct cur *c);
void sql_list_mv_int(struct mval *m, int64_t v);
void sql_list_mv_u64(struct mval *m, uint64_t v);
int sql_list_mv_str(struct mval *m, const char *s);
void sql_list_mv_key(struct cur *c, struct mval *r, uint64_t a, uint64_t b, uint64_t k);

/* The processes of pid (0 = all): ids and pids, by first_ns. */
struct sql_list_procs {
    int64_t *id;
    uint32_t *pid;
    size_t n;
};
int sql_list_procs(struct q_store *s, uint32_t pid, struct sql_list_procs *l);
void sql_list_procs_free(struct sql_list_procs *l);

#endif /* D9_COL_SQL_LIST_H */
