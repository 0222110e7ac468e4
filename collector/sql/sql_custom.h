/*
 * sql_custom.h — the custom-event tables of d9 sql: one per event name found
 * in the store's metadata (schemas with the same name in several processes
 * share it; its columns are pid, tid, ts_ns, then the union of their field
 * names, typed when every schema agrees), except the collector's own events
 * (named "d9.*": the memory maps, which name the stacks table's frames). A name that collides with a
 * built-in table gets the prefix "event_". The rows are sql_scan.c's.
 *
 * Called by sql_vtab.c. Must never trust a schema: names are copied and
 * bounded, a table takes at most D9_SCHEMA_MAX_FIELDS * 4 columns.
 */
#ifndef D9_COL_SQL_CUSTOM_H
#define D9_COL_SQL_CUSTOM_H

#include "collector/sql/sql_int.h"

/* Find every schema of every process (builtin: the table names a custom
 * table must not take). 0 or -ENOMEM. */
int sql_custom_discover(struct sql_vtab *v, const char *const *builtin, size_t nbuiltin);
void sql_custom_free(struct sql_vtab *v);

#endif /* D9_COL_SQL_CUSTOM_H */
