/*
 * sql_val.h — values between SQLite and the store for every table of
 * collector/sql/: integers (u64 above INT64_MAX as REAL), text, a table's
 * error message, and constraint values turned into the scan's filter
 * (time ranges, ids).
 *
 * Called by the other modules of collector/sql/. Must never trust a
 * constraint value: anything not numeric is left to SQLite.
 */
#ifndef D9_COL_SQL_VAL_H
#define D9_COL_SQL_VAL_H

#include "collector/sql/sql_int.h"

void sql_val_u64(sqlite3_context *cx, uint64_t v);
void sql_val_str(sqlite3_context *cx, const char *s);
/* Set the table's error message (fmt with one %s); returns SQLITE_ERROR. */
int sql_val_error(struct vt *v, const char *fmt, const char *what);
/* A constraint value as a number: false when it is not numeric. */
bool sql_val_num(sqlite3_value *v, bool *is_int, int64_t *i, double *d);
/* Narrow [from, to] by "col op v" (op: = > g < l); false when nothing can match. */
bool sql_val_narrow_time(char op, sqlite3_value *v, uint64_t *from, uint64_t *to);
/* "col = v" for an id column (pid, tid): false when nothing can match. */
bool sql_val_narrow_id(sqlite3_value *v, uint32_t *id);

#endif /* D9_COL_SQL_VAL_H */
