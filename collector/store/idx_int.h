/*
 * idx_int.h — the inside of struct idx, shared by the two files of the
 * index module: idx.c (open, schema, writes) and idx_read.c (the
 * queries of readers). Nothing outside collector/store/idx*.c includes
 * it, except unit tests that inspect the database behind an index.
 *
 * Invariant: only these files run SQL against index.sqlite. idx.c owns
 * the connection (opens, closes, finalizes every cached statement, both
 * its own st[] and idx_read.c's rd[]); idx_read.c only prepares and
 * steps statements on it, and resets each one before returning so no read
 * transaction stays open between calls.
 */
#ifndef D9_COL_IDX_INT_H
#define D9_COL_IDX_INT_H

#include <limits.h>
#include <sqlite3.h>
#include "collector/store/idx.h"

#define IDX_WRITE_STMTS 25      /* idx.c's statement cache (its enum) */
#define IDX_READ_STMTS  16      /* idx_read.c's statement cache (its enum) */

/* The map records' blocks as SQL literals (SEG_BLK_DATA, SYM_SEG_RING;
 * checked in idx_read.c): idx.c's partial index blocks_maps and the query
 * it serves must spell its terms the same. */
#define IDX_MAPS_KIND   "2"
#define IDX_MAPS_RING   "4294967294"

struct idx {
    sqlite3 *db;
    int readonly;
    int upload_kept_only;       /* idx_upload_kept_only */
    char dir[PATH_MAX];         /* the store */
    char path[PATH_MAX];        /* its index file */
    char err[PATH_MAX + 256];
    sqlite3_stmt *st[IDX_WRITE_STMTS];
    sqlite3_stmt *rd[IDX_READ_STMTS];
};

/* The connection, for unit tests that look at the rows themselves. */
void *idx_db(struct idx *x);

#endif /* D9_COL_IDX_INT_H */
