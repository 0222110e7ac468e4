/*
 * pq_check.h — a small, strict reader of the Parquet files pq_write.c
 * writes: it parses the footer, walks every page of every column chunk,
 * decompresses and decodes them, and checks that the footer agrees with
 * the pages (value and null counts, sizes, offsets, min/max statistics
 * equal to the values' bounds), handing each value to a callback.
 *
 * Called by the unit tests and the fuzz target (fuzz_parquet.c: random
 * tables written, then checked and compared). The input is treated as hostile: every
 * offset and length is bounds-checked; -EBADMSG on anything malformed or
 * outside the subset pq_write.c produces (flat schema, PLAIN / RLE_DICTIONARY,
 * DataPage v1, zstd or uncompressed).
 * Must never: read outside file[0, len), allocate more than the file's own
 * sizes allow (decompressed pages are bounded by their declared size, itself
 * capped at PQ_CHECK_PAGE_MAX, and a page's values at PQ_CHECK_PAGE_VALUES).
 */
#ifndef D9_COL_PQ_CHECK_H
#define D9_COL_PQ_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PQ_CHECK_COLS_MAX 64
#define PQ_CHECK_PAGE_MAX ((size_t)256 << 20)
#define PQ_CHECK_PAGE_VALUES (1u << 20)     /* above the writer's PQ_WRITE_PAGE_ROWS */

struct pq_check_col {
    const char *name;       /* points into the file; not NUL-terminated */
    size_t name_len;
    int type;               /* enum pq_type */
    bool optional, utf8;
};

struct pq_check_value {
    bool null;
    int64_t i;
    double d;
    const uint8_t *s;       /* valid during the callback only */
    size_t n;
};

struct pq_check_info {
    size_t ncols;
    struct pq_check_col cols[PQ_CHECK_COLS_MAX];
    uint64_t rows, row_groups, pages, dict_chunks;
};

/* Called for every value: column `col` of row `row` (rows count from the
 * file's start; a chunk's values come in row order, column after column).
 * A non-zero return stops the check and is returned. */
typedef int (*pq_check_fn)(void *arg, size_t col, uint64_t row, const struct pq_check_value *v);

int pq_check(const uint8_t *file, size_t len, struct pq_check_info *info, pq_check_fn fn,
             void *arg);

#endif /* D9_COL_PQ_CHECK_H */
