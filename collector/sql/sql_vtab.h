/*
 * sql_vtab.h — SQLite virtual tables over a d9 store, for `d9 sql`.
 *
 * sql_vtab_attach() registers the read-only module "d9" on a connection
 * the caller owns (an in-memory database, never index.sqlite) and creates
 * one table per kind of row: the index's processes, threads, runtimes and
 * segments, the metadata's locations, the records (polls, parks,
 * sched_waits, wakes, spawns, terminates, queue_depths, cpu_samples, stacks,
 * events), the workers (q_sched.h's facts, as d9 sched shows them) and one
 * table per custom-event name found in the store's metadata. Every row is
 * read through the query layer (q_store.h): index rows by its listings,
 * records by its time-ordered block scan, so the tables see exactly what
 * the other subcommands see, on a live store as on a copy.
 *
 * Push-down: equality on pid and tid, and ranges on the time column
 * (ts_ns; start_ns for polls and parks), become the scan's filter, so only
 * the blocks of the index that can match are read; runtime = 'name' narrows
 * to the one process that has it when there is one, and so does a custom
 * event that only one process (pid) defines. ORDER BY the time
 * column (ascending) is served by the scan's order for record tables.
 * Polls grouped or ordered by loc or location alone (ascending) are
 * served in that order (sql_group.h: bucketed in memory as the pairing
 * yields them), so SQLite groups them without sorting every row; the
 * planner takes that path only when the index's poll_start counts for the
 * constant pid / start_ns constraints say the rows fit in a fixed memory
 * ceiling (sql_vtab.c), else SQLite sorts as for any other table. No
 * constraint is marked omitted: SQLite re-checks every row, so a filter here
 * only has to be a superset of the answer.
 *
 * Custom-event tables: one per event name, named after it (quote names that
 * are not plain identifiers: "http.request"); the collector's own events
 * ("d9.*": the memory maps) get none and are not rows of `events`. Schemas with the same name in
 * several processes share the table; its columns are pid, tid, ts_ns, then
 * the union of their field names in first-seen order (processes by first
 * record), declared with the field's type when every schema agrees and with
 * no type otherwise; a field an event lacks is NULL. A name that collides
 * with a built-in table gets the prefix "event_".
 *
 * Called by cli_sql.c and the unit tests. Must never: write to the store,
 * run SQL on index.sqlite (that goes through q_store.h), or trust a record
 * (every record is re-checked by the query layer and the decoder).
 */
#ifndef D9_COL_SQL_VTAB_H
#define D9_COL_SQL_VTAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/query/q_scan.h"

struct sqlite3;
struct sql_vtab;

/* Register the module on db and create every table of the store s (which
 * must outlive db's use of the tables). prog prefixes warnings about bad
 * files. 0 or -errno with a one-line reason in why; *out, when set, is
 * freed by the caller after closing db, on failure too. */
int sql_vtab_attach(struct sqlite3 *db, struct q_store *s, const char *prog,
                    struct sql_vtab **out, char *why, size_t whycap);
/* sql_vtab_attach in two steps. _lazy registers the module and, for each
 * built-in table, an eponymous-only module of its name: a statement can read
 * the built-in tables, each connected when first named, but the schema
 * (sqlite_schema, the pragmas) lists none and there is no custom table. *out
 * is set once the module holds the context, even on failure. _tables then
 * reads every process's event schemas and creates every table as
 * sql_vtab_attach does (once; later calls do nothing), and drops the
 * eponymous modules, so the connection looks as sql_vtab_attach leaves it. A caller that knows its SQL names no custom
 * table and reads no schema skips the second step and its cost (the
 * metadata of every segment, a schema change per table). */
int sql_vtab_attach_lazy(struct sqlite3 *db, struct q_store *s, const char *prog,
                         struct sql_vtab **out, char *why, size_t whycap);
int sql_vtab_attach_tables(struct sqlite3 *db, struct sql_vtab *v, char *why, size_t whycap);
/* Free the context; call after sqlite3_close(db). */
void sql_vtab_free(struct sql_vtab *v);

/* What the record scans of the connection read so far (blocks, records,
 * bad blocks, missing segments), summed over every scan since the last
 * reset: how a test sees that a constraint reached the block index. */
const struct q_scan_stats *sql_vtab_stats(const struct sql_vtab *v);
void sql_vtab_stats_reset(struct sql_vtab *v);

/* One line per table: "name: what a row is". */
void sql_vtab_describe(FILE *f, const char *table);

#endif /* D9_COL_SQL_VTAB_H */
