/*
 * test_pq_write.c — the Parquet writer (collector/parquet/): Thrift compact
 * bytes as the protocol specifies them, RLE/bit-packed hybrid round trips,
 * whole tables written and read back by the checker (pq_check.c) value for
 * value across row groups and pages, the dictionary chosen only where it
 * pays, statistics, NULLs, rejected rows, write errors, and the checker
 * refusing damaged files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/parquet/pq_buf.h"
#include "collector/parquet/pq_check.h"
#include "collector/parquet/pq_rle.h"
#include "collector/parquet/pq_thrift.h"
#include "collector/parquet/pq_write.h"

/* ---- Thrift compact protocol ---- */

static void thrift_short_and_long_field_headers(void **state)
{
    (void)state;
    struct pq_buf b = { 0 };
    struct pq_thrift t;
    pq_thrift_init(&t, &b);
    pq_thrift_i32(&t, 1, 1);            /* delta 1, I32: 0x15, zigzag(1) = 2 */
    pq_thrift_i64(&t, 3, -1);           /* delta 2, I64: 0x26, zigzag(-1) = 1 */
    pq_thrift_str(&t, 20, "ab");        /* delta 17: long form 0x08, zigzag(20) = 40 */
    pq_thrift_struct_begin(&t, 21);     /* delta 1, STRUCT: 0x1c */
    pq_thrift_bool(&t, 1, true);        /* 0x11 */
    pq_thrift_struct_end(&t);           /* 0x00 */
    pq_thrift_list(&t, 22, PQ_THRIFT_I32, 2);   /* 0x19, 0x25 */
    pq_thrift_elem_i32(&t, 300);        /* zigzag 600 = 0xd8 0x04 */
    pq_thrift_elem_i32(&t, 0);
    pq_thrift_list(&t, 23, PQ_THRIFT_BINARY, 15);  /* long list: 0x19, 0xf8, 15 */
    pq_buf_u8(&b, 0);
    static const uint8_t want[] = { 0x15, 0x02, 0x26, 0x01, 0x08, 40, 2, 'a', 'b', 0x1c, 0x11,
                                    0x00, 0x19, 0x25, 0xd8, 0x04, 0x00, 0x19, 0xf8, 15, 0 };
    assert_int_equal(b.err, 0);
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.p, want, sizeof want);
    pq_buf_free(&b);
}

static void thrift_decoder_reads_back_and_rejects_truncation(void **state)
{
    (void)state;
    struct pq_buf b = { 0 };
    struct pq_thrift t;
    pq_thrift_init(&t, &b);
    pq_thrift_i64(&t, 1, INT64_MIN);
    pq_thrift_struct_begin(&t, 30);
    pq_thrift_str(&t, 2, "xyz");
    pq_thrift_struct_end(&t);
    pq_buf_u8(&b, 0);
    struct pq_thrift_rd r = { .p = b.p, .end = b.p + b.len };
    int16_t id;
    assert_int_equal(pq_thrift_rd_field(&r, &id), PQ_THRIFT_I64);
    assert_int_equal(id, 1);
    assert_true(pq_thrift_rd_int(&r) == INT64_MIN);
    assert_int_equal(pq_thrift_rd_field(&r, &id), PQ_THRIFT_STRUCT);
    assert_int_equal(id, 30);
    pq_thrift_rd_skip(&r, PQ_THRIFT_STRUCT);
    assert_int_equal(pq_thrift_rd_field(&r, &id), PQ_THRIFT_STOP);
    assert_int_equal(r.err, 0);
    assert_ptr_equal(r.p, b.p + b.len);
    for (size_t cut = 0; cut < b.len; cut++) {
        struct pq_thrift_rd s = { .p = b.p, .end = b.p + cut };
        pq_thrift_rd_skip(&s, PQ_THRIFT_STRUCT);     /* the top level as a struct */
        assert_int_equal(s.err, -EBADMSG);
    }
    pq_buf_free(&b);
}

/* ---- RLE / bit-packed hybrid ---- */

static void rle_round_trips_runs_and_literals(void **state)
{
    (void)state;
    enum { N = 1000 };
    uint32_t v[N], out[N];
    for (int width = 1; width <= 20; width++) {
        uint32_t mask = width == 32 ? UINT32_MAX : (1u << width) - 1;
        for (int i = 0; i < N; i++)     /* literals, then runs of varied length */
            v[i] = (i < 13 ? (uint32_t)i * 7919u : (uint32_t)(i / (1 + i % 37)) * 31u) & mask;
        struct pq_buf b = { 0 };
        pq_rle_encode(&b, v, N, width);
        assert_int_equal(b.err, 0);
        memset(out, 0xff, sizeof out);
        assert_int_equal(pq_rle_decode(b.p, b.len, width, out, N), 0);
        assert_memory_equal(out, v, sizeof v);
        pq_buf_free(&b);
    }
}

