/*
 * fuzz_parquet.c — libFuzzer target for the Parquet writer and its checker
 * (collector/parquet/).
 *
 * Two properties per input:
 *   1. round trip (first byte even): the input becomes a table (column
 *      count, types, optional flags, writer options with small row groups,
 *      pages and dictionaries, then the rows' values: integers, doubles with
 *      NaNs and infinities, strings of input-chosen length and repetition,
 *      NULLs); it is written with pq_write and read back by pq_check, which
 *      must accept the file (footer, pages, counts, statistics) and hand
 *      back every value equal to what was written.
 *   2. hostile input (first byte odd): the rest is checked as a file;
 *      pq_check must never crash or read outside it, whatever it answers.
 * Built and run by tests/fuzz/run.sh.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/parquet/pq_check.h"
#include "collector/parquet/pq_write.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define COLS_MAX 6
#define ROWS_MAX 3000
#define STR_MAX 40

struct src {
    const uint8_t *p;
    size_t n;
};

static uint8_t u8(struct src *s)
{
    if (!s->n)
        return 0;
    s->n--;
    return *s->p++;
}

static uint64_t u64(struct src *s, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | u8(s);
    return v;
}

static struct pq_col cols[COLS_MAX];
static struct pq_val vals[ROWS_MAX][COLS_MAX];
static char strs[ROWS_MAX][COLS_MAX][STR_MAX];
static size_t ncols, nrows;

static int on_value(void *arg, size_t col, uint64_t row, const struct pq_check_value *v)
{
    (void)arg;
    if (col >= ncols || row >= nrows)
        abort();
    const struct pq_val *w = &vals[row][col];
    if (v->null != w->null)
        abort();
    if (w->null)
        return 0;
    switch (cols[col].type) {
    case PQ_INT32:
    case PQ_INT64:
        if (v->i != w->i)
            abort();
        break;
    case PQ_DOUBLE:
        if (memcmp(&v->d, &w->d, sizeof v->d) != 0)
            abort();
        break;
    case PQ_STRING:
        if (v->n != w->n || (w->n && memcmp(v->s, w->s, w->n) != 0))
            abort();
        break;
    }
    return 0;
}

static void round_trip(struct src *s)
{
    static const char *const names[COLS_MAX] = { "ts_ns", "pid", "runtime", "dur", "x", "y" };
    static const enum pq_type types[] = { PQ_INT32, PQ_INT64, PQ_DOUBLE, PQ_STRING };
    ncols = 1 + u8(s) % COLS_MAX;
    for (size_t c = 0; c < ncols; c++) {
        uint8_t b = u8(s);
        cols[c] = (struct pq_col){ names[c], types[b % 4], (b >> 2) & 1 };
    }
    struct pq_write_opts o = {
        .row_group_rows = 1 + u8(s) % 200,
        .page_bytes = 1 + u64(s, 2) % 2048,
        .dict_max = 1 + u8(s) % 64,
        .zstd_level = 1 + u8(s) % 3,
    };
    nrows = 0;
    while (s->n && nrows < ROWS_MAX) {
        uint8_t rep = u8(s);            /* repeat the previous row's values: runs */
        for (size_t c = 0; c < ncols; c++) {
            struct pq_val *v = &vals[nrows][c];
            memset(v, 0, sizeof *v);
            if (nrows && (rep >> c) & 1) {
                *v = vals[nrows - 1][c];
                if (cols[c].type == PQ_STRING) {
                    if (v->n)
                        memcpy(strs[nrows][c], v->s, v->n);
                    v->s = strs[nrows][c];
                }
                continue;
            }
            uint8_t k = u8(s);
            if (cols[c].optional && k % 7 == 0) {
                v->null = true;
                continue;
            }
            switch (cols[c].type) {
            case PQ_INT32:
                v->i = (int32_t)u64(s, 1 + k % 4);
                break;
            case PQ_INT64:
                v->i = (int64_t)u64(s, 1 + k % 8);
                break;
            case PQ_DOUBLE: {
                uint64_t x = u64(s, 8);
                memcpy(&v->d, &x, sizeof x);
                break;
            }
            case PQ_STRING:
                v->n = k % STR_MAX;
                for (size_t i = 0; i < v->n; i++)
                    strs[nrows][c][i] = (char)('a' + u8(s) % 4);
                v->s = strs[nrows][c];
                break;
            }
        }
        nrows++;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    struct pq_write *w;
    if (pq_write_open(&w, f, cols, ncols, &o) != 0)
        abort();
    for (size_t r = 0; r < nrows; r++)
        if (pq_write_row(w, vals[r]) != 0)
            abort();
    if (pq_write_close(w) != 0)
        abort();
    pq_write_free(w);
    fclose(f);
    struct pq_check_info info;
    if (pq_check((const uint8_t *)buf, len, &info, on_value, NULL) != 0)
        abort();
    if (info.rows != nrows || info.ncols != ncols)
        abort();
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct src s = { data + 1, size - 1 };
    if (data[0] & 1) {
        struct pq_check_info info;
        pq_check(data + 1, size - 1, &info, NULL, NULL);
    } else {
        round_trip(&s);
    }
    return 0;
}
