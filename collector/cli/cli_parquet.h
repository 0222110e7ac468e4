/*
 * cli_parquet.h — `d9 export --format parquet`: every table of `d9 sql`
 * written as one Parquet file, TABLE.parquet in a directory.
 *
 * The rows are d9 sql's rows (sql_vtab.h: the same virtual tables, the same
 * query layer underneath), so a column has the same name, type and value in
 * the file as in `d9 sql`: INTEGER -> INT64, REAL -> DOUBLE, TEXT (and the
 * untyped columns of custom-event tables whose schemas disagree) -> UTF-8
 * string; every column is OPTIONAL, since d9 sql's columns may be NULL.
 * The window and pid reach each table as d9 sql's own constraints (its
 * push-down turns them into the scan's block selection): record tables by
 * ts_ns, polls and parks by start_ns, listings (processes, threads, ...)
 * by pid only; stacks are those of the window's cpu_samples.
 *
 * Called by cli_export.c. Each file is written to a temporary name in DIR
 * and renamed when complete, so DIR never holds a truncated file.
 * Must never: open any database but its own in-memory connection, or leave
 * a temporary file behind on failure.
 */
#ifndef D9_COL_CLI_PARQUET_H
#define D9_COL_CLI_PARQUET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/parquet/pq_write.h"
#include "collector/query/q_store.h"

struct cli_parquet_req {
    const char *dir;            /* created if missing */
    uint32_t pid;               /* 0: every process */
    uint64_t from, to;          /* the window, ns (to = UINT64_MAX: open) */
    struct pq_write_opts opts;  /* zero: the writer's defaults */
    FILE *log;                  /* one line per table written; NULL: none */
};

struct cli_parquet_stats {
    unsigned tables;
    uint64_t rows, bytes;
    uint64_t bad_blocks, missing_segments;
};

/* 0, or -errno with a one-line reason in why. */
int cli_parquet_export(struct q_store *s, const struct cli_parquet_req *rq,
                       struct cli_parquet_stats *st, char *why, size_t whycap);

#endif /* D9_COL_CLI_PARQUET_H */