static void rle_long_run_is_a_few_bytes_and_literals_are_not_padded_mid_stream(void **state)
{
    (void)state;
    uint32_t v[1000 + 3];
    for (int i = 0; i < 1000; i++)
        v[i] = 1;
    v[1000] = 0, v[1001] = 1, v[1002] = 0;
    struct pq_buf b = { 0 };
    pq_rle_encode(&b, v, 1000, 1);
    assert_int_equal(b.len, 3);         /* varint(2000) = 2 bytes + 1 value byte */
    b.len = 0;
    /* 3 literals, a run of 8, 3 literals: the first group takes 8 values */
    uint32_t w[14] = { 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0 };
    uint32_t out[14];
    pq_rle_encode(&b, w, 14, 1);
    assert_int_equal(pq_rle_decode(b.p, b.len, 1, out, 14), 0);
    assert_memory_equal(out, w, sizeof w);
    assert_int_equal(pq_rle_decode(b.p, b.len - 1, 1, out, 14), -EBADMSG);
    pq_buf_free(&b);
}

/* ---- the writer, read back ---- */

struct table {
    size_t rows;
    int64_t *a;         /* INT64 required */
    int32_t *b;         /* INT32 optional: NULL every 5th row */
    double *c;          /* DOUBLE required */
    char (*s)[24];      /* STRING required, few distinct values */
    char (*u)[24];      /* STRING optional, all distinct, NULL every 3rd */
};

static const struct pq_col cols[] = {
    { "a", PQ_INT64, false }, { "b", PQ_INT32, true }, { "c", PQ_DOUBLE, false },
    { "s", PQ_STRING, false }, { "u", PQ_STRING, true },
};
#define NCOLS (sizeof cols / sizeof cols[0])

static void table_make(struct table *t, size_t rows)
{
    t->rows = rows;
    t->a = calloc(rows, sizeof *t->a);
    t->b = calloc(rows, sizeof *t->b);
    t->c = calloc(rows, sizeof *t->c);
    t->s = calloc(rows, sizeof *t->s);
    t->u = calloc(rows, sizeof *t->u);
    assert_non_null(t->a && t->b && t->c && t->s && t->u);
    for (size_t i = 0; i < rows; i++) {
        t->a[i] = (int64_t)(i * 1000003u) - 50000000;
        t->b[i] = (int32_t)(i % 1000) - 500;
        t->c[i] = (double)i / 7.0 - 3.0;
        snprintf(t->s[i], sizeof t->s[i], "loc-%zu", i % 5);
        snprintf(t->u[i], sizeof t->u[i], "u%zu", i * 7);
    }
}

static void table_free(struct table *t)
{
    free(t->a), free(t->b), free(t->c), free(t->s), free(t->u);
}

static void row_of(const struct table *t, size_t i, struct pq_val *v)
{
    memset(v, 0, NCOLS * sizeof *v);
    v[0].i = t->a[i];
    v[1].null = i % 5 == 0;
    v[1].i = t->b[i];
    v[2].d = t->c[i];
    v[3].s = t->s[i], v[3].n = strlen(t->s[i]);
    v[4].null = i % 3 == 0;
    v[4].s = t->u[i], v[4].n = strlen(t->u[i]);
}

static int write_table(const struct table *t, const struct pq_write_opts *o, char **buf,
                       size_t *len, struct pq_write_stats *st)
{
    FILE *f = open_memstream(buf, len);
    assert_non_null(f);
    struct pq_write *w;
    int r = pq_write_open(&w, f, cols, NCOLS, o);
    assert_int_equal(r, 0);
    struct pq_val v[NCOLS];
    for (size_t i = 0; i < t->rows && r == 0; i++) {
        row_of(t, i, v);
        r = pq_write_row(w, v);
    }
    if (r == 0)
        r = pq_write_close(w);
    if (st)
        pq_write_stats(w, st);
    pq_write_free(w);
    fclose(f);
    return r;
}

struct cmp {
    const struct table *t;
    uint64_t seen[NCOLS];
    int bad;
};

