/*
 * pq_write.h — a Parquet file writer, written to the format's specification
 * (apache/parquet-format: the file layout, parquet.thrift for the metadata):
 * flat tables of INT32, INT64, DOUBLE and UTF-8 string columns, required or
 * optional (NULLs), one row at a time.
 *
 * Layout of a file: "PAR1", row groups (a column chunk per column: an
 * optional dictionary page, then data pages, every page zstd-compressed),
 * the footer (FileMetaData, Thrift compact protocol), its length, "PAR1".
 * - Row groups close at `row_group_rows` rows or `row_group_bytes` of
 *   uncompressed values, whichever comes first, so an engine reading from
 *   S3 fetches a group with a few range requests and skips the others by
 *   their statistics.
 * - Pages (DataPage v1) close at about `page_bytes` of uncompressed values
 *   or PQ_WRITE_PAGE_ROWS rows.
 * - String columns are dictionary-encoded (a PLAIN dictionary page, indices
 *   in RLE/bit-packed hybrid, pq_rle.h) when the dictionary has at most
 *   `dict_max` entries and is smaller than the plain values; otherwise PLAIN.
 *   Numbers are PLAIN (zstd does the rest).
 * - Every column chunk has statistics: null_count and min_value/max_value
 *   (signed order for numbers, unsigned bytes for strings; string bounds
 *   longer than PQ_WRITE_STAT_MAX bytes are left out, NaNs are skipped);
 *   the footer declares TypeDefinedOrder for every column so readers trust
 *   them.
 *
 * Called by collector/export/exp_parquet.c (d9 export --format parquet) and
 * tests. Memory: the values of one row group (deduplicated strings) and the
 * footer's metadata. Errors: 0 or a negative errno (-EIO write, -ENOMEM,
 * -EINVAL a value of the wrong kind, -EFBIG a page over 2 GiB).
 * Must never: write a file whose footer disagrees with its pages (the
 * checker pq_check.c reads back exactly this), or write after an error.
 */
#ifndef D9_COL_PQ_WRITE_H
#define D9_COL_PQ_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Physical types, numbered as parquet.thrift's Type. */
enum pq_type { PQ_INT32 = 1, PQ_INT64 = 2, PQ_DOUBLE = 5, PQ_STRING = 6 };

struct pq_col {
    const char *name;
    enum pq_type type;
    bool optional;      /* may hold NULLs */
};

/* One value of a row; `null` only in optional columns. */
struct pq_val {
    bool null;
    int64_t i;          /* PQ_INT32 (in range), PQ_INT64 */
    double d;           /* PQ_DOUBLE */
    const char *s;      /* PQ_STRING: s[0, n), UTF-8 */
    size_t n;
};

#define PQ_WRITE_RG_ROWS   (1u << 20)
#define PQ_WRITE_RG_BYTES  ((size_t)64 << 20)
#define PQ_WRITE_PAGE_BYTES ((size_t)1 << 20)
#define PQ_WRITE_PAGE_ROWS (1u << 17)     /* also a page's bound when its values are NULL */
#define PQ_WRITE_DICT_MAX  (1u << 16)
#define PQ_WRITE_ZSTD_LEVEL 3
#define PQ_WRITE_STAT_MAX  256
#define PQ_WRITE_COLS_MAX  1024

struct pq_write_opts {
    size_t row_group_rows;      /* 0: PQ_WRITE_RG_ROWS */
    size_t row_group_bytes;     /* 0: PQ_WRITE_RG_BYTES */
    size_t page_bytes;          /* 0: PQ_WRITE_PAGE_BYTES */
    size_t dict_max;            /* 0: PQ_WRITE_DICT_MAX */
    int zstd_level;             /* 0: PQ_WRITE_ZSTD_LEVEL */
    const char *created_by;     /* NULL: "d9" */
};

struct pq_write;

/* Start a file on `out` (written sequentially; the caller closes it).
 * cols[] (names and all) must outlive the writer. */
int pq_write_open(struct pq_write **w, FILE *out, const struct pq_col *cols, size_t ncols,
                  const struct pq_write_opts *opts);
/* Append one row: v[0, ncols). */
int pq_write_row(struct pq_write *w, const struct pq_val *v);
/* Flush the last row group and write the footer; 0 or the first error. */
int pq_write_close(struct pq_write *w);
/* Free (after close, or instead of it on an error path). NULL is fine. */
void pq_write_free(struct pq_write *w);

/* Counters of a writer (for the CLI's summary and the bench). */
struct pq_write_stats {
    uint64_t rows, row_groups, pages, bytes;
};
void pq_write_stats(const struct pq_write *w, struct pq_write_stats *st);

#endif /* D9_COL_PQ_WRITE_H */
