/*
 * sql_group.h — rows bucketed by a key, handed back bucket by bucket in key
 * order: how a virtual table serves "GROUP BY key" / "ORDER BY key" itself
 * instead of SQLite sorting every row.
 *
 * Called by sql_vtab.c (polls grouped by loc or location). A bucket is
 * found by its key, a text (compared as SQLite's BINARY collation does) or
 * an integer; rows are fixed-size byte strings copied into the bucket's
 * chunks; after sql_group_seal the rows come back ordered by bucket key,
 * each bucket's rows in the order they were added (the scan's order).
 *
 * Invariants: memory is the rows plus one chunk header per 4096 rows of a
 * bucket (small buckets start with small chunks); sql_group_bytes counts it
 * so the caller can keep a ceiling. Must never: reorder the rows of one
 * bucket, or add rows after sql_group_seal.
 */
#ifndef D9_COL_SQL_GROUP_H
#define D9_COL_SQL_GROUP_H

#include <stddef.h>
#include <stdint.h>

struct sql_group;

/* 0 or -ENOMEM. row_size > 0. */
int sql_group_new(size_t row_size, struct sql_group **out);
void sql_group_free(struct sql_group *g);

/* The bucket of a text key (NUL-terminated) or of an integer key: its index
 * (>= 0), created when new, -ENOMEM, or -EINVAL after sql_group_seal. One
 * sql_group uses one kind. */
int sql_group_bucket_text(struct sql_group *g, const char *key);
int sql_group_bucket_int(struct sql_group *g, int64_t key);

/* Append row_size bytes to bucket b. 0, -EINVAL (no such bucket, or
 * sealed) or -ENOMEM. */
int sql_group_add(struct sql_group *g, int b, const void *row);
/* The same, handing out the new row's row_size bytes (8-aligned) for the
 * caller to fill: a fixed-size store instead of a copy. NULL when
 * sql_group_add would fail. */
void *sql_group_slot(struct sql_group *g, int b);

/* Bytes held (rows, chunks, keys, tables). */
size_t sql_group_bytes(const struct sql_group *g);

/* Order the buckets by key; then sql_group_next returns the rows, NULL
 * after the last. 0 or -ENOMEM. */
int sql_group_seal(struct sql_group *g);
const void *sql_group_next(struct sql_group *g);

#endif /* D9_COL_SQL_GROUP_H */