static int on_value(void *arg, size_t col, uint64_t row, const struct pq_check_value *got)
{
    struct cmp *c = arg;
    struct pq_val want[NCOLS];
    if (col >= NCOLS || row >= c->t->rows)
        return c->bad = -1;
    row_of(c->t, (size_t)row, want);
    const struct pq_val *w = &want[col];
    bool ok = got->null == w->null;
    if (ok && !w->null) {
        switch (cols[col].type) {
        case PQ_INT32:
        case PQ_INT64:
            ok = got->i == w->i;
            break;
        case PQ_DOUBLE:
            ok = got->d == w->d;
            break;
        case PQ_STRING:
            ok = got->n == w->n && memcmp(got->s, w->s, w->n) == 0;
            break;
        }
    }
    if (!ok)
        return c->bad = -2;
    c->seen[col]++;
    return 0;
}

static void check_table(const struct table *t, const char *buf, size_t len,
                        struct pq_check_info *info)
{
    struct cmp c = { .t = t };
    assert_int_equal(pq_check((const uint8_t *)buf, len, info, on_value, &c), 0);
    assert_int_equal(c.bad, 0);
    assert_int_equal(info->ncols, NCOLS);
    assert_int_equal(info->rows, t->rows);
    for (size_t i = 0; i < NCOLS; i++) {
        assert_int_equal(c.seen[i], t->rows);
        assert_int_equal(info->cols[i].name_len, strlen(cols[i].name));
        assert_int_equal(info->cols[i].type, cols[i].type);
        assert_int_equal(info->cols[i].optional, cols[i].optional);
    }
}

static void table_round_trips_across_row_groups_and_pages(void **state)
{
    (void)state;
    struct table t;
    table_make(&t, 20000);
    char *buf = NULL;
    size_t len = 0;
    struct pq_write_opts o = { .row_group_rows = 7000, .page_bytes = 4096 };
    struct pq_write_stats st;
    assert_int_equal(write_table(&t, &o, &buf, &len, &st), 0);
    struct pq_check_info info;
    check_table(&t, buf, len, &info);
    assert_int_equal(info.row_groups, 3);               /* 7000 + 7000 + 6000 */
    assert_int_equal(st.row_groups, 3);
    assert_int_equal(st.rows, 20000);
    assert_int_equal(st.bytes, len);
    assert_true(info.pages > 3 * NCOLS);                /* several pages per chunk */
    assert_int_equal(info.pages, st.pages);
    free(buf);
    table_free(&t);
}

static void dictionary_only_where_it_pays(void **state)
{
    (void)state;
    struct table t;
    table_make(&t, 3000);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(write_table(&t, NULL, &buf, &len, NULL), 0);
    struct pq_check_info info;
    check_table(&t, buf, len, &info);
    /* "s" has 5 values: dictionary; "u" all distinct: plain; numbers: plain */
    assert_int_equal(info.row_groups, 1);
    assert_int_equal(info.dict_chunks, 1);
    free(buf);
    /* a dictionary of at most 4 entries: "s" (5 values) goes plain */
    struct pq_write_opts o = { .dict_max = 4 };
    assert_int_equal(write_table(&t, &o, &buf, &len, NULL), 0);
    check_table(&t, buf, len, &info);
    assert_int_equal(info.dict_chunks, 0);
    free(buf);
    table_free(&t);
}

static void bytes_per_row_show_compression(void **state)
{
    (void)state;
    struct table t;
    table_make(&t, 50000);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(write_table(&t, NULL, &buf, &len, NULL), 0);
    /* plain: 8 + 4 + 8 + ~9 + ~10 bytes a row; zstd and the dictionary take most of it */
    assert_true(len < t.rows * 20);
    free(buf);
    table_free(&t);
}

static void empty_table_is_a_valid_file(void **state)
{
    (void)state;
    struct table t;
    table_make(&t, 0);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(write_table(&t, NULL, &buf, &len, NULL), 0);
    struct pq_check_info info;
    check_table(&t, buf, len, &info);
    assert_int_equal(info.row_groups, 0);
    free(buf);
    table_free(&t);
}

