/*
 * sql_scan.h — the record tables of d9 sql (wakes, spawns, terminates,
 * queue_depths, cpu_samples, events, the custom-event tables): the query
 * layer's time-ordered scan (q_scan.h) stepped from xNext, one record per
 * row, decoding only the columns asked for; and the scan the paired tables
 * (sql_pair.c) feed their pairing from.
 *
 * Invariant: a cursor's record pointers are valid until its next
 * sql_scan_next. Called by sql_vtab.c and sql_pair.c.
 */
#ifndef D9_COL_SQL_SCAN_H
#define D9_COL_SQL_SCAN_H

#include "collector/sql/sql_int.h"

/* Start / end the scan of [from, to] with the cursor's filter. 0 or -errno. */
int sql_scan_begin(struct cur *c, uint64_t from, uint64_t to);
void sql_scan_end(struct cur *c);
/* The next record of the scan that belongs to the table: 1 (c->src, c->rec,
 * c->len set), 0 at the end of the scan (ended), -errno. */
int sql_scan_next(struct cur *c);
/* A record table's next row: 0 (c->eof set at the end) or -errno. */
int sql_scan_step(struct cur *c);
void sql_scan_column(struct cur *c, sqlite3_context *cx, int col);
/* The current record's identity (segment, ring generation, seq, time, type). */
int64_t sql_scan_key(const struct cur *c);
void sql_scan_close(struct cur *c);

#endif /* D9_COL_SQL_SCAN_H */