static void a_row_of_the_wrong_kind_is_refused_whole(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct pq_write *w;
    assert_int_equal(pq_write_open(&w, f, cols, NCOLS, NULL), 0);
    struct table t;
    table_make(&t, 2);
    struct pq_val v[NCOLS];
    row_of(&t, 1, v);
    v[0].null = true;                               /* NULL in a required column */
    assert_int_equal(pq_write_row(w, v), -EINVAL);
    row_of(&t, 1, v);
    v[1].i = (int64_t)INT32_MAX + 1;                /* out of INT32's range */
    assert_int_equal(pq_write_row(w, v), -EINVAL);
    t.rows = 1;                                     /* one good row follows */
    row_of(&t, 0, v);
    assert_int_equal(pq_write_row(w, v), 0);
    assert_int_equal(pq_write_close(w), 0);
    pq_write_free(w);
    fclose(f);
    struct pq_check_info info;
    check_table(&t, buf, len, &info);
    free(buf);
    table_free(&t);
}

static void statistics_are_the_chunk_bounds(void **state)
{
    (void)state;
    /* the checker compares min/max with the values; here: known bounds in the footer */
    static const struct pq_col one[] = { { "ts", PQ_INT64, false } };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct pq_write *w;
    assert_int_equal(pq_write_open(&w, f, one, 1, NULL), 0);
    int64_t vals[] = { 5, -7, 123456789012345, 0 };
    for (size_t i = 0; i < 4; i++) {
        struct pq_val v = { .i = vals[i] };
        assert_int_equal(pq_write_row(w, &v), 0);
    }
    assert_int_equal(pq_write_close(w), 0);
    pq_write_free(w);
    fclose(f);
    uint8_t min[8], max[8];
    for (int i = 0; i < 8; i++) {
        min[i] = (uint8_t)((uint64_t)-7 >> (8 * i));
        max[i] = (uint8_t)((uint64_t)123456789012345 >> (8 * i));
    }
    /* Statistics: max_value (field 5) then min_value (field 6), 8 bytes each */
    uint8_t want[2 + 8 + 2 + 8] = { 0x28, 8 };   /* after null_count (field 3) */
    memcpy(want + 2, max, 8);
    want[10] = 0x18, want[11] = 8;
    memcpy(want + 12, min, 8);
    assert_non_null(memmem(buf, len, want, sizeof want));
    struct pq_check_info info;
    assert_int_equal(pq_check((const uint8_t *)buf, len, &info, NULL, NULL), 0);
    /* a wrong bound is caught: change the max's low byte in the footer */
    uint8_t *at = memmem(buf, len, want, sizeof want);
    at[2] ^= 1;
    assert_int_equal(pq_check((const uint8_t *)buf, len, &info, NULL, NULL), -EBADMSG);
    free(buf);
}

static void write_errors_are_reported(void **state)
{
    (void)state;
    FILE *f = fopen("/dev/full", "w");
    if (!f)
        skip();
    setvbuf(f, NULL, _IONBF, 0);
    struct pq_write *w = NULL;
    assert_int_equal(pq_write_open(&w, f, cols, NCOLS, NULL), -EIO);
    assert_null(w);
    fclose(f);
}

static void checker_refuses_damaged_files(void **state)
{
    (void)state;
    struct table t;
    table_make(&t, 500);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(write_table(&t, NULL, &buf, &len, NULL), 0);
    struct pq_check_info info;
    for (size_t cut = 0; cut < len; cut += 37)      /* truncated anywhere */
        assert_int_equal(pq_check((const uint8_t *)buf, cut, &info, NULL, NULL), -EBADMSG);
    uint8_t *copy = malloc(len);
    size_t refused = 0, tried = 0;
    for (size_t i = 4; i < len - 8; i += 3) {       /* one byte flipped anywhere */
        memcpy(copy, buf, len);
        copy[i] ^= 0x5a;
        tried++;
        refused += pq_check(copy, len, &info, NULL, NULL) != 0;
    }
    /* zstd frames carry no checksum and plain values can change: most flips are caught */
    assert_true(refused * 2 > tried);
    free(copy);
    free(buf);
    table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thrift_short_and_long_field_headers),
        cmocka_unit_test(thrift_decoder_reads_back_and_rejects_truncation),
        cmocka_unit_test(rle_round_trips_runs_and_literals),
        cmocka_unit_test(rle_long_run_is_a_few_bytes_and_literals_are_not_padded_mid_stream),
        cmocka_unit_test(table_round_trips_across_row_groups_and_pages),
        cmocka_unit_test(dictionary_only_where_it_pays),
        cmocka_unit_test(bytes_per_row_show_compression),
        cmocka_unit_test(empty_table_is_a_valid_file),
        cmocka_unit_test(a_row_of_the_wrong_kind_is_refused_whole),
        cmocka_unit_test(statistics_are_the_chunk_bounds),
        cmocka_unit_test(write_errors_are_reported),
        cmocka_unit_test(checker_refuses_damaged_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
